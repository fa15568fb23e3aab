"""The policy extension point: whatever turns a ``FillOrder`` into a ``TaskOutcome``.

Owns the ``Policy`` protocol, the ``RunContext`` every policy receives (the lake, the day's
schedule, the lesson store, the observer, the ops' labels, the live-view callback, the rescue and
overseer switches) and the registry behind ``get_policy``. Built-in policies (``rules``,
``llm``) register through :func:`register_policy`, the same door a third party uses. It does
not own any policy's logic (``rules``, ``orchestrator``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from agentlake.agents.tools import default_tools
from agentlake.registry import Registry
from agentlake.workforce.schedule import ScheduleBook

if TYPE_CHECKING:
    from agentlake.agents.outcome import TaskOutcome, TurnRecord
    from agentlake.agents.tools import ToolRegistry
    from agentlake.embed import Embedder
    from agentlake.lake import Lake
    from agentlake.learn.store import LessonStore
    from agentlake.observe import Observer
    from agentlake.settings import Settings
    from agentlake.workforce.order import FillOrder
    from agentlake.workforce.schedule import ScheduleBook


@runtime_checkable
class Policy(Protocol):
    """Fills one order. ``run`` never raises for a fill that merely fails: that is an outcome
    with ``success=False`` and a ``failure_reason``. It raises ``UserError`` for a bad order or
    configuration and ``RunError`` when something it depends on breaks."""

    name: str

    def run(self, order: FillOrder, ctx: RunContext) -> TaskOutcome: ...


@dataclass
class RunContext:
    """Everything a policy may touch while filling one order.

    ``schedule`` defaults to the lake's placements (``ScheduleBook(lake)``); a scenario day
    passes its own so bookings made earlier in the day count. ``observer`` defaults to the
    process-wide one. ``on_turn`` receives every ``TurnRecord`` as it happens (the live view).
    ``run_id`` and ``labels`` (the staffer, the event's kind, ...) are stamped on every op.
    ``buffer`` holds candidates kept in reserve for this job earlier (the spares of the event an
    emergency replaces): a policy may verify them again and place them before searching.
    ``states_outcome``: the task's ``task.fill`` op states how the run ended (False when a judge
    states it instead).
    """

    lake: Lake
    # schedule, settings and tools: optional to pass, never None after __post_init__.
    schedule: ScheduleBook = None  # type: ignore[assignment]
    lessons: LessonStore | None = None
    run_id: str | None = None
    staffer_id: str | None = None
    observer: Observer | None = None
    labels: dict[str, Any] = field(default_factory=dict)
    on_turn: Callable[[TurnRecord], None] | None = None
    rescue: bool = True
    overseer: bool = False
    settings: Settings = None  # type: ignore[assignment]
    tools: ToolRegistry = None  # type: ignore[assignment]
    agent_id: str = "agent"
    project_id: str | None = None
    embedder: Embedder | None = None  # for hybrid_search; None = the default one
    buffer: list[int] = field(default_factory=list)
    # The task's playbook (``agents.lessons.playbook_for``): workers the client accepted before ->
    # the lessons behind ranking them first; set when the task's lessons are retrieved.
    playbook: dict[int, list[str]] = field(default_factory=dict)
    # The task's own op states how the run ended (for lesson measurement), unless someone else
    # judges it and states that (a scenario's client: its fill.judged op).
    states_outcome: bool = True

    def __post_init__(self) -> None:
        if self.settings is None:
            self.settings = self.lake.settings
        if self.schedule is None:
            self.schedule = ScheduleBook(self.lake)
        if self.tools is None:
            self.tools = default_tools()
        if self.staffer_id is not None:
            self.labels.setdefault("staffer_id", self.staffer_id)

    def emit(self, record: TurnRecord) -> None:
        """Hand one turn to the live view, if any; a broken view never breaks the task."""
        if self.on_turn is not None:
            try:
                self.on_turn(record)
            except Exception:  # the view is a spectator
                import logging

                logging.getLogger(__name__).warning("on_turn callback failed", exc_info=True)

    def op_labels(self) -> dict[str, Any]:
        """The context's labels, without empty values."""
        return {key: value for key, value in self.labels.items() if value is not None}

    def order_labels(self, order: FillOrder) -> dict[str, Any]:
        """Labels for ops about ``order``: the order's shape, then the context's labels."""
        return {**order.labels(), **self.op_labels()}


PolicyFactory = Callable[..., Policy]

# The built-ins and the modules that register them, imported on first use (the llm policy
# pulls in the LLM layer; a rules-only run never loads it).
policies: Registry[PolicyFactory] = Registry(
    "policy",
    "agentlake.policies",
    builtins={"rules": "agentlake.agents.rules", "llm": "agentlake.agents.orchestrator"},
)


def register_policy(name: str, factory: PolicyFactory, *, replace: bool = False) -> None:
    """Make ``get_policy(name, **kwargs)`` return ``factory(**kwargs)``; the one door for the
    built-ins and third parties (who may also declare an ``agentlake.policies`` entry point).
    ``UserError`` for a name already registered unless ``replace``."""
    policies.register(name, factory, replace=replace)


def get_policy(name: str, **kwargs: Any) -> Policy:
    """A policy by name: ``rules`` (no LLM) or ``llm`` (executor + reviewer), or any registered.

    Raises ``UserError`` for an unknown name, listing the known ones.
    """
    return policies.get(name)(**kwargs)
