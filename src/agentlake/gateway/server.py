"""Running the gateway under uvicorn: the library call behind ``agentlake serve``.

Owns the process-level choices: resolving host/port from settings, refusing to expose an open
(keyless) gateway beyond loopback without saying so, announcing the server for its data
directory while it runs (``serving.announce``: CLI commands beside it go through it), and
handing the app to uvicorn. It does
not build the app (``gateway.app``).
"""

from __future__ import annotations

import logging

from agentlake.errors import UserError
from agentlake.gateway.app import create_app
from agentlake.settings import Settings, load_settings

log = logging.getLogger(__name__)

_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def run(
    *,
    host: str | None = None,
    port: int | None = None,
    log_level: str = "info",
    access_log: bool | None = None,
    settings: Settings | None = None,
) -> None:
    """Serve the gateway until interrupted.

    ``host``/``port``/``access_log`` override ``gateway_host``/``gateway_port``/
    ``gateway_access_log``. Raises ``UserError`` for a bad setting or when the port is already
    taken.
    """
    import uvicorn

    # Lazy (start-up time): only a server process tunes the collector.
    from agentlake.serving import announce, client_url, show_learning, tune_collector

    settings = settings or load_settings(gateway_host=host, gateway_port=port, gateway_access_log=access_log)
    if settings.gateway_host not in _LOOPBACK and not settings.api_key_scopes:
        # Allowed (a private network may want it) but never silently.
        log.warning(
            "serving on %s with no API keys: anyone who can reach it can read the lake; "
            "set AGENTLAKE_API_KEYS",
            settings.gateway_host,
        )
    app = create_app(settings)
    url = client_url(settings.gateway_host, settings.gateway_port)
    # What this process opens (lazily) and holds for its lifetime: one writer per DuckDB file.
    held = [settings.lake_path, settings.data_dir / settings.learn_file]
    if settings.observer_sink == "embedded":
        held.append(settings.observer_path)
    config = uvicorn.Config(
        app,
        host=settings.gateway_host,
        port=settings.gateway_port,
        log_level=log_level,
        # Every request is recorded as an op already; a log line each costs ~5% of a cheap
        # request's CPU, so it is opt-in (gateway_access_log, --access-log).
        access_log=settings.gateway_access_log,
        # Keep-alive long enough for pooled clients (and the benchmark's).
        timeout_keep_alive=30,
    )
    server = uvicorn.Server(config)
    # Lazy (start-up time): grpcio loads only in a server process.
    from agentlake.observe.otlp_grpc import start_receiver

    # OTLP/gRPC beside the observer's OTLP/HTTP routes (mounted under /observer).
    receiver = start_receiver(app.state.services.observer, settings, settings.gateway_host)
    tune_collector()
    show_learning(log_level)
    try:
        with announce(settings, kind="gateway", url=url, stores=held, observer_url=f"{url}/observer"):
            server.run()
    except SystemExit:
        # uvicorn logs a failed bind and exits; say what to do instead of a bare exit code.
        if not server.started:
            raise UserError(
                f"could not start on {settings.gateway_host}:{settings.gateway_port} "
                "(is the port already in use? choose another --port)"
            ) from None
        raise
    finally:
        if receiver is not None:
            receiver.stop()
