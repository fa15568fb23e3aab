"""``agentlake sql "SELECT ..."``: guarded read-only SQL over the lake (through ``agentlake serve``
when one runs for the data directory: it holds the lake)."""

from __future__ import annotations

import typer

from agentlake.cli.output import Format, err_console, render_rows


def sql(
    query: str = typer.Argument(..., help="One SELECT (or WITH ... SELECT) query."),
    fmt: Format = typer.Option(Format.table, "--format", "-f", help="Output: table, json or csv."),
    max_rows: int | None = typer.Option(
        None, "--max-rows", min=0, help="Row cap (default: setting sql_max_rows)."
    ),
    timeout: float | None = typer.Option(
        None, "--timeout", min=0.001, help="Seconds before the query is interrupted (default: sql_timeout_s)."
    ),
) -> None:
    """Run one read-only query. DDL, DML, ATTACH, COPY, PRAGMA, SET and file-reading functions are refused."""
    from agentlake.cli.beside_server import call, running_gateway
    from agentlake.lake import Lake
    from agentlake.lake.lakehouse import QueryResult

    server = running_gateway()
    if server is not None:
        # The server holds the lake: it runs the query, under its own sql_timeout_s.
        if timeout is not None:
            err_console.print(f"note: --timeout is not sent; {server.describe()} applies its sql_timeout_s")
        body = {"sql": query, "max_rows": max_rows or None}
        result = QueryResult.model_validate(call(server, "POST", "/sql", json=body))
    else:
        with Lake.open(read_only=True) as lake:
            result = lake.query(query, max_rows=max_rows, timeout_s=timeout)
    render_rows(result.columns, result.rows, fmt)
    if result.truncated:
        err_console.print(
            f"truncated: showing the first {len(result.rows)} rows; raise --max-rows to see more",
            highlight=False,
        )


def register(app: typer.Typer) -> None:
    app.command("sql")(sql)
