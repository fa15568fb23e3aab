"""Rule recovery: how close each learning arm came to each client's hidden rules. Evaluation only.

Owns ``rule_recovery``: at the end of a run, for each learning arm and each client, the
filters the arm's lessons would apply to each of the client's orders (what the rules policy
is given: ``learn.retrieve_lessons``, combined as ``agents.lessons_for`` combines them) set
against the client's hidden acceptance, on the run's order pools (``pools.ClientPools``):

- each hidden rule (a certification, a score floor, the distance limit, no prior no-show) is
  **exact** when the learned filter refuses the same workers of every pool as the rule does,
  **too strict** when it refuses some worker the rule admits, **too loose** when it admits
  some worker the rule refuses (or is missing from some of the orders), **missed** when no
  order has it. Role synonyms widen what the client takes and are no filter: not counted;
  a rule only resumes answer (``resume_facts``) is **exact** when every order's lessons keep
  the client's words for it, **missed** when none does, **too loose** in between;
- a learned filter on something the client has no rule for is **spurious**;
- **pool cost**: the workers the client would take (every hidden rule, bookings ignored) that
  the learned filters leave out, over all of them;
- a lesson is **harmful** when, applied alone, it leaves out a worker the client would take.

The hidden acceptance is read here and in ``judge`` only; nothing here is recorded in the
observer, so no extractor can read it. It does not own the pools (``pools``) nor the lessons
(``learn``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from agentlake.learn import LessonStore, retrieve_lessons
from agentlake.learn.store import PgSchema
from agentlake.scenarios.scenario import Acceptance
from agentlake.workforce.learning import StaffingAction, action_of
from agentlake.workforce.resume_facts import FACTS

if TYPE_CHECKING:
    from agentlake.learn import Lesson
    from agentlake.scenarios.pools import ClientPools, OrderPool
    from agentlake.settings import Settings

VERDICTS = ("exact", "too_strict", "too_loose", "missed")


class RuleVerdict(BaseModel):
    rule: str = Field(description="The judge's name for it: required_certification, min_<score>, ...")
    truth: str
    learned: list[str] = Field(default_factory=list, description="The values applied, over the orders.")
    verdict: str


class ClientRecovery(BaseModel):
    """One arm's recovery of one client's hidden rules."""

    arm: str
    feedback: str
    client_id: str
    rules: list[RuleVerdict] = Field(default_factory=list)
    spurious: list[str] = Field(default_factory=list)
    acceptable: int = Field(0, description="Workers the client would take, summed over its order pools.")
    excluded_acceptable: int = Field(0, description="Of those, left out by the learned filters.")
    harmful: list[str] = Field(default_factory=list, description="Lessons that alone leave out one of them.")
    lessons: int = Field(0, description="Lessons with a filter given for this client's orders.")

    @property
    def pool_cost(self) -> float:
        return self.excluded_acceptable / self.acceptable if self.acceptable else 0.0

    def counts(self) -> dict[str, int]:
        return {v: sum(r.verdict == v for r in self.rules) for v in VERDICTS}

    def summary(self) -> dict[str, Any]:
        return {
            **self.model_dump(),
            **self.counts(),
            "pool_cost": round(self.pool_cost, 4),
        }


# A hidden rule as a one-rule acceptance, and the part of a learned filter that states it.
_Rule = tuple[str, str, Acceptance]


def _hidden_rules(acceptance: Acceptance) -> list[_Rule]:
    rules: list[_Rule] = [
        ("required_certification", cert, Acceptance(required_certifications=[cert]))
        for cert in acceptance.required_certifications
    ]
    rules += [
        (f"min_{name}", f"{floor:g}", Acceptance(min_scores={name: floor}))
        for name, floor in sorted(acceptance.score_minimums().items())
    ]
    if acceptance.max_distance_miles is not None:
        rules.append(
            (
                "max_distance_miles",
                f"{acceptance.max_distance_miles:g}",
                Acceptance(max_distance_miles=acceptance.max_distance_miles),
            )
        )
    if acceptance.exclude_prior_no_show:
        rules.append(("exclude_prior_no_show", "yes", Acceptance(exclude_prior_no_show=True)))
    return rules


def _parts(action: StaffingAction) -> list[tuple[str, str, StaffingAction]]:
    """The filters of ``action`` one by one: (rule name, value, the filter alone)."""
    out = [
        ("required_certification", cert, StaffingAction(require_certifications=[cert]))
        for cert in action.require_certifications
    ]
    out += [
        (f"min_{name}", f"{floor:g}", StaffingAction(min_scores={name: floor}))
        for name, floor in action.min_scores.items()
    ]
    if action.max_distance_miles is not None:
        out.append(
            (
                "max_distance_miles",
                f"{action.max_distance_miles:g}",
                StaffingAction(max_distance_miles=action.max_distance_miles),
            )
        )
    if action.exclude_prior_no_show_at_client:
        out.append(("exclude_prior_no_show", "yes", StaffingAction(exclude_prior_no_show_at_client=True)))
    return out


def _same(pools: ClientPools, rule: str, truth: str, learned: str) -> bool:
    """Whether a learned part states this hidden rule (a certification: the same by its key)."""
    if rule != "required_certification":
        return True
    return pools.matching.certification_key(truth) == pools.matching.certification_key(learned)


def _given(store: LessonStore, pool: OrderPool) -> tuple[list[Lesson], StaffingAction]:
    """The lessons with a filter the rules policy is given for ``pool``'s order, and their
    combined filter (a lesson conflicting with those taken before it is left out, as there)."""
    assert pool.order is not None
    retrieved = retrieve_lessons(store, pool.order.signature(), semantic=False)
    taken: list[Lesson] = []
    combined = StaffingAction()
    for lesson in retrieved.lessons:
        action = action_of(lesson)
        if action is None or action.is_empty():
            continue
        if taken and combined.conflicts_with(action) is not None:
            continue
        combined = combined.merged(action)
        taken.append(lesson)
    return taken, combined


def _verdict(per_pool: Sequence[str]) -> str:
    if all(v == "missed" for v in per_pool):
        return "missed"
    if "too_strict" in per_pool:
        return "too_strict"
    if "too_loose" in per_pool or "missed" in per_pool:
        return "too_loose"
    return "exact"


def client_recovery(
    pools: ClientPools, acceptance: Acceptance, store: LessonStore, *, arm: str, feedback: str
) -> ClientRecovery:
    """How ``store``'s lessons recover ``acceptance`` on ``pools`` (see the module docstring)."""
    found = ClientRecovery(arm=arm, feedback=feedback, client_id=pools.client.id)
    hidden = _hidden_rules(acceptance)
    verdicts: dict[str, list[str]] = {f"{rule}:{truth}": [] for rule, truth, _ in hidden}
    learned: dict[str, list[str]] = {key: [] for key in verdicts}
    spurious: dict[str, None] = {}
    harmful: dict[str, None] = {}
    given_ids: set[str] = set()
    for pool in pools.pools.values():
        if not pool.workers or pool.order is None:
            continue
        everyone = {w.worker_id for w in pool.workers}
        acceptable = pools.acceptable(pool, acceptance)
        lessons, combined = _given(store, pool)
        given_ids.update(lesson.id for lesson in lessons)
        kept = {w.worker_id for w in pool.workers if pools.admits(pool, w, combined)}
        found.acceptable += len(acceptable)
        found.excluded_acceptable += len(acceptable - kept)
        for lesson in lessons:
            action = action_of(lesson)
            assert action is not None
            alone = {w.worker_id for w in pool.workers if pools.admits(pool, w, action)}
            if acceptable - alone:
                harmful[lesson.id] = None
        parts = _parts(combined)
        for rule, truth, one in hidden:
            key = f"{rule}:{truth}"
            mine = [
                (value, part)
                for name, value, part in parts
                if name == rule and _same(pools, rule, truth, value)
            ]
            if not mine:
                verdicts[key].append("missed")
                continue
            value, part = mine[0]
            learned[key].append(value)
            truth_refuses = everyone - pools.acceptable(pool, one)
            learned_refuses = {w.worker_id for w in pool.workers if not pools.admits(pool, w, part)}
            if learned_refuses - truth_refuses:
                verdicts[key].append("too_strict")
            elif truth_refuses - learned_refuses:
                verdicts[key].append("too_loose")
            else:
                verdicts[key].append("exact")
        for name, value, _part in parts:
            if not any(name == rule and _same(pools, rule, truth, value) for rule, truth, _ in hidden):
                spurious[f"{name} {value}"] = None
        # A rule only resumes answer is recovered when a lesson keeps the client's words for it.
        wished = {w.casefold() for w in combined.resume_wishes}
        for key in acceptance.resume_facts:
            said = FACTS[key].wish
            verdicts.setdefault(f"resume_wish:{said}", []).append(
                "exact" if said.casefold() in wished else "missed"
            )
            if said.casefold() in wished:
                learned.setdefault(f"resume_wish:{said}", []).append(said)
        truths = {FACTS[key].wish.casefold() for key in acceptance.resume_facts}
        for words in combined.resume_wishes:
            if words.casefold() not in truths:
                spurious[f"resume_wish {words}"] = None
    found.rules = [
        RuleVerdict(
            rule=rule,
            truth=truth,
            learned=list(dict.fromkeys(learned[f"{rule}:{truth}"])),
            verdict=_verdict(verdicts[f"{rule}:{truth}"] or ["missed"]),
        )
        for rule, truth, _ in hidden
    ] + [
        RuleVerdict(
            rule="resume_wish",
            truth=FACTS[key].wish,
            learned=list(dict.fromkeys(learned.get(f"resume_wish:{FACTS[key].wish}", []))),
            verdict=_verdict(verdicts.get(f"resume_wish:{FACTS[key].wish}") or ["missed"]),
        )
        for key in acceptance.resume_facts
    ]
    found.spurious = list(spurious)
    found.harmful = sorted(harmful)
    found.lessons = len(given_ids)
    return found


def rule_recovery(
    arms: Iterable[tuple[str, str, Path | PgSchema, Mapping[str, tuple[ClientPools, Acceptance]]]],
    settings: Settings,
) -> list[ClientRecovery]:
    """``client_recovery`` for each (arm, feedback mode, its lesson store, its clients: id ->
    (order pools, hidden acceptance))."""
    out = []
    for arm, feedback, path, clients in arms:
        with LessonStore.open(settings, path=path, embedder=False) as store:
            for pools, acceptance in clients.values():
                out.append(client_recovery(pools, acceptance, store, arm=arm, feedback=feedback))
    return out


def recovery_by_arm(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Totals per arm over its clients (rows are ``ClientRecovery.summary()``): rules by
    verdict, spurious filters, harmful lessons, and the pool cost over every client's pool."""
    out: dict[str, dict[str, Any]] = {}
    for row in rows:
        total = out.setdefault(
            row["arm"],
            {
                "feedback": row["feedback"],
                **dict.fromkeys(VERDICTS, 0),
                "spurious": 0,
                "harmful": 0,
                "acceptable": 0,
                "excluded_acceptable": 0,
            },
        )
        for verdict in VERDICTS:
            total[verdict] += row[verdict]
        total["spurious"] += len(row["spurious"])
        total["harmful"] += len(row["harmful"])
        total["acceptable"] += row["acceptable"]
        total["excluded_acceptable"] += row["excluded_acceptable"]
    for total in out.values():
        total["pool_cost"] = (
            round(total["excluded_acceptable"] / total["acceptable"], 4) if total["acceptable"] else 0.0
        )
    return out


def recovery_line(arm: str, total: Mapping[str, Any]) -> str:
    """One line for a terminal: an arm's totals from ``recovery_by_arm``."""
    return (
        f"{arm}: hidden rules exact {total['exact']}, too strict {total['too_strict']}, too loose "
        f"{total['too_loose']}, missed {total['missed']}; spurious filters {total['spurious']}; "
        f"harmful lessons {total['harmful']}; pool cost {100 * total['pool_cost']:.1f}%"
    )
