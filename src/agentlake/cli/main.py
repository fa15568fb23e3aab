"""Builds the root ``agentlake`` app from the command-group modules and renders errors.

``UserError`` -> one line on stderr, exit 2. ``RunError`` -> one line on stderr, exit 1.
Set ``AGENTLAKE_DEBUG=1`` to see the traceback instead. Log records go to stderr from the
``log_level`` setting up (WARNING by default); ``-v`` shows INFO, ``-vv`` DEBUG.
"""

from __future__ import annotations

import importlib
import logging
import os
import pkgutil
import sys
from typing import Any

import typer

import agentlake.cli as cli_package
from agentlake import __version__
from agentlake.errors import AgentlakeError

_NOT_GROUPS = {"main", "output", "beside_server"}

app = typer.Typer(
    name="agentlake",
    help="LLM agents over your own data that get better without retraining: lakehouse, agents, observer, lessons.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    rich_markup_mode="rich",
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"agentlake {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
    verbose: int = typer.Option(
        0,
        "--verbose",
        "-v",
        count=True,
        help="Log more on stderr: -v INFO, -vv DEBUG (default: the log_level setting, WARNING).",
    ),
) -> None:
    """agentlake: operational data work by agents, witnessed and improving."""
    _configure_logging(verbose)


def _configure_logging(verbose: int) -> None:
    """One stderr handler on the root logger at ``-v``'s level, else the ``log_level`` setting's."""
    if verbose:
        level = logging.DEBUG if verbose > 1 else logging.INFO
    else:
        from agentlake.errors import UserError
        from agentlake.settings import load_settings

        try:
            level = logging.getLevelName(load_settings().log_level)
        except UserError:
            level = logging.WARNING  # the command itself reports the bad setting
    root = logging.getLogger()
    if not any(isinstance(handler, _StderrHandler) for handler in root.handlers):
        root.addHandler(_StderrHandler())
    root.setLevel(level)


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is at the time (a test's capture, a redirected stream)."""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


def _register_groups() -> None:
    for module in sorted(pkgutil.iter_modules(cli_package.__path__), key=lambda m: m.name):
        if module.name in _NOT_GROUPS or module.name.startswith("_"):
            continue
        importlib.import_module(f"agentlake.cli.{module.name}").register(app)


_register_groups()


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point."""
    try:
        app(args=argv, prog_name="agentlake")
    except AgentlakeError as exc:
        if os.environ.get("AGENTLAKE_DEBUG"):
            raise
        from rich.markup import escape

        from agentlake.cli.output import err_console

        # Escaped: a message is text, and "pip install 'agentlake[local]'" is not Rich markup.
        err_console.print(f"[bold red]error:[/] {escape(exc.message)}", highlight=False, soft_wrap=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
