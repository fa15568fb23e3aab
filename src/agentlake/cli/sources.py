"""``agentlake sources [add NAME URL|FILE | remove NAME]``: external read-only databases.

A source's tables join the catalog as ``NAME.table``; ``sql``, ``ask``, the graph's thinker and
the agents' ``sql`` tool read them in place (``agentlake.lake.sources``). A password is never
printed.
"""

from __future__ import annotations

import typer

from agentlake.cli.output import Format, console, err_console, print_json, render_rows

sources_app = typer.Typer(
    help="External read-only sources (PostgreSQL, SQLite) whose tables the lake reads as NAME.table."
)


def _registry():  # agentlake.lake.sources.SourceRegistry, imported lazily
    from agentlake.lake.sources import SourceRegistry, sources_path
    from agentlake.settings import load_settings

    return SourceRegistry(sources_path(load_settings().lake_path))


@sources_app.callback(invoke_without_command=True)
def list_sources(
    ctx: typer.Context,
    fmt: Format = typer.Option(Format.table, "--format", "-f", help="Output: table, json or csv."),
) -> None:
    """List the registered sources (passwords shown as ***)."""
    if ctx.invoked_subcommand is not None:
        return
    rows = [(s.name, s.kind, s.shown, s.added_at) for s in _registry().list()]
    if not rows and fmt is Format.table:
        err_console.print(
            "no sources yet: `agentlake sources add NAME postgresql://USER@HOST/DB` or a SQLite file"
        )
        return
    render_rows(["source", "kind", "target", "added (UTC)"], rows, fmt, title="sources")


@sources_app.command("add")
def add(
    name: str = typer.Argument(..., help="The source's name: its tables read as NAME.table."),
    target: str = typer.Argument(..., help="A postgresql:// URL (a read-only role) or a SQLite file's path."),
    fmt: Format = typer.Option(Format.table, "--format", "-f", help="Output: table or json."),
) -> None:
    """Register a read-only source after listing its tables once (a running server sees it at once)."""
    source, tables = _registry().add(name, target)
    if fmt is Format.json:
        print_json({"name": source.name, "kind": source.kind, "target": source.shown,
                    "tables": [f"{source.name}.{t.name}" for t in tables]})  # fmt: skip
        return
    listed = ", ".join(f"{source.name}.{t.name}" for t in tables) or "(no tables it may read)"
    console.print(f"source {source.name} ({source.kind}, {source.shown}): {listed}", highlight=False)


@sources_app.command("remove")
def remove(name: str = typer.Argument(..., help="The source to forget.")) -> None:
    """Forget a source (its database is not touched)."""
    source = _registry().remove(name)
    console.print(f"removed source {source.name} ({source.shown})", highlight=False)


def register(app: typer.Typer) -> None:
    app.add_typer(sources_app, name="sources")
