"""``agentlake serve`` (the gateway under uvicorn) and ``agentlake openapi`` (its API document)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    @app.command("serve")
    def serve(
        host: str = typer.Option(
            None, "--host", help="Bind address (default: the gateway_host setting, 127.0.0.1)."
        ),
        port: int = typer.Option(None, "--port", help="Port (default: the gateway_port setting, 3700)."),
        log_level: str = typer.Option(
            "info", "--log-level", help="uvicorn log level: critical, error, warning, info, debug."
        ),
        access_log: bool = typer.Option(
            None,
            "--access-log/--no-access-log",
            help="Log one line per request (default: the gateway_access_log setting, off; every request is recorded as an op anyway).",
        ),
    ) -> None:
        """Serve the HTTP gateway: REST API, the observer under /observer/ and MCP at /mcp.

        Routes: /sql, /search, /match, /worker/{id}, /profile/{id}, /ask, /tools, /lessons, /log, /models, /health. Set AGENTLAKE_API_KEYS (KEY:SCOPE pairs) before binding anything but 127.0.0.1.
        """
        from agentlake.gateway.server import run

        run(host=host, port=port, log_level=log_level, access_log=access_log)

    @app.command("openapi")
    def openapi(
        markdown: bool = typer.Option(
            False, "--markdown", help="Render docs/http-api.md instead of the JSON document."
        ),
    ) -> None:
        """Print the gateway's OpenAPI document (JSON), or its HTTP API reference in Markdown.

        Regenerate the docs with: agentlake openapi --markdown > docs/http-api.md
        """
        import json
        import sys

        from agentlake.gateway.apidoc import api_markdown, openapi_spec

        spec = openapi_spec()
        sys.stdout.write(api_markdown(spec) if markdown else json.dumps(spec, indent=2) + "\n")
