"""The process-wide default observer, and which sink an observer writes to.

Owns ``open_observer`` (``observer_sink``: ``embedded`` opens the store in this process: the
DuckDB file, or the PostgreSQL database when ``database_url`` is set, which every process writes itself;
``http`` sends to a running observer service through ``ObserverClient``, which spools while it
is down; an embedded sink whose store a running server of the data directory holds sends to that
server instead), ``open_reader`` (where tools like ``agentlake ops`` read from) and the process-wide
observer (``get_observer``/``set_observer``, closed at exit, never reused across a fork), which
``observing`` replaces for the work of one thread only (scenario days running at once each
record into their own). It does not own recording (``recording``) or the observer itself
(``observer``).
"""

from __future__ import annotations

import atexit
import contextvars
import logging
import os
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from agentlake.errors import UnavailableError
from agentlake.observe.observer import Observer
from agentlake.observe.otel_env import export_configured
from agentlake.observe.sink import MemorySink, OpSink
from agentlake.observe.store import OpStore
from agentlake.serving import Announcement, server_holding
from agentlake.settings import Settings, load_settings

log = logging.getLogger(__name__)

_default: Observer | None = None
_default_lock = threading.Lock()
# The observer standing in for the process-wide one in this context only (``observing``).
_in_context: contextvars.ContextVar[Observer | None] = contextvars.ContextVar(
    "agentlake_observer_in_context", default=None
)


def open_observer(settings: Settings | None = None) -> Observer:
    """A new Observer as ``settings.observer_sink`` says: ``embedded`` opens the DuckDB store at
    ``settings.observer_path`` in this process; ``http`` sends to ``settings.observer_url``
    through an ``ObserverClient`` (spooling to ``data_dir/spool`` while it is down)."""
    settings = settings or load_settings()
    if settings.database_url is not None and settings.observer_sink == "embedded":
        # PostgreSQL takes several writers: every process writes there itself.
        return _with_export(Observer(_pg_store(settings), ring_size=settings.observer_ring_size))
    server = (
        server_holding(settings.observer_path, settings.data_dir)
        if settings.observer_sink == "embedded"
        else None
    )
    if settings.observer_sink == "http" or server is not None:
        # The HTTP client (httpx, the spool) loads only for a remote sink: start-up time.
        from agentlake.observe.client import ObserverClient, RemoteSink

        url, key = _remote(settings, server)
        client = ObserverClient(url, api_key=key, spool_path=_default_spool(settings))
        return Observer(RemoteSink(client), ring_size=settings.observer_ring_size)
    # The writer's database keeps OpStore's one DuckDB thread (see OpStore), whatever
    # duckdb_threads says: that setting is for the lake's analytical queries.
    store = OpStore(
        settings.observer_path,
        queue_max=settings.observer_queue_max,
        checkpoint_mb=settings.observer_checkpoint_mb,
    )
    return _with_export(Observer(store, ring_size=settings.observer_ring_size))


def _with_export(observer: Observer) -> Observer:
    if export_configured():
        # Lazy (start-up time): the OpenTelemetry SDK loads only when export is configured.
        # Only a process that writes the store exports: ops sent to it over HTTP by worker
        # processes are exported once, there.
        from agentlake.observe.otlp_export import attach_configured_export

        attach_configured_export(observer)
    return observer


def _pg_store(settings: Settings, *, read_only: bool = False) -> OpStore:
    # Lazy (start-up time): psycopg loads only when a database URL is set.
    from agentlake.observe.pg_store import PgOpStore

    assert settings.database_url is not None
    return PgOpStore(
        settings.database_url.get_secret_value(), queue_max=settings.observer_queue_max, read_only=read_only
    )


def open_reader(
    settings: Settings | None = None, *, url: str | None = None, missing_ok: bool = False
) -> OpSink:
    """Where to read ops from, for tools like ``agentlake ops``: the service at ``url`` when
    given (or when ``observer_sink`` is ``http``); else the store file, read-only; and when
    another process holds that file (a running service), the service at ``observer_url``.
    Raises ``UserError`` when there is no store yet, unless ``missing_ok``: then an empty log
    (a ``MemorySink``; nothing is created)."""
    settings = settings or load_settings()
    if url is None and settings.observer_sink != "http" and settings.database_url is not None:
        return _pg_store(settings, read_only=True)
    if url is None and settings.observer_sink != "http":
        if missing_ok and not settings.observer_path.exists():
            return MemorySink()
        try:
            return OpStore(settings.observer_path, read_only=True, threads=settings.duckdb_threads)
        except UnavailableError:
            pass  # the writer is running: ask it
    from agentlake.observe.client import RemoteSink  # only for a remote reader

    return RemoteSink(open_client(settings, url=url))


def open_client(settings: Settings | None = None, *, url: str | None = None) -> Any:
    """An ``ObserverClient`` of the observer service: at ``url`` when given, else the running
    server of the data directory that holds the store (``agentlake serve`` mounts one under
    /observer), else ``observer_url``."""
    from agentlake.observe.client import ObserverClient  # only for a remote reader

    settings = settings or load_settings()
    server = None if url is not None else server_holding(settings.observer_path, settings.data_dir)
    remote_url, key = _remote(settings, server)
    return ObserverClient(url or remote_url, api_key=key, spool_path=_default_spool(settings))


def _remote(settings: Settings, server: Announcement | None) -> tuple[str, str | None]:
    """Where a process that cannot open the store sends and reads ops, with which key: the
    running server of the data directory that holds the store (the gateway's mounted observer
    takes the gateway's keys: ``api_key``), else ``observer_url``."""
    if server is not None and server.observer_url:
        secret = (settings.api_key if server.kind == "gateway" else None) or settings.observer_api_key
        return server.observer_url, secret.get_secret_value() if secret else None
    key = settings.observer_api_key.get_secret_value() if settings.observer_api_key else None
    return settings.observer_url, key


def _default_spool(settings: Settings) -> Any:
    # observer-<pid>-<random>.jsonl: a spool whose pid is dead is adopted by other clients.
    return settings.data_dir / "spool" / f"observer-{os.getpid()}-{uuid.uuid4().hex[:8]}.jsonl"


_default_pid: int | None = None


def get_observer(settings: Settings | None = None) -> Observer:
    """The process-wide observer, created on first use from ``settings`` (see :func:`open_observer`).

    A forked child does not reuse its parent's observer (its DuckDB connection and writer
    thread belong to the parent): it opens its own, which for an embedded store fails with
    the advice to use ``AGENTLAKE_OBSERVER_SINK=http`` while the parent holds the file.
    """
    global _default, _default_pid

    local = _in_context.get()
    if local is not None:
        return local
    with _default_lock:
        if _default is not None and _default_pid not in (None, os.getpid()):
            _default = None  # inherited through fork: not ours to use or close
        if _default is None:
            _default = open_observer(settings)
            _default_pid = os.getpid()
        return _default


def _current_default() -> Observer | None:
    """The process-wide observer if this process already opened one (never opens it); in an
    ``observing`` block, that block's."""
    local = _in_context.get()
    if local is not None:
        return local
    observer = _default
    return observer if observer is not None and _default_pid == os.getpid() else None


def set_observer(observer: Observer | None) -> Observer | None:
    """Replace the process-wide observer (servers, tests); returns the previous one, NOT closed."""
    global _default, _default_pid

    with _default_lock:
        previous, _default = _default, observer
        _default_pid = os.getpid() if observer is not None else None
        return previous


@contextmanager
def observing(observer: Observer) -> Iterator[Observer]:
    """Within the block, and in this thread (this ``contextvars`` context) only, ``observer``
    stands in for the process-wide one: ``get_observer`` returns it and recording without an
    observer goes to it. Other threads still see the process-wide observer, so work running
    at once in several threads (scenario days) each records into its own. Not closed here."""
    token = _in_context.set(observer)
    try:
        yield observer
    finally:
        _in_context.reset(token)


@atexit.register
def close_default_observer() -> None:
    """Close the process-wide observer, if one was opened (also run at interpreter exit)."""
    previous = set_observer(None)
    if previous is not None:
        try:
            previous.close()
        except Exception:  # at exit there is nobody left to tell
            log.exception("closing the observer failed")
