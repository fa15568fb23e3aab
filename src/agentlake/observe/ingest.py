"""Parsing ingest bodies (``POST /event``, ``POST /events``) into ops, with field-level errors.

Owns the accepted JSON shapes: one op object (or, for ``POST /event``, the flat body of the
system agentlake grew from: its fields at the top level, no endpoint); a batch as a JSON array
of ops or as ``{"events": [...]}``. Validation is all or nothing: one bad item rejects the whole body, so
bad input never partially writes. Errors name each item's index and field. It does not own
the op's shape (``model``), HTTP or storage.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from agentlake.errors import UserError
from agentlake.observe.model import BATCH_HYGIENE, MAX_LABELS, ObservedOp, clean_ops


class InvalidEventsError(UserError):
    """The body is not valid JSON or not valid ops; ``errors`` lists ``{index, field, message}``."""

    def __init__(self, message: str, errors: list[dict[str, Any]]) -> None:
        super().__init__(message, http_status=400, errors=errors)
        self.errors = errors


class EventBatch(BaseModel):
    """``POST /events`` body as an object (a bare JSON array of ops is accepted too)."""

    model_config = ConfigDict(extra="forbid")
    events: list[ObservedOp]


_ONE = TypeAdapter(ObservedOp)
_MANY = TypeAdapter(list[ObservedOp])
_BATCH = TypeAdapter(EventBatch)
# Ops of a body are scrubbed together after validation, behind one gate (model.clean_ops).
_CONTEXT = {BATCH_HYGIENE: True}


def _problems(exc: ValidationError, *, batch: bool) -> InvalidEventsError:
    errors: list[dict[str, Any]] = []
    for err in exc.errors(include_url=False, include_input=False):
        if err["type"] == "json_invalid":
            raise InvalidEventsError(
                f"malformed JSON: {err['msg']}", [{"index": None, "field": None, "message": err["msg"]}]
            )
        loc = list(err["loc"])
        if loc and loc[0] == "events":
            loc = loc[1:]
        index = loc.pop(0) if batch and loc and isinstance(loc[0], int) else None
        field = ".".join(str(part) for part in loc) or None
        errors.append({"index": index, "field": field, "message": err["msg"]})
    shown = "; ".join(
        (f"item {e['index']}: " if e["index"] is not None else "")
        + (f"{e['field']}: " if e["field"] else "")
        + e["message"]
        for e in errors[:5]
    )
    more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
    return InvalidEventsError(f"invalid event{'s' if batch else ''}: {shown}{more}", errors)


# The flat event body the scenarios of the system agentlake grew from sent: its fields at the
# top level and no endpoint; it is stored under the endpoint the settings name for it
# (observer_flat_endpoint), from source "scenario".
_OP_FIELDS = frozenset(ObservedOp.model_fields) | {"provenance"}


def _from_flat(body: bytes, flat_fields: frozenset[str], endpoint: str) -> ObservedOp | None:
    """The op of a flat event (stored as ``endpoint``), or ``None`` when ``body`` is not one (no
    field of ``flat_fields`` at the top level): those fields become labels, op fields stay,
    anything else goes to ``attributes`` (nothing the client sent is lost); source
    ``scenario`` unless it says."""
    try:
        document = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(document, dict) or "endpoint" in document or not flat_fields & document.keys():
        return None
    fields: dict[str, Any] = {"endpoint": endpoint, "source": "scenario"}
    labels = dict(document.get("labels") or {}) if isinstance(document.get("labels"), dict) else {}
    attributes = (
        dict(document.get("attributes") or {}) if isinstance(document.get("attributes"), dict) else {}
    )
    for key, value in document.items():
        if key in flat_fields and len(labels) < MAX_LABELS:
            labels[key] = value
        elif key in _OP_FIELDS and key not in ("labels", "attributes"):
            fields[key] = value
        elif key not in ("labels", "attributes"):
            attributes[key] = value
    fields.update(labels=labels, attributes=attributes)
    try:
        return clean_ops([ObservedOp.model_validate(fields, context=_CONTEXT)])[0]
    except ValidationError as exc:
        raise _problems(exc, batch=False) from None


def parse_event(
    body: bytes, *, flat_fields: frozenset[str] = frozenset(), flat_endpoint: str = "event"
) -> ObservedOp:
    """One op from a JSON object, or from the flat body of the system agentlake grew from
    (``flat_fields`` at the top level, no ``endpoint``: endpoint ``flat_endpoint``, source
    ``scenario``). Raises ``InvalidEventsError`` (400) naming each bad field."""
    try:
        return clean_ops([_ONE.validate_json(body, context=_CONTEXT)])[0]
    except ValidationError as exc:
        problems = _problems(exc, batch=False)
    # Only a body that failed as an op is read as a flat one: the usual event pays nothing.
    flat = _from_flat(body, flat_fields, flat_endpoint) if flat_fields else None
    if flat is None:
        raise problems
    return flat


def parse_events(body: bytes) -> list[ObservedOp]:
    """Ops from a JSON array or ``{"events": [...]}``. Raises ``InvalidEventsError`` (400)
    naming each bad item and field; an empty batch is an error too."""
    head = body.lstrip()[:1]
    try:
        if head == b"[":
            ops = _MANY.validate_json(body, context=_CONTEXT)
        elif head == b"{":
            ops = _BATCH.validate_json(body, context=_CONTEXT).events
        else:
            ops = _MANY.validate_json(body, context=_CONTEXT)  # produces the JSON error for garbage
    except ValidationError as exc:
        if head == b"{" and any(
            err["type"] == "missing" and tuple(err["loc"]) == ("events",) for err in exc.errors()
        ):
            raise InvalidEventsError(
                'a batch is a JSON array of events or {"events": [...]}; send one event to POST /event',
                [{"index": None, "field": "events", "message": "Field required"}],
            ) from None
        raise _problems(exc, batch=True) from None
    if not ops:
        raise InvalidEventsError("the batch is empty: send at least one event", [])
    return clean_ops(ops)
