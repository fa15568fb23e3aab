"""The gateway: one authenticated HTTP service (REST + the observer + MCP) over the library.

``create_app(settings)`` builds the FastAPI app; ``agentlake serve`` runs it (``server.run``);
``agentlake mcp`` serves the same tools over stdio (``mcp_server.run_stdio``). The gateway is a
door: routes parse, call one library function and render; no domain logic lives here.
"""

from agentlake.gateway.app import create_app
from agentlake.gateway.services import Services

__all__ = ["Services", "create_app"]
