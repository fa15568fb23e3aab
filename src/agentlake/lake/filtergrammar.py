"""The strict grammar of the filters people write most, parsed in Python without DuckDB.

Owns :func:`parse_simple`: a WHERE fragment made only of bare column names, string and number
literals, ``=``, ``<>``, ``!=``, ``<``, ``<=``, ``>``, ``>=``, ``[NOT] IN (...)``, ``BETWEEN ...
AND ...``, ``IS [NOT] NULL``, ``AND``, ``OR``, ``NOT`` and parentheses gives the same parse
tree DuckDB's ``json_serialize_sql`` gives (without source positions and aliases), so the
attribute index compiles it without the guard's DuckDB call (~0.7 ms per new fragment).
Anything else (functions, casts, quoted names, comments, ``;``, other literals, keywords as
names, deep nesting, a fragment over the guard's length cap) is ``None``: the caller sends it
to the guard (``agentlake.lake.guard``), exactly as before.

A tree from here is for the attribute index only. The text it came from never reaches DuckDB
unless the guard passes it first (``agentlake.lake.search``): this grammar widens nothing the
guard refuses. A property test checks that every fragment it accepts is one the guard accepts
with the same tree, and that the index then keeps exactly the rows DuckDB keeps.
"""

from __future__ import annotations

import re
from typing import Any

from agentlake.lake.guard import MAX_FRAGMENT_CHARS, reserved_words

# Parentheses and NOTs deeper than this are left to the guard (no recursion limit here).
MAX_DEPTH = 32
# Integer literals longer than this are left to the guard (beyond int64, DuckDB's own kinds).
_MAX_DIGITS = 18

_TOKENS = re.compile(
    r"""
    (?P<space>[ \t\r\n]+)
  | (?P<string>'(?:[^'\x00-\x08\x0b\x0c\x0e-\x1f]|'')*')
  | (?P<number>-?[0-9]+(?:\.[0-9]+)?)(?![0-9A-Za-z_.])
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op><>|!=|<=|>=|=|<|>)
  | (?P<punct>[(),])
    """,
    re.VERBOSE,
)
_COMPARE = {
    "=": "COMPARE_EQUAL",
    "<>": "COMPARE_NOTEQUAL",
    "!=": "COMPARE_NOTEQUAL",
    "<": "COMPARE_LESSTHAN",
    "<=": "COMPARE_LESSTHANOREQUALTO",
    ">": "COMPARE_GREATERTHAN",
    ">=": "COMPARE_GREATERTHANOREQUALTO",
}
_WORDS = {"and", "or", "not", "in", "is", "null", "between"}


class _Refused(Exception):
    """Not in the strict grammar: the guard decides."""


def parse_simple(fragment: str) -> dict[str, Any] | None:
    """DuckDB's parse tree of ``fragment`` (stripped) when it is in the strict grammar above,
    as :class:`~agentlake.lake.guard.CheckedWhere` ``tree`` holds it minus ``alias`` and
    ``query_location*`` keys; else ``None`` (never an error: the guard gives those)."""
    text = fragment.strip() if isinstance(fragment, str) else ""
    if not text or len(text) > MAX_FRAGMENT_CHARS:
        return None
    try:
        tokens = _tokenize(text)
        parser = _Parser(tokens)
        tree = parser.disjunction(0)
        if parser.at < len(tokens):
            raise _Refused("text after the condition")
        return tree
    except _Refused:
        return None


def _tokenize(text: str) -> list[tuple[str, str]]:
    """(kind, text) tokens; keywords as kind "word" in lower case."""
    tokens: list[tuple[str, str]] = []
    at = 0
    reserved = reserved_words()
    while at < len(text):
        match = _TOKENS.match(text, at)
        if match is None:
            raise _Refused(f"no token at {at}")
        at = match.end()
        kind = match.lastgroup or ""
        value = match.group()
        if kind == "space":
            continue
        if kind == "name":
            lowered = value.lower()
            if lowered in _WORDS:
                kind, value = "word", lowered
            elif lowered in reserved:
                raise _Refused(f"keyword {value}")
        tokens.append((kind, value))
    return tokens


class _Parser:
    """Recursive descent over SQL's precedence: OR < AND < NOT < comparison."""

    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        self.tokens, self.at = tokens, 0

    def peek(self) -> tuple[str, str]:
        return self.tokens[self.at] if self.at < len(self.tokens) else ("end", "")

    def take(self, kind: str, value: str | None = None) -> str:
        found_kind, found = self.peek()
        if found_kind != kind or (value is not None and found != value):
            raise _Refused(f"expected {value or kind}")
        self.at += 1
        return found

    def taking(self, kind: str, value: str) -> bool:
        if self.peek() == (kind, value):
            self.at += 1
            return True
        return False

    def disjunction(self, depth: int) -> dict[str, Any]:
        return self._chain("or", "CONJUNCTION_OR", self.conjunction, depth)

    def conjunction(self, depth: int) -> dict[str, Any]:
        return self._chain("and", "CONJUNCTION_AND", self.negation, depth)

    def _chain(self, word: str, kind: str, part: Any, depth: int) -> dict[str, Any]:
        # DuckDB flattens nested conjunctions of one kind, parenthesised or not.
        children: list[dict[str, Any]] = []
        while True:
            child = part(depth)
            children.extend(child["children"] if child.get("type") == kind else [child])
            if not self.taking("word", word):
                break
        if len(children) == 1:
            return children[0]
        return {"class": "CONJUNCTION", "type": kind, "children": children}

    def negation(self, depth: int) -> dict[str, Any]:
        if self.taking("word", "not"):
            if depth >= MAX_DEPTH:
                raise _Refused("too deep")
            return _operator("OPERATOR_NOT", [self.negation(depth + 1)])
        return self.predicate(depth)

    def predicate(self, depth: int) -> dict[str, Any]:
        kind, _value = self.peek()
        if kind == "punct" and self.taking("punct", "("):
            if depth >= MAX_DEPTH:
                raise _Refused("too deep")
            inner = self.disjunction(depth + 1)
            self.take("punct", ")")
            return inner
        if kind in ("string", "number"):  # 'x' = column
            constant = self.literal()
            compare = _COMPARE[self.take("op")]
            return {"class": "COMPARISON", "type": compare, "left": constant, "right": self.column()}
        column = self.column()
        kind, value = self.peek()
        if kind == "op":
            self.at += 1
            return {"class": "COMPARISON", "type": _COMPARE[value], "left": column, "right": self.literal()}
        if self.taking("word", "is"):
            negated = self.taking("word", "not")
            self.take("word", "null")
            return _operator("OPERATOR_IS_NOT_NULL" if negated else "OPERATOR_IS_NULL", [column])
        if self.taking("word", "between"):
            lower = self.literal()
            self.take("word", "and")
            return {
                "class": "BETWEEN",
                "type": "COMPARE_BETWEEN",
                "input": column,
                "lower": lower,
                "upper": self.literal(),
            }
        negated = self.taking("word", "not")
        self.take("word", "in")
        self.take("punct", "(")
        values = [self.literal()]
        while self.taking("punct", ","):
            values.append(self.literal())
        self.take("punct", ")")
        membership = _operator("COMPARE_IN", [column, *values])
        return _operator("OPERATOR_NOT", [membership]) if negated else membership

    def column(self) -> dict[str, Any]:
        return {"class": "COLUMN_REF", "type": "COLUMN_REF", "column_names": [self.take("name")]}

    def literal(self) -> dict[str, Any]:
        kind, value = self.peek()
        if kind == "string":
            self.at += 1
            literal = {"kind": "STRING", "text": value[1:-1].replace("''", "'")}
        elif kind == "number":
            self.at += 1
            if "." in value:
                literal = {"kind": "NUMERIC", "text": value}
            elif len(value.lstrip("-")) <= _MAX_DIGITS:
                literal = {"kind": "INTEGER", "text": value}
            else:
                raise _Refused("a long integer")
        else:
            raise _Refused("expected a literal")
        return {"class": "CONSTANT", "type": "VALUE_CONSTANT", "literal": literal}


def _operator(kind: str, children: list[dict[str, Any]]) -> dict[str, Any]:
    return {"class": "OPERATOR", "type": kind, "children": children}
