"""The lake's catalog: which tables are datasets, their keys, and every ingest into them.

Owns the internal tables ``_catalog`` and ``_ingest_history`` (their add-only migrations),
the dataset-name rule, and the read models :class:`DatasetInfo` / :class:`IngestRecord`.
It does not write rows itself outside the writer's transaction (``Lake.write`` calls
:func:`record_ingest`), and it does not know how files are read (``ingest``).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

import duckdb
from pydantic import BaseModel, Field

from agentlake.errors import NotFoundError, UserError
from agentlake.migrations import Migration

LAKE_MIGRATIONS: list[Migration] = [
    Migration(
        "lake_001_catalog",
        """
        CREATE TABLE _catalog (
            name VARCHAR PRIMARY KEY,
            key VARCHAR,
            created_at TIMESTAMP NOT NULL,
            updated_at TIMESTAMP NOT NULL
        );
        CREATE SEQUENCE _ingest_history_seq;
        CREATE TABLE _ingest_history (
            id BIGINT NOT NULL DEFAULT nextval('_ingest_history_seq'),
            dataset VARCHAR NOT NULL,
            "at" TIMESTAMP NOT NULL,
            source VARCHAR NOT NULL,
            mode VARCHAR NOT NULL,
            rows_in BIGINT NOT NULL,
            rows_before BIGINT NOT NULL,
            rows_after BIGINT NOT NULL,
            added_columns VARCHAR[] NOT NULL
        );
        """,
    ),
]

_NAME = re.compile(r"^[a-z_][a-z0-9_]*$")
MAX_NAME_CHARS = 63


def check_dataset_name(name: str) -> str:
    """Return ``name`` if it can name a dataset, else raise ``UserError`` saying the rule.

    A dataset is a DuckDB table, so the name is a plain lower-case identifier; names that
    start with ``_`` are reserved for the lake's internal tables.
    """
    if not isinstance(name, str) or not _NAME.match(name) or len(name) > MAX_NAME_CHARS:
        raise UserError(
            f"invalid dataset name {name!r}: use lower-case letters, digits and underscores, "
            f"starting with a letter (at most {MAX_NAME_CHARS} characters), e.g. 'workers'"
        )
    if name.startswith("_"):
        raise UserError(
            f"invalid dataset name {name!r}: names starting with '_' are reserved for internal tables"
        )
    return name


def quote_ident(name: str) -> str:
    """Quote an identifier for DuckDB (column names in user files may be anything)."""
    return '"' + name.replace('"', '""') + '"'


def utc_now() -> datetime:
    """Naive UTC 'now', the form stored in the catalog's TIMESTAMP columns."""
    return datetime.now(UTC).replace(tzinfo=None)


def _aware(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


class IngestRecord(BaseModel):
    """One ingest into a dataset, as kept in ``_ingest_history``."""

    at: datetime
    source: str = Field(description="File path, or 'library'/'generator' for writes from code.")
    mode: str
    rows_in: int
    rows_before: int
    rows_after: int
    added_columns: list[str] = Field(default_factory=list)


class DatasetInfo(BaseModel):
    """A dataset as the catalog shows it: schema, size, key, times and ingest history."""

    name: str
    columns: list[tuple[str, str]]
    row_count: int
    key: str | None
    created_at: datetime
    updated_at: datetime
    history: list[IngestRecord]
    source: str | None = Field(
        None,
        description="The external source the table is read from (`agentlake sources`); None: the lake's own.",
    )


def table_exists(conn: duckdb.DuckDBPyConnection, name: str) -> bool:
    """Whether the main schema has table ``name``. The result is fetched to the end, so the
    cursor stays usable for the caller's next statement."""
    return bool(
        conn.execute(
            "SELECT 1 FROM duckdb_tables() WHERE schema_name = 'main' AND table_name = ?", [name]
        ).fetchall()
    )


def table_columns(conn: duckdb.DuckDBPyConnection, name: str) -> list[tuple[str, str]]:
    """(column, type) pairs of a main-schema table, in table order."""
    rows = conn.execute(
        "SELECT column_name, data_type FROM duckdb_columns() "
        "WHERE schema_name = 'main' AND table_name = ? ORDER BY column_index",
        [name],
    ).fetchall()
    return [(str(column), str(dtype)) for column, dtype in rows]


def catalog_key(conn: duckdb.DuckDBPyConnection, name: str) -> tuple[bool, str | None]:
    """(is registered, key column) for a dataset name."""
    row = conn.execute("SELECT key FROM _catalog WHERE name = ?", [name]).fetchone()
    return (row is not None, row[0] if row else None)


def record_ingest(
    conn: duckdb.DuckDBPyConnection,
    *,
    dataset: str,
    key: str | None,
    source: str,
    mode: str,
    rows_in: int,
    rows_before: int,
    rows_after: int,
    added_columns: list[str],
) -> None:
    """Register/refresh the dataset in ``_catalog`` and append its history row.

    Must run inside the writer's transaction so the catalog and the data change together.
    """
    now = utc_now()
    registered, _ = catalog_key(conn, dataset)
    if registered:
        conn.execute("UPDATE _catalog SET key = ?, updated_at = ? WHERE name = ?", [key, now, dataset])
    else:
        conn.execute(
            "INSERT INTO _catalog (name, key, created_at, updated_at) VALUES (?, ?, ?, ?)",
            [dataset, key, now, now],
        )
    conn.execute(
        'INSERT INTO _ingest_history (dataset, "at", source, mode, rows_in, rows_before, rows_after, added_columns) '
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [dataset, now, source, mode, rows_in, rows_before, rows_after, added_columns],
    )


def list_datasets(conn: duckdb.DuckDBPyConnection) -> list[DatasetInfo]:
    """Every registered dataset whose table exists, by name."""
    names = [
        row[0]
        for row in conn.execute(
            "SELECT c.name FROM _catalog c JOIN duckdb_tables() t ON t.schema_name = 'main' AND t.table_name = c.name "
            "ORDER BY c.name"
        ).fetchall()
    ]
    return [describe_dataset(conn, name) for name in names]


def unknown_dataset(name: str, known: list[str]) -> NotFoundError:
    """The error for a dataset name that is not in the catalog, listing the known ones."""
    if known:
        hint = f"known datasets: {', '.join(known)}"
    else:
        hint = "the lake has no datasets yet: run `agentlake ingest FILE --dataset NAME` or `agentlake data generate`"
    return NotFoundError(f"unknown dataset {name!r}; {hint}")


def describe_dataset(conn: duckdb.DuckDBPyConnection, name: str) -> DatasetInfo:
    """The catalog entry of one dataset; ``NotFoundError`` listing the known ones otherwise."""
    row = conn.execute("SELECT key, created_at, updated_at FROM _catalog WHERE name = ?", [name]).fetchone()
    if row is None or not table_exists(conn, name):
        known = [r[0] for r in conn.execute("SELECT name FROM _catalog ORDER BY name").fetchall()]
        raise unknown_dataset(name, known)
    key, created_at, updated_at = row
    count_row = conn.execute(f"SELECT count(*) FROM {quote_ident(name)}").fetchone()
    history = [
        IngestRecord(
            at=_aware(at),
            source=source,
            mode=mode,
            rows_in=rows_in,
            rows_before=rows_before,
            rows_after=rows_after,
            added_columns=list(added or []),
        )
        for at, source, mode, rows_in, rows_before, rows_after, added in conn.execute(
            'SELECT "at", source, mode, rows_in, rows_before, rows_after, added_columns FROM _ingest_history '
            "WHERE dataset = ? ORDER BY id",
            [name],
        ).fetchall()
    ]
    return DatasetInfo(
        name=name,
        columns=table_columns(conn, name),
        row_count=int(count_row[0]) if count_row else 0,
        key=key,
        created_at=_aware(created_at),
        updated_at=_aware(updated_at),
        history=history,
    )
