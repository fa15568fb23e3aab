"""Word-heavy days (issue 35): the lake's resumes around their clients carry the facts judged.

A scenario whose client has ``resume_facts`` rules, or whose events wish for facts, is judged
by what the workers' resumes state (``workforce.resume_facts``). ``prepare_resumes`` writes those
facts into the resumes of the workers around each such client's site, as far out as its orders
reach, before a run; a worker whose resume does not carry them holds none. The pack lives in
``benchmarks/word_pack`` (its README says how to run it). It does not own the facts nor judging.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from agentlake.scenarios.day import DEFAULT_RADIUS_MILES
from agentlake.workforce.facts import site_of
from agentlake.workforce.resume_facts import write_facts

if TYPE_CHECKING:
    from agentlake.lake import Lake
    from agentlake.scenarios.scenario import Scenario

# A little beyond the farthest order: every candidate's resume written, the rest of the lake as it was.
MARGIN_MILES = 2.0


def needs_resume_facts(scenario: Scenario) -> bool:
    """Whether ``scenario`` is judged by what resumes state."""
    return bool(scenario.client.acceptance.resume_facts) or any(e.wishes for e in scenario.events)


def prepare_resumes(lake: Lake, scenarios: Sequence[Scenario]) -> int:
    """Write the facts into the resumes around every word-heavy scenario's client site (``lake``
    opened for writing); the number of resumes changed (0 the second time)."""
    changed = 0
    for scenario in scenarios:
        if not needs_resume_facts(scenario):
            continue
        reach = max((e.radius_miles or DEFAULT_RADIUS_MILES) for e in scenario.events)
        site = site_of(lake, scenario.client.city, scenario.client.state)
        changed += write_facts(lake, [site], radius_miles=reach + MARGIN_MILES)
    return changed
