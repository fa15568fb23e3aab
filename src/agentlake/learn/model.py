"""The lesson vocabulary: ``Lesson``, its match, task keys, deltas; any domain's.

Owns the shapes, their validation (lengths, ranges, each field's cleaning; a machine action is
validated by its domain: ``domain``) and the pure functions over them: stable ids, identity
keys, the token estimate. It does not own storage (``store``), curation rules (``curation``),
retrieval (``retrieval``), measurement (``effect``) or any domain's vocabulary (a domain
registers it: ``domain.Domain``).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agentlake.learn.domain import KEY_SLOTS, Domain, find_domain, generic_identity
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
    "replay",
]

MAX_TRIGGER_CHARS = 300
MAX_ACTION_CHARS = 500
MAX_EXCERPT_CHARS = 200
MAX_EXCERPTS = 3
MAX_EVIDENCE_IDS = 50
MAX_EXCLUDE_IDS = 500
MAX_KEY_FIELDS = 8
DEFAULT_PROJECT = "default"
_FIELD_NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
# A match's own fields; any other key of a match as earlier releases stored it is a key field.
_MATCH_FIELDS = ("task_kind", "fields", "tool", "error_signature")


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


def _clean_fields(value: Any) -> dict[str, str]:
    """Key fields as a match or a task holds them: plain names, normalised scrubbed text, no
    empty values, at most ``MAX_KEY_FIELDS``."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError("fields must be an object of name: value")
    out: dict[str, str] = {}
    for name, item in value.items():
        if not isinstance(name, str) or not _FIELD_NAME.match(name):
            raise ValueError(f"field name {name!r}: use lower-case letters, digits and _")
        text = _norm(item) if item is not None else None
        if text:
            out[name] = scrub(text)
    if len(out) > MAX_KEY_FIELDS:
        raise ValueError(f"{len(out)} key fields; at most {MAX_KEY_FIELDS}")
    return out


def _legacy_fields(data: Any, own: tuple[str, ...]) -> Any:
    """A match or task as earlier releases stored it (its key fields beside its own): the key
    fields moved under ``fields``."""
    if not isinstance(data, dict):
        return data
    extra = {key: value for key, value in data.items() if key not in own}
    if not extra:
        return data
    kept = {key: value for key, value in data.items() if key in own}
    return {**kept, "fields": {**extra, **(data.get("fields") or {})}}


def key_slots(domain: str | None, fields: dict[str, str]) -> list[str]:
    """``fields`` laid out for identity and task hashes: the domain's key fields in its order
    (``KEY_SLOTS`` of them, empty where unset), then any other field as ``name=value``."""
    registered = find_domain(domain)
    order = list(registered.key_fields) if registered is not None else []
    slots = [_fold(fields.get(name)) for name in order] + [""] * (KEY_SLOTS - len(order))
    slots += [f"{name}={_fold(value)}" for name, value in sorted(fields.items()) if name not in order]
    return slots


class LessonMatch(BaseModel):
    """When a lesson applies: the task's kind and key fields it pins (its domain's, e.g. the
    dataset of a data question), and the tool and error a lesson about a step is about. Unset means any; text compares case-insensitively."""

    model_config = ConfigDict(extra="forbid")

    task_kind: str | None = Field(None, description="Kind of task, e.g. baseline_fill or ask; empty: any.")
    fields: dict[str, str] = Field(
        default_factory=dict,
        description='The task key fields this lesson is about (the domain\'s), e.g. {"dataset": "orders"}.',
    )
    tool: str | None = Field(None, description="A tool the lesson is about, e.g. sql; empty: none.")
    error_signature: str | None = Field(
        None, max_length=300, description="The normalised error a tool lesson is about."
    )

    @model_validator(mode="before")
    @classmethod
    def _legacy(cls, data: Any) -> Any:
        return _legacy_fields(data, _MATCH_FIELDS)

    @field_validator("task_kind", "tool", "error_signature", mode="before")
    @classmethod
    def _clean(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        value = _norm(value)
        return scrub(value) if value else value

    @field_validator("fields", mode="before")
    @classmethod
    def _fields(cls, value: Any) -> dict[str, str]:
        return _clean_fields(value)

    def get(self, name: str) -> str | None:
        """The value a match pins for ``name`` (``task_kind`` or a key field), or ``None``."""
        return self.task_kind if name == "task_kind" else self.fields.get(name)

    def key(self, domain: str | None = None) -> tuple[str, ...]:
        """The match as a case-folded tuple, for identity and equality of triggers: the task
        kind, the key fields in ``domain``'s slots, the tool and the error signature."""
        return (
            _fold(self.task_kind),
            *key_slots(domain, self.fields),
            _fold(self.tool),
            _fold(self.error_signature),
        )

    def specificity(self) -> int:
        """How many task fields this match pins down (its task kind and key fields)."""
        return (self.task_kind is not None) + len(self.fields)

    def describe(self) -> str:
        parts = [f"task_kind={self.task_kind}"] if self.task_kind else []
        parts += [f"{name}={value}" for name, value in self.fields.items()]
        parts += [
            f"{name}={getattr(self, name)}" for name in ("tool", "error_signature") if getattr(self, name)
        ]
        return ", ".join(parts) or "any task"


def _action_data(value: Any) -> Any:
    """A domain's action model given where its JSON is kept (``model_dump``), else as given."""
    return value.model_dump() if hasattr(value, "model_dump") else value


def _accepts(domain: Domain, machine: dict[str, Any]) -> bool:
    try:
        domain.validate_action(machine)
    except ValueError:
        return False
    return True


def validate_action(domain: str, machine: Any) -> dict[str, Any] | None:
    """A lesson's machine action as stored: its domain's validation (``ValueError`` when it
    refuses it), ``None`` when empty; the action of no registered domain kept as given."""
    if machine is None:
        return None
    if hasattr(machine, "model_dump"):
        machine = machine.model_dump()
    if not isinstance(machine, dict):
        raise ValueError("a machine action is an object")
    registered = find_domain(domain)
    if registered is None:
        return dict(machine) or None
    action = registered.validate_action(machine)
    return None if registered.action_is_empty(action) else action


def identity_key(domain: str, match: LessonMatch, machine: dict[str, Any] | None, action: str) -> str:
    """What makes two lessons the same lesson regardless of scope: a short hash.

    With a machine action, its identity (its domain's: stated values included, knob values
    excluded); otherwise the normalised words of the action.
    """
    registered = find_domain(domain)
    if machine:
        what: Any = (
            registered.action_identity(machine) if registered is not None else generic_identity(machine)
        )
    else:
        what = normalize_text(action)
    blob = json.dumps([domain.casefold(), list(match.key(domain)), what], sort_keys=True, ensure_ascii=False)
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
    machine: dict[str, Any] | None = Field(
        None, description="What a policy without a model applies: the domain's action (domain.Domain)."
    )
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
    replayed: str | None = Field(
        None,
        description="The content (``gate.replay_key``) that last passed the gatekeeper's replay of "
        "judged events; a gated store activates a lesson only while it still holds.",
    )
    version: int = Field(1, ge=1)

    @field_validator("trigger", "action", "domain")
    @classmethod
    def _words(cls, value: str) -> str:
        return scrub(" ".join(value.split()))

    @field_validator("machine", mode="before")
    @classmethod
    def _machine(cls, value: Any) -> Any:
        return _action_data(value)

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
        self.machine = validate_action(self.domain, self.machine)
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

    def match_key(self) -> tuple[str, ...]:
        """The match's key in this lesson's domain's slots (``LessonMatch.key``)."""
        return self.match.key(self.domain)

    def describe_action(self) -> str:
        """The machine action in words (its domain's), or empty when there is none."""
        if self.machine is None:
            return ""
        registered = find_domain(self.domain)
        return (
            registered.describe_action(self.machine) if registered is not None else json.dumps(self.machine)
        )


class TaskKey(BaseModel):
    """A task as lessons are matched and measured against it: its domain, kind and key fields
    (the domain's, e.g. a data question's dataset)."""

    model_config = ConfigDict(extra="forbid")

    domain: str = Field("general", min_length=1, max_length=64, description="The domain of the task.")
    task_kind: str = Field(..., min_length=1, description="Kind of task, e.g. baseline_fill or ask.")
    fields: dict[str, str] = Field(default_factory=dict, description="The task's key fields.")

    @model_validator(mode="before")
    @classmethod
    def _legacy(cls, data: Any) -> Any:
        # A task as earlier releases stated it: its key fields beside task_kind, no domain (the
        # registered domain whose key fields hold them all).
        data = _legacy_fields(data, ("domain", "task_kind", "fields"))
        if isinstance(data, dict) and "domain" not in data and data.get("fields"):
            named = {key for key, value in data["fields"].items() if value is not None}
            from agentlake.learn.domain import all_domains

            owner = next((d.name for d in all_domains() if named <= set(d.key_fields)), None)
            if owner is not None:
                data = {**data, "domain": owner}
        return data

    @field_validator("task_kind", mode="before")
    @classmethod
    def _kind(cls, value: Any) -> Any:
        return _norm(value) if isinstance(value, str) else value

    @field_validator("fields", mode="before")
    @classmethod
    def _fields(cls, value: Any) -> dict[str, str]:
        return _clean_fields(value)

    def get(self, name: str) -> str | None:
        """``task_kind`` or a key field's value, or ``None``."""
        return self.task_kind if name == "task_kind" else self.fields.get(name)

    def sig_hash(self) -> str:
        """16 hex chars; equal for tasks that differ only in case or spacing."""
        blob = "\x1f".join([_fold(self.task_kind), *key_slots(self.domain, self.fields)])
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def describe(self) -> str:
        """The task in words, for semantic matching (its domain's words)."""
        registered = find_domain(self.domain)
        if registered is not None:
            return registered.describe_task(self)
        words = [self.task_kind.replace("_", " "), *self.fields.values()]
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
    machine: dict[str, Any] | None = Field(
        None,
        description="What a policy without an LLM applies (the domain's action: filters, limits); optional.",
    )
    domain: str = Field(
        "general",
        min_length=1,
        max_length=64,
        description="A registered domain's name (e.g. data), or tools, playbook, general.",
    )
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

    @field_validator("machine", mode="before")
    @classmethod
    def _machine(cls, value: Any) -> Any:
        return _action_data(value)

    @model_validator(mode="after")
    def _action(self) -> LessonDraft:
        if self.machine is not None and find_domain(self.domain) is None:
            # A draft that names no domain (earlier releases' clients) belongs to the one
            # registered domain whose action it is.
            from agentlake.learn.domain import all_domains

            owners = [d.name for d in all_domains() if _accepts(d, self.machine)]
            if len(owners) != 1:
                names = ", ".join(d.name for d in all_domains()) or "none"
                raise ValueError(
                    f"a machine action belongs to a domain: set domain to one of {names} (not {self.domain!r})"
                )
            self.domain = owners[0]
        self.machine = validate_action(self.domain, self.machine)
        return self


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
