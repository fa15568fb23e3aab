"""``agentlake models``: configured models with reachability, context window and loaded state."""

from __future__ import annotations

import typer

from agentlake.cli.output import Format


def models(
    fmt: Format = typer.Option(Format.table, "--format", "-f", help="Output: table, json or csv."),
    server_models: bool = typer.Option(
        True, "--server-models/--configured-only", help="Also list what the configured servers offer."
    ),
) -> None:
    """List configured models (settings, AGENTLAKE_LLM_MODELS_FILE, what the servers offer): reachable, window, loaded."""
    from agentlake.cli.output import err_console, render_rows
    from agentlake.llm.inventory import model_statuses
    from agentlake.settings import load_settings

    rows = model_statuses(load_settings(), include_server_models=server_models)
    if not rows and fmt is Format.table:
        err_console.print(
            "No models configured or offered: set AGENTLAKE_EXECUTOR_MODEL (e.g. ollama:qwen3:4b), start Ollama, or set OPENAI_BASE_URL."
        )
        return
    columns = [
        "model",
        "roles",
        "reachable",
        "loaded",
        "window",
        "source",
        "thinking",
        "schema",
        "detail",
    ]

    def yes_no(value: bool | None) -> str | bool | None:
        return value if fmt is not Format.table else {True: "yes", False: "no", None: "-"}[value]

    render_rows(
        columns,
        [
            [
                r.model,
                ", ".join(r.roles),
                yes_no(r.reachable),
                yes_no(r.loaded),
                r.context_window,
                r.window_source,
                yes_no(r.thinking),
                yes_no(r.schema_),
                r.detail,
            ]
            for r in rows
        ],  # fmt: skip
        fmt,
        title="models",
    )


def register(app: typer.Typer) -> None:
    app.command("models")(models)
