"""``agentlake leaderboard``, ``agentlake compare`` and ``agentlake report``: a run's numbers.

Thin doors onto ``agentlake.scenarios`` (metrics, scorecard, report); every number is computed
from the run directory's results file, so they can be re-read at any time.
"""

from __future__ import annotations

import typer

from agentlake.cli.output import Format, console, print_json, render_rows

_RUN_DIR = typer.Argument(..., help="A run directory (runs/<run_id>) or a run id under the runs_dir setting.")
_BATCH = typer.Option(
    None, "--batch", "-b", min=1, help="Only this batch (e.g. the last, after learning); default all."
)
_FORMAT = typer.Option(Format.table, "--format", "-f", help="table (Rich), json or csv.")


# The columns that fit an 80-column terminal; --wide shows all of them.
_NARROW = ("#", "staffer", "score", "fill", "by batch", "pass^k", "prec", "cites/run", "tiers")


def print_board(rows: list[list[object]], title: str, *, wide: bool = False) -> None:
    """The leaderboard as a Rich table whose staffer names never wrap."""
    from rich import box
    from rich.table import Table

    from agentlake.scenarios.metrics import LEADERBOARD_COLUMNS

    keep = [i for i, c in enumerate(LEADERBOARD_COLUMNS) if wide or c in _NARROW]
    table = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False)
    for i in keep:
        table.add_column(LEADERBOARD_COLUMNS[i], no_wrap=True, justify="left" if i == 1 else "right")
    for row in rows:
        table.add_row(*(str(row[i]) for i in keep))
    console.print(table)


def leaderboard(
    run_dir: str = _RUN_DIR,
    batch: int | None = _BATCH,
    fmt: Format = _FORMAT,
    wide: bool = typer.Option(
        False, "--wide", "-w", help="All columns: turns, tokens, cost, latency, rescues, double-bookings."
    ),
) -> None:
    """Rank the staffers of a run by score; show fill rate, learning gain, pass^k, citations, cost."""
    from agentlake.scenarios.metrics import (
        LEADERBOARD_COLUMNS,
        SCORE_FORMULA,
        leaderboard_document,
        leaderboard_rows,
        learning_curve,
    )
    from agentlake.scenarios.metrics import leaderboard as rank
    from agentlake.scenarios.results import read_results, resolve_run_dir
    from agentlake.settings import load_settings

    path = resolve_run_dir(run_dir, load_settings().runs_dir)
    results = read_results(path)
    if fmt is Format.json:
        print_json(
            leaderboard_document([r for r in results if batch is None or r.batch == batch], run_id=path.name)
        )
        return
    rows = leaderboard_rows(rank(results, batch=batch), learning_curve(results))
    if fmt is Format.table:
        print_board(rows, f"{path.name}" + (f", batch {batch}" if batch else ""), wide=wide)
        console.print(SCORE_FORMULA, style="dim", markup=False)
    else:
        render_rows(LEADERBOARD_COLUMNS, rows, fmt)


def compare(
    run_dir: str = _RUN_DIR,
    a: str = typer.Argument(..., help="Staffer A (the baseline)."),
    b: str = typer.Argument(..., help="Staffer B (differences are B - A)."),
    batch: int | None = _BATCH,
    confidence: float = typer.Option(0.95, "--confidence", help="Confidence level of the intervals."),
    fmt: Format = _FORMAT,
) -> None:
    """A/B scorecard of two staffers of one run, with confidence intervals (Wilson, paired bootstrap)."""
    from agentlake.scenarios.results import read_results, resolve_run_dir
    from agentlake.scenarios.scorecard import compare as scorecard
    from agentlake.settings import load_settings

    path = resolve_run_dir(run_dir, load_settings().runs_dir)
    card = scorecard(read_results(path), a, b, batch=batch, confidence=confidence)
    if fmt is Format.json:
        print_json(card.model_dump())
        return
    rows = [
        [
            _LABELS.get(r.metric, r.metric),
            _value(r.metric, r.a, r.a_ci),
            _value(r.metric, r.b, r.b_ci),
            _diff(r.metric, r.diff, r.diff_ci),
            "A" if r.verdict == f"{a} better" else "B" if r.verdict == f"{b} better" else "-",
        ]
        for r in card.rows
    ]
    title = f"{path.name}: A = {a}, B = {b}" + (f", batch {batch}" if batch else "")
    if fmt is Format.table:
        _print_card(rows, title)
    else:
        render_rows(["metric", "A [CI]", "B [CI]", "B - A [CI]", "win"], rows, fmt, title=title)
    if fmt is Format.table:
        how = "paired by event instance" if card.paired else "arms resampled independently"
        console.print(
            f"rates in %, differences in points; {100 * confidence:g}% intervals; {card.a_events} vs "
            f"{card.b_events} events; bootstrap x{card.resamples}, {how}; Wilson for success rates.",
            style="dim",
            markup=False,
        )


_LABELS = {
    "fill_rate": "fill rate",
    "event_success_rate": "events solved",
    "pass_k": "pass^k",
    "citations_per_event": "cites/event",
    "turns_per_event": "turns/event",
    "tokens_per_event": "tokens/event",
    "cost_usd_per_event": "cost $/event",
    "latency_ms_mean": "ms/event",
    "double_bookings_submitted_per_event": "dbl-booked/ev",
}


def _print_card(rows: list[list[str]], title: str) -> None:
    from rich import box
    from rich.table import Table

    table = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False)
    for i, column in enumerate(["metric", "A [CI]", "B [CI]", "B - A [CI]", "win"]):
        table.add_column(column, no_wrap=True, justify="left" if i in (0, 4) else "right")
    for row in rows:
        table.add_row(*row)
    console.print(table)


def _is_rate(metric: str) -> bool:
    return metric in ("fill_rate", "event_success_rate", "pass_k", "precision")


def _value(metric: str, value: float, ci: object) -> str:
    if _is_rate(metric):
        return f"{100 * value:.0f}% [{100 * ci.low:.0f}-{100 * ci.high:.0f}]"  # type: ignore[attr-defined]
    return f"{_num(value)} [{_num(ci.low)}-{_num(ci.high)}]"  # type: ignore[attr-defined]


def _diff(metric: str, value: float, ci: object) -> str:
    if _is_rate(metric):
        return f"{100 * value:+.0f} [{100 * ci.low:+.0f},{100 * ci.high:+.0f}]"  # type: ignore[attr-defined]
    return f"{_num(value, sign=True)} [{_num(ci.low, sign=True)},{_num(ci.high, sign=True)}]"  # type: ignore[attr-defined]


def _num(value: float, *, sign: bool = False) -> str:
    digits = 0 if abs(value) >= 100 else 1 if abs(value) >= 10 else 2
    text = f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def report(
    run_dir: str = _RUN_DIR,
    fmt: Format = _FORMAT,
) -> None:
    """Rewrite report.html and leaderboard.json of a run from its results (offline HTML, no network)."""
    from agentlake.cli.output import render_record
    from agentlake.scenarios.results import resolve_run_dir
    from agentlake.scenarios.runner import regenerate_outputs
    from agentlake.settings import load_settings

    settings = load_settings()
    board, html = regenerate_outputs(resolve_run_dir(run_dir, settings.runs_dir), settings)
    render_record(
        {"leaderboard": str(board), "report": str(html)},
        fmt,
        lambda: console.print(f"wrote {board}\nwrote {html}", highlight=False),
    )


def register(app: typer.Typer) -> None:
    app.command("leaderboard")(leaderboard)
    app.command("compare")(compare)
    app.command("report")(report)
