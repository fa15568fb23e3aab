"""The whole graph with the scripted LLM over a real small lake: reflex, director pre-planning,
tools (read-only SQL, hybrid search), state machines moved locally, the audit retries, memory,
the sensor, graph switching, the trace file and every model and tool call observed."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from graph_support import of_type, plan, reply_text, step, system_text

from agentlake.graph import GraphRuntime, read_trace
from agentlake.graph.nodes.thinker_v1 import AUDIT_FEEDBACK
from agentlake.llm import ScriptedProvider

MakeRuntime = Callable[..., GraphRuntime]
ORDER = {
    "name": "order",
    "states": ["new", "packed", "shipped"],
    "initial": "new",
    "transitions": [
        {"from": "new", "to": "packed", "label": "pack"},
        {"from": "packed", "to": "shipped", "label": "ship"},
    ],
}


def nodes_run(events: list[dict[str, Any]]) -> list[str]:
    return [e["node"] for e in events if e["event"] == "start"]


def ops(runtime: GraphRuntime, **filters: Any) -> list[Any]:
    return runtime.resources.observer.query(order="asc", **filters)


def test_small_talk_takes_the_reflex_path_without_any_model_call(
    make_runtime: MakeRuntime, lake_dir: Path, model: ScriptedProvider
) -> None:
    runtime = make_runtime(data_dir=lake_dir)
    session = runtime.session()
    sent: list[dict[str, Any]] = []
    events = runtime.handle(session, {"type": "message", "text": "Hi there!"}, sent.append)
    assert reply_text(sent).startswith("Hello!")
    assert of_type(sent, "done")[0]["path"] == "reflex"
    assert model.calls == 0
    assert nodes_run(events) == ["input", "sensor", "output", "memorizer"]
    assert "thinker" not in nodes_run(events)


def test_a_data_request_is_planned_then_answered_with_read_only_sql(
    make_runtime: MakeRuntime, lake_dir: Path, model: ScriptedProvider
) -> None:
    runtime = make_runtime(data_dir=lake_dir)
    model.enqueue(plan("count workers per state", "sql"))
    model.enqueue(
        step(
            "",
            (
                "sql",
                {
                    "query": "SELECT state, count(*) AS n FROM workers GROUP BY state ORDER BY n DESC, state LIMIT 3"
                },
            ),
        )
    )
    model.enqueue(step("California has the most workers."))
    session, sent = runtime.chat("how many workers are there per state?")

    assert reply_text(sent) == "California has the most workers."
    assert of_type(sent, "done")[0]["path"] == "director"
    # The director's plan reached the thinker's prompt; the SQL result went back as a tool message.
    thinker_first = model.history[1][0]
    assert "count workers per state" in system_text(thinker_first)
    assert thinker_first[0].content.startswith("ROLE: thinker")
    tool_message = json.loads(model.history[2][0][-1].content)
    assert tool_message["tool"] == "sql"
    assert tool_message["ok"]
    assert tool_message["rows"] == 3
    # The rows were shown as a table control.
    (controls,) = of_type(sent, "controls")
    (table,) = controls["controls"]
    assert table["columns"] == ["state", "n"]
    assert len(table["rows"]) == 3
    assert nodes_run(read_trace(runtime.trace.path)) == [
        "input",
        "sensor",
        "director",
        "thinker",
        "output",
        "ui",
        "memorizer",
    ]

    # Observed: the turn, each node's model calls and the tool call, in one trace.
    (turn,) = ops(runtime, endpoint="graph.turn")
    llm = ops(runtime, source="llm")
    assert [op.agent_id for op in llm] == ["graph.director", "graph.thinker", "graph.thinker"]
    assert all(op.usage is not None and op.usage.model == "graph" for op in llm)
    (sql,) = ops(runtime, endpoint="tool.sql")
    assert sql.agent_id == "graph.thinker"
    assert sql.success
    assert {op.trace_id for op in [turn, *llm, sql]} == {turn.trace_id}


def test_with_no_graph_model_the_default_model_answers(
    make_runtime: MakeRuntime, lake_dir: Path, model: ScriptedProvider
) -> None:
    # default_model is the embedded model on an installation; here it names the scripted one.
    runtime = make_runtime(data_dir=lake_dir, graph_model="", default_model="scripted:graph")
    model.enqueue(plan("count workers", "sql"))
    model.enqueue(step("", ("sql", {"query": "SELECT count(*) AS n FROM workers"})))
    model.enqueue(step("There are 200 workers."))

    _, sent = runtime.chat("how many workers are there?")

    assert reply_text(sent) == "There are 200 workers."
    assert len(model.history) == 3


def test_refused_sql_comes_back_to_the_thinker_as_a_tool_error(
    make_runtime: MakeRuntime, lake_dir: Path, model: ScriptedProvider
) -> None:
    runtime = make_runtime(data_dir=lake_dir)
    model.enqueue(plan())
    model.enqueue(step("", ("sql", {"query": "DELETE FROM workers"})))
    model.enqueue(step("I may only read the lake, so nothing was deleted."))
    _, sent = runtime.chat("delete all workers from the table")
    result = json.loads(model.history[2][0][-1].content)
    assert result["ok"] is False
    assert result["error"]
    assert reply_text(sent).startswith("I may only read")
    assert runtime.resources.lake.query("SELECT count(*) FROM workers").rows == [[200]]
    (failed,) = ops(runtime, endpoint="tool.sql")
    assert not failed.success


@pytest.mark.slow
def test_the_thinker_searches_worker_profiles(
    make_runtime: MakeRuntime, indexed_lake_dir: Path, model: ScriptedProvider
) -> None:
    runtime = make_runtime(data_dir=indexed_lake_dir)
    model.enqueue(plan("search profiles", "hybrid_search"))
    model.enqueue(step("", ("hybrid_search", {"question": "forklift certified warehouse worker", "k": 4})))
    model.enqueue(step("Here are four forklift-certified profiles."))
    _, sent = runtime.chat("find workers with forklift experience")
    result = json.loads(model.history[2][0][-1].content)
    assert result["ok"]
    assert result["rows"] == 4
    (table,) = of_type(sent, "controls")[0]["controls"]
    assert table["columns"] == ["doc", "score", "profile"]
    assert len(table["rows"]) == 4
    assert all(row[0].startswith("W-") for row in table["rows"])
    assert ops(runtime, endpoint="tool.hybrid_search")[0].success


def test_state_machines_are_built_by_tool_calls_and_move_locally(
    make_runtime: MakeRuntime, lake_dir: Path, model: ScriptedProvider
) -> None:
    runtime = make_runtime(data_dir=lake_dir)
    model.enqueue(step("", ("machine_create", ORDER)))
    model.enqueue(step("Your order workflow is ready."))
    session, sent = runtime.chat("set up an order workflow")
    buttons = [c for c in of_type(sent, "controls")[-1]["controls"] if c["kind"] == "button"]
    assert [(b["label"], b["action"]) for b in buttons] == [("pack", "go:order:packed")]
    calls_before = model.calls

    clicked: list[dict[str, Any]] = []
    events = runtime.handle(session, {"type": "action", "action": "go:order:packed"}, clicked.append)
    assert model.calls == calls_before  # no model round trip
    assert of_type(clicked, "transition") == [
        {"type": "transition", "machine": "order", "from": "new", "to": "packed", "label": "pack"}
    ]
    labels = [c["text"] for c in of_type(clicked, "controls")[0]["controls"] if c["kind"] == "label"]
    assert labels == ["order: packed"]
    assert nodes_run(events) == ["input", "ui"]
    assert ops(runtime, endpoint="graph.action")[0].success

    # Extended, reset and destroyed through further tool calls.
    model.enqueue(
        step(
            "",
            (
                "machine_extend",
                {
                    "name": "order",
                    "states": ["returned"],
                    "transitions": [{"from": "shipped", "to": "returned"}],
                },
            ),
        )
    )
    model.enqueue(step("Returns are possible now."))
    runtime.chat("add a return step", session)
    assert "returned" in session.machines["order"].states
    assert session.machines["order"].current == "packed"
    model.enqueue(step("", ("machine_reset", {"name": "order"})))
    model.enqueue(step("Back to new."))
    runtime.chat("reset the workflow", session)
    assert session.machines["order"].current == "new"
    model.enqueue(step("", ("machine_destroy", {"name": "order"})))
    model.enqueue(step("Removed."))
    _, sent = runtime.chat("remove the workflow", session)
    assert session.machines == {}
    assert of_type(sent, "controls")[-1]["controls"] == []
    assert [op.endpoint for op in ops(runtime, endpoint="tool.machine_*")] == [
        "tool.machine_create",
        "tool.machine_extend",
        "tool.machine_reset",
        "tool.machine_destroy",
    ]


def test_an_invalid_go_is_refused_locally(
    make_runtime: MakeRuntime, lake_dir: Path, model: ScriptedProvider
) -> None:
    runtime = make_runtime(data_dir=lake_dir)
    model.enqueue(step("", ("machine_create", ORDER)))
    model.enqueue(step("Ready."))
    session, _ = runtime.chat("workflow please")
    sent: list[dict[str, Any]] = []
    runtime.handle(session, {"type": "action", "action": "go:order:shipped"}, sent.append)
    assert "cannot go from 'new' to 'shipped'" in of_type(sent, "error")[0]["message"]
    assert session.machines["order"].current == "new"
    assert model.calls == 2


def test_the_audit_retries_code_without_a_tool_call(
    make_runtime: MakeRuntime, lake_dir: Path, model: ScriptedProvider
) -> None:
    runtime = make_runtime(data_dir=lake_dir, graph="minimal")
    model.enqueue(step("You can run: SELECT count(*) FROM workers WHERE state = 'TX'"))
    model.enqueue(step("", ("sql", {"query": "SELECT count(*) AS n FROM workers WHERE state = 'TX'"})))
    model.enqueue(step("There are that many workers in Texas, per the query."))
    _, sent = runtime.chat("how many workers in TX?")
    assert model.calls == 3
    assert model.history[1][0][-1].content == AUDIT_FEEDBACK["code_without_tool"]
    assert reply_text(sent) == "There are that many workers in Texas, per the query."
    assert [e for e in of_type(sent, "hud") if e.get("flag") == "code_without_tool"]


def test_the_audit_retries_an_intent_without_action(
    make_runtime: MakeRuntime, lake_dir: Path, model: ScriptedProvider
) -> None:
    runtime = make_runtime(data_dir=lake_dir, graph="minimal")
    model.enqueue(step("I'll create the workflow for you."))
    model.enqueue(step("", ("machine_create", ORDER)))
    model.enqueue(step("Created."))
    session, sent = runtime.chat("I need an order workflow")
    assert model.history[1][0][-1].content == AUDIT_FEEDBACK["intent_without_action"]
    assert "order" in session.machines
    assert reply_text(sent) == "Created."
    audits = [e for e in read_trace(runtime.trace.path) if e["event"] == "audit"]
    assert [a["data"]["kind"] for a in audits] == ["intent_without_action"]


def test_the_values_a_question_names_reach_the_thinker_as_filters(
    make_runtime: MakeRuntime, lake_dir: Path, model: ScriptedProvider
) -> None:
    runtime = make_runtime(data_dir=lake_dir, graph="minimal")
    model.enqueue(step("Four."))
    runtime.chat("how many welders are in CA?")
    asked = model.history[0][0][-1].content
    assert asked.startswith("how many welders are in CA?")
    assert "role = 'Welder'; state = 'CA' (columns of workers)" in asked


def test_the_thinker_sees_one_worked_example_per_tool_before_the_request(
    make_runtime: MakeRuntime, lake_dir: Path, model: ScriptedProvider
) -> None:
    runtime = make_runtime(data_dir=lake_dir, graph="minimal")
    model.enqueue(step("Hello."))
    runtime.chat("what can you do")
    prompt = model.history[0][0]
    steps = [json.loads(m.content) for m in prompt if m.role == "assistant"]
    called = [step["tool_calls"][0]["tool"] for step in steps if step["tool_calls"]]
    assert called == ["sql", "machine_create"]  # no search example: this lake has no index
    assert prompt[1].content.startswith("How many rows of")  # right after the system prompt


def test_a_lookup_is_asked_for_when_a_question_names_lake_values(
    make_runtime: MakeRuntime, lake_dir: Path, model: ScriptedProvider
) -> None:
    runtime = make_runtime(data_dir=lake_dir, graph="minimal")
    model.enqueue(step("There are some welders in CA."))
    model.enqueue(
        step(
            "", ("sql", {"query": "SELECT count(*) AS n FROM workers WHERE role = 'Welder' AND state = 'CA'"})
        )
    )
    model.enqueue(step("There are 4 welders in CA."))
    _, sent = runtime.chat("how many welders are in CA?")
    feedback = model.history[1][0][-1].content
    assert feedback.startswith("AUDIT: the question names values in the lake (role = 'Welder', state = 'CA')")
    assert reply_text(sent) == "There are 4 welders in CA."
    assert len(ops(runtime, endpoint="tool.sql")) == 1


@pytest.mark.parametrize(
    ("first", "problem"),
    [
        (
            "SELECT count(*) AS n FROM workers WHERE state = 'CA'",
            "the query leaves out role = 'Welder', which the question names",
        ),
        (
            "SELECT count(*) AS n FROM workers WHERE role = 'Welder' AND state = 'CA' AND city = 'Fremont'",
            "the query filters on city = 'Fremont', which the question does not name",
        ),
    ],
)
def test_a_count_with_the_wrong_filters_is_sent_back_once_without_running(
    make_runtime: MakeRuntime, lake_dir: Path, model: ScriptedProvider, first: str, problem: str
) -> None:
    runtime = make_runtime(data_dir=lake_dir, graph="minimal")
    fixed = "SELECT count(*) AS n FROM workers WHERE role = 'Welder' AND state = 'CA'"
    model.enqueue(step("", ("sql", {"query": first})))
    model.enqueue(step("", ("sql", {"query": fixed})))
    model.enqueue(step("There are 4 welders in CA."))
    runtime.chat("how many welders are in CA?")
    sent_back = json.loads(model.history[1][0][-1].content)
    assert sent_back["ok"] is False
    assert sent_back["error"].startswith(f"not run: {problem}")
    (ran,) = ops(runtime, endpoint="tool.sql")
    assert json.loads(ran.input_summary) == {"query": fixed}


def test_a_count_reaches_the_thinker_as_one_value(
    make_runtime: MakeRuntime, lake_dir: Path, model: ScriptedProvider
) -> None:
    runtime = make_runtime(data_dir=lake_dir, graph="minimal")
    model.enqueue(step("", ("sql", {"query": "SELECT count(*) AS n FROM workers"})))
    model.enqueue(step("There are 200 workers."))
    runtime.chat("how many workers are there?")
    assert json.loads(model.history[1][0][-1].content)["result"] == "<data>one value: n = 200</data>"


def test_a_controls_mismatch_is_flagged_and_the_controls_sent_again(
    make_runtime: MakeRuntime, lake_dir: Path, model: ScriptedProvider
) -> None:
    runtime = make_runtime(data_dir=lake_dir)
    model.enqueue(step("", ("machine_create", ORDER)))
    model.enqueue(step("Ready."))
    session, _ = runtime.chat("order workflow")
    sent_ids = session.controls_ids()
    matching: list[dict[str, Any]] = []
    runtime.handle(session, {"type": "workspace", "graph": "default", "controls": sent_ids}, matching.append)
    assert matching == []
    flagged: list[dict[str, Any]] = []
    runtime.handle(
        session, {"type": "workspace", "graph": "default", "controls": sent_ids[:1]}, flagged.append
    )
    assert of_type(flagged, "hud")[0]["flag"] == "controls_mismatch"
    assert [c["id"] for c in of_type(flagged, "controls")[0]["controls"]] == sent_ids
    # The thinker hears about it on its next run.
    model.enqueue(step("Noted."))
    runtime.chat("what happened?", session)
    assert str(sorted(sent_ids[1:])) in system_text(model.last_messages)  # the controls it missed


def test_memory_and_an_idle_return_reach_the_thinkers_next_prompt(
    make_runtime: MakeRuntime, lake_dir: Path, model: ScriptedProvider
) -> None:
    runtime = make_runtime(data_dir=lake_dir)
    model.enqueue(step("", ("machine_create", ORDER)))
    model.enqueue(step("Ready."))
    session, _ = runtime.chat("an order workflow please")
    session.last_activity -= 3600  # an hour without a message
    model.enqueue(step("Welcome back."))
    runtime.chat("are you still there", session)
    system = system_text(model.last_messages)
    assert "an order workflow please" in system
    assert "came back after 60 min" in system
    assert "order: at new" in system  # the workspace's machines are in the prompt too


def test_switching_graphs_keeps_the_session_and_changes_the_path(
    make_runtime: MakeRuntime, lake_dir: Path, model: ScriptedProvider
) -> None:
    runtime = make_runtime(data_dir=lake_dir)
    model.enqueue(step("", ("machine_create", ORDER)))
    model.enqueue(step("Ready."))
    session, _ = runtime.chat("order workflow")
    assert [g["name"] for g in runtime.graphs() if g["active"]] == ["default"]
    runtime.switch("minimal")
    assert runtime.active.name == "minimal"
    assert [g["name"] for g in runtime.graphs() if g["active"]] == ["minimal"]
    model.enqueue(step("", ("sql", {"query": "SELECT count(*) AS n FROM workers"})))
    model.enqueue(step("200 workers."))
    events = runtime.chat("how many workers are there?", session)[1]
    assert reply_text(events) == "200 workers."
    assert model.calls == 4  # no director call in the minimal graph
    assert "order" in session.machines
    switched = [e for e in read_trace(runtime.trace.path) if e["event"] == "graph_switched"]
    assert switched[0]["data"]["to"] == "minimal"
    with pytest.raises(Exception, match="known graphs: default"):
        runtime.switch("nope")


def test_a_failing_model_ends_the_turn_with_an_error(make_runtime: MakeRuntime, lake_dir: Path) -> None:
    runtime = make_runtime(data_dir=lake_dir, graph_model="ollama:nothing-here", llm_max_retries=0)
    _, sent = runtime.chat("what is your favourite colour")
    (error,) = of_type(sent, "error")
    assert "OLLAMA_HOST" in error["message"] or "127.0.0.1:9" in error["message"]
    assert of_type(sent, "done")[0]["error"] == error["message"]
    (turn,) = ops(runtime, endpoint="graph.turn")
    assert not turn.success
    assert [op.success for op in ops(runtime, source="llm")] == [False]


@pytest.mark.parametrize(
    "event",
    [
        {"type": "message", "text": ""},
        {"type": "action", "action": "rm -rf"},
        {"type": "shout"},
        "text",
        {"type": "message"},
    ],
)
def test_bad_browser_events_are_answered_with_an_error_and_change_nothing(
    make_runtime: MakeRuntime, lake_dir: Path, event: Any
) -> None:
    runtime = make_runtime(data_dir=lake_dir)
    session = runtime.session()
    sent: list[dict[str, Any]] = []
    assert runtime.handle(session, event, sent.append) == []
    assert [e["type"] for e in sent] == ["error"]
    assert "bad event" in sent[0]["message"]
    assert session.turns == 0
    assert session.history == []
    assert not runtime.trace.path.exists()


def test_the_trace_file_rotates_by_size(make_runtime: MakeRuntime, lake_dir: Path) -> None:
    runtime = make_runtime(data_dir=lake_dir, graph_trace_max_bytes=2000)
    session = runtime.session()
    for _ in range(12):
        runtime.chat("thanks", session)
    files = runtime.trace.files()
    assert [f.name for f in files] == [
        "graph-trace.jsonl",
        "graph-trace.jsonl.1",
        "graph-trace.jsonl.2",
        "graph-trace.jsonl.3",
    ]
    assert all(f.stat().st_size <= 2000 for f in files)
    newest = read_trace(files[0])
    assert newest[-1]["node"] == "memorizer"
    assert newest[-1]["session"] == session.id
    # Rotated files hold older events; the oldest beyond three rotations were dropped.
    assert read_trace(files[1])[-1]["ts"] <= newest[0]["ts"]
