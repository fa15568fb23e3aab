"""``agentlake demo`` (``make demo``): the main job, end to end, with each step's time.

Generates the workforce if missing and indexes it in the background; shows one SQL answer;
runs the built-in scenario pack with the rules baseline (learning on and off) and every
reachable LLM staffer over three batches; prints the leaderboard and the report's path;
finishes the index and shows one hybrid search; then an embedded LLM staffer (the packaged 0.5B,
in process) on a reduced pack with its learning curve; ends with a table of the steps and their
times. A thin door onto ``agentlake.scenarios.main_job.run_main_job``: this module only draws
its events.
"""

from __future__ import annotations

import time
from typing import Any

import typer

# Without a terminal (make demo | tee, CI logs) the index's progress is a line this often.
PLAIN_PROGRESS_EVERY_S = 15.0


def demo(
    workers: int = typer.Option(
        50_000, "--workers", "-n", min=1, help="Workers to generate when the lake has none."
    ),
    seed: int = typer.Option(7, "--seed", "-s", help="Seed of the generated workforce."),
    batches: int = typer.Option(
        3, "--batches", "-b", min=1, help="Scenario batches (learning between them)."
    ),
    llm_staffer: str = typer.Option(
        "qwen-0.5b-learning",
        "--llm-staffer",
        help="The embedded LLM staffer run on a reduced pack after the rules (qwen-0.5b-learning, "
        "qwen-1.5b-learning, their -static twins, or a profile file); none: skip it.",
    ),
    budget_s: float = typer.Option(
        0.0,
        "--budget-s",
        min=0.0,
        help="Seconds the job may take (0: no budget); the embedded LLM staffer runs only the batches that fit, "
        "and says so. make demo passes what is left of its 10 minutes.",
    ),
    local_llm: bool = typer.Option(
        False,
        "--local-llm",
        help="Require the embedded LLM staffer: refuse, with the install line, when its model is not installed "
        "(without it, a missing model only skips that staffer).",
    ),
) -> None:
    """Run the main job (make demo): dataset, index, examples, then staffing days, leaderboard and report."""
    from agentlake.cli.output import console
    from agentlake.scenarios.main_job import run_main_job

    view = _JobView()
    staffer = None if llm_staffer.strip().lower() in ("", "none") else llm_staffer
    try:
        job = run_main_job(
            workers=workers,
            seed=seed,
            batches=batches,
            llm_staffer=staffer,
            require_llm_staffer=local_llm,
            on_event=view.show,
            budget_s=budget_s or None,
        )
    finally:
        view.close()
    _print_steps(job.steps, job.seconds)
    if job.hint:
        console.print(job.hint, highlight=False, markup=False)


class _JobView:
    """Draws the main job's events: step lines, day lines, examples, leaderboards, index progress."""

    def __init__(self) -> None:
        self.bar: Any = None
        self.task: Any = None
        self.last_line = 0.0
        self.last_text = ""

    def show(self, event: Any) -> None:  # one branch per event type
        from agentlake.cli.output import console, render_rows
        from agentlake.lake.background_index import IndexProgress
        from agentlake.scenarios import main_job as demo
        from agentlake.scenarios.runner import Progress

        if isinstance(event, IndexProgress):
            self._index(event)
        elif isinstance(event, Progress):
            console.print(
                f"batch {event.batch}/{event.batches} [{event.done}/{event.total}] {event.staffer} "
                f"{event.scenario}: {event.filled}/{event.requested} filled ({event.seconds:.1f} s)",
                highlight=False,
                markup=False,
            )
        elif isinstance(event, demo.StepDone):
            if event.name.startswith("index"):
                self.close()
            console.print(
                f"[green]done[/] {event.name} in {event.seconds:.1f} s: {event.summary}", highlight=False
            )
        elif isinstance(event, demo.Notice):
            console.print(event.text, style="yellow", highlight=False, markup=False)
        elif isinstance(event, demo.SqlExample):
            console.print(f'\n[bold]agentlake sql[/] "{event.sql}"', highlight=False)
            render_rows(event.result.columns, event.result.rows)
            console.print(
                "\n[bold]agentlake run[/] --scenarios builtin (staffing days, learning between batches)"
            )
        elif isinstance(event, demo.SearchExample):
            console.print(
                f'\n[bold]agentlake search workers[/] "{event.question}" --where "{event.where}" -k 5',
                highlight=False,
            )
            rows = [[s.doc_id, f"{s.score:.3f}", s.sql_verified, s.chunk_text] for s in event.sources]
            render_rows(["doc_id", "score", "sql_verified", "chunk_text"], rows)
        elif isinstance(event, demo.RunDone):
            self._leaderboard(event)

    def _index(self, p: Any) -> None:
        from agentlake.cli.output import console

        if p.total == 0 or p.phase not in ("embedding", "indexing"):
            return
        eta = f", ~{p.eta_s / 60:.1f} min left" if p.eta_s is not None and p.done < p.total else ""
        text = f"index: {p.done:,}/{p.total:,} resumes have vectors ({p.rate:,.0f}/s{eta})"
        if p.done == 0:
            text = f"index: embedding {p.total:,} resumes in the background"
        if p.phase == "indexing":
            text = f"index: {p.total:,} resumes have vectors; writing the index and its HNSW graph"
        if console.is_terminal:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

            if self.bar is None:
                self.bar = Progress(
                    TextColumn("{task.description}"),
                    BarColumn(),
                    MofNCompleteColumn(),
                    console=console,
                    transient=True,
                )
                self.task = self.bar.add_task("", total=p.total)
                self.bar.start()
            self.bar.update(self.task, completed=p.done, total=p.total, description=text)
        elif text != self.last_text and (
            time.monotonic() - self.last_line >= PLAIN_PROGRESS_EVERY_S or p.phase == "indexing"
        ):
            # Once a line: the index reports each part of its writing, all with the same words.
            self.last_line, self.last_text = time.monotonic(), text
            console.print(text, highlight=False, markup=False)

    def _leaderboard(self, event: Any) -> None:
        from agentlake.cli.leaderboard import print_board
        from agentlake.cli.output import console
        from agentlake.scenarios import read_results
        from agentlake.scenarios.metrics import leaderboard, leaderboard_rows, learning_curve

        results = read_results(event.summary.run_dir)
        print_board(
            leaderboard_rows(leaderboard(results), learning_curve(results)),
            f"\n{event.label}: scenario run {event.summary.run_id}",
        )
        console.print(f"report: {event.summary.report}", highlight=False, markup=False)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


def _print_steps(steps: list[Any], seconds: float) -> None:
    from rich import box
    from rich.table import Table

    from agentlake.cli.output import console

    table = Table(title=f"the main job took {seconds:.1f} s", box=box.SIMPLE_HEAD, title_justify="left")
    table.add_column("step", no_wrap=True)
    table.add_column("from (s)", justify="right")
    table.add_column("took (s)", justify="right")
    table.add_column("what it did", overflow="fold")
    for step in steps:
        table.add_row(step.name, f"{step.started_s:.1f}", f"{step.seconds:.1f}", step.summary)
    console.print(table)


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)
