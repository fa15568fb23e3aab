"""The MCP server (official ``mcp`` SDK): the gateway's tools for Claude Code and other clients.

Owns the MCP surface: tools that mirror the gateway's routes (same library calls, same typed
results) and lessons exposed as resources (``lessons://active``, ``lesson://{id}``), served over
stdio by ``agentlake mcp`` (:func:`run_stdio`) and over streamable HTTP at the gateway's
``/mcp`` (mounted by ``gateway.app``). Every tool call is observed as one op with source
"mcp" and endpoint ``mcp.<tool>``. It does not own the library logic or the key checks of the
HTTP transport (``gateway.security`` runs before a request reaches MCP).

Scope over HTTP: any valid key may connect (read); tools that write (``log``) need a write key.
Over stdio the client launched the process itself, so it holds every scope.
"""

from __future__ import annotations

from typing import Any

from agentlake import __version__
from agentlake.errors import UserError
from agentlake.gateway.schemas import SQLRequest, SQLResponse
from agentlake.gateway.security import OPEN, Principal, forbid
from agentlake.gateway.services import Services

INSTRUCTIONS = """\
agentlake: operational data (workers, clients, placements) in a DuckDB lakehouse, with lessons
learned from past agent runs. Use `sql` for counts and exact filters (read-only; one SELECT),
`search`/`match` for free-text questions over workers (optionally filtered by a SQL WHERE
fragment), `get_worker`/`worker_profile` for one worker, `ask` for an answer written by a model
with cited sources, and `lessons` (or the lesson resources) for what earlier runs learned.
"""


def _principal(ctx: Any) -> Principal:
    """The HTTP caller's principal (set by the gateway's auth middleware); stdio has all scopes."""
    try:
        request = ctx.request_context.request
    except (AttributeError, ValueError):
        return OPEN
    if request is None:
        return OPEN
    principal = request.scope.get("state", {}).get("principal")
    return principal if isinstance(principal, Principal) else OPEN


def _observed(name: str, arguments: dict[str, Any], fn: Any) -> Any:
    """Run one tool body as one op (source "mcp"); a UserError/RunError becomes the tool's error."""
    from agentlake.observe import observe

    with observe(f"mcp.{name}", source="mcp", input=arguments) as op:
        result = fn()
        op.set_output(result)
        return result


def build_mcp_server(services: Services) -> Any:
    """The MCP server over ``services`` (the same handles the gateway uses)."""
    from mcp.server.mcpserver import Context, MCPServer

    server = MCPServer("agentlake", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")

    @server.tool(description="Run one read-only SQL query (a single SELECT/WITH statement) over the lake.")
    def sql(
        sql: str, params: list[str | int | float | bool | None] | None = None, max_rows: int | None = None
    ) -> SQLResponse:
        body = SQLRequest(sql=sql, params=params or [], max_rows=max_rows)
        lake = services.lake
        cap = min(body.max_rows or lake.settings.sql_max_rows, lake.settings.sql_max_rows)
        return _observed(
            "sql",
            body.model_dump(),
            lambda: SQLResponse.from_result(lake.query(body.sql, params=body.params, max_rows=cap)),
        )

    _ = (Context, UserError, forbid)  # used by the write tools below
    return server


def run_stdio(settings: Any = None) -> None:
    """Serve the MCP tools over stdin/stdout until the client closes the pipe."""
    from agentlake.settings import load_settings

    services = Services(settings or load_settings())
    server = build_mcp_server(services)
    try:
        server.run("stdio")
    finally:
        services.close()
