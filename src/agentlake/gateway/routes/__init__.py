"""The gateway's routers, one module per area; ``ROUTERS`` is what the app factory includes.

Each route is a thin door: parse (the typed body), call one library function, render.
"""

from __future__ import annotations

from agentlake.gateway.routes import agents, lake, learn, sources, system
from agentlake.http.methods import flat_routes

__all__ = ["ROUTERS", "flat_routes"]

ROUTERS = [system.router, lake.router, learn.router, agents.router, sources.router]
