"""The oracle staffer: the ceiling of a scenario on this lake, because it reads the hidden rules.

Owns ``OraclePolicy``, a ``Policy`` that searches like the rules policy but then keeps only the
workers the client's hidden ``acceptance`` would take (judged by the same ``judge`` code,
bookings included). It cheats on purpose: it shows how much of a pack is solvable on a given
lake (``feasibility``) and draws the ceiling line on a leaderboard (built-in staffer
``oracle``). It learns nothing and never stands for a real staffer.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from agentlake.agents import TaskOutcome
from agentlake.scenarios.judge import Matching, judge_fill
from agentlake.scenarios.scenario import Client
from agentlake.workforce.candidates import find_candidates
from agentlake.workforce.facts import client_lake_ids, load_facts, load_no_shows, site_of
from agentlake.workforce.verify import verify_fill

if TYPE_CHECKING:
    from datetime import date

    from agentlake.agents import RunContext, TaskOutcome
    from agentlake.workforce.order import FillOrder

SEARCH_LIMIT = 400  # enough candidates that the hidden rules, not the limit, decide


class OraclePolicy:
    """Fills with workers the client will accept, best reliability first."""

    name = "oracle"

    def __init__(self, client: Client, day: date, *, matching: Matching | None = None) -> None:
        self.client = client
        self.day = day
        self.matching = matching or Matching.default()

    def run(self, order: FillOrder, ctx: RunContext) -> TaskOutcome:

        started = time.perf_counter()
        rows = find_candidates(ctx.lake, order.candidate_query(limit=SEARCH_LIMIT))
        loose = verify_fill(
            ctx.lake, order, [r["worker_id"] for r in rows], schedule=ctx.schedule, requested=0
        )
        ids = loose.accepted
        chosen: list[int] = []
        if ids:
            judged = judge_fill(
                order.model_copy(update={"count": len(ids)}),
                ids,
                acceptance=self.client.acceptance,
                site=site_of(ctx.lake, order.city, order.state),
                facts=load_facts(ctx.lake, ids),
                no_shows=load_no_shows(
                    ctx.lake,
                    client_lake_ids(
                        ctx.lake, lake_id=self.client.lake_id, slug=self.client.id, name=self.client.name
                    ),
                    ids,
                    self.day,
                ),
                schedule=ctx.schedule,
                matching=self.matching,
            )
            chosen = judged.accepted
        proposed, spares = chosen[: order.count], chosen[order.count :]
        verification = verify_fill(ctx.lake, order, proposed, schedule=ctx.schedule)
        return TaskOutcome(
            order=order,
            proposed=proposed,
            verification=verification,
            success=verification.ok,
            failure_reason=None
            if verification.ok
            else f"only {len(proposed)} acceptable worker(s) exist for this order",
            latency_ms=round((time.perf_counter() - started) * 1000, 3),
            candidates=spares[:5],
            policy=self.name,
            run_id=ctx.run_id,
        )
