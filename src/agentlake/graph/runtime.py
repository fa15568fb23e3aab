"""The graph runtime: the active graph, the sessions, and one browser event handled end to end.

Owns: which graph is active (listed, shown, switched at runtime; sessions keep their state
across a switch), validating the events a browser sends (``message``, ``action``, ``workspace``,
``presence``), running each as one turn of the active graph under the session's lock, recording
it as one op (``graph.turn`` / ``graph.action`` / ``graph.report``; the nodes' model and tool
calls nest under it in the same trace), sending ``error`` and a closing ``done`` when a turn
fails, and the trace log every turn writes to. Transport (the WebSocket) is the web package's;
the nodes' behaviour is theirs.

The same runtime serves the dashboard, ``agentlake graph chat`` and the tests.
"""

from __future__ import annotations

import re
import secrets
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from agentlake.errors import AgentlakeError, NotFoundError, UserError
from agentlake.graph.definition import GraphDef, builtin_graphs
from agentlake.graph.engine import Turn, run_turn
from agentlake.graph.modelcalls import record_turn_calls
from agentlake.graph.node import NodeResources, Packet
from agentlake.graph.session import Sessions, SessionState
from agentlake.graph.trace import TRACE_FILE, TraceLog
from agentlake.observe import get_observer, observe, observe_context
from agentlake.settings import Settings, load_settings

if TYPE_CHECKING:
    from agentlake.agents.tools import ToolRegistry
    from agentlake.lake import Lake
    from agentlake.learn import LessonStore
    from agentlake.observe import Observer

SESSION_ID = re.compile(r"^s-[0-9a-f]{12}$")
MAX_MESSAGE_CHARS = 4000

Send = Callable[[dict[str, Any]], None]


class MessageEvent(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["message"]
    text: str = Field(..., min_length=1, max_length=MAX_MESSAGE_CHARS)


class ActionEvent(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["action"]
    action: str = Field(
        ..., pattern=r"^(go:[^:\s]+:.+|(inc|dec|toggle):[a-z][a-z0-9_-]{0,31}|say:.*\S.*)$", max_length=300
    )


class ShownControl(BaseModel):
    """One control as the browser shows it: a label's text, a button's, a table's title, columns
    and row count."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(..., max_length=120)
    kind: Literal["label", "button", "table"]
    text: str = Field("", max_length=200)
    columns: list[Annotated[str, Field(max_length=80)]] | None = Field(None, max_length=12)
    rows: int | None = Field(None, ge=0)


class WorkspaceEvent(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["workspace"]
    graph: str | None = Field(None, max_length=64)
    controls: list[Annotated[str, Field(max_length=120)]] | None = Field(None, max_length=200)
    shown: list[ShownControl] | None = Field(None, max_length=60)


class PresenceEvent(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["presence"]
    # idle: the page is open but has had no input for a while (the dashboard's tick says so).
    state: Literal["visible", "hidden", "idle"]


class FeedbackEvent(BaseModel):
    """A person's verdict on an answer of this session (the buttons under a reply)."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["feedback"]
    answer_id: str = Field(..., min_length=1, max_length=128)
    right: bool
    expected: str | None = Field(None, max_length=200)
    note: str | None = Field(None, max_length=1000)


ClientEvent = Annotated[
    MessageEvent | ActionEvent | WorkspaceEvent | PresenceEvent | FeedbackEvent, Field(discriminator="type")
]
_client_event = TypeAdapter(ClientEvent)


def parse_client_event(
    raw: Any,
) -> MessageEvent | ActionEvent | WorkspaceEvent | PresenceEvent | FeedbackEvent:
    """A browser event, validated; ``UserError`` says what is wrong with it."""
    try:
        return _client_event.validate_python(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "event"
        raise UserError(
            f"bad event ({where}: {err['msg']}); send {{type: message, text}}, {{type: action, action: go:M:S | inc:N | dec:N | toggle:N | say:TEXT}}, "
            "{type: workspace, graph, controls, shown}, {type: presence, state: visible|hidden|idle}, or "
            "{type: feedback, answer_id, right, expected}"
        ) from None


class Resources:
    """Lake, tools, observer and lessons for nodes, opened lazily. The gateway passes its ``Services``
    (same attributes) instead; this one is for the CLI and tests, and opens the lake read-only."""

    def __init__(
        self,
        settings: Settings,
        *,
        lake: Lake | None = None,
        tools: ToolRegistry | None = None,
        observer: Observer | None = None,
    ) -> None:
        self.settings = settings
        self._lake, self._tools, self._observer = lake, tools, observer
        self._lessons: LessonStore | None = None
        self._owned: list[Lake | LessonStore] = []
        self._lock = threading.Lock()

    @property
    def lake(self) -> Lake:
        with self._lock:
            if self._lake is None:
                # Lazy (start-up time): the lake (DuckDB) loads on first use.
                from agentlake.lake import Lake

                self._lake = Lake.open(self.settings, read_only=True)
                self._owned.append(self._lake)
            return self._lake

    @property
    def tools(self) -> ToolRegistry:
        with self._lock:
            if self._tools is None:
                # Lazy (start-up time): the agents load on first use.
                from agentlake.agents.tools import lake_tools

                self._tools = lake_tools()
            return self._tools

    @property
    def observer(self) -> Observer:
        with self._lock:
            if self._observer is None:
                self._observer = get_observer(self.settings)
            return self._observer

    @property
    def lessons(self) -> LessonStore | None:
        """The project's lesson store, read-only (``None`` until there is one, or with
        ``ask_lessons`` off): the data lessons the thinker is given."""
        with self._lock:
            if self._lessons is None:
                # Lazy (start-up time): the learning layer loads on first use.
                from agentlake.questions.retrieval import project_lessons

                self._lessons = project_lessons(self.settings)
                if self._lessons is not None:
                    self._owned.append(self._lessons)
            return self._lessons

    def close(self) -> None:
        with self._lock:
            owned, self._owned = self._owned[::-1], []
        for handle in owned:
            handle.close()
        self._lake = None
        self._lessons = None


class GraphRuntime:
    """The active graph, the sessions, the trace; :meth:`handle` runs one browser event."""

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        resources: NodeResources | None = None,
        graph: str | GraphDef = "default",
    ) -> None:
        self.settings = settings or (resources.settings if resources is not None else load_settings())
        # Only a Resources opened here is closed here; one passed in belongs to the caller.
        self._own_resources: Resources | None = None
        if resources is None:
            resources = self._own_resources = Resources(self.settings)
        self.resources = resources
        self.sessions = Sessions()
        self.trace = TraceLog(self.settings.data_dir / TRACE_FILE, self.settings.graph_trace_max_bytes)
        self._graphs: dict[str, GraphDef] | None = None
        self._active = self.graph("default")  # add() below needs an active graph
        self._active = self.add(graph) if isinstance(graph, GraphDef) else self.graph(graph)
        self._lock = threading.Lock()

    # --- graphs ---------------------------------------------------------------------------

    def graph(self, name: str) -> GraphDef:
        """A known graph by name: built-in or added (``NotFoundError`` lists the names)."""
        if self._graphs is None:
            self._graphs = builtin_graphs()
        if name not in self._graphs:
            raise NotFoundError(f"no graph named {name!r}; known graphs: {', '.join(self._graphs)}")
        return self._graphs[name]

    def add(self, graph: GraphDef) -> GraphDef:
        """Make a graph loaded from a file (``load_graph_file``) available to :meth:`switch`."""
        self.graph(self._active.name)
        assert self._graphs is not None
        self._graphs[graph.name] = graph
        return graph

    def graphs(self) -> list[dict[str, Any]]:
        """Every built-in graph's summary, with ``active`` marked."""
        self.graph(self._active.name)
        assert self._graphs is not None
        return [{**g.summary(), "active": g.name == self._active.name} for g in self._graphs.values()]

    @property
    def active(self) -> GraphDef:
        return self._active

    def switch(self, name: str) -> GraphDef:
        """Make ``name`` the active graph for every session's next event; traced and broadcast."""
        graph = self.graph(name)
        with self._lock:
            previous, self._active = self._active, graph
        self.trace.emit(
            session="-",
            turn=0,
            node="runtime",
            event="graph_switched",
            data={"from": previous.name, "to": graph.name, "graph": graph.view()},
        )
        return graph

    # --- events ---------------------------------------------------------------------------

    def session(self, session_id: str | None = None, *, owner: str | None = None) -> SessionState:
        """The session ``session_id`` if it is a valid id of ``owner``'s (kept or created), else
        a new one of ``owner``'s (see ``Sessions.get``)."""
        valid = session_id if session_id and SESSION_ID.match(session_id) else None
        return self.sessions.get(valid, owner=owner)

    def handle(self, session: SessionState, raw: Any, send: Send) -> list[dict[str, Any]]:
        """Run one browser event as a turn of the active graph; events go to ``send``.

        Bad events are answered with an ``error`` event and change nothing. A failing turn
        sends ``error`` and, for messages, a ``done`` with ``error`` so the browser stops
        waiting. Returns the turn's trace events.
        """
        try:
            event = parse_client_event(raw)
        except UserError as exc:
            send({"type": "error", "message": exc.message})
            return []
        with session.lock:
            if event.type == "feedback":
                self._feedback(session, event, send)
                return []
            return self._turn(session, event, send)

    def _feedback(self, session: SessionState, event: FeedbackEvent, send: Send) -> None:
        """Record feedback on one of this session's answers (``questions.feedback``), and say so."""
        # Lazy (start-up time): the learning layer loads on first use.
        from agentlake.questions.feedback import Feedback, give_feedback

        if event.answer_id not in session.answers:
            send({"type": "error", "message": f"no answer {event.answer_id!r} in this conversation"})
            return
        try:
            recorded = give_feedback(
                Feedback(**event.model_dump(exclude={"type"})), observer=self.resources.observer
            )
        except AgentlakeError as exc:
            send({"type": "error", "message": exc.message})
            return
        send(
            {
                "type": "feedback",
                "answer_id": recorded.answer_id,
                "right": recorded.right,
                "expected": event.expected,
            }
        )

    def _turn(self, session: SessionState, event: Any, send: Send) -> list[dict[str, Any]]:
        graph = self._active
        if event.type == "message" or (event.type == "action" and event.action.startswith("say:")):
            session.turns += 1
            endpoint, packet = "graph.turn", Packet(event.type, event.model_dump(exclude={"type"}))
            summary = event.text if event.type == "message" else event.action
        elif event.type == "action":
            endpoint, packet, summary = (
                "graph.action",
                Packet("action", {"action": event.action}),
                event.action,
            )
        else:
            endpoint, packet = "graph.report", Packet(event.type, event.model_dump(exclude={"type"}))
            summary = event.model_dump_json()
        turn = Turn(
            session=session,
            send=send,
            trace_log=self.trace,
            resources=self.resources,
            number=session.turns,
            tag=f"{session.id}:{session.turns}:{secrets.token_hex(4)}",
            trace_id=secrets.token_hex(16),
        )
        observer = self.resources.observer
        stop_recording = record_turn_calls(observer, turn.tag)
        try:
            with (
                observe_context(trace_id=turn.trace_id),
                observe(
                    endpoint,
                    source="agent",
                    agent_id="graph",
                    input=summary,
                    observer=observer,
                    graph=graph.name,
                    session=session.id,
                    owner=session.owner,
                ) as op,
            ):
                try:
                    events = run_turn(graph, turn, packet)
                except AgentlakeError as exc:
                    op.fail(exc.message)
                    send({"type": "error", "message": exc.message})
                    if endpoint == "graph.turn":
                        send({"type": "done", "text": "", "error": exc.message, "turn": session.turns})
                    return turn.events
                op.set_output({"trace_events": len(events), "nodes": sorted({e["node"] for e in events})})
        finally:
            stop_recording()
        return events

    def chat(
        self, text: str, session: SessionState | None = None
    ) -> tuple[SessionState, list[dict[str, Any]]]:
        """One message, synchronously: the session and every event sent (for the CLI and tests)."""
        session = session or self.session()
        sent: list[dict[str, Any]] = []
        self.handle(session, {"type": "message", "text": text}, sent.append)
        return session, sent

    def close(self) -> None:
        """Close what the runtime opened (its own ``Resources``; a passed-in one stays open)."""
        if self._own_resources is not None:
            self._own_resources.close()
