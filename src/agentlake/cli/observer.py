"""``agentlake observer serve``: run the observer's ingest service (thin door onto
``agentlake.observe.service.serve``)."""

from __future__ import annotations

import typer

observer_app = typer.Typer(
    help="Run the observer service: durable ingest of ops, OTLP traces, live stats.", no_args_is_help=True
)


@observer_app.command("serve")
def serve(
    host: str = typer.Option(
        None, "--host", help="Bind address [default: settings.observer_host, 127.0.0.1]."
    ),
    port: int = typer.Option(None, "--port", help="Port [default: settings.observer_port, 3800]."),
) -> None:
    """Serve POST /event, /events, /v1/traces and GET /health, /stats, /ops, /ops/stream.

    This process becomes the one writer of the observer's DuckDB file (settings.observer_path);
    every event is committed before it is acknowledged. Stop with Ctrl-C.
    """
    from agentlake.cli.output import err_console
    from agentlake.observe.service import serve as run
    from agentlake.settings import load_settings

    settings = load_settings()
    shown_host, shown_port = host or settings.observer_host, port or settings.observer_port
    err_console.print(
        f"observer on http://{shown_host}:{shown_port} (store {settings.observer_path})", highlight=False
    )
    run(settings, host=host, port=port)


def register(app: typer.Typer) -> None:
    app.add_typer(observer_app, name="observer")
