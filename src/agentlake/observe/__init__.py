"""The observer: a durable record of every operation (see ``model.ObservedOp``)."""
