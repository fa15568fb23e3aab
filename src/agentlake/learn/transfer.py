"""Lessons out of one store and into another: the export document and its import.

Owns the document (``{"format": "agentlake-lessons", "version": 1, "exported_at", "lessons"}``),
reading one back with every lesson validated before anything is written (``read_export``), and
the import rule over one ``db.Transaction`` (``import_lessons``): dedup by id, a project lesson
beats a global one with the same id, otherwise the higher confidence wins (ties keep the lesson
already here). It does not own opening stores (``store``) nor curation (an import records the
lessons as they were, it does not re-curate them).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from pydantic import BaseModel, ValidationError

from agentlake.errors import UserError
from agentlake.learn.model import Lesson

if TYPE_CHECKING:
    from agentlake.learn.db import Transaction

EXPORT_FORMAT = "agentlake-lessons"
EXPORT_VERSION = 1


class ImportReport(BaseModel):
    """What an import did, by lesson id."""

    added: list[str] = []
    replaced: list[str] = []
    kept: list[str] = []


def export_document(lessons: Sequence[Lesson], exported_at: datetime) -> str:
    """``lessons`` (sorted by id) as one JSON document."""
    payload = {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "exported_at": exported_at.isoformat(),
        "lessons": [lesson.model_dump(mode="json") for lesson in sorted(lessons, key=lambda x: x.id)],
    }
    return json.dumps(payload, ensure_ascii=False, indent=2)


def read_export(text: str | bytes) -> dict[str, Lesson]:
    """The lessons of an export document by id (a repeated id: the import rule's winner).
    ``UserError`` naming the first problem when it is not a valid document."""
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
            raise UserError(f"lesson #{index} in the import is invalid: {where}: {first['msg']}") from None
        if lesson.id in incoming:
            lesson = _import_winner(incoming[lesson.id], lesson)
        incoming[lesson.id] = lesson
    return incoming


def import_lessons(txn: Transaction, incoming: dict[str, Lesson], *, actor: str) -> ImportReport:
    """Record ``incoming`` in ``txn`` by the import rule; what was added, replaced and kept."""
    report = ImportReport()
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
                    "status_since": existing.status_since if existing.status == lesson.status else None,
                }
            )
            txn.record("edit", replacement, actor=actor, reason=f"imported: {why}")
            report.replaced.append(lesson_id)
        else:
            report.kept.append(lesson_id)
    return report


def _import_winner(existing: Lesson, incoming: Lesson) -> Lesson:
    if existing.scope != incoming.scope:
        return existing if existing.scope == "project" else incoming
    return incoming if incoming.confidence > existing.confidence else existing


def _latest(a: datetime | None, b: datetime | None) -> datetime | None:
    values = [v for v in (a, b) if v is not None]
    return max(values) if values else None
