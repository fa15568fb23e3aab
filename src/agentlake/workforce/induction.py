"""The induction extractor: a judge's unwritten rules, inferred from what it accepted and refused.

Where a judge does not say why it refused an item (vague or silent feedback; ``evidence``
has the op convention), the rules are read off the evidence: the items' features, accepted
against refused, across everything judged so far for the scope (kept in the lesson store).
A rule is a conjunction of simple filters, each a ``StaffingAction`` the rules policy applies:
a score floor (``min_scores``), a distance limit, a certification held, no prior no-show.

- **Candidates.** A filter is a candidate only if every accepted item passes it (the judge
  took them: a rule it holds cannot refuse them) and some refused item fails it. A
  certification is a candidate only if every accepted item holds it.
- **Evidence.** Candidates are taken greedily over the refusals not yet explained: the
  strongest first, where strength is the chance that labels unrelated to the feature would put
  only refused items on its wrong side (a hypergeometric tail, ``p``; smaller is stronger).
  A candidate is kept when ``p`` is at most ``ALPHA`` (silent), or ``ALPHA_NAMED`` when the
  judge's own words for a refusal it explains name the feature (``features[].words``: a hint,
  never proof). Between filters the evidence cannot tell apart: the one the scope already has,
  then a certification or flag before a fitted threshold, then the one leaving the most
  candidates. A refused item no kept
  filter explains is left out by id (``exclude_ids``): the judge would refuse it again.
- **Thresholds** sit just inside the refusals: one step (the evidence's precision) past the
  highest value refused for this reason alone (distance: the nearest), never past the lowest
  accepted value (the farthest). "Alone": no other kept rule explains the refusal, nor a
  certification or flag every accepted item passes (a worker refused nearby without the card
  every accepted one holds says nothing about the distance); such a refusal inside the
  threshold is left out by id instead. Conservative about the pool: a too-loose threshold is
  corrected by the next refusal, while a too-strict one would never be (nobody it excludes is
  proposed again to show otherwise).
- **Confidence** grows with the evidence: 0.8 at ``p = ALPHA``, +0.05 per tenfold less, at
  most 0.95; a lesson confirmed by new evidence gains the usual +0.05.
- **Revised, not stacked.** Each filter family (a score, the distance, one certification, the
  no-show flag, the refused ids) of a scope has one lesson; new evidence that moves a
  threshold EDITs it, evidence that no longer supports it (an accepted item that fails it)
  RETIREs it, with the reason in its history.
- **Never an empty pool.** With the domain's ``ExtractContext.pool_check``, a filter that
  would leave some order of the scope without a single candidate is withheld, and said so.
- **Contradictions.** The same item accepted and refused for the same order shape is dropped
  from the evidence (no lesson comes from it) and reported in ``context.notes``.
- **Synonyms.** A judge that accepted an item of another role than the one it was judged for
  (the ``accept_roles`` feature; ``evidence``) takes that role for it: one lesson per (scope,
  ordered role), matched to that role, listing the roles taken (``accept_roles``, a widening
  of the search, not a filter). An acceptance is direct evidence: confidence 0.8 for one
  worker, +0.05 for each further one, at most 0.95.

Learn's ``induction`` extractor runs every domain's rule extractors first (``StaffingRules``),
then this, so a judge that states its rules (explicit feedback) is learned exactly as before.
It does not own curation (``agentlake.learn.curation``) nor the features (the op states them:
``workforce.evidence``).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentlake.learn.evidence import EvidenceItem, read_judged
from agentlake.learn.extractor import ExtractContext, PoolCheck, PoolChecker
from agentlake.learn.model import (
    MAX_EVIDENCE_IDS,
    MAX_EXCLUDE_IDS,
    Delta,
    Lesson,
    LessonDraft,
    LessonMatch,
)
from agentlake.workforce.learning import DOMAIN, StaffingAction, action_of

if TYPE_CHECKING:
    from agentlake.learn.extractor import Op

# The filters a feature of the evidence may state (a ``StaffingAction`` field): ``min_scores.<name>``
# keeps workers at or above, ``max_distance_miles`` at or below, ``require_certifications``
# holders, ``exclude_prior_no_show_at_client`` those without the flag; ``accept_roles`` is a
# widening (the worker's role, stated when it is not the ordered one, ``ordered_role``).
FILTERS = ("max_distance_miles", "require_certifications", "exclude_prior_no_show_at_client", "accept_roles")
ACCEPT_ROLES = "accept_roles"
ORDERED_ROLE = "ordered_role"
SCORE_FILTER = "min_scores."

ALPHA = 0.02
ALPHA_NAMED = 0.5
BASE_CONFIDENCE = 0.8
MAX_CONFIDENCE = 0.95
SOURCE = "induction"
EXCLUDE_FAMILY = "exclude_ids"
SCORE_STEP = 0.001  # the precision of the evidence's scores
DISTANCE_STEP = 0.1  # and of its distances, in miles
MAX_IDS_IN_WORDS = 12

_WORD = re.compile(r"[a-z]+")


def stem(word: str) -> str:
    """A crude stem, the same on both sides: 'burned' ~ 'burn', 'shows' ~ 'show'."""
    for suffix in ("ing", "ed", "es", "ly", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def words(text: str) -> set[str]:
    return {stem(w) for w in _WORD.findall(text.casefold())}


def hypergeometric_tail(refused: int, accepted: int, covered: int) -> float:
    """The chance that ``covered`` items drawn from ``refused + accepted`` are all refused."""
    if covered <= 0:
        return 1.0
    return math.comb(refused, covered) / math.comb(refused + accepted, covered)


@dataclass(frozen=True)
class Point:
    """One item judged for one order shape (repeated judgements of it folded together)."""

    item_id: int
    shape: str
    accepted: bool
    values: Mapping[str, Any]
    said: tuple[str, ...]
    op_ids: tuple[str, ...]


@dataclass
class Candidate:
    """A filter on one feature that every accepted point passes."""

    feature: str
    filter: str
    bound: float | None = None  # the lowest (floors) / highest (limits) accepted value
    tag: str | None = None  # the certification

    @property
    def family(self) -> str:
        return f"{self.filter}:{self.tag.casefold()}" if self.tag else self.filter

    @property
    def fitted(self) -> bool:
        """A threshold placed between the evidence (a score floor, the distance limit)."""
        return self.filter.startswith(SCORE_FILTER) or self.filter == "max_distance_miles"

    def fails(self, point: Point, bound: float | None = None) -> bool:
        """Whether ``point`` fails the filter at ``bound`` (default: the accepted items' edge)."""
        value = point.values.get(self.feature)
        bound = self.bound if bound is None else bound
        if self.filter.startswith(SCORE_FILTER):
            return isinstance(value, float) and bound is not None and value < bound
        if self.filter == "max_distance_miles":
            return isinstance(value, float) and bound is not None and value > bound
        if self.filter == "require_certifications":
            return self.tag is not None and self.tag.casefold() not in _tags(value)
        return value is True  # exclude_prior_no_show_at_client

    def machine(self, explained: Sequence[Point]) -> StaffingAction:
        """The filter, its threshold just inside the refusals it explains (``_inside``)."""
        if self.filter.startswith(SCORE_FILTER) or self.filter == "max_distance_miles":
            assert self.bound is not None
            values = [float(p.values[self.feature]) for p in explained]
            if self.filter == "max_distance_miles":
                return StaffingAction(max_distance_miles=_inside(min(values), self.bound, -DISTANCE_STEP))
            threshold = _inside(max(values), self.bound, SCORE_STEP)
            return StaffingAction(min_scores={self.filter[len(SCORE_FILTER) :]: threshold})
        if self.filter == "require_certifications":
            return StaffingAction(require_certifications=[self.tag or ""])
        return StaffingAction(exclude_prior_no_show_at_client=True)


@dataclass
class Rule:
    """A kept candidate: the refusals it explains, how strongly, and the refusals its threshold
    is placed by (those no other kept rule explains, when there are any)."""

    candidate: Candidate
    explained: list[Point]
    p: float
    named: bool
    edge: list[Point] = field(default_factory=list)

    def machine(self) -> StaffingAction:
        return self.candidate.machine(self.edge or self.explained)

    def refuses(self, point: Point) -> bool:
        """Whether the lesson's filter (its threshold as placed, not the accepted edge) refuses
        ``point``."""
        machine = self.machine()
        if machine.max_distance_miles is not None:
            return self.candidate.fails(point, machine.max_distance_miles)
        if machine.min_scores:
            return self.candidate.fails(point, next(iter(machine.min_scores.values())))
        return self.candidate.fails(point)

    @property
    def confidence(self) -> float:
        alpha = ALPHA_NAMED if self.named else ALPHA
        gain = 0.05 * math.log10(alpha / max(self.p, 1e-12))
        return round(min(MAX_CONFIDENCE, BASE_CONFIDENCE + max(0.0, gain)), 3)


@dataclass
class Induction:
    """What the evidence of one scope supports."""

    scope: str
    accepted: int = 0
    refused: int = 0
    rules: list[Rule] = field(default_factory=list)
    exclude: list[Point] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    dropped: dict[str, str] = field(default_factory=dict)  # family -> why it is not a rule
    # ordered role -> the other roles accepted for it -> the points showing it
    synonyms: dict[str, dict[str, list[Point]]] = field(default_factory=dict)


def _inside(refused: float, accepted: float, step: float) -> float:
    """The loosest threshold that still refuses ``refused``: one step from it toward the
    ``accepted`` bound, never past that bound (the evidence's own precision: 0.001 for scores,
    0.1 mile). Looser would admit a worker the judge refused for this reason; stricter would
    exclude workers nothing shows the judge refuses, and nobody excluded is proposed again to
    show otherwise, while a threshold found too loose is corrected by the next refusal."""
    digits = max(0, -math.floor(math.log10(abs(step))))
    value = round(refused + step, digits)
    return min(value, accepted) if step > 0 else max(value, accepted)


def _tags(value: Any) -> set[str]:
    return {str(v).casefold() for v in value} if isinstance(value, list) else set()


def fold_points(items: Sequence[EvidenceItem], notes: list[str]) -> list[Point]:
    """One point per (item, shape). Refusals the item's own check explains are left out; an
    item both accepted and refused for one shape is contradictory and left out, with a note."""
    groups: dict[tuple[int, str], list[EvidenceItem]] = defaultdict(list)
    for item in items:
        groups[(item.item_id, item.shape)].append(item)
    points = []
    for (item_id, shape), group in groups.items():
        labels = {i.accepted for i in group if i.accepted or not i.explained}
        if not labels:
            continue
        if len(labels) == 2:
            notes.append(
                f"worker {item_id} was accepted and refused for {shape or 'the same order'}: "
                "contradictory evidence, no lesson from it"
            )
            continue
        said = tuple(dict.fromkeys(s for i in group for s in i.said))
        points.append(
            Point(
                item_id=item_id,
                shape=shape,
                accepted=labels.pop(),
                values=group[-1].values,
                said=said,
                op_ids=tuple(dict.fromkeys(i.op_id for i in group)),
            )
        )
    return points


def synonyms(
    features: Mapping[str, Mapping[str, str]], accepted: Sequence[Point]
) -> dict[str, dict[str, list[Point]]]:
    """The roles accepted for another ordered role: ordered role -> role -> accepted points
    (names as first seen, compared case-insensitively)."""
    names = [name for name, spec in sorted(features.items()) if spec.get("filter") == ACCEPT_ROLES]
    spelled: dict[str, str] = {}
    out: dict[str, dict[str, list[Point]]] = {}
    for point in accepted:
        wanted = point.values.get(ORDERED_ROLE)
        for name in names:
            role = point.values.get(name)
            if (
                not isinstance(role, str)
                or not isinstance(wanted, str)
                or role.casefold() == wanted.casefold()
            ):
                continue
            wanted = spelled.setdefault(wanted.casefold(), wanted)
            role = spelled.setdefault(role.casefold(), role)
            out.setdefault(wanted, {}).setdefault(role, []).append(point)
    return out


def candidates(features: Mapping[str, Mapping[str, str]], accepted: Sequence[Point]) -> list[Candidate]:
    """Every filter all ``accepted`` points pass (none without an accepted point)."""
    if not accepted:
        return []
    out: list[Candidate] = []
    for name, spec in sorted(features.items()):
        kind = spec.get("filter", "")
        values = [p.values.get(name) for p in accepted]
        if kind.startswith(SCORE_FILTER) or kind == "max_distance_miles":
            numbers = [v for v in values if isinstance(v, float)]
            if len(numbers) != len(values):
                continue
            bound = min(numbers) if kind.startswith(SCORE_FILTER) else max(numbers)
            out.append(Candidate(feature=name, filter=kind, bound=bound))
        elif kind == "require_certifications":
            held = [_tags(v) for v in values]
            common = set.intersection(*held) if held else set()
            display = {str(t).casefold(): str(t) for v in values if isinstance(v, list) for t in v}
            out += [Candidate(feature=name, filter=kind, tag=display[t]) for t in sorted(common)]
        elif kind == "exclude_prior_no_show_at_client" and not any(v is True for v in values):
            out.append(Candidate(feature=name, filter=kind))
    return out


def induce(
    scope: str,
    features: Mapping[str, Mapping[str, str]],
    items: Sequence[EvidenceItem],
    *,
    pool_check: PoolChecker | None = None,
    keep: Collection[str] = (),
) -> Induction:
    """The rules the evidence of ``scope`` supports (see the module docstring).

    ``keep``: the filter families the scope already has lessons for. Such a filter stays while
    every accepted item passes it, it still fails some refused item and the pool allows it,
    even when another filter now explains the same refusals (an item refused under two rules
    must not flip the lessons from one batch to the next); otherwise ``dropped`` says why.
    """
    result = Induction(scope=scope)
    points = fold_points(items, result.notes)
    accepted = [p for p in points if p.accepted]
    refused = [p for p in points if not p.accepted]
    result.accepted, result.refused = len(accepted), len(refused)
    result.synonyms = synonyms(features, accepted)
    if not refused:
        return result
    hints = {id(p): _hinted(p, features) for p in refused}
    every = candidates(features, accepted)
    residual = list(refused)
    open_candidates = list(every)
    action = StaffingAction()

    def named(candidate: Candidate, covered: Sequence[Point]) -> bool:
        return any(candidate.feature in hints[id(point)] for point in covered)

    def allowed(candidate: Candidate, covered: Sequence[Point]) -> PoolCheck | bool:
        """What the candidate leaves of the pool (True without a check); False, with a note,
        when it would leave some order without a candidate."""
        check = pool_check(scope, action.merged(candidate.machine(covered))) if pool_check else None
        if check is None:
            return True
        if check.emptied:
            why = "it would leave no candidate for " + ", ".join(check.emptied[:3])
            result.dropped[candidate.family] = why
            result.notes.append(f"{scope}: {_describe(candidate, covered)} withheld: {why}")
            return False
        return check

    while residual and open_candidates:
        scored = []
        for candidate in open_candidates:
            covered = [p for p in residual if candidate.fails(p)]
            if not covered:
                continue
            p = hypergeometric_tail(len(residual), len(accepted), len(covered))
            hinted = named(candidate, covered)
            if p <= (ALPHA_NAMED if hinted else ALPHA):
                # Between filters the evidence cannot tell apart: the one the scope already
                # has (stability), then a certification or flag before a fitted threshold
                # (a floor placed at the accepted items' minimum always fits them), then the
                # one leaving the most candidates (below).
                new_family = candidate.family not in keep
                key = (not hinted, round(p, 12), -len(covered), new_family, candidate.fitted)
                scored.append((key, candidate, covered, p, hinted))
        if not scored:
            break
        scored.sort(key=lambda entry: (entry[0], entry[1].family))
        best = [entry for entry in scored if entry[0] == scored[0][0]]
        chosen = None
        for _key, candidate, covered, p, hinted in best:
            open_candidates.remove(candidate)
            check = allowed(candidate, covered)
            if check is False:
                continue
            after = check.after if isinstance(check, PoolCheck) else 0
            if chosen is None or after > chosen[0]:
                if chosen is not None:
                    open_candidates.append(chosen[1].candidate)
                chosen = (after, Rule(candidate, covered, p, hinted))
            else:
                open_candidates.append(candidate)
        if chosen is None:
            continue
        rule = chosen[1]
        result.rules.append(rule)
        action = action.merged(rule.candidate.machine(rule.explained))
        residual = [p for p in residual if p not in rule.explained]
    by_family = {c.family: c for c in every}
    for family in keep:
        if family == EXCLUDE_FAMILY or family.startswith(ACCEPT_ROLES):
            continue
        if any(r.candidate.family == family for r in result.rules):
            continue
        kept = by_family.get(family)
        if kept is None:
            result.dropped.setdefault(family, "an accepted worker fails it")
            continue
        covered = [p for p in refused if kept.fails(p)]
        if not covered:
            result.dropped[family] = "it explains no refusal"
            continue
        if allowed(kept, covered) is False:
            continue
        p = hypergeometric_tail(len(refused), len(accepted), len(covered))
        result.rules.append(Rule(kept, covered, p, named(kept, covered)))
        action = action.merged(kept.machine(covered))
    # A threshold is placed by the refusals only its rule explains, where there are any, and
    # of those by the ones no certification or flag every accepted item passes could explain
    # either: a worker refused at 12 miles without the card every accepted worker holds says
    # nothing about the distance limit, and a limit placed by it would exclude for good workers
    # the client takes (nobody excluded is proposed again to show otherwise). A refusal left
    # inside the looser threshold is left out by id below, until its own rule has the evidence.
    # (Not a score floor at the accepted minimum: that always fits, and with few accepted
    # workers some refused worker falls below one by chance.)
    categorical = [c for c in every if not c.fitted]
    for rule in result.rules:
        others = [o.candidate for o in result.rules if o is not rule]
        own = [p for p in rule.explained if not any(o.fails(p) for o in others)] or rule.explained
        if rule.candidate.fitted:
            own = [p for p in own if not any(c.fails(p) for c in categorical)] or own
        rule.edge = own
    accepted_ids = {p.item_id for p in accepted}
    explained = [p for p in refused if any(r.refuses(p) for r in result.rules)]
    result.exclude = [p for p in refused if p not in explained and p.item_id not in accepted_ids]
    return result


def _hinted(point: Point, features: Mapping[str, Mapping[str, str]]) -> set[str]:
    """The features the judge's words for ``point`` name (by shared word stems)."""
    said = set().union(*(words(text) for text in point.said)) if point.said else set()
    return {name for name, spec in features.items() if said & words(spec.get("words", ""))}


def _describe(candidate: Candidate, explained: Sequence[Point]) -> str:
    return candidate.machine(explained).describe() if explained else candidate.family


# --- lessons --------------------------------------------------------------------------------


def lesson_id(project_id: str, scope: str, family: str, generation: int) -> str:
    """One lesson per (project, scope, filter family); a retired one's successor is the next
    generation (a retired id cannot be added again)."""
    digest = hashlib.sha256(f"{SOURCE}|{project_id}|{scope.casefold()}|{family}|{generation}".encode())
    return "L-" + digest.hexdigest()[:10]


def family_of(machine: StaffingAction | None, role: str | None = None) -> str | None:
    """The filter family an induced lesson's action belongs to (``role``: the lesson's)."""
    if machine is None:
        return None
    if machine.accept_roles:
        return f"{ACCEPT_ROLES}:{(role or '').casefold()}"
    if machine.exclude_ids:
        return EXCLUDE_FAMILY
    if machine.min_scores:
        return SCORE_FILTER + next(iter(machine.min_scores))
    if machine.max_distance_miles is not None:
        return "max_distance_miles"
    if machine.require_certifications:
        return "require_certifications:" + machine.require_certifications[0].casefold()
    if machine.exclude_prior_no_show_at_client:
        return "exclude_prior_no_show_at_client"
    return None


@dataclass
class _Wanted:
    family: str
    machine: StaffingAction
    action: str
    confidence: float
    op_ids: list[str]
    excerpts: list[str]
    why: str
    role: str | None = None  # the lesson is about this ordered role only


def _wanted(found: Induction) -> list[_Wanted]:
    """The lessons the evidence supports, in words and as filters."""
    scope = found.scope
    judged = found.accepted + found.refused
    out = []
    for rule in found.rules:
        c, machine = rule.candidate, rule.machine()
        refused = len(rule.explained)
        basis = f"{refused} refused, {found.accepted} accepted of {judged} judged workers; induced"
        if c.filter.startswith(SCORE_FILTER):
            name, value = next(iter(machine.min_scores.items()))
            edge = max(float(p.values[c.feature]) for p in rule.edge)
            action = (
                f"Only propose workers with {name} >= {value:g}: {scope} refused workers at {edge:g} "
                f"and below, and took them from {c.bound:g} ({basis})"
            )
        elif c.filter == "max_distance_miles":
            edge = min(float(p.values[c.feature]) for p in rule.edge)
            action = (
                f"Only propose workers living within {machine.max_distance_miles:g} miles of the site: "
                f"{scope} refused workers from {edge:g} miles and took them up to {c.bound:g} ({basis})"
            )
        elif c.filter == "require_certifications":
            action = (
                f"Only propose workers with {c.tag} on file: {scope} refused workers without it ({basis})"
            )
        else:
            action = f"Exclude workers who were ever a no-show at {scope}: {scope} refused them ({basis})"
        out.append(
            _Wanted(
                family=c.family,
                machine=machine,
                action=action,
                confidence=rule.confidence,
                op_ids=_op_ids(rule.explained),
                excerpts=_excerpts(scope, rule.explained),
                why=f"p={rule.p:.3g}{', named by the client' if rule.named else ''}",
            )
        )
    ids = sorted({p.item_id for p in found.exclude})[-MAX_EXCLUDE_IDS:]
    if ids:
        shown = ", ".join(f"#{i}" for i in ids[:MAX_IDS_IN_WORDS])
        more = f" and {len(ids) - MAX_IDS_IN_WORDS} more" if len(ids) > MAX_IDS_IN_WORDS else ""
        out.append(
            _Wanted(
                family=EXCLUDE_FAMILY,
                machine=StaffingAction(exclude_ids=ids),
                action=f"Do not propose these workers to {scope} again; it refused them for reasons "
                f"no rule explains yet: {shown}{more}",
                confidence=BASE_CONFIDENCE,
                op_ids=_op_ids(found.exclude),
                excerpts=_excerpts(scope, found.exclude),
                why=f"{len(ids)} refused worker(s)",
            )
        )
    for wanted, taken in sorted(found.synonyms.items()):
        points = [p for group in taken.values() for p in group]
        roles = sorted(taken, key=str.casefold)
        shown = ", ".join(f"#{p.item_id} ({r})" for r in roles for p in taken[r])[:300]
        out.append(
            _Wanted(
                family=f"{ACCEPT_ROLES}:{wanted.casefold()}",
                machine=StaffingAction(accept_roles=roles),
                action=f"For {wanted} orders, {scope} also takes {', '.join(roles)}: it accepted {shown} "
                f"for {wanted} orders (induced)",
                confidence=round(min(MAX_CONFIDENCE, BASE_CONFIDENCE + 0.05 * (len(points) - 1)), 3),
                op_ids=_op_ids(points),
                excerpts=[
                    f"{scope} accepted worker {p.item_id}, a {r}, for {p.shape}"
                    for r in roles
                    for p in taken[r]
                ][-3:],
                why=f"{len(points)} accepted worker(s) of another role",
                role=wanted,
            )
        )
    return out


def _op_ids(points: Sequence[Point]) -> list[str]:
    return list(dict.fromkeys(op for p in points for op in p.op_ids))[-MAX_EVIDENCE_IDS:]


def _excerpts(scope: str, points: Sequence[Point]) -> list[str]:
    out = []
    for p in points[-3:]:
        words_said = f': "{p.said[0]}"' if p.said else ""
        out.append(f"{scope} refused worker {p.item_id} ({p.shape}){words_said}")
    return out


def reconcile(found: Induction, existing: Sequence[Lesson], project_id: str) -> list[Delta]:
    """Deltas that bring the scope's induced lessons to what the evidence supports: ADD a new
    family (or confirm an unchanged one with new evidence), EDIT a moved threshold or list,
    RETIRE what is no longer supported. One lesson per family: revised, never stacked."""
    current: dict[str, Lesson] = {}
    retired: dict[str, int] = defaultdict(int)
    for earlier in existing:
        family = family_of(action_of(earlier), earlier.match.get("role"))
        if family is None:
            continue
        if earlier.status == "retired":
            retired[family] += 1
        else:
            current[family] = earlier
    deltas: list[Delta] = []
    wanted = {w.family: w for w in _wanted(found)}
    for family, want in wanted.items():
        lesson = current.get(family)
        draft = LessonDraft(
            trigger=f"Filling {want.role or 'any role'} for {found.scope}",
            action=want.action,
            match=LessonMatch(fields={"role": want.role, "client_id": found.scope}),
            machine=want.machine.model_dump(),
            domain=DOMAIN,
            confidence=want.confidence,
            evidence_op_ids=want.op_ids,
            evidence_excerpts=want.excerpts,
            source=SOURCE,
            project_id=project_id,
            id=lesson.id
            if lesson is not None
            else lesson_id(project_id, found.scope, family, retired[family] + 1),
        )
        reason = f"induction: {want.machine.describe()} ({want.why})"
        if lesson is not None and action_of(lesson) != want.machine:
            deltas.append(
                Delta(
                    op="EDIT",
                    target_id=lesson.id,
                    changes={"machine": want.machine.model_dump(), "action": want.action},
                    actor=SOURCE,
                    reason=f"revised by new evidence: {lesson.describe_action()} "
                    f"-> {want.machine.describe()} ({want.why})",
                )
            )
        else:
            deltas.append(Delta(op="ADD", lesson=draft, actor=SOURCE, reason=reason))
    for family, lesson in current.items():
        if family not in wanted:
            deltas.append(
                Delta(
                    op="RETIRE",
                    target_id=lesson.id,
                    actor=SOURCE,
                    reason="the evidence no longer supports it: "
                    + found.dropped.get(
                        family,
                        "every refusal it held is explained by a rule now"
                        if family == EXCLUDE_FAMILY
                        else "no worker of another role was accepted"
                        if family.startswith(ACCEPT_ROLES)
                        else "it explains no refusal",
                    ),
                )
            )
    return deltas


def known_filter(name: str) -> bool:
    """Whether ``name`` is a filter induction can state (see ``FILTERS``)."""
    return name in FILTERS or (name.startswith(SCORE_FILTER) and len(name) > len(SCORE_FILTER))


class StaffingInduction:
    """The rules clients did not state, induced from the judged evidence (module docstring)."""

    name = "staffing-induction"

    def extract(self, ops: Sequence[Op], context: ExtractContext) -> list[Delta]:
        deltas: list[Delta] = []
        fresh: dict[str, list[EvidenceItem]] = defaultdict(list)
        schema: dict[str, dict[str, dict[str, str]]] = {}
        for op in ops:
            judged = read_judged(op)
            if judged is not None:
                fresh[judged.scope] += judged.items
                schema[judged.scope] = judged.features
        notes: list[str] = []
        summary: dict[str, Any] = {}
        for scope in sorted(fresh):
            features, items = schema[scope], fresh[scope]
            existing: list[Lesson] = []
            if context.store is not None:
                stored_features, items = context.store.evidence(scope, project_id=context.project_id)
                features = stored_features or features
                existing = context.store.list(source=SOURCE, project_id=context.project_id, client_id=scope)
            features = {name: spec for name, spec in features.items() if known_filter(spec.get("filter", ""))}
            keep = {
                f
                for lesson in existing
                if lesson.status != "retired"
                and (f := family_of(action_of(lesson), lesson.match.get("role")))
            }
            found = induce(scope, features, items, pool_check=context.pool_check, keep=keep)
            deltas += reconcile(found, existing, context.project_id)
            notes += found.notes
            summary[scope] = {
                "accepted": found.accepted,
                "refused": found.refused,
                "rules": [r.machine().describe() for r in found.rules],
                "synonyms": {wanted: sorted(taken) for wanted, taken in found.synonyms.items()},
                "excluded": len(found.exclude),
            }
        if summary:
            context.notes["induction"] = summary
            context.notes["induction_notes"] = notes
        return deltas
