"""The agents: audited tools over the lake, typed actions, verified proposals, policies.

Layout: ``tools`` (the audited tool registry) -> ``actions`` (one typed action per turn) ->
``orchestrator`` (executor + reviewer, ``LLMPolicy``) or ``rules`` (``RulesPolicy``, no LLM)
-> the domain's ``verify_fill`` (the data decides) -> ``outcome`` (TaskOutcome, the
``task.fill`` op). ``lessons`` connects to the learning loop, ``overseer`` watches whole days.
``task.fill`` is the one library call behind ``agentlake fill``; ``ask`` answers a question
over the lake with cited sources (``agentlake ask``, ``POST /ask``). What staffing is (orders,
roles, schedules, the SQL over workers) lives in ``agentlake.workforce``; ``FillOrder``,
``ScheduleBook``, ``Booking`` and ``verify_fill`` are re-exported here for callers.

Heavy pieces (the orchestrator, which imports the LLM layer) load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentlake.agents.actions import (
    Action,
    AgentAction,
    CritiqueAction,
    ExecutorAction,
    PlanAction,
    ProposeDoneAction,
    ReviewerAction,
    ToolCallAction,
)
from agentlake.agents.outcome import Concern, TaskOutcome, TurnRecord
from agentlake.agents.policy import Policy, RunContext, get_policy, register_policy
from agentlake.agents.rules import RulesPolicy
from agentlake.agents.task import fill
from agentlake.agents.tools import Tool, ToolOutput, ToolRegistry, ToolResult, default_tools
from agentlake.workforce.order import FillOrder
from agentlake.workforce.schedule import Booking, ScheduleBook
from agentlake.workforce.verify import Rejection, Verification, verify_fill

if TYPE_CHECKING:
    from agentlake.agents.orchestrator import LLMPolicy
    from agentlake.agents.overseer import Overseer

_LAZY = {
    "LLMPolicy": "agentlake.agents.orchestrator",
    "Overseer": "agentlake.agents.overseer",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'agentlake.agents' has no attribute {name!r}")


__all__ = [
    "Action",
    "AgentAction",
    "Booking",
    "Concern",
    "CritiqueAction",
    "ExecutorAction",
    "FillOrder",
    "LLMPolicy",
    "Overseer",
    "PlanAction",
    "Policy",
    "ProposeDoneAction",
    "Rejection",
    "ReviewerAction",
    "RulesPolicy",
    "RunContext",
    "ScheduleBook",
    "TaskOutcome",
    "Tool",
    "ToolCallAction",
    "ToolOutput",
    "ToolRegistry",
    "ToolResult",
    "TurnRecord",
    "Verification",
    "default_tools",
    "fill",
    "get_policy",
    "register_policy",
    "verify_fill",
]
