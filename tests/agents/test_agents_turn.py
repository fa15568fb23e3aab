"""One typed-action turn (``agents.turn``) and the one per-tool call branch (``actions.call_branch``)
the executor's schema and the graph thinker's steps are built from."""

from __future__ import annotations

from collections.abc import Iterator

import jsonschema
import pytest
from pydantic import BaseModel

from agentlake.agents.actions import call_branch, executor_schema
from agentlake.agents.turn import Turn, TurnFailure, TurnReply, attempt, take
from agentlake.errors import RunError
from agentlake.llm import ScriptedProvider, Usage, add_recorder, reset_llm_state
from agentlake.settings import Settings

SQL = {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}
SETTINGS = Settings(llm_max_retries=0, openai_base_url=None, default_model="none")


class Pick(BaseModel):
    n: int


@pytest.fixture(autouse=True)
def _clean_llm_state() -> Iterator[None]:
    reset_llm_state()
    yield
    reset_llm_state()


def _model(*replies: str) -> ScriptedProvider:
    provider = ScriptedProvider("turn")
    for reply in replies:
        provider.enqueue(reply, usage=Usage(input_tokens=10, output_tokens=3))
    return provider


def test_a_turn_answers_with_the_validated_value() -> None:
    reply = take(Turn.of(_model('{"n": 4}'), Pick), [{"role": "user", "content": "pick"}], SETTINGS)
    assert reply.value == Pick(n=4)


def test_a_turn_counts_the_repair_requests_before_a_valid_reply() -> None:
    reply = take(
        Turn.of(_model('{"n": "four"}', '{"n": 4}'), Pick), [{"role": "user", "content": "x"}], SETTINGS
    )
    assert reply.schema_retries == 1


def test_a_turn_decodes_under_the_schema_it_is_given() -> None:
    model = _model('{"n": 2}')
    narrowed = {"type": "object", "properties": {"n": {"enum": [2, 3]}}, "required": ["n"]}
    take(Turn.of(model, Pick, schema=narrowed), [{"role": "user", "content": "x"}], SETTINGS)
    assert model.history[0][1].schema_ == narrowed


def test_a_turn_passes_its_think_switch_and_temperature() -> None:
    model = _model('{"n": 2}')
    take(Turn.of(model, Pick, think=True, temperature=0.3), [{"role": "user", "content": "x"}], SETTINGS)
    options = model.history[0][1]
    assert (options.think, options.temperature) == (True, 0.3)


def test_a_turns_tags_reach_its_call_record() -> None:
    records = []
    unsubscribe = add_recorder(records.append)
    try:
        take(
            Turn.of(_model('{"n": 1}'), Pick, tags={"agent_id": "a.executor"}),
            [{"role": "user", "content": "x"}],
            SETTINGS,
        )
    finally:
        unsubscribe()
    assert records[-1].tags["agent_id"] == "a.executor"


def test_a_reply_never_valid_is_an_invalid_turn() -> None:
    failure = attempt(Turn.of(_model("no", "no", "no"), Pick), [{"role": "user", "content": "x"}], SETTINGS)
    assert isinstance(failure, TurnFailure)
    assert failure.invalid
    assert failure.raw == "no"


def test_a_call_that_fails_is_a_failed_turn_not_an_invalid_one() -> None:
    model = ScriptedProvider("turn")
    model.enqueue(error=RunError("server down"))
    failure = attempt(Turn.of(model, Pick), [{"role": "user", "content": "x"}], SETTINGS)
    assert isinstance(failure, TurnFailure)
    assert not failure.invalid
    assert "server down" in failure.message


def test_take_raises_what_attempt_returns_as_a_failure() -> None:
    model = ScriptedProvider("turn")
    model.enqueue(error=RunError("server down"))
    with pytest.raises(RunError):
        take(Turn.of(model, Pick), [{"role": "user", "content": "x"}], SETTINGS)


def test_a_valid_turn_reports_its_tokens() -> None:
    reply = attempt(Turn.of(_model('{"n": 1}'), Pick), [{"role": "user", "content": "x"}], SETTINGS)
    assert isinstance(reply, TurnReply)
    assert (reply.input_tokens, reply.output_tokens) == (10, 3)


# --- one call branch for both schemas of calls ----------------------------------------------------


def test_a_branch_calls_only_its_tool() -> None:
    branch = call_branch("sql", SQL, {})
    validator = jsonschema.Draft202012Validator(branch)
    assert not validator.is_valid({"tool": "sq1", "args": {"query": "SELECT 1"}})


def test_a_branch_takes_only_its_tools_arguments() -> None:
    validator = jsonschema.Draft202012Validator(
        call_branch("sql", {**SQL, "additionalProperties": False}, {})
    )
    assert not validator.is_valid({"tool": "sql", "args": {"query": "SELECT 1", "k": 9}})


def test_a_branch_requires_the_arguments_its_tool_requires() -> None:
    validator = jsonschema.Draft202012Validator(call_branch("sql", SQL, {}))
    assert not validator.is_valid({"tool": "sql"})


def test_the_executors_branch_and_the_thinkers_hold_the_same_arguments() -> None:
    from agentlake.graph.nodes.thinker_v1 import step_schema

    executor = executor_schema({"sql": SQL}, [], 1)["$defs"]["ToolCall_sql"]["properties"]["args"]
    thinker = step_schema({"sql": SQL})["properties"]["tool_calls"]["items"]["anyOf"][0]["properties"]["args"]
    assert {k: v for k, v in executor.items() if k != "description"} == thinker


def test_an_executor_branch_keeps_the_actions_own_fields() -> None:
    schema = executor_schema({"sql": SQL}, [], 1)
    reply = {"kind": "tool_call", "tool": "sql", "args": {"query": "SELECT 1"}, "reason": "count"}
    assert jsonschema.Draft202012Validator(schema).is_valid(reply)
