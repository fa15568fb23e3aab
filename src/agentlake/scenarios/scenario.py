"""The scenario format: one client's staffing day, its hidden acceptance rules and its events.

Owns the YAML shape (``Scenario``, ``Client``, ``Acceptance``, ``Event``), loading and
validating files (every error names the file, the path inside it and the problem) and the
built-in pack's location. It does not own turning events into orders (``day``), judging fills
(``judge``) or running anything (``runner``). The format is documented in docs/scenarios.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import date, datetime, time, timedelta
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from agentlake.errors import UserError
from agentlake.workforce.resume_facts import FACTS
from agentlake.workforce.tables import SCORE_COLUMNS

PACK_DIR = Path(__file__).parent / "pack"
BUILTIN = "builtin"

EventKind = Literal["baseline_fill", "recurring", "expansion", "emergency", "misplacement"]
# What a client says when it refuses someone (docs/scenarios.md, "Feedback modes").
FeedbackMode = Literal["explicit", "vague", "silent"]
FEEDBACK_MODES: tuple[str, ...] = ("explicit", "vague", "silent")
DEFAULT_SHIFT_HOURS = 8

_SLUG = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_CLOCK = re.compile(r"^([01]?\d|2[0-3]):([0-5]\d)$")


def _clock(value: Any) -> str:
    """'08:00' stays; 840 (YAML 1.1 reads an unquoted 14:00 as base-60 minutes) becomes '14:00'."""
    if isinstance(value, bool):
        raise ValueError("expected a time like '08:00'")
    if isinstance(value, int):
        if not 0 <= value < 24 * 60:
            raise ValueError(f"expected a time like '08:00', got {value}")
        return f"{value // 60:02d}:{value % 60:02d}"
    if isinstance(value, str) and (match := _CLOCK.match(value.strip())):
        return f"{int(match[1]):02d}:{match[2]}"
    raise ValueError(f"expected a time like '08:00', got {value!r}")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Acceptance(_Strict):
    """A client's unwritten rules: never shown to agents, enforced when a fill is submitted.

    Every key is optional; an absent key is a rule the client does not have.
    """

    required_certifications: list[str] = Field(
        default_factory=list, description="Certifications every worker must hold (spelling variants match)."
    )
    min_reliability: float | None = Field(None, ge=0, le=1, description="Lowest reliability score accepted.")
    max_distance_miles: float | None = Field(
        None, gt=0, description="Farthest a worker may live from the site."
    )
    exclude_prior_no_show: bool = Field(False, description="Refuse workers with a no-show at this client.")
    min_scores: dict[str, float] = Field(
        default_factory=dict,
        description="Lowest accepted value of other score columns, e.g. {compliance: 0.8}.",
    )
    role_synonyms: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Roles the client treats as the same job, e.g. Forklift Operator: [Forklift Driver].",
    )
    resume_facts: list[str] = Field(
        default_factory=list,
        description="Facts only a resume states that every worker must hold, by key "
        "(workforce/resume_facts.py FACTS, e.g. equipment:reach-truck).",
    )

    @field_validator("resume_facts")
    @classmethod
    def _facts(cls, value: list[str]) -> list[str]:
        return _known_facts(value)

    @field_validator("required_certifications")
    @classmethod
    def _nonblank(cls, value: list[str]) -> list[str]:
        if any(not item.strip() for item in value):
            raise ValueError("certification names may not be blank")
        return [item.strip() for item in value]

    @field_validator("min_scores")
    @classmethod
    def _scores(cls, value: dict[str, float]) -> dict[str, float]:
        for name, minimum in value.items():
            if name not in SCORE_COLUMNS:
                raise ValueError(f"unknown score {name!r}; scores are {', '.join(SCORE_COLUMNS)}")
            if not 0 <= minimum <= 1:
                raise ValueError(f"min_scores.{name} must be between 0 and 1, got {minimum}")
        return value

    @model_validator(mode="after")
    def _one_reliability(self) -> Acceptance:
        if self.min_reliability is not None and "reliability" in self.min_scores:
            raise ValueError("give the reliability minimum once: min_reliability or min_scores.reliability")
        return self

    def score_minimums(self) -> dict[str, float]:
        """Every score minimum the client holds, ``min_reliability`` included."""
        floors = dict(self.min_scores)
        if self.min_reliability is not None:
            floors["reliability"] = self.min_reliability
        return floors


class Client(_Strict):
    id: str = Field(
        ...,
        description="The client's id in orders and lessons (the slug of its name), e.g. riverfront-steel.",
    )
    name: str = Field(
        ..., min_length=1, description="Also how its history is found in the lake's clients dataset."
    )
    lake_id: int | str | None = Field(
        None, description="The client's id in the lake's clients dataset, if not found by id or name."
    )
    city: str = Field(..., min_length=1)
    state: str
    acceptance: Acceptance = Field(default_factory=Acceptance)

    @field_validator("id")
    @classmethod
    def _slug(cls, value: str) -> str:
        if not _SLUG.match(value):
            raise ValueError("must be lower-case letters, digits and dashes, e.g. riverfront-steel")
        return value

    @field_validator("state")
    @classmethod
    def _state(cls, value: str) -> str:
        return _state_code(value)


class Shift(_Strict):
    start: str
    end: str

    @field_validator("start", "end", mode="before")
    @classmethod
    def _clocks(cls, value: Any) -> str:
        return _clock(value)


class Event(_Strict):
    """One event of the day. Which fields apply depends on ``kind`` (see docs/scenarios.md)."""

    id: str = Field(..., min_length=1, max_length=40)
    at: str
    kind: EventKind
    role: str | None = None
    count: int = Field(..., ge=1, le=200)
    city: str | None = None
    state: str | None = None
    shift: Shift | None = None
    requirements: list[str] = Field(default_factory=list)
    wishes: list[str] = Field(
        default_factory=list,
        description="Facts the order wishes for in words, by key (workforce/resume_facts.py FACTS); "
        "the order carries each fact's wish words, the judge checks the fact.",
    )
    radius_miles: float | None = Field(None, gt=0, le=500)
    same_as: str | None = Field(
        None, description="recurring: the earlier event whose role/place/requirements repeat."
    )
    no_show_of: str | None = Field(
        None, description="emergency: the earlier event whose workers did not show."
    )
    replace_from: str | None = Field(
        None, description="misplacement: the earlier event a placed worker is removed from."
    )
    note: str = ""

    @field_validator("at", mode="before")
    @classmethod
    def _at(cls, value: Any) -> str:
        return _clock(value)

    @field_validator("wishes")
    @classmethod
    def _wishes(cls, value: list[str]) -> list[str]:
        return _known_facts(value)

    @field_validator("state")
    @classmethod
    def _state(cls, value: str | None) -> str | None:
        return None if value is None else _state_code(value)

    @model_validator(mode="after")
    def _fields_for_kind(self) -> Event:
        refs = {"same_as": self.same_as, "no_show_of": self.no_show_of, "replace_from": self.replace_from}
        allowed = {"recurring": "same_as", "emergency": "no_show_of", "misplacement": "replace_from"}.get(
            self.kind
        )
        for name, value in refs.items():
            if value is not None and name != allowed:
                raise ValueError(f"'{name}' does not apply to a {self.kind} event")
        if self.kind == "emergency" and self.no_show_of is None:
            raise ValueError("an emergency event needs 'no_show_of: <earlier event id>'")
        if self.kind == "misplacement" and self.replace_from is None:
            raise ValueError("a misplacement event needs 'replace_from: <earlier event id>'")
        if self.kind in ("baseline_fill", "expansion") and not self.role:
            raise ValueError(f"a {self.kind} event needs a 'role'")
        if self.kind == "recurring" and not (self.role or self.same_as):
            raise ValueError("a recurring event needs a 'role' or 'same_as: <earlier event id>'")
        if self.kind in ("emergency", "misplacement") and (self.role or self.city or self.state):
            raise ValueError(
                f"a {self.kind} event takes role and place from the event it refers to; remove role/city/state"
            )
        return self

    @property
    def ref(self) -> str | None:
        """The earlier event this one refers to, if any."""
        return self.same_as or self.no_show_of or self.replace_from


class Scenario(_Strict):
    """One client's staffing day."""

    scenario: str = Field(..., description="Unique name, e.g. riverfront-steel-day1.")
    description: str = ""
    client: Client
    date: date
    feedback: FeedbackMode = Field(
        "explicit",
        description="What the client says when it refuses someone: explicit (the rule and its value), "
        "vague (its own words only) or silent (accepted or not). `agentlake run --feedback` overrides it.",
    )
    events: list[Event] = Field(..., min_length=1)

    @field_validator("scenario")
    @classmethod
    def _slug(cls, value: str) -> str:
        if not _SLUG.match(value):
            raise ValueError("must be lower-case letters, digits and dashes, e.g. riverfront-steel-day1")
        return value

    @field_validator("date", mode="before")
    @classmethod
    def _date(cls, value: Any) -> Any:
        if isinstance(value, datetime):
            return value.date()
        return value

    @property
    def name(self) -> str:
        return self.scenario

    def event(self, event_id: str) -> Event:
        for event in self.events:
            if event.id == event_id:
                return event
        raise UserError(f"scenario {self.scenario} has no event {event_id!r}")

    def at(self, clock: str) -> datetime:
        """The scenario day's wall-clock time ``clock`` ('HH:MM') as a naive datetime."""
        return datetime.combine(self.date, time.fromisoformat(clock))

    def shift_window(self, shift: Shift) -> tuple[datetime, datetime]:
        """Start and end of a shift on this day; an end at or before the start runs past midnight."""
        start, end = self.at(shift.start), self.at(shift.end)
        return start, end if end > start else end + timedelta(days=1)


def parse_feedback(values: str | Iterable[str] | None) -> list[str] | None:
    """Feedback modes from ``--feedback`` (comma-separated, repeatable); ``None`` stays ``None``.

    Raises ``UserError`` naming the modes for an unknown one.
    """
    if values is None:
        return None
    items = [values] if isinstance(values, str) else list(values)
    modes = [part.strip().lower() for item in items for part in str(item).split(",") if part.strip()]
    unknown = [mode for mode in modes if mode not in FEEDBACK_MODES]
    if unknown:
        raise UserError(f"unknown feedback mode {unknown[0]!r}; the modes are {', '.join(FEEDBACK_MODES)}")
    if not modes:
        raise UserError(f"no feedback mode given; the modes are {', '.join(FEEDBACK_MODES)}")
    return list(dict.fromkeys(modes))


def _known_facts(value: list[str]) -> list[str]:
    unknown = [key for key in value if key not in FACTS]
    if unknown:
        raise ValueError(f"unknown fact {unknown[0]!r}; facts are {', '.join(FACTS)}")
    return list(dict.fromkeys(value))


def _state_code(value: str) -> str:
    value = str(value).strip().upper()
    if not re.fullmatch(r"[A-Z]{2}", value):
        raise ValueError("must be a two-letter state code such as OH")
    return value


def _cross_check(scenario: Scenario) -> list[tuple[str, str]]:
    """Problems a single field cannot see: duplicate ids, references, event order."""
    problems: list[tuple[str, str]] = []
    seen: dict[str, int] = {}
    last_at = "00:00"
    for index, event in enumerate(scenario.events):
        where = f"events[{index}]"
        if event.id in seen:
            problems.append(
                (f"{where}.id", f"duplicate event id {event.id!r} (also events[{seen[event.id]}])")
            )
        if event.at < last_at:
            problems.append(
                (
                    f"{where}.at",
                    f"{event.at} is before the previous event's {last_at}; list events in time order",
                )
            )
        last_at = max(last_at, event.at)
        if event.ref is not None:
            field = "same_as" if event.same_as else "no_show_of" if event.no_show_of else "replace_from"
            if event.ref not in seen:
                known = ", ".join(seen) or "none"
                problems.append(
                    (
                        f"{where}.{field}",
                        f"refers to {event.ref!r}, which is not an earlier event (earlier: {known})",
                    )
                )
        seen.setdefault(event.id, index)
    return problems


def _path(loc: Sequence[Any]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif str(part).startswith(("function-", "literal[", "str", "int", "float")):
            continue  # pydantic's union/validator markers are noise in a user-facing path
        else:
            out += f".{part}" if out else str(part)
    return out or "(top level)"


def format_problems(source: str, problems: Iterable[tuple[str, str]]) -> str:
    """``'<file>: <path>: <problem>'`` lines, the one error style for scenario and profile files."""
    return "\n".join(f"{source}: {path}: {problem}" for path, problem in problems)


def validation_problems(exc: ValidationError) -> list[tuple[str, str]]:
    """Turn a pydantic error into (path, problem) pairs a person can act on."""
    problems = []
    for err in exc.errors():
        message = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            message = "unknown key (check its spelling against docs/scenarios.md)"
        elif err["type"] == "missing":
            message = "required key is missing"
        problems.append((_path(err["loc"]), message))
    return problems


class _Loader(yaml.SafeLoader):
    """SafeLoader that leaves dates as text, so a bad date is reported with its path
    (PyYAML's own timestamp constructor raises a bare ValueError on 2026-13-21)."""


_Loader.yaml_implicit_resolvers = {
    key: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for key, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def read_yaml(path: Path) -> Any:
    """Parse one YAML file or raise ``UserError`` naming the file, line and problem."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UserError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise UserError(
            f"{path}: byte {exc.start} is not UTF-8 text: a scenario file is YAML text (see docs/scenarios.md)"
        ) from None
    try:
        return yaml.load(text, Loader=_Loader)  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "(top level)"
        problem = getattr(exc, "problem", None) or str(exc)
        raise UserError(f"{path}: {where}: invalid YAML: {problem}") from None


def parse_scenario(data: Any, source: str = "<scenario>") -> Scenario:
    """Validate one scenario document; ``UserError`` lists every problem as 'file: path: problem'."""
    if not isinstance(data, dict):
        raise UserError(f"{source}: (top level): expected a mapping with keys scenario, client, date, events")
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as exc:
        raise UserError(format_problems(source, validation_problems(exc))) from None
    if problems := _cross_check(scenario):
        raise UserError(format_problems(source, problems))
    return scenario


def load_scenario(path: Path | str) -> Scenario:
    """Load and validate one scenario file."""
    path = Path(path)
    return parse_scenario(read_yaml(path), str(path))


def scenario_files(spec: str | Path) -> list[Path]:
    """The YAML files named by ``spec``: a file, a directory (its *.yaml/*.yml), or ``builtin``."""
    if str(spec) == BUILTIN:
        spec = PACK_DIR
    path = Path(spec)
    if path.is_dir():
        files = sorted([*path.glob("*.yaml"), *path.glob("*.yml")])
        if not files:
            raise UserError(f"{path}: no *.yaml scenario files in this directory")
        return files
    if path.is_file():
        return [path]
    raise UserError(
        f"{path}: no such scenario file or directory (use a path, or 'builtin' for the built-in pack)"
    )


def load_scenarios(specs: Iterable[str | Path] | str | Path = BUILTIN) -> list[Scenario]:
    """Load every scenario named by ``specs`` (files, directories, ``builtin``), all validated first.

    Raises ``UserError`` listing the problems of every bad file (so one pass fixes them all) and
    duplicate scenario names across files. Nothing runs before this returns.
    """
    if isinstance(specs, (str, Path)):
        specs = [specs]
    files: list[Path] = []
    for spec in specs:
        files.extend(scenario_files(spec))
    scenarios: list[Scenario] = []
    errors: list[str] = []
    origin: dict[str, Path] = {}
    for file in files:
        try:
            scenario = load_scenario(file)
        except UserError as exc:
            errors.append(exc.message)
            continue
        if scenario.scenario in origin:
            errors.append(
                f"{file}: scenario: name {scenario.scenario!r} is also used by {origin[scenario.scenario]}"
            )
            continue
        origin[scenario.scenario] = file
        scenarios.append(scenario)
    if errors:
        raise UserError("invalid scenario files:\n" + "\n".join(errors))
    if not scenarios:
        raise UserError("no scenarios given")
    return scenarios
