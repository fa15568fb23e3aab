"""``agentlake ask "question"``: an answer over the lake written by a model, with its sources
(through ``agentlake serve`` when one runs for the data directory)."""

from __future__ import annotations

import typer

from agentlake.cli.output import JSON_ALIAS, Format, format_option


def ask(
    question: str = typer.Argument(
        ..., help="A question about the data, e.g. 'How many welders live in Ohio?'."
    ),
    model: str | None = typer.Option(
        None, "--model", "-m", help="e.g. ollama:qwen3:4b (default: executor_model)."
    ),
    dataset: str | None = typer.Option(
        None, "--dataset", help="Pin the dataset searched when search is needed."
    ),
    k: int = typer.Option(8, "-k", min=1, max=50, help="Search results given to the model as evidence."),
    fmt: Format = format_option(
        "Output: table (the answer and where it came from), json (the whole answer: its id, route, "
        "SQL, sources, lessons) or csv (one row)."
    ),
    as_json: bool = JSON_ALIAS,
    no_lessons: bool = typer.Option(
        False, "--no-lessons", help="Answer without the lessons learned so far (the learning-off twin)."
    ),
) -> None:
    """Answer a question over the lake: SQL for structured questions, hybrid search otherwise, sources cited."""
    from agentlake.agents.ask import Answer
    from agentlake.agents.ask import ask as ask_lake
    from agentlake.cli.beside_server import LONG_TIMEOUT_S, call, running_gateway
    from agentlake.cli.output import chosen_format, console, render_record
    from agentlake.lake import Lake

    fmt = chosen_format(fmt, as_json)  # bad input fails before any work
    server = running_gateway()
    if server is not None:
        # The server holds the lake: it asks (with its models unless --model names one).
        body = {"question": question, "model": model, "dataset": dataset, "k": k, "lessons": not no_lessons}
        answer = Answer.model_validate(call(server, "POST", "/ask", json=body, timeout_s=LONG_TIMEOUT_S))
    else:
        with Lake.open(read_only=True) as lake:
            answer = ask_lake(question, lake=lake, model=model, dataset=dataset, k=k, lessons=not no_lessons)

    def text() -> None:
        console.print(answer.answer, highlight=False, soft_wrap=True)
        how = {
            "sql": f"SQL: {answer.sql}",
            "search": f"search {answer.dataset}{f' WHERE {answer.where}' if answer.where else ''}",
            "none": "nothing ran",
        }[answer.route]
        sources = ", ".join(s.id for s in answer.sources) or "none"
        console.print(
            f"[dim]{how} · sources: {sources} · answer {answer.id}[/]", highlight=False, soft_wrap=True
        )

    render_record(answer.model_dump(mode="json"), fmt, text)


def register(app: typer.Typer) -> None:
    app.command("ask")(ask)
