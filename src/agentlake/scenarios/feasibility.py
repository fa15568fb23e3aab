"""Is a scenario fair on this lake? Candidate pools per event, with and without the hidden rules.

Owns ``event_pools``: for every event, how many workers meet what the order STATES (role and
synonyms, requirements, radius) and how many of those the client would also ACCEPT (its hidden
acceptance rules, judged by the very same ``judge`` code, ignoring the day's bookings). A
scenario is solvable when the acceptable pool covers the count, and a trap when the stated pool
is much larger than the acceptable one (a staffer that ignores the hidden rules mostly fails).
``agentlake run --check`` prints these; tests use them to keep the built-in pack honest on small
generated datasets. It does not run any staffer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pydantic import BaseModel

from agentlake.lake import Lake
from agentlake.scenarios.day import DayLedger, plan_event
from agentlake.scenarios.judge import Matching
from agentlake.scenarios.pools import ClientPools
from agentlake.scenarios.scenario import Scenario

if TYPE_CHECKING:
    from agentlake.lake import Lake
    from agentlake.settings import Settings


class EventPool(BaseModel):
    scenario: str
    event_id: str
    kind: str
    role: str
    place: str
    count: int
    stated: int
    acceptable: int

    @property
    def solvable(self) -> bool:
        return self.acceptable >= self.count

    @property
    def trap_share(self) -> float:
        """Share of the stated pool the client would refuse (0 = no trap)."""
        return 1 - self.acceptable / self.stated if self.stated else 0.0


def event_pools(
    lake: Lake, scenarios: Sequence[Scenario], *, matching: Matching | None = None
) -> list[EventPool]:
    """Stated and acceptable candidate pools for every event of ``scenarios`` on ``lake``.

    Emergencies and misplacements use the order they repeat (nobody is placed in this
    analysis, so nobody is excluded). Bookings are ignored: pools are upper bounds.
    """
    out = []
    for scenario in scenarios:
        ledger = DayLedger()
        pools = ClientPools(lake, scenario.client, scenario.date, matching=matching)
        for event in scenario.events:
            order = plan_event(scenario, event, ledger).order
            ledger.orders[event.id] = order
            pool = pools.add(order)
            out.append(
                EventPool(
                    scenario=scenario.scenario,
                    event_id=event.id,
                    kind=event.kind,
                    role=order.role,
                    place=f"{order.city}, {order.state} +{order.radius_miles:g} mi",
                    count=event.count,
                    stated=len(pool.workers),
                    acceptable=len(pools.acceptable(pool, scenario.client.acceptance)),
                )
            )
    return out


def lake_pools(scenarios: Sequence[Scenario], settings: Settings | None = None) -> list[EventPool]:
    """``event_pools`` on the settings' lake, opened read-only for the call."""
    with Lake.open(settings, read_only=True) as lake:
        return event_pools(lake, scenarios)
