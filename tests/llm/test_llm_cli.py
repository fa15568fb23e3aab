"""`agentlake llm ask` and `agentlake models` against fake servers over HTTP, run as the console
script runs them (``main``: errors rendered on one line, exit codes 1 and 2)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentlake.cli.llm import read_prompt
from agentlake.cli.main import app
from agentlake.llm import ScriptedProvider
from agentlake.llm.fakeserver import serve_fake_ollama
from agentlake.llm.resilience import ManualClock, use_clock

SCHEMA = {
    "type": "object",
    "properties": {"role": {"type": "string"}, "count": {"type": "integer", "minimum": 1}},
    "required": ["role", "count"],
}


def _schema_file(tmp_path: Path, content: str | None = None) -> Path:
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(SCHEMA) if content is None else content)
    return path


def test_ask_json_reports_recovery_and_accounting(cli, ollama: ScriptedProvider, tmp_path: Path) -> None:
    ollama.enqueue('{"role": "Welder", "cou', finish_reason="length")
    ollama.enqueue('nt": 3}')
    result = cli(
        "llm",
        "ask",
        "ollama:qwen3:4b",
        "fill 3 x Welder",
        "--schema",
        str(_schema_file(tmp_path)),
        "--max-tokens",
        "64",
        "--no-think",
        "--json",
    )
    assert result.code == 0, result.output
    payload = json.loads(result.out)
    for key in (
        "text",
        "thinking",
        "finish_reason",
        "usage",
        "attempts",
        "continuations",
        "latency_ms",
        "cost_usd",
    ):
        assert key in payload
    assert json.loads(payload["text"]) == {"role": "Welder", "count": 3} == payload["json"]
    assert (payload["attempts"], payload["continuations"], payload["cost_usd"]) == (2, 1, 0.0)
    assert set(payload["usage"]) == {
        "input_tokens",
        "output_tokens",
        "thinking_tokens",
        "cached_input_tokens",
    }
    assert ollama.raw_requests[0]["think"] is False
    assert ollama.raw_requests[0]["options"]["num_predict"] == 64


def test_ask_plain_prints_the_text(cli, ollama: ScriptedProvider) -> None:
    ollama.enqueue("Three welders are available.", thinking="checked the roster")
    result = cli("llm", "ask", "ollama:qwen3:4b", "how many welders?", "--system", "Be brief.")
    assert result.code == 0
    assert result.out.strip() == "Three welders are available."
    assert ollama.raw_requests[0]["messages"][0] == {"role": "system", "content": "Be brief."}


def test_schema_mismatch_exits_1_saying_why(cli, ollama: ScriptedProvider, tmp_path: Path) -> None:
    for _ in range(3):
        ollama.enqueue('{"role": "Welder", "count": 0}')
    result = cli("llm", "ask", "ollama:qwen3:4b", "fill", "--schema", str(_schema_file(tmp_path)))
    assert result.code == 1
    assert "does not match the schema" in result.output
    assert "count" in result.output
    assert "minimum" in result.output


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not JSON"),
        ('{"type": "nonsense"}', "not a valid JSON schema"),
        ("[1]", "a JSON schema is an object"),
    ],
)
def test_schema_file_that_is_not_a_json_schema_exits_2(
    cli, ollama: ScriptedProvider, tmp_path: Path, content: str, message: str
) -> None:
    result = cli("llm", "ask", "ollama:qwen3:4b", "x", "--schema", str(_schema_file(tmp_path, content)))
    assert result.code == 2
    assert "--schema" in result.output
    assert message in result.output
    assert ollama.calls == 0


def test_bad_input_exits_2_naming_the_fix(cli, monkeypatch: pytest.MonkeyPatch) -> None:
    cases = [
        (["llm", "ask", "nope:model", "x"], "unknown provider prefix"),
        (["llm", "ask", "openai:gpt-4o-mini", "x"], "OPENAI_API_KEY"),
        (
            ["llm", "ask", "ollama:qwen3:4b", "x"],
            "OLLAMA_HOST",
        ),  # conftest points OLLAMA_HOST at a closed port
    ]
    with use_clock(ManualClock()):
        for args, fix in cases:
            result = cli(*args)
            assert result.code == 2, (args, result.output)
            assert fix in result.output
            assert len(result.output.strip().splitlines()) <= 3


def test_prompt_over_the_window_exits_2(cli, monkeypatch: pytest.MonkeyPatch) -> None:
    provider = ScriptedProvider("small", context_window=512)
    with serve_fake_ollama(provider) as url:
        monkeypatch.setenv("OLLAMA_HOST", url)
        result = cli("llm", "ask", "ollama:small", "word " * 1000)
    assert result.code == 2
    assert "context window 512" in result.output
    assert "--max-tokens" in result.output
    assert provider.calls == 0


def test_models_lists_reachability_window_and_loaded_state(cli, monkeypatch: pytest.MonkeyPatch) -> None:
    provider = ScriptedProvider("qwen3:4b", context_window=8192)
    with serve_fake_ollama(provider, models=["qwen3:4b", "gemma3:1b"]) as url:
        monkeypatch.setenv("OLLAMA_HOST", url)
        monkeypatch.setenv("AGENTLAKE_EXECUTOR_MODEL", "ollama:qwen3:4b")
        monkeypatch.setenv("AGENTLAKE_REVIEWER_MODEL", "ollama:llama3.2:3b")
        provider.enqueue("warm up")
        assert cli("llm", "ask", "ollama:qwen3:4b", "hi").code == 0
        result = cli("models", "--format", "json")
    assert result.code == 0, result.output
    rows = {row["model"]: row for row in json.loads(result.out)}
    executor, reviewer, offered = (
        rows["ollama:qwen3:4b"],
        rows["ollama:llama3.2:3b"],
        rows["ollama:gemma3:1b"],
    )
    assert executor["roles"] == "executor"
    assert executor["reachable"] is True
    assert executor["loaded"] is True
    assert executor["window"] == 8192
    assert executor["source"] == "server"  # the server's number, not the file's 40960
    assert reviewer["reachable"] is False
    assert "ollama pull llama3.2:3b" in reviewer["detail"]
    assert reviewer["window"] == 131072
    assert reviewer["source"] == "registry"
    assert offered["roles"] == "on server"
    assert offered["loaded"] is False


def test_models_says_when_the_server_is_down(cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTLAKE_EXECUTOR_MODEL", "ollama:qwen3:4b")
    result = cli("models", "--format", "json")
    [row] = json.loads(result.out)
    assert result.code == 0
    assert row["reachable"] is False
    assert "OLLAMA_HOST" in row["detail"]


# --- the prompt from stdin, as `llm` reads it ----------------------------------------------------


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_no_prompt_reads_it_from_stdin(ollama: ScriptedProvider) -> None:
    ollama.enqueue("ok")
    result = CliRunner().invoke(app, ["llm", "ask", "ollama:qwen3:4b"], input="how many welders?\n")
    assert result.exit_code == 0, result.output
    assert ollama.raw_requests[0]["messages"][-1]["content"] == "how many welders?\n"


def test_a_dash_reads_the_prompt_from_stdin(ollama: ScriptedProvider) -> None:
    ollama.enqueue("ok")
    CliRunner().invoke(app, ["llm", "ask", "ollama:qwen3:4b", "-"], input="count the welders")
    assert ollama.raw_requests[0]["messages"][-1]["content"] == "count the welders"


def test_piped_stdin_is_appended_to_a_given_prompt(ollama: ScriptedProvider) -> None:
    ollama.enqueue("ok")
    CliRunner().invoke(app, ["llm", "ask", "ollama:qwen3:4b", "Summarise:"], input="row 1\nrow 2\n")
    assert ollama.raw_requests[0]["messages"][-1]["content"] == "Summarise:\n\nrow 1\nrow 2\n"


def test_a_terminal_is_not_read_when_a_prompt_is_given() -> None:
    assert read_prompt("hello", _Terminal("typed later")) == "hello"


def test_a_process_without_stdin_sends_the_prompt_alone() -> None:
    assert read_prompt("hello", None) == "hello"


def test_no_prompt_and_nothing_piped_exits_2(cli) -> None:
    result = cli("llm", "ask", "ollama:qwen3:4b")
    assert result.code == 2
    assert "no prompt" in result.err


def test_format_csv_prints_one_row_of_the_reply(cli, ollama: ScriptedProvider) -> None:
    ollama.enqueue("Three welders.")
    result = cli("llm", "ask", "ollama:qwen3:4b", "how many?", "--format", "csv")
    header, row = list(csv.reader(result.out.splitlines()))
    assert dict(zip(header, row, strict=True))["text"] == "Three welders."


def test_json_alias_and_format_csv_disagree(cli) -> None:
    result = cli("llm", "ask", "ollama:qwen3:4b", "x", "--json", "--format", "csv")
    assert result.code == 2
    assert "--json and --format csv disagree" in result.err


# --- -v and log_level: what a retry looks like ---------------------------------------------------


@pytest.fixture
def root_level() -> Iterator[None]:
    """The root logger's level as it was before the test (-v sets it for the process)."""
    import logging

    level = logging.getLogger().level
    yield
    logging.getLogger().setLevel(level)


def test_verbose_shows_each_retry(cli, ollama: ScriptedProvider, root_level: None) -> None:
    ollama.enqueue(error=503)
    ollama.enqueue("ok")
    with use_clock(ManualClock()):
        result = cli("-v", "llm", "ask", "ollama:qwen3:4b", "hi")
    assert "retry 1 of 3" in result.err


def test_without_verbose_a_retry_is_quiet(cli, ollama: ScriptedProvider, root_level: None) -> None:
    ollama.enqueue(error=503)
    ollama.enqueue("ok")
    with use_clock(ManualClock()):
        result = cli("llm", "ask", "ollama:qwen3:4b", "hi")
    assert "retry" not in result.err


def test_the_log_level_setting_shows_retries_too(
    cli, ollama: ScriptedProvider, monkeypatch: pytest.MonkeyPatch, root_level: None
) -> None:
    monkeypatch.setenv("AGENTLAKE_LOG_LEVEL", "info")
    ollama.enqueue(error=503)
    ollama.enqueue("ok")
    with use_clock(ManualClock()):
        result = cli("llm", "ask", "ollama:qwen3:4b", "hi")
    assert "retry 1 of 3" in result.err
