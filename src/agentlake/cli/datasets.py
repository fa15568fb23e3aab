"""``agentlake datasets [show NAME]``: the lake's catalog (schema, rows, times, ingest history)."""

from __future__ import annotations

import typer

from agentlake.cli.output import Format, console, err_console, print_json, render_rows

datasets_app = typer.Typer(help="List the lake's datasets, or show one with its schema and ingest history.")


@datasets_app.callback(invoke_without_command=True)
def list_datasets(
    ctx: typer.Context,
    fmt: Format = typer.Option(Format.table, "--format", "-f", help="Output: table, json or csv."),
) -> None:
    """List every dataset: name, rows, columns, key, last update."""
    if ctx.invoked_subcommand is not None:
        return
    from agentlake.lake import Lake
    from agentlake.settings import load_settings

    settings = load_settings()
    infos = []
    if settings.lake_path.exists():  # no lake yet is an empty catalog, not an error
        with Lake.open(settings, read_only=True) as lake:
            infos = lake.datasets()
    if fmt is Format.json:
        print_json([info.model_dump(mode="json", exclude={"history"}) for info in infos])
        return
    if not infos:
        err_console.print(
            "no datasets yet: run `agentlake data generate` or `agentlake ingest FILE --dataset NAME`"
        )
        return
    rows = [
        (i.name, i.row_count, len(i.columns), i.key or "", i.updated_at.strftime("%Y-%m-%d %H:%M:%S"))
        for i in infos
    ]
    render_rows(["dataset", "rows", "columns", "key", "updated (UTC)"], rows, fmt, title="datasets")


@datasets_app.command("show")
def show(
    name: str = typer.Argument(..., help="Dataset name, e.g. workers."),
    fmt: Format = typer.Option(
        Format.table,
        "--format",
        "-f",
        help="Output: table or json (csv prints the schema and the history as two CSV blocks).",
    ),
) -> None:
    """Show one dataset: schema, row count, key, created/updated and every ingest."""
    from agentlake.lake import Lake

    with Lake.open(read_only=True) as lake:
        info = lake.dataset(name)
    if fmt is Format.json:
        print_json(info.model_dump(mode="json"))
        return
    console.print(
        f"[bold]{info.name}[/]: {info.row_count} rows, key {info.key or '(none)'}, "
        f"created {info.created_at:%Y-%m-%d %H:%M:%S}, updated {info.updated_at:%Y-%m-%d %H:%M:%S} UTC",
        highlight=False,
    )
    render_rows(["column", "type"], info.columns, fmt, title="schema")
    history = [
        (f"{h.at:%Y-%m-%d %H:%M:%S}", h.mode, h.rows_in, h.rows_before, h.rows_after, h.source)
        for h in info.history
    ]
    render_rows(
        ["at (UTC)", "mode", "rows in", "before", "after", "source"], history, fmt, title="ingest history"
    )


def register(app: typer.Typer) -> None:
    app.add_typer(datasets_app, name="datasets")
