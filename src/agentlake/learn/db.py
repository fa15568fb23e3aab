"""``LessonDB``: the lesson store's tables on either backend, its transactions and its current
state in memory.

Owns opening a store (the DuckDB file ``settings.learn_file``, or with ``settings.database_url``
the same tables in PostgreSQL, in the default schema or a ``PgSchema`` of its own) and migrating
it (``schema``); the unit of work (``Transaction``: lessons changed together are written
together, with the append-only ``lesson_events`` log and a full snapshot per version, and the
materialised ``lessons`` table in the same database transaction); the current lessons held in
memory so reads and retrieval parse no JSON per call; and, in PostgreSQL, taking in what other
processes committed (``_sync``, by the event log's sequence). It also keeps what the learner has
read (``learned_ops``, ``learn_cursor``). The SQL text is the same on both backends.

DuckDB: every write goes through one connection under one lock: one writer. PostgreSQL: many
processes write; each writing transaction locks the store's head row (``SELECT ... FOR
UPDATE``) and takes in what others committed before it curates, so the database serialises
curation (docs/architecture.md says why the unit locked is the store, not one lesson).

It does not own what changes lessons (``curation``, ``effect``, ``transfer``: functions over a
``Transaction``), the rows of evidence, citations, outcomes and effects beyond writing what
they queue (``evidence``, ``effect``), retrieval, similarity or the store's public face
(``store.LessonStore``).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

import duckdb
from pydantic import BaseModel, ConfigDict, Field

from agentlake.errors import NotFoundError, RunError, UserError
from agentlake.learn.model import EventKind, Lesson, LessonEvent
from agentlake.learn.schema import MIGRATIONS, PG_MIGRATIONS, PG_STORE
from agentlake.migrations import apply_migrations
from agentlake.observe.scrub import scrub
from agentlake.postgres import Database, Session, apply_pg_migrations
from agentlake.serving import held_by

if TYPE_CHECKING:
    from agentlake.settings import Settings


class PgSchema(BaseModel):
    """A lesson store of its own in a schema of the ``database_url`` database, beside the
    project's store (a scenario arm's: arms never share lessons). Pass it as ``path``."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(pattern=r"^[a-z_][a-z0-9_]{0,62}$")

    def __str__(self) -> str:
        return f"schema {self.name}"


def utc_now() -> datetime:
    return datetime.now(UTC)


def naive(value: datetime | None) -> datetime | None:
    """``value`` as the naive UTC timestamp the tables hold."""
    if value is None:
        return None
    return value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value


def dumps(value: Any) -> str:
    """JSON text as the tables keep it (sorted keys, unicode as is)."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _is_lock_error(exc: Exception) -> bool:
    text = str(exc).lower()
    return "lock" in text and ("conflicting" in text or "could not set" in text)


class Transaction:
    """A unit of work over the store: lessons changed here are written together or not at all.

    ``lessons`` starts as the store's current state; :meth:`record` appends an event and
    updates the working copy. Nothing touches the database until the ``with`` block exits
    cleanly.
    """

    def __init__(self, lessons: Mapping[str, Lesson], now: datetime) -> None:
        self.now = now
        self.lessons: dict[str, Lesson] = dict(lessons)
        self.events: list[LessonEvent] = []
        self.sql: list[tuple[str, list[Any]]] = []
        self.rows: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self.used: list[str] = []  # lessons given to a run: last_used_at = now once committed
        self._by_match: dict[tuple[str, ...], set[str]] | None = None
        self._journal: list[tuple[str, Lesson | None]] = []  # (id, lesson before), one per event

    def get(self, lesson_id: str) -> Lesson | None:
        return self.lessons.get(lesson_id)

    def savepoint(self) -> int:
        """A point :meth:`restore` can return the working state to."""
        return len(self._journal)

    def restore(self, point: int) -> None:
        """Undo the events recorded since ``point`` (a delta rejected halfway writes nothing)."""
        while len(self._journal) > point:
            lesson_id, before = self._journal.pop()
            if before is None:
                self.lessons.pop(lesson_id, None)
            else:
                self.lessons[lesson_id] = before
        del self.events[point:]
        self._by_match = None

    def same_match(self, lesson: Lesson) -> list[Lesson]:
        """Lessons (any status) whose match equals ``lesson``'s; indexed, so curation of a
        large batch stays linear."""
        if self._by_match is None:
            self._by_match = {}
            for other in self.lessons.values():
                self._by_match.setdefault(other.match_key(), set()).add(other.id)
        return [self.lessons[i] for i in sorted(self._by_match.get(lesson.match_key(), ()))]

    def record(
        self,
        kind: EventKind,
        lesson: Lesson,
        *,
        actor: str,
        reason: str = "",
        data: dict[str, Any] | None = None,
    ) -> Lesson:
        """Append ``kind`` for ``lesson`` (the state after the change); returns it as stored."""
        previous = self.lessons.get(lesson.id)
        version = 1 if previous is None else previous.version + 1
        if previous is None or previous.status != lesson.status:
            status_since = self.now
        else:
            status_since = lesson.status_since or previous.status_since or self.now
        stored = lesson.model_copy(
            update={
                "version": version,
                "updated_at": self.now,
                "status_since": status_since,
                "created_at": lesson.created_at if previous is None else previous.created_at,
            }
        )
        # Re-validate so a curation bug cannot store an impossible lesson.
        stored = Lesson.model_validate(stored.model_dump())
        if self._by_match is not None:
            if previous is not None:
                self._by_match.get(previous.match_key(), set()).discard(stored.id)
            self._by_match.setdefault(stored.match_key(), set()).add(stored.id)
        self._journal.append((stored.id, previous))
        self.lessons[stored.id] = stored
        self.events.append(
            LessonEvent(
                lesson_id=stored.id,
                version=version,
                kind=kind,
                at=self.now,
                actor=actor,
                reason=reason,
                data=data or {},
                lesson=stored,
            )
        )
        return stored

    def execute(self, sql: str, params: list[Any]) -> None:
        """Queue a statement for the same commit (runs after the batched inserts)."""
        self.sql.append((sql, params))

    def insert(self, table: str, row: dict[str, Any], *, conflict: str = "") -> None:
        """Queue one row; rows of a table are written in one batched INSERT at commit.

        ``conflict``: an ``ON CONFLICT ...`` clause for the whole batch.
        """
        self.rows.setdefault((table, conflict), []).append(row)

    def mark_learned(self, op_ids: Sequence[str]) -> None:
        """Record that ``op_ids`` have been learned from (see ``LessonDB.unlearned``)."""
        self.execute(
            "INSERT INTO learned_ops (op_id, learned_at) SELECT unnest(CAST(? AS VARCHAR[])), "
            "CAST(? AS TIMESTAMP) ON CONFLICT DO NOTHING",
            [list(dict.fromkeys(op_ids)), self.now.replace(tzinfo=None)],
        )

    def set_learn_cursor(self, source: str, seq: int) -> None:
        """Record that the learner has read ``source``'s ops up to ``seq``."""
        self.insert(
            "learn_cursor",
            {"source": source, "seq": seq, "updated_at": naive(self.now)},
            conflict="ON CONFLICT (source) DO UPDATE SET seq = excluded.seq, updated_at = excluded.updated_at",
        )


class LessonTables(Protocol):
    """What a function over the lesson tables needs (``effect``, ``evidence``): the settings,
    the clock, reads and one transaction. ``LessonDB`` is one; ``store.LessonStore``, the
    service over it, passes its own through, so those functions take either."""

    @property
    def settings(self) -> Settings: ...

    def now(self) -> datetime: ...

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...

    def transaction(self) -> AbstractContextManager[Transaction]: ...


class LessonDB:
    """The lesson tables on one backend and the current lessons in memory. Use :meth:`open`."""

    def __init__(
        self,
        conn: duckdb.DuckDBPyConnection | Database,
        path: Path | str,
        settings: Settings,
        *,
        read_only: bool,
        clock: Callable[[], datetime],
    ) -> None:
        self._conn = conn
        self.path = path
        self._settings = settings
        self.read_only = read_only
        self._clock = clock
        self._lock = threading.RLock()
        # Replaced, never changed in place, so a reader may hold it without the lock.
        self._lessons: dict[str, Lesson] = {}
        # Counts changes of lesson content (not of last use): what derives from the lessons
        # (retrieval's index) is rebuilt when it moves.
        self.changes = 0
        self._closed = False
        # PostgreSQL: other processes write too; what this one has seen of their changes.
        self._pg = isinstance(conn, Database)
        self._seen_seq = 0
        self._seen_given: datetime | None = None
        self._load()

    @property
    def settings(self) -> Settings:
        return self._settings

    # --- opening and closing -----------------------------------------------------------

    @classmethod
    def open(
        cls,
        settings: Settings,
        *,
        path: Path | str | PgSchema | None = None,
        read_only: bool = False,
        clock: Callable[[], datetime] | None = None,
    ) -> LessonDB:
        """Open (creating and migrating) the lesson tables; see ``LessonStore.open``."""
        if isinstance(path, PgSchema) and settings.database_url is None:
            raise UserError(
                f"the lesson store in PostgreSQL {path} needs database_url; set AGENTLAKE_DATABASE_URL"
            )
        if (path is None or isinstance(path, PgSchema)) and settings.database_url is not None:
            schema = path.name if isinstance(path, PgSchema) else None
            return cls._open_pg(settings, schema=schema, read_only=read_only, clock=clock or utc_now)
        # A PgSchema returned or raised above: path is a file's, or None.
        target = (
            Path(cast("Path | str", path)) if path is not None else settings.data_dir / settings.learn_file
        )
        if read_only and not target.exists():
            raise UserError(
                f"no lesson store at {target}; run `agentlake lessons learn` first or check data_dir"
            )
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            conn = duckdb.connect(
                str(target), read_only=read_only, config={"threads": settings.duckdb_threads}
            )
        except duckdb.Error as exc:
            if _is_lock_error(exc):
                raise UserError(
                    held_by(target, "the lesson store")
                    or f"the lesson store {target} is open in another process (DuckDB allows one writer); "
                    "stop that process or run this command through it"
                ) from None
            raise RunError(f"cannot open the lesson store {target}: {exc}") from exc
        try:
            if not read_only:
                apply_migrations(conn, MIGRATIONS)
            return cls(conn, target, settings, read_only=read_only, clock=clock or utc_now)
        except BaseException:
            conn.close()
            raise

    @classmethod
    def _open_pg(
        cls, settings: Settings, *, schema: str | None, read_only: bool, clock: Callable[[], datetime]
    ) -> LessonDB:
        """The lesson tables in PostgreSQL (``settings.database_url``), in ``schema`` (created)
        or the default one, migrated unless read-only."""
        assert settings.database_url is not None
        db = Database(settings.database_url.get_secret_value(), name="the lesson store", schema=schema)
        try:
            if schema is not None and not read_only:
                with db.transaction() as session:
                    # The migrations' lock: two processes creating the schema at once create it once.
                    session.execute("SELECT pg_advisory_xact_lock(hashtext('agentlake_migrations'))")
                    session.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
            if not read_only:
                apply_pg_migrations(db, PG_STORE, PG_MIGRATIONS)
            where = db.where if schema is None else f"{db.where} {PgSchema(name=schema)}"
            return cls(db, where, settings, read_only=read_only, clock=clock)
        except BaseException:
            db.close()
            raise

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._conn.close()

    def __enter__(self) -> LessonDB:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def now(self) -> datetime:
        """The store's clock, always tz-aware UTC."""
        value = self._clock()
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)

    # --- the current lessons -------------------------------------------------------------

    def _load(self) -> None:
        if self._pg:
            present = self._conn.execute("SELECT to_regclass('lessons') IS NOT NULL").fetchone()
            if not (present and present[0]):
                raise UserError(
                    f"no lesson store in PostgreSQL at {self.path}; run `agentlake lessons learn` first "
                    "or check AGENTLAKE_DATABASE_URL"
                )
            self._sync(cast("Database", self._conn))  # PostgreSQL: the pool
            return
        try:
            rows = self._conn.execute(_LOAD_SQL).fetchall()
        except duckdb.CatalogException:
            raise UserError(f"{self.path} is not a lesson store (no lessons table)") from None
        self._take(rows)

    def _take(self, rows: Sequence[tuple[Any, ...]]) -> None:
        if not rows:
            return
        lessons = dict(self._lessons)
        for body, last_used in rows:
            lesson = Lesson.model_validate_json(body)
            if last_used is not None:
                lesson = lesson.model_copy(update={"last_used_at": last_used.replace(tzinfo=UTC)})
            lessons[lesson.id] = lesson
        self._lessons = lessons
        self.changes += 1

    def _sync(self, db: Database | Session) -> None:
        """PostgreSQL: take in what other processes changed since this one last looked (new
        versions of lessons by the event log's sequence, and the ``last_used_at`` of lessons
        cited since). One cheap query when nothing changed. Call under ``self._lock``."""
        newest, given = cast(
            tuple[Any, ...],  # an aggregate: one row
            db.execute(
                "SELECT (SELECT coalesce(max(seq), 0) FROM lesson_events), (SELECT max(given_at) FROM citations)"
            ).fetchone(),
        )
        if newest > self._seen_seq:
            self._take(
                db.execute(
                    _LOAD_SQL + " WHERE l.id IN (SELECT lesson_id FROM lesson_events WHERE seq > ?)",
                    [self._seen_seq],
                ).fetchall()
            )
            self._seen_seq = newest
        if given is not None and (self._seen_given is None or given > self._seen_given):
            lessons = dict(self._lessons)
            for lesson_id, last in db.execute(
                "SELECT lesson_id, max(given_at) FROM citations WHERE given_at >= ? GROUP BY lesson_id",
                [self._seen_given or datetime.min],
            ).fetchall():
                lesson = lessons.get(lesson_id)
                at = last.replace(tzinfo=UTC)
                if lesson is not None and (lesson.last_used_at is None or lesson.last_used_at < at):
                    lessons[lesson_id] = lesson.model_copy(update={"last_used_at": at})
            self._lessons = lessons
            self._seen_given = given

    def current(self) -> Mapping[str, Lesson]:
        """The current lessons by id, other writers' changes taken in (PostgreSQL: one query).
        Never changed after it is returned: a later change replaces it."""
        return self.current_at()[0]

    def current_at(self) -> tuple[Mapping[str, Lesson], int]:
        """``current()`` and the count of content changes it reflects (``changes``), read
        together: what is derived from the lessons is keyed by that count."""
        with self._lock:
            if self._pg and not self._closed:
                self._sync(cast("Database", self._conn))  # PostgreSQL: the pool
            return self._lessons, self.changes

    # --- reading the tables ----------------------------------------------------------------

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Read rows with the store's connection; no writes."""
        with self._lock:
            return self._conn.execute(sql, list(params)).fetchall()

    def history(self, lesson_id: str) -> list[LessonEvent]:
        """Every event of a lesson, oldest first; ``NotFoundError`` for an unknown id."""
        rows = self.query(
            "SELECT version, kind, event_at, actor, reason, data, snapshot FROM lesson_events "
            "WHERE lesson_id = ? ORDER BY version",
            [lesson_id],
        )
        if not rows:
            raise NotFoundError(f"no lesson {lesson_id!r}; `agentlake lessons list` shows the ids")
        return [
            LessonEvent(
                lesson_id=lesson_id,
                version=version,
                kind=kind,
                at=at.replace(tzinfo=UTC),
                actor=actor,
                reason=reason,
                data=json.loads(data),
                lesson=Lesson.model_validate_json(snapshot),
            )
            for version, kind, at, actor, reason, data, snapshot in rows
        ]

    def count_events(self) -> int:
        return self.query("SELECT count(*) FROM lesson_events")[0][0]

    def learn_cursor(self, source: str) -> int:
        """The commit sequence the learner has read ``source``'s ops up to (0: none yet)."""
        rows = self.query("SELECT seq FROM learn_cursor WHERE source = ?", [source])
        return int(rows[0][0]) if rows else 0

    def unlearned(self, op_ids: Sequence[str]) -> set[str]:
        """The ids among ``op_ids`` not yet learned from."""
        if not op_ids:
            return set()
        rows = self.query(
            "SELECT op_id FROM learned_ops WHERE op_id IN (SELECT unnest(CAST(? AS VARCHAR[])))",
            [list(op_ids)],
        )
        return set(op_ids) - {row[0] for row in rows}

    # --- writing ---------------------------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        """Collect changes and write them in one database transaction; all or nothing.

        The store lock is held for the whole block so two threads cannot interleave. In
        PostgreSQL the block runs inside the database transaction, which first locks the head
        row (``SELECT ... FOR UPDATE``) and takes in every change committed before: writers in
        other processes wait for it, so curation always starts from the latest versions and
        no lesson update is lost. (Curation reads every lesson with the same match and may add
        one, and ``_sync`` catches up by ``seq``, complete only while commits follow ``seq``
        order: so the unit locked is the store, not one lesson's row; docs/architecture.md.)
        """
        if self.read_only:
            raise UserError(f"the lesson store {self.path} is open read-only")
        with self._lock:
            if self._closed:
                raise RunError("the lesson store is closed")
            if not self._pg:
                txn = Transaction(self._lessons, self.now())
                yield txn
                changed = self._commit(txn, self._conn)
            else:
                assert isinstance(self._conn, Database)
                with self._conn.transaction() as session:
                    session.execute("SELECT changes FROM lesson_store_head WHERE id = 1 FOR UPDATE")
                    self._sync(session)
                    txn = Transaction(self._lessons, self.now())
                    yield txn
                    changed = self._commit(txn, session)
                    if changed:
                        session.execute("UPDATE lesson_store_head SET changes = changes + 1 WHERE id = 1")
            # Committed: memory follows the database.
            if changed or txn.used:
                lessons = {**self._lessons, **changed}
                for lesson_id in txn.used:
                    lessons[lesson_id] = lessons[lesson_id].model_copy(update={"last_used_at": txn.now})
                self._lessons = lessons
            if changed:
                self.changes += 1

    def _commit(self, txn: Transaction, conn: Any) -> dict[str, Lesson]:
        """Write ``txn`` with ``conn`` (DuckDB: its own transaction here; PostgreSQL: the
        caller's); returns the lessons it changed."""
        if not txn.events and not txn.sql and not txn.rows:
            return {}
        changed = {event.lesson_id: txn.lessons[event.lesson_id] for event in txn.events}
        for e in txn.events:
            txn.insert(
                "lesson_events",
                {
                    "lesson_id": e.lesson_id,
                    "version": e.version,
                    "kind": e.kind,
                    "event_at": naive(e.at),
                    "actor": e.actor,
                    "reason": e.reason,
                    "data": dumps(e.data),
                    "snapshot": e.lesson.model_dump_json(),
                },
            )
        for lesson in changed.values():
            txn.insert("lessons", _lesson_row(lesson), conflict=_REPLACE_LESSON)
        if self._pg:
            _write(conn, txn)
            return changed
        try:
            conn.execute("BEGIN TRANSACTION")
            _write(conn, txn)
            conn.execute("COMMIT")
        except duckdb.Error as exc:
            conn.execute("ROLLBACK")
            raise RunError(f"writing {len(txn.events)} lesson event(s) to {self.path} failed: {exc}") from exc
        return changed


_LESSON_COLUMNS = (
    "id",
    "status",
    "domain",
    "scope",
    "project_id",
    "confidence",
    "task_kind",
    "match_fields",
    "tool",
    "source",
    "version",
    "updated_at",
    "last_used_at",
    "body",
)


def _lesson_row(lesson: Lesson) -> dict[str, Any]:
    m = lesson.match
    values = [
        lesson.id,
        lesson.status,
        lesson.domain,
        lesson.scope,
        lesson.project_id,
        lesson.confidence,
        m.task_kind,
        dumps(m.fields) if m.fields else None,
        m.tool,
        lesson.source,
        lesson.version,
        naive(lesson.updated_at),
        naive(lesson.last_used_at),
        lesson.model_dump_json(),
    ]
    return dict(zip(_LESSON_COLUMNS, values, strict=True))


def _scrubbed(value: Any) -> Any:
    return scrub(value) if isinstance(value, str) else value


# A lesson's new version replaces its row (the same text in DuckDB and PostgreSQL).
_REPLACE_LESSON = "ON CONFLICT (id) DO UPDATE SET " + ", ".join(
    f"{column} = excluded.{column}" for column in _LESSON_COLUMNS if column != "id"
)

# Every current lesson, with the newest of its stored last use and its citations.
_LOAD_SQL = (
    "SELECT l.body, greatest(l.last_used_at, c.given) FROM lessons l "
    "LEFT JOIN (SELECT lesson_id, max(given_at) AS given FROM citations GROUP BY lesson_id) c "
    "ON c.lesson_id = l.id"
)


def _write(conn: Any, txn: Transaction) -> None:
    """The transaction's batched inserts, then its statements, on ``conn`` (inside a transaction)."""
    for (table, conflict), rows in txn.rows.items():
        _insert_rows(conn, table, rows, conflict)
    for sql, params in txn.sql:
        conn.execute(sql, params)


def _insert_rows(conn: Any, table: str, rows: list[dict[str, Any]], conflict: str) -> None:
    """One multi-row INSERT per 500 rows: DuckDB's per-statement cost dominates small writes.
    ``conn``: a DuckDB connection or a PostgreSQL ``Session`` (same SQL text)."""
    columns = list(rows[0])
    row_marks = "(" + ", ".join("?" * len(columns)) + ")"
    for start in range(0, len(rows), 500):
        chunk = rows[start : start + 500]
        # Every text stored here passes the one scrubber: lessons, their history (reasons,
        # snapshots, data), citations and outcomes (issue 17.8); JSON text stays JSON.
        params = [_scrubbed(row[column]) for row in chunk for column in columns]
        conn.execute(
            f"INSERT INTO {table} ({', '.join(columns)}) VALUES {', '.join([row_marks] * len(chunk))} {conflict}",
            params,
        )
