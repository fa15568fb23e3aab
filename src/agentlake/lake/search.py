"""Hybrid search: a guarded SQL filter on the dataset first, then cosine ranking of the rows it kept.

Owns :func:`hybrid_search` (question in, ranked :class:`Source` out), :func:`search_vector`
(the same from a query vector), the per-row boost hook and the cache of checked filters
(:class:`FilterCache`). The order is fixed: the WHERE fragment is parsed once per distinct
fragment while the lake is unchanged, the attribute index (or DuckDB, for what it cannot
answer) gives the integer keys of the matching rows, and only those rows are scored against
the query. A fragment in the strict grammar of ``agentlake.lake.filtergrammar`` (columns,
literals, comparisons, IN, BETWEEN, IS NULL, AND/OR/NOT) is parsed in Python; any other goes
through the lake's guard (:func:`agentlake.lake.guard.parse_where`, one DuckDB call), and no
fragment's text reaches DuckDB before the guard has passed it.

How rows are scored, by how many there are:

* up to :data:`EXACT_MAX_ROWS` filtered rows: exact float32 cosine (NumPy);
* more filtered rows: a float16 pass over just those rows (``agentlake.lake.widescan``: whole
  contiguous slices of a copy grouped by the most filtered column when the rows lie in a few,
  else gathered in cache-sized blocks), then the best :data:`RERANK_MIN` candidates re-scored
  exactly in float32 (recall@10 = 1.0 in the benchmark);
* no filter: the HNSW graph's candidates re-scored exactly, or an exact scan when the
  dataset is too small to have a graph.

It does not build or store indexes (``agentlake.lake.index``) and does not embed by itself
(``agentlake.embed``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from pydantic import BaseModel, Field

from agentlake.embed import get_embedder
from agentlake.embed.local import quiet_openmp
from agentlake.errors import RunError, UserError
from agentlake.lake.attrindex import AttributeIndex, Plan, attributes_of
from agentlake.lake.bounds import error_line, excerpt
from agentlake.lake.catalog import quote_ident
from agentlake.lake.filtergrammar import parse_simple
from agentlake.lake.guard import parse_where
from agentlake.lake.index import IndexInfo, VectorIndex, fresh_index
from agentlake.lake.lakehouse import QUERY_USER_ERRORS
from agentlake.lake.widescan import layout_for, scan

if TYPE_CHECKING:
    from agentlake.embed import Embedder
    from agentlake.lake import Lake

Boost = Callable[[np.ndarray, np.ndarray], np.ndarray]
"""``boost(keys, scores) -> scores``: int64 keys and float32 cosine scores of candidate rows in,
the adjusted scores (same shape) out. See :func:`hybrid_search`."""


@dataclass(frozen=True)
class KeyBoost:
    """A :data:`Boost` that adds ``weights[key]`` to a row's score and says why: ``why[key]``
    names what is behind it (the lessons of a playbook). Each hit of a search given one carries
    its ``boost`` and those ids (``Source.lesson_ids``)."""

    weights: dict[int, float]
    why: dict[int, list[str]] = field(default_factory=dict)

    def __call__(self, keys: np.ndarray, scores: np.ndarray) -> np.ndarray:
        if not self.weights:
            return scores
        return scores + np.array([self.weights.get(int(key), 0.0) for key in keys], dtype=np.float32)


MAX_K = 1000
EXACT_MAX_ROWS = 4096
RERANK_MIN = 100
MAX_FILTERS = 512
DOC_PREFIXES = {"workers": "W", "clients": "C"}


class Source(BaseModel):
    """One ranked row: what an agent cites and can verify."""

    doc_id: str = Field(description="Stable citation id: dataset prefix and key, e.g. W-7995.")
    key: int = Field(description="The row's integer key (e.g. worker_id).")
    chunk_text: str = Field(description="The indexed text of the row.")
    score: float = Field(description="Ranking score: cosine similarity, after the boost if one was given.")
    similarity: float = Field(
        description="Cosine similarity between the question and the row, before any boost."
    )
    sql_verified: bool = Field(
        description="True when DuckDB confirmed, in this search, that the row matches the filter."
    )
    boost: float = Field(0.0, description="What the boost added to the similarity (score - similarity).")
    lesson_ids: list[str] = Field(
        default_factory=list, description="The lessons behind the boost (a playbook's), when it says."
    )


def doc_prefix(dataset: str) -> str:
    """The doc_id prefix of a dataset: W for workers, C for clients, else its first letter upper-cased."""
    return DOC_PREFIXES.get(dataset, dataset[:1].upper())


@dataclass
class CompiledFilter:
    """A WHERE fragment, its parse tree, and its plan on the attribute index once compiled.

    ``guarded`` is False while only the strict grammar (``agentlake.lake.filtergrammar``) has
    read it: the attribute index may answer it, but its text reaches DuckDB only after the
    guard has passed it (:meth:`FilterCache.guarded`)."""

    text: str
    tree: dict[str, Any]
    token: int  # the lake's change_token when it was checked
    guarded: bool = True
    # (the attribute index, its plan or None when it cannot answer), set as one value so
    # that threads never see a plan beside another index than its own
    compiled: tuple[AttributeIndex, Plan | None] | None = None


class FilterCache:
    """The search filters seen lately: each distinct fragment is parsed once (by the strict
    grammar when it is in it, else by the guard, which checks it) and compiled into an
    attribute-index plan once, while the lake is unchanged.

    Keyed on (lake file, dataset, fragment); an entry is used only while the lake's
    ``change_token`` is the one it was made under, so a write to the lake (which may rebuild
    the attribute index the plan points into) makes the next search parse and compile again.
    At most ``size`` entries, least recently used dropped first. Refusals raise and are never
    kept. Shared between threads.
    """

    def __init__(self, size: int = MAX_FILTERS) -> None:
        self.size = size
        self._entries: OrderedDict[tuple[str, str, str], CompiledFilter] = OrderedDict()
        self._lock = threading.Lock()

    def checked(self, lake: Lake, dataset: str, fragment: str) -> CompiledFilter:
        """The parsed ``fragment`` (stripped, not empty); ``UserError`` if the guard refuses it.

        A fragment in the strict grammar is not sent to the guard here (no DuckDB call): its
        entry is ``guarded=False`` until :meth:`guarded` is asked for its text."""
        key = (str(lake.path), dataset, fragment)
        token = lake.change_token
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry.token == token:
                self._entries.move_to_end(key)
                return entry
        tree = parse_simple(fragment)
        if tree is not None:
            entry = CompiledFilter(fragment.strip(), tree, token, guarded=False)
        else:
            where = parse_where(fragment)
            entry = CompiledFilter(where.text, where.tree, token)
        with self._lock:
            self._entries[key] = entry
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
        return entry

    @staticmethod
    def guarded(entry: CompiledFilter) -> str:
        """``entry``'s text once the guard has passed it (checked now if only the strict
        grammar read it); ``UserError`` if the guard refuses it. The one door to DuckDB."""
        if not entry.guarded:
            parse_where(entry.text)
            entry.guarded = True
        return entry.text

    @staticmethod
    def plan(entry: CompiledFilter, attributes: AttributeIndex) -> Plan | None:
        """``entry``'s plan on ``attributes``, compiled on first use (None: ask DuckDB)."""
        compiled = entry.compiled
        if compiled is None or compiled[0] is not attributes:
            # Two threads may both compile; either plan is the same, so no lock.
            compiled = entry.compiled = (attributes, attributes.compile(entry.tree))
        return compiled[1]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


FILTERS = FilterCache()


quiet_openmp()  # before the float16 scan first imports torch


# --- the lake side ----------------------------------------------------------------------


@dataclass
class _Kept:
    """The index rows a filter kept, and what a wide scan of them needs to know."""

    rows: np.ndarray
    attributes: AttributeIndex | None  # None: DuckDB answered, or its keys are not the index's
    column: str | None  # the text column whose posting lists narrowed the filter


def _filter_rows(lake: Lake, index: VectorIndex, where: CompiledFilter) -> _Kept:
    """Index rows matching ``where``: from the attribute index beside ``index`` when it answers
    the filter exactly (equality, IN and ranges on its columns), else from DuckDB."""
    attributes = attributes_of(lake, index)
    plan = FILTERS.plan(where, attributes)
    if plan is None:
        keys = _duckdb_filter_keys(lake, index.info, FILTERS.guarded(where))
        return _Kept(index.rows_of(keys), attributes if attributes.aligned else None, None)
    positions, column = attributes.narrowed(plan)
    if attributes.aligned:  # the attribute index's rows are the vector index's rows
        return _Kept(positions, attributes, column)
    return _Kept(index.rows_of(attributes.keys[positions]), None, None)


def _duckdb_filter_keys(lake: Lake, info: IndexInfo, fragment: str) -> np.ndarray:
    """Keys of the rows matching ``fragment``, from DuckDB, under the lake's bounded read."""
    import duckdb

    sql = (
        f"SELECT {quote_ident(info.key_column)}::BIGINT AS k FROM {quote_ident(info.dataset)} "
        f"WHERE ({fragment}\n)"  # the newline keeps a trailing -- comment off the parenthesis
    )
    try:
        with lake.bounded(what="the search filter") as cur:
            keys = cur.execute(sql).fetchnumpy()["k"]
    except QUERY_USER_ERRORS as exc:
        raise UserError(
            f"filter {excerpt(fragment)} failed on {info.dataset!r}: {error_line(exc)}; fix the filter"
        ) from None
    except duckdb.Error as exc:
        raise RunError(f"the search filter failed while running: {error_line(exc)}") from exc
    return np.asarray(keys, dtype=np.int64)


# --- scoring ----------------------------------------------------------------------------


def _top(scores: np.ndarray, keys: np.ndarray, count: int) -> np.ndarray:
    """Positions of the ``count`` best scores, best first; ties broken by the smaller key, also
    at the cut, so the answer does not depend on the order the rows came in."""
    if count < len(scores):
        part = np.argpartition(-scores, count - 1)[:count]
        cut = scores[part].min()
        above = np.flatnonzero(scores > cut)
        tied = np.flatnonzero(scores == cut)
        if len(above) + len(tied) > count:
            tied = tied[np.argsort(keys[tied], kind="stable")[: count - len(above)]]
            part = np.concatenate([above, tied])
    else:
        part = np.arange(len(scores))
    order = np.lexsort((keys[part], -scores[part]))
    return part[order]


def _boosted(boost: Boost | None, keys: np.ndarray, scores: np.ndarray) -> np.ndarray:
    if boost is None:
        return scores
    try:
        out = np.asarray(boost(keys.copy(), scores.copy()), dtype=np.float32)
    except (UserError, RunError):
        raise
    except Exception as exc:
        raise RunError(f"the search boost hook failed: {type(exc).__name__}: {exc}") from exc
    if out.shape != scores.shape or not np.all(np.isfinite(out)):
        raise RunError(
            f"the search boost hook must return {scores.shape[0]} finite scores (one per key), got shape {out.shape}"
        )
    return out


def _rank_rows(
    index: VectorIndex,
    rows: np.ndarray,
    query: np.ndarray,
    k: int,
    boost: Boost | None,
    kept: _Kept | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rows, cosine, score) of the ``k`` best among ``rows``, best first (``kept``: how a
    filter chose them, for the layout of a wide scan)."""
    if len(rows) > EXACT_MAX_ROWS:
        attributes, column = (kept.attributes, kept.column) if kept is not None else (None, None)
        approx = scan(layout_for(index, attributes, column), rows, query)
        keys = index.keys[rows]
        pool = _top(_boosted(boost, keys, approx), keys, max(RERANK_MIN, 10 * k))
        rows = rows[pool]
    keys = index.keys[rows]
    # einsum, not ``@``: a matrix-vector product of a few thousand rows is too small for BLAS's
    # threads, which on a busy machine wait for a core (2,000 rows: 17 ms against 1.5 ms at load 7).
    cosine = np.einsum("ij,j->i", index.vectors[rows], query).astype(np.float32, copy=False)
    scores = _boosted(boost, keys, cosine)
    best = _top(scores, keys, k)
    return rows[best], cosine[best], scores[best]


def _ann_rows(index: VectorIndex, query: np.ndarray, k: int) -> np.ndarray:
    count = min(len(index.keys), max(RERANK_MIN, 10 * k))
    matches = cast(Any, index.ann).search(query, count, threads=1)  # called only with an HNSW graph
    keys = np.asarray(matches.keys, dtype=np.uint64).astype(np.int64)
    return index.rows_of(keys)


# --- the public functions ---------------------------------------------------------------


def search_vector(
    lake: Lake,
    dataset: str,
    vector: np.ndarray,
    *,
    where: str | None = None,
    k: int = 10,
    boost: Boost | None = None,
) -> list[Source]:
    """Rank the rows of ``dataset`` matching ``where`` by cosine similarity to ``vector``.

    ``vector`` must have the index's dimension (it is normalised here). Everything else is
    as in :func:`hybrid_search`, which embeds a question and calls this.
    """
    checked = _check_inputs(lake, dataset, where, k)
    return _search(lake, fresh_index(lake, dataset), vector, checked, k, boost)


def _check_inputs(lake: Lake, dataset: str, where: str | None, k: int) -> CompiledFilter | None:
    """The checked filter (or None); ``UserError`` for a bad ``k`` or a refused filter."""
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise UserError(f"k must be an integer from 1 to {MAX_K} (got {k!r})")
    if where is None:
        return None
    if not where.strip():
        raise UserError(
            "empty filter: pass a WHERE condition such as \"role = 'Welder' AND state = 'OH'\", or none"
        )
    return FILTERS.checked(lake, dataset, where.strip())


def _search(
    lake: Lake,
    index: VectorIndex,
    vector: np.ndarray,
    where: CompiledFilter | None,
    k: int,
    boost: Boost | None,
) -> list[Source]:
    info = index.info
    dataset = info.dataset
    query = np.asarray(vector, dtype=np.float32).reshape(-1)
    if query.shape[0] != info.dimension:
        raise UserError(
            f"the query vector has {query.shape[0]} dimensions; the index of {dataset!r} has {info.dimension}"
        )
    norm = float(np.linalg.norm(query))
    if not np.isfinite(norm) or norm == 0:
        raise UserError("the query vector is zero or not finite")
    query = query / norm

    if where is not None:
        kept = _filter_rows(lake, index, where)
        if kept.rows.size == 0:
            return []
        rows, cosine, scores = _rank_rows(index, kept.rows, query, k, boost, kept)
    elif index.ann is not None:
        rows, cosine, scores = _rank_rows(index, _ann_rows(index, query, k), query, k, boost)
    else:
        rows, cosine, scores = _rank_rows(index, np.arange(len(index.keys), dtype=np.int64), query, k, boost)

    prefix = doc_prefix(dataset)
    why = boost.why if isinstance(boost, KeyBoost) else {}
    return [
        Source(
            doc_id=f"{prefix}-{int(index.keys[row])}",
            key=int(index.keys[row]),
            chunk_text=index.text(int(row)),
            score=round(float(score), 6),
            similarity=round(float(cos), 6),
            sql_verified=where is not None,
            boost=round(float(score) - float(cos), 6),
            lesson_ids=list(why.get(int(index.keys[row]), [])),
        )
        for row, cos, score in zip(rows, cosine, scores, strict=True)
    ]


def hybrid_search(
    lake: Lake,
    dataset: str,
    question: str,
    *,
    where: str | None = None,
    k: int = 10,
    embedder: Embedder | None = None,
    boost: Boost | None = None,
) -> list[Source]:
    """The ``k`` rows of ``dataset`` that best answer ``question``, among those matching ``where``.

    ``where`` is a SQL WHERE fragment (``"role = 'Welder' AND state = 'OH'"``) checked by the
    lake's guard and run by DuckDB first; only matching rows are ranked, and their sources
    carry ``sql_verified=True``. Without ``where`` the whole dataset is ranked semantically
    (``sql_verified=False``). ``embedder`` defaults to the one the index was built with;
    another model is refused.

    ``boost(keys, scores) -> scores`` adjusts the ranking per row (lessons use it to raise or
    lower workers): it receives the candidates' int64 keys and float32 cosine scores and
    returns new scores of the same shape; a row's ``score`` is its boosted value and
    ``similarity`` the raw cosine. It must be a pure function of its inputs: with a filter
    it sees every matching row (wide filters call it twice: on approximate scores to pick
    candidates, then on their exact scores); without a filter it sees the nearest-neighbour
    candidates only (at least 100, or 10 x k), so it can reorder but not reach far-away rows.

    Raises ``NotFoundError`` (unknown dataset or no index), ``UserError`` (refused filter,
    bad k, a stale index with the command that rebuilds it), ``RunError`` (the filter timed
    out, embedding failed, the boost hook failed).
    """
    if not isinstance(question, str) or not question.strip():
        raise UserError(
            'empty question: say what to look for, e.g. "certified welder with forklift experience"'
        )
    checked = _check_inputs(lake, dataset, where, k)
    index = fresh_index(lake, dataset)
    info = index.info
    embedder = embedder or get_embedder(info.model, lake.settings)
    if embedder.name != info.model:
        raise UserError(
            f"the index of {dataset!r} was built with {info.model}, not {embedder.name}; search with the same "
            f"embedder or rebuild with `{info.rebuild_command}`"
        )
    vector = embedder.embed([question.strip()])[0]
    return _search(lake, index, vector, checked, k, boost)
