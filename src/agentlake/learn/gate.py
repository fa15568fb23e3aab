"""The gatekeeper (the seed's T5): no lesson becomes active before a replay of judged events.

A gated learning cycle (``loop.learn_cycle(gate=...)``) holds every lesson it adds or changes
pending (``Delta.activate`` false, and measurement may not activate it either); then
``Gatekeeper.review`` replays each pending or active lesson whose content changed since it last
passed (``replay_key``) over the newest judged events of its scope (``evidence
.read_judged_events``: what a judge accepted and refused, with each item's features):

- a lesson with a machine action of a domain that ``ReplaysJudged`` is replayed by code: the
  domain says which items the action would have left out;
- a lesson in words (or of a domain without the hook) is predicted by the gatekeeper's model,
  when it has one, over the first ``MODEL_EVENTS`` events; without a model it waits, pending.

A lesson that would have left out an item the judge accepted is refused: retired, actor
``gatekeeper``, with the items and why in the reason. One that passes is marked with what
passed (``Lesson.replayed``) and activates when its confidence has reached the activation
threshold (else it stays pending and may activate later, while its content holds). A lesson
with no judged event of its scope yet waits. The gatekeeper writes through the store's
transactions inside the learner's cycle: it is part of the learner, the one writer of lessons.
It does not own curation (``curation``), measurement (``effect``) or any domain's actions.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field

from agentlake.errors import AgentlakeError
from agentlake.learn.curation import ACTIVATE_AT
from agentlake.learn.domain import ReplaysJudged, find_domain
from agentlake.learn.evidence import JudgedOp, read_judged_events

if TYPE_CHECKING:
    from agentlake.learn.model import EventKind, Lesson
    from agentlake.learn.store import LessonStore

log = logging.getLogger(__name__)

ACTOR = "gatekeeper"
REPLAY_EVENTS = 50  # the newest judged events of a scope replayed per lesson
MODEL_EVENTS = 4  # events a model predicts per lesson in words (each is one call)
SHOWN_FAILURES = 3  # accepted items named in a refusal's reason
MAX_ITEMS_SHOWN = 20  # items of one event shown to the model

Outcome = Literal["passed", "refused", "waiting"]

INSTRUCTIONS = (
    "A lesson an agent may follow is given, then one judged event: the items an agent submitted, "
    "each with its id and features. Say which item ids the lesson would have left out. Answer "
    'JSON {"refused": [ids]}; an empty list when it would leave none out.'
)


def replay_key(lesson: Lesson) -> str:
    """What a replay checks: the lesson's identity with its action's exact values and words
    (a lesson whose list of left-out items grows is replayed again)."""
    content = json.dumps([lesson.key, lesson.machine, lesson.action, lesson.match.fields], sort_keys=True)
    return hashlib.sha256(content.encode()).hexdigest()[:16]


@dataclass
class Verdict:
    """What the replay found for one lesson."""

    lesson_id: str
    outcome: Outcome
    reason: str
    events: int = 0
    accepted: int = 0
    left_out_refused: int = 0
    failures: list[str] = field(default_factory=list)
    by: str = "code"

    def data(self) -> dict[str, object]:
        return {
            "outcome": self.outcome,
            "events": self.events,
            "accepted": self.accepted,
            "left_out_accepted": len(self.failures),
            "left_out_refused": self.left_out_refused,
            "by": self.by,
        }


class _Predicted(BaseModel):
    refused: list[int] = Field(default_factory=list, max_length=200)


class Gatekeeper:
    """Replays lessons over recent judged events before they may activate (module docstring).

    ``model``: predicts what a lesson in words would leave out (thinking on: it is no hot
    path); ``None``: those lessons wait. ``events``: judged events replayed per lesson.
    """

    def __init__(
        self, *, model: str | None = None, events: int = REPLAY_EVENTS, temperature: float | None = None
    ) -> None:
        self.model = model
        self.events = events
        self.temperature = temperature

    @staticmethod
    def may_activate(lesson: Lesson) -> bool:
        """Whether ``lesson`` passed its replay with its current content."""
        return lesson.replayed == replay_key(lesson)

    def replay(self, lesson: Lesson, events: Sequence[JudgedOp]) -> Verdict:
        """The verdict on ``lesson`` over ``events`` (its scope's, newest last)."""
        found = find_domain(lesson.domain)
        domain = found if isinstance(found, ReplaysJudged) else None
        if domain is not None:
            applying = [op for op in events if domain.replay_applies(lesson.match.fields, op.shape)]
        else:
            applying = list(events)
        if not applying:
            return Verdict(lesson.id, "waiting", "awaiting replay: no judged event it applies to yet")
        machine = lesson.machine if domain is not None else None
        if machine is None and self.model is None:
            return Verdict(
                lesson.id,
                "waiting",
                "awaiting replay: a lesson in words needs the gatekeeper's model to predict its effect",
            )
        verdict = Verdict(
            lesson.id, "passed", "", by="code" if machine is not None else f"model {self.model}"
        )
        replayed = applying if machine is not None else applying[-MODEL_EVENTS:]
        for op in replayed:
            if domain is not None and machine is not None:
                left_out = {
                    item.item_id: why
                    for item in op.items
                    if (why := domain.replay_refusal(machine, item.item_id, item.values)) is not None
                }
            else:
                predicted = self._predict(lesson, op)
                if predicted is None:
                    return Verdict(
                        lesson.id, "waiting", f"awaiting replay: the model {self.model} gave no prediction"
                    )
                left_out = {item_id: "the model predicts it is left out" for item_id in predicted}
            verdict.events += 1
            for item in op.items:
                if item.accepted:
                    verdict.accepted += 1
                    if item.item_id in left_out:
                        verdict.failures.append(
                            f"item {item.item_id} of {op.op_id} ({left_out[item.item_id]})"
                        )
                elif item.item_id in left_out:
                    verdict.left_out_refused += 1
        if verdict.failures:
            shown = "; ".join(verdict.failures[:SHOWN_FAILURES])
            more = (
                f" and {len(verdict.failures) - SHOWN_FAILURES} more"
                if len(verdict.failures) > SHOWN_FAILURES
                else ""
            )
            verdict.outcome = "refused"
            verdict.reason = (
                f"refused by the gatekeeper: replayed over {verdict.events} judged event(s), it would have "
                f"left out {len(verdict.failures)} of {verdict.accepted} item(s) the judge accepted: {shown}{more}"
            )
        else:
            verdict.reason = (
                f"passed the gatekeeper's replay over {verdict.events} judged event(s): leaves out none of "
                f"{verdict.accepted} accepted item(s), {verdict.left_out_refused} refused one(s)"
            )
        return verdict

    def _predict(self, lesson: Lesson, op: JudgedOp) -> set[int] | None:
        # Lazy (start-up time): the LLM layer loads on the first model call.
        from agentlake.llm import generate_structured
        from agentlake.llm.fence import DATA_RULE, data_block

        assert self.model is not None
        lines = [
            f"Lesson: when {lesson.trigger}: {lesson.action}",
            f"Event: {op.shape or op.scope}",
            "Items:",
        ]
        for item in op.items[:MAX_ITEMS_SHOWN]:
            values = ", ".join(f"{name} {_shown(value)}" for name, value in sorted(item.values.items()))
            lines.append(f"- id {item.item_id}: {values}")
        messages = [
            {"role": "system", "content": INSTRUCTIONS + "\n" + DATA_RULE},
            {"role": "user", "content": data_block("\n".join(lines))},
        ]
        try:
            reply = generate_structured(
                self.model,
                messages,
                _Predicted,
                max_tokens=800,
                retries=1,
                temperature=self.temperature,
                think=True,
            )
        except AgentlakeError as exc:
            log.warning("gatekeeper model %s gave no prediction: %s", self.model, exc.message)
            return None
        known = {item.item_id for item in op.items}
        return {item_id for item_id in reply.refused if item_id in known}

    def review(self, store: LessonStore) -> list[Verdict]:
        """Replay every pending or active lesson whose content has not passed yet; record each
        pass (activating it at the threshold) and refusal in one transaction. Waiting lessons
        are left as they are (an active one is held pending)."""
        lessons = [
            lesson
            for lesson in store.list()
            if lesson.status in ("pending", "active") and not self.may_activate(lesson)
        ]
        verdicts: list[tuple[Verdict, str]] = []
        cache: dict[tuple[str | None, str | None], list[JudgedOp]] = {}
        for lesson in lessons:
            scope = _scope(lesson)
            key = (scope, lesson.project_id)
            if key not in cache:
                cache[key] = read_judged_events(
                    store.db, scope=scope, project_id=lesson.project_id, limit=self.events
                )
            verdicts.append((self.replay(lesson, cache[key]), replay_key(lesson)))
        if not verdicts:
            return []
        with store.transaction() as txn:
            for verdict, content in verdicts:
                current = txn.get(verdict.lesson_id)
                if (
                    current is None
                    or replay_key(current) != content
                    or current.status not in ("pending", "active")
                ):
                    continue  # changed meanwhile: the next cycle replays it
                if verdict.outcome == "refused":
                    txn.record(
                        "retire",
                        current.model_copy(update={"status": "retired"}),
                        actor=ACTOR,
                        reason=verdict.reason,
                        data=verdict.data(),
                    )
                elif verdict.outcome == "passed":
                    ready = current.confidence >= ACTIVATE_AT - 1e-9
                    kind: EventKind = "activate" if ready and current.status == "pending" else "replay"
                    status = "active" if ready else current.status
                    txn.record(
                        kind,
                        current.model_copy(update={"replayed": content, "status": status}),
                        actor=ACTOR,
                        reason=verdict.reason,
                        data=verdict.data(),
                    )
                elif current.status == "active":
                    txn.record(
                        "replay",
                        current.model_copy(update={"status": "pending"}),
                        actor=ACTOR,
                        reason=f"held pending: {verdict.reason}",
                        data=verdict.data(),
                    )
        return [verdict for verdict, _ in verdicts]


def _scope(lesson: Lesson) -> str | None:
    """The judged events' scope a lesson is about: its value of its domain's partition field
    (``None``: any scope of its project)."""
    domain = find_domain(lesson.domain)
    name = domain.partition_field if domain is not None else None
    return lesson.match.fields.get(name) if name else None


def _shown(value: object) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(str(v) for v in value) + "]"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def summary(verdicts: Sequence[Verdict]) -> Mapping[str, int]:
    """Verdicts counted by outcome."""
    counts: dict[str, int] = {"passed": 0, "refused": 0, "waiting": 0}
    for verdict in verdicts:
        counts[verdict.outcome] += 1
    return counts
