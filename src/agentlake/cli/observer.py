"""``agentlake observer serve``: run the observer's ingest service (thin door onto
``agentlake.observe.service.serve``)."""

from __future__ import annotations

from typing import Any

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
    every event is committed before it is acknowledged. With learn_schedule on, the learner
    runs here too (one status line per cycle). Stop with Ctrl-C.
    """
    from agentlake.cli.output import err_console
    from agentlake.observe.service import serve as run
    from agentlake.serving import show_learning
    from agentlake.settings import load_settings

    settings = load_settings()
    shown_host, shown_port = host or settings.observer_host, port or settings.observer_port
    err_console.print(
        f"observer on http://{shown_host}:{shown_port} (store {settings.observer_path})", highlight=False
    )
    show_learning()
    run(settings, host=host, port=port, on_start=_learner(settings) if settings.learn_schedule else None)


def _learner(settings: Any) -> Any:
    """What starts the scheduled learner over the service's observer: the lesson store and,
    when there is one, the lake read-only; returns how to stop both."""

    def start(observer: Any) -> Any:
        from agentlake.errors import AgentlakeError
        from agentlake.lake import Lake
        from agentlake.learn import LearningScheduler, LessonStore

        store = LessonStore.open(settings)
        try:
            lake: Any = Lake.open(settings, read_only=True)
        except AgentlakeError:
            lake = None
        scheduler = LearningScheduler(store, observer, lake=lake).start()

        def stop() -> None:
            scheduler.stop()
            store.close()
            if lake is not None:
                lake.close()

        return stop

    return start


def register(app: typer.Typer) -> None:
    app.add_typer(observer_app, name="observer")
