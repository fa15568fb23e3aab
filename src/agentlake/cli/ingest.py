"""``agentlake ingest FILE --dataset NAME``: load a CSV, Parquet or JSONL file into the lake."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

import typer

from agentlake.cli.output import Format


class IngestMode(StrEnum):
    append = "append"
    replace = "replace"  # type: ignore[assignment]  # the mode's name shadows str.replace, as the CLI spells it
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
    nulls: list[str] = typer.Option(
        [],
        "--null",
        help="A field value meaning 'missing', beside NA, N/A, null, NULL, NaN and empty; repeat for more.",
    ),
    fmt: Format = typer.Option(
        Format.table, "--format", "-f", help="Output: table, json or csv (csv: the schema alone)."
    ),
) -> None:
    """Load FILE into a dataset, atomically (all rows or none), record it in the history, and
    print the dataset's schema (why a column stayed text, e.g. ambiguous day/month dates)."""
    from agentlake.cli.output import console, print_json, render_rows
    from agentlake.lake import Lake

    with Lake.open() as lake:
        result = lake.ingest(file, dataset, mode=mode.value, key=key, evolve=evolve, nulls=nulls)
    if fmt is Format.json:
        print_json(result.model_dump(mode="json"))
        return
    if fmt is Format.table:
        added = f"; added columns: {', '.join(result.added_columns)}" if result.added_columns else ""
        console.print(
            f"{result.mode}: {result.rows_in} rows from {file} into [bold]{result.dataset}[/] "
            f"({result.rows_before} -> {result.rows_after} rows){added}",
            highlight=False,
        )
    rows = [(column.name, column.type, column.note) for column in result.columns]
    render_rows(["column", "type", "why"], rows, fmt, title="schema")


def register(app: typer.Typer) -> None:
    app.command("ingest")(ingest)
