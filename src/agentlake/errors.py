"""The two exception roots every part of agentlake raises.

``UserError``: bad input or configuration. The message says what is wrong and what to do.
The CLI renders it on one line and exits with code 2; HTTP layers answer 4xx.

``RunError``: something failed while running (a model call, a query that timed out). The
message names the call and its numbers. The CLI exits with code 1; HTTP layers answer 5xx
unless a more specific status is attached.

Third-party exceptions are converted into one of these at the edge where they enter.

A missing optional dependency is a ``UserError`` naming the extra that installs it, raised by
:func:`require_extra` at the door of the feature that needs it (the extras are declared in
``pyproject.toml``; their modules are imported only inside the functions that use them, so the
base install never loads them).
"""

from __future__ import annotations

import importlib.util


class AgentlakeError(Exception):
    """Common base; catch ``UserError`` or ``RunError`` instead where you can."""

    exit_code = 1
    http_status = 500

    def __init__(self, message: str, *, http_status: int | None = None, **details: object) -> None:
        super().__init__(message)
        self.message = message
        self.details = details
        if http_status is not None:
            self.http_status = http_status


class UserError(AgentlakeError):
    """Bad input or configuration; the message tells the user how to fix it."""

    exit_code = 2
    http_status = 400


class NotFoundError(UserError):
    """A named thing (dataset, worker, lesson, run) does not exist."""

    http_status = 404


class RunError(AgentlakeError):
    """A failure while running: which call failed, with which numbers."""

    exit_code = 1
    http_status = 500


class UnavailableError(RunError):
    """A dependency (model server, observer) cannot be reached right now."""

    http_status = 503


def missing_extra(extra: str, what: str) -> UserError:
    """The one-line error for ``what`` (a feature: ``local:qwen2.5-coder-0.5b``) without ``extra``."""
    return UserError(f"{what} needs the [{extra}] extra: pip install 'agentlake[{extra}]'")


def require_extra(extra: str, what: str, *modules: str) -> None:
    """Raise :func:`missing_extra` unless every top-level module in ``modules`` is installed.

    Only looks for them (``importlib.util.find_spec``: microseconds, nothing imported); the
    caller imports each where it uses it.
    """
    for module in modules:
        if importlib.util.find_spec(module) is None:
            raise missing_extra(extra, what)
