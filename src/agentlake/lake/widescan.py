"""Wide scans: scoring many filtered rows in one pass over memory, without gathering them.

Owns the float16 copy of a vector index that wide filters are scored on, laid out grouped by
one attribute column (rows of each value together, in key order within a value), so that a
filter on that column (``role IN (...)``, ``role = ... AND ...``) keeps rows lying in a few
contiguous slices: each slice is one matrix-vector product at memory bandwidth. Which column:
the text column that narrowed the most wide scans so far (the attribute index's posting lists
say which), chosen at the first wide scan and changed when another column has clearly taken
the lead. Rows scattered over many slices are gathered from the same copy, block by block, as
before. It does not rank, filter or re-score (``agentlake.lake.search``) and builds no index
files: the copy lives in memory beside the loaded index, ~0.8 s to make at 500k x 384.

The pass runs on torch when it is installed (the ``local`` and ``embed`` extras bring it): its
float16 matrix-vector product is the fast one. The base install has no torch, and the same pass
runs on numpy, block by block in float32 (the scores agree to float16's precision; the top
candidates are re-scored exactly either way).
"""

from __future__ import annotations

import functools
import threading
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from agentlake.lake.attrindex import AttributeIndex
    from agentlake.lake.index import VectorIndex

# Score whole slices when they hold at most this many rows per kept row; gather otherwise.
# A contiguous float16 row costs about a fifth of a gathered one (measured, 2 cores).
SLICE_SPAN = 4
# Another column takes the layout over once it has narrowed this many more wide scans
# than twice the current column's.
RELAYOUT_LEAD = 2
_BLOCK_ROWS = 8192
_COPY_ROWS = 65536


@dataclass
class ScanLayout:
    """The float16 rows of an index in layout order: grouped by ``column``'s codes (rows of a
    code in ``order[starts[code + 1]:starts[code + 2]]``), or in key order when ``column`` is
    None."""

    column: str | None
    order: np.ndarray  # int64: the index row at each layout position
    position: np.ndarray  # int64: the layout position of each index row
    codes: np.ndarray | None  # int32: each index row's code + 1 in ``column`` (0: NULL)
    starts: np.ndarray | None  # int64: where each code + 1 begins in layout order
    tensor: Any  # float16 [rows, dimension]: a torch tensor, or a numpy array without torch

    @property
    def nbytes(self) -> int:
        arrays = [self.order, self.position, *(a for a in (self.codes, self.starts) if a is not None)]
        matrix = self.tensor if isinstance(self.tensor, np.ndarray) else self.tensor.numpy()
        return sum(a.nbytes for a in arrays) + matrix.nbytes


class _Layouts:
    """Per loaded index: its current layout and the wide scans' column votes."""

    def __init__(self) -> None:
        self.layout: ScanLayout | None = None
        self.attributes: AttributeIndex | None = None
        self.votes: Counter[str] = Counter()


_lock = threading.Lock()


def layout_for(index: VectorIndex, attributes: AttributeIndex | None, column: str | None) -> ScanLayout:
    """The layout to scan ``index`` with, counting this scan as narrowed by ``column`` (a text
    column of ``attributes``, or None). Made on the first wide scan, remade when another
    column leads the votes by :data:`RELAYOUT_LEAD` times the current one's plus that many."""
    held: _Layouts = index.__dict__.setdefault("_layouts", _Layouts())
    with _lock:
        if attributes is not held.attributes:  # the attribute index was rebuilt: start over
            held.attributes, held.votes = attributes, Counter()
            if held.layout is not None and held.layout.column is not None:
                held.layout = None
        if column is not None:
            held.votes[column] += 1
        current = held.layout
        wanted = _leader(held.votes, current.column if current is not None else None)
        if current is None or (wanted != current.column and wanted is not None):
            held.layout = current = build_layout(index, attributes, wanted)
        return current


def _leader(votes: Counter[str], current: str | None) -> str | None:
    if not votes:
        return current
    leader, count = votes.most_common(1)[0]
    if current is None or leader == current:
        return leader
    return leader if count >= RELAYOUT_LEAD * votes[current] + RELAYOUT_LEAD else current


@functools.cache
def _torch() -> Any | None:
    """torch when it is installed, else None (the scan runs on numpy)."""
    try:
        import torch
    except ImportError:
        return None
    return torch


def build_layout(index: VectorIndex, attributes: AttributeIndex | None, column: str | None) -> ScanLayout:
    """The float16 copy of ``index``'s vectors grouped by ``column`` (None: in key order)."""
    torch = _torch()
    rows = len(index.keys)
    codes = starts = None
    if column is not None and attributes is not None and column in attributes.columns:
        source = attributes.columns[column]
        order, starts = source.postings()
        codes = (source.values + 1).astype(np.int32)
    else:
        column = None
        order = np.arange(rows, dtype=np.int64)
    position = np.empty(rows, dtype=np.int64)
    position[order] = np.arange(rows, dtype=np.int64)
    matrix = np.empty((rows, index.vectors.shape[1]), dtype=np.float16)
    for start in range(0, rows, _COPY_ROWS):  # blocks: no float32 copy of the whole matrix
        matrix[start : start + _COPY_ROWS] = index.vectors[order[start : start + _COPY_ROWS]]
    return ScanLayout(
        column, order, position, codes, starts, matrix if torch is None else torch.from_numpy(matrix)
    )


def scan(layout: ScanLayout, rows: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Approximate (float16) cosine of index ``rows`` against the unit ``query``, float32.

    Rows lying in few slices of the layout are scored slice by slice, contiguously; otherwise
    they are gathered from the layout in cache-sized blocks.
    """
    positions = layout.position[rows]
    slices = _slices(layout, rows)
    if isinstance(layout.tensor, np.ndarray):  # no torch
        q32 = query.astype(np.float16).astype(np.float32)
        if slices is not None:
            return _scan_slices(None, layout, slices, positions, q32)
        return _scan_gather(None, layout, positions, q32)
    torch: Any = _torch()  # the layout holds a torch tensor: torch is installed
    # One thread: the pass is memory-bound, and on a busy machine a second OpenMP thread
    # that is not scheduled makes every block wait for it (measured 10x slower at load 5).
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.inference_mode():
            q = torch.from_numpy(query.astype(np.float16))
            if slices is not None:
                return _scan_slices(torch, layout, slices, positions, q)
            return _scan_gather(torch, layout, positions, q)
    finally:
        torch.set_num_threads(threads)


def _slices(layout: ScanLayout, rows: np.ndarray) -> list[tuple[int, int]] | None:
    """The layout slices holding ``rows``, if they hold at most :data:`SLICE_SPAN` rows per
    row of ``rows``; else None. Without a column the one slice is every row."""
    total = len(layout.order)
    if layout.codes is None or layout.starts is None:
        return [(0, total)] if total <= SLICE_SPAN * len(rows) else None
    present = np.flatnonzero(np.bincount(layout.codes[rows], minlength=len(layout.starts) - 1))
    bounds = [(int(layout.starts[code]), int(layout.starts[code + 1])) for code in present]
    if sum(end - start for start, end in bounds) > SLICE_SPAN * len(rows):
        return None
    return bounds


def _scan_slices(
    torch: Any, layout: ScanLayout, slices: list[tuple[int, int]], positions: np.ndarray, q: Any
) -> np.ndarray:
    if torch is None:
        scores32 = np.empty(len(layout.order), dtype=np.float32)
        for start, end in slices:
            for at in range(start, end, _BLOCK_ROWS):
                upto = min(end, at + _BLOCK_ROWS)
                scores32[at:upto] = layout.tensor[at:upto].astype(np.float32) @ q
        return scores32[positions]
    scores = torch.empty(len(layout.order), dtype=torch.float16)  # only the slices are written
    for start, end in slices:
        torch.mv(layout.tensor[start:end], q, out=scores[start:end])
    return scores.numpy()[positions].astype(np.float32)


def _scan_gather(torch: Any, layout: ScanLayout, positions: np.ndarray, q: Any) -> np.ndarray:
    # Gathering 50k rows at once moves ~40 MB; blocks of 8k rows stay in cache.
    if torch is None:
        out32 = np.empty(len(positions), dtype=np.float32)
        for start in range(0, len(positions), _BLOCK_ROWS):
            chunk = positions[start : start + _BLOCK_ROWS]
            out32[start : start + len(chunk)] = layout.tensor[chunk].astype(np.float32) @ q
        return out32
    picks = torch.from_numpy(positions)
    out = torch.empty(len(positions), dtype=torch.float16)
    block = torch.empty((min(_BLOCK_ROWS, len(positions)), layout.tensor.shape[1]), dtype=torch.float16)
    for start in range(0, len(positions), _BLOCK_ROWS):
        chunk = picks[start : start + _BLOCK_ROWS]
        part = block[: len(chunk)]
        torch.index_select(layout.tensor, 0, chunk, out=part)
        torch.mv(part, q, out=out[start : start + len(chunk)])
    return out.float().numpy()
