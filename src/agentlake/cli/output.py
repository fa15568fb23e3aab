"""Shared rendering for CLI commands: consoles, tables, JSON and CSV output.

The one scripting convention: every command that prints data takes ``--format/-f
table|json|csv`` (:func:`format_option`); ``table`` is for people, ``json`` one document on
stdout, ``csv`` a header row and rows. A command that prints one result (an answer, a report)
renders it with :func:`render_record`: its text for people, the object as JSON, or one CSV row.
``--json`` is kept as an alias of ``--format json`` on the commands that had it
(:data:`JSON_ALIAS`, :func:`chosen_format`). Notes and progress go to stderr, never between
the data on stdout.
"""

from __future__ import annotations

import csv
import io
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from enum import StrEnum
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

console = Console()
err_console = Console(stderr=True)


class Format(StrEnum):
    table = "table"
    json = "json"
    csv = "csv"


def format_option(help: str = "Output: table, json or csv.") -> Any:
    """The ``--format/-f`` option every command that prints data takes."""
    return typer.Option(Format.table, "--format", "-f", help=help)


# Kept on the commands that had --json before --format reached them (scripts use it).
JSON_ALIAS = typer.Option(False, "--json", help="Same as --format json.")


def chosen_format(fmt: Format, as_json: bool) -> Format:
    """``--format``, or json when the ``--json`` alias is given; ``UserError`` when the two
    disagree (``--json --format csv``)."""
    if not as_json:
        return fmt
    if fmt is Format.csv:
        from agentlake.errors import UserError

        raise UserError("--json and --format csv disagree: give one of them")
    return Format.json


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


def render_record(record: Mapping[str, Any], fmt: Format, text: Callable[[], None]) -> None:
    """One result: ``text()`` prints it for people (``table``); ``json`` prints ``record``;
    ``csv`` prints a header of its keys and one row (lists and objects as JSON text)."""
    if fmt is Format.json:
        print_json(record)
    elif fmt is Format.csv:
        values = [
            json.dumps(_plain(value), ensure_ascii=False) if isinstance(value, (list, tuple, dict)) else value
            for value in record.values()
        ]
        render_rows(list(record), [values], fmt)
    else:
        text()
