"""generate(): the provider registry, options, budgets and accounting, with in-process fakes."""

from __future__ import annotations

import pytest

from agentlake.errors import RunError, UserError
from agentlake.llm import (
    CallRecord,
    Completion,
    ContextOverflowError,
    FunctionProvider,
    GenerateOptions,
    Message,
    ScriptedProvider,
    Usage,
    add_recorder,
    assert_context_budget,
    call_tags,
    generate,
    get_provider,
    register_provider,
    register_scripted,
)


def test_scripted_provider_replies_in_order_and_records_history() -> None:
    executor = ScriptedProvider("executor")
    executor.enqueue_many("first", "second")
    register_scripted("executor", executor)
    assert generate("scripted:executor", "hello", max_tokens=50).text == "first"
    assert (
        generate("scripted:executor", [{"role": "system", "content": "be brief"}, ("user", "again")]).text
        == "second"
    )
    messages, options = executor.history[0]
    assert messages == [Message(role="user", content="hello")]
    assert options.max_tokens == 50
    assert [m.role for m in executor.last_messages] == ["system", "user"]
    assert executor.pending == 0
    assert executor.calls == 2


def test_empty_queue_fails_loudly_naming_the_call() -> None:
    reviewer = ScriptedProvider("reviewer")
    with pytest.raises(RunError, match=r"no reply queued for call #1"):
        generate(reviewer, "judge this")


def test_function_provider_decides_each_reply() -> None:
    def decide(messages: list[Message], options: GenerateOptions) -> str | Completion:
        if "think" in messages[-1].content:
            return Completion(
                text="42", thinking="6 x 7", usage=Usage(input_tokens=10, output_tokens=7, thinking_tokens=3)
            )
        return messages[-1].content.upper()

    provider = FunctionProvider(decide, "shouter")
    register_scripted("shouter", provider)
    assert generate("function:shouter", "hi").text == "HI"
    reply = generate("function:shouter", "think hard")
    assert (reply.text, reply.thinking, reply.usage.thinking_tokens) == ("42", "6 x 7", 3)
    assert reply.provider == "function"
    assert reply.model == "shouter"


def test_unknown_prefix_and_unregistered_name_say_what_to_do() -> None:
    with pytest.raises(UserError, match=r"unknown provider prefix 'nope'.*ollama:"):
        get_provider("nope:model")
    with pytest.raises(UserError, match=r"no provider prefix"):
        get_provider("qwen3")
    with pytest.raises(UserError, match=r"register_scripted\('ghost'"):
        get_provider("scripted:ghost")


def test_third_party_provider_registers_through_the_same_door() -> None:
    class Echo:
        name = "echo"
        capabilities = ScriptedProvider().capabilities

        def __init__(self, model: str, settings: object) -> None:
            self.model = model

        def complete(self, messages: list[Message], options: GenerateOptions) -> Completion:
            return Completion(text=f"{self.model}: {messages[-1].content}")

    register_provider("echo", Echo)  # type: ignore[arg-type]
    assert generate("echo:parrot", "hi").text == "parrot: hi"


def test_bad_options_are_user_errors_naming_the_option() -> None:
    provider = ScriptedProvider()
    with pytest.raises(UserError, match="max_tokens"):
        generate(provider, "hi", max_tokens=0)
    with pytest.raises(UserError, match="colour"):
        generate(provider, "hi", colour="red")
    with pytest.raises(UserError, match="messages"):
        generate(provider, [])
    assert provider.calls == 0  # bad input never reaches the model


def test_one_record_per_call_with_otel_names(records: list[CallRecord]) -> None:
    provider = ScriptedProvider("acct")
    provider.enqueue(
        "ok", thinking="hmm", usage=Usage(input_tokens=120, output_tokens=30, thinking_tokens=10)
    )
    with call_tags(agent_id="executor", run_id="r1"):
        generate(provider, "count tokens")
    [record] = records
    assert (
        record.provider,
        record.model,
        record.input_tokens,
        record.output_tokens,
        record.thinking_tokens,
    ) == (
        "scripted",
        "acct",
        120,
        30,
        10,
    )
    assert record.success
    assert record.attempts == 1
    assert record.finish_reason == "stop"
    assert record.cost_usd == 0.0
    assert record.tags == {"agent_id": "executor", "run_id": "r1"}
    attributes = record.otel_attributes()
    assert attributes["gen_ai.request.model"] == "acct"
    assert attributes["gen_ai.usage.input_tokens"] == 120
    assert attributes["gen_ai.usage.output_tokens"] == 30
    assert attributes["gen_ai.usage.reasoning.output_tokens"] == 10
    assert attributes["gen_ai.response.finish_reasons"] == ["stop"]


def test_failed_call_is_recorded_and_a_broken_recorder_breaks_nothing(records: list[CallRecord]) -> None:
    def broken(record: CallRecord) -> None:
        raise ValueError("recorder bug")

    unsubscribe = add_recorder(broken)
    try:
        provider = ScriptedProvider("flaky")
        provider.enqueue("fine")
        assert generate(provider, "x").text == "fine"
        provider.enqueue(error=400)
        with pytest.raises(RunError, match="HTTP 400"):
            generate(provider, "x")
    finally:
        unsubscribe()
    assert [r.success for r in records] == [True, False]
    assert records[1].error
    assert "400" in records[1].error
    assert records[1].error_type == "ProviderHTTPError"


def test_prompt_over_the_window_fails_with_the_numbers_before_any_call(records: list[CallRecord]) -> None:
    provider = ScriptedProvider("tiny", context_window=256)
    with pytest.raises(ContextOverflowError) as caught:
        generate(provider, "word " * 400, max_tokens=64)
    message = caught.value.message
    for fragment in (
        "estimated",
        "max_tokens",
        "safety margin",
        "context window 256",
        "over by",
        "--max-tokens",
    ):
        assert fragment in message
    assert caught.value.details["overflow"] > 0
    assert caught.value.exit_code == 2
    assert provider.calls == 0
    assert records
    assert not records[0].success


def test_budget_estimate_is_calibrated_by_reported_usage() -> None:
    provider = ScriptedProvider("calibrated", context_window=100_000)
    prompt = "x" * 3200  # ~1000 tokens by the byte heuristic
    before = assert_context_budget(provider, prompt, 10).input_tokens
    for _ in range(12):
        provider.enqueue("ok", usage=Usage(input_tokens=500, output_tokens=1))
        generate(provider, prompt)
    after = assert_context_budget(provider, prompt, 10)
    assert after.input_tokens < before * 0.7
    assert abs(after.input_tokens - 500) < 60
    assert after.calibration < 1


def test_unknown_model_window_is_called_a_default_where_it_matters(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    with pytest.raises(ContextOverflowError, match="conservative default.*AGENTLAKE_LLM_MODELS_FILE"):
        assert_context_budget("openai:some-local-model", "word " * 20000, 100)
