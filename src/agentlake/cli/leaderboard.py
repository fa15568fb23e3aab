"""``agentlake leaderboard``, ``agentlake compare`` and ``agentlake report``: a run's numbers.

Thin doors onto ``agentlake.scenarios`` (metrics, scorecard, report); every number is computed
from the run directory's results file, so they can be re-read at any time.
"""

from __future__ import annotations

import typer

from agentlake.cli.output import Format

_RUN_DIR = typer.Argument(..., help="A run directory (runs/<run_id>) or a run id under the runs_dir setting.")
_BATCH = typer.Option(
    None, "--batch", "-b", min=1, help="Only this batch (e.g. the last, after learning); default all."
)
_FORMAT = typer.Option(Format.table, "--format", "-f", help="table (Rich), json or csv.")


def leaderboard(run_dir: str = _RUN_DIR, batch: int | None = _BATCH, fmt: Format = _FORMAT) -> None:
    """Rank the staffers of a run by score; show fill rate, learning gain, pass^k, citations, cost."""
    from agentlake.cli.output import console, print_json, render_rows
    from agentlake.scenarios.metrics import (
        LEADERBOARD_COLUMNS,
        SCORE_FORMULA,
        leaderboard_document,
        leaderboard_rows,
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
    title = f"{path.name}" + (f" - batch {batch}" if batch else "")
    render_rows(LEADERBOARD_COLUMNS, leaderboard_rows(rank(results, batch=batch)), fmt, title=title)
    if fmt is Format.table:
        console.print(f"[dim]{SCORE_FORMULA}[/]")


def compare(
    run_dir: str = _RUN_DIR,
    a: str = typer.Argument(..., help="Staffer A (the baseline)."),
    b: str = typer.Argument(..., help="Staffer B (differences are B - A)."),
    batch: int | None = _BATCH,
    confidence: float = typer.Option(0.95, "--confidence", help="Confidence level of the intervals."),
    fmt: Format = _FORMAT,
) -> None:
    """A/B scorecard of two staffers of one run, with confidence intervals (Wilson, paired bootstrap)."""
    from agentlake.cli.output import console, print_json, render_rows
    from agentlake.scenarios.results import read_results, resolve_run_dir
    from agentlake.scenarios.scorecard import compare as scorecard
    from agentlake.settings import load_settings

    path = resolve_run_dir(run_dir, load_settings().runs_dir)
    card = scorecard(read_results(path), a, b, batch=batch, confidence=confidence)
    if fmt is Format.json:
        print_json(card.model_dump())
        return
    pct = f"{100 * confidence:g}%"
    rows = [
        [
            r.metric,
            f"{r.a:.4g} [{r.a_ci.low:.3g}, {r.a_ci.high:.3g}]",
            f"{r.b:.4g} [{r.b_ci.low:.3g}, {r.b_ci.high:.3g}]",
            f"{r.diff:+.4g} [{r.diff_ci.low:+.3g}, {r.diff_ci.high:+.3g}]",
            r.verdict,
        ]
        for r in card.rows
    ]
    render_rows(
        ["metric", f"A: {a} ({pct} CI)", f"B: {b} ({pct} CI)", "B - A (CI)", "verdict"],
        rows,
        fmt,
        title=f"{path.name}: {b} vs {a}" + (f", batch {batch}" if batch else ""),
    )
    if fmt is Format.table:
        how = "paired by event instance" if card.paired else "arms resampled independently"
        console.print(
            f"[dim]{card.a_events} vs {card.b_events} events; bootstrap x{card.resamples}, {how}.[/]"
        )


def report(run_dir: str = _RUN_DIR) -> None:
    """Rewrite report.html and leaderboard.json of a run from its results (offline HTML, no network)."""
    from agentlake.cli.output import console
    from agentlake.scenarios.results import resolve_run_dir
    from agentlake.scenarios.runner import regenerate_outputs
    from agentlake.settings import load_settings

    board, html = regenerate_outputs(resolve_run_dir(run_dir, load_settings().runs_dir))
    console.print(f"wrote {board}\nwrote {html}", highlight=False)


def register(app: typer.Typer) -> None:
    app.command("leaderboard")(leaderboard)
    app.command("compare")(compare)
    app.command("report")(report)
