"""Shared rendering for CLI commands: consoles, tables, JSON and CSV output."""

from __future__ import annotations

import csv
import io
import json
import sys
from collections.abc import Sequence
from enum import StrEnum
from typing import Any

from rich.console import Console
from rich.table import Table

console = Console()
err_console = Console(stderr=True)


class Format(StrEnum):
    table = "table"
    json = "json"
    csv = "csv"


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    return str(value)


def print_json(payload: Any) -> None:
    """Write one JSON document to stdout, without Rich markup or wrapping."""
    sys.stdout.write(json.dumps(_plain(payload), ensure_ascii=False, indent=2) + "\n")


def render_rows(
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    fmt: Format = Format.table,
    *,
    title: str | None = None,
) -> None:
    """Print rows as a Rich table, a JSON list of objects, or CSV."""
    if fmt is Format.json:
        print_json([dict(zip(columns, row, strict=False)) for row in rows])
    elif fmt is Format.csv:
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        writer.writerow(columns)
        writer.writerows([[_plain(value) for value in row] for row in rows])
        sys.stdout.write(buffer.getvalue())
    else:
        table = Table(title=title, show_lines=False)
        for column in columns:
            table.add_column(str(column), overflow="fold")
        for row in rows:
            table.add_row(*("" if value is None else str(value) for value in row))
        console.print(table)
