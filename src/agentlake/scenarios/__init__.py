"""Scenarios: staffing days with clients' unwritten rules, staffer profiles, batches, metrics.

The main job of agentlake: run realistic days (``scenario``), staffed by configured staffers
(``profile``), judged by clients who never tell their rules up front (``judge``), in batches
with learning in between (``runner`` on an inline, process or Ray ``backends``), then measure
whether the staffers got better (``metrics``, ``scorecard``, ``report``). ``day`` turns one
scenario day into orders, policy calls, judgements and ``fill.judged`` ops; ``main_job`` is
what ``make demo`` runs. The format is documented in docs/scenarios.md.

Heavy pieces (the runner, which imports agents and learn) are imported lazily.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentlake.scenarios.judge import ClientRejection, Judgement, judge_fill
from agentlake.scenarios.metrics import (
    Metrics,
    compute_metrics,
    leaderboard,
    leaderboard_document,
    learning_curve,
)
from agentlake.scenarios.profile import StafferProfile, builtin_staffers, load_profile, load_profiles
from agentlake.scenarios.results import EventResult, read_results
from agentlake.scenarios.scenario import Acceptance, Client, Event, Scenario, load_scenario, load_scenarios
from agentlake.scenarios.scorecard import Scorecard, compare

if TYPE_CHECKING:
    from agentlake.scenarios.runner import RunSummary, run_scenarios

_LAZY = {"run_scenarios": "agentlake.scenarios.runner", "RunSummary": "agentlake.scenarios.runner"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'agentlake.scenarios' has no attribute {name!r}")


__all__ = [
    "Acceptance",
    "Client",
    "ClientRejection",
    "Event",
    "EventResult",
    "Judgement",
    "Metrics",
    "RunSummary",
    "Scenario",
    "Scorecard",
    "StafferProfile",
    "builtin_staffers",
    "compare",
    "compute_metrics",
    "judge_fill",
    "leaderboard",
    "leaderboard_document",
    "learning_curve",
    "load_profile",
    "load_profiles",
    "load_scenario",
    "load_scenarios",
    "read_results",
    "run_scenarios",
]
