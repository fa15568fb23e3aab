"""A fill order: what the client asked for, parsed from text or built in code.

Owns ``FillOrder`` (its fields, its parser for "3 x Welder in Cleveland, OH ..." and its task
key for lesson retrieval: ``signature``; the candidate search it asks for: ``candidate_query``),
``read_whole`` (the grammar as the fast path of orders in words: an order only when the grammar
reads every word of the text) and ``slugify`` (a client's id from its name). It does not own role
synonyms or certification spellings (``roles``), orders in free words (``order_words``), the search
itself (``candidates``) nor checking workers against an order
(``verify``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, time, timedelta
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agentlake.errors import UserError
from agentlake.workforce.roles import canonical_role, known_certification

if TYPE_CHECKING:
    from agentlake.learn import TaskKey
    from agentlake.workforce.candidates import CandidateQuery

DEFAULT_SHIFT_HOURS = 8

# "fill 3 x Welder in Cleveland, OH for Riverfront Steel at 08:00 on 2026-11-22"
_ORDER_RE = re.compile(
    r"""^\s*(?:fill\s+)?(?P<count>\d+)\s*(?:x|×|\*)?\s+(?P<role>.+?)\s+in\s+
        (?P<city>[^,]+?)\s*,\s*(?P<state>[A-Za-z]{2})\b(?P<rest>.*)$""",
    re.IGNORECASE | re.VERBOSE,
)
_CLIENT_RE = re.compile(
    r"\bfor\s+(?P<client>.+?)(?=\s+(?:at|on|from|within|with|requiring)\b|$)", re.IGNORECASE
)
_TIME_RE = re.compile(
    r"\b(?:at|from)\s+(?P<start>\d{1,2}:\d{2})(?:\s*(?:-|to|until)\s*(?P<end>\d{1,2}:\d{2}))?", re.IGNORECASE
)
_DATE_RE = re.compile(r"\bon\s+(?P<date>\d{4}-\d{2}-\d{2})\b", re.IGNORECASE)
_RADIUS_RE = re.compile(r"\bwithin\s+(?P<miles>\d+(?:\.\d+)?)\s*(?:mi|miles?)\b", re.IGNORECASE)
_REQUIRES_RE = re.compile(
    r"\b(?:with|requiring)\s+(?P<reqs>.+?)(?=\s+(?:at|on|from|within|for)\b|$)", re.IGNORECASE
)


def slugify(name: str) -> str:
    """'Riverfront Steel' -> 'riverfront-steel' (the clients dataset's id form)."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


# No staffing order asks for more workers at once; a larger number is a typo, not an order.
MAX_ORDER_COUNT = 1000


class FillOrder(BaseModel):
    """One staffing order. ``count`` workers of ``role`` near ``city, state``."""

    model_config = ConfigDict(extra="forbid")

    role: str = Field(
        ..., min_length=1, description="Role to fill, e.g. 'Welder' (catalogue synonyms accepted)."
    )
    count: int = Field(..., ge=1, le=MAX_ORDER_COUNT, description="How many workers.")
    city: str = Field(..., min_length=1)
    state: str = Field(..., description="Two-letter state code.")
    client_id: str | None = None
    shift_start: datetime | None = None
    shift_end: datetime | None = None
    requirements: list[str] = Field(default_factory=list, description="Stated certifications/skills.")
    wishes: list[str] = Field(
        default_factory=list,
        description="Soft wishes no column holds, in the order's words ('structural experience'). "
        "Text the client wrote: a prompt shows them only as fenced data.",
    )
    radius_miles: float = Field(25.0, gt=0, description="Workers must live within this distance of the city.")
    task_kind: str = "fill"
    event_id: str | None = None
    exclude_worker_ids: list[int] = Field(default_factory=list)

    @field_validator("state")
    @classmethod
    def _state(cls, value: str) -> str:
        value = value.strip().upper()
        if not re.fullmatch(r"[A-Z]{2}", value):
            raise ValueError("state must be a two-letter code such as OH")
        return value

    @field_validator("role", "city")
    @classmethod
    def _strip(cls, value: str) -> str:
        return " ".join(value.split())

    @model_validator(mode="after")
    def _shift(self) -> FillOrder:
        if self.shift_start is not None and self.shift_end is None:
            self.shift_end = self.shift_start + timedelta(hours=DEFAULT_SHIFT_HOURS)
        if self.shift_start is not None and self.shift_end is not None and self.shift_end <= self.shift_start:
            raise ValueError("shift_end must be after shift_start")
        if self.shift_start is None and self.shift_end is not None:
            raise ValueError("shift_end given without shift_start")
        return self

    @classmethod
    def parse(cls, text: str, *, now: datetime | None = None, **overrides: Any) -> FillOrder:
        """Parse '3 x Welder in Cleveland, OH' (also '3 × Welder', 'fill 3 Welders in ...').

        Optional tails: 'for Riverfront Steel' (client id = its slug), 'at 08:00' or
        'from 08:00 to 16:00', 'on 2026-11-22', 'within 40 miles', 'with OSHA 30, Forklift'.
        A time without a date means its next occurrence after ``now``. ``overrides`` replace
        parsed fields. Raises ``UserError`` showing the expected form.
        """
        from pydantic import ValidationError

        match = _ORDER_RE.match(text)
        if not match:
            raise UserError(
                f"cannot read the order {text!r}; write it like '3 x Welder in Cleveland, OH' "
                "(optionally '... for Riverfront Steel at 08:00 on 2026-11-22 within 40 miles with OSHA 30')"
            )
        rest = match["rest"]
        fields: dict[str, Any] = {
            "count": int(match["count"]),
            "role": _catalogue_role(match["role"]),
            "city": match["city"],
            "state": match["state"],
        }
        if client := _CLIENT_RE.search(rest):
            fields["client_id"] = slugify(client["client"])
        if radius := _RADIUS_RE.search(rest):
            fields["radius_miles"] = float(radius["miles"])
        if reqs := _REQUIRES_RE.search(rest):
            fields["requirements"] = [
                part.strip() for part in re.split(r",|\band\b", reqs["reqs"]) if part.strip()
            ]
        shift = _TIME_RE.search(rest)
        day = _DATE_RE.search(rest)
        if shift:
            start_t = _clock(shift["start"], text)
            if day:
                base = datetime.fromisoformat(day["date"])
                start = datetime.combine(base.date(), start_t)
            else:
                reference = now or datetime.now()
                start = datetime.combine(reference.date(), start_t)
                if start <= reference:
                    start += timedelta(days=1)
            fields["shift_start"] = start
            if shift["end"]:
                end = datetime.combine(start.date(), _clock(shift["end"], text))
                fields["shift_end"] = end if end > start else end + timedelta(days=1)
        elif day:
            raise UserError(f"the order {text!r} names a date but no start time; add e.g. 'at 08:00'")
        fields.update(overrides)
        try:
            return cls(**fields)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'order'}: {e['msg']}" for e in exc.errors()
            )
            raise UserError(f"invalid order {text!r}: {problems}") from None

    def as_text(self) -> str:
        """The order in the grammar's form, which :meth:`parse` reads back to the same order
        (its wishes aside: the grammar has no place for them)."""
        parts = [f"{self.count} x {self.role} in {self.city}, {self.state}"]
        if self.client_id:
            parts.append(f"for {self.client_id}")
        if self.shift_start is not None and self.shift_end is not None:
            end = (
                f" to {self.shift_end:%H:%M}"
                if self.shift_end - self.shift_start != timedelta(hours=DEFAULT_SHIFT_HOURS)
                else ""
            )
            parts.append(f"from {self.shift_start:%H:%M}{end} on {self.shift_start:%Y-%m-%d}")
        parts.append(f"within {self.radius_miles:g} miles")
        if self.requirements:
            parts.append("with " + ", ".join(self.requirements))
        return " ".join(parts)

    def signature(self) -> TaskKey:
        """The task key lessons are retrieved and measured by (the staffing domain's)."""
        # Lazy (start-up time): the learning layer loads on first use.
        from agentlake.learn import TaskKey

        return TaskKey(
            domain="staffing",
            task_kind=self.task_kind,
            fields={"role": self.role, "client_id": self.client_id, "city": self.city, "state": self.state},
        )

    def candidate_query(
        self, *, limit: int, leave_out: Sequence[int] = (), min_availability: float | None = None
    ) -> CandidateQuery:
        """The candidate search this order asks for: its role, place, radius and requirements,
        its excluded workers and ``leave_out`` (workers already placed) left out, at most
        ``limit`` rows, workers below ``min_availability`` too. A fresh query each call: a
        lesson's action narrows it in place."""
        # Lazy: candidates reads the tables, which read this module (slugify).
        from agentlake.workforce.candidates import CandidateQuery

        return CandidateQuery(
            role=self.role,
            city=self.city,
            state=self.state,
            radius_miles=self.radius_miles,
            requirements=list(self.requirements),
            exclude_ids=[*self.exclude_worker_ids, *leave_out],
            min_availability=min_availability,
            limit=limit,
        )

    def labels(self) -> dict[str, Any]:
        """The labels an op about this order carries (the witness finds a scenario's ops by them)."""
        return {
            "domain": "staffing",
            "role": self.role,
            "city": self.city,
            "state": self.state,
            "count": self.count,
            "sig_hash": self.signature().sig_hash(),
            "event_kind": self.task_kind,
        }

    def describe(self) -> str:
        """One line for prompts and tables."""
        parts = [
            f"{self.count} x {self.role} in {self.city}, {self.state} (within {self.radius_miles:g} miles)"
        ]
        if self.client_id:
            parts.append(f"for client {self.client_id}")
        if self.shift_start:
            parts.append(f"shift {self.shift_start:%Y-%m-%d %H:%M}-{self.shift_end:%H:%M}")
        if self.requirements:
            parts.append("requires " + ", ".join(self.requirements))
        if self.exclude_worker_ids:
            parts.append(f"excluding workers {self.exclude_worker_ids}")
        return " ".join(parts)


def read_whole(text: str, *, now: datetime | None = None) -> FillOrder | None:
    """The order when the grammar reads every word of ``text`` and each requirement is a
    catalogue certification ('3 x Welder in Cleveland, OH at 08:00 with OSHA 10'); ``None`` when
    words are left over ('... tomorrow morning, reliable folks') or a requirement is no
    certification ('with structural experience'): a reader of words must read those. The role
    may be one the catalogue lacks (the caller offers the nearest). Raises what :meth:`FillOrder.parse`
    raises for text in the grammar's form (a bad time, a date without a time)."""
    match = _ORDER_RE.match(text)
    if not match:
        return None
    rest = match["rest"]
    for tail in (_CLIENT_RE, _TIME_RE, _DATE_RE, _RADIUS_RE, _REQUIRES_RE):
        rest = tail.sub(" ", rest, count=1)
    if re.search(r"\w", rest):
        return None
    order = FillOrder.parse(text, now=now)
    if any(known_certification(req) is None for req in order.requirements):
        return None
    return order


def _clock(value: str, text: str) -> time:
    try:
        return time.fromisoformat(value.zfill(5))
    except ValueError:
        raise UserError(f"bad time {value!r} in order {text!r}; use HH:MM, e.g. 08:00") from None


def _catalogue_role(role: str) -> str:
    """The catalogue's name for the role as written ('forklift drivers' -> 'Forklift Operator');
    a role the catalogue does not know keeps its words, singular."""
    return canonical_role(_singular_role(role))


def _singular_role(role: str) -> str:
    """'Welders' -> 'Welder'; the catalogue maps synonyms later, this only undoes the plural."""
    role = " ".join(role.split())
    words = role.split(" ")
    last = words[-1]
    if len(last) > 3 and last.lower().endswith("s") and not last.lower().endswith("ss"):
        words[-1] = last[:-1]
    return " ".join(words)
