"""The lesson vocabulary: ``Lesson``, its match and machine action, task signatures, deltas.

Owns the shapes, their validation (lengths, ranges, the ``extra_where`` guard) and the pure
functions over them: stable ids, identity keys, merging and conflicts of machine actions, the
token estimate. It does not own storage (``store``), curation rules (``curation``), retrieval
(``retrieval``) or measurement (``effect``).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agentlake.errors import AgentlakeError
from agentlake.observe.model import cap
from agentlake.observe.scrub import scrub

Status = Literal["pending", "active", "conflict-hold", "retired"]
Scope = Literal["project", "global"]
LessonSource = Literal["heuristic", "induction", "llm", "overseer", "human"]
EventKind = Literal[
    "add",
    "edit",
    "merge",
    "confirm",
    "fail",
    "contradict",
    "decay",
    "activate",
    "retire",
    "promote",
    "rollback",
    "measure",
]

MAX_TRIGGER_CHARS = 300
MAX_ACTION_CHARS = 500
MAX_EXCERPT_CHARS = 200
MAX_EXCERPTS = 3
MAX_EVIDENCE_IDS = 50
MAX_EXCLUDE_IDS = 500
DEFAULT_PROJECT = "default"

# The fields of a match that describe the task (and so can be compared with a TaskSignature);
# ``tool`` and ``error_signature`` describe a step inside any task.
TASK_FIELDS = ("task_kind", "role", "client_id", "city", "state")


def estimate_tokens(text: str) -> int:
    """A tokenizer-free estimate: one token per 4 characters, rounded up.

    Close enough for English prompt text with BPE tokenizers (they average ~4 chars/token);
    it keeps retrieval independent of whichever model reads the lessons.
    """
    return math.ceil(len(text) / 4)


def _norm(value: str | None) -> str | None:
    if value is None:
        return None
    value = " ".join(str(value).split())
    return value or None


def _fold(value: str | None) -> str:
    return (value or "").casefold()


def normalize_text(text: str) -> str:
    """Lower-case, punctuation-free, single-spaced: for identity keys, not for display."""
    return " ".join(re.sub(r"[^\w\s.]", " ", text.casefold()).split())


class LessonMatch(BaseModel):
    """When a lesson applies. ``None`` means any; strings compare case-insensitively."""

    model_config = ConfigDict(extra="forbid")

    task_kind: str | None = Field(None, description="Kind of task, e.g. baseline_fill; empty: any.")
    role: str | None = Field(None, description="Role, e.g. Welder; empty: any.")
    client_id: str | None = Field(None, description="Client id; empty: any client.")
    city: str | None = Field(None, description="City; empty: anywhere.")
    state: str | None = Field(None, description="State (2-letter code); empty: anywhere.")
    tool: str | None = Field(None, description="A tool the lesson is about, e.g. sql; empty: none.")
    error_signature: str | None = Field(
        None, max_length=300, description="The normalised error a tool lesson is about."
    )

    @field_validator("*", mode="before")
    @classmethod
    def _clean(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        value = _norm(value)
        return scrub(value) if value else value

    def key(self) -> tuple[str, ...]:
        """The match as a case-folded tuple, for identity and equality of triggers."""
        return tuple(_fold(getattr(self, name)) for name in type(self).model_fields)

    def specificity(self) -> int:
        """How many task fields this match pins down."""
        return sum(getattr(self, name) is not None for name in TASK_FIELDS)

    def describe(self) -> str:
        parts = [
            f"{name}={getattr(self, name)}"
            for name in type(self).model_fields
            if getattr(self, name) is not None
        ]
        return ", ".join(parts) or "any task"


class MachineAction(BaseModel):
    """What a policy WITHOUT an LLM can apply; every part optional.

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

    @field_validator("exclude_ids")
    @classmethod
    def _ids(cls, value: list[int]) -> list[int]:
        return sorted(set(value))

    @field_validator("require_certifications", "accept_roles")
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
        return self == MachineAction()

    def merged(self, other: MachineAction) -> MachineAction:
        """The action applying both: certifications united, the stricter limit, the larger knob."""
        scores = dict(self.min_scores)
        for name, value in other.min_scores.items():
            scores[name] = max(value, scores.get(name, value))
        wheres = [w for w in (self.extra_where, other.extra_where) if w]
        wheres = list(dict.fromkeys(wheres))
        return MachineAction(
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
        )

    def conflicts_with(self, other: MachineAction) -> str | None:
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
        for name in ("require_certifications", "accept_roles"):
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
        return "; ".join(parts)


def _pick(fn: Any, a: Any, b: Any) -> Any:
    values = [v for v in (a, b) if v is not None]
    return fn(values) if values else None


def check_where_fragment(fragment: str) -> None:
    """Raise ``ValueError`` unless the lake's guard accepts ``fragment`` as a WHERE clause.

    The guard is the lake's (``agentlake.lake.guard.check_where``): one definition of safe SQL.
    """
    try:
        # Lazy (start-up time): the lake (DuckDB) loads on first use.
        from agentlake.lake.guard import check_where
    except ImportError as exc:  # the lake package is optional at import time for pure learn use
        raise ValueError(f"cannot validate extra_where without agentlake.lake.guard ({exc})") from None
    try:
        check_where(fragment)
    except AgentlakeError as exc:
        raise ValueError(f"extra_where rejected by the SQL guard: {exc.message}") from None


def identity_key(domain: str, match: LessonMatch, machine: MachineAction | None, action: str) -> str:
    """What makes two lessons the same lesson regardless of scope: a short hash.

    With a machine action, its identity (stated values included, knob values excluded);
    otherwise the normalised words of the action.
    """
    what: Any = (
        machine.identity() if machine is not None and not machine.is_empty() else normalize_text(action)
    )
    blob = json.dumps([domain.casefold(), list(match.key()), what], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def make_lesson_id(key: str, scope: Scope, project_id: str | None) -> str:
    """A stable id: the same lesson learned again in the same scope gets the same id."""
    where = "global" if scope == "global" else f"project:{project_id}"
    return "L-" + hashlib.sha256(f"{where}|{key}".encode()).hexdigest()[:10]


class Lesson(BaseModel):
    """One lesson: when it applies, what to do, how sure we are, and where it came from."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(..., pattern=r"^L-[A-Za-z0-9_-]{1,64}$")
    trigger: str = Field(
        ..., min_length=1, max_length=MAX_TRIGGER_CHARS, description="When it applies, in words."
    )
    match: LessonMatch = Field(default_factory=LessonMatch)
    action: str = Field(..., min_length=1, max_length=MAX_ACTION_CHARS, description="What to do, in words.")
    machine: MachineAction | None = None
    domain: str = Field("general", min_length=1, max_length=64)
    scope: Scope = "project"
    project_id: str | None = DEFAULT_PROJECT
    confidence: float = Field(0.5, ge=0, le=1)
    status: Status = "pending"
    evidence_op_ids: list[str] = Field(default_factory=list)
    evidence_excerpts: list[str] = Field(default_factory=list)
    evidence_count: int = Field(
        0, ge=0, description="Observations behind the lesson (ids beyond the last 50 are dropped)."
    )
    helpful: int = Field(0, ge=0)
    harmful: int = Field(0, ge=0)
    source: LessonSource = "heuristic"
    key: str = ""
    created_at: datetime
    updated_at: datetime
    last_used_at: datetime | None = None
    status_since: datetime | None = None
    decayed_through: datetime | None = Field(
        None, description="Unused weeks before this instant have been decayed."
    )
    merged_into: str | None = Field(None, description="Set when retired by folding into another lesson.")
    version: int = Field(1, ge=1)

    @field_validator("trigger", "action", "domain")
    @classmethod
    def _words(cls, value: str) -> str:
        return scrub(" ".join(value.split()))

    @field_validator("evidence_excerpts")
    @classmethod
    def _excerpts(cls, value: list[str]) -> list[str]:
        cleaned = [cap(scrub(" ".join(item.split())), MAX_EXCERPT_CHARS) for item in value if item.strip()]
        return list(dict.fromkeys(cleaned))[-MAX_EXCERPTS:]

    @field_validator("evidence_op_ids")
    @classmethod
    def _op_ids(cls, value: list[str]) -> list[str]:
        return list(dict.fromkeys(value))[-MAX_EVIDENCE_IDS:]

    @model_validator(mode="after")
    def _scope(self) -> Lesson:
        if self.scope == "global":
            self.project_id = None
        elif not self.project_id:
            raise ValueError("a project-scoped lesson needs a project_id")
        if self.machine is not None and self.machine.is_empty():
            self.machine = None
        if not self.key:
            self.key = identity_key(self.domain, self.match, self.machine, self.action)
        self.evidence_count = max(self.evidence_count, len(self.evidence_op_ids))
        return self

    def text(self) -> str:
        """What embeddings and prompts see: trigger and action."""
        return f"{self.trigger}: {self.action}"

    def prompt_line(self) -> str:
        trial = " (trial)" if self.status == "pending" else ""
        return f"[{self.id}] {self.trigger}: {self.action}{trial}"


class TaskSignature(BaseModel):
    """The shape of a task that lessons are matched and measured against."""

    model_config = ConfigDict(extra="forbid")

    task_kind: str = Field(..., description="Kind of task, e.g. baseline_fill or emergency_fill.")
    role: str | None = Field(None, description="Role filled, e.g. Welder.")
    client_id: str | None = Field(None, description="Client id, e.g. riverfront-steel.")
    city: str | None = Field(None, description="City of the job.")
    state: str | None = Field(None, description="State of the job (2-letter code).")

    @field_validator("*", mode="before")
    @classmethod
    def _clean(cls, value: Any) -> Any:
        return _norm(value) if isinstance(value, str) else value

    def sig_hash(self) -> str:
        """16 hex chars; equal for signatures that differ only in case or spacing."""
        blob = "\x1f".join(_fold(getattr(self, name)) for name in TASK_FIELDS)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def describe(self) -> str:
        """The task in words, for semantic matching."""
        words = [self.task_kind.replace("_", " ")]
        if self.role:
            words.append(self.role)
        if self.client_id:
            words.append(f"for {self.client_id.replace('-', ' ')}")
        if self.city or self.state:
            words.append("in " + ", ".join(p for p in (self.city, self.state) if p))
        return " ".join(words)


class LessonDraft(BaseModel):
    """A lesson an extractor proposes; code decides its id, status and final confidence."""

    model_config = ConfigDict(extra="forbid")

    trigger: str = Field(
        ..., min_length=1, max_length=MAX_TRIGGER_CHARS, description="When the lesson applies, in words."
    )
    action: str = Field(..., min_length=1, max_length=MAX_ACTION_CHARS, description="What to do, in words.")
    match: LessonMatch = Field(
        default_factory=LessonMatch, description="The tasks it applies to; empty fields match any."
    )
    machine: MachineAction | None = Field(
        None, description="What a policy without an LLM applies (filters, limits); optional."
    )
    domain: str = Field("general", min_length=1, max_length=64, description="staffing, tools, playbook, ...")
    scope: Scope = Field("project", description="project (this project only) or global.")
    project_id: str | None = Field(None, description="The project of a project lesson; empty: the default.")
    confidence: float = Field(0.5, ge=0, le=1, description="How sure the proposer is (curation may cap it).")
    evidence_op_ids: list[str] = Field(
        default_factory=list, description="Ids of the ops it was learned from."
    )
    evidence_excerpts: list[str] = Field(default_factory=list, description="Short quotes of that evidence.")
    source: LessonSource = Field(
        "heuristic", description="Who proposes it: heuristic, llm, overseer or human."
    )
    id: str | None = Field(
        None, pattern=r"^L-[A-Za-z0-9_-]{1,64}$", description="An existing lesson's id to confirm or edit."
    )


class Delta(BaseModel):
    """One proposed change: ADD a draft, EDIT fields of a lesson, MERGE lessons, RETIRE one."""

    model_config = ConfigDict(extra="forbid")

    op: Literal["ADD", "EDIT", "MERGE", "RETIRE"]
    lesson: LessonDraft | None = None
    target_id: str | None = None
    changes: dict[str, Any] = Field(
        default_factory=dict, description="EDIT: trigger, action, match, machine, domain."
    )
    merge_ids: list[str] = Field(default_factory=list, description="MERGE: lessons folded into target_id.")
    reason: str = ""
    actor: LessonSource = "heuristic"
    activate: bool = Field(
        True,
        description="Whether curation may make the lesson active. False keeps an added or confirmed "
        "pending lesson pending whatever its confidence: lessons proposed over the API without an admin key.",
    )

    @model_validator(mode="after")
    def _shape(self) -> Delta:
        if self.op == "ADD" and self.lesson is None:
            raise ValueError("ADD needs a lesson")
        if self.op != "ADD" and not self.target_id:
            raise ValueError(f"{self.op} needs a target_id")
        if self.op == "EDIT" and not self.changes:
            raise ValueError("EDIT needs changes")
        if self.op == "MERGE" and not self.merge_ids:
            raise ValueError("MERGE needs merge_ids")
        return self


Outcome = Literal[
    "added", "confirmed", "merged", "edited", "retired", "contradiction", "unchanged", "rejected"
]


class AppliedDelta(BaseModel):
    """What code did with one delta."""

    delta: Delta
    outcome: Outcome
    lesson_id: str | None = None
    version: int | None = None
    reason: str = ""
    related_ids: list[str] = Field(default_factory=list)


class LessonEvent(BaseModel):
    """One entry of a lesson's history: the change and the lesson as it stood after it."""

    lesson_id: str
    version: int
    kind: EventKind
    at: datetime
    actor: str
    reason: str = ""
    data: dict[str, Any] = Field(default_factory=dict)
    lesson: Lesson


class EffectReport(BaseModel):
    """The measured effect of one lesson: its runs against comparable runs without it."""

    lesson_id: str
    runs_with: int = Field(..., description="Runs given the lesson that had a comparable baseline.")
    mean_with: float | None
    mean_without: float | None
    effect: float | None = Field(
        ..., description="Mean over runs of (run value - baseline mean of its signature)."
    )
    helpful: int
    harmful: int
    new_runs: int = Field(..., description="Runs measured for the first time in this call.")
    action: Literal["none", "activated", "retired"] = "none"
