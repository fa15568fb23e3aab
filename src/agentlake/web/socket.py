"""The dashboard's WebSocket: browser events in, the graph runtime's events out.

Owns one connection's pumps. On connect it sends ``hello`` (the session id, the active graph,
the model; then a ``hud`` note when that is the scripted demo because no model is configured or
installed), subscribes the connection to the trace broadcast and then runs three
tasks: a reader (JSON text frames into an inbox; non-JSON is answered with ``error``), a worker
(one event at a time, each as a turn in a worker thread, so a slow model never blocks the
event loop and a session's turns stay in order) and a writer (everything queued for the
browser). Closing either side stops all three. The runtime does the work; this is transport.

Each chat message is charged to the key's rate limits (``gateway.limits``: the general and the
model bucket); one over them is answered with ``error`` and ``done`` and never run. Feedback on
an answer (the buttons under it) takes a key with write scope, as ``POST /feedback`` does.

Sessions belong to who opened them (:func:`session_owner`: the user a trusted proxy names in
``trusted_user_header`` when that is configured, else the key's name from ``KEY:SCOPE:NAME``,
else the key's fingerprint): ``?session=<id>`` continues a session only for its owner, anyone
else gets a new one. ``hello`` says who the owner is; the page shows it. Trace events go to their
own session's connections (and runtime-wide ones, such as a graph switch, to all); an admin
may ask for every session's with ``?trace=all``, the dashboards' operator view.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from typing import Any

from starlette.websockets import WebSocket, WebSocketDisconnect

from agentlake.errors import UserError
from agentlake.gateway.limits import charge_scope
from agentlake.graph.modelcalls import graph_model_choice

log = logging.getLogger(__name__)

INBOX_MAX = 64


async def serve_socket(websocket: WebSocket, runtime: Any) -> None:
    """Serve one dashboard connection until either side closes it."""
    await websocket.accept()
    principal = websocket.scope.get("state", {}).get("principal")
    owner = session_owner(principal, websocket.headers, runtime.settings.trusted_user_header)
    session = runtime.session(websocket.query_params.get("session"), owner=owner)
    every_session = websocket.query_params.get("trace") == "all" and bool(
        principal is not None and principal.allows("admin")
    )
    loop = asyncio.get_running_loop()
    outbox: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
    inbox: asyncio.Queue[Any] = asyncio.Queue(INBOX_MAX)

    def send(event: dict[str, Any]) -> None:
        # Called from turn threads and trace broadcasts: hand over to the loop's thread.
        loop.call_soon_threadsafe(outbox.put_nowait, event)

    def on_trace(record: dict[str, Any]) -> None:
        # Another session's events (its user's words among them) are not this connection's.
        if every_session or record.get("session") in (session.id, "-"):
            send({"type": "trace", **record})

    stop_trace = runtime.trace.subscribe(on_trace)
    model, note = graph_model_choice(runtime.settings)
    await outbox.put(
        {
            "type": "hello",
            "session": session.id,
            "graph": runtime.active.view(),
            "model": model,
            "controls": session.controls_sent,
            "owner": session.owner,
            "tick_s": runtime.settings.graph_sensor_tick_s,
        }
    )
    if note:  # the scripted demo answers: the HUD says so, and how to get a real model
        await outbox.put({"type": "hud", "node": "runtime", "message": note, "flag": "demo_model"})

    async def reader() -> None:
        while True:
            text = await websocket.receive_text()
            try:
                event = json.loads(text)
            except ValueError:
                await outbox.put(
                    {
                        "type": "error",
                        "message": 'send JSON text frames, e.g. {"type": "message", "text": "hi"}',
                    }
                )
                continue
            if isinstance(event, dict) and event.get("type") == "feedback" and not _may_write(principal):
                # As POST /feedback: teaching the learner takes a write key where keys are set.
                await outbox.put(
                    {"type": "error", "message": "feedback on an answer needs a key with write scope"}
                )
                continue
            if isinstance(event, dict) and event.get("type") == "message":
                try:  # each chat turn calls a model: the key's rate limits (gateway.limits)
                    charge_scope(websocket.scope, ("all", "model"), "a graph chat message")
                except UserError as exc:
                    await outbox.put({"type": "error", "message": exc.message})
                    await outbox.put({"type": "done", "text": "", "error": "rate limited"})
                    continue
            await inbox.put(event)

    async def worker() -> None:
        while True:
            event = await inbox.get()
            try:
                await asyncio.to_thread(runtime.handle, session, event, send)
            except Exception:  # a bug in a node: say so, keep the connection
                log.exception("graph turn failed")
                await outbox.put(
                    {"type": "error", "message": "the turn failed unexpectedly; see the server log"}
                )
                await outbox.put({"type": "done", "text": "", "error": "internal error"})

    async def writer() -> None:
        while True:
            event = await outbox.get()
            if event is None:
                return
            await websocket.send_text(json.dumps(event, default=str, ensure_ascii=False))

    tasks = [asyncio.create_task(coro()) for coro in (reader, worker, writer)]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            error = task.exception()
            if error is not None and not isinstance(error, (WebSocketDisconnect, RuntimeError)):
                log.warning("dashboard socket ended: %r", error)
    finally:
        stop_trace()
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        with contextlib.suppress(Exception):
            await websocket.close()


# What a trusted proxy may name a user: printable, short, no separators a log line could split on.
_USER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}$")


def session_owner(principal: Any, headers: Any, trusted_user_header: str | None) -> str | None:
    """Who a dashboard session belongs to: the trusted proxy's user (when ``trusted_user_header``
    is set and the request carries a well-formed one), else the key's name, else its fingerprint;
    ``None`` on an open gateway without a proxy's user."""
    if trusted_user_header:
        user = (headers.get(trusted_user_header) or "").strip()
        if _USER.match(user):
            return user
    return getattr(principal, "who", None)


def _may_write(principal: Any) -> bool:
    """Whether the connection's key may write (an open gateway has no principal: it may)."""
    return principal is None or bool(principal.allows("write"))
