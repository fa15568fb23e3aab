"""``agentlake mcp``: serve the agentlake tools to an MCP client (e.g. Claude Code) over stdio."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    @app.command("mcp")
    def mcp() -> None:
        """Serve the agentlake tools over MCP on stdin/stdout (for Claude Code and other clients).

        Tools: sql, search, match, hybrid_search, find_workers, get_worker, worker_profile, ask, lessons, log_outcome, propose_lesson, models, ...; lessons are also resources.

        It opens this data dir's lake and lesson store itself: when `agentlake serve` already runs on the same data dir, point the client at the gateway's /mcp instead.
        """
        from agentlake.gateway.mcp_server import run_stdio

        run_stdio()
