"""The two exception roots every part of agentlake raises.

``UserError``: bad input or configuration. The message says what is wrong and what to do.
The CLI renders it on one line and exits with code 2; HTTP layers answer 4xx.

``RunError``: something failed while running (a model call, a query that timed out). The
message names the call and its numbers. The CLI exits with code 1; HTTP layers answer 5xx
unless a more specific status is attached.

Third-party exceptions are converted into one of these at the edge where they enter.
"""

from __future__ import annotations


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
