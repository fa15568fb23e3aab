"""``agentlake models``: configured models with reachability, context window and loaded state,
and the packaged local: models with their GGUF metadata."""

from __future__ import annotations

import typer

from agentlake.cli.output import Format, err_console, render_rows


def models(
    fmt: Format = typer.Option(Format.table, "--format", "-f", help="Output: table, json or csv."),
    server_models: bool = typer.Option(
        True, "--server-models/--configured-only", help="Also list what the configured servers offer."
    ),
    packaged: bool = typer.Option(
        False, "--packaged", help="Only the packaged local: models (the table output shows both lists)."
    ),
) -> None:
    """List configured models (settings, AGENTLAKE_LLM_MODELS_FILE, what the servers offer): reachable,
    window, loaded; and the packaged local: models: installed, assembled, verified, GGUF metadata."""
    from agentlake.llm.inventory import model_statuses
    from agentlake.settings import load_settings

    settings = load_settings()
    if not packaged:
        rows = model_statuses(settings, include_server_models=server_models)
        if rows or fmt is not Format.table:
            _render_configured(rows, fmt)
        else:
            err_console.print(
                "No models configured or offered: set AGENTLAKE_EXECUTOR_MODEL (e.g. ollama:qwen3:4b), start Ollama, or set OPENAI_BASE_URL."
            )
    if packaged or fmt is Format.table:
        _render_packaged(settings, fmt)


def _yes_no(value: bool | None, fmt: Format) -> str | bool | None:
    return value if fmt is not Format.table else {True: "yes", False: "no", None: "-"}[value]


def _render_configured(rows: list, fmt: Format) -> None:
    columns = ["model", "roles", "reachable", "loaded", "window", "source", "thinking", "schema", "detail"]
    render_rows(
        columns,
        [
            [
                r.model,
                ", ".join(r.roles),
                _yes_no(r.reachable, fmt),
                _yes_no(r.loaded, fmt),
                r.context_window,
                r.window_source,
                _yes_no(r.thinking, fmt),
                _yes_no(r.schema_, fmt),
                r.detail,
            ]
            for r in rows
        ],
        fmt,
        title="models",
    )


def _render_packaged(settings: object, fmt: Format) -> None:
    from agentlake.llm.packaged import packaged_statuses

    columns = [
        "model",
        "installed",
        "assembled",
        "verified",
        "name",
        "parameters",
        "quantisation",
        "context",
        "size_mb",
        "detail",
    ]
    if fmt is not Format.table:
        columns.append("path")
    rows = []
    for s in packaged_statuses(settings):  # type: ignore[arg-type]
        info = s.info
        params = (
            None
            if info is None
            else (f"{info.parameters / 1e9:.2f}B" if fmt is Format.table else info.parameters)
        )
        size = None if s.size_bytes is None else round(s.size_bytes / 1_000_000, 1)
        rows.append(
            [
                s.model,
                _yes_no(s.installed, fmt),
                _yes_no(s.assembled, fmt),
                _yes_no(s.verified, fmt),
                info.name if info else s.title,
                params,
                info.quantisation if info else None,
                info.context_length if info else None,
                size,
                s.detail,
                s.path,
            ][: len(columns)]
        )
    render_rows(columns, rows, fmt, title="packaged models (local:)")


def register(app: typer.Typer) -> None:
    app.command("models")(models)
