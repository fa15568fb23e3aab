"""THE extension point of the graph runtime: the ``Node`` contract and the node registry.

A node is a versioned class (``thinker_v1``) with one main method, ``run(packet, ctx)``: it
receives one :class:`Packet` that arrived over an edge and returns the :class:`Emit` list the
engine routes along the node's outgoing edges. It declares what it is in :class:`NodeInfo`
(role, version, which edge types it accepts and emits, whether it calls a model). Built-in
nodes register through :func:`register_node`, the same door a third party uses.

Edge types carry different semantics, which the engine enforces:

* ``data``: the packet triggers the destination node (the message's path through the graph);
* ``context``: the packet is stored as the destination's latest context from that source and
  does NOT trigger it (memory, sensor notes);
* ``control``: like data, it triggers, but it is the fast local path (button clicks, browser
  reports) that must never need a model.

This module does not own graph definitions (``definition``), running a turn (``engine``) or
any node's behaviour (``nodes``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from agentlake.errors import UserError
from agentlake.registry import Registry

if TYPE_CHECKING:
    from agentlake.agents.tools import ToolRegistry
    from agentlake.graph.modelcalls import NodeModels
    from agentlake.graph.session import SessionState
    from agentlake.lake import Lake
    from agentlake.learn import LessonStore
    from agentlake.observe import Observer
    from agentlake.settings import Settings

EdgeType = Literal["data", "context", "control"]
EDGE_TYPES: tuple[EdgeType, ...] = ("data", "context", "control")
Role = Literal["input", "thinker", "output", "ui", "memorizer", "director", "sensor"]
ROLES: tuple[str, ...] = ("input", "thinker", "output", "ui", "memorizer", "director", "sensor")
REQUIRED_ROLES: tuple[str, ...] = ("input", "thinker", "output")


class NodeInfo(BaseModel):
    """What a node class declares about itself (its capabilities)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(..., pattern=r"^[a-z][a-z0-9_]*_v[0-9]+$", description="Type name, e.g. thinker_v1.")
    role: Role
    version: int = Field(..., ge=1)
    description: str
    accepts: tuple[EdgeType, ...] = Field(..., description="Edge types that may end at this node.")
    emits: tuple[EdgeType, ...] = Field(..., description="Edge types that may start at this node.")
    uses_llm: bool = False


@dataclass
class Packet:
    """What travels along one edge: a ``kind`` ("message", "reply", "go"...) and its payload."""

    kind: str
    payload: dict[str, Any] = field(default_factory=dict)
    edge: EdgeType = "data"
    source: str | None = None  # the node id that emitted it; None when injected by the runtime


@dataclass
class Emit:
    """A packet a node wants sent. ``to`` names a target role (None: every edge of that type)."""

    kind: str
    payload: dict[str, Any] = field(default_factory=dict)
    edge: EdgeType = "data"
    to: str | None = None


class NodeResources(Protocol):
    """The lake, tools, observer and lessons nodes reach: ``runtime.Resources`` (the CLI, tests)
    or the gateway's ``Services``, each opening them on first use."""

    @property
    def settings(self) -> Settings: ...

    @property
    def lake(self) -> Lake: ...

    @property
    def tools(self) -> ToolRegistry: ...

    @property
    def observer(self) -> Observer: ...

    @property
    def lessons(self) -> LessonStore | None: ...


class NodeContext(Protocol):
    """What the engine gives a running node (see ``engine.TurnContext``)."""

    node_id: str
    session: SessionState
    settings: Settings
    graph_name: str
    now: float  # time.time() when this run started
    context: dict[str, dict[str, Any]]  # latest context packet payload per source role

    def send(self, event: dict[str, Any]) -> None:
        """Send an event to this session's browser (delta, done, controls, hud...)."""

    def trace(self, event: str, **data: Any) -> None:
        """Record a trace event of this node (broadcast and appended to the trace file)."""

    def hud(self, message: str, *, flag: str | None = None) -> None:
        """A status line (and optional flag such as ``controls_mismatch``) for the browser's HUD."""

    def can_reach(self, role: str, edge: EdgeType = "data") -> bool:
        """Whether this node has an outgoing ``edge`` to a node with ``role`` in this graph."""

    @property
    def resources(self) -> NodeResources:
        """Lake, tools, observer (``runtime.Resources``)."""

    @property
    def models(self) -> NodeModels:
        """Observed model calls for this node (``modelcalls.NodeModels``)."""


class Node(ABC):
    """A graph node. Subclasses set ``info`` and implement :meth:`run`.

    ``config`` is the node's ``config:`` mapping from the graph YAML; a subclass may declare a
    pydantic ``Config`` model to validate it (the loader turns its errors into ``UserError``).
    Nodes keep no conversation state of their own: that lives in the session, so a graph can
    be switched mid-conversation.
    """

    info: ClassVar[NodeInfo]
    Config: ClassVar[type[BaseModel] | None] = None

    def __init__(self, node_id: str, config: BaseModel | dict[str, Any] | None = None) -> None:
        self.id = node_id
        self.config = config if config is not None else (self.Config() if self.Config else {})

    @abstractmethod
    def run(self, packet: Packet, ctx: NodeContext) -> list[Emit]:
        """Handle one packet; return what to send on. Raise ``UserError``/``RunError`` on failure."""


# --- the registry --------------------------------------------------------------------------


def _check_node(name: str, cls: type[Node]) -> None:
    info = getattr(cls, "info", None)
    if not (isinstance(cls, type) and issubclass(cls, Node)) or not isinstance(info, NodeInfo):
        raise UserError(
            f"{cls!r} is not a graph node: subclass agentlake.graph.Node and set info = NodeInfo(...)"
        )


_BUILTIN_NODES = ("director_v1", "input_v1", "memorizer_v1", "output_v1", "sensor_v1", "thinker_v1", "ui_v1")
# One module per built-in node, imported on first use; each registers its class on import.
node_types: Registry[type[Node]] = Registry(
    "node type",
    "agentlake.graph_nodes",
    builtins={name: f"agentlake.graph.nodes.{name}" for name in _BUILTIN_NODES},
    check=_check_node,
)


def register_node(cls: type[Node], *, replace: bool = False) -> type[Node]:
    """Make ``cls`` available to graph definitions under ``cls.info.name``. Usable as a decorator.

    The one door for the built-ins and third parties (who may also declare an
    ``agentlake.graph_nodes`` entry point naming the class). Raises ``UserError`` when ``cls``
    is not a ``Node`` subclass with a ``NodeInfo``, or when the name is taken and ``replace``
    is false.
    """
    info = getattr(cls, "info", None)
    name = info.name if isinstance(info, NodeInfo) else repr(cls)
    if not isinstance(info, NodeInfo):
        _check_node(name, cls)
    return node_types.register(name, cls, replace=replace)


def node_class(name: str) -> type[Node]:
    """The class registered as ``name``; ``UserError`` listing the known names."""
    return node_types.get(name)


def registered_nodes() -> list[NodeInfo]:
    """Every registered node's info, sorted by name."""
    return [cls.info for _, cls in sorted(node_types.entries().items())]
