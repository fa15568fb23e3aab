"""``LessonStore``: the one service over the lesson store, the DuckDB file
(``settings.learn_file``) or, with ``settings.database_url``, the same tables in PostgreSQL.

A thin front over the layers below it: ``db.LessonDB`` (the tables on either backend, their
migrations in ``schema``, transactions, the current lessons in memory and, in PostgreSQL, other
writers' changes taken in), the functions that change lessons inside one of its transactions
(``curation``: deltas and the lifecycle; ``effect``: citations, outcomes, measured effects;
``evidence``: judged items; ``transfer``: export and import), and what only the service holds:
retrieval's index of the current lessons by partition, and similarity (the embedder and a cache
of vectors by text). Callers open a store and call its methods; curation, effect and evidence
never reach back into it.

Usage metadata (``last_used_at``) and measured counts (``helpful``/``harmful``) are facts
about runs, not lesson content: a rollback restores content and keeps them.
``lesson_snapshot`` opens a private copy of a store for a reader beside the writer.
"""

from __future__ import annotations

import builtins
import re
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast, get_args

import numpy as np

from agentlake.errors import NotFoundError, UserError
from agentlake.learn import curation, effect, evidence, transfer
from agentlake.learn.db import LessonDB, PgSchema, Transaction
from agentlake.learn.domain import find_domain
from agentlake.learn.evidence import MAX_ITEMS_PER_SCOPE, EvidenceItem, JudgedOp
from agentlake.learn.model import (
    AppliedDelta,
    Delta,
    Lesson,
    LessonDraft,
    LessonEvent,
    LessonMatch,
    LessonSource,
    Scope,
    Status,
    TaskKey,
)
from agentlake.learn.transfer import ImportReport
from agentlake.settings import load_settings

if TYPE_CHECKING:
    from agentlake.embed import Embedder
    from agentlake.settings import Settings

__all__ = ["ImportReport", "LessonStore", "PgSchema", "lesson_snapshot"]


class LessonStore:
    """The lesson store: its tables (``db``), retrieval's index and similarity. Use :meth:`open`."""

    def __init__(self, db: LessonDB, *, embedder: Embedder | None | Literal[False]) -> None:
        self.db = db
        self._embedder = embedder
        self._lock = threading.RLock()  # the vector cache's and the index's
        self._vectors: dict[str, np.ndarray] = {}  # text -> unit vector
        self._pool: dict[str | None, list[str]] | None = None  # partition (folded) -> retrievable ids
        self._pool_changes = -1  # db.changes the pool was built at

    @property
    def path(self) -> Path | str:
        return self.db.path

    @property
    def settings(self) -> Settings:
        return self.db.settings

    @property
    def read_only(self) -> bool:
        return self.db.read_only

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
        return cls(LessonDB.open(settings, path=path, read_only=read_only, clock=clock), embedder=embedder)

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> LessonStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def now(self) -> datetime:
        """The store's clock, always tz-aware UTC."""
        return self.db.now()

    # --- reading -----------------------------------------------------------------------

    def get(self, lesson_id: str) -> Lesson:
        """The current lesson; ``NotFoundError`` if there is none with this id."""
        lesson = self.db.current().get(lesson_id)
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
    ) -> builtins.list[Lesson]:
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
        out = []
        for lesson in self.db.current().values():
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

    def history(self, lesson_id: str) -> builtins.list[LessonEvent]:
        """Every event of a lesson, oldest first; ``NotFoundError`` for an unknown id."""
        return self.db.history(lesson_id)

    def count_events(self) -> int:
        return self.db.count_events()

    def retrievable(self, task: TaskKey) -> builtins.list[Lesson]:
        """Pending and active lessons that may apply to ``task``: those pinned to its value of
        its domain's partition field and those pinned to none.
        Indexed by that value so retrieval does not scan every lesson."""
        lessons, changes = self.db.current_at()
        with self._lock:
            if self._pool is None or self._pool_changes != changes:
                pool: dict[str | None, list[str]] = {}
                for lesson in lessons.values():
                    if lesson.status in ("pending", "active"):
                        pool.setdefault(_partition(lesson.domain, lesson.match.fields), []).append(lesson.id)
                self._pool, self._pool_changes = pool, changes
            value = _partition(task.domain, task.fields)
            ids = self._pool.get(None, []) + (self._pool.get(value, []) if value is not None else [])
        return [lessons[lesson_id] for lesson_id in ids]

    def query(self, sql: str, params: Sequence[Any] = ()) -> builtins.list[tuple[Any, ...]]:
        """Read rows with the store's connection (for ``effect`` and reports); no writes."""
        return self.db.query(sql, params)

    # --- writing -----------------------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        """One unit of work, written all or nothing (see ``db.LessonDB.transaction``)."""
        with self.db.transaction() as txn:
            yield txn

    def propose(
        self, deltas: Sequence[Delta], *, learned_op_ids: Sequence[str] = ()
    ) -> builtins.list[AppliedDelta]:
        """Validate and apply extractor/human deltas by the curation rules; one transaction.

        Each delta gets an ``AppliedDelta`` saying what code did (added, confirmed, merged,
        edited, retired, contradiction, unchanged, rejected with the reason). A rejected delta
        writes nothing; the others are written together, with ``learned_op_ids`` marked as
        learned from (see ``unlearned``).
        """
        with self.db.transaction() as txn:
            if learned_op_ids:
                txn.mark_learned(learned_op_ids)
            return curation.apply_deltas(
                txn, deltas, vectors=self.vectors, threshold=self.settings.learn_dedup_threshold
            )

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
        with self.db.transaction() as txn:
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

    def maintain(self) -> builtins.list[LessonEvent]:
        """Decay unused lessons and expire stale pending ones (see ``curation.maintain``)."""
        with self.db.transaction() as txn:
            return curation.maintain(txn)

    def promote(self) -> builtins.list[LessonEvent]:
        """Promote lessons seen in >= 2 projects with mean confidence >= 0.8 to global."""
        with self.db.transaction() as txn:
            return curation.promote(txn, vectors=self.vectors, threshold=self.settings.learn_dedup_threshold)

    # --- export and import ----------------------------------------------------------------

    def export_json(self, *, status: Status | Sequence[Status] | None = None) -> str:
        """All current lessons (or those with ``status``) as one JSON document."""
        return transfer.export_document(self.list(status=status), self.now())

    def import_json(self, text: str | bytes, *, actor: str = "human") -> ImportReport:
        """Import an export; dedup by id: a project lesson beats a global one with the same id,
        otherwise the higher confidence wins (ties keep the lesson already here).

        The whole document is validated first: a bad document raises ``UserError`` and
        writes nothing.
        """
        incoming = transfer.read_export(text)
        with self.db.transaction() as txn:
            return transfer.import_lessons(txn, incoming, actor=actor)

    # --- citations, what the learner has read, judged evidence ----------------------------------

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
        with self.db.transaction() as txn:
            effect.cite(txn, run_id, lesson_ids, used=used, agent_id=agent_id, sig_hash=sig_hash)

    def citations(
        self, *, run_id: str | None = None, lesson_id: str | None = None
    ) -> builtins.list[dict[str, Any]]:
        """Citation rows (run_id, lesson_id, agent_id, sig_hash, given_at, used)."""
        return effect.citation_rows(self.db, run_id=run_id, lesson_id=lesson_id)

    def learn_cursor(self, source: str) -> int:
        """The commit sequence the learner has read ``source``'s ops up to (0: none yet)."""
        return self.db.learn_cursor(source)

    def set_learn_cursor(self, source: str, seq: int) -> None:
        """Record that the learner has read ``source``'s ops up to ``seq``."""
        with self.db.transaction() as txn:
            txn.set_learn_cursor(source, seq)

    def unlearned(self, op_ids: Sequence[str]) -> set[str]:
        """The ids among ``op_ids`` not yet learned from."""
        return self.db.unlearned(op_ids)

    def record_evidence(self, judged: Sequence[JudgedOp], *, project_id: str | None) -> None:
        """Keep the items of ``judged`` ops (idempotent by op and item)."""
        with self.db.transaction() as txn:
            evidence.write_judged(txn, judged, project_id=project_id)

    def evidence(
        self, scope: str, *, project_id: str | None = None, limit: int = MAX_ITEMS_PER_SCOPE
    ) -> tuple[dict[str, dict[str, str]], builtins.list[EvidenceItem]]:
        """The features (the newest op's) and the newest ``limit`` items judged for ``scope``,
        oldest first."""
        return evidence.read_evidence(self.db, scope, project_id=project_id, limit=limit)

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


def _actor(actor: str) -> LessonSource:
    return cast(LessonSource, actor) if actor in get_args(LessonSource) else "human"
