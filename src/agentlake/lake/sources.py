"""External read-only sources: PostgreSQL databases and SQLite files a lake reads in place.

Owns the registry of a lake's sources (``agentlake sources add NAME URL|FILE``: a JSON file
beside the lake file, readable by its owner only, re-read when another process changes it),
their tables as catalog entries named ``NAME.table`` (``NAME.schema.table`` outside
PostgreSQL's ``public`` schema; listed once a minute at most) and the routing of a query:
a query that names a source's tables is checked by the lake's guard, rewritten for the
source's own SQL (sqlglot: the lake's DuckDB dialect in, PostgreSQL's or SQLite's out, the
``NAME.`` prefix dropped) and run there read-only (``source_db``). A query reads the lake or
one source, never both. Functions that reach the server rather than the data (``pg_*``,
``dblink``, ``set_config``, ``query_to_xml``, SQLite's ``load_extension``...) are refused.

A source's URL (with its password, when it has one) lives only in the registry file; every
listing, message and catalog entry shows it with the password as ``***``. A password may stay
out of the URL altogether: libpq reads ``PGPASSWORD`` and ``~/.pgpass``.
"""

from __future__ import annotations

import builtins
import hashlib
import json
import logging
import os
import re
import threading
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentlake.errors import NotFoundError, UserError
from agentlake.lake.catalog import DatasetInfo
from agentlake.lake.guard import check_select
from agentlake.lake.source_db import SourceDB, SourceTable, open_source_db, redact

if TYPE_CHECKING:
    from sqlglot import exp

log = logging.getLogger(__name__)

# How long a source's table list is kept before it is read again.
CATALOG_TTL_S = 60.0
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,30}$")
# Names DuckDB's parser or PostgreSQL give a meaning in a qualified table name.
_RESERVED = frozenset({"main", "temp", "system", "information_schema", "pg_catalog", "public", "memory"})
# Functions that show or touch the server rather than read the data.
_SERVER_PREFIXES = ("pg_", "lo_", "dblink")
_SERVER_FUNCTIONS = frozenset(
    {
        "set_config",
        "current_setting",
        "query_to_xml",
        "query_to_xml_and_xmlschema",
        "query_to_xmlschema",
        "cursor_to_xml",
        "table_to_xml",
        "schema_to_xml",
        "database_to_xml",
        "inet_server_addr",
        "inet_server_port",
        "load_extension",
        "readfile",
        "writefile",
        "fts3_tokenizer",
    }
)


@dataclass(frozen=True)
class Source:
    """A registered source: ``kind`` ``postgresql`` (``target`` a URL) or ``sqlite`` (a path)."""

    name: str
    kind: str
    target: str
    added_at: str

    @property
    def shown(self) -> str:
        """The target as it may be printed: the URL's password as ``***``."""
        return redact(self.target) if self.kind == "postgresql" else self.target


@dataclass(frozen=True)
class Routed:
    """A query bound for one source: its text in the source's SQL."""

    source: Source
    sql: str


def sources_path(lake_path: Path) -> Path:
    """The registry file of the lake at ``lake_path``: ``lake.duckdb`` -> ``lake.sources.json``."""
    return lake_path.with_name(lake_path.stem + ".sources.json")


def check_source_name(name: str) -> str:
    """``name`` if it can name a source (a lower-case identifier, not a schema DuckDB or
    PostgreSQL reserves), else ``UserError`` saying the rule."""
    if not isinstance(name, str) or not _NAME.match(name) or name in _RESERVED:
        raise UserError(
            f"invalid source name {name!r}: use lower-case letters, digits and underscores, starting with a "
            f"letter (at most 31 characters), not one of {', '.join(sorted(_RESERVED))}; e.g. 'crm'"
        )
    return name


def _kind_of(target: str) -> tuple[str, str]:
    if re.match(r"^postgres(ql)?://", target):
        return "postgresql", target
    if "://" in target:
        raise UserError(
            f"unsupported source {target.split('://', 1)[0]}://: give a postgresql:// URL or a SQLite file's path"
        )
    path = Path(target).expanduser().resolve()
    if not path.is_file():
        raise UserError(
            f"no SQLite file at {path}: give a postgresql:// URL or an existing SQLite file's path"
        )
    with path.open("rb") as handle:
        if handle.read(16) != b"SQLite format 3\x00":
            raise UserError(f"{path} is not a SQLite database file")
    return "sqlite", str(path)


class SourceRegistry:
    """The sources of one lake, kept in ``path`` (see :func:`sources_path`)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._stamp: float | None = None
        self._sources: dict[str, Source] = {}
        self._tables: dict[str, tuple[float, list[SourceTable]]] = {}

    # --- the registry file ------------------------------------------------------------

    def _load(self) -> dict[str, Source]:
        try:
            stamp = self.path.stat().st_mtime_ns
        except FileNotFoundError:
            stamp = None
        with self._lock:
            if stamp != self._stamp:
                raw = json.loads(self.path.read_text("utf-8")) if stamp is not None else []
                self._sources = {item["name"]: Source(**item) for item in raw}
                self._tables = {}
                self._stamp = stamp
            return dict(self._sources)

    def _save(self, sources: dict[str, Source]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_suffix(".tmp")
        # Owner-only from the start: the file may hold a password.
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump([asdict(source) for source in sources.values()], handle, indent=2)
        os.replace(temporary, self.path)

    def list(self) -> builtins.list[Source]:
        """The registered sources, by name."""
        return sorted(self._load().values(), key=lambda source: source.name)

    def get(self, name: str) -> Source:
        """One source; ``NotFoundError`` naming the registered ones."""
        sources = self._load()
        if name not in sources:
            known = ", ".join(sorted(sources)) or "none yet (`agentlake sources add NAME URL`)"
            raise NotFoundError(f"unknown source {name!r}; registered: {known}")
        return sources[name]

    def add(self, name: str, target: str) -> tuple[Source, builtins.list[SourceTable]]:
        """Register ``target`` (a ``postgresql://`` URL or a SQLite file) as ``name`` after
        listing its tables once (an unreachable source is refused: ``UnavailableError``).
        ``UserError`` for a bad name or target or a name already taken. (A dataset may share
        the name: ``crm.orders`` names a schema's table, a dataset is never a schema.)"""
        check_source_name(name)
        sources = self._load()
        if name in sources:
            raise UserError(f"source {name!r} exists ({sources[name].shown}); remove it first")
        kind, target = _kind_of(target.strip())
        source = Source(name, kind, target, datetime.now(UTC).isoformat(timespec="seconds"))
        tables = open_source_db(name, kind, target).tables()
        sources[name] = source
        self._save(sources)
        return source, tables

    def remove(self, name: str) -> Source:
        """Forget source ``name``; ``NotFoundError`` when it is not registered."""
        source = self.get(name)
        sources = self._load()
        del sources[name]
        self._save(sources)
        return source

    # --- the catalog ------------------------------------------------------------------

    def _db(self, source: Source) -> SourceDB:
        return open_source_db(source.name, source.kind, source.target)

    def tables(self, source: Source) -> builtins.list[SourceTable]:
        """``source``'s tables, read at most once per :data:`CATALOG_TTL_S`; an unreachable
        source shows none (logged) until the next read."""
        now = time.monotonic()
        with self._lock:
            hit = self._tables.get(source.name)
            if hit is not None and now - hit[0] < CATALOG_TTL_S:
                return hit[1]
        try:
            found = self._db(source).tables()
        except Exception as exc:  # a source down must not take the lake's catalog with it
            log.warning(
                "source %s: its tables could not be listed (%s)", source.name, str(exc).splitlines()[0]
            )
            found = []
        with self._lock:
            self._tables[source.name] = (now, found)
        return found

    def datasets(self) -> builtins.list[DatasetInfo]:
        """Every source's tables as catalog entries named ``NAME.table``."""
        infos = []
        for source in self.list():
            added = datetime.fromisoformat(source.added_at)
            for table in self.tables(source):
                infos.append(
                    DatasetInfo(
                        name=f"{source.name}.{table.name}",
                        columns=table.columns,
                        row_count=table.row_count,
                        key=None,
                        created_at=added,
                        updated_at=added,
                        history=[],
                        source=source.name,
                    )
                )
        return infos

    def versions(self) -> dict[str, object]:
        """``NAME.table`` -> a digest of its columns: changes when a source's schema does."""
        return {
            info.name: hashlib.sha256(repr(info.columns).encode()).hexdigest()[:16]
            for info in self.datasets()
        }

    # --- routing ----------------------------------------------------------------------

    def route(self, sql: str) -> Routed | None:
        """Where ``sql`` runs: ``None`` for the lake (no source named), else the source and the
        query in its SQL, checked by the guard. ``UserError`` for a query that reads the lake
        and a source, or two sources, or calls a function that reaches the server."""
        sources = self._load()
        if not sources or not isinstance(sql, str):
            return None
        # Lazy (start-up time): sqlglot loads only once a lake has a source.
        import sqlglot
        from sqlglot import exp

        try:
            statements = sqlglot.parse(sql, read="duckdb")
        except sqlglot.errors.ParseError:
            return None  # the guard says what is wrong with it
        if len(statements) != 1 or statements[0] is None:
            return None  # the guard refuses all but one statement (parse_one would keep the first)
        tree = statements[0]
        ctes = {cte.alias_or_name.casefold() for cte in tree.find_all(exp.CTE)}
        named: set[str] = set()
        lake_tables: builtins.list[str] = []
        for table in tree.find_all(exp.Table):
            if not isinstance(table.this, exp.Identifier):
                continue  # a table function: generate_series(...), range(...)
            owner = _owner(table, sources)
            if owner is None:
                if table.db or table.name.casefold() not in ctes:
                    lake_tables.append(table.sql("duckdb"))
                continue
            named.add(owner)
        if not named:
            return None
        if len(named) > 1 or lake_tables:
            parts = sorted(named) + (
                [f"the lake ({', '.join(sorted(set(lake_tables)))})"] if lake_tables else []
            )
            raise UserError(
                f"a query reads the lake or one source, not both: this one reads {' and '.join(parts)}; "
                "split it into one query per source"
            )
        source = sources[named.pop()]
        _refuse_server_functions(tree, source.name)
        check_select(tree.sql("duckdb"))
        dialect = self._db(source).dialect
        try:
            native = tree.sql(dialect=dialect, unsupported_level=sqlglot.ErrorLevel.RAISE)
        except sqlglot.errors.UnsupportedError as exc:
            raise UserError(
                f"this query cannot be written for source {source.name} ({dialect}): {str(exc).splitlines()[0]}; "
                "write it more plainly"
            ) from None
        return Routed(source, native)

    def run(
        self, routed: Routed, *, max_rows: int, timeout_s: float
    ) -> tuple[builtins.list[str], builtins.list[Any]]:
        """Columns and at most ``max_rows`` + 1 rows of a routed query, read-only at its source."""
        return self._db(routed.source).run(routed.sql, max_rows=max_rows, timeout_s=timeout_s)

    def dataset(self, name: str) -> DatasetInfo | None:
        """The catalog entry of source table ``name`` (``NAME.table``), ``None`` if no source
        has it."""
        return next((info for info in self.datasets() if info.name == name), None)


def _owner(table: exp.Table, sources: dict[str, Source]) -> str | None:
    """The source a table reference names, rewriting it in place to the source's own name
    (``crm.orders`` -> ``orders``, ``crm.sales.orders`` -> ``sales.orders``, and the quoted
    ``"crm.orders"`` a caller quoting a catalog name writes)."""
    from sqlglot import exp

    if table.catalog in sources:
        owner = table.catalog
        table.set("catalog", None)
        return owner
    if not table.catalog and table.db in sources:
        owner = table.db
        table.set("db", None)
        return owner
    if not table.db and "." in table.name:
        head, _, rest = table.name.partition(".")
        if head in sources:
            schema, _, name = rest.rpartition(".")
            table.set("this", exp.to_identifier(name, quoted=True))
            if schema:
                table.set("db", exp.to_identifier(schema, quoted=True))
            return head
    return None


def _refuse_server_functions(tree: exp.Expression, source: str) -> None:
    from sqlglot import exp

    for function in tree.find_all(exp.Func):
        name = (function.name if isinstance(function, exp.Anonymous) else function.sql_name()).lower()
        if name in _SERVER_FUNCTIONS or name.startswith(_SERVER_PREFIXES):
            raise UserError(
                f"{name}() is not allowed in a query on source {source}: it reaches the server, not the data"
            )
