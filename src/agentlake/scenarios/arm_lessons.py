"""The lessons each learning arm of a run ended with, as ``leaderboard.json`` and the report show them.

Owns reading one arm's own lesson store at the end of a run, read-only, through the store's
public reading API (``LessonStore.list`` and ``learn.effect.effect_rows``), into plain records:
the lesson's words, when it was learned (after which batch, from the times in the run's
``learning.jsonl``), the evidence behind it, its measured effect and its status. It does not
learn, measure or judge lessons (``learn``, ``recovery``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from agentlake.learn.effect import effect_rows
from agentlake.learn.store import LessonStore, PgSchema

if TYPE_CHECKING:
    from agentlake.settings import Settings

# Active lessons first: they are what the arm ended up applying.
_STATUS_ORDER = {"active": 0, "pending": 1}


class ArmLesson(BaseModel):
    """One lesson of a learning arm's store at the end of the run."""

    id: str
    trigger: str
    action: str
    status: str
    confidence: float
    evidence_count: int = Field(description="Observations behind the lesson.")
    helpful: int = Field(description="Measured runs given the lesson that beat comparable runs without it.")
    harmful: int = Field(description="Measured runs given the lesson that fell short of them.")
    measured_runs: int = Field(description="Runs given the lesson whose effect was measured.")
    mean_effect: float | None = Field(
        description="Mean of the measured runs' value minus their baseline; None when none was measured."
    )
    created_at: datetime
    learned_after_batch: int | None = Field(
        None, description="The batch whose learning created it; None when the run did not record when."
    )

    @property
    def text(self) -> str:
        return f"{self.trigger}: {self.action}"


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def batch_of(created_at: datetime, learned: Sequence[tuple[int, datetime]]) -> int | None:
    """The first batch whose learning finished at or after ``created_at`` (``learned``: each
    batch and when the arm's learning of it finished); ``None`` when none did."""
    for batch, finished in sorted(learned):
        if _utc(created_at) <= _utc(finished):
            return batch
    return None


def read_arm_lessons(
    where: Path | PgSchema, settings: Settings, *, learned: Sequence[tuple[int, datetime]] = ()
) -> list[ArmLesson]:
    """Every lesson of the store at ``where`` (a file, or a schema in PostgreSQL), active
    first, then pending, then the rest, each in the order learned. ``[]`` for a store file
    that was never written (an arm that learned nothing). ``learned``: see ``batch_of``.
    Raises what ``LessonStore.open`` raises for a store it cannot read."""
    if isinstance(where, Path) and not where.exists():
        return []
    out = []
    with LessonStore.open(settings, path=where, read_only=True, embedder=False) as store:
        for lesson in store.list():
            deltas = [float(row["delta"]) for row in effect_rows(store, lesson.id)]  # type: ignore[arg-type]
            out.append(
                ArmLesson(
                    id=lesson.id,
                    trigger=lesson.trigger,
                    action=lesson.action,
                    status=str(lesson.status),
                    confidence=round(lesson.confidence, 4),
                    evidence_count=lesson.evidence_count,
                    helpful=lesson.helpful,
                    harmful=lesson.harmful,
                    measured_runs=len(deltas),
                    mean_effect=round(sum(deltas) / len(deltas), 4) if deltas else None,
                    created_at=_utc(lesson.created_at),
                    learned_after_batch=batch_of(lesson.created_at, learned),
                )
            )
    return sorted(out, key=lambda item: (_STATUS_ORDER.get(item.status, 2), item.created_at, item.id))
