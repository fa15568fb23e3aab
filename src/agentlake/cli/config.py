"""``agentlake config``: show the effective settings and generate their documentation."""

from __future__ import annotations

import typer

from agentlake.cli.output import Format, format_option

config_app = typer.Typer(
    help="Show the effective settings or print the settings table as Markdown.", no_args_is_help=True
)


@config_app.command("show")
def show(fmt: Format = format_option("Output: table, json (one object, setting -> value) or csv.")) -> None:
    """Print every setting with its effective value (secrets hidden)."""
    from agentlake.cli.output import print_json, render_rows
    from agentlake.settings import load_settings

    settings = load_settings()
    # Secrets print as '**********' in every format (SecretStr's text), never their value.
    values = {name: getattr(settings, name) for name in type(settings).model_fields}
    if fmt is Format.json:
        print_json({name: str(v) if hasattr(v, "get_secret_value") else v for name, v in values.items()})
        return
    render_rows(
        ["setting", "value"], [(n, str(v)) for n, v in values.items()], fmt, title="agentlake settings"
    )


@config_app.command("docs")
def docs() -> None:
    """Print docs/configuration.md, generated from the settings table."""
    from agentlake.settings import configuration_markdown

    typer.echo(configuration_markdown(), nl=False)


def register(app: typer.Typer) -> None:
    app.add_typer(config_app, name="config")
