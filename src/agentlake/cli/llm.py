"""``agentlake llm ask``: one prompt to one model, with the recovery and accounting shown."""

from __future__ import annotations

from pathlib import Path

import typer

llm_app = typer.Typer(
    help="Talk to a model through agentlake's LLM layer (budgets, recovery, accounting).",
    no_args_is_help=True,
)


@llm_app.command("ask")
def ask(
    model: str = typer.Argument(
        ..., help="PROVIDER:MODEL, e.g. ollama:qwen3:4b, openai:gpt-4o-mini, llamacpp:PATH."
    ),
    prompt: str = typer.Argument(..., help="The prompt to send."),
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
    as_json: bool = typer.Option(
        False,
        "--json",
        help="Print one JSON object: text, thinking, finish_reason, usage, attempts, continuations, latency_ms, cost_usd.",
    ),
) -> None:
    """Send PROMPT to MODEL and print the reply (exit 2: bad input; exit 1: the model failed or did not match --schema)."""
    from agentlake.cli.output import err_console, print_json
    from agentlake.llm.ask import ask as run_ask
    from agentlake.llm.ask import load_schema

    result = run_ask(
        model,
        prompt,
        schema=load_schema(schema) if schema else None,
        max_tokens=max_tokens,
        think=think,
        system=system,
        timeout=timeout,
    )
    if as_json:
        payload = result.model_dump(exclude={"json_value"})
        if schema is not None:
            payload["json"] = result.json_value
        print_json(payload)
        return
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
