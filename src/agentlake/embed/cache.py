"""Batched embedding with a progress bar and a content-hash cache kept in the lake.

Owns :func:`embed_texts` (dedupe, look up, embed the misses in batches, store them) and the
``_embedding_cache`` table: one row per (embedder name, text hash) with its vector. Writes go
through ``Lake.write`` (the lake's one writer). Re-embedding unchanged texts therefore costs a
lookup, not a model call. It does not own any embedder (``embedder``, ``local``, ``http``) or
the per-dataset vectors (``agentlake.lake.index``).

The table is created by the lake's migration ``lake_002_embedding_cache``
(``agentlake.lake.lakehouse.LAKE_MIGRATIONS``); a lake opened read-only is not migrated, so
reads still allow for its absence.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

import numpy as np
from pydantic import BaseModel

from agentlake.embed.embedder import Embedder
from agentlake.errors import RunError

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

    from agentlake.lake import Lake

CACHE_TABLE = "_embedding_cache"
# Misses are written in chunks this large, so an interrupted build keeps most of its work
# without paying one transaction per model batch.
FLUSH_TEXTS = 4096


class EmbedStats(BaseModel):
    """What one :func:`embed_texts` call did."""

    model: str
    texts: int
    unique: int
    cached: int
    embedded: int
    elapsed_s: float


def text_hash(text: str) -> str:
    """The cache key of a text's content: 128-bit BLAKE2b of its UTF-8 bytes, in hex."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def _vectors_to_arrow(hashes: Sequence[str], vectors: np.ndarray, model: str) -> pa.Table:
    import pyarrow as pa

    n, dim = vectors.shape
    offsets = pa.array(np.arange(0, (n + 1) * dim, dim, dtype=np.int32))
    values = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1))
    return pa.table(
        {
            "model": pa.array([model] * n, pa.string()),
            "text_hash": pa.array(list(hashes), pa.string()),
            "vec": pa.ListArray.from_arrays(offsets, values),
        }
    )


def _store(lake: Lake, hashes: Sequence[str], vectors: np.ndarray, model: str) -> None:
    rows = _vectors_to_arrow(hashes, vectors, model)

    def insert(conn: duckdb.DuckDBPyConnection) -> None:
        conn.register("_new_embeddings", rows)
        try:
            # OR IGNORE: a concurrent build may have stored the same text meanwhile.
            conn.execute(
                f"INSERT OR IGNORE INTO {CACHE_TABLE} SELECT model, text_hash, vec FROM _new_embeddings"
            )
        finally:
            conn.unregister("_new_embeddings")

    lake.write(insert)


def cached_vectors(lake: Lake, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
    """The cached vectors of ``hashes`` for ``model`` (only the hits), keyed by hash."""
    import pyarrow as pa
    import pyarrow.compute as pc

    # Lazy (start-up time): the lake (DuckDB) loads on first use.
    from agentlake.lake.catalog import table_exists

    if not hashes:
        return {}
    wanted = pa.table({"text_hash": pa.array(list(hashes), pa.string())})
    with lake.cursor() as cur:
        if not table_exists(cur, CACHE_TABLE):
            return {}
        cur.register("_wanted_hashes", wanted)
        found = cur.sql(
            f"SELECT c.text_hash, c.vec FROM {CACHE_TABLE} c JOIN _wanted_hashes w USING (text_hash) WHERE c.model = ?",
            params=[model],
        ).to_arrow_table()
    if found.num_rows == 0:
        return {}
    vec = found.column("vec").combine_chunks()
    lengths = pc.list_value_length(vec).to_numpy(zero_copy_only=False)
    dim = int(lengths[0])
    if not np.all(lengths == dim):
        raise RunError(
            f"the embedding cache holds vectors of several lengths for {model}; delete them "
            f"(DELETE FROM {CACHE_TABLE} WHERE model = '{model}') and rebuild"
        )
    matrix = (
        pc.list_flatten(vec).to_numpy(zero_copy_only=False).astype(np.float32, copy=False).reshape(-1, dim)
    )
    return dict(zip(found.column("text_hash").to_pylist(), matrix, strict=True))


def embed_texts(
    embedder: Embedder,
    texts: Sequence[str],
    *,
    lake: Lake | None = None,
    batch_size: int | None = None,
    progress: bool = False,
    description: str | None = None,
) -> tuple[np.ndarray, EmbedStats]:
    """Vectors of ``texts`` (float32, ``(len(texts), dimension)``, unit rows, in order) and stats.

    Identical texts are embedded once. With ``lake``, vectors already in its
    ``_embedding_cache`` for ``embedder.name`` are reused and new ones stored, so a second
    call on unchanged texts embeds nothing (``stats.embedded == 0``). ``batch_size`` texts go
    to the model at a time (default: setting ``embed_batch_size``); ``progress`` shows a Rich
    bar on stderr. Raises whatever the embedder raises (``RunError``/``UserError``); batches
    stored before a failure stay cached.
    """
    started = time.perf_counter()
    if batch_size is None:
        batch_size = lake.settings.embed_batch_size if lake is not None else 128
    texts = [text if isinstance(text, str) else ("" if text is None else str(text)) for text in texts]
    hashes = [text_hash(text) for text in texts]
    unique: dict[str, str] = {}
    for digest, text in zip(hashes, texts, strict=True):
        unique.setdefault(digest, text)
    known = cached_vectors(lake, embedder.name, list(unique)) if lake is not None else {}
    missing = [digest for digest in unique if digest not in known]

    fresh: dict[str, np.ndarray] = {}
    pending_hashes: list[str] = []
    pending_vectors: list[np.ndarray] = []

    def flush() -> None:
        if lake is not None and pending_hashes:
            _store(lake, pending_hashes, np.concatenate(pending_vectors), embedder.name)
        pending_hashes.clear()
        pending_vectors.clear()

    with progress_bar(progress, len(missing), description or f"embedding with {embedder.name}") as advance:
        for start in range(0, len(missing), batch_size):
            batch = missing[start : start + batch_size]
            vectors = embedder.embed([unique[digest] for digest in batch])
            if vectors.shape[0] != len(batch):
                raise RunError(f"{embedder.name} returned {vectors.shape[0]} vectors for {len(batch)} texts")
            fresh.update(zip(batch, vectors, strict=True))
            pending_hashes.extend(batch)
            pending_vectors.append(vectors)
            if len(pending_hashes) >= FLUSH_TEXTS:
                flush()
            advance(len(batch))
        flush()

    lookup = {**known, **fresh}
    if texts:
        matrix = np.stack([lookup[digest] for digest in hashes]).astype(np.float32, copy=False)
    else:
        matrix = np.zeros((0, 0), dtype=np.float32)
    stats = EmbedStats(
        model=embedder.name,
        texts=len(texts),
        unique=len(unique),
        cached=len(unique) - len(missing),
        embedded=len(missing),
        elapsed_s=round(time.perf_counter() - started, 3),
    )
    return matrix, stats


@contextmanager
def progress_bar(enabled: bool, total: int, description: str) -> Iterator[Callable[[int], None]]:
    """A Rich progress bar on stderr (items done, items/s, time left), or nothing; yields ``advance(n)``."""
    if not enabled or total <= 0:
        yield lambda n: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    class _Rate(TextColumn):
        def __init__(self) -> None:
            super().__init__("")

        def render(self, task):
            from rich.text import Text

            return Text(f"{task.speed:,.0f}/s" if task.speed else "", style="progress.data.speed")

    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        _Rate(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
    )
    with bar:
        task = bar.add_task(description, total=total)
        yield lambda n: bar.advance(task, n)
