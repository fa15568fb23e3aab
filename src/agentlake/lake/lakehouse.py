"""``Lake``: the one owner of the lakehouse DuckDB file.

Owns the read-write connection (THE writer: every write goes through :meth:`Lake.write`,
serialized by a per-file lock, one transaction each), read cursors for library code, the
guarded read-only :meth:`Lake.query` (capped in rows and bytes, interrupted on timeout),
:meth:`Lake.bounded`, the one read path for SQL that carries user-written parts (the guarded
query, search filters, lesson filters: all under ``sql_timeout_s``), and the entry points
for ingest. The connection runs under ``duckdb_memory_limit``. It does not parse files
(``ingest``), decide what SQL is safe (``guard``) or define the catalog schema (``catalog``).

The database runs with external access disabled: no SQL run through the lake can read or
write files, URLs or Python variables. Library code that needs an Arrow table inside SQL
registers it on the connection it was given (``conn.register(name, table)``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import duckdb
from pydantic import BaseModel

from agentlake.errors import NotFoundError, RunError, UnavailableError, UserError
from agentlake.lake import catalog
from agentlake.lake.bounds import error_line, fit_rows, watched
from agentlake.lake.catalog import DatasetInfo
from agentlake.lake.guard import check_select
from agentlake.lake.ingest import IngestResult, apply_ingest, check_mode, read_source
from agentlake.lake.sources import Routed, SourceRegistry, sources_path
from agentlake.migrations import Migration, apply_migrations
from agentlake.serving import held_by
from agentlake.settings import Settings, load_settings

if TYPE_CHECKING:
    import pyarrow as pa

T = TypeVar("T")

# Every migration of the lake file in release order: append new ones, never edit or reorder
# released ones. The catalog's tables come first. Then the search tables, read and written by
# ``agentlake.embed.cache`` (``_embedding_cache``: one vector per embedder and text hash) and
# ``agentlake.lake.index`` (``_vector_indexes``: one row per indexed dataset). Lakes written
# before these two migrations existed created both tables on first use, with these columns:
# IF NOT EXISTS lets such a lake record the migration and keep its rows.
LAKE_MIGRATIONS: list[Migration] = [
    *catalog.LAKE_MIGRATIONS,
    Migration(
        "lake_002_embedding_cache",
        """
        CREATE TABLE IF NOT EXISTS _embedding_cache (
            model VARCHAR NOT NULL,
            text_hash VARCHAR NOT NULL,
            vec FLOAT[] NOT NULL,
            PRIMARY KEY (model, text_hash)
        );
        """,
    ),
    Migration(
        "lake_003_vector_indexes",
        """
        CREATE TABLE IF NOT EXISTS _vector_indexes (
            dataset VARCHAR PRIMARY KEY,
            text_column VARCHAR NOT NULL,
            key_column VARCHAR NOT NULL,
            model VARCHAR NOT NULL,
            dimension INTEGER NOT NULL,
            row_count BIGINT NOT NULL,
            fingerprint VARCHAR NOT NULL,
            dataset_updated_at TIMESTAMP,
            built_at TIMESTAMP NOT NULL
        );
        """,
    ),
]

# One lock per lake file in this process: two Lake objects on one file share DuckDB's
# cached database instance, so they must also share the writer's serialization.
_file_locks: dict[Path, threading.RLock] = {}
_file_locks_guard = threading.Lock()
# Bumped when this process opens a lake file or commits a write to it. While a Lake is open,
# DuckDB's file lock keeps other processes from writing, so an unchanged token means an
# unchanged file (the vector index uses it to skip re-reading the catalog on every search).
_change_tokens: dict[Path, int] = {}


def _bump_change_token(path: Path) -> None:
    with _file_locks_guard:
        _change_tokens[path] = _change_tokens.get(path, 0) + 1


# Errors that mean "your query is wrong", as opposed to "running it failed" (also how the
# search's WHERE fragments are judged).
QUERY_USER_ERRORS: tuple[type[duckdb.Error], ...] = (
    duckdb.ParserException,
    duckdb.BinderException,
    duckdb.CatalogException,
    duckdb.ConversionException,
    duckdb.InvalidInputException,
    duckdb.PermissionException,
)


def _lock_for(path: Path) -> threading.RLock:
    with _file_locks_guard:
        return _file_locks.setdefault(path, threading.RLock())


class QueryResult(BaseModel):
    """Rows of a guarded query; ``truncated`` when more rows existed than the cap, or the rows
    were cut at the byte cap."""

    columns: list[str]
    rows: list[list[Any]]
    truncated: bool
    elapsed_ms: float

    def to_dicts(self) -> list[dict[str, Any]]:
        """Rows as ``{column: value}`` dicts, in column order."""
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]


class Lake:
    """The lakehouse: one DuckDB file, one writer, many readers. Use as a context manager."""

    def __init__(
        self, conn: duckdb.DuckDBPyConnection, path: Path, settings: Settings, read_only: bool
    ) -> None:
        self._conn = conn
        self.path = path
        self.settings = settings
        self.read_only = read_only
        self._lock = _lock_for(path)
        self._local = threading.local()
        self._closed = False
        # External read-only sources (PostgreSQL, SQLite) read beside the lake's own datasets.
        self.sources = SourceRegistry(sources_path(path))

    @classmethod
    def open(
        cls, settings: Settings | None = None, *, path: Path | None = None, read_only: bool = False
    ) -> Lake:
        """Open (creating if needed) the lake file and apply its migrations (:data:`LAKE_MIGRATIONS`).

        ``path`` defaults to ``settings.lake_path``. ``read_only`` opens an existing file
        without taking the write lock (several processes may read at once); it raises
        ``NotFoundError`` if there is no lake yet. Raises ``UnavailableError`` when another
        process holds the file.
        """
        settings = settings or load_settings()
        target = Path(path) if path is not None else settings.lake_path
        target = target.expanduser().resolve()
        if read_only and not target.exists():
            raise NotFoundError(
                f"no lake at {target} yet: create it with `agentlake data generate` or `agentlake ingest FILE --dataset NAME`"
            )
        if not read_only:
            target.parent.mkdir(parents=True, exist_ok=True)
        config: dict[str, Any] = {
            "threads": settings.duckdb_threads,
            "memory_limit": settings.duckdb_memory_limit.replace(" ", ""),
            "enable_external_access": False,
            "autoinstall_known_extensions": False,
            "autoload_known_extensions": False,
        }
        try:
            conn = duckdb.connect(str(target), read_only=read_only, config=config)
        except duckdb.IOException as exc:
            text = str(exc)
            if "lock" in text.lower():
                raise UnavailableError(
                    held_by(target, "the lake file")
                    or f"the lake file {target} is in use by another process; stop it or wait and retry ({text.splitlines()[0]})"
                ) from None
            raise RunError(f"cannot open the lake file {target}: {text.splitlines()[0]}") from None
        except duckdb.ConnectionException as exc:
            raise RunError(
                f"cannot open {target} {'read-only' if read_only else 'read-write'}: this process already has it open "
                f"the other way ({str(exc).splitlines()[0]}); reuse that Lake"
            ) from None
        except duckdb.Error as exc:
            raise RunError(f"cannot open the lake file {target}: {str(exc).splitlines()[0]}") from None
        lake = cls(conn, target, settings, read_only)
        _bump_change_token(target)
        if not read_only:
            with lake._lock:
                apply_migrations(conn, LAKE_MIGRATIONS)
        return lake

    # --- lifecycle -------------------------------------------------------------------

    def close(self) -> None:
        """Close the writer connection (cursors from :meth:`cursor` stop working)."""
        if not self._closed:
            self._closed = True
            with self._lock:
                self._conn.close()

    def __enter__(self) -> Lake:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def change_token(self) -> int:
        """Changes whenever this process opens this lake file or commits a write to it; while
        it is unchanged the file is unchanged (no other process can write while it is open)."""
        return _change_tokens.get(self.path, 0)

    def _check_open(self) -> None:
        if self._closed:
            raise RunError(f"the lake {self.path} is closed; open it again with Lake.open()")

    # --- writes ----------------------------------------------------------------------

    def write(self, fn: Callable[[duckdb.DuckDBPyConnection], T]) -> T:
        """Run ``fn(conn)`` on the writer inside one transaction, serialized with all writes.

        Commits when ``fn`` returns, rolls back when it raises. ``UserError``/``RunError``
        pass through; DuckDB errors become ``RunError`` (the original is ``__cause__``).
        A ``write`` inside ``fn`` (same thread) joins the outer transaction.
        """
        self._check_open()
        if self.read_only:
            raise UserError(
                f"the lake {self.path} was opened read-only; open it with read_only=False to write"
            )
        if getattr(self._local, "depth", 0):
            return fn(self._conn)
        with self._lock:
            self._local.depth = 1
            try:
                self._conn.execute("BEGIN TRANSACTION")
                try:
                    result = fn(self._conn)
                    self._conn.complete()  # run a pending statement of fn to its end before COMMIT
                    self._conn.execute("COMMIT")
                    _bump_change_token(self.path)
                except BaseException:
                    self._roll_back()
                    raise
                return result
            except duckdb.Error as exc:
                raise RunError(f"lake write failed: {str(exc).splitlines()[0]}") from exc
            finally:
                self._local.depth = 0

    def _roll_back(self) -> None:
        # Best effort: after a failed COMMIT DuckDB has already ended the transaction, and the
        # writer must never be left inside one, or every later write() fails at BEGIN.
        for step in (self._conn.abort, lambda: self._conn.execute("ROLLBACK")):
            try:
                step()
            except duckdb.Error:
                pass

    def ingest(
        self,
        source: Path | str,
        dataset: str,
        *,
        mode: Literal["append", "replace", "upsert"] = "append",
        key: str | None = None,
        evolve: bool = False,
        nulls: Sequence[str] = (),
    ) -> IngestResult:
        """Load a CSV, Parquet or JSONL file into ``dataset``, atomically.

        ``append`` (default) adds rows, refusing a schema mismatch unless ``evolve`` adds the
        new columns; ``replace`` swaps the whole dataset; ``upsert`` replaces rows whose
        ``key`` matches and adds the rest. An existing dataset keeps its column types. Text
        fields equal to ``NA``, ``N/A``, ``null``, ``NULL``, ``NaN``, empty or one of ``nulls``
        are missing values. The result lists the dataset's columns afterwards, with a note
        for each column kept as text (:func:`~agentlake.lake.ingest.read_source`). Every
        ingest is recorded in the history. Raises ``UserError`` for bad input; nothing is
        written then.
        """
        catalog.check_dataset_name(dataset)
        check_mode(mode, key)
        self._check_open()
        types: dict[str, str] = {}
        if mode != "replace":
            with self.cursor() as cur:
                if catalog.table_exists(cur, dataset):
                    types = {name.lower(): dtype for name, dtype in catalog.table_columns(cur, dataset)}
        read = read_source(source, types=types, nulls=nulls, threads=self.settings.duckdb_threads)
        label = str(Path(source).expanduser().resolve())
        return self.write_table(
            dataset, read.table, mode=mode, key=key, evolve=evolve, source=label, notes=read.notes
        )

    def write_table(
        self,
        dataset: str,
        table: pa.Table,
        *,
        mode: Literal["append", "replace", "upsert"] = "append",
        key: str | None = None,
        evolve: bool = False,
        source: str = "library",
        notes: dict[str, str] | None = None,
    ) -> IngestResult:
        """Same as :meth:`ingest`, from an Arrow table already in memory (``source`` labels
        the history row; ``notes``, column -> note, go into the result's schema)."""
        return self.write(
            lambda conn: apply_ingest(
                conn,
                dataset=dataset,
                table=table,
                mode=mode,
                key=key,
                evolve=evolve,
                source=source,
                notes=notes,
            )
        )

    # --- reads -----------------------------------------------------------------------

    def cursor(self) -> duckdb.DuckDBPyConnection:
        """A new read cursor for library code; one per thread. Close it when done."""
        self._check_open()
        return self._conn.cursor()

    def datasets(self, *, sources: bool = True) -> list[DatasetInfo]:
        """Every dataset in the catalog, by name, then (``sources``) every external source's
        tables as ``NAME.table`` (``DatasetInfo.source`` set)."""
        with self.cursor() as cur:
            own = catalog.list_datasets(cur) if catalog.table_exists(cur, "_catalog") else []
        return own + self.sources.datasets() if sources else own

    def dataset(self, name: str) -> DatasetInfo:
        """One dataset's catalog entry (a source's table too, by ``NAME.table``);
        ``NotFoundError`` listing the known datasets."""
        external = self.sources.dataset(name) if "." in name else None
        if external is not None:
            return external
        with self.cursor() as cur:
            if not catalog.table_exists(cur, "_catalog"):
                raise catalog.unknown_dataset(name, [])
            return catalog.describe_dataset(cur, name)

    def read_arrow(self, sql: str, params: list | None = None) -> pa.Table:
        """Run trusted library SQL and return every row as Arrow: no guard, no cap."""
        with self.cursor() as cur:
            try:
                return cur.sql(sql, params=params or None).to_arrow_table()
            except duckdb.Error as exc:
                raise RunError(f"lake read failed: {str(exc).splitlines()[0]} (sql: {sql[:200]})") from exc

    @contextmanager
    def bounded(
        self, *, timeout_s: float | None = None, what: str = "the query"
    ) -> Iterator[duckdb.DuckDBPyConnection]:
        """A read cursor for SQL with user-written parts, interrupted after ``timeout_s``
        (``sql_timeout_s``); closed at the end of the block.

        Raises ``RunError`` naming the setting to raise when the timeout interrupts the query
        or it needs more than ``duckdb_memory_limit``; other DuckDB errors pass through.
        """
        timeout = timeout_s if timeout_s is not None else self.settings.sql_timeout_s
        with watched(
            self.cursor(), timeout, what=what, memory_limit=self.settings.duckdb_memory_limit
        ) as cur:
            yield cur

    def read_bounded(
        self, sql: str, params: list | dict | None = None, *, what: str = "the query"
    ) -> pa.Table:
        """Library SQL that splices in a checked user fragment (a lesson's filter), as Arrow:
        every row, but under the timeout and memory limit of :meth:`bounded`. DuckDB errors
        other than those pass through."""
        with self.bounded(what=what) as cur:
            return cur.sql(sql, params=params or None).to_arrow_table()

    def query(
        self,
        sql: str,
        *,
        params: list | None = None,
        max_rows: int | None = None,
        timeout_s: float | None = None,
    ) -> QueryResult:
        """Run one guarded read-only query: at most ``max_rows`` rows (``sql_max_rows``) and
        about ``sql_max_result_bytes`` bytes, interrupted after ``timeout_s`` (``sql_timeout_s``).

        A query naming an external source's tables (``NAME.table``) runs at that source,
        read-only, under the same guard, caps and timeout (``agentlake.lake.sources``).

        Raises ``UserError`` for refused or wrong SQL (syntax, unknown table or column,
        bad cast), ``RunError`` when the timeout interrupts it, it runs out of the memory
        limit or execution fails. DuckDB's text in messages is cut short.
        """
        limit = max_rows if max_rows is not None else self.settings.sql_max_rows
        if limit < 0:
            raise UserError("max_rows must be >= 0")
        routed = self.sources.route(sql)
        if routed is not None:
            return self._query_source(routed, limit, timeout_s)
        checked = check_select(sql)
        started = time.perf_counter()
        try:
            with self.bounded(timeout_s=timeout_s) as cur:
                cur.execute(checked, params or [])
                columns = [str(column[0]) for column in (cur.description or [])]
                fetched = cur.fetchmany(limit + 1)
        except QUERY_USER_ERRORS as exc:
            raise UserError(f"query failed: {error_line(exc)}; fix the query") from None
        except duckdb.Error as exc:
            raise RunError(f"query failed while running: {error_line(exc)}") from exc
        rows, cut = fit_rows(fetched[:limit], self.settings.sql_max_result_bytes)
        elapsed_ms = (time.perf_counter() - started) * 1000
        return QueryResult(
            columns=columns,
            rows=rows,
            truncated=len(fetched) > limit or cut,
            elapsed_ms=round(elapsed_ms, 3),
        )

    def _query_source(self, routed: Routed, limit: int, timeout_s: float | None) -> QueryResult:
        started = time.perf_counter()
        columns, fetched = self.sources.run(
            routed,
            max_rows=limit,
            timeout_s=timeout_s if timeout_s is not None else self.settings.sql_timeout_s,
        )
        rows, cut = fit_rows(fetched[:limit], self.settings.sql_max_result_bytes)
        return QueryResult(
            columns=columns,
            rows=rows,
            truncated=len(fetched) > limit or cut,
            elapsed_ms=round((time.perf_counter() - started) * 1000, 3),
        )
