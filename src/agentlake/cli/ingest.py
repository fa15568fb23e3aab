"""``agentlake ingest FILE --dataset NAME``: load a CSV, Parquet or JSONL file into the lake."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

import typer


class IngestMode(StrEnum):
    append = "append"
    replace = "replace"
    upsert = "upsert"


def ingest(
    file: Path = typer.Argument(
        ..., help="CSV, Parquet or JSONL file (format from the extension: .csv .parquet .jsonl)."
    ),
    dataset: str = typer.Option(..., "--dataset", "-d", help="Dataset (table) to load into, e.g. workers."),
    mode: IngestMode = typer.Option(
        IngestMode.append,
        "--mode",
        help="append adds rows; replace swaps the dataset; upsert updates rows by --key.",
    ),
    key: str | None = typer.Option(
        None, "--key", help="Column identifying a row; required for --mode upsert."
    ),
    evolve: bool = typer.Option(
        False, "--evolve", help="On append/upsert, add columns the dataset lacks (nullable)."
    ),
) -> None:
    """Load FILE into a dataset, atomically (all rows or none), and record it in the history."""
    from agentlake.cli.output import console
    from agentlake.lake import Lake

    with Lake.open() as lake:
        result = lake.ingest(file, dataset, mode=mode.value, key=key, evolve=evolve)
    added = f"; added columns: {', '.join(result.added_columns)}" if result.added_columns else ""
    console.print(
        f"{result.mode}: {result.rows_in} rows from {file} into [bold]{result.dataset}[/] "
        f"({result.rows_before} -> {result.rows_after} rows){added}",
        highlight=False,
    )


def register(app: typer.Typer) -> None:
    app.command("ingest")(ingest)
