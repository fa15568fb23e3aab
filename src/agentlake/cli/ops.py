"""``agentlake ops tail | stats | query | show``: read the operation log.

Reads the observer's DuckDB file directly (read-only) when no process holds it, otherwise asks
the observer service (``--url``; else the running ``agentlake serve`` or ``agentlake observer
serve`` of the data directory that holds the file; else settings.observer_url). Thin door onto
``agentlake.observe.open_reader``; ``tail --follow`` streams ``GET /ops/stream``. A data
directory that has recorded nothing yet reads as an empty log (zeros, no ops), never an error;
``show`` of an id no op has says how to find ids.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import typer

from agentlake.cli.output import Format, print_json, render_rows

ops_app = typer.Typer(
    help="Read the operation log: recent ops, live tail, stats, filtered queries.", no_args_is_help=True
)

_COLUMNS = ["ts", "source", "endpoint", "ok", "ms", "agent", "staffer", "run", "detail", "id"]
_URL = typer.Option(
    None, "--url", help="Ask the observer service at this URL instead of reading the store file."
)
_FORMAT = typer.Option(Format.table, "--format", "-f", help="Output format: table, json or csv.")


def _row(op: Any) -> list[Any]:
    detail = op.error or op.output_summary or op.input_summary
    return [
        op.ts.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3],
        op.source,
        op.endpoint,
        "yes" if op.success else "NO",
        round(op.duration_ms, 1),
        op.agent_id,
        op.labels.get("staffer_id"),
        op.run_id,
        detail[:80],
        op.id,
    ]


def _when(text: str | None) -> datetime | None:
    """ISO 8601 (UTC if no offset) or an age like 30s, 15m, 2h, 7d (that long ago)."""
    if text is None:
        return None
    match = re.fullmatch(r"(\d+)([smhd])", text.strip())
    if match:
        unit = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}[match.group(2)]
        return datetime.now(UTC) - timedelta(**{unit: int(match.group(1))})
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        from agentlake.errors import UserError

        raise UserError(
            f"cannot read the time {text!r}: use ISO 8601 (2026-11-21T08:00) or an age (30s, 15m, 2h, 7d)"
        ) from None


def _render(ops: list[Any], fmt: Format) -> None:
    if fmt is Format.json:
        print_json([op.model_dump(mode="json") for op in ops])
    else:
        render_rows(_COLUMNS, [_row(op) for op in ops], fmt)


@ops_app.command("tail")
def tail(
    n: int = typer.Option(20, "-n", "--lines", min=0, help="How many recent ops to show first."),
    follow: bool = typer.Option(
        False, "--follow", help="Keep printing ops as the running service stores them."
    ),
    source: str = typer.Option(
        None, "--source", help="Only ops from this source (agent, llm, scenario, ...)."
    ),
    url: str = _URL,
    fmt: Format = _FORMAT,
) -> None:
    """Show the latest ops, oldest first; with --follow, stream new ones from the service, one line each."""
    from agentlake.observe import open_client, open_reader

    if not follow:
        with_reader = open_reader(url=url, missing_ok=True)
        try:
            _render(list(reversed(with_reader.query(source=source, limit=n))), fmt)
        finally:
            with_reader.close()
        return
    with open_client(url=url) as client:
        for op in client.stream(source=source, backlog=n):
            # One line per op as it arrives: JSON lines, or tab-separated columns.
            line = (
                op.model_dump_json()
                if fmt is Format.json
                else "\t".join("" if v is None else str(v) for v in _row(op))
            )
            typer.echo(line)


@ops_app.command("stats")
def stats(url: str = _URL, fmt: Format = _FORMAT) -> None:
    """Totals, successes, failures, counts by source and endpoint, latency p50/p95."""
    from agentlake.observe import open_reader

    reader = open_reader(url=url, missing_ok=True)
    try:
        result = reader.stats()
    finally:
        reader.close()
    if fmt is Format.json:
        print_json(result.model_dump(mode="json", exclude={"recent_scenario"}))
        return
    rows = [("total", result.total), ("successes", result.successes), ("failures", result.failures),
            ("latency p50 ms", _ms(result.latency_p50_ms)), ("latency p95 ms", _ms(result.latency_p95_ms))]  # fmt: skip
    rows += [(f"source {name}", count) for name, count in result.by_source.items()]
    rows += [(f"endpoint {name}", count) for name, count in list(result.by_endpoint.items())[:20]]
    render_rows(["stat", "value"], rows, fmt, title="observer stats")


def _ms(value: float | None) -> str:
    return "" if value is None else f"{value:.1f}"


@ops_app.command("query")
def query(
    op_id: str = typer.Option(None, "--id", help="One op, by its id (e.g. one a lesson names)."),
    source: str = typer.Option(
        None, "--source", help="gateway, mcp, scenario, agent, llm, otlp or external."
    ),
    endpoint: str = typer.Option(
        None, "--endpoint", help="Exact endpoint, or a prefix ending in * (tool.*)."
    ),
    success: bool = typer.Option(None, "--success/--failure", help="Only successes, or only failures."),
    since: str = typer.Option(None, "--since", help="From this time: ISO 8601 or an age (15m, 2h, 7d)."),
    until: str = typer.Option(None, "--until", help="Before this time: ISO 8601 or an age."),
    staffer: str = typer.Option(None, "--staffer", help="A scenario's staffer (the staffer_id label)."),
    run: str = typer.Option(None, "--run", help="Run id, or a prefix ending in *."),
    label: list[str] = typer.Option([], "--label", help="A label the op carries, key=value (repeatable)."),
    limit: int = typer.Option(50, "--limit", min=1, max=1000, help="Page size."),
    offset: int = typer.Option(0, "--offset", min=0, help="Ops to skip (pagination)."),
    url: str = _URL,
    fmt: Format = _FORMAT,
) -> None:
    """Stored ops matching every filter, newest first."""
    from agentlake.observe import open_reader
    from agentlake.observe.filters import parse_labels

    labels = parse_labels(label)
    if staffer:
        labels["staffer_id"] = staffer
    reader = open_reader(url=url, missing_ok=True)
    try:
        found = reader.query(
            id=op_id,
            source=source,
            endpoint=endpoint,
            success=success,
            since=_when(since),
            until=_when(until),
            labels=labels,
            run_id=run,
            limit=limit,
            offset=offset,
        )
    finally:
        reader.close()
    _render(found, fmt)


@ops_app.command("show")
def show(
    op_id: str = typer.Argument(..., help="An op's id: the id column of `ops query`, or one a lesson names."),
    url: str = _URL,
) -> None:
    """Print one op as JSON: what it was given and returned, its labels, attributes and timing."""
    from agentlake.errors import UserError
    from agentlake.observe import open_reader

    reader = open_reader(url=url, missing_ok=True)
    try:
        found = reader.query(id=op_id, limit=1)
    finally:
        reader.close()
    if not found:
        raise UserError(
            f"no op {op_id!r}: `agentlake ops query` lists ops with their ids, and `agentlake lessons "
            "show LESSON_ID` names the ops a lesson was learned from"
        )
    print_json(found[0].model_dump(mode="json"))


def register(app: typer.Typer) -> None:
    app.add_typer(ops_app, name="ops")
