"""``agentlake search DATASET "question"``: hybrid search (SQL filter first, then vector ranking),
through ``agentlake serve`` when one runs for the data directory."""

from __future__ import annotations

import typer

from agentlake.cli.output import Format, render_rows


def search(
    dataset: str = typer.Argument(..., help="Indexed dataset, e.g. workers."),
    question: str = typer.Argument(..., help='What to look for, e.g. "certified welder, night shifts".'),
    where: str | None = typer.Option(
        None,
        "--where",
        "-w",
        help="SQL WHERE condition applied first, e.g. \"role = 'Welder' AND state = 'OH'\".",
    ),
    k: int = typer.Option(10, "-k", "--top", min=1, max=1000, help="Number of results."),
    fmt: Format = typer.Option(Format.table, "--format", "-f", help="Output: table, json or csv."),
) -> None:
    """Rank the rows matching --where (all rows without it) by similarity to QUESTION."""
    from agentlake.cli.beside_server import call, running_gateway
    from agentlake.lake import Lake
    from agentlake.lake.search import hybrid_search

    columns = ["doc_id", "key", "score", "similarity", "sql_verified", "chunk_text"]
    server = running_gateway()
    if server is not None:
        # The server holds the lake (and has the embedding model loaded): it searches.
        body = {"dataset": dataset, "question": question, "where": where, "k": k}
        hits = call(server, "POST", "/search", json=body)["hits"]
        rows = [[hit[column] for column in columns] for hit in hits]
    else:
        with Lake.open(read_only=True) as lake:
            sources = hybrid_search(lake, dataset, question, where=where, k=k)
        rows = [[getattr(source, column) for column in columns] for source in sources]
    render_rows(columns, rows, fmt, title=f"{dataset}: {question}")


def register(app: typer.Typer) -> None:
    app.command("search")(search)
