"""``agentlake index build|status|drop``: vector indexes over a dataset's text column."""

from __future__ import annotations

import typer

from agentlake.cli.output import Format, console, format_option, print_json, render_record, render_rows

index_app = typer.Typer(help="Build, check and drop vector indexes for hybrid search.", no_args_is_help=True)


@index_app.command("build")
def build(
    dataset: str = typer.Argument(..., help="Dataset to index, e.g. workers."),
    column: str = typer.Option(..., "--column", "-c", help="Text column to embed, e.g. resume_text."),
    key: str | None = typer.Option(
        None, "--key", help="Unique integer key column (default: the dataset's key, e.g. worker_id)."
    ),
    model: str | None = typer.Option(
        None,
        "--model",
        help="Embedder, e.g. local:all-MiniLM-L6-v2 or ollama:nomic-embed-text (default: embed_model).",
    ),
    fmt: Format = format_option("Output: table (one line), json (what was built) or csv (one row)."),
) -> None:
    """Embed COLUMN of every row (cached by content: unchanged rows are not embedded again) and store the index."""
    from agentlake.embed import get_embedder
    from agentlake.lake import Lake
    from agentlake.lake.index import build_index

    with Lake.open() as lake:
        embedder = get_embedder(model, lake.settings)
        result = build_index(lake, dataset, column, key=key, embedder=embedder, progress=True)
    info = result.index
    record = info.model_dump(mode="json") | result.model_dump(mode="json", exclude={"index"})
    render_record(
        record,
        fmt,
        lambda: console.print(
            f"indexed {info.row_count} rows of {info.dataset}.{info.text_column} by {info.key_column} with "
            f"{info.model} ({info.dimension}-d): {result.embedded} embedded, {result.cached} from the cache, "
            f"{'HNSW graph' if result.ann else 'exact scan'}, {result.elapsed_s:.1f} s",
            highlight=False,
        ),
    )


@index_app.command("status")
def status(
    dataset: str | None = typer.Argument(None, help="One dataset (default: every index)."),
    fmt: Format = format_option(),
) -> None:
    """List indexes and check each against its dataset (re-hashes the texts, so seconds at 500k rows)."""
    from agentlake.lake import Lake
    from agentlake.lake.index import index_status

    with Lake.open(read_only=True) as lake:
        states = index_status(lake, dataset)
    if fmt is Format.json:
        print_json([state.model_dump(mode="json") for state in states])
        return
    rows = [
        (
            s.index.dataset,
            s.index.text_column,
            s.index.key_column,
            s.index.model,
            s.index.row_count,
            "fresh" if s.fresh else "STALE",
            s.reason,
        )
        for s in states
    ]
    render_rows(
        ["dataset", "column", "key", "model", "rows", "state", "why"], rows, fmt, title="vector indexes"
    )


@index_app.command("drop")
def drop(
    dataset: str = typer.Argument(..., help="Dataset whose index to remove."),
    fmt: Format = format_option("Output: table (one line), json (the index dropped) or csv (one row)."),
) -> None:
    """Remove a dataset's vector index (its vectors table and files; the embedding cache stays)."""
    from agentlake.lake import Lake
    from agentlake.lake.index import drop_index

    with Lake.open() as lake:
        info = drop_index(lake, dataset)
    render_record(
        info.model_dump(mode="json"),
        fmt,
        lambda: console.print(
            f"dropped the index of {info.dataset} ({info.row_count} rows)", highlight=False
        ),
    )


def register(app: typer.Typer) -> None:
    app.add_typer(index_app, name="index")
