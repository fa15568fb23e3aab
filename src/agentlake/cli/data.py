"""``agentlake data generate``: the synthetic workforce (workers, clients, placements)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

import typer

data_app = typer.Typer(help="Generate the realistic workforce dataset.", no_args_is_help=True)


class FileFormat(StrEnum):
    parquet = "parquet"
    csv = "csv"
    jsonl = "jsonl"


@data_app.command("generate")
def generate(
    workers: int = typer.Option(50_000, "--workers", "-n", min=1, help="Number of workers to generate."),
    seed: int = typer.Option(7, "--seed", "-s", help="Random seed; the same seed gives the same rows."),
    clients: int = typer.Option(300, "--clients", min=4, help="Number of client employers."),
    replace: bool = typer.Option(
        False, "--replace", help="Regenerate even if workers/clients/placements exist."
    ),
    out: Path | None = typer.Option(
        None, "--out", help="Write files to this directory instead of loading the lake."
    ),
    fmt: FileFormat = typer.Option(
        FileFormat.parquet, "--format", help="File format with --out: parquet, csv or jsonl."
    ),
) -> None:
    """Generate workers, clients and placements and load them into the lake (or write files with --out)."""
    import time

    from agentlake.cli.output import console, render_rows
    from agentlake.lake import Lake
    from agentlake.workforce.generator import generate_workforce, load_workforce, write_workforce_files

    started = time.perf_counter()
    workforce = generate_workforce(workers, seed=seed, clients=clients)
    if out is not None:
        for path in write_workforce_files(workforce, out, fmt.value):
            console.print(f"wrote {path}", highlight=False)
    else:
        with Lake.open() as lake:
            results = load_workforce(lake, workforce, replace=replace)
        render_rows(["dataset", "rows"], [(r.dataset, r.rows_after) for r in results], title="generated")
    console.print(f"done in {time.perf_counter() - started:.1f} s (seed {seed})", highlight=False)


def register(app: typer.Typer) -> None:
    app.add_typer(data_app, name="data")
