"""``agentlake fill "3 x Welder in Cleveland, OH"`` (or in words: "need two welders near
Cleveland OH tomorrow morning"): one staffing order, with what was understood, a live view of the
turns and a final table of fills and reasons; an order that lacks a role, count or place exits 2
with the question. The work is ``agentlake.agents.fill``."""

from __future__ import annotations

from contextlib import nullcontext
from datetime import datetime
from typing import TYPE_CHECKING, Any

import typer

from agentlake.cli.output import JSON_ALIAS, Format, format_option

if TYPE_CHECKING:
    from agentlake.agents import TaskOutcome, TurnRecord
    from agentlake.serving import Announcement

_STYLE = {
    "executor": "cyan",
    "reviewer": "magenta",
    "orchestrator": "yellow",
    "rules": "blue",
    "overseer": "red",
}


def fill_command(
    order: str = typer.Argument(
        ...,
        help='The order, e.g. "3 x Welder in Cleveland, OH for Riverfront Steel at 08:00 on 2026-04-22", '
        'or in words, read by the model: "need two welders near Cleveland OH tomorrow morning".',
    ),
    client: str | None = typer.Option(
        None, "--client", help="Client id (e.g. riverfront-steel); overrides 'for ...'."
    ),
    policy: str = typer.Option(
        "rules", "--policy", help="rules (no LLM, the default) or llm (executor + reviewer)."
    ),
    executor: str | None = typer.Option(
        None,
        "--executor",
        help="Executor model for --policy llm, e.g. ollama:qwen3:4b (default AGENTLAKE_EXECUTOR_MODEL).",
    ),
    reviewer: str | None = typer.Option(
        None, "--reviewer", help="Reviewer model (default AGENTLAKE_REVIEWER_MODEL, else the executor's)."
    ),
    shift_start: datetime | None = typer.Option(
        None, "--shift-start", help="Shift start, ISO: 2026-04-22T08:00."
    ),
    shift_end: datetime | None = typer.Option(
        None, "--shift-end", help="Shift end, ISO (default: start + 8 h)."
    ),
    require: list[str] = typer.Option(
        [], "--require", help="A required certification (any spelling); repeatable."
    ),
    radius: float | None = typer.Option(
        None, "--radius", min=0.1, help="Miles around the city (default 25)."
    ),
    turn_budget: int | None = typer.Option(
        None, "--turn-budget", min=2, help="Turns for --policy llm (default AGENTLAKE_AGENT_TURN_BUDGET)."
    ),
    now: datetime | None = typer.Option(
        None, "--now", help="When 'tomorrow' and weekdays in the order count from, ISO (default: now)."
    ),
    rescue: bool = typer.Option(True, "--rescue/--no-rescue", help="One rescue attempt after a failed fill."),
    overseer: bool = typer.Option(False, "--overseer", help="Let the overseer review the fill for concerns."),
    fmt: Format = format_option(
        "Output: table (the turns, then the workers), json (the whole outcome, transcript "
        "included) or csv (the workers: placed, spare, rejected)."
    ),
    as_json: bool = JSON_ALIAS,
) -> None:
    """Fill one order against the lake: verified workers, spares and every rejection's reason (exit 1 if
    unfilled; exit 2 with the question when the order lacks a role, count or place)."""
    from agentlake.cli.beside_server import running_gateway
    from agentlake.cli.output import chosen_format, console, print_json

    fmt = chosen_format(fmt, as_json)
    people = fmt is Format.table
    request = {
        "order": order,
        "policy": policy,
        "client_id": client,
        "shift_start": shift_start,
        "shift_end": shift_end,
        "requirements": require,
        "radius_miles": radius,
        "rescue": rescue,
        "overseer": overseer,
        "now": now,
    }
    if policy == "llm":
        request |= {"executor_model": executor, "reviewer_model": reviewer, "turn_budget": turn_budget}
    server = running_gateway()
    where = f"filling through {server.describe()}..." if server else "filling..."
    with console.status(where, spinner="dots") if people else nullcontext():
        if server is not None:
            outcome = _fill_through(server, request, show_turns=people)
        else:
            outcome = _fill_here(request, on_turn=_show_turn if people else None)
    if fmt is Format.json:
        print_json(outcome.model_dump(mode="json"))
    else:
        _show_outcome(outcome, fmt)
    if not outcome.success:
        raise typer.Exit(1)


def _fill_here(request: dict[str, Any], *, on_turn: Any) -> TaskOutcome:
    from agentlake.agents import fill

    order = request.pop("order")
    return fill(order, on_turn=on_turn, **{k: v for k, v in request.items() if v is not None})


def _fill_through(server: Announcement, request: dict[str, Any], *, show_turns: bool) -> TaskOutcome:
    """The same fill by the running gateway (``POST /fill``), which holds the stores; its turns
    are shown once the outcome is back."""
    from agentlake.agents import TaskOutcome
    from agentlake.cli.beside_server import LONG_TIMEOUT_S, call

    body = {k: v.isoformat() if isinstance(v, datetime) else v for k, v in request.items() if v is not None}
    outcome = TaskOutcome.model_validate(call(server, "POST", "/fill", json=body, timeout_s=LONG_TIMEOUT_S))
    if show_turns:
        for record in outcome.transcript:
            _show_turn(record)
    return outcome


def _show_turn(record: TurnRecord) -> None:
    from rich.markup import escape

    from agentlake.cli.output import console

    turn = f"[{record.turn:>2}]" if record.turn else "    "
    style = _STYLE.get(record.agent, "white")
    mark = "" if record.ok else " [red]x[/]"
    console.print(
        f"{turn} [{style}]{record.agent:<12}[/] [bold]{record.kind}[/]{mark} {escape(record.summary)}",
        highlight=False,
    )
    if record.detail and (
        record.kind in ("tool_call", "verification", "search", "override") or not record.ok
    ):
        for line in record.detail.splitlines()[:4]:
            console.print(f"       [dim]{escape(line[:160])}[/]", highlight=False)


def _show_outcome(outcome: TaskOutcome, fmt: Format) -> None:
    from agentlake.cli.output import console, render_rows

    rows: list[list[object]] = [list(row) for row in outcome.rows()]
    if fmt is Format.csv:
        render_rows(["worker_id", "status", "reason"], rows, fmt)
        return
    if outcome.reading is not None and outcome.reading.source != "grammar":
        console.print(
            f"[bold]read by {outcome.reading.source}[/] {outcome.reading.understood}",
            highlight=False,
            soft_wrap=True,
        )
    console.print(
        f"[bold]{outcome.filled}/{outcome.order.count} filled ({outcome.policy})[/]: {outcome.order.describe()}",
        highlight=False,
        soft_wrap=True,
    )
    render_rows(["worker_id", "status", "reason"], rows)
    facts = f"turns {outcome.turns}, tokens {outcome.input_tokens}+{outcome.output_tokens}, {outcome.latency_ms:.0f} ms"
    if outcome.lessons_given:
        facts += f", lessons given {', '.join(outcome.lessons_given)}; cited {', '.join(outcome.lessons_cited) or 'none'}"
    if outcome.rescue_attempted:
        facts += f", rescue {'succeeded' if outcome.rescue_succeeded else 'failed'}"
    console.print(facts, highlight=False, soft_wrap=True)
    if not outcome.success:
        console.print(f"[bold red]not filled:[/] {outcome.failure_reason}", highlight=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    app.command("fill")(fill_command)
