"""Curation by code: how proposed deltas change lessons, and the lifecycle over time.

Owns the rules of the issue, in one place:

- dedup: an ADD whose identity (match + machine action, or normalised words) equals a visible
  lesson's, or whose text is at least ``settings.learn_dedup_threshold`` similar (embedding
  cosine) with the same match, merges its evidence into that lesson instead of adding a twin;
- contradiction: same trigger (same match), incompatible action (conflicting machine values,
  or near-identical words where one action starts "do not"/"never"/"avoid" and the other
  does not): both lowered by 0.1 and put on conflict-hold;
- confidence: +0.05 per confirmation, -0.05 per measured failure, -0.1 per contradiction,
  -0.02 per whole week unused; a lesson decayed to 0 is retired;
- pending -> active at >= 0.8 (or measured helpful, see ``effect``); pending lessons expire
  (retire) 30 days after they became pending;
- promotion to global when the same lesson is active in >= 2 projects with mean confidence
  >= 0.8: the most confident copy becomes global, the others fold into it.

Functions over one ``db.Transaction``: the caller (``store.LessonStore``) opens it and passes
the similarity of texts (``vectors``, ``None`` when similarity is off) and the dedup threshold.
It does not own storage (``db``), extraction (``extractor``) or measurement (``effect``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import ValidationError

from agentlake.learn.domain import find_domain
from agentlake.learn.model import (
    DEFAULT_PROJECT,
    AppliedDelta,
    Delta,
    Lesson,
    LessonEvent,
    make_lesson_id,
)

if TYPE_CHECKING:
    from agentlake.learn.db import Transaction

# Unit vectors of texts, one row per text, or None when similarity is off.
Vectors = Callable[[Sequence[str]], "np.ndarray | None"]

CONFIRM_STEP = 0.05
FAIL_STEP = 0.05
CONTRADICT_STEP = 0.1
DECAY_PER_WEEK = 0.02
ACTIVATE_AT = 0.8
PENDING_TTL = timedelta(days=30)
PROMOTE_MIN_PROJECTS = 2
PROMOTE_MIN_CONFIDENCE = 0.8

EDITABLE = {"trigger", "action", "match", "machine", "domain"}
EDITABLE_BY_PEOPLE = EDITABLE | {"confidence", "status"}

# An action that starts by forbidding is the opposite of one that prescribes. Looking at the
# start only keeps "require a signature; reject forms without it" from reading as negative.
_NEGATIVE_START = re.compile(
    r"^\s*(do not|don't|dont|never|avoid|stop|no longer|don't ever)\b", re.IGNORECASE
)


def negated(action: str) -> bool:
    """Whether an action forbids rather than prescribes (judged by how it starts)."""
    return bool(_NEGATIVE_START.match(action))


def with_confidence(lesson: Lesson, confidence: float) -> Lesson:
    """``lesson`` at ``confidence`` (clamped to [0, 1]); a pending lesson reaching 0.8 activates."""
    confidence = round(min(1.0, max(0.0, confidence)), 6)
    status = lesson.status
    if status == "pending" and confidence >= ACTIVATE_AT - 1e-9:
        status = "active"
    return lesson.model_copy(update={"confidence": confidence, "status": status})


def apply_deltas(
    txn: Transaction, deltas: Sequence[Delta], *, vectors: Vectors, threshold: float
) -> list[AppliedDelta]:
    """Apply ``deltas`` in order in ``txn``; see :meth:`LessonStore.propose`. ``vectors`` and
    ``threshold`` (``settings.learn_dedup_threshold``) decide near-duplicates in words."""
    results: list[AppliedDelta] = []
    for delta in deltas:
        point = txn.savepoint()
        try:
            if delta.op == "ADD":
                results.append(_add(txn, delta, vectors, threshold))
            elif delta.op == "EDIT":
                results.append(_edit(txn, delta))
            elif delta.op == "MERGE":
                results.append(_merge(txn, delta))
            else:
                results.append(_retire(txn, delta))
        except ValidationError as exc:
            txn.restore(point)
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or delta.op
            results.append(
                AppliedDelta(delta=delta, outcome="rejected", reason=f"invalid {where}: {first['msg']}")
            )
    return results


def _draft_lesson(delta: Delta, now: datetime) -> Lesson:
    draft = delta.lesson
    assert draft is not None
    data = draft.model_dump(exclude={"id"})
    if draft.scope == "project" and not draft.project_id:
        data["project_id"] = DEFAULT_PROJECT
    lesson = Lesson(id="L-x", created_at=now, updated_at=now, status="pending", **data)
    lesson_id = draft.id or make_lesson_id(lesson.key, lesson.scope, lesson.project_id)
    return _held_back(
        delta, "pending", with_confidence(lesson.model_copy(update={"id": lesson_id}), lesson.confidence)
    )


def _held_back(delta: Delta, before: str, lesson: Lesson) -> Lesson:
    """A delta that may not activate (an API proposal without an admin key) leaves a pending
    lesson pending, whatever confidence it reaches."""
    if not delta.activate and before == "pending" and lesson.status == "active":
        return lesson.model_copy(update={"status": "pending"})
    return lesson


def _visible(lesson: Lesson, candidate: Lesson) -> bool:
    """Lessons a candidate is deduplicated against: the global ones and its own project's."""
    if lesson.status == "retired":
        return False
    if candidate.scope == "global":
        return lesson.scope == "global"
    return lesson.scope == "global" or lesson.project_id == candidate.project_id


def _both_machine(a: Lesson, b: Lesson) -> bool:
    return a.machine is not None and b.machine is not None


def _conflict(a: Lesson, b: Lesson) -> str | None:
    """Why the machine actions of two lessons of one domain cannot both hold, or ``None``."""
    registered = find_domain(a.domain) if a.domain == b.domain else None
    if registered is None or a.machine is None or b.machine is None:
        return None
    return registered.action_conflict(a.machine, b.machine)


def _merged(domain: str, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Two machine actions of ``domain`` combined by its rules (``a`` when it has none)."""
    registered = find_domain(domain)
    return registered.merge_actions(a, b) if registered is not None else a


def _add(txn: Transaction, delta: Delta, vectors: Vectors, threshold: float) -> AppliedDelta:
    candidate = _draft_lesson(delta, txn.now)
    actor = delta.actor
    existing = txn.get(candidate.id)
    hops = 0
    while existing is not None and existing.status == "retired" and existing.merged_into and hops < 10:
        existing, hops = txn.get(existing.merged_into), hops + 1
    if existing is not None:
        if existing.status == "retired":
            return AppliedDelta(
                delta=delta,
                outcome="unchanged",
                lesson_id=existing.id,
                version=existing.version,
                reason=f"{existing.id} is retired; `agentlake lessons rollback` revives it",
            )
        return _confirm(txn, existing, candidate, delta, similarity=1.0)

    same_trigger = [lesson for lesson in txn.same_match(candidate) if _visible(lesson, candidate)]
    for peer in same_trigger:
        if peer.key == candidate.key:
            return _confirm(txn, peer, candidate, delta, similarity=1.0)

    conflicts: list[tuple[Lesson, str]] = []
    for peer in same_trigger:
        if _both_machine(peer, candidate):
            why = _conflict(candidate, peer)
            if why:
                conflicts.append((peer, why))

    best: tuple[Lesson, float] | None = None
    # Similarity decides only between lessons in words: machine actions already have exact
    # identities (same key = duplicate) and exact conflicts (different values).
    worded = [peer for peer in same_trigger if not _both_machine(peer, candidate)]
    if worded:
        found = vectors([candidate.text()] + [peer.text() for peer in worded])
        if found is not None:
            for peer, similarity in zip(worded, found[1:] @ found[0], strict=True):
                if similarity < threshold:
                    continue
                if negated(peer.action) != negated(candidate.action):
                    conflicts.append(
                        (peer, f"opposite action for the same trigger (similarity {similarity:.2f})")
                    )
                elif best is None or similarity > best[1]:
                    best = (peer, float(similarity))

    if conflicts:
        return _contradiction(txn, candidate, conflicts, delta)
    if best is not None:
        return _confirm(txn, best[0], candidate, delta, similarity=best[1])
    stored = txn.record("add", candidate, actor=actor, reason=delta.reason or "new lesson")
    return AppliedDelta(
        delta=delta, outcome="added", lesson_id=stored.id, version=stored.version, reason=delta.reason
    )


def _confirm(
    txn: Transaction, existing: Lesson, candidate: Lesson, delta: Delta, *, similarity: float
) -> AppliedDelta:
    """Fold a re-observation into ``existing``: evidence merged, +0.05 if the evidence is new."""
    new_ids = [op_id for op_id in candidate.evidence_op_ids if op_id not in existing.evidence_op_ids]
    outcome = "confirmed" if candidate.id == existing.id or candidate.key == existing.key else "merged"
    if candidate.evidence_op_ids and not new_ids:
        return AppliedDelta(
            delta=delta,
            outcome="unchanged",
            lesson_id=existing.id,
            version=existing.version,
            reason="already learned from the same ops",
        )
    machine = existing.machine
    action = existing.action
    if existing.machine is not None and candidate.machine is not None and existing.domain == candidate.domain:
        merged = _merged(existing.domain, existing.machine, candidate.machine)
        if merged != existing.machine:
            machine = merged
            if merged == candidate.machine:  # the candidate's words describe the merged action
                action = candidate.action
    updated = existing.model_copy(
        update={
            "machine": machine,
            "action": action,
            "evidence_op_ids": existing.evidence_op_ids + new_ids,
            "evidence_excerpts": existing.evidence_excerpts + candidate.evidence_excerpts,
            "evidence_count": existing.evidence_count + max(len(new_ids), 1),
        }
    )
    updated = _held_back(delta, existing.status, with_confidence(updated, existing.confidence + CONFIRM_STEP))
    reason = delta.reason or "re-observed"
    if outcome == "merged":
        reason = f"{reason} (near-duplicate, similarity {similarity:.2f})"
    stored = txn.record(
        "confirm",
        updated,
        actor=delta.actor,
        reason=reason,
        data={"candidate_id": candidate.id, "new_evidence": len(new_ids), "similarity": round(similarity, 4)},
    )
    return AppliedDelta(
        delta=delta,
        outcome=outcome,
        lesson_id=stored.id,
        version=stored.version,
        reason=reason,
        related_ids=[candidate.id] if candidate.id != stored.id else [],
    )


def _contradiction(
    txn: Transaction, candidate: Lesson, conflicts: list[tuple[Lesson, str]], delta: Delta
) -> AppliedDelta:
    txn.record("add", candidate, actor=delta.actor, reason=delta.reason or "new lesson")
    held = with_confidence(candidate, candidate.confidence - CONTRADICT_STEP).model_copy(
        update={"status": "conflict-hold"}
    )
    why_all = "; ".join(f"{peer.id}: {why}" for peer, why in conflicts)
    stored = txn.record(
        "contradict",
        held,
        actor=delta.actor,
        reason=f"contradicts {why_all}",
        data={"with": [peer.id for peer, _ in conflicts]},
    )
    for peer, why in conflicts:
        lowered = with_confidence(peer, peer.confidence - CONTRADICT_STEP).model_copy(
            update={"status": "conflict-hold"}
        )
        txn.record(
            "contradict",
            lowered,
            actor=delta.actor,
            reason=f"contradicted by {candidate.id}: {why}",
            data={"with": [candidate.id]},
        )
    return AppliedDelta(
        delta=delta,
        outcome="contradiction",
        lesson_id=stored.id,
        version=stored.version,
        reason=f"contradicts {why_all}; both on conflict-hold",
        related_ids=[peer.id for peer, _ in conflicts],
    )


def _target(txn: Transaction, delta: Delta, lesson_id: str | None = None) -> Lesson | AppliedDelta:
    lesson_id = lesson_id or delta.target_id
    lesson = txn.get(lesson_id or "")
    if lesson is None:
        return AppliedDelta(
            delta=delta, outcome="rejected", lesson_id=lesson_id, reason=f"no lesson {lesson_id}"
        )
    if lesson.status == "retired":
        return AppliedDelta(
            delta=delta, outcome="rejected", lesson_id=lesson_id, reason=f"{lesson_id} is retired"
        )
    return lesson


def _edit(txn: Transaction, delta: Delta) -> AppliedDelta:
    target = _target(txn, delta)
    if isinstance(target, AppliedDelta):
        return target
    allowed = EDITABLE_BY_PEOPLE if delta.actor in ("human", "overseer") else EDITABLE
    unknown = set(delta.changes) - allowed
    if unknown:
        return AppliedDelta(
            delta=delta,
            outcome="rejected",
            lesson_id=target.id,
            reason=f"{delta.actor} may not edit {sorted(unknown)}; editable: {sorted(allowed)}",
        )
    if delta.changes.get("status") == "retired":
        return AppliedDelta(
            delta=delta, outcome="rejected", lesson_id=target.id, reason="use RETIRE to retire a lesson"
        )
    data: dict[str, Any] = target.model_dump()
    data.update(delta.changes)
    data["key"] = ""  # recomputed from the edited content
    edited = Lesson.model_validate(data)
    if "confidence" in delta.changes and "status" not in delta.changes:
        edited = with_confidence(edited, edited.confidence)
    stored = txn.record(
        "edit",
        edited,
        actor=delta.actor,
        reason=delta.reason or "edited",
        data={"fields": sorted(delta.changes)},
    )
    return AppliedDelta(
        delta=delta, outcome="edited", lesson_id=stored.id, version=stored.version, reason=delta.reason
    )


def _merge(txn: Transaction, delta: Delta) -> AppliedDelta:
    target = _target(txn, delta)
    if isinstance(target, AppliedDelta):
        return target
    sources: list[Lesson] = []
    for lesson_id in dict.fromkeys(delta.merge_ids):
        if lesson_id == target.id:
            continue
        source = _target(txn, delta, lesson_id)
        if isinstance(source, AppliedDelta):
            return source
        sources.append(source)
    if not sources:
        return AppliedDelta(delta=delta, outcome="rejected", lesson_id=target.id, reason="nothing to merge")
    machine = target.machine
    registered = find_domain(target.domain)
    for source in sources:
        if source.machine is not None:
            why = (
                registered.action_conflict(machine, source.machine)
                if registered is not None and machine is not None
                else None
            )
            if why:
                return AppliedDelta(
                    delta=delta,
                    outcome="rejected",
                    lesson_id=target.id,
                    reason=f"cannot merge {source.id}: {why}",
                )
            machine = source.machine if machine is None else _merged(target.domain, machine, source.machine)
    merged = target.model_copy(
        update={
            "machine": machine,
            "evidence_op_ids": target.evidence_op_ids + [i for s in sources for i in s.evidence_op_ids],
            "evidence_excerpts": target.evidence_excerpts + [x for s in sources for x in s.evidence_excerpts],
            "evidence_count": target.evidence_count + sum(s.evidence_count for s in sources),
            "helpful": target.helpful + sum(s.helpful for s in sources),
            "harmful": target.harmful + sum(s.harmful for s in sources),
        }
    )
    merged = with_confidence(merged, max([target.confidence] + [s.confidence for s in sources]))
    ids = [s.id for s in sources]
    stored = txn.record(
        "merge",
        merged,
        actor=delta.actor,
        reason=delta.reason or f"merged {', '.join(ids)}",
        data={"merged": ids},
    )
    for source in sources:
        txn.record(
            "merge",
            source.model_copy(update={"status": "retired", "merged_into": target.id}),
            actor=delta.actor,
            reason=f"merged into {target.id}" + (f": {delta.reason}" if delta.reason else ""),
            data={"merged_into": target.id},
        )
    return AppliedDelta(
        delta=delta,
        outcome="merged",
        lesson_id=stored.id,
        version=stored.version,
        reason=delta.reason,
        related_ids=ids,
    )


def _retire(txn: Transaction, delta: Delta) -> AppliedDelta:
    target = _target(txn, delta)
    if isinstance(target, AppliedDelta):
        return target
    stored = txn.record(
        "retire",
        target.model_copy(update={"status": "retired"}),
        actor=delta.actor,
        reason=delta.reason or "retired",
    )
    return AppliedDelta(
        delta=delta, outcome="retired", lesson_id=stored.id, version=stored.version, reason=delta.reason
    )


def maintain(txn: Transaction) -> list[LessonEvent]:
    """Expire stale pending lessons, then decay unused ones in ``txn``; returns its events.

    A pending lesson expires 30 days after it became pending. Confidence drops 0.02 per whole
    week since the later of its last use (given to a run) and its last decay; creation counts
    as a use. A lesson decayed to 0 is retired.
    """
    week = timedelta(weeks=1)
    for lesson in sorted(txn.lessons.values(), key=lambda lesson: lesson.id):
        if lesson.status not in ("pending", "active"):
            continue
        since = lesson.status_since or lesson.created_at
        if lesson.status == "pending" and txn.now - since >= PENDING_TTL:
            txn.record(
                "retire",
                lesson.model_copy(update={"status": "retired"}),
                actor="code",
                reason=f"expired: pending for {(txn.now - since).days} days without reaching {ACTIVATE_AT} "
                "or a measured benefit",
                data={"pending_since": since.isoformat()},
            )
            continue
        reference = max(lesson.last_used_at or lesson.created_at, lesson.decayed_through or lesson.created_at)
        weeks = int((txn.now - reference) / week)
        if weeks < 1:
            continue
        decayed = with_confidence(lesson, lesson.confidence - DECAY_PER_WEEK * weeks)
        decayed = decayed.model_copy(update={"decayed_through": reference + weeks * week})
        stored = txn.record(
            "decay",
            decayed,
            actor="code",
            reason=f"unused for {weeks} week(s): -{DECAY_PER_WEEK * weeks:.2f}",
            data={"weeks": weeks, "before": lesson.confidence},
        )
        if stored.confidence <= 0:
            txn.record(
                "retire",
                stored.model_copy(update={"status": "retired"}),
                actor="code",
                reason="decayed to 0",
            )
    return txn.events


def promote(txn: Transaction, *, vectors: Vectors, threshold: float) -> list[LessonEvent]:
    """Promote project lessons active in >= 2 projects with mean confidence >= 0.8 to global,
    in ``txn``; returns its events.

    "The same lesson" means the same identity key, or (for lessons in words) the same match
    and text similarity at or above ``settings.learn_dedup_threshold``. The most confident
    copy becomes the global lesson (its id is kept); the others fold into it.
    """
    candidates = sorted(
        (
            lesson
            for lesson in txn.lessons.values()
            if lesson.status == "active" and lesson.scope == "project"
        ),
        key=lambda lesson: lesson.id,
    )
    global_keys = {
        lesson.key
        for lesson in txn.lessons.values()
        if lesson.scope == "global" and lesson.status != "retired"
    }
    groups = _group_same(candidates, vectors, threshold)
    for group in groups:
        projects = sorted({lesson.project_id or "" for lesson in group})
        mean = sum(lesson.confidence for lesson in group) / len(group)
        if len(projects) < PROMOTE_MIN_PROJECTS or mean < PROMOTE_MIN_CONFIDENCE - 1e-9:
            continue
        if any(lesson.key in global_keys for lesson in group):
            continue
        survivor = max(
            group, key=lambda lesson: (lesson.confidence, -lesson.created_at.timestamp(), lesson.id)
        )
        others = [lesson for lesson in group if lesson is not survivor]
        promoted = survivor.model_copy(
            update={
                "scope": "global",
                "project_id": None,
                "evidence_op_ids": survivor.evidence_op_ids + [i for o in others for i in o.evidence_op_ids],
                "evidence_excerpts": survivor.evidence_excerpts
                + [x for o in others for x in o.evidence_excerpts],
                "evidence_count": sum(lesson.evidence_count for lesson in group),
                "helpful": sum(lesson.helpful for lesson in group),
                "harmful": sum(lesson.harmful for lesson in group),
            }
        )
        promoted = with_confidence(promoted, mean)
        txn.record(
            "promote",
            promoted,
            actor="code",
            reason=f"seen in {len(projects)} projects ({', '.join(projects)}) with mean confidence {mean:.2f}",
            data={
                "projects": projects,
                "members": [lesson.id for lesson in group],
                "mean_confidence": round(mean, 4),
            },
        )
        for other in others:
            txn.record(
                "merge",
                other.model_copy(update={"status": "retired", "merged_into": survivor.id}),
                actor="code",
                reason=f"promoted into global {survivor.id}",
                data={"merged_into": survivor.id},
            )
        global_keys.add(survivor.key)
    return txn.events


def _group_same(lessons: list[Lesson], vectors: Vectors, threshold: float) -> list[list[Lesson]]:
    """Union of lessons with the same identity key, or same match and similar words."""
    parent = list(range(len(lessons)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def union(i: int, j: int) -> None:
        parent[find(i)] = find(j)

    by_key: dict[str, int] = {}
    for i, lesson in enumerate(lessons):
        if lesson.key in by_key:
            union(i, by_key[lesson.key])
        else:
            by_key[lesson.key] = i
    worded = [i for i, lesson in enumerate(lessons) if lesson.machine is None]
    if len(worded) > 1:
        found = vectors([lessons[i].text() for i in worded])
        if found is not None:
            sims: np.ndarray = found @ found.T
            for a in range(len(worded)):
                for b in range(a + 1, len(worded)):
                    la, lb = lessons[worded[a]], lessons[worded[b]]
                    if (
                        sims[a, b] >= threshold
                        and la.match_key() == lb.match_key()
                        and negated(la.action) == negated(lb.action)
                    ):
                        union(worded[a], worded[b])
    groups: dict[int, list[Lesson]] = {}
    for i, lesson in enumerate(lessons):
        groups.setdefault(find(i), []).append(lesson)
    return [group for group in groups.values() if len(group) > 1]
