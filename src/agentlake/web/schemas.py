"""Response and request bodies of the dashboard's JSON routes (``/api/graphs``, ``/api/scenarios``,
``/api/session``).

Only shapes; the data comes from ``agentlake.graph`` and ``web.panels``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class GraphSummary(BaseModel):
    name: str
    description: str
    nodes: int = Field(..., ge=0, description="Number of nodes.")
    edges: int = Field(..., ge=0, description="Number of edges.")
    edge_types: list[str]
    active: bool = False


class GraphList(BaseModel):
    """The graphs that can be switched to; one of them is active."""

    graphs: list[GraphSummary]
    active: str


class GraphNodeView(BaseModel):
    id: str
    type: str = Field(..., description="The node class, e.g. thinker_v1.")
    role: str
    uses_llm: bool
    description: str


class GraphEdgeView(BaseModel):
    source: str
    target: str
    type: Literal["data", "context", "control"]


class GraphView(BaseModel):
    """A graph with its nodes and typed edges."""

    name: str
    description: str
    edge_types: list[str]
    nodes: list[GraphNodeView]
    edges: list[GraphEdgeView]
    active: bool = False


class SwitchGraph(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(
        ...,
        min_length=1,
        max_length=64,
        pattern=r"^[a-z][a-z0-9_-]*$",
        description="A graph from GET /api/graphs.",
    )


class ScenarioRow(BaseModel):
    rank: int | None = None
    staffer: str | None = None
    score: float | None = None
    fill_rate: float | None = None
    pass_k: float | None = None
    precision: float | None = None
    gain_points: float | None = None
    events: int | None = None
    cost_usd: float | None = None


class ScenarioRun(BaseModel):
    """The newest scenario run's leaderboard and learning curve."""

    run_id: str
    batches: list[int]
    leaderboard: list[ScenarioRow]
    learning_curve: dict[str, list[float]] = Field(..., description="Fill rate per batch, per staffer.")


def graph_view(view: dict[str, Any], active: str) -> GraphView:
    return GraphView(**view, active=view["name"] == active)


class SignIn(BaseModel):
    """An API key, exchanged once for a session cookie (never stored, logged or recorded)."""

    model_config = ConfigDict(extra="forbid")

    key: str = Field(..., min_length=1, max_length=512, description="A key from AGENTLAKE_API_KEYS.")


class SessionInfo(BaseModel):
    """Who the dashboard is signed in as."""

    auth: bool = Field(..., description="Whether the gateway requires API keys at all.")
    scope: Literal["read", "write", "admin"] = Field(..., description="What this caller may do.")
    key_id: str | None = Field(
        None, description="The key's fingerprint (safe to show and log); null on an open gateway."
    )
    via: Literal["open", "key", "session"] = Field(
        ..., description="open: no keys configured; key: an API key header; session: the cookie."
    )
    name: str | None = Field(
        None,
        description="Who holds the key (AGENTLAKE_API_KEYS' KEY:SCOPE:NAME); null when the key has no name.",
    )
