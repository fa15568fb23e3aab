"""The client: judges a submitted fill, worker by worker, against its hidden acceptance rules.

Owns the verdicts a client gives ("no OSHA 30 on file; site policy", "reliability 0.55 below
0.70", "63 miles from site, limit 40", "no-show here on 2026-03-02", "already booked
08:00-16:00 at Acme Foods"), each with a structured rule for the learning loop. It never shows
the acceptance to agents and never reads or writes the lake: the worker facts it judges are
read by the domain (``agentlake.workforce.facts``). It does not own the day's schedule
(``workforce.ScheduleBook``) nor the op it becomes (``day``).

Rule names (``ClientRejection.rule``), in the order a worker is checked:
unknown_worker, duplicate, excluded, role_mismatch, double_booked, missing_requirement,
too_far (the order's stated radius), then the hidden ones: required_certification,
min_<score> (min_reliability, min_compliance, ... one per score minimum), max_distance_miles,
exclude_prior_no_show. A worker gets one entry per rule
broken, so a single rejection can teach several of a client's rules at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, Field

from agentlake.scenarios.scenario import Acceptance
from agentlake.workforce.facts import WorkerFacts
from agentlake.workforce.geo import (
    haversine_miles,  # the agents' own distance, so both sides agree at the limit
)
from agentlake.workforce.resume_facts import FACTS, fact_for_wish
from agentlake.workforce.roles import certification_key, same_role

if TYPE_CHECKING:
    from agentlake.workforce.order import FillOrder


class BookingLike(Protocol):
    start: datetime
    end: datetime
    client_name: str | None
    client_id: str | None


class ScheduleLike(Protocol):
    def conflicts(self, worker_id: int, start: datetime, end: datetime) -> Sequence[BookingLike]: ...


class ClientRejection(BaseModel):
    """One reason a client refused one worker; the shape of the ``fill.judged`` op's rejections."""

    worker_id: int
    reason: str
    rule: str
    value: Any = None


class Judgement(BaseModel):
    """The client's answer to one submission."""

    requested: int
    submitted: list[int] = Field(description="The workers judged: the first `requested` of the proposal.")
    ignored: list[int] = Field(
        default_factory=list, description="Proposed beyond the requested count; not judged."
    )
    accepted: list[int] = Field(default_factory=list)
    rejections: list[ClientRejection] = Field(default_factory=list)

    @property
    def filled(self) -> int:
        return len(self.accepted)

    @property
    def success(self) -> bool:
        return self.filled == self.requested

    @property
    def rejected_workers(self) -> list[int]:
        return list(dict.fromkeys(r.worker_id for r in self.rejections))

    def rules_broken(self) -> dict[str, int]:
        """How many workers broke each rule."""
        counts: dict[str, int] = {}
        for rejection in self.rejections:
            counts[rejection.rule] = counts.get(rejection.rule, 0) + 1
        return counts


@dataclass
class Matching:
    """How names are compared: certification spellings and role synonyms.

    The default is the agents' own matching (``workforce.roles``: the catalogue's role
    synonyms and ``normalize_certification``), so a worker the staffer verified as a Welder
    with OSHA 30 is one the client sees the same way; only the client's hidden rules differ.
    """

    certification_key: Callable[[str], str]
    catalogue_same_role: Callable[[str, str], bool]

    @classmethod
    def default(cls) -> Matching:
        return cls(certification_key=certification_key, catalogue_same_role=same_role)

    def _alike(self, a: str, b: str) -> bool:
        return _fold(a) == _fold(b) or self.catalogue_same_role(a, b) or self.catalogue_same_role(b, a)

    def same_role(self, worker_role: str, wanted: str, client_synonyms: Mapping[str, Iterable[str]]) -> bool:
        """True when the client counts ``worker_role`` as the ``wanted`` role.

        A client's ``role_synonyms`` entry is a group: "Forklift Operator: [Forklift Driver]"
        also means an order for a Forklift Driver is filled by a Forklift Operator.
        """
        if self._alike(worker_role, wanted):
            return True
        for canonical, aliases in client_synonyms.items():
            group = [canonical, *aliases]
            if any(self._alike(wanted, name) for name in group) and any(
                self._alike(worker_role, name) for name in group
            ):
                return True
        return False

    def holds(self, facts: WorkerFacts, certification: str) -> bool:
        wanted = self.certification_key(certification)
        return any(self.certification_key(held) == wanted for held in facts.certifications)


def _fold(text: str) -> str:
    return " ".join(text.lower().split())


def judge_fill(
    order: FillOrder,
    proposed: Sequence[int],
    *,
    acceptance: Acceptance,
    site: tuple[float, float],
    facts: Mapping[int, WorkerFacts],
    no_shows: Mapping[int, Sequence[date]] | None = None,
    schedule: ScheduleLike | None = None,
    matching: Matching | None = None,
    exclusion_reason: str = "this worker was taken off this job earlier today",
    resume_facts: Mapping[int, frozenset[str]] | None = None,
) -> Judgement:
    """Judge a submission: the first ``order.count`` proposed workers, each accepted or rejected.

    ``site`` is the (lat, lon) distances are measured from. ``no_shows`` maps worker id to the
    dates of their no-shows at this client. ``schedule`` answers conflicts with other bookings
    (the lake's placements and the day's earlier fills). The judgement is pure: nothing is
    booked here; the caller books the accepted workers. ``resume_facts``: what each worker's
    resume states (``workforce.resume_facts``), for the client's ``resume_facts`` rules and the
    order's wishes; ``None`` when neither applies.
    """
    matching = matching or Matching.default()
    no_shows = no_shows or {}
    submitted = list(proposed[: order.count])
    judgement = Judgement(requested=order.count, submitted=submitted, ignored=list(proposed[order.count :]))
    seen: set[int] = set()
    excluded = set(order.exclude_worker_ids)
    for worker_id in submitted:
        reasons = _worker_reasons(
            worker_id,
            order,
            acceptance=acceptance,
            site=site,
            facts=facts.get(worker_id),
            no_shows=no_shows.get(worker_id, ()),
            schedule=schedule,
            matching=matching,
            duplicate=worker_id in seen,
            excluded=worker_id in excluded,
            exclusion_reason=exclusion_reason,
            held=None if resume_facts is None else resume_facts.get(worker_id, frozenset()),
        )
        seen.add(worker_id)
        if reasons:
            judgement.rejections.extend(reasons)
        else:
            judgement.accepted.append(worker_id)
    return judgement


def _worker_reasons(
    worker_id: int,
    order: FillOrder,
    *,
    acceptance: Acceptance,
    site: tuple[float, float],
    facts: WorkerFacts | None,
    no_shows: Sequence[date],
    schedule: ScheduleLike | None,
    matching: Matching,
    duplicate: bool,
    excluded: bool,
    exclusion_reason: str,
    held: frozenset[str] | None = None,
) -> list[ClientRejection]:
    def reject(reason: str, rule: str, value: Any = None) -> ClientRejection:
        return ClientRejection(worker_id=worker_id, reason=reason, rule=rule, value=value)

    if facts is None:
        return [reject(f"we have no worker #{worker_id} on record", "unknown_worker")]
    if duplicate:
        return [reject(f"{_who(facts)} is listed twice in this submission", "duplicate")]
    if excluded:
        return [reject(exclusion_reason, "excluded")]
    out: list[ClientRejection] = []
    if not matching.same_role(facts.role, order.role, acceptance.role_synonyms):
        out.append(
            reject(
                f"we asked for a {order.role}; {_who(facts)} is a {facts.role}", "role_mismatch", facts.role
            )
        )
    if schedule is not None and order.shift_start is not None and order.shift_end is not None:
        for booking in schedule.conflicts(worker_id, order.shift_start, order.shift_end):
            out.append(reject(_booked_reason(booking, order.shift_start), "double_booked", _window(booking)))
            break
    for requirement in order.requirements:
        if not matching.holds(facts, requirement):
            out.append(
                reject(
                    f"no {requirement} on file, and the order asked for it",
                    "missing_requirement",
                    requirement,
                )
            )
    miles = haversine_miles(facts.lat, facts.lon, site[0], site[1])
    if miles > order.radius_miles:
        out.append(
            reject(
                f"{miles:.0f} miles from site; the order said within {order.radius_miles:g}",
                "too_far",
                order.radius_miles,
            )
        )
    # The hidden rules: what agents can only learn from being told no.
    for certification in acceptance.required_certifications:
        if not matching.holds(facts, certification):
            out.append(
                reject(f"no {certification} on file; site policy", "required_certification", certification)
            )
    for score, minimum in acceptance.score_minimums().items():
        if facts.score(score) < minimum:
            out.append(
                reject(f"{score} {facts.score(score):.2f} below {minimum:.2f}", f"min_{score}", minimum)
            )
    if acceptance.max_distance_miles is not None and miles > acceptance.max_distance_miles:
        out.append(
            reject(
                f"{miles:.0f} miles from site, limit {acceptance.max_distance_miles:g}",
                "max_distance_miles",
                acceptance.max_distance_miles,
            )
        )
    if acceptance.exclude_prior_no_show and no_shows:
        out.append(reject(f"no-show here on {max(no_shows).isoformat()}", "exclude_prior_no_show", True))
    if held is not None:
        out += _resume_reasons(worker_id, order, acceptance, held)
    return out


def _resume_reasons(
    worker_id: int, order: FillOrder, acceptance: Acceptance, held: frozenset[str]
) -> list[ClientRejection]:
    """What the resume does not show: the order's wishes (the client wrote them: ``missing_wish``)
    and the client's unwritten ones (``resume_wish``), each with the client's words as its value."""
    out = []
    for words in order.wishes:
        fact = fact_for_wish(words)
        if fact is not None and fact.key not in held:
            out.append(
                ClientRejection(
                    worker_id=worker_id,
                    reason=f"the order asked for someone who {fact.wish}; their resume does not show it",
                    rule="missing_wish",
                    value=fact.wish,
                )
            )
    for key in acceptance.resume_facts:
        if key not in held:
            out.append(
                ClientRejection(
                    worker_id=worker_id,
                    reason=f"we only take people who {FACTS[key].wish}; their resume does not show it",
                    rule="resume_wish",
                    value=FACTS[key].wish,
                )
            )
    return out


def _who(facts: WorkerFacts) -> str:
    return facts.name or f"worker #{facts.worker_id}"


def _window(booking: BookingLike) -> str:
    return f"{booking.start:%H:%M}-{booking.end:%H:%M}"


def _booked_reason(booking: BookingLike, shift_start: datetime) -> str:
    where = booking.client_name or booking.client_id or "another client"
    day = "" if booking.start.date() == shift_start.date() else f" on {booking.start:%Y-%m-%d}"
    return f"already booked {_window(booking)}{day} at {where}"
