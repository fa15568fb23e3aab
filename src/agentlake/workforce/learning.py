"""The staffing domain's side of learning: its machine action, its task key and its rule extractors.

Owns ``StaffingAction`` (the filters and knobs the rules policy applies: certifications,
minimum scores, distance, no-shows, spare candidates, other roles a client takes, workers to
leave out; and, kept as the client's words, what a resume must show, with a search phrase for
it), ``STAFFING`` (the ``learn.Domain`` that tells the learning machinery what a
staffing task's key is: role, client, city, state; the client and role a lesson must agree on;
the client that indexes retrieval; merging and conflicts of actions) and the rule extractor
that reads a client's stated rejections and the emergencies that ran short
(``StaffingRules``); induction of unstated rules is ``workforce.induction``. It registers the
domain through the ``agentlake.domains`` entry point. It does not own the learning loop,
storage or curation (``agentlake.learn``).
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agentlake.errors import AgentlakeError
from agentlake.learn.extractor import ExtractContext
from agentlake.learn.model import MAX_EVIDENCE_IDS, MAX_EXCLUDE_IDS, Delta, Lesson, LessonDraft, LessonMatch
from agentlake.workforce.evidence import CERTIFICATIONS, DISTANCE, PRIOR_NO_SHOW
from agentlake.workforce.resume_wishes import search_phrase
from agentlake.workforce.roles import normalize_certification, same_role
from agentlake.workforce.tables import SCORE_COLUMNS

if TYPE_CHECKING:
    from agentlake.learn.extractor import Extractor, Op
    from agentlake.learn.model import TaskKey
    from agentlake.settings import Settings

DOMAIN = "staffing"
# A client's refusal for what a resume does not show; its value is the client's words.
RESUME_WISH = "resume_wish"


def _norm(value: str | None) -> str | None:
    if value is None:
        return None
    value = " ".join(str(value).split())
    return value or None


class StaffingAction(BaseModel):
    """What the rules policy (no LLM) applies for a staffing lesson; every part optional.

    Stated limits (``min_scores``, ``max_distance_miles``) conflict when two lessons name
    different values; tuning knobs (``min_candidate_buffer``, ``widen_radius_miles``) merge by
    taking the larger value, because a run that ran short says "more", never "exactly this".
    """

    model_config = ConfigDict(extra="forbid")

    require_certifications: list[str] = Field(
        default_factory=list, description="Canonical names, e.g. 'OSHA 30'."
    )
    min_scores: dict[str, float] = Field(
        default_factory=dict, description="Minimum worker scores, e.g. {'reliability': 0.7}."
    )
    max_distance_miles: float | None = Field(None, gt=0, description="Only workers living this close.")
    exclude_prior_no_show_at_client: bool = Field(
        False, description="Skip workers who did not show at this client before."
    )
    exclude_double_booked: bool = Field(False, description="Skip workers already booked over the shift.")
    min_candidate_buffer: int | None = Field(
        None, ge=1, le=100, description="Spare candidates to verify beyond the requested count."
    )
    widen_radius_miles: float | None = Field(
        None, gt=0, le=500, description="Search this far when the default radius runs short."
    )
    extra_where: str | None = Field(
        None, max_length=500, description="A WHERE fragment; must pass lake.guard.check_where."
    )
    accept_roles: list[str] = Field(
        default_factory=list,
        max_length=20,
        description="Other roles the client takes for the ordered one (its synonyms): widens the search.",
    )
    exclude_ids: list[int] = Field(
        default_factory=list,
        max_length=MAX_EXCLUDE_IDS,
        description="Items (workers) to leave out: ones a judge refused for reasons no other rule explains.",
    )
    resume_wishes: list[str] = Field(
        default_factory=list,
        max_length=20,
        description="What the client wants to see in a resume, in its own words ('has driven a reach "
        "truck'): no column holds it; a model reads the resumes (agents.resume_check).",
    )
    search_phrase: str | None = Field(
        None, max_length=200, description="Words to search the resumes for those wishes (the hybrid search)."
    )

    @field_validator("exclude_ids")
    @classmethod
    def _ids(cls, value: list[int]) -> list[int]:
        return sorted(set(value))

    @field_validator("require_certifications", "accept_roles", "resume_wishes")
    @classmethod
    def _names(cls, value: list[str]) -> list[str]:
        seen: dict[str, str] = {}
        for cert in value:
            cert = " ".join(cert.split())
            if cert and cert.casefold() not in seen:
                seen[cert.casefold()] = cert
        return sorted(seen.values(), key=str.casefold)

    @field_validator("min_scores")
    @classmethod
    def _scores(cls, value: dict[str, float]) -> dict[str, float]:
        for name, score in value.items():
            if not name.strip() or not math.isfinite(score) or score < 0:
                raise ValueError(f"min_scores[{name!r}] must be a finite number >= 0")
        return {name.strip(): float(score) for name, score in sorted(value.items())}

    @field_validator("extra_where")
    @classmethod
    def _where(cls, value: str | None) -> str | None:
        value = _norm(value)
        if value is not None:
            check_where_fragment(value)
        return value

    def is_empty(self) -> bool:
        return self == StaffingAction()

    def merged(self, other: StaffingAction) -> StaffingAction:
        """The action applying both: certifications united, the stricter limit, the larger knob."""
        scores = dict(self.min_scores)
        for name, value in other.min_scores.items():
            scores[name] = max(value, scores.get(name, value))
        wheres = [w for w in (self.extra_where, other.extra_where) if w]
        wheres = list(dict.fromkeys(wheres))
        return StaffingAction(
            require_certifications=self.require_certifications + other.require_certifications,
            min_scores=scores,
            max_distance_miles=_pick(min, self.max_distance_miles, other.max_distance_miles),
            exclude_prior_no_show_at_client=self.exclude_prior_no_show_at_client
            or other.exclude_prior_no_show_at_client,
            exclude_double_booked=self.exclude_double_booked or other.exclude_double_booked,
            min_candidate_buffer=_pick(max, self.min_candidate_buffer, other.min_candidate_buffer),
            widen_radius_miles=_pick(max, self.widen_radius_miles, other.widen_radius_miles),
            extra_where=" AND ".join(f"({w})" for w in wheres)
            if len(wheres) > 1
            else (wheres[0] if wheres else None),
            exclude_ids=sorted(set(self.exclude_ids) | set(other.exclude_ids))[-MAX_EXCLUDE_IDS:],
            accept_roles=self.accept_roles + other.accept_roles,
            resume_wishes=self.resume_wishes + other.resume_wishes,
            search_phrase=" ".join(p for p in (self.search_phrase, other.search_phrase) if p)[:200] or None,
        )

    def conflicts_with(self, other: StaffingAction) -> str | None:
        """Why the two cannot both hold, or ``None`` when they are compatible."""
        for name in sorted(set(self.min_scores) & set(other.min_scores)):
            if abs(self.min_scores[name] - other.min_scores[name]) > 1e-9:
                return f"min_scores.{name} {self.min_scores[name]:g} vs {other.min_scores[name]:g}"
        a, b = self.max_distance_miles, other.max_distance_miles
        if a is not None and b is not None and abs(a - b) > 1e-9:
            return f"max_distance_miles {a:g} vs {b:g}"
        for widen, limit in ((self.widen_radius_miles, b), (other.widen_radius_miles, a)):
            if widen is not None and limit is not None and widen > limit:
                return f"widen_radius_miles {widen:g} beyond max_distance_miles {limit:g}"
        return None

    def identity(self) -> dict[str, Any]:
        """The parts that make two actions the same lesson (tuning knobs without their numbers)."""
        data = self.model_dump(exclude_defaults=True)
        if "min_candidate_buffer" in data:
            data["min_candidate_buffer"] = "set"
        if "widen_radius_miles" in data:
            data["widen_radius_miles"] = "set"
        if "exclude_ids" in data:  # the list grows with evidence; the lesson stays the same one
            data["exclude_ids"] = "set"
        data.pop("search_phrase", None)  # derived from the wishes' words
        for name in ("require_certifications", "accept_roles", "resume_wishes"):
            if name in data:
                data[name] = [c.casefold() for c in data[name]]
        return data

    def describe(self) -> str:
        """The action in words, for prompts and tables."""
        parts = []
        if self.require_certifications:
            parts.append("require " + ", ".join(self.require_certifications))
        for name, value in self.min_scores.items():
            parts.append(f"{name} >= {value:g}")
        if self.max_distance_miles is not None:
            parts.append(f"within {self.max_distance_miles:g} miles")
        if self.exclude_prior_no_show_at_client:
            parts.append("exclude prior no-shows at this client")
        if self.exclude_double_booked:
            parts.append("exclude workers already booked over the shift")
        if self.min_candidate_buffer is not None:
            parts.append(f"shortlist at least {self.min_candidate_buffer} spare candidates")
        if self.widen_radius_miles is not None:
            parts.append(f"widen the search radius to {self.widen_radius_miles:g} miles")
        if self.extra_where:
            parts.append(f"filter WHERE {self.extra_where}")
        if self.exclude_ids:
            parts.append(f"leave out {len(self.exclude_ids)} refused worker(s)")
        if self.accept_roles:
            parts.append("also take " + ", ".join(self.accept_roles))
        if self.resume_wishes:
            parts.append("resume shows " + "; ".join(repr(w) for w in self.resume_wishes))
        return "; ".join(parts)


def _pick(fn: Any, a: Any, b: Any) -> Any:
    values = [v for v in (a, b) if v is not None]
    return fn(values) if values else None


def check_where_fragment(fragment: str) -> None:
    """Raise ``ValueError`` unless the lake's guard accepts ``fragment`` as a WHERE clause.

    The guard is the lake's (``agentlake.lake.guard.check_where``): one definition of safe SQL.
    """
    # Lazy (start-up time): the lake (DuckDB) loads on first use.
    from agentlake.lake.guard import check_where

    try:
        check_where(fragment)
    except AgentlakeError as exc:
        raise ValueError(f"extra_where rejected by the SQL guard: {exc.message}") from None


# The filters a model may name for a lesson (the overseer's tiers): a score column, the
# distance, a certification, prior no-shows, spares, double-bookings.
MODEL_FILTERS = (
    *SCORE_COLUMNS,
    DISTANCE,
    "certification",
    PRIOR_NO_SHOW,
    "spare_buffer",
    "double_booking",
)


def action_from_filter(name: str | None, value: Any) -> dict[str, Any] | None:
    """The machine action a model's (filter, value) names, or ``None`` when it names none or
    its value does not fit (a score in [0, 1], miles > 0, a certification's name, spares 1..20)."""
    try:
        if name in SCORE_COLUMNS:
            score = float(value)
            action = StaffingAction(min_scores={name: score}) if 0 < score <= 1 else None
        elif name == DISTANCE:
            miles = float(value)
            action = StaffingAction(max_distance_miles=miles) if 0 < miles <= 500 else None
        elif name == "certification":
            text = str(value or "").strip()
            action = StaffingAction(require_certifications=[normalize_certification(text)]) if text else None
        elif name == PRIOR_NO_SHOW:
            action = StaffingAction(exclude_prior_no_show_at_client=True)
        elif name == "spare_buffer":
            spares = int(float(value))
            action = StaffingAction(min_candidate_buffer=spares) if 1 <= spares <= 20 else None
        elif name == "double_booking":
            action = StaffingAction(exclude_double_booked=True)
        else:
            action = None
    except (TypeError, ValueError):
        return None
    return action.model_dump() if action is not None else None


def action_of(lesson: Lesson) -> StaffingAction | None:
    """``lesson``'s machine action as a ``StaffingAction``, or ``None`` when it has none or is
    not a staffing lesson."""
    if lesson.machine is None or lesson.domain != DOMAIN:
        return None
    return StaffingAction.model_validate(lesson.machine)


class StaffingDomain:
    """The staffing domain for ``agentlake.learn`` (see the module docstring)."""

    name = DOMAIN
    # The order of the task key's fields is the order lessons' ids are hashed in: fixed.
    key_fields = ("role", "client_id", "city", "state")
    # A client's rules are that client's, and a Welder's certificate must not filter Electricians.
    hard_fields = ("client_id", "role")
    partition_field = "client_id"
    min_runs_for_retire = None  # the setting learn_min_runs_for_retire

    def describe_task(self, task: TaskKey) -> str:
        words = [task.task_kind.replace("_", " ")]
        role, client, city, state = (task.fields.get(name) for name in self.key_fields)
        if role:
            words.append(role)
        if client:
            words.append(f"for {client.replace('-', ' ')}")
        if city or state:
            words.append("in " + ", ".join(p for p in (city, state) if p))
        return " ".join(words)

    def validate_action(self, action: Mapping[str, Any]) -> dict[str, Any]:
        return StaffingAction.model_validate(dict(action)).model_dump()

    def action_is_empty(self, action: Mapping[str, Any]) -> bool:
        return StaffingAction.model_validate(dict(action)).is_empty()

    def action_identity(self, action: Mapping[str, Any]) -> Any:
        return StaffingAction.model_validate(dict(action)).identity()

    def merge_actions(self, a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
        return (
            StaffingAction.model_validate(dict(a)).merged(StaffingAction.model_validate(dict(b))).model_dump()
        )

    def action_conflict(self, a: Mapping[str, Any], b: Mapping[str, Any]) -> str | None:
        return StaffingAction.model_validate(dict(a)).conflicts_with(StaffingAction.model_validate(dict(b)))

    def describe_action(self, action: Mapping[str, Any]) -> str:
        return StaffingAction.model_validate(dict(action)).describe()

    def tool_advice(self, tool: str, signature: str, example: str) -> tuple[str, str] | None:
        if signature == "timeout":
            return (
                f"When tool.{tool} times out",
                "Narrow the call before retrying: add selective conditions (role, state, radius) and a LIMIT, "
                "and prefer indexed search filters over scanning whole tables",
            )
        if signature == "empty result":
            return (
                f"When tool.{tool} returns no rows",
                "Widen before concluding nobody fits: check the role's spelling against the catalogue, widen the "
                "radius, drop optional filters one at a time",
            )
        return None

    def replay_applies(self, fields: Mapping[str, str], shape: str) -> bool:
        """A judged op's shape is "<role> in <city>, <state>" (``scenarios.day``'s evidence)."""
        role, _, place = shape.partition(" in ")
        wanted = fields.get("role")
        if wanted and not (same_role(role, wanted) or role.casefold() == wanted.casefold()):
            return False
        return all(
            not fields.get(name) or fields[name].casefold() in place.casefold() for name in ("city", "state")
        )

    def replay_refusal(
        self, action: Mapping[str, Any], item_id: int, values: Mapping[str, Any]
    ) -> str | None:
        """The first filter of ``action`` that leaves the worker out, in words (the features of
        ``workforce.evidence``); widening and knobs leave nobody out."""
        parsed = StaffingAction.model_validate(dict(action))
        if item_id in parsed.exclude_ids:
            return "left out by id"
        held = {normalize_certification(str(c)) for c in values.get(CERTIFICATIONS) or []}
        for cert in parsed.require_certifications:
            if normalize_certification(cert) not in held:
                return f"no {cert} on file"
        for name, floor in parsed.min_scores.items():
            score = values.get(name)
            if isinstance(score, (int, float)) and score < floor - 1e-9:
                return f"{name} {score:g} below {floor:g}"
        distance = values.get(DISTANCE)
        limit = parsed.max_distance_miles
        if limit is not None and isinstance(distance, (int, float)) and distance > limit + 1e-9:
            return f"{distance:g} miles away, beyond {limit:g}"
        if parsed.exclude_prior_no_show_at_client and values.get(PRIOR_NO_SHOW) is True:
            return "a prior no-show at this client"
        return None

    def rules(self, settings: Settings) -> Sequence[Extractor]:
        return [StaffingRules()]

    def inducers(self, settings: Settings) -> Sequence[Extractor]:
        # Lazy (start-up time): induction loads with the first learning cycle.
        from agentlake.workforce.induction import StaffingInduction

        return [StaffingInduction()]


# --- the rules a client states ----------------------------------------------------------------

CLIENT_RULE_CONFIDENCE = 0.8
BUFFER_CONFIDENCE = 0.6
WORDS_CONFIDENCE = 0.5
FILL_ENDPOINTS = frozenset({"fill.judged"})


@dataclass
class _Group:
    """Ops backing one lesson draft."""

    op_ids: list[str] = field(default_factory=list)
    excerpts: list[str] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    count: int = 0

    def add(self, op_id: str, excerpt: str | None = None, value: float | None = None) -> None:
        self.count += 1
        if op_id not in self.op_ids:
            self.op_ids.append(op_id)
        if excerpt and excerpt not in self.excerpts and len(self.excerpts) < 3:
            self.excerpts.append(excerpt)
        if value is not None:
            self.values.append(value)


def _text(value: Any) -> str | None:
    if value is None:
        return None
    text = " ".join(str(value).split())
    return text or None


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _int(value: Any) -> int | None:
    number = _number(value)
    return int(number) if number is not None else None


class StaffingRules:
    """Lessons from what clients said and what ran short (``docs/learning.md`` has the op
    conventions), no model needed:

    - ``fill.judged`` rejections -> client rules with a machine action, scoped to the client
      (and to the role when the rejection says so, or names the role):
      ``required_certification`` -> ``require_certifications``; ``min_<score>`` ->
      ``min_scores``; ``max_distance_miles``; ``exclude_prior_no_show`` ->
      ``exclude_prior_no_show_at_client``; ``resume_wish`` (the client's words about what a
      resume must show) -> ``resume_wishes`` in those words, with their ``search_phrase``; ``double_booked`` -> ``exclude_double_booked`` for
      every fill (a person cannot work two shifts at once, whoever the client); other rules ->
      a lesson in words for the client;
    - emergency fills that ran short -> ``min_candidate_buffer`` for that client's emergencies.

    A client's rejection is the client stating a rule, not an inference, so it starts at 0.8:
    active at once (and measured effect retires it if it hurts). A buffer is a guess: 0.6.
    Never raises on odd ops."""

    name = "staffing-rules"

    def extract(self, ops: Sequence[Op], context: ExtractContext) -> list[Delta]:
        drafts = self._client_rules(ops) + self._emergency_buffers(ops)
        for draft in drafts:
            draft.project_id = context.project_id
        return [Delta(op="ADD", lesson=draft, actor="heuristic", reason=_reason(draft)) for draft in drafts]

    def _client_rules(self, ops: Sequence[Op]) -> list[LessonDraft]:
        groups: dict[tuple[Any, ...], _Group] = defaultdict(_Group)
        meta: dict[tuple[Any, ...], tuple[LessonMatch, str, str, StaffingAction | None]] = {}
        for op in ops:
            if op.endpoint not in FILL_ENDPOINTS:
                continue
            rejections = op.attributes.get("rejections")
            if not isinstance(rejections, list):
                continue
            client = _text(op.attributes.get("client_id"))
            role = _text(op.labels.get("role") or op.attributes.get("role"))
            for rejection in rejections:
                if not isinstance(rejection, dict):
                    continue
                lesson = _rule_lesson(rejection, client, role)
                if lesson is None:
                    continue
                key, match, trigger, action, machine = lesson
                worker = rejection.get("worker_id")
                reason = _text(rejection.get("reason")) or str(rejection.get("rule"))
                excerpt = (
                    f"{client or 'client'} rejected worker {worker}: {reason}"
                    if worker is not None
                    else reason
                )
                groups[key].add(op.id, excerpt)
                meta[key] = (match, trigger, action, machine)
        drafts = []
        for key, group in groups.items():
            match, trigger, action, machine = meta[key]
            drafts.append(
                LessonDraft(
                    trigger=trigger,
                    action=action,
                    match=match,
                    machine=machine.model_dump() if machine is not None else None,
                    domain=DOMAIN,
                    confidence=CLIENT_RULE_CONFIDENCE if machine is not None else WORDS_CONFIDENCE,
                    evidence_op_ids=group.op_ids[-MAX_EVIDENCE_IDS:],
                    evidence_excerpts=group.excerpts,
                    source="heuristic",
                )
            )
        return drafts

    def _emergency_buffers(self, ops: Sequence[Op]) -> list[LessonDraft]:
        groups: dict[tuple[str, str | None], _Group] = defaultdict(_Group)
        for op in ops:
            if op.endpoint not in FILL_ENDPOINTS:
                continue
            kind = _text(op.attributes.get("task_kind") or op.labels.get("event_kind")) or ""
            requested, filled = _int(op.attributes.get("requested")), _int(op.attributes.get("filled"))
            if (
                "emergency" not in kind.casefold()
                or requested is None
                or filled is None
                or filled >= requested
            ):
                continue
            client = _text(op.attributes.get("client_id"))
            groups[(kind, client)].add(
                op.id, f"{kind} for {client or 'a client'} filled {filled}/{requested}", requested - filled
            )
        drafts = []
        for (kind, client), group in groups.items():
            buffer = max(2, int(max(group.values)))
            who = f" for {client}" if client else ""
            drafts.append(
                LessonDraft(
                    trigger=f"{kind.replace('_', ' ').capitalize()}{who}",
                    action=f"Emergency fills{who} ran short: verify at least {buffer} spare candidates beyond the "
                    "requested count so rejected workers can be replaced at once",
                    match=LessonMatch(task_kind=kind, fields={"client_id": client}),
                    machine=StaffingAction(min_candidate_buffer=buffer).model_dump(),
                    domain=DOMAIN,
                    confidence=BUFFER_CONFIDENCE,
                    evidence_op_ids=group.op_ids[-MAX_EVIDENCE_IDS:],
                    evidence_excerpts=group.excerpts,
                )
            )
        return drafts


def _role_specific(rejection: dict[str, Any], role: str | None) -> bool:
    if role is None:
        return False
    if rejection.get("role_specific") or rejection.get("scope") == "role":
        return True
    if rejection.get("scope") in ("client", "site"):
        return False
    reason = (_text(rejection.get("reason")) or "").casefold()
    return bool(re.search(rf"\b{re.escape(role.casefold())}", reason))


def _rule_lesson(
    rejection: dict[str, Any], client: str | None, role: str | None
) -> tuple[tuple[Any, ...], LessonMatch, str, str, StaffingAction | None] | None:
    """(group key, match, trigger, action, machine) for one rejection, or ``None`` to skip it."""
    rule = _text(rejection.get("rule"))
    if not rule:
        return None
    value = rejection.get("value")
    machine: StaffingAction | None
    if rule == "double_booked":
        machine = StaffingAction(exclude_double_booked=True)
        return (
            ("double_booked",),
            LessonMatch(),
            "Any fill with a shift time",
            "Check each worker's schedule and exclude anyone already booked over the shift",
            machine,
        )
    if client is None:
        return None  # a client's rule without the client cannot be scoped
    scoped_role = role if _role_specific(rejection, role) else None
    match = LessonMatch(fields={"role": scoped_role, "client_id": client})
    trigger = f"Filling {scoped_role} for {client}" if scoped_role else f"Filling any role for {client}"
    if rule == "required_certification":
        cert = _text(value)
        if not cert:
            return None
        machine = StaffingAction(require_certifications=[cert])
        action = f"Only propose workers with {cert} on file: {client} rejects workers without it"
        what: Any = cert.casefold()
    elif rule.startswith("min_"):
        number = _number(value)
        score = rule[len("min_") :]
        if number is None or number < 0 or not score:
            return None
        machine = StaffingAction(min_scores={score: number})
        action = f"Only propose workers with {score} >= {number:g}: {client} rejects lower"
        what = round(number, 6)
    elif rule == "max_distance_miles":
        number = _number(value)
        if number is None or number <= 0:
            return None
        machine = StaffingAction(max_distance_miles=number)
        action = (
            f"Only propose workers living within {number:g} miles of the site: {client} rejects farther ones"
        )
        what = round(number, 6)
    elif rule == RESUME_WISH:
        words = _text(value)
        if not words:
            return None
        # Kept as the client's words, plus the words worth searching resumes for.
        machine = StaffingAction(resume_wishes=[words], search_phrase=search_phrase(words))
        action = f"Only propose workers whose resume shows this: {words} ({client} refuses the others)"
        what = words.casefold()
    elif rule == "exclude_prior_no_show":
        machine = StaffingAction(exclude_prior_no_show_at_client=True)
        action = f"Exclude workers who were ever a no-show at {client}: {client} rejects them"
        what = True
    else:
        machine = None
        action = (
            f"{client} rejects workers under its rule '{rule}'; check candidates against it before proposing"
        )
        what = None
    return ((client.casefold(), (scoped_role or "").casefold(), rule, what), match, trigger, action, machine)


def _reason(draft: LessonDraft) -> str:
    return (
        f"heuristic: {len(draft.evidence_op_ids)} op(s), e.g. {draft.evidence_excerpts[0]}"
        if draft.evidence_excerpts
        else "heuristic"
    )


STAFFING = StaffingDomain()
