"""``agentlake llm ask``: one prompt to one model, with the recovery and accounting shown.

The prompt is read as ``llm`` reads it: from stdin when none is given or when it is ``-``
(``cat notes.txt | agentlake llm ask MODEL``), and stdin that is not a terminal is appended to a
given prompt (``git diff | agentlake llm ask MODEL "review this"``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer

from agentlake.cli.output import JSON_ALIAS, Format, format_option

llm_app = typer.Typer(
    help="Talk to a model through agentlake's LLM layer (budgets, recovery, accounting).",
    no_args_is_help=True,
)


@llm_app.command("ask")
def ask(
    model: str = typer.Argument(
        ..., help="PROVIDER:MODEL, e.g. ollama:qwen3:4b, openai:gpt-4o-mini, llamacpp:PATH."
    ),
    prompt: str | None = typer.Argument(
        None,
        help="The prompt to send; '-' or none: read it from stdin. Piped stdin is appended to a given prompt.",
    ),
    schema: Path | None = typer.Option(
        None, "--schema", help="JSON schema file: the reply must be JSON matching it (else exit 1)."
    ),
    max_tokens: int = typer.Option(
        1024,
        "--max-tokens",
        min=1,
        help="Output token budget (doubled on retry up to AGENTLAKE_LLM_MAX_TOKENS_CAP).",
    ),
    think: bool | None = typer.Option(
        None,
        "--think/--no-think",
        help="Turn a thinking model's reasoning on or off (default: the server's).",
    ),
    system: str | None = typer.Option(None, "--system", help="A system message sent before the prompt."),
    timeout: float | None = typer.Option(
        None, "--timeout", min=0.001, help="Seconds for one model call (default AGENTLAKE_LLM_TIMEOUT_S)."
    ),
    fmt: Format = format_option(
        "Output: table (the reply, then its accounting on stderr), json (one object: text, thinking, "
        "finish_reason, usage, attempts, continuations, latency_ms, cost_usd; json with --schema) "
        "or csv (one row)."
    ),
    as_json: bool = JSON_ALIAS,
) -> None:
    """Send PROMPT to MODEL and print the reply (exit 2: bad input; exit 1: the model failed or did not match --schema)."""
    from agentlake.cli.output import chosen_format, render_record
    from agentlake.llm.ask import ask as run_ask
    from agentlake.llm.ask import load_schema

    fmt = chosen_format(fmt, as_json)  # bad input fails before any work
    result = run_ask(
        model,
        read_prompt(prompt, sys.stdin),
        schema=load_schema(schema) if schema else None,
        max_tokens=max_tokens,
        think=think,
        system=system,
        timeout=timeout,
    )
    payload = result.model_dump(exclude={"json_value"})
    if schema is not None:
        payload["json"] = result.json_value
    render_record(payload, fmt, lambda: _print_reply(result))


def read_prompt(prompt: str | None, stdin: Any) -> str:
    """The prompt to send: ``prompt``, then what was piped on ``stdin`` (not a terminal), on a
    line of its own; stdin alone for no prompt or ``-`` (a process without stdin has none).
    ``UserError`` when both are empty."""
    from agentlake.errors import UserError

    piped = ""
    if stdin is not None and (prompt in (None, "-") or not stdin.isatty()):
        try:
            piped = stdin.read()
        except (OSError, ValueError):  # a closed or pseudo stream (a test's capture): nothing piped
            piped = ""
    given = "" if prompt in (None, "-") else prompt
    text = f"{given}\n\n{piped}" if given and piped.strip() else given or piped
    if not text.strip():
        raise UserError('no prompt: give one (agentlake llm ask MODEL "...") or pipe it on stdin')
    return text


def _print_reply(result: Any) -> None:
    from agentlake.cli.output import err_console

    typer.echo(result.text)
    cost = "unknown" if result.cost_usd is None else f"${result.cost_usd:.6f}"
    usage = result.usage
    err_console.print(
        f"[dim]{result.finish_reason} · tokens in {usage.input_tokens} out {usage.output_tokens} "
        f"(thinking {usage.thinking_tokens}) · attempts {result.attempts} · continuations {result.continuations} · "
        f"{result.latency_ms:.0f} ms · cost {cost}[/]",
        highlight=False,
    )


def register(app: typer.Typer) -> None:
    app.add_typer(llm_app, name="llm")
