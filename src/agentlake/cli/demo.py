"""``agentlake demo``: generate the workforce if missing, index it, show one SQL answer and one search."""

from __future__ import annotations

import typer


def demo(
    workers: int = typer.Option(
        50_000, "--workers", "-n", min=1, help="Workers to generate when the lake has none."
    ),
    seed: int = typer.Option(7, "--seed", "-s", help="Seed of the generated workforce."),
) -> None:
    """Run the first-run demo (make demo): dataset, index, an example SQL query and an example hybrid search."""
    from agentlake.cli.output import console, render_rows
    from agentlake.demo import run_demo

    result = run_demo(workers=workers, seed=seed, progress=True)
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


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)
