"""``agentlake config``: show the effective settings and generate their documentation."""

from __future__ import annotations

import typer

config_app = typer.Typer(
    help="Show the effective settings or print the settings table as Markdown.", no_args_is_help=True
)


@config_app.command("show")
def show() -> None:
    """Print every setting with its effective value (secrets hidden)."""
    from agentlake.cli.output import render_rows
    from agentlake.settings import load_settings

    settings = load_settings()
    rows = [(name, str(getattr(settings, name))) for name in type(settings).model_fields]
    render_rows(["setting", "value"], rows, title="agentlake settings")


@config_app.command("docs")
def docs() -> None:
    """Print docs/configuration.md, generated from the settings table."""
    from agentlake.settings import configuration_markdown

    typer.echo(configuration_markdown(), nl=False)


def register(app: typer.Typer) -> None:
    app.add_typer(config_app, name="config")
