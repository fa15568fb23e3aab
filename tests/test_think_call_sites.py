"""``think`` is a property of each call site: off on every structured hot path, on for the overseer.

Every model call agentlake makes on its own behalf is driven here once, through its real code
path, against a scripted model that can think (``ScriptedProvider`` declares
``supports_thinking``) and records the options of each call; each case asserts the ``think`` its
calls carried. A source scan makes sure no call site outside the LLM layer leaves it unsaid, so
a new call site fails here until it states its choice (and gets a case).
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentlake.agents import FillOrder, LLMPolicy, RulesPolicy, RunContext, ScheduleBook
from agentlake.agents.ask import ask
from agentlake.lake import Lake
from agentlake.llm import ScriptedProvider, register_scripted, reset_llm_state
from agentlake.observe import MemorySink, Observer
from agentlake.settings import Settings, load_settings
from agentlake.workforce.candidates import CandidateQuery, find_candidates

SRC = Path(__file__).resolve().parents[1] / "src" / "agentlake"
ORDER = "3 x Warehouse Associate in New York, NY at 08:00 on 2026-04-22"
FIND = {"role": "Warehouse Associate", "city": "New York", "state": "NY"}
PENGUINS = "species,island,body_mass_g\nAdelie,Torgersen,3750\nAdelie,Torgersen,unknown\nGentoo,Biscoe,4500\n"
# The LLM layer's calls: a module that imports one of these from agentlake.llm calls a model.
MODEL_CALLS = {"generate", "generate_json", "generate_structured", "generate_continuable"}


@pytest.fixture(autouse=True)
def _clean_llm_state() -> Iterator[None]:
    reset_llm_state()
    yield
    reset_llm_state()


def scripted(name: str, *replies: str) -> ScriptedProvider:
    """A model that can think, registered as ``scripted:NAME``, with ``replies`` queued."""
    provider = ScriptedProvider(name, supports_thinking=True)
    provider.enqueue_many(*replies)
    register_scripted(name, provider)
    return provider


def thinks(provider: ScriptedProvider, role: str | None = None) -> list[bool | None]:
    """``think`` of each call ``provider`` received (those whose system prompt starts with
    ``ROLE: role`` when given)."""
    return [
        options.think
        for messages, options in provider.history
        if role is None or messages[0].content.startswith(f"ROLE: {role}")
    ]


@pytest.fixture(scope="module")
def workforce(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lake]:
    from agentlake.workforce.generator import generate_workforce, load_workforce

    data_dir = tmp_path_factory.mktemp("think-workforce")
    # Explicit values: a module fixture is built before the per-test environment is cleaned.
    settings = Settings(
        data_dir=data_dir,
        ollama_host="http://127.0.0.1:9",
        openai_base_url=None,
        llm_max_retries=0,
        default_model="none",
        agent_turn_budget=8,
        agent_min_availability=0.3,
    )
    opened = Lake.open(settings, path=data_dir / "lake.duckdb")
    load_workforce(opened, generate_workforce(4000, seed=7, clients=40))
    yield opened
    opened.close()


@pytest.fixture
def penguins(tmp_path: Path) -> Iterator[Lake]:
    """A one-table lake at the test's data dir (where a graph runtime opens it too)."""
    csv = tmp_path / "penguins.csv"
    csv.write_text(PENGUINS)
    with Lake.open(load_settings(data_dir=tmp_path / "data")) as lake:
        lake.ingest(csv, "penguins")
        yield lake


def _fill(lake: Lake) -> tuple[ScriptedProvider, ScriptedProvider]:
    """A good fill through the executor/reviewer loop: search, propose, approve."""
    order = FillOrder.parse(ORDER)
    query = CandidateQuery(
        role=order.role, city=order.city, state=order.state, radius_miles=order.radius_miles,
        min_availability=lake.settings.agent_min_availability, limit=12,
    )  # fmt: skip
    found = [row["worker_id"] for row in find_candidates(lake, query)]
    schedule = ScheduleBook(lake)
    free = [w for w in found if not schedule.conflicts(w, order.shift_start, order.shift_end)]
    executor = scripted(
        "executor",
        json.dumps({"kind": "tool_call", "tool": "find_workers", "args": FIND}),
        json.dumps({"kind": "propose_done", "worker_ids": free[:3]}),
    )
    reviewer = scripted("reviewer", json.dumps({"kind": "critique", "approve": True}))
    outcome = LLMPolicy("scripted:executor", "scripted:reviewer").run(
        order, RunContext(lake=lake, schedule=schedule, rescue=False, observer=Observer(MemorySink()))
    )
    assert outcome.success, outcome.failure_reason
    return executor, reviewer


def test_executor_turns_do_not_think(workforce: Lake) -> None:
    executor, _ = _fill(workforce)
    assert thinks(executor) == [False, False]


def test_reviewer_turns_do_not_think(workforce: Lake) -> None:
    _, reviewer = _fill(workforce)
    assert thinks(reviewer) == [False]


def test_a_staffer_that_asks_for_thinking_gets_it(workforce: Lake) -> None:
    order = FillOrder.parse(ORDER)
    executor = scripted("executor", json.dumps({"kind": "tool_call", "tool": "find_workers", "args": FIND}))
    LLMPolicy("scripted:executor", "scripted:executor", think=True, turn_budget=2).run(
        order, RunContext(lake=workforce, rescue=False, observer=Observer(MemorySink()))
    )
    assert thinks(executor)[0] is True


def _ask(lake: Lake) -> ScriptedProvider:
    asker = scripted(
        "asker",
        json.dumps({"route": "sql", "sql": "SELECT count(*) AS n FROM penguins WHERE species = 'Gentoo'"}),
        "One [SQL].",
    )
    ask("How many Gentoo penguins are there?", lake=lake, model="scripted:asker", lessons=False)
    return asker


def test_asks_plan_does_not_think(penguins: Lake) -> None:
    assert thinks(_ask(penguins))[0] is False


def test_asks_answer_does_not_think(penguins: Lake) -> None:
    assert thinks(_ask(penguins))[-1] is False


def _graph_turn(penguins: Lake) -> ScriptedProvider:
    from agentlake.graph import GraphRuntime, Resources

    graph = scripted(
        "graph",
        json.dumps({"goal": "count penguins", "steps": ["count", "answer"], "tools": ["sql"]}),
        json.dumps({"say": "", "tool_calls": [{"tool": "sql", "args": {"query": "SELECT count(*) AS n FROM penguins"}}]}),
        json.dumps({"say": "There are 3 penguins.", "tool_calls": []}),
    )  # fmt: skip
    settings = penguins.settings.model_copy(update={"graph_model": "scripted:graph"})
    penguins.close()  # the runtime opens the lake itself
    observer = Observer(MemorySink())
    runtime = GraphRuntime(settings, resources=Resources(settings, observer=observer), graph="default")
    try:
        runtime.chat("how many penguins are there?")
    finally:
        runtime.resources.close()
    return graph


def test_the_graphs_director_does_not_think(penguins: Lake) -> None:
    assert thinks(_graph_turn(penguins), "director") == [False]


def test_the_graphs_thinker_does_not_think(penguins: Lake) -> None:
    assert thinks(_graph_turn(penguins), "thinker") == [False, False]


def test_the_llm_lesson_extractor_does_not_think() -> None:
    from agentlake.learn import ExtractContext, LLMExtractor
    from agentlake.observe.model import ObservedOp

    witness = scripted("witness", json.dumps({"candidates": []}))
    failed = ObservedOp(
        id="sql-1", endpoint="tool.sql", source="agent", success=False, error="no column wage"
    )
    settings = load_settings(learn_llm_timeout_s=5.0)
    LLMExtractor("scripted:witness", settings=settings).extract([failed], ExtractContext(project_id="p"))
    assert thinks(witness) == [False]


def test_the_data_questions_correction_does_not_think(penguins: Lake, tmp_path: Path) -> None:
    from agentlake.learn import LessonStore, learn_cycle
    from agentlake.questions.feedback import Feedback, give_feedback

    scripted("asker", json.dumps({"route": "sql", "sql": "SELECT count(*) AS n FROM penguins"}), "3 [SQL].")
    # An expected value no rewrite of the query reaches: only the model can correct it.
    corrector = scripted("corrector", json.dumps({"sql": "SELECT count(*) + 4 AS n FROM penguins"}))
    observer = Observer(MemorySink(), ring_size=100)
    answer = ask("How many penguins were weighed?", lake=penguins, model="scripted:asker", observer=observer)
    give_feedback(Feedback(answer_id=answer.id, right=False, expected="7"), observer=observer)
    settings = penguins.settings.model_copy(update={"learn_model": "scripted:corrector"})
    with LessonStore.open(settings, path=tmp_path / "lessons.duckdb", embedder=False) as store:
        learn_cycle(
            store, observer.query(limit=100, order="asc"), lake=penguins, maintain=False, promote=False
        )
    assert thinks(corrector) == [False]


def test_the_order_reader_does_not_think() -> None:
    from datetime import datetime

    from agentlake.agents.order_reader import read_order

    reader = scripted("reader", json.dumps({"role": "welders", "count": 2, "city": "Akron", "state": "OH"}))
    read_order("need two welders near Akron OH tomorrow", model="scripted:reader", now=datetime(2026, 4, 22))
    assert thinks(reader) == [False]


def test_the_overseer_model_thinks(workforce: Lake) -> None:
    from agentlake.agents.overseer_model import model_deltas

    outcome = RulesPolicy(spares=0).run(
        FillOrder.parse(ORDER), RunContext(lake=workforce, observer=Observer(MemorySink()))
    )
    overseer = scripted("overseer", json.dumps({"lessons": []}))
    model_deltas("scripted:overseer", [outcome], [])
    assert thinks(overseer) == [True]


def test_the_overseers_t3_and_t4_think() -> None:
    from datetime import UTC, datetime

    from agentlake.agents.overseer_tiers import review_event, synthesise_days
    from agentlake.observe.model import ObservedOp

    op = ObservedOp(
        id="op-1",
        ts=datetime(2026, 4, 22, tzinfo=UTC),
        endpoint="fill.judged",
        source="scenario",
        attributes={"client_id": "c", "requested": 3, "filled": 3, "batch": 1, "scenario": "s"},
    )
    tiers = scripted("tiers", json.dumps({"lessons": []}), json.dumps({"lessons": []}))
    review_event("scripted:tiers", FillOrder.parse(ORDER), op, [])
    synthesise_days("scripted:tiers", [op])
    assert thinks(tiers) == [True, True]


def test_the_gatekeepers_model_thinks(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    from agentlake.learn import Delta, LessonDraft, LessonMatch, LessonStore, learn_cycle
    from agentlake.learn.gate import Gatekeeper
    from agentlake.observe.model import ObservedOp

    judged = {
        "scope": "c",
        "shape": "Welder in Akron, OH",
        "items": [{"id": 1, "accepted": True, "values": {}}],
    }
    op = ObservedOp(
        id="op-1",
        ts=datetime(2026, 4, 22, tzinfo=UTC),
        endpoint="fill.judged",
        source="scenario",
        attributes={"judged": judged},
    )
    draft = LessonDraft(
        trigger="welders for c",
        action="be careful",
        match=LessonMatch(fields={"client_id": "c"}),
        domain="staffing",
    )
    gate = scripted("gate", json.dumps({"refused": []}))
    with LessonStore.open(path=tmp_path / "lessons.duckdb", embedder=False) as store:
        learn_cycle(
            store, [op], proposals=[Delta(op="ADD", lesson=draft)], gate=Gatekeeper(model="scripted:gate")
        )
    assert thinks(gate) == [True]


def _unstated_think(source: str, where: str) -> list[str]:
    """``where:line`` of each call of the LLM layer's model calls in ``source`` that does not
    pass ``think``."""
    tree = ast.parse(source)
    imported = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("agentlake.llm")
        for alias in node.names
        if alias.name in MODEL_CALLS
    }
    return [
        f"{where}:{node.lineno}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in imported
        and not any(keyword.arg == "think" for keyword in node.keywords)
    ]


def test_every_model_call_outside_the_llm_layer_states_think() -> None:
    missing = [
        where
        for path in sorted(SRC.rglob("*.py"))
        if path.relative_to(SRC).parts[0] != "llm"
        for where in _unstated_think(path.read_text(), str(path.relative_to(SRC)))
    ]
    assert missing == []


def test_the_scan_names_a_call_that_leaves_think_unsaid() -> None:
    probe = (
        "from agentlake.llm import generate as g\n\ng('m', 'hi', max_tokens=5)\ng('m', 'hi', think=False)\n"
    )
    assert _unstated_think(probe, "probe.py") == ["probe.py:3"]
