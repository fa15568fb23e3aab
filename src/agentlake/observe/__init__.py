"""The observer: a durable record of every operation, and the doors onto it.

Split by job: ``observer`` (``Observer``: the ring, live stats, subscribers), ``default_observer``
(which sink: the embedded store or a running service; the process-wide observer), ``recording``
(``observe``, ``wrap_tool``, ``event``, ``record_op``, the observe context), ``deferred`` (many
ops, one wait for their commit) and ``llm_calls`` (model calls as ops, installed once per
observer). Storage is ``store`` (``OpStore``, DuckDB, one writer, group commit;
``sink.MemorySink`` keeps ops in memory instead), the ingest service ``service.create_app``
(OTLP in ``otlp``) and its client ``client.ObserverClient`` (which spools). The op's shape is
``model.ObservedOp``. Lessons are not made here (``agentlake.learn`` reads ops).

The HTTP pieces are imported lazily so that recording in-process never imports FastAPI.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentlake.observe.append import AppendResult, QueueFullError, Ticket
from agentlake.observe.default_observer import (
    close_default_observer,
    get_observer,
    observing,
    open_client,
    open_observer,
    open_reader,
    set_observer,
)
from agentlake.observe.deferred import Deferred, deferred
from agentlake.observe.filters import OpFilter
from agentlake.observe.model import LLMUsage, ObservedOp, Source, cap, new_op_id, scrub
from agentlake.observe.observer import Observer, Subscription
from agentlake.observe.recording import (
    OpHandle,
    current_scope,
    event,
    observe,
    observe_context,
    record_op,
    summarize,
    wrap_tool,
)
from agentlake.observe.sink import MemorySink, OpReader, OpSink
from agentlake.observe.store import OpStore, Stats

if TYPE_CHECKING:
    from agentlake.observe.client import ObserverClient, RemoteSink
    from agentlake.observe.llm_calls import install_llm_recording, wrap_provider
    from agentlake.observe.service import create_app

_LAZY = {
    "ObserverClient": "agentlake.observe.client",
    "RemoteSink": "agentlake.observe.client",
    "create_app": "agentlake.observe.service",
    "install_llm_recording": "agentlake.observe.llm_calls",
    "wrap_provider": "agentlake.observe.llm_calls",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'agentlake.observe' has no attribute {name!r}")


__all__ = [
    "AppendResult",
    "Deferred",
    "LLMUsage",
    "MemorySink",
    "ObservedOp",
    "Observer",
    "ObserverClient",
    "OpHandle",
    "OpReader",
    "OpSink",
    "OpStore",
    "OpFilter",
    "QueueFullError",
    "RemoteSink",
    "Source",
    "Stats",
    "Subscription",
    "Ticket",
    "cap",
    "close_default_observer",
    "create_app",
    "current_scope",
    "deferred",
    "event",
    "get_observer",
    "install_llm_recording",
    "new_op_id",
    "observe",
    "observe_context",
    "observing",
    "open_observer",
    "open_client",
    "open_reader",
    "record_op",
    "scrub",
    "set_observer",
    "summarize",
    "wrap_provider",
    "wrap_tool",
]
