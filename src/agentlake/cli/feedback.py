"""``agentlake feedback ANSWER_ID --right | --wrong [--expected VALUE] [--note TEXT]``: a verdict
on an answer of ``agentlake ask``, which the learner learns from (through ``agentlake serve``
when one runs for the data directory)."""

from __future__ import annotations

import typer

from agentlake.cli.output import JSON_ALIAS, Format, format_option


def feedback(
    answer_id: str = typer.Argument(
        ..., help="The answer's id: the last line of `agentlake ask`, or its --json `id`."
    ),
    right: bool = typer.Option(..., "--right/--wrong", help="Whether the answer was right."),
    expected: str | None = typer.Option(None, "--expected", help="What a wrong answer should have been."),
    note: str | None = typer.Option(None, "--note", help="Anything else worth learning from."),
    fmt: Format = format_option("Output: table (one line), json or csv (what was recorded)."),
    as_json: bool = JSON_ALIAS,
) -> None:
    """Say whether an answer was right: a right answer's query becomes a worked example for
    questions like it; a wrong one with --expected is corrected when a query gives that value."""
    from agentlake.cli.beside_server import call, running_gateway
    from agentlake.cli.output import chosen_format, console, render_record
    from agentlake.questions.feedback import Feedback, FeedbackRecorded, give_feedback

    fmt = chosen_format(fmt, as_json)  # bad input fails before any work
    verdict = Feedback(answer_id=answer_id, right=right, expected=expected, note=note)
    server = running_gateway()
    if server is not None:
        recorded = FeedbackRecorded.model_validate(
            call(server, "POST", "/feedback", json=verdict.model_dump())
        )
    else:
        from agentlake.observe import get_observer

        recorded = give_feedback(verdict, observer=get_observer())
    said = "right" if right else "wrong" + (f" (expected {expected})" if expected else "")
    render_record(
        recorded.model_dump(mode="json"),
        fmt,
        lambda: console.print(
            f"recorded: answer {answer_id} was {said}; `agentlake lessons learn` learns from it",
            highlight=False,
        ),
    )


def register(app: typer.Typer) -> None:
    app.command("feedback")(feedback)
