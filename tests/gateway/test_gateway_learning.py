"""`agentlake serve` learns lessons from the ops it records, on the settings' interval."""

from __future__ import annotations

import time

from fastapi.testclient import TestClient

from agentlake.gateway import create_app
from agentlake.observe import ObservedOp
from agentlake.settings import load_settings


def _rejected_fill() -> ObservedOp:
    return ObservedOp(
        endpoint="fill.judged",
        source="scenario",
        success=False,
        run_id="r1",
        labels=dict(event_kind="baseline_fill", role="Welder", city="Cleveland", state="OH", count=2),
        attributes={
            "client_id": "riverfront-steel",
            "task_kind": "baseline_fill",
            "requested": 2,
            "filled": 1,
            "accepted": [1],
            "rejections": [
                {
                    "worker_id": 7,
                    "reason": "reliability 0.55 below 0.70",
                    "rule": "min_reliability",
                    "value": 0.7,
                }
            ],
        },
    )


def test_serve_learns_on_schedule() -> None:
    settings = load_settings(learn_interval_s=0.2)
    app = create_app(settings, mount_mcp=False)
    with TestClient(app) as client:
        scheduler = app.state.learning
        assert scheduler.running
        app.state.learning.ops_source.record(_rejected_fill())
        deadline = time.monotonic() + 20
        while not scheduler.store.list():
            assert time.monotonic() < deadline, f"no lesson learned; last error: {scheduler.last_error}"
            time.sleep(0.1)
        lessons = client.get("/playbooks").json()
        assert "riverfront-steel" in str(lessons)
    assert not scheduler.running


def test_schedule_can_be_turned_off() -> None:
    app = create_app(load_settings(learn_schedule=False), mount_mcp=False)
    with TestClient(app):
        assert not hasattr(app.state, "learning")


# --- lessons only from what they are about (issue 19, point 3) -------------------------------

ORDER = "2 x Welder in Cleveland, OH for Riverfront Steel at 08:00 on 2026-04-22"


def _outside_spans(url: str) -> None:
    """Another app's GenAI agent, sent with the OpenTelemetry SDK's own OTLP exporter: tool
    failures and timeouts a heuristic would happily turn into lessons."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.trace import Status, StatusCode

    provider = TracerProvider(resource=Resource.create({"service.name": "weather-bot"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{url}/v1/traces", timeout=10)))
    tracer = provider.get_tracer("weather-bot")
    for n in range(60):
        with tracer.start_as_current_span("execute_tool get_weather") as span:
            span.set_attribute("gen_ai.operation.name", "execute_tool")
            span.set_attribute("gen_ai.tool.name", "get_weather")
            span.set_attribute("agentlake.run_id", f"weather-{n}")
            span.set_status(Status(StatusCode.ERROR, "get_weather timed out after 30 s"))
        with tracer.start_as_current_span("fill.judged") as judged:  # a name that mimics ours
            judged.set_attribute("client_id", "riverfront-steel")
    provider.shutdown()


def _bad_calls(gateway: TestClient, services: object) -> None:
    """Deliberately bad requests, over MCP (the official client) and REST."""
    import anyio
    from mcp import Client

    from agentlake.gateway.mcp_server import build_mcp_server

    async def scenario() -> None:
        async with Client(build_mcp_server(services)) as client:
            for _ in range(3):
                await client.call_tool("sql", {"query": "SELECT wage FROM workers"})
                await client.call_tool("search", {"question": "welder", "k": -1})
                await client.call_tool("get_worker", {"worker_id": 99999999})

    anyio.run(scenario)
    for _ in range(3):
        gateway.post("/tools/sql/call", json={"arguments": {"query": "SELECT salary FROM workers"}})
        gateway.post("/sql", json={"sql": "SELECT nope FROM workers"})


def test_the_executors_prompt_holds_no_lesson_from_outside_traces(make_gateway) -> None:
    from agentlake.agents import FillOrder, LLMPolicy, RunContext, ScheduleBook
    from agentlake.llm import ScriptedProvider
    from agentlake.observe.service import running_service

    gateway, app = make_gateway(keys=None)
    services = app.state.services
    with running_service(services.observer, services.settings) as url:
        _outside_spans(url)
    _bad_calls(gateway, services)
    services.observer.record(_rejected_fill())  # staffing work: the one thing to learn from

    report = app.state.learning.run_once()
    lessons = services.lessons.list()
    assert report is not None
    assert report.ops_ignored > 60
    assert [lesson.match.get("client_id") for lesson in lessons if lesson.domain == "staffing"] == [
        "riverfront-steel"
    ]

    executor, reviewer = ScriptedProvider("executor"), ScriptedProvider("reviewer")
    executor.enqueue('{"kind": "plan", "steps": ["find welders"]}')
    reviewer.enqueue('{"kind": "critique", "approve": false, "notes": "stop"}')
    order = FillOrder.parse(ORDER)
    ctx = RunContext(lake=services.lake, schedule=ScheduleBook(services.lake), lessons=services.lessons)
    LLMPolicy(executor, reviewer, turn_budget=2).run(order, ctx)
    prompt = "\n".join(message.content for message in executor.history[0][0])
    rule = next(lesson for lesson in lessons if lesson.domain == "staffing")
    assert f"[{rule.id}]" in prompt
    for outside in ("get_weather", "timed out"):
        assert outside not in prompt, outside


def test_sql_that_failed_through_the_gateway_and_mcp_teaches(make_gateway) -> None:
    gateway, app = make_gateway(keys=None)
    _bad_calls(gateway, app.state.services)

    app.state.learning.run_once()

    tools = [lesson for lesson in app.state.services.lessons.list() if lesson.match.tool == "sql"]
    assert [lesson.evidence_count >= 6 for lesson in tools] == [True]
