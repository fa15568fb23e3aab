"""generate_structured / generate_json: native schema vs prompted JSON, validation retries, give-up."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import BaseModel, Field

from agentlake.llm import (
    CallRecord,
    ScriptedProvider,
    StructuredOutputError,
    generate_json,
    generate_structured,
)


class Fill(BaseModel):
    worker_ids: list[int] = Field(min_length=1)
    reason: str


def test_invalid_json_then_a_valid_retry_over_openai(
    openai: ScriptedProvider, records: list[CallRecord]
) -> None:
    openai.enqueue('{"worker_ids": [12, 15] "reason": "closest welders"}')  # invalid: a comma is missing
    openai.enqueue('Here you go:\n```json\n{"worker_ids": [12, 15], "reason": "closest welders"}\n```')
    fill = generate_structured("openai:gpt-4o-mini", "fill 2 welders", Fill)
    assert fill == Fill(worker_ids=[12, 15], reason="closest welders")
    # native structured output: the schema travels as response_format
    assert openai.raw_requests[0]["response_format"]["json_schema"]["schema"]["title"] == "Fill"
    assert openai.raw_requests[-1]["messages"][-2] == {  # its own reply, sent back to be mended
        "role": "assistant",
        "content": '{"worker_ids": [12, 15] "reason": "closest welders"}',
    }
    assert records[-1].function == "generate_structured"
    assert records[-1].attempts == 2


def test_validation_errors_go_back_to_the_model(ollama: ScriptedProvider) -> None:
    ollama.enqueue('{"worker_ids": [], "reason": "none found"}')
    ollama.enqueue('{"worker_ids": [7], "reason": "found one"}')
    fill = generate_structured("ollama:qwen3:4b", "fill 1 welder", Fill)
    assert fill.worker_ids == [7]
    assert "worker_ids" in ollama.raw_requests[1]["messages"][-1]["content"]
    assert ollama.raw_requests[1]["messages"][-2] == {
        "role": "assistant",
        "content": '{"worker_ids": [], "reason": "none found"}',
    }
    assert ollama.raw_requests[0]["format"]["title"] == "Fill"  # Ollama's native format


def test_prompted_json_where_the_model_has_no_native_schema(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from agentlake.llm.fakeserver import serve_fake_openai

    models = tmp_path / "models.toml"  # a server that refuses response_format: the models file says so
    models.write_text('[models."openai:some-local-model"]\nschema = false\n')
    monkeypatch.setenv("AGENTLAKE_LLM_MODELS_FILE", str(models))
    local = ScriptedProvider("some-local-model")
    local.enqueue(
        "{'worker_ids': [3], 'reason': 'only one',}"
    )  # Python-ish JSON, fixed by the tolerant parser
    with serve_fake_openai(local) as url:
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        fill = generate_structured(
            "openai:some-local-model",
            [{"role": "system", "content": "You staff shifts."}, {"role": "user", "content": "fill"}],
            Fill,
        )
    assert fill.worker_ids == [3]
    body = local.raw_requests[0]
    assert "response_format" not in body
    system = body["messages"][0]["content"]
    assert system.startswith("You staff shifts.")
    assert '"worker_ids"' in system


def test_gives_up_with_the_raw_text(records: list[CallRecord]) -> None:
    provider = ScriptedProvider("stubborn")
    provider.enqueue_many("not json", '{"reason": 1}', "still nothing")
    with pytest.raises(StructuredOutputError) as caught:
        generate_structured(provider, "fill", Fill, retries=2)
    error = caught.value
    assert error.raw_text == "still nothing"
    assert error.attempts == 3
    assert error.exit_code == 1
    assert "no valid Fill after 3 attempts" in error.message
    assert records[-1].success is False
    assert records[-1].attempts == 3


def test_generate_json_with_a_validator_of_your_own() -> None:
    provider = ScriptedProvider("v")
    provider.enqueue_many('{"n": 5}', '{"n": 2}')

    def even(value: dict) -> int:
        if value["n"] % 2:
            raise ValueError("n must be even")
        return value["n"]

    result = generate_json(provider, "pick", {"type": "object"}, validate=even)
    assert result.value == 2
    assert result.schema_retries == 1
    assert result.native_schema
    assert "n must be even" in provider.history[1][0][-1].content
    assert json.loads(result.text) == {"n": 2}


def test_a_model_without_native_schema_sees_the_callers_example_not_the_schema() -> None:
    model = ScriptedProvider("small", supports_schema=False)
    model.enqueue('{"worker_ids": [3], "reason": "closest"}')

    result = generate_json(
        model,
        [{"role": "user", "content": "fill"}],
        Fill.model_json_schema(),
        validate=Fill.model_validate,
        example='{"worker_ids": [12], "reason": "why"}',
    )

    assert result.value.worker_ids == [3]
    (prompt,) = [m.content for m in model.history[0][0] if m.role == "system"]
    assert '{"worker_ids": [12], "reason": "why"}' in prompt
    assert "properties" not in prompt


def test_a_model_that_keeps_failing_opens_its_structured_output_breaker() -> None:
    from agentlake.llm import CircuitOpenError
    from agentlake.settings import load_settings

    settings = load_settings(llm_breaker_failures=2)
    model = ScriptedProvider("garbage")
    for _ in range(2):
        model.enqueue_many("no json", "still none")
        with pytest.raises(StructuredOutputError):
            generate_json(
                model,
                "fill",
                Fill.model_json_schema(),
                validate=Fill.model_validate,
                retries=1,
                settings=settings,
            )

    with pytest.raises(CircuitOpenError, match=r"\(structured output\) is open after 2 consecutive failures"):
        generate_json(model, "fill", Fill.model_json_schema(), settings=settings)
    assert model.calls == 4  # the third call never reached the model
