"""Ingest: read a CSV / Parquet / JSONL file into Arrow, then merge it into a dataset.

Two halves with one boundary. :func:`read_source` turns a file into an Arrow table on a
private in-memory DuckDB (the lake itself runs with external access off) and converts every
reader failure into a ``UserError`` naming the file and, where known, the line. It reads text
the way people write it: null markers (``NA``, ``N/A``, ``null``, ``NULL``, ``NaN``, empty)
are missing values, numbers and booleans come from DuckDB's sniffer, dates and timestamps
from ``column_types`` (which never guesses a day/month order), and every column kept as text
gets a note saying why.
:func:`apply_ingest` runs inside the lake writer's transaction and does append / replace /
upsert with schema checks, ``evolve``, key checks and the catalog record, so a failure at
any step leaves the dataset exactly as it was. This module does not open the lake file;
``Lake`` owns the writer and calls in.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
from pydantic import BaseModel, Field

from agentlake.errors import RunError, UserError
from agentlake.lake.catalog import (
    catalog_key,
    check_dataset_name,
    quote_ident,
    record_ingest,
    table_columns,
    table_exists,
)
from agentlake.lake.column_types import examine_text_columns

if TYPE_CHECKING:
    import pyarrow as pa

MODES: tuple[str, ...] = ("append", "replace", "upsert")

CSV_SUFFIXES = (".csv", ".tsv", ".txt")
PARQUET_SUFFIXES = (".parquet", ".pq")
JSON_SUFFIXES = (".jsonl", ".ndjson", ".json")
_INCOMING = "__agentlake_incoming"
_SOURCE = "__agentlake_source"
# Fields that mean "missing" in text files: R writes NA (and NaN for a numeric NaN, which SQL
# aggregates cannot use), spreadsheets N/A, JSON-minded tools null. Exact, case-sensitive.
DEFAULT_NULLS: tuple[str, ...] = ("NA", "N/A", "null", "NULL", "NaN", "")
# The types DuckDB's CSV sniffer may pick. No DATE or TIMESTAMP: its sniffer reads 03/04/2012
# as day-first with nothing in the file saying so; column_types reads dates instead.
_SNIFFED_TYPES = ["BOOLEAN", "BIGINT", "HUGEINT", "DOUBLE", "TIME", "VARCHAR"]
# What DuckDB's sniffer takes for an integer (no leading zeros, no fraction, no separators).
_PLAIN_INTEGER = r"\s*-?(0|[1-9][0-9]*)\s*"
_LATE = "agentlake: a value past the sample of the CSV sniffer does not fit its type"
# A scalar numeric type, the whole name: not repair.NUMERIC_TYPE, which finds INT in INTEGER[]
# and INTERVAL too (a list or an interval is not read from CSV as a number).
_NUMERIC = re.compile(
    r"^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|UHUGEINT|FLOAT|DOUBLE|DECIMAL.*)$"
)


class ColumnSchema(BaseModel):
    """One column of a dataset after an ingest, with what reading the file found out."""

    name: str
    type: str
    note: str = Field(
        default="",
        description="Why the column is text (e.g. 'ambiguous dates: day/month order unknown, e.g. ...'), "
        "or which day/month order was read; empty when there is nothing to say.",
    )


class IngestResult(BaseModel):
    """What one ingest did: row counts before/after, any columns ``evolve`` added, and the
    dataset's schema afterwards."""

    dataset: str
    mode: str
    rows_in: int
    rows_before: int
    rows_after: int
    added_columns: list[str] = Field(default_factory=list)
    columns: list[ColumnSchema] = Field(default_factory=list)


@dataclass
class SourceTable:
    """A file read by :func:`read_source`: its rows, and a note per column worth one."""

    table: pa.Table
    notes: dict[str, str] = field(default_factory=dict)


def check_mode(mode: str, key: str | None) -> None:
    """``UserError`` for an unknown mode or an upsert without a key."""
    if mode not in MODES:
        raise UserError(f"unknown ingest mode {mode!r}: use one of {', '.join(MODES)}")
    if mode == "upsert" and not key:
        raise UserError(
            "upsert needs a key: pass --key COLUMN naming the column that identifies a row (e.g. --key worker_id)"
        )


def null_markers(extra: Sequence[str] = ()) -> list[str]:
    """:data:`DEFAULT_NULLS` plus ``extra``; ``UserError`` for an empty extra marker."""
    for marker in extra:
        if not marker.strip():
            raise UserError(
                "--null needs a value, e.g. --null '-' or --null 'n/a' (empty fields are already missing values)"
            )
    return list(dict.fromkeys([*DEFAULT_NULLS, *extra]))


# --- reading -------------------------------------------------------------------------


def read_source(
    source: Path | str,
    *,
    types: dict[str, str] | None = None,
    nulls: Sequence[str] = (),
    threads: int = 2,
) -> SourceTable:
    """Read a CSV, Parquet or JSONL file into an Arrow table, with a note per column worth one.

    Text fields equal to a null marker (:data:`DEFAULT_NULLS` plus ``nulls``) are missing
    values, in CSV and in JSON strings; Parquet is read as typed. ``types`` (lower-case column
    -> DuckDB type) are the columns of the dataset the file goes into: a text column stays
    text, and a CSV column of another type is pinned to it, so that a wrong value is reported
    at its line instead of silently changing the column's type. Raises ``UserError`` for a
    missing, empty, header-only, unreadable or malformed file and for an empty null marker.
    """
    markers = null_markers(nulls)
    path = Path(source).expanduser()
    if not path.exists():
        raise UserError(f"file not found: {path}; check the path")
    if path.is_dir():
        raise UserError(f"{path} is a directory; pass one CSV, Parquet or JSONL file")
    suffix = path.suffix.lower()
    if suffix not in CSV_SUFFIXES + PARQUET_SUFFIXES + JSON_SUFFIXES:
        raise UserError(
            f"cannot tell the format of {path.name}: name the file .csv, .parquet or .jsonl (also .tsv, .ndjson, .json)"
        )
    if path.stat().st_size == 0:
        raise UserError(f"file {path} is empty; nothing to ingest")
    types = types or {}
    text = {name for name, dtype in types.items() if dtype == "VARCHAR"}
    # A private database: file access is allowed here because the user named this file.
    reader = duckdb.connect(":memory:", config={"threads": threads, "autoinstall_known_extensions": False})
    try:
        if suffix in CSV_SUFFIXES:
            table = _read_csv(reader, path, types, markers)
        elif suffix in PARQUET_SUFFIXES:
            table = _read_with(reader, "SELECT * FROM read_parquet(?)", [str(path)], path, "Parquet")
        else:
            fmt = "auto" if suffix == ".json" else "newline_delimited"
            table = _read_with(
                reader, f"SELECT * FROM read_json(?, format='{fmt}')", [str(path)], path, "JSON"
            )
        _check_shape(table, path)
        if suffix in PARQUET_SUFFIXES:
            return SourceTable(table)
        # The CSV reader has dropped the null markers itself; JSON strings keep them until here.
        return _read_text_columns(reader, table, path, text, () if suffix in CSV_SUFFIXES else markers)
    finally:
        reader.close()


def _check_shape(table: pa.Table, path: Path) -> None:
    if table.num_rows == 0:
        raise UserError(
            f"file {path} has no data rows (only a header or an empty document); nothing to ingest"
        )
    names = [name.lower() for name in table.column_names]
    duplicated = sorted({name for name in names if names.count(name) > 1})
    if duplicated:
        raise UserError(
            f"file {path} has duplicate column names {duplicated} (column names are case-insensitive)"
        )


def _read_text_columns(
    reader: duckdb.DuckDBPyConnection, table: pa.Table, path: Path, keep: set[str], nulls: Sequence[str]
) -> SourceTable:
    """Dates out of text columns, null markers out of JSON strings, and why the rest is text."""
    reader.register(_SOURCE, table)
    try:
        found = examine_text_columns(reader, _SOURCE, keep=keep, nulls=nulls)
        if found.replace:
            replaced = ", ".join(f"{sql} AS {quote_ident(name)}" for name, sql in found.replace.items())
            table = reader.sql(f"SELECT * REPLACE ({replaced}) FROM {_SOURCE}").to_arrow_table()
    except duckdb.Error as exc:
        raise RunError(f"reading the column types of {path} failed: {_condense(exc)}") from exc
    finally:
        reader.unregister(_SOURCE)
    return SourceTable(table, found.notes)


def _read_with(reader: duckdb.DuckDBPyConnection, sql: str, params: list, path: Path, kind: str) -> pa.Table:
    try:
        return reader.sql(sql, params=params).to_arrow_table()
    except duckdb.Error as exc:
        raise UserError(f"cannot read {path} as {kind}: {_condense(exc)}") from None


def _sniff_delimiter(header_line: str, suffix: str) -> str:
    if suffix == ".tsv":
        return "\t"
    counts = {delim: header_line.count(delim) for delim in (",", ";", "\t", "|")}
    best = max(counts, key=lambda delim: counts[delim])
    return best if counts[best] else ","


def _read_csv(
    reader: duckdb.DuckDBPyConnection, path: Path, types: dict[str, str], nulls: list[str]
) -> pa.Table:
    # utf-8-sig: a byte-order mark must not become part of the first column's name.
    with path.open(encoding="utf-8-sig", errors="replace", newline="") as handle:
        first = handle.readline()
    delim = _sniff_delimiter(first, path.suffix.lower())
    header = next(csv.reader([first], delimiter=delim), [])
    if not header or not any(name.strip() for name in header):
        raise UserError(f"file {path} has no header row; the first line must name the columns")
    blank = [index + 1 for index, name in enumerate(header) if not name.strip()]
    if blank:
        raise UserError(
            f"file {path}: header column(s) {blank} have no name; name every column in the first line"
        )
    pinned = {name: _csv_type(types[name.lower()]) for name in header if name.lower() in types}
    read = _CsvRead(reader, path, delim, nulls)
    try:
        try:
            return _read_csv_strictly(read, pinned)
        except (duckdb.ConversionException, duckdb.InvalidInputException) as exc:
            convert = _CONVERT.search(str(exc))
            if _LATE not in str(exc) and (not convert or convert.group(1) in pinned):
                raise
            # The sniffer typed a column from its sample and a later row disagrees: let it see
            # every row (slower, so only when needed).
            return read.arrow("SELECT * FROM {csv}", pinned, "sample_size=-1")
    except duckdb.Error as exc:
        raise UserError(_csv_error(path, delim, len(header), exc)) from None


@dataclass
class _CsvRead:
    """One CSV file and the reader options every read of it shares."""

    reader: duckdb.DuckDBPyConnection
    path: Path
    delim: str
    nulls: list[str]

    def arrow(self, sql: str, types: dict[str, str], extra: str = "") -> pa.Table:
        """Run ``sql`` with ``{csv}`` standing for ``read_csv(path, ...)`` with ``types`` pinned."""
        options = (
            "delim=?, header=true, quote='\"', escape='\"', strict_mode=true, null_padding=false, "
            "nullstr=?, auto_type_candidates=?"
        )
        params: list = [str(self.path), self.delim, self.nulls, _SNIFFED_TYPES]
        if types:
            options += ", types=?"
            params.append(types)
        if extra:
            options += ", " + extra
        return self.reader.sql(
            sql.replace("{csv}", f"read_csv(?, {options})"), params=params
        ).to_arrow_table()


def _read_csv_strictly(read: _CsvRead, pinned: dict[str, str]) -> pa.Table:
    """Read with the sniffer's types, but integer columns as text cast strictly: past its
    sample the CSV reader rounds 1.5 into a column it typed BIGINT and drops the zeros of 007
    (duckdb#25824). A value that is not a plain integer raises :data:`_LATE`."""
    sniffed = read.arrow("SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM {csv})", pinned)
    integers = {
        name: dtype
        for name, dtype in zip(sniffed.column(0).to_pylist(), sniffed.column(1).to_pylist(), strict=True)
        if dtype in ("BIGINT", "HUGEINT") and name not in pinned
    }
    if not integers:
        return read.arrow("SELECT * FROM {csv}", pinned)
    casts = ", ".join(
        f"CASE WHEN {quote_ident(name)} IS NULL THEN NULL "
        f"WHEN regexp_full_match({quote_ident(name)}, '{_PLAIN_INTEGER}') THEN CAST({quote_ident(name)} AS {dtype}) "
        f"ELSE error('{_LATE}') END AS {quote_ident(name)}"
        for name, dtype in integers.items()
    )
    return read.arrow(
        f"SELECT * REPLACE ({casts}) FROM {{csv}}", {**pinned, **dict.fromkeys(integers, "VARCHAR")}
    )


def _csv_type(dtype: str) -> str:
    """The type a dataset's column is read as from CSV: its own where the CSV reader's cast
    loses nothing (a wrong value is then reported at its line), else text for the merge's
    checks (the reader rounds 4.5 into an integer column) or for column_types (dates in
    more formats than the reader's one per file)."""
    if dtype.startswith(("DATE", "TIMESTAMP")):
        return "VARCHAR"
    if _NUMERIC.match(dtype) and dtype not in ("DOUBLE", "FLOAT"):
        return "VARCHAR"
    return dtype


_LINE = re.compile(r"CSV Error on Line: (\d+)")
_CONVERT = re.compile(r'Error when converting column "(.+?)"\. Could not convert string "(.*?)" to \'(.+?)\'')


def _csv_error(path: Path, delim: str, width: int, exc: duckdb.Error) -> str:
    text = str(exc)
    line = _LINE.search(text)
    convert = _CONVERT.search(text)
    if line and convert:
        column, value, dtype = convert.groups()
        return (
            f"{path} line {line.group(1)}: column {column} has {value!r}, which is not a {dtype}; "
            "fix the value (the dataset's column has that type)"
        )
    bad = _find_bad_row(path, delim, width)
    if bad:
        return bad
    if line:
        return f"{path} line {line.group(1)} is malformed: {_condense(exc)}"
    return f"cannot read {path} as CSV: {_condense(exc)}"


def _find_bad_row(path: Path, delim: str, width: int) -> str | None:
    """Locate the first row whose field count differs from the header's (the reader's
    sniffer often fails before it can say which line is wrong)."""
    with path.open(encoding="utf-8", errors="replace", newline="") as handle:
        rows = csv.reader(handle, delimiter=delim, strict=True)
        try:
            for row in rows:
                if rows.line_num > 1 and row and len(row) != width:
                    return (
                        f"{path} line {rows.line_num} has {len(row)} fields but the header has {width}; "
                        "fix that row (quote values that contain the delimiter)"
                    )
        except csv.Error as exc:
            return f"{path} line {rows.line_num} is malformed ({exc}); fix that row"
    return None


def _condense(exc: BaseException) -> str:
    """First meaningful line of a DuckDB error, without its 'X Error:' prefix."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    head = lines[0] if lines else type(exc).__name__
    return re.sub(r"^[A-Za-z ]*Error: ", "", head)


# --- merging -------------------------------------------------------------------------


def apply_ingest(
    conn: duckdb.DuckDBPyConnection,
    *,
    dataset: str,
    table: pa.Table,
    mode: str,
    key: str | None,
    evolve: bool,
    source: str,
    notes: dict[str, str] | None = None,
) -> IngestResult:
    """Merge ``table`` into ``dataset``; run inside the writer's transaction.

    Every check happens before the first write, and the caller's transaction makes the
    writes all-or-nothing. ``notes`` (column -> what reading the file found, from
    :func:`read_source`) go into the result's schema and into a wrong-type message. Raises
    ``UserError`` for schema mismatches (naming the missing, extra and mistyped columns),
    key problems and bad modes.
    """
    check_dataset_name(dataset)
    check_mode(mode, key)
    if table.num_rows == 0:
        raise UserError(f"nothing to ingest into {dataset}: the input has no rows")
    notes_by_lower = {name.lower(): note for name, note in (notes or {}).items()}
    conn.register(_INCOMING, table)
    try:
        result = _merge(conn, dataset, table.num_rows, mode, key, evolve, source, notes_by_lower)
        result.columns = [
            ColumnSchema(name=name, type=dtype, note=notes_by_lower.get(name.lower(), ""))
            for name, dtype in table_columns(conn, dataset)
        ]
        return result
    finally:
        # DuckDB 2 refuses unregister while a result is half-read (an early raise after fetchone).
        conn.complete()
        conn.unregister(_INCOMING)


def _merge(
    conn: duckdb.DuckDBPyConnection,
    dataset: str,
    rows_in: int,
    mode: str,
    key: str | None,
    evolve: bool,
    source: str,
    notes: dict[str, str],
) -> IngestResult:
    target = quote_ident(dataset)
    incoming = [
        (str(row[0]), str(row[1])) for row in conn.execute(f"DESCRIBE SELECT * FROM {_INCOMING}").fetchall()
    ]
    incoming_by_lower = {name.lower(): (name, dtype) for name, dtype in incoming}
    exists = table_exists(conn, dataset)
    _, recorded_key = catalog_key(conn, dataset)
    rows_before = _count(conn, target) if exists else 0

    if key is not None and key.lower() not in incoming_by_lower:
        raise UserError(
            f"key column {key!r} is not in the input; its columns are: {', '.join(name for name, _ in incoming)}"
        )
    if mode == "upsert" and exists and recorded_key and key and key.lower() != recorded_key.lower():
        raise UserError(f"dataset {dataset} is keyed by {recorded_key}; pass --key {recorded_key}")

    added: list[str] = []
    if not exists or mode == "replace":
        effective_key = key or (
            recorded_key if recorded_key and recorded_key.lower() in incoming_by_lower else None
        )
        if effective_key:
            _check_unique_key(conn, incoming_by_lower[effective_key.lower()][0], "the input")
        conn.execute(f"CREATE OR REPLACE TABLE {target} AS SELECT * FROM {_INCOMING}")
        if effective_key:
            effective_key = incoming_by_lower[effective_key.lower()][0]
    else:
        existing = table_columns(conn, dataset)
        added = _reconcile(conn, dataset, existing, incoming, mode, evolve, notes)
        existing = table_columns(conn, dataset)
        types = {name.lower(): dtype for name, dtype in existing}
        effective_key = key if mode == "upsert" else recorded_key
        if effective_key:
            effective_key = next(name for name, _ in existing if name.lower() == effective_key.lower())
            source_key = incoming_by_lower[effective_key.lower()][0]
            _check_unique_key(conn, source_key, "the input")
            cast_key = f"CAST({quote_ident(source_key)} AS {types[effective_key.lower()]})"
            if mode == "upsert":
                conn.execute(
                    f"DELETE FROM {target} WHERE {quote_ident(effective_key)} IN (SELECT {cast_key} FROM {_INCOMING})"
                )
            else:
                clash = conn.execute(
                    f"SELECT count(*), min({cast_key}) FROM {_INCOMING} "
                    f"WHERE {cast_key} IN (SELECT {quote_ident(effective_key)} FROM {target})"
                ).fetchone()
                if clash and clash[0]:
                    raise UserError(
                        f"{clash[0]} input row(s) have {effective_key} values already in {dataset} (e.g. {clash[1]}); "
                        f"use --mode upsert --key {effective_key} to update them"
                    )
        columns = ", ".join(quote_ident(name) for name, _ in incoming)
        selects = ", ".join(f"CAST({quote_ident(name)} AS {types[name.lower()]})" for name, _ in incoming)
        conn.execute(f"INSERT INTO {target} ({columns}) SELECT {selects} FROM {_INCOMING}")

    rows_after = _count(conn, target)
    record_ingest(
        conn,
        dataset=dataset,
        key=effective_key,
        source=source,
        mode=mode,
        rows_in=rows_in,
        rows_before=rows_before,
        rows_after=rows_after,
        added_columns=added,
    )
    return IngestResult(
        dataset=dataset,
        mode=mode,
        rows_in=rows_in,
        rows_before=rows_before,
        rows_after=rows_after,
        added_columns=added,
    )


def _count(conn: duckdb.DuckDBPyConnection, target: str) -> int:
    row = conn.execute(f"SELECT count(*) FROM {target}").fetchone()
    return int(row[0]) if row else 0


def _check_unique_key(conn: duckdb.DuckDBPyConnection, column: str, where: str) -> None:
    col = quote_ident(column)
    row = conn.execute(
        f"SELECT count(*) FILTER (WHERE {col} IS NULL), count({col}) - count(DISTINCT {col}) FROM {_INCOMING}"
    ).fetchone()
    nulls, duplicates = (int(row[0]), int(row[1])) if row else (0, 0)
    if nulls:
        raise UserError(f"key column {column} has {nulls} empty value(s) in {where}; every row needs a key")
    if duplicates:
        example = conn.execute(
            f"SELECT {col} FROM {_INCOMING} GROUP BY {col} HAVING count(*) > 1 ORDER BY {col} LIMIT 1"
        ).fetchone()
        raise UserError(
            f"key column {column} is not unique in {where}: {duplicates} repeated value(s), e.g. {example[0] if example else '?'}; "
            "each key may appear once"
        )


def _reconcile(
    conn: duckdb.DuckDBPyConnection,
    dataset: str,
    existing: list[tuple[str, str]],
    incoming: list[tuple[str, str]],
    mode: str,
    evolve: bool,
    notes: dict[str, str],
) -> list[str]:
    """Compare schemas; raise one ``UserError`` naming every problem, or evolve. Returns
    the columns added. ``notes`` (lower-case column -> note) say why a value is text."""
    existing_by_lower = {name.lower(): (name, dtype) for name, dtype in existing}
    incoming_lower = {name.lower() for name, _ in incoming}
    missing = [name for name, _ in existing if name.lower() not in incoming_lower]
    extra = [(name, dtype) for name, dtype in incoming if name.lower() not in existing_by_lower]
    mistyped = []
    for name, dtype in incoming:
        if name.lower() not in existing_by_lower:
            continue
        want = existing_by_lower[name.lower()][1]
        if dtype != want:
            bad = _first_unconvertible(conn, name, dtype, want)
            if bad is not None:
                why = f" ({notes[name.lower()]})" if name.lower() in notes else ""
                shown = repr(bad) if isinstance(bad, str) else str(bad)
                mistyped.append(
                    f"{name} is {want} in {dataset} but the input has {dtype} values such as {shown}{why}"
                )
    problems = []
    if missing:
        problems.append(f"the input lacks column(s) {', '.join(missing)}")
    if extra and not evolve:
        problems.append(
            f"the input has new column(s) {', '.join(name for name, _ in extra)} (pass --evolve to add them as nullable columns)"
        )
    if mistyped:
        problems.append("wrong type: " + "; ".join(mistyped))
    if problems:
        raise UserError(
            f"cannot {mode} into {dataset}: " + "; ".join(problems) + "; fix the input or use --mode replace"
        )
    for name, dtype in extra:
        conn.execute(f"ALTER TABLE {quote_ident(dataset)} ADD COLUMN {quote_ident(name)} {dtype}")
    return [name for name, _ in extra]


def _first_unconvertible(conn: duckdb.DuckDBPyConnection, column: str, have: str, want: str) -> object | None:
    """A value of ``column`` that does not survive conversion to ``want``, or None.

    Conversions must not round: 1.5 (or '1.5') into an INTEGER column would otherwise
    silently become 2, and 2012-01-01 10:00 into a DATE column 2012-01-01. Typed values
    must round-trip; text going into a number must keep its value as a DOUBLE.
    """
    col = quote_ident(column)
    converted = f"TRY_CAST({col} AS {want})"
    lost = f"{converted} IS NULL"
    if have == "VARCHAR" and _NUMERIC.match(want):
        lost += f" OR TRY_CAST({converted} AS DOUBLE) IS DISTINCT FROM TRY_CAST({col} AS DOUBLE)"
    elif have != "VARCHAR" and want != "VARCHAR":
        lost += f" OR CAST({converted} AS {have}) IS DISTINCT FROM {col}"
    row = conn.execute(
        f"SELECT {col} FROM {_INCOMING} WHERE {col} IS NOT NULL AND ({lost}) LIMIT 1"
    ).fetchone()
    return None if row is None else row[0]
