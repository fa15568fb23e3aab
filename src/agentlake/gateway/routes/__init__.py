"""The gateway's routers, one module per area; ``ROUTERS`` is what the app factory includes.

Each route is a thin door: parse (the typed body), call one library function, render.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from starlette.routing import BaseRoute, Route

from agentlake.gateway.routes import agents, lake, learn, system

ROUTERS = [system.router, lake.router, learn.router, agents.router]


def flat_routes(routes: Sequence[BaseRoute]) -> Iterator[Route]:
    """Plain routes of an app, descending into included routers (FastAPI keeps ``original_router``)."""
    for route in routes:
        if isinstance(route, Route):
            yield route
        else:
            included: Any = getattr(route, "original_router", None)
            if included is not None:
                yield from flat_routes(included.routes)
