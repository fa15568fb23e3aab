"""The attribute index: the filters people write most, answered without a scan in DuckDB.

Owns, per dataset, its low-cardinality text columns as dictionary codes and its numeric columns
as arrays, row-aligned with the dataset's keys, and the compiling of a checked WHERE fragment
(the parse tree the guard made of it with DuckDB's own parser, ``json_serialize_sql``) into NumPy masks under SQL's
three-valued logic: ``=``, ``<>``, ``IN``, ``NOT IN`` on text and numbers, ``<``, ``<=``,
``>``, ``>=``, ``BETWEEN`` on numbers, ``IS [NOT] NULL``, ``AND``, ``OR``, ``NOT``. Anything
else (functions, casts, ``LIKE``, unknown columns, text ranges, mixed types, a column it did not
index) is not answered: :meth:`AttributeIndex.compile` returns ``None`` and the caller asks
DuckDB, so a search's results are the same either way (a property test compares the two on
random filters). It does not own the vector index it sits beside (``index.py``), nor the
guard: fragments come checked.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from agentlake.lake.catalog import quote_ident

if TYPE_CHECKING:
    from agentlake.lake.index import VectorIndex
    from agentlake.lake.lakehouse import Lake

# Text columns with more distinct values than this, or than half their rows, are left to
# DuckDB (free text, names, ids): the index is for low-cardinality columns.
MAX_TEXT_DISTINCT = 5000
_INTEGER_TYPES = {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER"}
_FLOAT_TYPES = {"FLOAT", "DOUBLE", "REAL"}

# The (true, unknown) masks of a condition over some rows, under SQL's three-valued logic.
Masks = tuple[np.ndarray, np.ndarray]
# Rows that include every row a condition keeps, and the text column whose postings gave them.
Candidates = tuple[np.ndarray, str | None]


@dataclass
class _Column:
    kind: str  # "text" or "number"
    valid: np.ndarray  # not NULL
    values: np.ndarray  # text: int32 codes (-1 for NULL); number: int64 or float64
    codes: dict[str, int] = field(default_factory=dict)
    name: str = ""
    _postings: tuple[np.ndarray, np.ndarray] | None = None

    def postings(self) -> tuple[np.ndarray, np.ndarray]:
        """(rows grouped by code, NULLs first and each group in row order; ``starts``): the
        rows of code ``c`` are ``rows[starts[c + 1]:starts[c + 2]]``. Text columns only; made
        on first use (one stable sort, ~20 ms at 500k rows) and kept."""
        held = self._postings
        if held is None:
            with _postings_lock:
                held = self._postings
                if held is None:
                    shifted = self.values + 1
                    rows = np.argsort(shifted, kind="stable").astype(np.int64)
                    starts = np.zeros(len(self.codes) + 2, dtype=np.int64)
                    np.cumsum(np.bincount(shifted, minlength=len(self.codes) + 1), out=starts[1:])
                    held = self._postings = (rows, starts)
        return held

    def rows_with(self, codes: list[int]) -> np.ndarray:
        """The rows holding any of ``codes`` (codes not in the column hold none), grouped by code."""
        rows, starts = self.postings()
        parts = [rows[starts[code + 1] : starts[code + 2]] for code in codes if 0 <= code < len(self.codes)]
        if not parts:
            return np.zeros(0, dtype=np.int64)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    @property
    def nbytes(self) -> int:
        held = [self.valid, self.values, *(self._postings or ())]
        return sum(array.nbytes for array in held)


_postings_lock = threading.Lock()


class Plan:
    """A compiled condition. ``masks(rows)`` are its (true, unknown) masks over ``rows`` (all
    rows when None); ``candidates()`` is, when posting lists give it cheaply, a superset of the
    rows where it is true (``exact`` when it is exactly those rows) and the text column whose
    posting lists gave them, else None."""

    exact = False

    def masks(self, rows: np.ndarray | None) -> Masks:
        raise NotImplementedError

    def candidates(self) -> Candidates | None:
        return None


class _Unanswerable(Exception):
    """The fragment uses something the index does not answer: ask DuckDB."""


class AttributeIndex:
    """The indexed columns of one dataset, rows ordered by key. Read-only once built; shared
    between threads."""

    def __init__(self, keys: np.ndarray, columns: dict[str, _Column]) -> None:
        self.keys = keys
        self.columns = columns
        self.aligned = False  # its rows are its vector index's rows (set by attributes_of)

    @classmethod
    def build(cls, lake: Lake, dataset: str, key_column: str) -> AttributeIndex:
        """Read ``dataset``'s keys and indexable columns from the lake (one query)."""
        with lake.cursor() as cur:
            described = cur.execute(
                "SELECT column_name, data_type FROM duckdb_columns() WHERE schema_name = 'main' AND table_name = ?",
                [dataset],
            ).fetchall()
            wanted = [
                (name, kind)
                for name, kind in described
                if kind == "VARCHAR" or kind in _INTEGER_TYPES or kind in _FLOAT_TYPES
            ]
            texts = [name for name, kind in wanted if kind == "VARCHAR"]
            if texts:  # free text is not fetched at all: a sketch of each column's distinct count first
                counts = cast(
                    tuple[Any, ...],  # an aggregate: one row
                    cur.execute(
                        "SELECT count(*), "
                        + ", ".join(f"approx_count_distinct({quote_ident(name)})" for name in texts)
                        + f" FROM {quote_ident(dataset)}"
                    ).fetchone(),
                )
                cap = _text_cap(int(counts[0]))
                wide = {name for name, seen in zip(texts, counts[1:], strict=True) if seen > cap * 1.1}
                wanted = [(name, kind) for name, kind in wanted if name not in wide]
            selected = ", ".join(quote_ident(name) for name, _ in wanted)
            fetched = cur.execute(
                f"SELECT {quote_ident(key_column)}::BIGINT AS __key{', ' if selected else ''}{selected} "
                f"FROM {quote_ident(dataset)} ORDER BY 1"
            ).fetchnumpy()
        keys = np.asarray(fetched["__key"], dtype=np.int64)
        columns: dict[str, _Column] = {}
        for name, kind in wanted:
            column = _column(fetched[name], kind)
            if column is not None:
                column.name = name.lower()
                columns[name.lower()] = column
        return cls(keys, columns)

    def compile(self, tree: dict[str, Any]) -> Plan | None:
        """The plan of a checked WHERE condition's parse tree (the guard's
        :class:`~agentlake.lake.guard.CheckedWhere` ``tree``), or ``None`` when the index
        cannot answer it exactly. Plans are cheap to keep: the caller caches them per
        fragment (``agentlake.lake.search``)."""
        try:
            return self._compile(tree)
        except (_Unanswerable, ValueError, OverflowError, TypeError, KeyError, IndexError):
            return None  # DuckDB answers it

    def positions(self, plan: Plan) -> np.ndarray:
        """The rows (positions in :attr:`keys`) ``plan`` keeps, in no particular order."""
        return self.narrowed(plan)[0]

    def narrowed(self, plan: Plan) -> tuple[np.ndarray, str | None]:
        """(the rows ``plan`` keeps, in no particular order; the text column whose posting
        lists gave them, or None). With posting lists (an equality or IN on a text column under
        the top AND/OR), the plan's masks are checked over just those rows; else over every row."""
        found = plan.candidates()
        if found is None:
            true, _unknown = plan.masks(None)
            return np.flatnonzero(true), None
        candidates, column = found
        if plan.exact:
            return candidates, column
        true, _unknown = plan.masks(candidates)
        return candidates[true], column

    def keys_of(self, plan: Plan) -> np.ndarray:
        """The keys of the rows ``plan`` keeps, in no particular order."""
        return self.keys[self.positions(plan)]

    @property
    def nbytes(self) -> int:
        """Memory held: keys, columns and the posting lists made so far."""
        return self.keys.nbytes + sum(column.nbytes for column in self.columns.values())

    # --- compiling a parse tree into masks ------------------------------------------------

    def _compile(self, node: dict[str, Any]) -> Plan:
        kind = node.get("type")
        children = node.get("children") or []
        if kind in ("CONJUNCTION_AND", "CONJUNCTION_OR"):
            parts = [self._compile(child) for child in children]
            return _Conjunction(parts, both=kind == "CONJUNCTION_AND")
        if kind == "OPERATOR_NOT" and len(children) == 1:
            return _Not(self._compile(children[0]))
        if kind in ("OPERATOR_IS_NULL", "OPERATOR_IS_NOT_NULL") and len(children) == 1:
            return _IsNull(self._column(children[0]), want_null=kind == "OPERATOR_IS_NULL")
        if kind in ("COMPARE_IN", "COMPARE_NOT_IN") and len(children) >= 2:
            column = self._column(children[0])
            values = [_literal(child) for child in children[1:]]
            return _membership(column, values, negate=kind == "COMPARE_NOT_IN")
        if kind == "COMPARE_BETWEEN":
            column = self._column(node.get("input"))
            low, high = _literal(node.get("lower")), _literal(node.get("upper"))
            return _Conjunction(
                [
                    _comparison(column, "COMPARE_GREATERTHANOREQUALTO", low),
                    _comparison(column, "COMPARE_LESSTHANOREQUALTO", high),
                ],
                both=True,
            )
        if node.get("class") == "COMPARISON" and kind in _COMPARE:
            left, right = node.get("left") or {}, node.get("right") or {}
            if left.get("class") != "COLUMN_REF":
                left, right, kind = right, left, _FLIPPED[kind]
            return _comparison(self._column(left), kind, _literal(right))
        raise _Unanswerable(kind)

    def _column(self, node: Any) -> _Column:
        if not isinstance(node, dict) or node.get("class") != "COLUMN_REF":
            raise _Unanswerable("not a column")
        names = node.get("column_names") or []
        column = self.columns.get(str(names[0]).lower()) if len(names) == 1 else None
        if column is None:
            raise _Unanswerable(f"column {names}")
        return column


_COMPARE = {
    "COMPARE_EQUAL": np.equal,
    "COMPARE_NOTEQUAL": np.not_equal,
    "COMPARE_LESSTHAN": np.less,
    "COMPARE_LESSTHANOREQUALTO": np.less_equal,
    "COMPARE_GREATERTHAN": np.greater,
    "COMPARE_GREATERTHANOREQUALTO": np.greater_equal,
}
_FLIPPED = {
    "COMPARE_EQUAL": "COMPARE_EQUAL",
    "COMPARE_NOTEQUAL": "COMPARE_NOTEQUAL",
    "COMPARE_LESSTHAN": "COMPARE_GREATERTHAN",
    "COMPARE_LESSTHANOREQUALTO": "COMPARE_GREATERTHANOREQUALTO",
    "COMPARE_GREATERTHAN": "COMPARE_LESSTHAN",
    "COMPARE_GREATERTHANOREQUALTO": "COMPARE_LESSTHANOREQUALTO",
}


def _over(column: _Column, rows: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """(valid, values) of ``column`` at ``rows`` (every row when None)."""
    if rows is None:
        return column.valid, column.values
    return column.valid[rows], column.values[rows]


class _Conjunction(Plan):
    def __init__(self, parts: list[Plan], *, both: bool) -> None:
        self.parts, self.both = parts, both
        self.exact = not both and all(part.exact for part in parts)

    def masks(self, rows: np.ndarray | None) -> Masks:
        true, unknown = self.parts[0].masks(rows)
        false = ~true & ~unknown
        for part in self.parts[1:]:
            other_true, other_unknown = part.masks(rows)
            other_false = ~other_true & ~other_unknown
            if self.both:
                true, false = true & other_true, false | other_false
            else:
                true, false = true | other_true, false & other_false
        return true, ~true & ~false

    def candidates(self) -> Candidates | None:
        found = [part.candidates() for part in self.parts]
        known = [pair for pair in found if pair is not None]
        if self.both:  # the smallest superset; the masks over it do the rest
            return min(known, key=lambda pair: len(pair[0])) if known else None
        if len(known) < len(found):
            return None
        columns = {column for _, column in known}
        rows = np.unique(np.concatenate([rows for rows, _ in known]))
        return rows, columns.pop() if len(columns) == 1 else None


class _Not(Plan):
    def __init__(self, inner: Plan) -> None:
        self.inner = inner

    def masks(self, rows: np.ndarray | None) -> Masks:
        true, unknown = self.inner.masks(rows)
        return ~true & ~unknown, unknown


class _IsNull(Plan):
    def __init__(self, column: _Column, *, want_null: bool) -> None:
        self.target, self.want_null = column, want_null

    def masks(self, rows: np.ndarray | None) -> Masks:
        valid, _values = _over(self.target, rows)
        return (~valid if self.want_null else valid.copy()), np.zeros_like(valid)


class _Compare(Plan):
    def __init__(self, column: _Column, kind: str, value: str | float | int) -> None:
        self.target, self.compare, self.value = column, _COMPARE[kind], value

    def masks(self, rows: np.ndarray | None) -> Masks:
        valid, values = _over(self.target, rows)
        return valid & self.compare(values, self.value), ~valid


class _TextEqual(_Compare):
    """``text = 'x'``: its rows are one posting list."""

    exact = True

    def __init__(self, column: _Column, code: int) -> None:
        super().__init__(column, "COMPARE_EQUAL", code)

    def candidates(self) -> Candidates | None:
        return self.target.rows_with([int(self.value)]), self.target.name


class _TextIn(Plan):
    """``text [NOT] IN (...)``: a lookup table over the codes (``np.isin`` is 7x slower here);
    when not negated, its rows are the posting lists of its codes."""

    def __init__(self, column: _Column, codes: list[int], *, negate: bool) -> None:
        self.target, self.codes, self.negate = column, codes, negate
        self.table = np.zeros(len(column.codes) + 1, dtype=bool)  # slot 0: NULL (code -1)
        self.table[[code + 1 for code in codes if code >= 0]] = True
        self.exact = not negate

    def masks(self, rows: np.ndarray | None) -> Masks:
        valid, values = _over(self.target, rows)
        hit = self.table[values + 1]
        return valid & (~hit if self.negate else hit), ~valid

    def candidates(self) -> Candidates | None:
        return None if self.negate else (self.target.rows_with(self.codes), self.target.name)


class _NumberIn(Plan):
    def __init__(self, column: _Column, wanted: np.ndarray, *, negate: bool) -> None:
        self.target, self.wanted, self.negate = column, wanted, negate

    def masks(self, rows: np.ndarray | None) -> Masks:
        valid, values = _over(self.target, rows)
        hit = np.isin(values, self.wanted)
        return valid & (~hit if self.negate else hit), ~valid


def _comparison(column: _Column, kind: str, value: str | float | int) -> Plan:
    if column.kind == "text":
        if not isinstance(value, str) or kind not in ("COMPARE_EQUAL", "COMPARE_NOTEQUAL"):
            raise _Unanswerable("text compared with a number, or a text range")
        code = column.codes.get(value, -2)
        return _TextEqual(column, code) if kind == "COMPARE_EQUAL" else _Compare(column, kind, code)
    if isinstance(value, str):
        raise _Unanswerable("a number compared with text")
    return _Compare(column, kind, value)


def _membership(column: _Column, values: list[str | float | int], *, negate: bool) -> Plan:
    if column.kind == "text":
        if not all(isinstance(value, str) for value in values):
            raise _Unanswerable("text IN numbers")
        codes = sorted({column.codes.get(str(value), -2) for value in values})
        return _TextIn(column, codes, negate=negate)
    if any(isinstance(value, str) for value in values):
        raise _Unanswerable("number IN text")
    wanted = np.array(values)  # ints stay int64; a float among them makes every one a float
    if wanted.dtype.kind not in "if":
        raise _Unanswerable("numbers beyond int64")
    return _NumberIn(column, wanted, negate=negate)


def _literal(node: Any) -> str | float | int:
    """A constant of the tree: text, an integer or a float; anything else is unanswerable
    (NULL, dates, negative numbers parsed as a function call...)."""
    if not isinstance(node, dict) or node.get("class") != "CONSTANT":
        raise _Unanswerable("not a constant")
    literal = node.get("literal")
    if not isinstance(literal, dict):
        raise _Unanswerable("constant of an unknown shape")
    kind, text = literal.get("kind"), literal.get("text")
    if not isinstance(text, str):
        raise _Unanswerable("constant without text")
    if kind == "STRING":
        return text
    if kind in ("INTEGER", "BIGINT", "HUGEINT"):
        return int(text)
    if kind in ("NUMERIC", "DECIMAL", "DOUBLE", "FLOAT"):
        return float(text)
    raise _Unanswerable(f"constant of kind {kind}")


def _text_cap(rows: int) -> int:
    """Most distinct values a text column of ``rows`` rows may have to be indexed."""
    return min(MAX_TEXT_DISTINCT, max(64, rows // 2))


def _column(raw: Any, kind: str) -> _Column | None:
    """One fetched column as the index keeps it, or ``None`` when it is not worth or not safe
    to index (too many distinct texts; floats holding NaN, which DuckDB orders above all)."""
    valid = ~np.ma.getmaskarray(raw)
    data = np.ma.getdata(raw)
    if kind == "VARCHAR":
        present = data[valid]
        distinct = np.unique(present.astype(str)) if present.size else np.array([], dtype=str)
        if len(distinct) > _text_cap(len(data)):
            return None
        codes = {str(value): number for number, value in enumerate(distinct)}
        values = np.full(len(data), -1, dtype=np.int32)
        values[valid] = np.searchsorted(distinct, present.astype(str)).astype(np.int32)
        return _Column("text", valid, values, codes)
    if kind in _FLOAT_TYPES:
        values = np.asarray(data, dtype=np.float64)
        if np.isnan(values[valid]).any():
            return None
        return _Column("number", valid, values)
    return _Column("number", valid, np.asarray(data, dtype=np.int64))


_build_lock = threading.Lock()


def attributes_of(lake: Lake, index: VectorIndex) -> AttributeIndex:
    """The attribute index beside ``index``, built from the lake on first use and again when
    the dataset has changed since (the vector index's ``dataset_updated_at``)."""
    stamp = index.info.dataset_updated_at
    held = index.__dict__.get("_attributes")
    if held is not None and held[0] == stamp:
        return held[1]
    with _build_lock:
        held = index.__dict__.get("_attributes")
        if held is None or held[0] != stamp:
            built = AttributeIndex.build(lake, index.info.dataset, index.info.key_column)
            built.aligned = np.array_equal(built.keys, index.keys)
            held = (stamp, built)
            index.__dict__["_attributes"] = held
    return held[1]
