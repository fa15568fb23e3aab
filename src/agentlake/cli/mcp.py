"""``agentlake mcp``: serve the agentlake tools to an MCP client (e.g. Claude Code) over stdio."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    @app.command("mcp")
    def mcp() -> None:
        """Serve the MCP tools (sql, search, match, get_worker, worker_profile, ask, lessons, ...) over
        stdin/stdout, for a client that launches this command. Uses this data dir's lake and lessons
        directly; when `agentlake serve` already runs on it, point the client at its /mcp instead.
        """
        from agentlake.gateway.mcp_server import run_stdio

        run_stdio()
