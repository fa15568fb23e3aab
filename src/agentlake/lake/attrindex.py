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
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

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

# A compiled filter: given nothing, the (true, unknown) masks over the index's rows.
Masks = tuple[np.ndarray, np.ndarray]
Plan = Callable[[], Masks]


@dataclass
class _Column:
    kind: str  # "text" or "number"
    valid: np.ndarray  # not NULL
    values: np.ndarray  # text: int32 codes (-1 for NULL); number: int64 or float64
    codes: dict[str, int] = field(default_factory=dict)


class _Unanswerable(Exception):
    """The fragment uses something the index does not answer: ask DuckDB."""


class AttributeIndex:
    """The indexed columns of one dataset, rows ordered by key. Read-only once built; shared
    between threads."""

    def __init__(self, keys: np.ndarray, columns: dict[str, _Column]) -> None:
        self.keys = keys
        self.columns = columns

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
                counts = cur.execute(
                    "SELECT count(*), "
                    + ", ".join(f"approx_count_distinct({quote_ident(name)})" for name in texts)
                    + f" FROM {quote_ident(dataset)}"
                ).fetchone()
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

    def keys_of(self, plan: Plan) -> np.ndarray:
        """The keys of the rows ``plan`` keeps, in key order."""
        true, _unknown = plan()
        return self.keys[true]

    # --- compiling a parse tree into masks ------------------------------------------------

    def _compile(self, node: dict[str, Any]) -> Plan:
        kind = node.get("type")
        children = node.get("children") or []
        if kind in ("CONJUNCTION_AND", "CONJUNCTION_OR"):
            parts = [self._compile(child) for child in children]
            return _conjunction(parts, kind == "CONJUNCTION_AND")
        if kind == "OPERATOR_NOT" and len(children) == 1:
            inner = self._compile(children[0])

            def negated() -> Masks:
                true, unknown = inner()
                return ~true & ~unknown, unknown

            return negated
        if kind in ("OPERATOR_IS_NULL", "OPERATOR_IS_NOT_NULL") and len(children) == 1:
            column = self._column(children[0])
            want_null = kind == "OPERATOR_IS_NULL"
            return lambda: (~column.valid if want_null else column.valid.copy(), np.zeros_like(column.valid))
        if kind in ("COMPARE_IN", "COMPARE_NOT_IN") and len(children) >= 2:
            column = self._column(children[0])
            values = [_literal(child) for child in children[1:]]
            return _membership(column, values, negate=kind == "COMPARE_NOT_IN")
        if kind == "COMPARE_BETWEEN":
            column = self._column(node.get("input"))
            low, high = _literal(node.get("lower")), _literal(node.get("upper"))
            return _conjunction(
                [
                    _comparison(column, "COMPARE_GREATERTHANOREQUALTO", low),
                    _comparison(column, "COMPARE_LESSTHANOREQUALTO", high),
                ],
                True,
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


def _conjunction(parts: list[Plan], both: bool) -> Plan:
    def run() -> Masks:
        true, unknown = parts[0]()
        false = ~true & ~unknown
        for part in parts[1:]:
            other_true, other_unknown = part()
            other_false = ~other_true & ~other_unknown
            if both:
                true, false = true & other_true, false | other_false
            else:
                true, false = true | other_true, false & other_false
        return true, ~true & ~false

    return run


def _comparison(column: _Column, kind: str, value: str | float | int) -> Plan:
    compare = _COMPARE[kind]
    if column.kind == "text":
        if not isinstance(value, str) or kind not in ("COMPARE_EQUAL", "COMPARE_NOTEQUAL"):
            raise _Unanswerable("text compared with a number, or a text range")
        code = column.codes.get(value, -2)
        return lambda: (column.valid & compare(column.values, code), ~column.valid)
    if isinstance(value, str):
        raise _Unanswerable("a number compared with text")
    return lambda: (column.valid & compare(column.values, value), ~column.valid)


def _membership(column: _Column, values: list[str | float | int], *, negate: bool) -> Plan:
    if column.kind == "text":
        if not all(isinstance(value, str) for value in values):
            raise _Unanswerable("text IN numbers")
        wanted = np.array(sorted({column.codes.get(str(value), -2) for value in values}), dtype=np.int32)
    else:
        if any(isinstance(value, str) for value in values):
            raise _Unanswerable("number IN text")
        wanted = np.array(values)  # ints stay int64; a float among them makes every one a float
        if wanted.dtype.kind not in "if":
            raise _Unanswerable("numbers beyond int64")

    def run() -> Masks:
        hit = np.isin(column.values, wanted)
        found = column.valid & (~hit if negate else hit)
        return found, ~column.valid

    return run


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
            held = (stamp, AttributeIndex.build(lake, index.info.dataset, index.info.key_column))
            index.__dict__["_attributes"] = held
    return held[1]
