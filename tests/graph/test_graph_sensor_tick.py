"""The sensor's tick and what the page shows: the browser reports its labels, buttons and tables
(on each render and on its tick when they changed), the sensor keeps them as lines the thinker is
given, and a page that went idle (no input, said by the tick) and comes back is noted."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from graph_support import FakeContext, of_type, step

from agentlake.graph import GraphRuntime, Packet, node_class
from agentlake.llm import ScriptedProvider

SHOWN = [
    {"id": "v-visitors", "kind": "label", "text": "visitors: 2"},
    {"id": "c-1", "kind": "button", "text": "+1"},
    {"id": "t-1", "kind": "table", "text": "sql: SELECT ...", "columns": ["state", "workers"], "rows": 10},
]


def _sensor(**config: Any) -> Any:
    cls = node_class("sensor_v1")
    return cls("sensor", cls.Config.model_validate(config))


def test_the_sensor_keeps_what_the_page_shows_as_lines_for_the_thinker() -> None:
    ctx = FakeContext()
    (context,) = _sensor().run(Packet("workspace", {"graph": "default", "shown": SHOWN}, edge="control"), ctx)

    assert context.edge == "context"
    assert context.payload["shown"] == [
        "label 'visitors: 2'",
        "button '+1'",
        "table 'sql: SELECT ...': columns state, workers; 10 rows shown",
    ]
    # The same report again changes nothing and sends nothing.
    assert _sensor().run(Packet("workspace", {"graph": "default", "shown": SHOWN}, edge="control"), ctx) == []


def test_a_page_idle_then_back_is_an_idle_return() -> None:
    sensor = _sensor(idle_after_s=60)
    idle = FakeContext(now=100.0)
    assert sensor.run(Packet("presence", {"state": "idle"}, edge="control"), idle) == []
    back = FakeContext(session=idle.session, now=500.0)
    (notes,) = sensor.run(Packet("presence", {"state": "visible"}, edge="control"), back)
    assert "returned to the page after 7 min" in notes.payload["notes"][-1]


def test_the_thinker_is_given_what_the_page_shows_fenced_as_data(
    make_runtime: Callable[..., GraphRuntime], model: ScriptedProvider
) -> None:
    runtime = make_runtime()
    session = runtime.session()
    sent: list[dict[str, Any]] = []
    runtime.handle(
        session, {"type": "workspace", "graph": "default", "controls": [], "shown": SHOWN}, sent.append
    )
    assert of_type(sent, "error") == []

    model.enqueue(step("The counter shows 2 visitors."))
    runtime.chat("hello there, what does my page say?", session)
    context = "\n".join(m.content for m in model.last_messages if m.role == "system")
    assert "The page shows:" in context
    assert "- table 'sql: SELECT ...': columns state, workers; 10 rows shown" in context


def test_a_bad_report_is_refused_in_one_line(make_runtime: Callable[..., GraphRuntime]) -> None:
    runtime = make_runtime()
    sent: list[dict[str, Any]] = []
    runtime.handle(
        runtime.session(), {"type": "workspace", "shown": [{"id": "x", "kind": "iframe"}]}, sent.append
    )
    (error,) = of_type(sent, "error")
    assert error["message"].startswith("bad event (workspace.shown.0.kind:")
