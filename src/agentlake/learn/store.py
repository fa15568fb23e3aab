"""``LessonStore``: the one owner of the lesson store: the DuckDB file (``settings.learn_file``)
or, with ``settings.database_url``, the same tables in PostgreSQL.

Owns the schema (named migrations, one list per backend), the append-only ``lesson_events`` log
with a full snapshot per version, the materialised ``lessons`` table written in the same
transaction, citations (lesson given to / used by a run), run outcomes, measured effects, and
the set of ops already learned from. The SQL text is the same on both backends. DuckDB: all
writes go through one connection under one lock: one writer. PostgreSQL: many processes write;
each writing transaction locks the store's head row (``SELECT ... FOR UPDATE``) and takes in
what others committed before it curates, so the database serialises curation.
Current lessons are also held in memory, so reads and retrieval do not parse JSON per call (in
PostgreSQL each read first checks, with one query, for other writers' changes).

It does not own the curation rules (``curation``), retrieval ranking (``retrieval``) or the
effect arithmetic (``effect``); those call :meth:`LessonStore.transaction` to write.

Usage metadata (``last_used_at``) and measured counts (``helpful``/``harmful``) are facts
about runs, not lesson content: a rollback restores content and keeps them.
``lesson_snapshot`` opens a private copy of a store for a reader beside the writer.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import duckdb
import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentlake.errors import NotFoundError, RunError, UserError
from agentlake.learn.curation import apply_deltas, maintain, promote
from agentlake.learn.domain import find_domain
from agentlake.learn.evidence import MAX_ITEMS_PER_SCOPE, EvidenceItem, JudgedOp
from agentlake.learn.model import (
    AppliedDelta,
    Delta,
    EventKind,
    Lesson,
    LessonDraft,
    LessonEvent,
    LessonMatch,
    Scope,
    Status,
    TaskKey,
)
from agentlake.migrations import Migration, apply_migrations
from agentlake.observe.scrub import scrub
from agentlake.postgres import Database, Session, apply_pg_migrations
from agentlake.serving import held_by
from agentlake.settings import load_settings

if TYPE_CHECKING:
    from agentlake.embed import Embedder
    from agentlake.settings import Settings

EXPORT_FORMAT = "agentlake-lessons"
EXPORT_VERSION = 1

MIGRATIONS = [
    Migration(
        "001_lessons",
        """
        CREATE SEQUENCE lesson_event_seq START 1;
        CREATE TABLE lesson_events (
            seq BIGINT PRIMARY KEY DEFAULT nextval('lesson_event_seq'),
            lesson_id VARCHAR NOT NULL,
            version INTEGER NOT NULL,
            kind VARCHAR NOT NULL,
            event_at TIMESTAMP NOT NULL,
            actor VARCHAR NOT NULL,
            reason VARCHAR NOT NULL,
            data VARCHAR NOT NULL,
            snapshot VARCHAR NOT NULL,
            UNIQUE (lesson_id, version)
        );
        CREATE TABLE lessons (
            id VARCHAR PRIMARY KEY,
            status VARCHAR NOT NULL,
            domain VARCHAR NOT NULL,
            scope VARCHAR NOT NULL,
            project_id VARCHAR,
            confidence DOUBLE NOT NULL,
            task_kind VARCHAR,
            role VARCHAR,
            client_id VARCHAR,
            city VARCHAR,
            state VARCHAR,
            tool VARCHAR,
            source VARCHAR NOT NULL,
            version INTEGER NOT NULL,
            updated_at TIMESTAMP NOT NULL,
            last_used_at TIMESTAMP,
            body VARCHAR NOT NULL
        );
        CREATE TABLE citations (
            run_id VARCHAR NOT NULL,
            lesson_id VARCHAR NOT NULL,
            agent_id VARCHAR,
            sig_hash VARCHAR,
            given_at TIMESTAMP NOT NULL,
            used BOOLEAN NOT NULL DEFAULT false,
            PRIMARY KEY (run_id, lesson_id)
        );
        CREATE TABLE outcomes (
            run_id VARCHAR PRIMARY KEY,
            sig_hash VARCHAR NOT NULL,
            task VARCHAR NOT NULL,
            success BOOLEAN NOT NULL,
            score DOUBLE,
            recorded_at TIMESTAMP NOT NULL
        );
        CREATE TABLE effects (
            lesson_id VARCHAR NOT NULL,
            run_id VARCHAR NOT NULL,
            delta DOUBLE NOT NULL,
            verdict VARCHAR NOT NULL,
            measured_at TIMESTAMP NOT NULL,
            PRIMARY KEY (lesson_id, run_id)
        );
        CREATE TABLE learned_ops (
            op_id VARCHAR PRIMARY KEY,
            learned_at TIMESTAMP NOT NULL
        );
        """,
    ),
    Migration(
        "002_evidence",
        """
        CREATE TABLE evidence_ops (
            op_id VARCHAR PRIMARY KEY,
            project_id VARCHAR,
            scope VARCHAR NOT NULL,
            shape VARCHAR NOT NULL,
            features VARCHAR NOT NULL,
            recorded_at TIMESTAMP NOT NULL
        );
        CREATE TABLE evidence (
            op_id VARCHAR NOT NULL,
            item_id BIGINT NOT NULL,
            accepted BOOLEAN NOT NULL,
            explained BOOLEAN NOT NULL,
            said VARCHAR NOT NULL,
            item_values VARCHAR NOT NULL,
            PRIMARY KEY (op_id, item_id)
        );
        """,
    ),
]


# 003: a lesson's key fields as one JSON object (the domain's: ``LessonMatch.fields``). The
# columns that held the first domain's fields before (releases up to 0.1) are read into it
# and left as they were since; the lesson's body is the truth either way.
MIGRATIONS.append(
    Migration(
        "003_match_fields",
        """
        ALTER TABLE lessons ADD COLUMN match_fields VARCHAR;
        UPDATE lessons SET match_fields = CAST(json_object(
            'role', role, 'client_id', client_id, 'city', city, 'state', state) AS VARCHAR)
        WHERE role IS NOT NULL OR client_id IS NOT NULL OR city IS NOT NULL OR state IS NOT NULL;
        """,
    )
)

# 004: how far the scheduled learner has read each op log (by the log's commit sequence), so
# a restart goes on where it stopped and no op is read twice or skipped.
MIGRATIONS.append(
    Migration(
        "004_learn_cursor",
        """
        CREATE TABLE learn_cursor (
            source VARCHAR PRIMARY KEY,
            seq BIGINT NOT NULL,
            updated_at TIMESTAMP NOT NULL
        );
        """,
    )
)


# The same schema in PostgreSQL (named, add-only, recorded per store in agentlake_migrations),
# plus the head row every writing transaction locks (see LessonStore.transaction).
PG_STORE = "lessons"
PG_MIGRATIONS = [
    Migration(
        "001_lessons",
        MIGRATIONS[0].sql.replace("DOUBLE", "DOUBLE PRECISION")
        + """
        CREATE INDEX citations_given_at_idx ON citations (given_at);
        CREATE TABLE lesson_store_head (id INTEGER PRIMARY KEY, changes BIGINT NOT NULL);
        INSERT INTO lesson_store_head VALUES (1, 0);
        """,
    ),
    Migration("002_evidence", MIGRATIONS[1].sql),
    Migration(
        "003_match_fields",
        MIGRATIONS[2]
        .sql.replace("CAST(json_object(", "CAST(jsonb_strip_nulls(jsonb_build_object(")
        .replace(") AS VARCHAR)", ")) AS VARCHAR)"),
    ),
    Migration("004_learn_cursor", MIGRATIONS[3].sql),
]


class PgSchema(BaseModel):
    """A lesson store of its own in a schema of the ``database_url`` database, beside the
    project's store (a scenario arm's: arms never share lessons). Pass it as ``path``."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(pattern=r"^[a-z_][a-z0-9_]{0,62}$")

    def __str__(self) -> str:
        return f"schema {self.name}"


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _naive(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _is_lock_error(exc: Exception) -> bool:
    text = str(exc).lower()
    return "lock" in text and ("conflicting" in text or "could not set" in text)


class ImportReport(BaseModel):
    """What an import did, by lesson id."""

    added: list[str] = []
    replaced: list[str] = []
    kept: list[str] = []


class Transaction:
    """A unit of work over the store: lessons changed here are written together or not at all.

    ``lessons`` starts as the store's current state; :meth:`record` appends an event and
    updates the working copy. Nothing touches the file until the ``with`` block exits cleanly.
    """

    def __init__(self, store: LessonStore, now: datetime) -> None:
        self.store = store
        self.now = now
        self.lessons: dict[str, Lesson] = dict(store._lessons)
        self.events: list[LessonEvent] = []
        self.sql: list[tuple[str, list[Any]]] = []
        self.rows: dict[tuple[str, str], list[dict[str, Any]]] = {}
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


class LessonStore:
    """The lesson DuckDB file and its in-memory current state. Use :meth:`open`."""

    def __init__(
        self,
        conn: duckdb.DuckDBPyConnection | Database,
        path: Path | str,
        settings: Settings,
        *,
        read_only: bool,
        clock: Callable[[], datetime],
        embedder: Embedder | None | Literal[False],
    ) -> None:
        self._conn = conn
        self.path = path
        self.settings = settings
        self.read_only = read_only
        self._clock = clock
        self._embedder = embedder
        self._lock = threading.RLock()
        self._lessons: dict[str, Lesson] = {}
        self._vectors: dict[str, np.ndarray] = {}  # text -> unit vector
        self._pool: dict[str | None, list[str]] | None = None  # client (folded) -> retrievable ids
        self._closed = False
        # PostgreSQL: other processes write too; what this one has seen of their changes.
        self._pg = isinstance(conn, Database)
        self._seen_seq = 0
        self._seen_given: datetime | None = None
        self._load()

    # --- opening and closing -----------------------------------------------------------

    @classmethod
    def open(
        cls,
        settings: Settings | None = None,
        *,
        path: Path | str | PgSchema | None = None,
        read_only: bool = False,
        clock: Callable[[], datetime] | None = None,
        embedder: Embedder | None | Literal[False] = None,
    ) -> LessonStore:
        """Open (creating and migrating) the lesson store.

        ``path`` defaults to ``settings.data_dir / settings.learn_file`` (with ``database_url``
        set: the database's default schema); a ``PgSchema`` is a store of its own in that
        database, and without ``database_url`` it is a ``UserError``, never a DuckDB file. ``clock`` returns
        the current time (tz-aware) for every timestamp, decay and expiry; tests pass their
        own. ``embedder`` is used for dedup and semantic retrieval: ``None`` loads the default
        (``agentlake.embed.get_embedder``) on first need, ``False`` turns similarity off
        (dedup by identity only, retrieval by structure only).
        Raises ``UserError`` when the file is held by another process or missing in read-only
        mode, ``RunError`` when it cannot be migrated.
        """
        settings = settings or load_settings()
        if isinstance(path, PgSchema) and settings.database_url is None:
            raise UserError(
                f"the lesson store in PostgreSQL {path} needs database_url; set AGENTLAKE_DATABASE_URL"
            )
        if (path is None or isinstance(path, PgSchema)) and settings.database_url is not None:
            schema = path.name if isinstance(path, PgSchema) else None
            return cls._open_pg(
                settings, schema=schema, read_only=read_only, clock=clock or _utc_now, embedder=embedder
            )
        target = Path(path) if path is not None else settings.data_dir / settings.learn_file
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
            return cls(
                conn, target, settings, read_only=read_only, clock=clock or _utc_now, embedder=embedder
            )
        except BaseException:
            conn.close()
            raise

    @classmethod
    def _open_pg(
        cls,
        settings: Settings,
        *,
        schema: str | None,
        read_only: bool,
        clock: Callable[[], datetime],
        embedder: Embedder | None | Literal[False],
    ) -> LessonStore:
        """The lesson store in PostgreSQL (``settings.database_url``), in ``schema`` (created)
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
            return cls(db, where, settings, read_only=read_only, clock=clock, embedder=embedder)
        except BaseException:
            db.close()
            raise

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._conn.close()

    def __enter__(self) -> LessonStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def now(self) -> datetime:
        """The store's clock, always tz-aware UTC."""
        value = self._clock()
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)

    def _load(self) -> None:
        if self._pg:
            present = self._conn.execute("SELECT to_regclass('lessons') IS NOT NULL").fetchone()
            if not (present and present[0]):
                raise UserError(
                    f"no lesson store in PostgreSQL at {self.path}; run `agentlake lessons learn` first "
                    "or check AGENTLAKE_DATABASE_URL"
                )
            self._sync(self._conn)
            return
        try:
            rows = self._conn.execute(_LOAD_SQL).fetchall()
        except duckdb.CatalogException:
            raise UserError(f"{self.path} is not a lesson store (no lessons table)") from None
        self._take(rows)

    def _take(self, rows: Sequence[tuple[Any, ...]]) -> None:
        for body, last_used in rows:
            lesson = Lesson.model_validate_json(body)
            if last_used is not None:
                lesson = lesson.model_copy(update={"last_used_at": last_used.replace(tzinfo=UTC)})
            self._lessons[lesson.id] = lesson
        if rows:
            self._pool = None

    def _sync(self, db: Database | Session) -> None:
        """PostgreSQL: take in what other processes changed since this one last looked (new
        versions of lessons by the event log's sequence, and the ``last_used_at`` of lessons
        cited since). One cheap query when nothing changed. Call under ``self._lock``."""
        newest, given = db.execute(
            "SELECT (SELECT coalesce(max(seq), 0) FROM lesson_events), (SELECT max(given_at) FROM citations)"
        ).fetchone()
        if newest > self._seen_seq:
            self._take(
                db.execute(
                    _LOAD_SQL + " WHERE l.id IN (SELECT lesson_id FROM lesson_events WHERE seq > ?)",
                    [self._seen_seq],
                ).fetchall()
            )
            self._seen_seq = newest
        if given is not None and (self._seen_given is None or given > self._seen_given):
            for lesson_id, last in db.execute(
                "SELECT lesson_id, max(given_at) FROM citations WHERE given_at >= ? GROUP BY lesson_id",
                [self._seen_given or datetime.min],
            ).fetchall():
                lesson = self._lessons.get(lesson_id)
                at = last.replace(tzinfo=UTC)
                if lesson is not None and (lesson.last_used_at is None or lesson.last_used_at < at):
                    self._lessons[lesson_id] = lesson.model_copy(update={"last_used_at": at})
            self._seen_given = given

    def _fresh(self) -> None:
        """Before a read from memory: PostgreSQL's other writers' changes taken in."""
        if self._pg and not self._closed:
            self._sync(self._conn)

    # --- reading -----------------------------------------------------------------------

    def get(self, lesson_id: str) -> Lesson:
        """The current lesson; ``NotFoundError`` if there is none with this id."""
        with self._lock:
            self._fresh()
            lesson = self._lessons.get(lesson_id)
        if lesson is None:
            raise NotFoundError(f"no lesson {lesson_id!r}; `agentlake lessons list` shows the ids")
        return lesson

    def list(
        self,
        *,
        status: Status | Sequence[Status] | None = None,
        domain: str | None = None,
        scope: Scope | None = None,
        project_id: str | None = None,
        source: str | None = None,
        **match: str | None,
    ) -> list[Lesson]:
        """Current lessons filtered by status (one or several), domain, scope, project and match.

        ``match`` keys are ``task_kind``, ``tool``, ``error_signature`` or a key field a domain
        declares (e.g. a data lesson's ``dataset``); a filter
        value matches a lesson whose field equals it (case-insensitive). Sorted by confidence,
        highest first, then id.
        """
        bad = [name for name in match if not _FILTER_NAME.match(name)]
        if bad:
            raise UserError(
                f"invalid match filter(s) {sorted(bad)}: use field names like task_kind or dataset"
            )
        statuses = {status} if isinstance(status, str) else set(status) if status else None
        with self._lock:
            self._fresh()
            lessons = list(self._lessons.values())
        out = []
        for lesson in lessons:
            if statuses and lesson.status not in statuses:
                continue
            if domain and lesson.domain.casefold() != domain.casefold():
                continue
            if scope and lesson.scope != scope:
                continue
            if project_id and lesson.project_id != project_id:
                continue
            if source and lesson.source != source:
                continue
            if any(
                value is not None and (_match_value(lesson.match, name) or "").casefold() != value.casefold()
                for name, value in match.items()
            ):
                continue
            out.append(lesson)
        return sorted(out, key=lambda lesson: (-lesson.confidence, lesson.id))

    def history(self, lesson_id: str) -> list[LessonEvent]:
        """Every event of a lesson, oldest first; ``NotFoundError`` for an unknown id."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT version, kind, event_at, actor, reason, data, snapshot FROM lesson_events "
                "WHERE lesson_id = ? ORDER BY version",
                [lesson_id],
            ).fetchall()
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
        with self._lock:
            return self._conn.execute("SELECT count(*) FROM lesson_events").fetchone()[0]

    # --- writing -----------------------------------------------------------------------

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
                txn = Transaction(self, self.now())
                yield txn
                changed = self._commit(txn, self._conn)
            else:
                assert isinstance(self._conn, Database)
                with self._conn.transaction() as session:
                    session.execute("SELECT changes FROM lesson_store_head WHERE id = 1 FOR UPDATE")
                    self._sync(session)
                    txn = Transaction(self, self.now())
                    yield txn
                    changed = self._commit(txn, session)
                    if changed:
                        session.execute("UPDATE lesson_store_head SET changes = changes + 1 WHERE id = 1")
            # Committed: memory follows the database.
            self._lessons.update(changed)
            if changed:
                self._pool = None

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
                    "event_at": _naive(e.at),
                    "actor": e.actor,
                    "reason": e.reason,
                    "data": _dumps(e.data),
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

    def retrievable(self, task: TaskKey) -> list[Lesson]:
        """Pending and active lessons that may apply to ``task``: those pinned to its value of
        its domain's partition field and those pinned to none.
        Indexed by that value so retrieval does not scan every lesson."""
        with self._lock:
            self._fresh()
            if self._pool is None:
                pool: dict[str | None, list[str]] = {}
                for lesson in self._lessons.values():
                    if lesson.status in ("pending", "active"):
                        pool.setdefault(_partition(lesson.domain, lesson.match.fields), []).append(lesson.id)
                self._pool = pool
            value = _partition(task.domain, task.fields)
            ids = self._pool.get(None, []) + (self._pool.get(value, []) if value is not None else [])
            return [self._lessons[lesson_id] for lesson_id in ids]

    def propose(self, deltas: Sequence[Delta], *, learned_op_ids: Sequence[str] = ()) -> list[AppliedDelta]:
        """Validate and apply extractor/human deltas by the curation rules; one transaction.

        Each delta gets an ``AppliedDelta`` saying what code did (added, confirmed, merged,
        edited, retired, contradiction, unchanged, rejected with the reason). A rejected delta
        writes nothing; the others are written together, with ``learned_op_ids`` marked as
        learned from (see ``unlearned``).
        """
        return apply_deltas(self, deltas, learned_op_ids=learned_op_ids)

    def add(self, draft: LessonDraft, *, reason: str = "", activate: bool = True) -> AppliedDelta:
        """Propose one lesson (ADD through curation); raises ``UserError`` if it is rejected.

        ``activate=False`` keeps the lesson pending whatever its confidence (a proposal over
        the API without an admin key: it is tried and measured, never trusted at once).
        """
        delta = Delta(op="ADD", lesson=draft, reason=reason, actor=draft.source, activate=activate)
        applied = self.propose([delta])[0]
        if applied.outcome == "rejected":
            raise UserError(f"lesson rejected: {applied.reason}")
        return applied

    def retire(self, lesson_id: str, reason: str, *, actor: str = "human") -> Lesson:
        """Retire a lesson by hand (it stays in history and can be rolled back)."""
        applied = self.propose([Delta(op="RETIRE", target_id=lesson_id, reason=reason, actor=_actor(actor))])[
            0
        ]
        if applied.outcome == "rejected":
            raise UserError(applied.reason)
        return self.get(lesson_id)

    def rollback(self, lesson_id: str, version: int, *, reason: str = "", actor: str = "human") -> Lesson:
        """Restore the content of ``version`` as a new version (history is never rewritten).

        ``NotFoundError`` for an unknown lesson or version. Usage metadata and measured
        counts are kept from the current version.
        """
        events = {event.version: event for event in self.history(lesson_id)}
        if version not in events:
            raise NotFoundError(
                f"lesson {lesson_id} has no version {version}; versions are 1..{max(events)} "
                f"(`agentlake lessons history {lesson_id}`)"
            )
        with self.transaction() as txn:
            current = txn.lessons[lesson_id]
            restored = events[version].lesson.model_copy(
                update={
                    "last_used_at": current.last_used_at,
                    "helpful": current.helpful,
                    "harmful": current.harmful,
                    "decayed_through": current.decayed_through,
                    "status_since": None
                    if events[version].lesson.status != current.status
                    else current.status_since,
                }
            )
            lesson = txn.record(
                "rollback",
                restored,
                actor=actor,
                reason=reason or f"rolled back to version {version}",
                data={"to_version": version, "from_version": current.version},
            )
        return lesson

    def maintain(self) -> list[LessonEvent]:
        """Decay unused lessons and expire stale pending ones (see ``curation.maintain``)."""
        return maintain(self)

    def promote(self) -> list[LessonEvent]:
        """Promote lessons seen in >= 2 projects with mean confidence >= 0.8 to global."""
        return promote(self)

    # --- export and import ----------------------------------------------------------------

    def export_json(self, *, status: Status | Sequence[Status] | None = None) -> str:
        """All current lessons (or those with ``status``) as one JSON document."""
        lessons = sorted(self.list(status=status), key=lambda lesson: lesson.id)
        payload = {
            "format": EXPORT_FORMAT,
            "version": EXPORT_VERSION,
            "exported_at": self.now().isoformat(),
            "lessons": [lesson.model_dump(mode="json") for lesson in lessons],
        }
        return json.dumps(payload, ensure_ascii=False, indent=2)

    def import_json(self, text: str | bytes, *, actor: str = "human") -> ImportReport:
        """Import an export; dedup by id: a project lesson beats a global one with the same id,
        otherwise the higher confidence wins (ties keep the lesson already here).

        The whole document is validated first: a bad document raises ``UserError`` and
        writes nothing.
        """
        try:
            payload = json.loads(text)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise UserError(f"not a lesson export (invalid JSON: {exc})") from None
        if not isinstance(payload, dict) or payload.get("format") != EXPORT_FORMAT:
            raise UserError(f'not a lesson export: expected an object with "format": "{EXPORT_FORMAT}"')
        if payload.get("version") != EXPORT_VERSION:
            raise UserError(
                f"unsupported lesson export version {payload.get('version')!r}; this agentlake reads {EXPORT_VERSION}"
            )
        items = payload.get("lessons")
        if not isinstance(items, list):
            raise UserError('not a lesson export: "lessons" must be a list')
        incoming: dict[str, Lesson] = {}
        for index, item in enumerate(items):
            try:
                lesson = Lesson.model_validate(item)
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"])
                raise UserError(
                    f"lesson #{index} in the import is invalid: {where}: {first['msg']}"
                ) from None
            if lesson.id in incoming:
                lesson = _import_winner(incoming[lesson.id], lesson)
            incoming[lesson.id] = lesson
        report = ImportReport()
        with self.transaction() as txn:
            for lesson_id, lesson in incoming.items():
                existing = txn.get(lesson_id)
                if existing is None:
                    txn.record(
                        "add",
                        lesson.model_copy(update={"status_since": None}),
                        actor=actor,
                        reason="imported",
                    )
                    report.added.append(lesson_id)
                elif _import_winner(existing, lesson) is lesson:
                    why = (
                        "a project lesson beats a global one"
                        if lesson.scope != existing.scope
                        else f"higher confidence {lesson.confidence:.2f} > {existing.confidence:.2f}"
                    )
                    replacement = lesson.model_copy(
                        update={
                            "last_used_at": _latest(existing.last_used_at, lesson.last_used_at),
                            "status_since": existing.status_since
                            if existing.status == lesson.status
                            else None,
                        }
                    )
                    txn.record("edit", replacement, actor=actor, reason=f"imported: {why}")
                    report.replaced.append(lesson_id)
                else:
                    report.kept.append(lesson_id)
        return report

    # --- citations, outcomes, measured effects ------------------------------------------------

    def record_citations(
        self,
        run_id: str,
        lesson_ids: Sequence[str],
        *,
        used: bool,
        agent_id: str | None = None,
        sig_hash: str | None = None,
    ) -> None:
        """Record lessons given to (``used=False``) or used by (``used=True``) a run.

        Given lessons get their ``last_used_at`` set (so they do not decay; on reopen it is
        read back from the citations). Unknown ids raise ``NotFoundError`` and nothing is
        written.
        """
        if not run_id:
            raise UserError("record_citation needs a run_id")
        ids = list(dict.fromkeys(lesson_ids))
        with self.transaction() as txn:
            missing = [lesson_id for lesson_id in ids if lesson_id not in txn.lessons]
            if missing:
                raise NotFoundError(f"unknown lesson id(s) {missing}")
            at = _naive(txn.now)
            for lesson_id in ids:
                txn.insert(
                    "citations",
                    {
                        "run_id": run_id,
                        "lesson_id": lesson_id,
                        "agent_id": agent_id,
                        "sig_hash": sig_hash,
                        "given_at": at,
                        "used": used,
                    },
                    conflict="ON CONFLICT (run_id, lesson_id) DO UPDATE SET used = citations.used OR excluded.used, "
                    "agent_id = coalesce(excluded.agent_id, citations.agent_id), "
                    "sig_hash = coalesce(excluded.sig_hash, citations.sig_hash)",
                )
        with self._lock:
            for lesson_id in ids:
                lesson = self._lessons[lesson_id]
                self._lessons[lesson_id] = lesson.model_copy(update={"last_used_at": txn.now})

    def citations(self, *, run_id: str | None = None, lesson_id: str | None = None) -> list[dict[str, Any]]:
        """Citation rows (run_id, lesson_id, agent_id, sig_hash, given_at, used)."""
        where, params = [], []
        if run_id:
            where.append("run_id = ?")
            params.append(run_id)
        if lesson_id:
            where.append("lesson_id = ?")
            params.append(lesson_id)
        sql = "SELECT run_id, lesson_id, agent_id, sig_hash, given_at, used FROM citations"
        if where:
            sql += " WHERE " + " AND ".join(where)
        with self._lock:
            rows = self._conn.execute(sql + " ORDER BY given_at, run_id, lesson_id", params).fetchall()
        cols = ("run_id", "lesson_id", "agent_id", "sig_hash", "given_at", "used")
        return [dict(zip(cols, row, strict=True)) for row in rows]

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Read rows with the store's connection (for ``effect`` and reports); no writes."""
        with self._lock:
            return self._conn.execute(sql, list(params)).fetchall()

    def learn_cursor(self, source: str) -> int:
        """The commit sequence the learner has read ``source``'s ops up to (0: none yet)."""
        with self._lock:
            row = self._conn.execute("SELECT seq FROM learn_cursor WHERE source = ?", [source]).fetchone()
        return int(row[0]) if row else 0

    def set_learn_cursor(self, source: str, seq: int) -> None:
        """Record that the learner has read ``source``'s ops up to ``seq``."""
        with self.transaction() as txn:
            txn.insert(
                "learn_cursor",
                {"source": source, "seq": seq, "updated_at": _naive(txn.now)},
                conflict="ON CONFLICT (source) DO UPDATE SET seq = excluded.seq, updated_at = excluded.updated_at",
            )

    def unlearned(self, op_ids: Sequence[str]) -> set[str]:
        """The ids among ``op_ids`` not yet learned from."""
        if not op_ids:
            return set()
        with self._lock:
            rows = self._conn.execute(
                "SELECT op_id FROM learned_ops WHERE op_id IN (SELECT unnest(CAST(? AS VARCHAR[])))",
                [list(op_ids)],
            ).fetchall()
        return set(op_ids) - {row[0] for row in rows}

    # --- judged evidence (learn.evidence) ----------------------------------------------------

    def record_evidence(self, judged: Sequence[JudgedOp], *, project_id: str | None) -> None:
        """Keep the items of ``judged`` ops (idempotent by op and item)."""
        with self.transaction() as txn:
            at = _naive(txn.now)
            for op in judged:
                txn.insert(
                    "evidence_ops",
                    {
                        "op_id": op.op_id,
                        "project_id": project_id,
                        "scope": op.scope,
                        "shape": op.shape,
                        "features": _dumps(op.features),
                        "recorded_at": at,
                    },
                    conflict="ON CONFLICT DO NOTHING",
                )
                for item in op.items:
                    txn.insert(
                        "evidence",
                        {
                            "op_id": op.op_id,
                            "item_id": item.item_id,
                            "accepted": item.accepted,
                            "explained": item.explained,
                            "said": _dumps(list(item.said)),
                            "item_values": _dumps(dict(item.values)),
                        },
                        conflict="ON CONFLICT DO NOTHING",
                    )

    def evidence(
        self, scope: str, *, project_id: str | None = None, limit: int = MAX_ITEMS_PER_SCOPE
    ) -> tuple[dict[str, dict[str, str]], list[EvidenceItem]]:
        """The features (the newest op's) and the newest ``limit`` items judged for ``scope``,
        oldest first."""
        where = "o.scope = ?" + (" AND o.project_id IS NOT DISTINCT FROM ?" if project_id is not None else "")
        params: list[Any] = [scope] + ([project_id] if project_id is not None else [])
        with self._lock:
            rows = self._conn.execute(
                "SELECT * FROM (SELECT o.op_id, o.shape, o.features, o.recorded_at, e.item_id, e.accepted, "
                "e.explained, e.said, e.item_values FROM evidence e JOIN evidence_ops o USING (op_id) "
                f"WHERE {where} ORDER BY o.recorded_at DESC, o.op_id DESC, e.item_id LIMIT ?) AS newest "
                "ORDER BY recorded_at, op_id, item_id",
                [*params, limit],
            ).fetchall()
        features: dict[str, dict[str, str]] = {}
        items = []
        for op_id, shape, schema, _, item_id, accepted, explained, said, values in rows:
            features = json.loads(schema) or features
            items.append(
                EvidenceItem(
                    op_id=op_id,
                    item_id=int(item_id),
                    scope=scope,
                    shape=shape,
                    accepted=bool(accepted),
                    explained=bool(explained),
                    values=json.loads(values),
                    said=tuple(json.loads(said)),
                )
            )
        return features, items

    # --- similarity ------------------------------------------------------------------------

    def embedder(self) -> Embedder | None:
        """The embedder, loading the default on first use; ``None`` when similarity is off."""
        if self._embedder is False:
            return None
        if self._embedder is None:
            # Lazy (start-up time): embedders (torch) load on first use.
            from agentlake.embed import get_embedder

            self._embedder = get_embedder(settings=self.settings)
        return self._embedder

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray | None:
        """Unit vectors for ``texts``, or ``None`` when similarity is off."""
        embedder = self.embedder()
        if embedder is None or not texts:
            return None
        return np.asarray(embedder.embed(list(texts)), dtype=np.float32)

    def vectors(self, texts: Sequence[str]) -> np.ndarray | None:
        """Unit vectors for ``texts`` (cached by text), or ``None`` when similarity is off."""
        if self.embedder() is None or not texts:
            return None
        with self._lock:
            missing = list(dict.fromkeys(text for text in texts if text not in self._vectors))
            if missing:
                if len(self._vectors) > 50_000:  # bound memory in long-running services
                    self._vectors.clear()
                fresh = self.embed_texts(missing)
                assert fresh is not None
                self._vectors.update(zip(missing, fresh, strict=True))
            return np.stack([self._vectors[text] for text in texts])

    def lesson_vectors(self, lessons: Sequence[Lesson]) -> np.ndarray | None:
        """Vectors of lessons' ``text()`` (trigger and action)."""
        return self.vectors([lesson.text() for lesson in lessons])


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


@contextmanager
def lesson_snapshot(
    path: Path | str | PgSchema | None, settings: Settings, *, semantic: bool = False, create: bool = False
) -> Iterator[LessonStore | None]:
    """A private copy of the lesson store at ``path`` as it stands now, open for the duration.

    DuckDB allows one writer per file, and a reader that runs beside the writer (a scenario
    day in a worker process) may learn within its day (a write), so it reads its own copy;
    what it learns goes back to the real store through the observer. ``None`` or a missing file
    gives ``None`` (no lessons), or with ``create`` an empty private store (a day that learns
    into its copy before the first batch has been learned). ``semantic=False`` opens the copy
    without an embedder (retrieval by structure only, no embedding-model calls).

    ``path`` naming the project's store (``data_dir / learn_file``) while ``database_url`` is
    set means the store in PostgreSQL: the copy is filled from there (its current lessons), as
    it is from a ``PgSchema`` (which must exist: ``UserError`` otherwise, and without
    ``database_url``: there is no file to fall back to).
    """
    in_schema = isinstance(path, PgSchema)
    exists = path is not None and not in_schema and Path(path).is_file()  # type: ignore[arg-type]
    shared = in_schema or (
        not exists
        and path is not None
        and settings.database_url is not None
        and Path(path).resolve() == (settings.data_dir / settings.learn_file).resolve()  # type: ignore[arg-type]
    )
    if not exists and not shared and not create:
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="agentlake-lessons-") as tmp:
        copy = Path(tmp) / "lessons.duckdb"
        if exists:
            shutil.copyfile(path, copy)  # type: ignore[arg-type]
        store = LessonStore.open(settings, path=copy, embedder=None if semantic else False)
        try:
            if shared:
                source_at = path if in_schema else None
                with LessonStore.open(
                    settings, path=source_at, read_only=in_schema, embedder=False
                ) as source:
                    store.import_json(source.export_json(), actor="human")
            yield store
        finally:
            store.close()


_FILTER_NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")


def _match_value(match: LessonMatch, name: str) -> str | None:
    """A match's ``task_kind``, ``tool``, ``error_signature`` or key field ``name``."""
    return (
        getattr(match, name) if name in ("task_kind", "tool", "error_signature") else match.fields.get(name)
    )


def _partition(domain: str, fields: dict[str, str]) -> str | None:
    """The folded value of ``domain``'s partition field in ``fields`` (retrieval's index key)."""
    registered = find_domain(domain)
    name = registered.partition_field if registered is not None else None
    value = fields.get(name) if name else None
    return value.casefold() if value else None


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
        _dumps(m.fields) if m.fields else None,
        m.tool,
        lesson.source,
        lesson.version,
        _naive(lesson.updated_at),
        _naive(lesson.last_used_at),
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


def _import_winner(existing: Lesson, incoming: Lesson) -> Lesson:
    if existing.scope != incoming.scope:
        return existing if existing.scope == "project" else incoming
    return incoming if incoming.confidence > existing.confidence else existing


def _latest(a: datetime | None, b: datetime | None) -> datetime | None:
    values = [v for v in (a, b) if v is not None]
    return max(values) if values else None


def _actor(actor: str) -> Any:
    return actor if actor in ("heuristic", "induction", "llm", "overseer", "human") else "human"
