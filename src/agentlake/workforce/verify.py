"""Verification in code: the data, not a model, decides whether a proposed fill is valid.

Owns ``verify_fill`` and its result (``Verification``, ``Rejection``). A worker passes only if
they exist, are not listed twice or excluded by the order, have the ordered role (catalogue
synonyms accepted), live within the order's radius of its city, hold every stated requirement
(any spelling), are available (availability score at least ``agent_min_availability``) and
are not booked over an overlapping shift. Every failure is one ``Rejection`` with a reason a
person (or a model) can act on. Policies call it before proposing (``agents``); it is the
domain's answer to "is this fill valid?". It does not own search (``candidates``) or a
client's hidden preferences (the scenarios' judge).

Rule names: unknown_worker, duplicate, excluded, role_mismatch, too_far, missing_requirement,
unavailable, double_booked.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from agentlake.workforce.geo import gazetteer, haversine_miles
from agentlake.workforce.roles import missing_certifications, same_role
from agentlake.workforce.schedule import ScheduleBook
from agentlake.workforce.tables import fetch_workers

if TYPE_CHECKING:
    from agentlake.lake import Lake
    from agentlake.workforce.order import FillOrder

RULES = (
    "unknown_worker",
    "duplicate",
    "excluded",
    "role_mismatch",
    "too_far",
    "missing_requirement",
    "unavailable",
    "double_booked",
)


class Rejection(BaseModel):
    """One reason one worker cannot fill the order."""

    worker_id: int
    reason: str
    rule: str
    value: Any = None


class Verification(BaseModel):
    """The verdict on a proposal: who passed, who did not and why."""

    accepted: list[int] = Field(default_factory=list)
    rejections: list[Rejection] = Field(default_factory=list)
    requested: int = Field(0, description="The order's count; 0 when verifying loose candidates.")

    @property
    def ok(self) -> bool:
        """Every proposed worker passed and there are exactly as many as requested."""
        return not self.rejections and (self.requested == 0 or len(self.accepted) == self.requested)

    @property
    def rejected_ids(self) -> list[int]:
        return list(dict.fromkeys(r.worker_id for r in self.rejections))

    def summary(self) -> str:
        """One paragraph for prompts and logs."""
        head = f"verification: {len(self.accepted)} accepted"
        if self.requested:
            head += f" of {self.requested} requested"
        if self.accepted:
            head += f" {self.accepted}"
        lines = [head]
        if (
            self.requested
            and len(self.accepted) + len(self.rejected_ids) < self.requested
            and not self.rejections
        ):
            lines.append(f"- proposal is short: {self.requested - len(self.accepted)} more worker(s) needed")
        for rejection in self.rejections:
            lines.append(f"- REJECTED {rejection.worker_id} ({rejection.rule}): {rejection.reason}")
        if self.requested and len(self.accepted) > self.requested:
            lines.append(f"- too many workers: {len(self.accepted)} proposed for {self.requested}")
        return "\n".join(lines)


def verify_fill(
    lake: Lake,
    order: FillOrder,
    worker_ids: Sequence[int],
    *,
    schedule: ScheduleBook | None = None,
    requested: int | None = None,
    also_roles: Collection[str] = (),
) -> Verification:
    """Check each of ``worker_ids`` against ``order``; ``requested`` defaults to ``order.count``;
    ``also_roles``: other roles the client takes for the ordered one (a learned synonym).

    ``schedule`` defaults to the lake's placements. Raises ``UserError`` when the order's
    city is unknown or the lake has no workers dataset; never for a bad worker (that is a
    rejection).
    """
    schedule = schedule if schedule is not None else ScheduleBook(lake)
    site = gazetteer(lake).resolve(order.city, order.state)
    floor = lake.settings.agent_min_availability
    ids = [int(w) for w in worker_ids]
    rows = fetch_workers(lake, ids, ["role", "name", "lat", "lon", "certifications", "availability"])
    shift_start, shift_end = order.shift_start, order.shift_end
    if shift_start is not None and shift_end is not None:
        schedule.prefetch([w for w in ids if w in rows])
    excluded = set(order.exclude_worker_ids)
    result = Verification(requested=order.count if requested is None else requested)
    seen: set[int] = set()
    for worker_id in ids:
        found: list[Rejection] = []

        def reject(
            reason: str, rule: str, value: Any = None, worker_id: int = worker_id, found: list = found
        ) -> None:
            found.append(Rejection(worker_id=worker_id, reason=reason, rule=rule, value=value))

        row = rows.get(worker_id)
        if worker_id in seen:
            reject(f"worker {worker_id} is listed more than once", "duplicate")
        elif row is None:
            reject(f"no worker with id {worker_id} exists", "unknown_worker")
        elif worker_id in excluded:
            reject(f"worker {worker_id} is excluded by the order", "excluded")
        else:
            who = f"{row.get('name') or 'worker'} ({worker_id})"
            if not any(same_role(row.get("role"), r) for r in (order.role, *also_roles)):
                reject(
                    f"{who} works as {row.get('role')}, not as {order.role}", "role_mismatch", row.get("role")
                )
            if row.get("lat") is None or row.get("lon") is None:
                reject(f"{who} has no location on file", "too_far", None)
            else:
                miles = haversine_miles(float(row["lat"]), float(row["lon"]), site.lat, site.lon)
                if miles > order.radius_miles:
                    reject(
                        f"{who} lives {miles:.1f} miles from {order.city}, {order.state}; limit {order.radius_miles:g}",
                        "too_far",
                        round(miles, 1),
                    )
            for requirement in missing_certifications(row.get("certifications"), order.requirements):
                reject(f"{who} has no {requirement} on file", "missing_requirement", requirement)
            availability = row.get("availability")
            if availability is not None and float(availability) < floor:
                reject(
                    f"{who} is rarely available (availability {float(availability):.2f} < {floor:g})",
                    "unavailable",
                    round(float(availability), 3),
                )
            if shift_start is not None and shift_end is not None:
                for booking in schedule.conflicts(worker_id, shift_start, shift_end):
                    reject(f"{who} is already booked {booking.describe()}", "double_booked", booking.window())
                    break
        seen.add(worker_id)
        if found:
            result.rejections.extend(found)
        else:
            result.accepted.append(worker_id)
    return result
