"""A client's candidate pools: who meets each of its orders as stated, read once, filtered in memory.

Owns ``ClientPools``: for each order shape of one client (role, place, radius, requirements),
the workers meeting the order as written (the judge's own checks with no hidden rule, bookings
ignored), with their facts, distance from the site and prior no-shows at the client. Filters
are then checked in memory:

- ``check(action)``: what a lesson's filter (``workforce.learning.StaffingAction``) leaves of each order's
  pool: the learning loop's pool check (``learn.ExtractContext.pool_check``), so an induced
  rule that would leave an order without a single candidate is withheld. It reads the lake and
  the orders only; a client's hidden acceptance is never an input.
- ``acceptable(acceptance)``: who the client would take (evaluation only: ``recovery``,
  ``feasibility``).

The filter is applied as the rules policy's search applies it (certifications by canonical
name, score floors, the distance limit, no prior no-show here, ids left out); ``extra_where``
cannot be evaluated in memory and is ignored. It does not own the search (``workforce``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING

from agentlake.learn.extractor import PoolCheck
from agentlake.scenarios.judge import Matching, judge_fill
from agentlake.scenarios.scenario import Acceptance, Client
from agentlake.workforce.facts import (
    WorkerFacts,
    client_lake_ids,
    load_facts,
    load_no_shows,
    site_of,
    workers_near,
)
from agentlake.workforce.geo import haversine_miles

if TYPE_CHECKING:
    from agentlake.lake import Lake
    from agentlake.workforce.learning import StaffingAction
    from agentlake.workforce.order import FillOrder


@dataclass
class OrderPool:
    """The workers meeting one order shape as stated."""

    label: str
    count: int
    site: tuple[float, float]
    workers: list[WorkerFacts] = field(default_factory=list)
    miles: dict[int, float] = field(default_factory=dict)
    no_shows: dict[int, list[date]] = field(default_factory=dict)
    order: FillOrder | None = None


def shape_key(order: FillOrder) -> tuple[object, ...]:
    """What makes two orders draw on the same pool (the count and shift do not)."""
    requirements = tuple(sorted(r.casefold() for r in order.requirements))
    return (order.role.casefold(), order.city.casefold(), order.state, order.radius_miles, requirements)


def shape_label(order: FillOrder) -> str:
    return f"{order.role} in {order.city}, {order.state} (+{order.radius_miles:g} mi)"


class ClientPools:
    """One client's order pools on one lake (see the module docstring)."""

    def __init__(
        self,
        lake: Lake,
        client: Client,
        day: date,
        orders: Iterable[FillOrder] = (),
        *,
        matching: Matching | None = None,
    ) -> None:
        self.lake = lake
        self.client = client
        self.day = day
        self.matching = matching or Matching.default()
        self.client_ids = client_lake_ids(lake, lake_id=client.lake_id, slug=client.id, name=client.name)
        self.pools: dict[tuple[object, ...], OrderPool] = {}
        for order in orders:
            self.add(order)

    def add(self, order: FillOrder) -> OrderPool:
        """The pool of ``order``'s shape, read from the lake the first time it is seen."""
        key = shape_key(order)
        found = self.pools.get(key)
        if found is not None:
            found.count = max(found.count, order.count)
            return found
        site = site_of(self.lake, order.city, order.state)
        ids = workers_near(self.lake, site[0], site[1], order.radius_miles)
        facts = load_facts(self.lake, ids)
        stated = judge_fill(
            order.model_copy(update={"count": max(1, len(ids)), "exclude_worker_ids": []}),
            ids,
            acceptance=Acceptance(),
            site=site,
            facts=facts,
            matching=self.matching,
        ).accepted
        pool = OrderPool(label=shape_label(order), count=order.count, site=site, order=order)
        pool.workers = [facts[w] for w in stated]
        pool.miles = {w: haversine_miles(facts[w].lat, facts[w].lon, site[0], site[1]) for w in stated}
        pool.no_shows = load_no_shows(self.lake, self.client_ids, stated, self.day)
        self.pools[key] = pool
        return pool

    def admits(self, pool: OrderPool, worker: WorkerFacts, action: StaffingAction) -> bool:
        """Whether ``action``'s filter keeps ``worker`` in ``pool``."""
        if worker.worker_id in action.exclude_ids:
            return False
        if any(not self.matching.holds(worker, cert) for cert in action.require_certifications):
            return False
        if any(worker.score(name) < floor for name, floor in action.min_scores.items()):
            return False
        if action.max_distance_miles is not None and pool.miles[worker.worker_id] > action.max_distance_miles:
            return False
        return not (action.exclude_prior_no_show_at_client and pool.no_shows.get(worker.worker_id))

    def check(self, action: StaffingAction) -> PoolCheck:
        """What ``action`` leaves: candidates before and after over every order shape, and the
        shapes it would leave with none."""
        before = after = 0
        emptied = []
        for pool in self.pools.values():
            kept = sum(self.admits(pool, w, action) for w in pool.workers)
            before, after = before + len(pool.workers), after + kept
            if pool.workers and not kept:
                emptied.append(pool.label)
        return PoolCheck(before=before, after=after, emptied=tuple(emptied))

    def acceptable(self, pool: OrderPool, acceptance: Acceptance) -> set[int]:
        """The workers of ``pool`` the client would take (bookings ignored). Evaluation only."""
        if not pool.workers or pool.order is None:
            return set()
        ids = [w.worker_id for w in pool.workers]
        return set(
            judge_fill(
                pool.order.model_copy(update={"count": len(ids), "exclude_worker_ids": []}),
                ids,
                acceptance=acceptance,
                site=pool.site,
                facts={w.worker_id: w for w in pool.workers},
                no_shows=pool.no_shows,
                matching=self.matching,
            ).accepted
        )


class PoolChecks:
    """The learning loop's pool check over several clients' pools, by client id (the scope)."""

    def __init__(self, pools: Iterable[ClientPools] = ()) -> None:
        self.by_client = {p.client.id: p for p in pools}

    def __call__(self, scope: str, action: StaffingAction) -> PoolCheck | None:
        pools = self.by_client.get(scope)
        return pools.check(action) if pools is not None else None
