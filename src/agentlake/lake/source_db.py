"""The two kinds of external source a lake reads: a PostgreSQL database and a SQLite file.

Owns connecting to each (PostgreSQL through psycopg, the ``[postgres]`` extra; SQLite through
the standard library), listing the tables a source shows (with column types in the lake's
words: ``VARCHAR``, ``BIGINT``, ``DATE``...) and running one query read-only: PostgreSQL in a
``READ ONLY`` transaction under ``statement_timeout`` through a server-side cursor (only the
rows asked for cross the wire), SQLite opened ``mode=ro`` with ``query_only`` and a progress
handler that interrupts it at the deadline. Errors are converted here: wrong SQL is a
``UserError``, a timeout a ``RunError`` naming ``sql_timeout_s``, an unreachable server an
``UnavailableError``; none of them carries the source's password.

It does not decide which queries may run (``guard``, ``sources``) nor cap result bytes
(``bounds``), and it keeps no connection between queries.
"""

from __future__ import annotations

import sqlite3
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

from agentlake.errors import RunError, UnavailableError, UserError, require_extra
from agentlake.lake.bounds import error_line

# Tables a source shows at most (a production database may hold thousands; the catalog a model
# reads must stay short).
MAX_SOURCE_TABLES = 200
# How long counting one table's rows may take while listing; past it the planner's estimate.
COUNT_TIMEOUT_S = 2.0
CONNECT_TIMEOUT_S = 5
_TIMEOUT_HINT = "narrow it (filter, LIMIT) or raise sql_timeout_s (AGENTLAKE_SQL_TIMEOUT_S)"

# PostgreSQL's type names (information_schema's data_type) in the lake's words.
_PG_TYPES = {
    "smallint": "SMALLINT",
    "integer": "INTEGER",
    "bigint": "BIGINT",
    "numeric": "DECIMAL",
    "real": "FLOAT",
    "double precision": "DOUBLE",
    "boolean": "BOOLEAN",
    "text": "VARCHAR",
    "character varying": "VARCHAR",
    "character": "VARCHAR",
    "date": "DATE",
    "timestamp without time zone": "TIMESTAMP",
    "timestamp with time zone": "TIMESTAMP WITH TIME ZONE",
    "time without time zone": "TIME",
    "uuid": "UUID",
    "json": "JSON",
    "jsonb": "JSON",
    "bytea": "BLOB",
    "interval": "INTERVAL",
}


@dataclass(frozen=True)
class SourceTable:
    """One table of a source: its name there (``schema.table`` or ``table``), columns in the
    lake's type words, and its row count (the planner's estimate when counting took too long)."""

    name: str
    columns: list[tuple[str, str]]
    row_count: int


class SourceDB(Protocol):
    """A source's database: list its tables, run one read-only query."""

    dialect: str  # sqlglot's name of its SQL dialect

    def tables(self) -> list[SourceTable]: ...

    def run(self, sql: str, *, max_rows: int, timeout_s: float) -> tuple[list[str], list[Sequence[Any]]]:
        """Columns and at most ``max_rows`` + 1 rows of ``sql`` (one more tells a cut)."""
        ...


def redact(url: str) -> str:
    """``url`` with its password replaced by ``***`` (for messages and listings)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return parts._replace(netloc=netloc).geturl()


def _scrubbed(text: str, secret: str | None) -> str:
    return text.replace(secret, "***") if secret else text


class PostgresDB:
    """A PostgreSQL database given by a ``postgresql://`` URL."""

    dialect = "postgres"

    def __init__(self, name: str, url: str) -> None:
        require_extra("postgres", "a PostgreSQL source", "psycopg")
        self.name = name
        self.url = url
        self._secret = urlsplit(url).password
        from agentlake.postgres import where

        self.where = where(url)

    def _connect(self) -> Any:
        import psycopg

        try:
            return psycopg.connect(self.url, connect_timeout=CONNECT_TIMEOUT_S, autocommit=False)
        except psycopg.Error as exc:
            reason = _scrubbed(error_line(exc), self._secret)
            raise UnavailableError(
                f"source {self.name} (PostgreSQL at {self.where}) cannot be reached: {reason}",
                retry_after=5.0,
            ) from None

    def tables(self) -> list[SourceTable]:
        import psycopg

        columns: dict[str, list[tuple[str, str]]] = {}
        with self._connect() as conn:
            conn.read_only = True
            rows = conn.execute(
                "SELECT c.table_schema, c.table_name, c.column_name, c.data_type "
                "FROM information_schema.columns c JOIN information_schema.tables t "
                "ON t.table_schema = c.table_schema AND t.table_name = c.table_name "
                "WHERE c.table_schema NOT IN ('pg_catalog', 'information_schema') "
                "AND c.table_schema NOT LIKE 'pg\\_%' AND t.table_type IN ('BASE TABLE', 'VIEW') "
                "ORDER BY c.table_schema <> 'public', c.table_schema, c.table_name, c.ordinal_position"
            ).fetchall()
            for schema, table, column, kind in rows:
                name = table if schema == "public" else f"{schema}.{table}"
                if name in columns or len(columns) < MAX_SOURCE_TABLES:
                    columns.setdefault(name, []).append((column, _PG_TYPES.get(kind, kind.upper())))
            found = []
            for name, cols in columns.items():
                quoted = ".".join('"' + part.replace('"', '""') + '"' for part in name.split(".", 1))
                try:
                    with conn.transaction():
                        conn.execute(f"SET LOCAL statement_timeout = {int(COUNT_TIMEOUT_S * 1000)}")
                        count = conn.execute(f"SELECT count(*) FROM {quoted}").fetchone()[0]
                except psycopg.Error:
                    count = conn.execute(
                        "SELECT greatest(reltuples, 0)::bigint FROM pg_class WHERE oid = to_regclass(%s)",
                        [quoted],
                    ).fetchone()
                    count = count[0] if count and count[0] is not None else 0
                found.append(SourceTable(name, cols, int(count)))
            conn.rollback()
        return found

    def run(self, sql: str, *, max_rows: int, timeout_s: float) -> tuple[list[str], list[Sequence[Any]]]:
        import psycopg
        from psycopg import errors

        with self._connect() as conn:
            conn.read_only = True  # BEGIN READ ONLY: nothing the query calls can write
            try:
                conn.execute(f"SET LOCAL statement_timeout = {max(1, int(timeout_s * 1000))}")
                # A server-side cursor: only the rows fetched leave the server.
                with conn.cursor(name=f"agentlake_{uuid.uuid4().hex[:12]}") as cur:
                    cur.execute(sql)
                    fetched = cur.fetchmany(max_rows + 1)
                    columns = [str(column.name) for column in (cur.description or [])]
            except errors.QueryCanceled:
                raise RunError(
                    f"the query on source {self.name} was interrupted after the {timeout_s:g} s timeout; {_TIMEOUT_HINT}"
                ) from None
            except errors.ReadOnlySqlTransaction as exc:
                raise UserError(
                    f"source {self.name} is read-only here: {self._line(exc)}; only reads may run"
                ) from None
            except psycopg.OperationalError as exc:
                raise UnavailableError(
                    f"source {self.name} (PostgreSQL at {self.where}) failed: {self._line(exc)}",
                    retry_after=5.0,
                ) from None
            except psycopg.Error as exc:
                state = getattr(exc, "sqlstate", None) or ""
                if state[:2] in ("42", "22", "21", "0A", "2F", "38", "39"):
                    raise UserError(
                        f"query failed on source {self.name}: {self._line(exc)}; fix the query"
                    ) from None
                raise RunError(f"query failed on source {self.name}: {self._line(exc)}") from None
            finally:
                conn.rollback()
        return columns, fetched

    def _line(self, exc: BaseException) -> str:
        return _scrubbed(error_line(exc), self._secret)


_SQLITE_TYPES = (
    ("INT", "BIGINT"),
    ("CHAR", "VARCHAR"),
    ("TEXT", "VARCHAR"),
    ("CLOB", "VARCHAR"),
    ("REAL", "DOUBLE"),
    ("FLOA", "DOUBLE"),
    ("DOUB", "DOUBLE"),
    ("NUMERIC", "DECIMAL"),
    ("DECIMAL", "DECIMAL"),
    ("BOOL", "BOOLEAN"),
    ("TIMESTAMP", "TIMESTAMP"),
    ("DATETIME", "TIMESTAMP"),
    ("DATE", "DATE"),
    ("BLOB", "BLOB"),
)


def _sqlite_type(declared: str) -> str:
    upper = (declared or "").upper()
    return next((lake for part, lake in _SQLITE_TYPES if part in upper), "VARCHAR")


class SQLiteDB:
    """A SQLite file, opened read-only for each query."""

    dialect = "sqlite"

    def __init__(self, name: str, path: str) -> None:
        self.name = name
        self.path = Path(path)

    def _connect(self) -> sqlite3.Connection:
        if not self.path.is_file():
            raise UnavailableError(
                f"source {self.name}: the SQLite file {self.path} is gone", retry_after=5.0
            )
        try:
            conn = sqlite3.connect(f"{self.path.as_uri()}?mode=ro", uri=True, check_same_thread=False)
            conn.execute("PRAGMA query_only = ON")
        except sqlite3.Error as exc:
            raise UnavailableError(
                f"source {self.name}: cannot open {self.path} ({exc})", retry_after=5.0
            ) from None
        return conn

    def tables(self) -> list[SourceTable]:
        conn = self._connect()
        try:
            names = [
                row[0]
                for row in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') "
                    "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name"
                ).fetchall()
            ][:MAX_SOURCE_TABLES]
            found = []
            for name in names:
                quoted = '"' + name.replace('"', '""') + '"'
                columns = [
                    (str(row[1]), _sqlite_type(row[2]))
                    for row in conn.execute(f"PRAGMA table_info({quoted})")
                ]
                count = conn.execute(f"SELECT count(*) FROM {quoted}").fetchone()[0]
                found.append(SourceTable(name, columns, int(count)))
            return found
        finally:
            conn.close()

    def run(self, sql: str, *, max_rows: int, timeout_s: float) -> tuple[list[str], list[Sequence[Any]]]:
        conn = self._connect()
        deadline = time.monotonic() + timeout_s
        conn.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
        try:
            cur = conn.execute(sql)
            fetched = cur.fetchmany(max_rows + 1)
            columns = [str(column[0]) for column in (cur.description or [])]
        except sqlite3.OperationalError as exc:
            if "interrupted" in str(exc):
                raise RunError(
                    f"the query on source {self.name} was interrupted after the {timeout_s:g} s timeout; {_TIMEOUT_HINT}"
                ) from None
            if "readonly" in str(exc) or "read-only" in str(exc):
                raise UserError(
                    f"source {self.name} is read-only here: {error_line(exc)}; only reads may run"
                ) from None
            raise UserError(f"query failed on source {self.name}: {error_line(exc)}; fix the query") from None
        except sqlite3.Error as exc:
            raise RunError(f"query failed on source {self.name}: {error_line(exc)}") from None
        finally:
            conn.close()
        return columns, fetched


def open_source_db(name: str, kind: str, target: str) -> SourceDB:
    """The database of a registered source (``kind``: ``postgresql`` or ``sqlite``)."""
    if kind == "postgresql":
        return PostgresDB(name, target)
    if kind == "sqlite":
        return SQLiteDB(name, target)
    raise UserError(f"source {name} has an unknown kind {kind!r}; remove it and add it again")
