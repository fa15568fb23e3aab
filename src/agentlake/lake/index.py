"""Vector indexes over a dataset's text column: built once, stored in DuckDB, accelerated on disk.

Owns ``agentlake index build``'s library side. For every row of a dataset it embeds one text
column (through the content-hash cache, so unchanged rows cost nothing) and stores, keyed by
the dataset's integer key:

* in the lake (the source of truth): ``_vectors_<dataset>`` (key, text, text_hash, vec
  FLOAT[d]) and one row in ``_vector_indexes`` (column, key, model, fingerprint, the dataset's
  catalog ``updated_at`` when it was read);
* under ``<data_dir>/<lake>.indexes/<dataset>/<fingerprint>/`` (derived, rebuilt from the lake
  whenever missing or not matching the fingerprint): the float32 matrix ordered by key, the
  texts, and, for large datasets, a usearch HNSW graph whose labels are the integer keys.
  A search process reads them into memory once (plus a float16 copy for wide scans) and
  keeps them while the lake's record is unchanged.

The HNSW graph needs usearch, the ``ann`` extra (56 MB: not in the base install). Without
it an index has no graph and a search scans every row exactly (a few ms at 50k rows); a graph
built where usearch was installed is ignored where it is not.

Staleness is decided against the lake, never the files: an index whose dataset has been
ingested into since the build is refused with the command that rebuilds it. It does not rank
or filter anything (``agentlake.lake.search``) and does not own any embedder (``agentlake.embed``).

``_vector_indexes`` is created by the lake's migration ``lake_003_vector_indexes``
(``lakehouse.LAKE_MIGRATIONS``); a lake opened read-only is not migrated, so reads still allow
for its absence. The ``_vectors_<dataset>`` tables are per dataset, made and dropped here.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import BaseModel

from agentlake.errors import NotFoundError, RunError, UserError, missing_extra
from agentlake.lake.catalog import check_dataset_name, quote_ident, table_exists, utc_now

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

    from agentlake.embed import Embedder
    from agentlake.lake import Lake

INDEX_TABLE = "_vector_indexes"
_INTEGER_TYPES = {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER"}
# Below this many rows an exact scan is already well under a millisecond, so no HNSW is built.
ANN_MIN_ROWS = 10_000
# HNSW parameters (benchmarks/bench_search.py). With the top 100 candidates re-scored exactly
# in float32, ef 128 gave recall@10 1.000 on 500k clustered vectors and 0.995 on 20k real MiniLM
# resume embeddings, in about 0.3 ms.
ANN_CONNECTIVITY = 16
ANN_EXPANSION_ADD = 128
ANN_EXPANSION_SEARCH = 128
ANN_DTYPE = "i8"
# The files' layout version (bumped when the files change; old ones are rebuilt from the lake)
# and the fingerprint's (bumped only if what it hashes changes: it is stored in the lake).
_FILES_VERSION = 2
_FINGERPRINT_VERSION = 1


def first_row(
    cur: duckdb.DuckDBPyConnection, sql: str, params: list[Any] | None = None
) -> tuple[Any, ...] | None:
    """The first row of ``sql`` or None, fetching everything so no result is left open on ``cur``."""
    rows = cur.execute(sql, params or []).fetchall()
    return rows[0] if rows else None


def vectors_table(dataset: str) -> str:
    """The lake table holding ``dataset``'s vectors (``_vectors_<dataset>``)."""
    return f"_vectors_{check_dataset_name(dataset)}"


class StaleIndexError(UserError):
    """The index no longer matches its dataset; the message names the rebuild command."""


class IndexInfo(BaseModel):
    """One vector index as the lake records it."""

    dataset: str
    text_column: str
    key_column: str
    model: str
    dimension: int
    row_count: int
    fingerprint: str
    dataset_updated_at: datetime | None
    built_at: datetime

    @property
    def rebuild_command(self) -> str:
        return f"agentlake index build {self.dataset} --column {self.text_column} --key {self.key_column}"


class BuildResult(BaseModel):
    """What :func:`build_index` did."""

    index: IndexInfo
    embedded: int
    cached: int
    ann: bool
    files: str
    elapsed_s: float


class IndexState(BaseModel):
    """An index and whether it still matches its dataset (from :func:`index_status`)."""

    index: IndexInfo
    fresh: bool
    reason: str
    dataset_rows: int | None


# --- reading the lake's record ---------------------------------------------------------

_INFO_COLUMNS = (
    "dataset, text_column, key_column, model, dimension, row_count, fingerprint, dataset_updated_at, built_at"
)


def _info_from_row(row: tuple[Any, ...]) -> IndexInfo:
    names = [name.strip() for name in _INFO_COLUMNS.split(",")]
    return IndexInfo(**dict(zip(names, row, strict=True)))


def list_indexes(lake: Lake) -> list[IndexInfo]:
    """Every vector index in the lake, by dataset name."""
    with lake.cursor() as cur:
        if not table_exists(cur, INDEX_TABLE):
            return []
        rows = cur.execute(f"SELECT {_INFO_COLUMNS} FROM {INDEX_TABLE} ORDER BY dataset").fetchall()
    return [_info_from_row(row) for row in rows]


def index_info(lake: Lake, dataset: str) -> IndexInfo:
    """The index of ``dataset``; ``NotFoundError`` for an unknown dataset, ``UserError``
    (with the build command) when the dataset has no index."""
    check_dataset_name(dataset)
    with lake.cursor() as cur:
        row = None
        if table_exists(cur, INDEX_TABLE):
            row = first_row(cur, f"SELECT {_INFO_COLUMNS} FROM {INDEX_TABLE} WHERE dataset = ?", [dataset])
    if row is None:
        lake.dataset(dataset)  # NotFoundError listing the known datasets
        raise NotFoundError(
            f"dataset {dataset!r} has no vector index yet: run `agentlake index build {dataset} --column TEXT_COLUMN`"
        )
    return _info_from_row(row)


def index_status(lake: Lake, dataset: str | None = None) -> list[IndexState]:
    """Each index (or ``dataset``'s) with a full freshness check: catalog time, row count, and
    the key/text content hashed again (a scan of the dataset, so seconds at 500k rows)."""
    infos = [index_info(lake, dataset)] if dataset else list_indexes(lake)
    states = []
    for info in infos:
        with lake.cursor() as cur:
            if not table_exists(cur, info.dataset):
                states.append(
                    IndexState(
                        index=info, fresh=False, reason="the dataset no longer exists", dataset_rows=None
                    )
                )
                continue
            updated = _catalog_updated_at(cur, info.dataset)
            rows = _read_rows(cur, info.dataset, info.key_column, info.text_column)
        keys, texts = _keys_and_texts(rows)
        fresh, reason = True, "matches its dataset"
        if updated != info.dataset_updated_at:
            fresh, reason = False, "the dataset was ingested into after the build"
        elif len(keys) != info.row_count:
            fresh, reason = False, f"the dataset has {len(keys)} rows, the index {info.row_count}"
        else:
            # Lazy (start-up time): embedders (torch) load on first use.
            from agentlake.embed.cache import text_hash

            if (
                _fingerprint(info.model, info.dimension, keys, [text_hash(t) for t in texts])
                != info.fingerprint
            ):
                fresh, reason = False, "rows were changed after the build"
        states.append(IndexState(index=info, fresh=fresh, reason=reason, dataset_rows=len(keys)))
    return states


def _catalog_updated_at(cur: duckdb.DuckDBPyConnection, dataset: str) -> datetime | None:
    if not table_exists(cur, "_catalog"):
        return None
    row = first_row(cur, "SELECT updated_at FROM _catalog WHERE name = ?", [dataset])
    return row[0] if row else None


def _read_rows(cur: duckdb.DuckDBPyConnection, dataset: str, key: str, column: str) -> pa.Table:
    return cur.sql(
        f"SELECT {quote_ident(key)}::BIGINT AS key, {quote_ident(column)}::VARCHAR AS text "
        f"FROM {quote_ident(dataset)} ORDER BY 1"
    ).to_arrow_table()


def _keys_and_texts(rows: pa.Table) -> tuple[np.ndarray, list[str]]:
    keys = rows.column("key").to_numpy().astype(np.int64, copy=False)
    # A NULL text is indexed as the empty string, so every row has a vector and a filter
    # that returns it never looks like a stale index.
    texts = [text or "" for text in rows.column("text").to_pylist()]
    return keys, texts


def _fingerprint(model: str, dimension: int, keys: np.ndarray, hashes: list[str]) -> str:
    digest = hashlib.blake2b(digest_size=16)
    digest.update(f"{_FINGERPRINT_VERSION}\0{model}\0{dimension}\0".encode())
    digest.update(np.ascontiguousarray(keys, dtype="<i8").tobytes())
    digest.update("\n".join(hashes).encode())
    return digest.hexdigest()


# --- building ---------------------------------------------------------------------------


def _resolve_columns(lake: Lake, dataset: str, column: str, key: str | None) -> tuple[str, str]:
    info = lake.dataset(dataset)  # NotFoundError for an unknown dataset
    types = {name.lower(): (name, dtype) for name, dtype in info.columns}
    available = ", ".join(name for name, _ in info.columns)
    if column.lower() not in types:
        raise UserError(f"dataset {dataset!r} has no column {column!r}; its columns: {available}")
    text_name, text_type = types[column.lower()]
    if text_type.upper() not in ("VARCHAR", "TEXT", "STRING") and not text_type.upper().startswith("VARCHAR"):
        raise UserError(
            f"column {text_name!r} of {dataset!r} is {text_type}, not text; pass a text column with --column"
        )
    key = key or info.key
    if not key:
        raise UserError(
            f"dataset {dataset!r} has no key column: pass --key naming a unique integer column (e.g. --key worker_id)"
        )
    if key.lower() not in types:
        raise UserError(f"dataset {dataset!r} has no column {key!r} for --key; its columns: {available}")
    key_name, key_type = types[key.lower()]
    if key_type.upper() not in _INTEGER_TYPES:
        raise UserError(
            f"--key {key_name!r} is {key_type}; the index needs a unique integer key column such as worker_id"
        )
    return text_name, key_name


def _check_unique(cur: duckdb.DuckDBPyConnection, dataset: str, key: str) -> None:
    total, distinct, nulls = first_row(  # type: ignore[misc]  # an aggregate: always one row
        cur,
        f"SELECT count(*), count(DISTINCT {quote_ident(key)}), count(*) - count({quote_ident(key)}) "
        f"FROM {quote_ident(dataset)}",
    )
    if nulls:
        raise UserError(
            f"key column {key!r} of {dataset!r} has {nulls} NULL values; the index needs a key on every row"
        )
    if distinct != total:
        raise UserError(
            f"key column {key!r} of {dataset!r} has {total - distinct} duplicate values; pass a unique --key"
        )


def build_index(
    lake: Lake,
    dataset: str,
    column: str,
    *,
    key: str | None = None,
    embedder: Embedder | None = None,
    progress: bool = False,
    ann: bool | None = None,
) -> BuildResult:
    """Embed ``column`` of every row of ``dataset`` and store the index (see module docstring).

    ``key`` defaults to the dataset's catalog key and must be a unique, non-NULL integer
    column. ``embedder`` defaults to the setting ``embed_model``. ``ann`` forces the HNSW
    graph on or off (default: on from :data:`ANN_MIN_ROWS` rows where the ``ann`` extra is
    installed; ``True`` without it is a ``UserError`` naming the extra). Texts already in the
    embedding cache are not embedded again (``result.embedded`` counts model calls' texts).
    Raises ``NotFoundError``/``UserError`` for a bad dataset, column or key (nothing written),
    ``RunError`` when embedding fails or the dataset changes during the build.
    """
    # Lazy (start-up time): embedders (torch) load on first use.
    from agentlake.embed import embed_texts, get_embedder, text_hash

    started = time.perf_counter()
    if ann and not _ann_installed():
        raise missing_extra("ann", "an HNSW graph (ann=True)")
    check_dataset_name(dataset)
    text_column, key_column = _resolve_columns(lake, dataset, column, key)
    embedder = embedder or get_embedder(None, lake.settings)
    with lake.cursor() as cur:
        _check_unique(cur, dataset, key_column)
        # One transaction: the rows and the catalog time come from the same snapshot.
        cur.execute("BEGIN TRANSACTION")
        try:
            read_at = _catalog_updated_at(cur, dataset)
            rows = _read_rows(cur, dataset, key_column, text_column)
        finally:
            cur.execute("COMMIT")
    keys, texts = _keys_and_texts(rows)
    if len(keys) == 0:
        raise UserError(f"dataset {dataset!r} has no rows to index; ingest some first")
    matrix, stats = embed_texts(
        embedder, texts, lake=lake, progress=progress, description=f"embedding {dataset}.{text_column}"
    )
    hashes = [text_hash(text) for text in texts]
    dimension = int(matrix.shape[1])
    info = IndexInfo(
        dataset=dataset,
        text_column=text_column,
        key_column=key_column,
        model=embedder.name,
        dimension=dimension,
        row_count=len(keys),
        fingerprint=_fingerprint(embedder.name, dimension, keys, hashes),
        dataset_updated_at=read_at,
        built_at=utc_now(),
    )
    _store_vectors(lake, info, keys, texts, hashes, matrix, read_at)
    use_ann = ann if ann is not None else _wants_ann(len(keys))
    directory = write_files(lake, info, keys, texts, matrix, ann=use_ann, progress=progress)
    _loaded.pop(_cache_key(lake, dataset), None)
    return BuildResult(
        index=info,
        embedded=stats.embedded,
        cached=stats.cached,
        ann=use_ann,
        files=str(directory),
        elapsed_s=round(time.perf_counter() - started, 3),
    )


def ensure_index(
    lake: Lake,
    dataset: str,
    column: str,
    *,
    key: str | None = None,
    embedder: Embedder | None = None,
    progress: bool = False,
) -> BuildResult | None:
    """Build ``dataset``'s index unless a fresh one over ``column`` already exists.

    Fresh means: same text column and embedder, and no ingest into the dataset since the
    build (the check a search makes). Returns the build, or None when nothing was needed.
    """
    # Lazy (start-up time): embedders (torch) load on first use.
    from agentlake.embed import get_embedder

    embedder = embedder or get_embedder(None, lake.settings)
    current = None
    with lake.cursor() as cur:
        if table_exists(cur, INDEX_TABLE):
            row = first_row(cur, f"SELECT {_INFO_COLUMNS} FROM {INDEX_TABLE} WHERE dataset = ?", [dataset])
            current = _info_from_row(row) if row else None
        updated = _catalog_updated_at(cur, dataset)
    if (
        current is not None
        and current.text_column.lower() == column.lower()
        and (key is None or current.key_column.lower() == key.lower())
        and current.model == embedder.name
        and current.dataset_updated_at == updated
    ):
        return None
    return build_index(lake, dataset, column, key=key, embedder=embedder, progress=progress)


def _store_vectors(
    lake: Lake,
    info: IndexInfo,
    keys: np.ndarray,
    texts: list[str],
    hashes: list[str],
    matrix: np.ndarray,
    read_at: datetime | None,
) -> None:
    import pyarrow as pa

    values = pa.array(np.ascontiguousarray(matrix, dtype=np.float32).reshape(-1))
    incoming = pa.table(
        {
            "key": pa.array(keys, pa.int64()),
            "text": pa.array(texts, pa.string()),
            "text_hash": pa.array(hashes, pa.string()),
            "vec": pa.FixedSizeListArray.from_arrays(values, info.dimension),
        }
    )
    table = vectors_table(info.dataset)

    def store(conn: duckdb.DuckDBPyConnection) -> None:
        # Checked inside the writer's transaction: an ingest that landed while we were
        # embedding would make these vectors describe rows that no longer exist.
        if _catalog_updated_at(conn, info.dataset) != read_at:
            raise RunError(
                f"dataset {info.dataset!r} changed while its index was being built; run the build again "
                "(rows embedded so far are cached)"
            )
        conn.register("_incoming_vectors", incoming)
        try:
            conn.execute(
                f"CREATE OR REPLACE TABLE {quote_ident(table)} AS SELECT key, text, text_hash, "
                f"vec::FLOAT[{info.dimension}] AS vec FROM _incoming_vectors ORDER BY key"
            )
        finally:
            conn.unregister("_incoming_vectors")
        conn.execute(f"DELETE FROM {INDEX_TABLE} WHERE dataset = ?", [info.dataset])
        conn.execute(
            f"INSERT INTO {INDEX_TABLE} ({_INFO_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                info.dataset,
                info.text_column,
                info.key_column,
                info.model,
                info.dimension,
                info.row_count,
                info.fingerprint,
                info.dataset_updated_at,
                info.built_at,
            ],
        )

    lake.write(store)


def drop_index(lake: Lake, dataset: str) -> IndexInfo:
    """Remove ``dataset``'s index: its lake tables rows and its files. Returns what was dropped."""
    info = index_info(lake, dataset)

    def drop(conn: duckdb.DuckDBPyConnection) -> None:
        conn.execute(f"DROP TABLE IF EXISTS {quote_ident(vectors_table(dataset))}")
        conn.execute(f"DELETE FROM {INDEX_TABLE} WHERE dataset = ?", [dataset])

    lake.write(drop)
    _loaded.pop(_cache_key(lake, dataset), None)
    shutil.rmtree(index_root(lake) / dataset, ignore_errors=True)
    return info


# --- files ------------------------------------------------------------------------------


def index_root(lake: Lake) -> Path:
    """Where this lake's index files live: ``<lake dir>/<lake file stem>.indexes/``."""
    return lake.path.parent / f"{lake.path.stem}.indexes"


def _files_dir(lake: Lake, info: IndexInfo) -> Path:
    return index_root(lake) / info.dataset / info.fingerprint


def write_files(
    lake: Lake,
    info: IndexInfo,
    keys: np.ndarray,
    texts: list[str],
    matrix: np.ndarray,
    *,
    ann: bool,
    progress: bool = False,
) -> Path:
    """Write the acceleration files for ``info`` and return their directory.

    Written into a temporary directory and renamed into place, so a reader never sees half
    an index; older fingerprints of the same dataset are removed afterwards.
    """
    final = _files_dir(lake, info)
    parent = final.parent
    parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".building-", dir=parent))
    try:
        np.save(staging / "keys.npy", np.ascontiguousarray(keys, dtype=np.int64))
        np.save(staging / "vectors.npy", np.ascontiguousarray(matrix, dtype=np.float32))
        encoded = [text.encode("utf-8") for text in texts]
        offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum([len(item) for item in encoded], out=offsets[1:])
        np.save(staging / "text_offsets.npy", offsets)
        (staging / "texts.bin").write_bytes(b"".join(encoded))
        if ann:
            _build_ann(staging / "ann.usearch", keys, matrix, progress=progress)
        meta = {"version": _FILES_VERSION, **info.model_dump(mode="json"), "ann": ann}
        (staging / "meta.json").write_text(json.dumps(meta, indent=2))
        if final.exists():
            # Same content rebuilt (say, now with the graph): swap directories. Readers hold
            # their copy in memory, so the old files can go at once.
            retired = Path(tempfile.mkdtemp(prefix=".retired-", dir=parent))
            os.replace(final, retired / "files")
            os.replace(staging, final)
            shutil.rmtree(retired, ignore_errors=True)
        else:
            os.replace(staging, final)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    for other in parent.iterdir():
        if other != final and not other.name.startswith((".building-", ".retired-")):
            shutil.rmtree(other, ignore_errors=True)
    return final


def _ann_installed() -> bool:
    return importlib.util.find_spec("usearch") is not None


def _wants_ann(rows: int) -> bool:
    """Whether an index of ``rows`` rows gets an HNSW graph by default."""
    return rows >= ANN_MIN_ROWS and _ann_installed()


def _build_ann(path: Path, keys: np.ndarray, matrix: np.ndarray, *, progress: bool) -> None:
    from usearch.index import Index

    # Lazy (start-up time): embedders (torch) load on first use.
    from agentlake.embed.cache import progress_bar

    index = Index(
        ndim=matrix.shape[1],
        metric="ip",
        dtype=ANN_DTYPE,
        connectivity=ANN_CONNECTIVITY,
        expansion_add=ANN_EXPANSION_ADD,
        expansion_search=ANN_EXPANSION_SEARCH,
    )
    with progress_bar(progress, len(keys), "building the HNSW graph") as advance:
        done = [0]

        def report(processed: int, total: int) -> bool:
            advance(processed - done[0])
            done[0] = processed
            return True

        # usearch checks the callback's annotations as types; this module's are strings.
        report.__annotations__ = {"processed": int, "total": int, "return": bool}

        index.add(keys.astype(np.uint64), matrix, threads=0, progress=report)
    index.save(str(path))


# --- loading ----------------------------------------------------------------------------


@dataclass
class VectorIndex:
    """A loaded index: the float32 matrix, texts and the optional HNSW graph (the float16 copy
    for wide scans is ``agentlake.lake.widescan``'s, made on the first one).

    Rows are ordered by key; :meth:`rows_of` maps keys to rows. Read-only and shared between
    threads.
    """

    info: IndexInfo
    directory: Path
    keys: np.ndarray
    vectors: np.ndarray
    text_offsets: np.ndarray
    texts: np.ndarray
    ann: Any | None
    _lookup: np.ndarray | None
    _lookup_base: int
    checked_at_token: int | None = None  # the lake's change_token when last found fresh

    def rows_of(self, keys: np.ndarray) -> np.ndarray:
        """Row numbers of ``keys``; ``StaleIndexError`` if any key is not in the index."""
        keys = np.asarray(keys, dtype=np.int64)
        if keys.size == 0:
            return np.zeros(0, dtype=np.int64)
        if self._lookup is not None:
            offset = keys - self._lookup_base
            inside = (offset >= 0) & (offset < len(self._lookup))
            rows = np.full(keys.shape, -1, dtype=np.int64)
            rows[inside] = self._lookup[offset[inside]]
        else:
            rows = np.searchsorted(self.keys, keys)
            rows[rows >= len(self.keys)] = len(self.keys) - 1
            rows = np.where(self.keys[rows] == keys, rows, -1)
        if np.any(rows < 0):
            missing = keys[rows < 0]
            raise StaleIndexError(
                f"the index of {self.info.dataset!r} is stale: {len(missing)} row(s) (e.g. {self.info.key_column} = "
                f"{int(missing[0])}) were added after it was built; run `{self.info.rebuild_command}`"
            )
        return rows

    def text(self, row: int) -> str:
        start, end = int(self.text_offsets[row]), int(self.text_offsets[row + 1])
        return bytes(self.texts[start:end]).decode("utf-8")


_loaded: dict[tuple[str, str], VectorIndex] = {}
_load_lock = threading.Lock()


def _cache_key(lake: Lake, dataset: str) -> tuple[str, str]:
    return (str(lake.path), dataset)


def _open_files(info: IndexInfo, directory: Path) -> VectorIndex | None:
    """Map the files of ``directory`` if they are complete and match ``info``; else None."""
    try:
        meta = json.loads((directory / "meta.json").read_text())
    except (OSError, ValueError):
        return None
    if meta.get("version") != _FILES_VERSION or meta.get("fingerprint") != info.fingerprint:
        return None
    try:
        # Read into memory, not mapped: a search touches a few hundred rows scattered over
        # the matrix, and in a VM each TLB miss on a file map's 4 KB pages costs more than
        # scoring the row. Anonymous memory gets transparent huge pages: 100 scattered rows
        # took 0.43 ms from a pre-faulted map and 0.04 ms from memory.
        keys = np.load(directory / "keys.npy")
        vectors = np.load(directory / "vectors.npy")
        offsets = np.load(directory / "text_offsets.npy")
        texts = np.fromfile(directory / "texts.bin", dtype=np.uint8)
        ann = None
        if meta.get("ann") and _ann_installed():  # without usearch: every row, exactly
            from usearch.index import Index

            # Loaded, not viewed: a view is a little faster once warm (0.27 vs 0.45 ms per
            # search at 500k) but a fresh process pays page faults on it for hundreds of
            # searches (~6 ms each at first).
            ann = Index.restore(str(directory / "ann.usearch"), view=False)
            if ann is None:
                return None
            ann.expansion_search = ANN_EXPANSION_SEARCH  # type: ignore[misc]  # settable; usearch's type says read-only
    except (OSError, ValueError):
        return None
    if len(keys) != info.row_count or vectors.shape != (info.row_count, info.dimension):
        return None
    if len(offsets) != len(keys) + 1 or int(offsets[-1]) != len(texts):
        return None
    lookup, base = None, 0
    if len(keys):
        base = int(keys[0])
        span = int(keys[-1]) - base + 1
        # A dense key range (the usual 1..N) gets an O(1) array; sparse keys use a search.
        if span <= 4 * len(keys) + 1024:
            lookup = np.full(span, -1, dtype=np.int64)
            lookup[np.asarray(keys) - base] = np.arange(len(keys), dtype=np.int64)
    return VectorIndex(
        info=info,
        directory=directory,
        keys=keys,
        vectors=vectors,
        text_offsets=offsets,
        texts=texts,
        ann=ann,
        _lookup=lookup,
        _lookup_base=base,
    )


def _rebuild_files(lake: Lake, info: IndexInfo, *, progress: bool) -> Path:
    """Recreate the files of ``info`` from ``_vectors_<dataset>`` (no embedding)."""
    import pyarrow.compute as pc

    table = lake.read_arrow(
        f"SELECT key, text, text_hash, vec FROM {quote_ident(vectors_table(info.dataset))} ORDER BY key"
    )
    keys = table.column("key").to_numpy().astype(np.int64, copy=False)
    texts = table.column("text").to_pylist()
    hashes = table.column("text_hash").to_pylist()
    if (
        len(keys) != info.row_count
        or _fingerprint(info.model, info.dimension, keys, hashes) != info.fingerprint
    ):
        raise StaleIndexError(
            f"the stored vectors of {info.dataset!r} do not match their index record; run `{info.rebuild_command}`"
        )
    flat = pc.list_flatten(table.column("vec").combine_chunks()).to_numpy(zero_copy_only=False)
    matrix = flat.astype(np.float32, copy=False).reshape(len(keys), info.dimension)
    return write_files(lake, info, keys, texts, matrix, ann=_wants_ann(len(keys)), progress=progress)


def load_index(
    lake: Lake, dataset: str, *, state: IndexInfo | None = None, progress: bool = False
) -> VectorIndex:
    """The loaded index of ``dataset``, checked against the lake on every call.

    ``state`` is the lake's current record (read by the caller to save a query). Files that
    are missing or do not match the record are rebuilt from ``_vectors_<dataset>``; loaded
    indexes are kept per process and reused while the record's fingerprint is unchanged.
    Raises ``NotFoundError``/``UserError`` when there is no index.
    """
    info = state or index_info(lake, dataset)
    key = _cache_key(lake, dataset)
    cached = _loaded.get(key)
    if cached is not None and cached.info.fingerprint == info.fingerprint:
        return cached
    with _load_lock:
        cached = _loaded.get(key)
        if cached is not None and cached.info.fingerprint == info.fingerprint:
            return cached
        directory = _files_dir(lake, info)
        loaded = _open_files(info, directory)
        if loaded is None:
            shutil.rmtree(directory, ignore_errors=True)
            loaded = _open_files(info, _rebuild_files(lake, info, progress=progress))
            if loaded is None:
                raise RunError(
                    f"the index files of {dataset!r} under {directory} could not be written and read back"
                )
        _loaded[key] = loaded
        return loaded


def fresh_index(lake: Lake, dataset: str) -> VectorIndex:
    """The loaded index of ``dataset`` after checking it still describes the dataset.

    The check reads the dataset's catalog ``updated_at`` (every ingest moves it) and compares
    it with the time the loaded index was built from; if they differ, the lake's index record
    is read again (another process may have rebuilt it). It is skipped while the lake's
    ``change_token`` is the one of the last check: nothing can have been written since.
    Raises ``NotFoundError`` (unknown dataset, no index) or :class:`StaleIndexError` naming
    the command that rebuilds it.
    """
    import duckdb

    check_dataset_name(dataset)
    token = lake.change_token
    loaded = _loaded.get(_cache_key(lake, dataset))
    if loaded is not None and loaded.checked_at_token == token:
        return loaded
    with lake.cursor() as cur:
        try:
            rows = cur.execute("SELECT updated_at FROM _catalog WHERE name = ?", [dataset]).fetchall()
        except duckdb.CatalogException:
            rows = []
    if not rows:
        lake.dataset(dataset)  # raises NotFoundError listing the known datasets
        raise NotFoundError(f"unknown dataset {dataset!r}")
    updated = rows[0][0]
    if loaded is None or loaded.info.dataset_updated_at != updated:
        info = index_info(lake, dataset)
        if info.dataset_updated_at != updated:
            raise StaleIndexError(
                f"the index of {dataset!r} is stale: the dataset was ingested into after the index was built; "
                f"run `{info.rebuild_command}` (unchanged rows come from the embedding cache)"
            )
        loaded = load_index(lake, dataset, state=info)
    loaded.checked_at_token = token
    return loaded
