"""generate_continuable over a fake Ollama server: every recovery path and every give-up path."""

from __future__ import annotations

import json

import pytest

from agentlake.errors import RunError
from agentlake.llm import CallRecord, ScriptedProvider, generate_continuable
from agentlake.llm.generate import glue

SCHEMA = {"type": "object", "properties": {"sql": {"type": "string"}}, "required": ["sql"]}


def test_truncated_json_is_continued_until_it_parses(
    ollama: ScriptedProvider, records: list[CallRecord]
) -> None:
    ollama.enqueue('```json\n{"sql": "SELECT * FROM workers WHERE city = ', finish_reason="length")
    ollama.enqueue("'Cleveland' AND role = ", finish_reason="length")
    ollama.enqueue("'Welder'\"}\n```")
    result = generate_continuable("ollama:qwen3:4b", "write the query", schema=SCHEMA)
    assert json.loads(result.text.split("```json\n")[1].split("\n```")[0]) == {
        "sql": "SELECT * FROM workers WHERE city = 'Cleveland' AND role = 'Welder'"
    }
    assert result.complete
    assert not result.repaired
    assert (result.attempts, result.continuations) == (3, 2)
    assert [c.kind for c in result.calls] == ["initial", "continuation", "continuation"]
    # the partial goes back as a scratchpad, and the original prompt is kept
    continuation_prompt = ollama.raw_requests[1]["messages"][-1]["content"]
    assert "SELECT * FROM workers WHERE city = " in continuation_prompt
    assert "scratchpad" in continuation_prompt
    assert ollama.raw_requests[1]["messages"][0]["content"] == "write the query"
    assert records[-1].continuations == 2
    assert records[-1].attempts == 3


def test_empty_content_with_thinking_retries_with_a_doubled_budget(ollama: ScriptedProvider) -> None:
    ollama.enqueue("", thinking="Let me think step by step about " * 20, finish_reason="length")
    ollama.enqueue('{"sql": "SELECT 1"}', thinking="short")
    result = generate_continuable("ollama:qwen3:4b", "q", schema=SCHEMA, max_tokens=300, think=True)
    assert result.text == '{"sql": "SELECT 1"}'
    assert result.budget_retries == 1
    assert [r["options"]["num_predict"] for r in ollama.raw_requests] == [300, 600]
    assert all(r["think"] is True for r in ollama.raw_requests)


def test_length_with_nothing_retries_with_a_doubled_budget(ollama: ScriptedProvider) -> None:
    ollama.enqueue("", finish_reason="length")
    ollama.enqueue("", finish_reason="length")
    ollama.enqueue("an answer at last")
    result = generate_continuable("ollama:qwen3:4b", "q", max_tokens=100)
    assert result.text == "an answer at last"
    assert [r["options"]["num_predict"] for r in ollama.raw_requests] == [100, 200, 400]


def test_prose_only_cut_at_length_counts_as_nothing_usable_when_json_is_expected(
    ollama: ScriptedProvider,
) -> None:
    ollama.enqueue("Sure, let me explain what I am going to do before", finish_reason="length")
    ollama.enqueue('{"sql": "SELECT 2"}')
    assert (
        generate_continuable("ollama:qwen3:4b", "q", schema=SCHEMA, max_tokens=64).text
        == '{"sql": "SELECT 2"}'
    )


def test_gives_up_loudly_at_the_token_cap(ollama: ScriptedProvider, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTLAKE_LLM_MAX_TOKENS_CAP", "400")
    for _ in range(3):
        ollama.enqueue("", thinking="still thinking", finish_reason="length")
    with pytest.raises(
        RunError, match=r"no visible text after 3 attempts.*AGENTLAKE_LLM_MAX_TOKENS_CAP=400.*think=False"
    ) as caught:
        generate_continuable("ollama:qwen3:4b", "q", max_tokens=100)
    assert [r["options"]["num_predict"] for r in ollama.raw_requests] == [100, 200, 400]
    assert caught.value.details["raw_text"] == ""


def test_truncation_past_the_continuation_limit_is_repaired_but_flagged(
    ollama: ScriptedProvider, monkeypatch: pytest.MonkeyPatch, records: list[CallRecord]
) -> None:
    monkeypatch.setenv("AGENTLAKE_LLM_MAX_CONTINUATIONS", "1")
    ollama.enqueue('{"sql": "SELECT * FROM t WHERE a = 1', finish_reason="length")
    ollama.enqueue(" AND b = 2", finish_reason="length")
    result = generate_continuable("ollama:qwen3:4b", "q", schema=SCHEMA)
    assert result.repaired
    assert not result.complete
    assert result.finish_reason == "length"
    assert json.loads(result.text) == {"sql": "SELECT * FROM t WHERE a = 1 AND b = 2"}
    assert records[-1].repaired


def test_unrepairable_truncation_gives_up_with_the_raw_text(
    ollama: ScriptedProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTLAKE_LLM_MAX_CONTINUATIONS", "0")
    ollama.enqueue("[", finish_reason="length")
    with pytest.raises(RunError, match="still truncated JSON after 0 continuations") as caught:
        generate_continuable("ollama:qwen3:4b", "q", expect_json=True)
    assert caught.value.details["raw_text"] == "["


def test_text_cut_at_length_is_continued_and_flagged_if_it_stays_cut(
    ollama: ScriptedProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    ollama.enqueue("The three welders are Ana,", finish_reason="length")
    ollama.enqueue("are Ana, Bo and Cy.")
    result = generate_continuable("ollama:qwen3:4b", "who?")
    assert result.text == "The three welders are Ana, Bo and Cy."
    assert result.complete  # echoed overlap dropped

    monkeypatch.setenv("AGENTLAKE_LLM_MAX_CONTINUATIONS", "1")
    ollama.enqueue("one", finish_reason="length")
    ollama.enqueue(" two", finish_reason="length")
    cut = generate_continuable("ollama:qwen3:4b", "count")
    assert cut.text == "one two"
    assert not cut.complete
    assert cut.finish_reason == "length"


def test_a_model_that_restarts_its_json_is_taken_whole(ollama: ScriptedProvider) -> None:
    ollama.enqueue('{"sql": "SELECT', finish_reason="length")
    ollama.enqueue('{"sql": "SELECT 3"}')
    assert generate_continuable("ollama:qwen3:4b", "q", schema=SCHEMA).text == '{"sql": "SELECT 3"}'


def test_glue_drops_only_real_overlaps() -> None:
    assert glue('{"a": "hello wor', 'hello world"}') == '{"a": "hello world"}'
    assert glue('{"a": "x', '"}') == '{"a": "x"}'  # a one-character "overlap" is not dropped
    assert glue('{"a": [1,', "```json\n 2]}\n```") == '{"a": [1, 2]}\n'


def test_a_continuation_holding_a_nested_object_is_glued_not_taken_for_a_restart(
    ollama: ScriptedProvider,
) -> None:
    ollama.enqueue('{"order": 1, "site": "Riverfront"', finish_reason="length")
    ollama.enqueue(', "shift": {"start": "08:00"}}')
    result = generate_continuable("ollama:qwen3:4b", "q", expect_json=True)
    assert json.loads(result.text) == {"order": 1, "site": "Riverfront", "shift": {"start": "08:00"}}
