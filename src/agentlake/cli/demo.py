"""``agentlake demo`` (``make demo``): the main job, end to end.

Generates the workforce if missing, indexes it, shows one SQL answer and one hybrid search;
then runs the built-in scenario pack with the rules baseline (learning on and off) and every
reachable LLM staffer over three batches, and prints the leaderboard and the report's path.
A thin door onto ``agentlake.demo.run_main_job``.
"""

from __future__ import annotations

import typer


def demo(
    workers: int = typer.Option(
        50_000, "--workers", "-n", min=1, help="Workers to generate when the lake has none."
    ),
    seed: int = typer.Option(7, "--seed", "-s", help="Seed of the generated workforce."),
    batches: int = typer.Option(
        3, "--batches", "-b", min=1, help="Scenario batches (learning between them)."
    ),
    local_llm: bool = typer.Option(
        False,
        "--local-llm",
        help="Also run the in-process local-tiny model (install: make local-llm) on a reduced pack.",
    ),
) -> None:
    """Run the main job (make demo): dataset, index, examples, then staffing days, leaderboard and report."""
    from agentlake.cli.leaderboard import print_board
    from agentlake.cli.output import console, render_rows
    from agentlake.demo import run_main_job
    from agentlake.scenarios import read_results
    from agentlake.scenarios.metrics import leaderboard, leaderboard_rows, learning_curve

    def day(p) -> None:  # noqa: ANN001 - a runner.Progress
        console.print(f"batch {p.batch}/{p.batches} [{p.done}/{p.total}] {p.staffer} {p.scenario}: "
                      f"{p.filled}/{p.requested} filled", highlight=False, markup=False)  # fmt: skip

    def first_step(result) -> None:  # noqa: ANN001 - a demo.DemoResult
        if result.generated_workers:
            console.print(f"generated {result.generated_workers} workers", highlight=False)
        if result.index is not None:
            console.print(
                f"indexed workers.resume_text ({result.index.embedded} embedded, {result.index.cached} cached)"
            )
        console.print(f'\n[bold]agentlake sql[/] "{result.sql}"', highlight=False)
        render_rows(result.sql_result.columns, result.sql_result.rows)
        console.print(
            f'\n[bold]agentlake search workers[/] "{result.question}" --where "{result.where}" -k 5',
            highlight=False,
        )
        rows = [[s.doc_id, f"{s.score:.3f}", s.sql_verified, s.chunk_text] for s in result.sources]
        render_rows(["doc_id", "score", "sql_verified", "chunk_text"], rows)
        console.print(
            "\n[bold]agentlake run[/] --scenarios builtin (the main job: staffing days, learning between batches)"
        )

    job = run_main_job(
        workers=workers,
        seed=seed,
        batches=batches,
        local_llm=local_llm,
        progress=True,
        on_day=day,
        on_first_step=first_step,
    )
    for summary in filter(None, (job.run, job.local)):
        results = read_results(summary.run_dir)
        print_board(
            leaderboard_rows(leaderboard(results), learning_curve(results)),
            f"\nscenario run {summary.run_id}",
        )
        console.print(f"report: {summary.report}", highlight=False, markup=False)
    if job.hint:
        console.print(job.hint, highlight=False, markup=False)


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)
