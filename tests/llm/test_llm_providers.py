"""The Ollama and OpenAI-compatible providers on the wire, the model registry, and configuration errors."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from agentlake.errors import UserError
from agentlake.llm import Completion, ProviderError, ScriptedProvider, generate, get_provider
from agentlake.llm.fakeserver import serve_fake_ollama, serve_fake_openai
from agentlake.llm.models import cost_usd, lookup_model
from agentlake.llm.provider import split_think_tags
from agentlake.settings import load_settings


def test_ollama_always_sends_num_ctx_num_predict_think_and_format(ollama: ScriptedProvider) -> None:
    ollama.enqueue('{"ok": true}', thinking="checked")
    reply = generate(
        "ollama:qwen3:4b", "hi", max_tokens=77, think=True, schema={"type": "object"}, temperature=0.2
    )
    body = ollama.raw_requests[0]
    assert body["options"]["num_predict"] == 77
    assert body["options"]["num_ctx"] >= 77
    assert body["options"]["temperature"] == 0.2
    assert body["think"] is True
    assert body["format"] == {"type": "object"}
    assert body["stream"] is False
    assert (reply.text, reply.thinking, reply.finish_reason) == ('{"ok": true}', "checked", "stop")
    assert reply.usage.input_tokens > 0
    assert reply.usage.thinking_tokens > 0


def test_ollama_leaves_think_out_for_a_model_the_server_says_cannot_think(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Ollama refuses `think` for a model without the capability; a call site states it anyway.
    provider = ScriptedProvider("llama3.2:3b", supports_thinking=False)
    with serve_fake_ollama(provider) as url:
        monkeypatch.setenv("OLLAMA_HOST", url)
        provider.enqueue("ok")
        generate("ollama:llama3.2:3b", "hi", think=False)
    assert "think" not in provider.raw_requests[0]


def test_ollama_sends_think_false_to_a_model_that_can_think(ollama: ScriptedProvider) -> None:
    ollama.enqueue("ok")
    generate("ollama:qwen3:4b", "hi", think=False)
    assert ollama.raw_requests[0]["think"] is False


def test_ollama_context_from_api_show_wins_over_the_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    assert lookup_model("ollama", "qwen3:4b").context_window == 40960  # what the file says
    provider = ScriptedProvider("qwen3:4b", context_window=4096, supports_thinking=False)
    with serve_fake_ollama(provider) as url:
        monkeypatch.setenv("OLLAMA_HOST", url)
        ollama = get_provider("ollama:qwen3:4b")
        assert ollama.capabilities.context_window == 4096
        assert ollama.capabilities.supports_thinking is False
        provider.enqueue("fits")
        generate(ollama, "short", max_tokens=100)
        assert provider.raw_requests[0]["options"]["num_ctx"] == 4096  # never more than the model has


def test_num_ctx_grows_with_the_prompt_but_stays_stable_for_small_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    provider = ScriptedProvider("big", context_window=131072)
    with serve_fake_ollama(provider) as url:
        monkeypatch.setenv("OLLAMA_HOST", url)
        provider.enqueue_many("a", "b", "c")
        generate("ollama:big", "short")
        generate("ollama:big", "also short")
        generate("ollama:big", "word " * 15000)  # ~23k tokens estimated, ~31k with output and margin
    sizes = [r["options"]["num_ctx"] for r in provider.raw_requests]
    assert sizes[0] == sizes[1] == 8192
    assert sizes[2] == 32768


def test_missing_ollama_model_says_pull_it(monkeypatch: pytest.MonkeyPatch) -> None:
    provider = ScriptedProvider("qwen3:4b")
    with serve_fake_ollama(provider, models=["qwen3:4b"]) as url:
        monkeypatch.setenv("OLLAMA_HOST", url)
        with pytest.raises(UserError, match=r"ollama pull llama3.2:3b"):
            generate("ollama:llama3.2:3b", "hi")


def test_openai_wire_reads_reasoning_and_usage(openai: ScriptedProvider) -> None:
    openai.enqueue("Paris", thinking="capital of France", finish_reason="stop")
    reply = generate("openai:gpt-4o-mini", "capital?", max_tokens=20, stop=["\n"])
    body = openai.raw_requests[0]
    assert body["max_tokens"] == 20
    assert body["stop"] == ["\n"]
    assert body["model"] == "gpt-4o-mini"
    assert (reply.text, reply.thinking) == ("Paris", "capital of France")
    assert reply.usage.thinking_tokens > 0
    assert reply.usage.output_tokens >= reply.usage.thinking_tokens


def test_openai_sends_think_to_compatible_servers(openai: ScriptedProvider) -> None:
    openai.enqueue("quick")
    generate("openai:gpt-4o-mini", "hi", think=False)
    assert openai.raw_requests[0]["chat_template_kwargs"] == {"enable_thinking": False}


def test_openai_without_a_key_or_with_a_wrong_one(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(UserError, match=r"set OPENAI_API_KEY.*OPENAI_BASE_URL"):
        get_provider("openai:gpt-4o-mini")
    provider = ScriptedProvider("gpt-4o-mini")
    with serve_fake_openai(provider, api_key="sk-right-key-000000") as url:
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong-key-000000")
        with pytest.raises(UserError, match=r"refused the key.*set OPENAI_API_KEY"):
            generate("openai:gpt-4o-mini", "hi")
    assert provider.calls == 0


def test_think_tags_inline_in_content_are_split() -> None:
    assert split_think_tags("<think>plan</think>\nanswer") == ("answer", "plan")
    assert split_think_tags("<think>ran out of budget") == ("", "ran out of budget")
    assert split_think_tags("plain") == ("plain", "")


def test_models_file_extends_and_overrides_the_registry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    extra = tmp_path / "models.toml"
    extra.write_text(
        '[models."openai:my-vllm-model"]\ncontext_window = 32768\nschema = true\n'
        "input_usd_per_mtok = 1.0\noutput_usd_per_mtok = 2.0\n"
        '[models."ollama:qwen3:4b"]\ncontext_window = 16384\n'
    )
    monkeypatch.setenv("AGENTLAKE_LLM_MODELS_FILE", str(extra))
    settings = load_settings()
    mine = lookup_model("openai", "my-vllm-model", settings)
    assert (mine.context_window, mine.supports_schema, mine.known, mine.source) == (
        32768,
        True,
        True,
        "config",
    )
    assert cost_usd(mine, 1_000_000, 500_000) == pytest.approx(2.0)
    qwen = lookup_model("ollama", "qwen3:4b", settings)
    assert qwen.context_window == 16384
    assert qwen.supports_thinking  # other fields keep the built-in values
    unknown = lookup_model("openai", "who-knows", settings)
    assert not unknown.known
    assert unknown.context_window == 4096
    assert unknown.input_usd_per_mtok is None
    assert cost_usd(unknown, 10, 10) is None  # unknown price is unknown, not free


def test_malformed_models_file_names_the_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = tmp_path / "models.toml"
    bad.write_text('[models."openai:x"]\ncontext_windw = 3\n')
    monkeypatch.setenv("AGENTLAKE_LLM_MODELS_FILE", str(bad))
    with pytest.raises(UserError, match="unknown fields"):
        lookup_model("openai", "x", load_settings())


def test_cost_is_accounted_from_registry_prices(openai: ScriptedProvider) -> None:
    from agentlake.llm import Usage

    openai.enqueue("x", usage=Usage(input_tokens=1_000_000, output_tokens=1_000_000))
    records = []
    from agentlake.llm import add_recorder

    unsubscribe = add_recorder(records.append)
    try:
        generate("openai:gpt-4o-mini", "hi")
    finally:
        unsubscribe()
    assert records[0].cost_usd == pytest.approx(0.15 + 0.60)


def test_function_provider_can_fail_like_a_server(
    ollama: ScriptedProvider, monkeypatch: pytest.MonkeyPatch, clock
) -> None:
    from agentlake.llm import FunctionProvider, ProviderHTTPError

    seen = []

    def flaky(messages, options) -> str | Completion:
        seen.append(1)
        if len(seen) == 1:
            raise ProviderHTTPError("overloaded", status=503, retry_after=1)
        return "served"

    with serve_fake_ollama(FunctionProvider(flaky, "fn-model")) as url:
        monkeypatch.setenv("OLLAMA_HOST", url)
        assert generate("ollama:fn-model", "hi").text == "served"
    assert clock.sleeps == [1.0]


def test_wire_adapters_read_what_real_servers_send() -> None:
    from agentlake.llm import ollama_wire, openai_wire

    text, thinking, finish, usage = openai_wire.chat_response(
        {
            "choices": [
                {
                    "message": {"role": "assistant", "content": None, "reasoning": "hidden"},
                    "finish_reason": "length",
                }
            ],
            "usage": {"prompt_tokens": 12, "completion_tokens": 50},
        }
    )
    assert (text, thinking, finish) == ("", "hidden", "length")
    assert usage.thinking_tokens == 50
    text, thinking, finish, usage = ollama_wire.chat_response(
        {
            "message": {"role": "assistant", "content": "", "thinking": "deep"},
            "done": True,
            "done_reason": "length",
            "prompt_eval_count": 30,
            "eval_count": 64,
        }
    )
    assert (text, thinking, finish, usage.input_tokens, usage.output_tokens) == ("", "deep", "length", 30, 64)
    with pytest.raises(ValueError):
        openai_wire.chat_response({"error": "nope"})


def test_models_lists_openai_compatible_servers(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentlake.llm.inventory import model_statuses

    provider = ScriptedProvider("my-vllm-model")
    with serve_fake_openai(provider, api_key="sk-key-0123456789", models=["my-vllm-model"]) as url:
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-key-0123456789")
        monkeypatch.setenv("AGENTLAKE_EXECUTOR_MODEL", "openai:my-vllm-model")
        monkeypatch.setenv("AGENTLAKE_OVERSEER_MODEL", "openai:gpt-4o")
        rows = {row.model: row for row in model_statuses(load_settings())}
        monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong-0123456789")
        refused = {row.model: row for row in model_statuses(load_settings())}
    assert rows["openai:my-vllm-model"].reachable is True
    assert rows["openai:my-vllm-model"].roles == ["executor"]
    assert rows["openai:gpt-4o"].reachable is False
    assert "does not list it" in rows["openai:gpt-4o"].detail
    assert rows["openai:gpt-4o"].context_window == 128000
    assert rows["openai:my-vllm-model"].context_window == 4096
    assert refused["openai:my-vllm-model"].reachable is False
    assert "OPENAI_API_KEY" in refused["openai:my-vllm-model"].detail


@pytest.fixture
def wrong_shape_server() -> Iterator[str]:
    """A server on 127.0.0.1 that answers every POST with 200 and JSON that is no chat reply."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:  # http.server's naming
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = json.dumps({"status": "ok"}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_reply_of_the_wrong_shape_names_the_server_and_is_not_retried(
    wrong_shape_server: str, monkeypatch: pytest.MonkeyPatch, records
) -> None:
    monkeypatch.setenv("OLLAMA_HOST", wrong_shape_server)
    monkeypatch.setenv("OPENAI_BASE_URL", wrong_shape_server + "/v1")
    with pytest.raises(
        ProviderError, match=r"^ollama:m1 at http://127\.0\.0\.1:\d+ sent an unexpected reply: no 'message'"
    ):
        generate("ollama:m1", "hi")
    with pytest.raises(
        ProviderError,
        match=r"^openai:m2 at http://127\.0\.0\.1:\d+/v1 sent an unexpected reply: no 'choices'",
    ):
        generate("openai:m2", "hi")
    assert [r.attempts for r in records] == [1, 1]


def test_completions_name_their_provider_and_model_and_time_the_call(
    ollama: ScriptedProvider, openai: ScriptedProvider
) -> None:
    ollama.enqueue("a", delay_s=0.05)
    openai.enqueue("b", delay_s=0.05)
    for model, text in (("ollama:qwen3:4b", "a"), ("openai:gpt-4o-mini", "b")):
        reply = generate(model, "hi")
        assert (reply.text, f"{reply.provider}:{reply.model}") == (text, model)
        assert 50 <= reply.latency_ms < 5000


def test_ollama_host_set_to_the_cloud_gets_the_clouds_key(monkeypatch: pytest.MonkeyPatch) -> None:
    # One host per process, as before ollama-cloud: existed: OLLAMA_HOST is the cloud host.
    provider = ScriptedProvider("gpt-oss:120b", context_window=131072)
    with serve_fake_ollama(provider, api_key="cloud-key-0123456789") as url:
        monkeypatch.setenv("OLLAMA_HOST", url)
        monkeypatch.setenv("AGENTLAKE_OLLAMA_CLOUD_HOST", url)
        monkeypatch.setenv("OLLAMA_CLOUD_KEY", "cloud-key-0123456789")  # the seed's name for it
        provider.enqueue("hello from the cloud")
        assert generate("ollama:gpt-oss:120b", "hi").text == "hello from the cloud"


def test_ollama_api_key_is_honoured_too_and_a_refused_key_says_which_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    provider = ScriptedProvider("gpt-oss:120b", context_window=131072)
    with serve_fake_ollama(provider, api_key="right-key-0123456789") as url:
        monkeypatch.setenv("OLLAMA_HOST", url)
        monkeypatch.setenv("AGENTLAKE_OLLAMA_CLOUD_HOST", url)
        monkeypatch.setenv("OLLAMA_API_KEY", "right-key-0123456789")
        provider.enqueue("ok")
        assert generate("ollama:gpt-oss:120b", "hi").text == "ok"
        monkeypatch.setenv("OLLAMA_API_KEY", "wrong-key-0123456789")
        with pytest.raises(UserError, match=r"HTTP 401.*OLLAMA_CLOUD_KEY \(or OLLAMA_API_KEY\)"):
            generate("ollama:gpt-oss:120b", "hi")
    assert provider.calls == 1


def test_the_ollama_key_is_never_shown_in_settings_dumps(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_CLOUD_KEY", "cloud-key-0123456789")
    settings = load_settings()
    assert "cloud-key-0123456789" not in settings.model_dump_json()
    assert settings.ollama_cloud_api_key is not None
