"""The attribute index answers a filter with exactly the rows DuckDB keeps, on random filters
(equality, IN, ranges, BETWEEN, IS NULL, AND/OR/NOT) over a table with NULLs in every column,
and answers nothing it cannot answer exactly. The strict grammar (``lake/filtergrammar.py``),
which spares such filters the guard's DuckDB parse, gives the guard's own tree for every one
of them, and accepts nothing the guard refuses (random filters, and random damage to them)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentlake.errors import UserError
from agentlake.lake import Lake
from agentlake.lake.attrindex import AttributeIndex
from agentlake.lake.filtergrammar import parse_simple
from agentlake.lake.guard import parse_where
from agentlake.settings import load_settings

ROWS = 3000
TEXTS = {
    "role": ["Welder", "welder", "Electrician", "Forklift Operator", "O'Brien crew"],
    "state": ["OH", "PA", "NY", "TX"],
}
NUMBERS = {"score": "DOUBLE", "shifts": "INTEGER"}


def _quoted(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _sql_list(values: list[str]) -> str:
    return "[" + ", ".join(_quoted(value) for value in values) + "]"


# Every column NULL for about one row in ten; values spread by hash so that filters combine.
TABLE = f"""
CREATE TABLE people AS
SELECT i AS id,
  CASE WHEN hash(i, 'r') % 10 = 0 THEN NULL ELSE {_sql_list(TEXTS["role"])}[(1 + hash(i, 'role') % 5)::INTEGER] END AS role,
  CASE WHEN hash(i, 's') % 10 = 0 THEN NULL ELSE {_sql_list(TEXTS["state"])}[(1 + hash(i, 'state') % 4)::INTEGER] END AS state,
  CASE WHEN hash(i, 'c') % 10 = 0 THEN NULL ELSE round((hash(i, 'score') % 101) / 100.0, 2) END::DOUBLE AS score,
  CASE WHEN hash(i, 'h') % 10 = 0 THEN NULL ELSE (hash(i, 'shifts') % 13)::INTEGER END AS shifts,
  'free text ' || i AS note
FROM range({ROWS}) t(i)
"""


@pytest.fixture(scope="module")
def people(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Lake, AttributeIndex]]:
    data_dir: Path = tmp_path_factory.mktemp("attrindex")
    with Lake.open(load_settings(data_dir=data_dir), path=data_dir / "lake.duckdb") as lake:
        lake.write(lambda conn: conn.execute(TABLE))
        yield lake, AttributeIndex.build(lake, "people", "id")


texts = st.sampled_from(sorted(TEXTS)).flatmap(
    lambda column: st.tuples(st.just(column), st.sampled_from([*TEXTS[column], "Absent"]))
)
numbers = st.one_of(
    st.integers(-2, 13).map(str),
    st.integers(-10, 100).map(lambda n: f"{n / 100:.2f}"),
    st.integers(0, 3).map(lambda n: f"{n}.5"),
)
comparisons = st.sampled_from(["=", "<>", "!=", "<", "<=", ">", ">="])

atoms = st.one_of(
    st.tuples(texts, st.sampled_from(["=", "<>", "!="]), st.booleans()).map(
        lambda t: f"{t[0][0]} {t[1]} {_quoted(t[0][1])}" if t[2] else f"{_quoted(t[0][1])} {t[1]} {t[0][0]}"
    ),
    st.tuples(
        st.sampled_from(sorted(TEXTS)), st.booleans(), st.lists(st.integers(0, 5), min_size=1, max_size=4)
    ).map(
        lambda t: (
            f"{t[0]} {'NOT IN' if t[1] else 'IN'} ("
            + ", ".join(_quoted(([*TEXTS[t[0]], "Absent"] * 2)[i]) for i in t[2])
            + ")"
        )
    ),
    st.tuples(st.sampled_from(sorted(NUMBERS)), comparisons, numbers, st.booleans()).map(
        lambda t: f"{t[0]} {t[1]} {t[2]}" if t[3] else f"{t[2]} {t[1]} {t[0]}"
    ),
    st.tuples(st.sampled_from(sorted(NUMBERS)), numbers, numbers).map(
        lambda t: f"{t[0]} BETWEEN {t[1]} AND {t[2]}"
    ),
    st.tuples(st.sampled_from(sorted(NUMBERS)), st.booleans(), st.lists(numbers, min_size=1, max_size=3)).map(
        lambda t: f"{t[0]} {'NOT IN' if t[1] else 'IN'} ({', '.join(t[2])})"
    ),
    st.tuples(st.sampled_from([*sorted(TEXTS), *sorted(NUMBERS)]), st.booleans()).map(
        lambda t: f"{t[0]} IS {'NOT ' if t[1] else ''}NULL"
    ),
)
filters = st.recursive(
    atoms,
    lambda inner: st.one_of(
        st.tuples(inner, inner).map(lambda p: f"({p[0]}) AND ({p[1]})"),
        st.tuples(inner, inner).map(lambda p: f"({p[0]}) OR ({p[1]})"),
        inner.map(lambda x: f"NOT ({x})"),
        # without parentheses: SQL's precedence (NOT over AND over OR) decides
        st.tuples(inner, st.sampled_from([" AND ", " OR ", " and ", "\nOR\t"]), inner).map("".join),
        inner.map(lambda x: f"not {x}"),
    ),
    max_leaves=6,
)


def _without_positions(node: object) -> object:
    """The guard's tree as the strict grammar gives it: no aliases, no source positions."""
    if isinstance(node, dict):
        return {
            key: _without_positions(value)
            for key, value in node.items()
            if key != "alias" and not key.startswith("query_location")
        }
    if isinstance(node, list):
        return [_without_positions(item) for item in node]
    return node


def _index_keys(index: AttributeIndex, fragment: str) -> list[int] | None:
    plan = index.compile(parse_where(fragment).tree)
    return None if plan is None else sorted(index.keys_of(plan).tolist())


def _duckdb_keys(lake: Lake, fragment: str) -> list[int]:
    with lake.cursor() as cur:
        rows = cur.execute(f"SELECT id FROM people WHERE ({fragment}\n) ORDER BY id").fetchall()
    return [row[0] for row in rows]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fragment=filters)
def test_the_index_keeps_exactly_the_rows_duckdb_keeps(
    people: tuple[Lake, AttributeIndex], fragment: str
) -> None:
    lake, index = people
    answered = _index_keys(index, fragment)
    assert answered is not None  # every generated filter is in the subset the index answers
    assert answered == _duckdb_keys(lake, fragment)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fragment=filters)
def test_the_strict_grammar_gives_the_guards_tree_and_duckdbs_rows(
    people: tuple[Lake, AttributeIndex], fragment: str
) -> None:
    lake, index = people
    tree = parse_simple(fragment)
    assert tree is not None  # every generated filter is in the strict grammar
    assert tree == _without_positions(parse_where(fragment).tree)
    plan = index.compile(tree)
    assert plan is not None
    assert sorted(index.keys_of(plan).tolist()) == _duckdb_keys(lake, fragment)


# Pieces that break a filter, or smuggle something into it: statements, comments, quotes,
# functions, casts, other literals, keywords, unknown and qualified names.
DAMAGE = [
    ";",
    "; DROP TABLE people",
    "--",
    "-- x",
    "/*",
    "*/",
    "/* x */",
    "'",
    "''",
    '"',
    '"role"',
    "(",
    ")",
    ",",
    "lower(role)",
    "::INTEGER",
    "CAST(",
    "||",
    "+",
    "-",
    "*",
    ".",
    "1e3",
    ".5",
    "1.",
    "E'x'",
    "x'00'",
    "$$",
    "TRUE",
    "NULL",
    "LIKE",
    "SELECT",
    "FROM people",
    "UNION SELECT 1",
    "ORDER BY 1",
    "LIMIT 1",
    "IS",
    "NOT",
    "IN",
    "AND",
    "OR",
    "BETWEEN",
    "missing",
    "people.role",
    "year",
    "interval",
    "COLLATE",
    "'a\\b'",
    "'\n'",
    "'é'",
    "\x00",
    "\u00a0",
    "\f",
    "99999999999999999999",
]


@settings(max_examples=600, deadline=None)
@given(
    fragment=filters,
    damage=st.lists(
        st.tuples(st.sampled_from(DAMAGE), st.floats(0, 1), st.booleans()), min_size=1, max_size=3
    ),
)
def test_the_strict_grammar_accepts_nothing_the_guard_refuses(
    fragment: str, damage: list[tuple[str, float, bool]]
) -> None:
    for piece, where, spaced in damage:
        at = int(where * len(fragment))
        fragment = fragment[:at] + (f" {piece} " if spaced else piece) + fragment[at:]
    tree = parse_simple(fragment)
    if tree is None:
        return  # the guard decides, as it always did
    try:
        guarded = parse_where(fragment).tree
    except UserError as exc:
        pytest.fail(f"the strict grammar accepted {fragment!r}, which the guard refuses: {exc}")
    assert tree == _without_positions(guarded)


# The grammar's own words, in any order: where its precedence or DuckDB's could differ.
WORDS = [
    "role",
    "shifts",
    "ROLE",
    "year",
    "'OH'",
    "'O''Brien crew'",
    "1",
    "-2",
    "0.50",
    "=",
    "<>",
    "!=",
    "<",
    ">=",
    "IN",
    "NOT",
    "not",
    "AND",
    "OR",
    "IS",
    "NULL",
    "BETWEEN",
    "(",
    ")",
    ",",
]


_TOKEN = re.compile(r"'(?:[^']|'')*'|[A-Za-z_]+|-?[0-9.]+|<>|!=|<=|>=|[=<>(),]")
mutations = st.lists(
    st.tuples(
        st.sampled_from(["drop", "repeat", "swap", "insert"]),
        st.floats(0, 1),
        st.floats(0, 1),
        st.sampled_from(WORDS),
    ),
    min_size=1,
    max_size=2,
)


@settings(max_examples=600, deadline=None)
@given(fragment=filters, changes=mutations)
def test_filters_with_words_moved_the_grammar_accepts_the_guard_reads_alike(
    fragment: str, changes: list[tuple[str, float, float, str]]
) -> None:
    words = _TOKEN.findall(fragment)
    for change, first, second, word in changes:
        i, j = int(first * len(words)), int(second * len(words))
        if change == "insert":
            words.insert(i, word)
        elif words and change == "drop":
            del words[min(i, len(words) - 1)]
        elif words and change == "repeat":
            words.insert(i, words[min(i, len(words) - 1)])
        elif words:
            i, j = min(i, len(words) - 1), min(j, len(words) - 1)
            words[i], words[j] = words[j], words[i]
    fragment = " ".join(words)
    tree = parse_simple(fragment)
    if tree is None:
        return
    try:
        guarded = parse_where(fragment).tree
    except UserError as exc:
        pytest.fail(f"the strict grammar accepted {fragment!r}, which the guard refuses: {exc}")
    assert tree == _without_positions(guarded)


@pytest.mark.parametrize(
    "fragment",
    [
        "role = 'Welder'; DROP TABLE people",
        "role = 'Welder' -- AND state = 'OH'",
        "role = 'Welder' /* comment */",
        "role = 'Welder') OR (1 = 1",
        "role = 'O'Brien crew'",
        "role = 'Welder'' OR 1=1",
        "\"role\" = 'Welder'",
        "lower(role) = 'welder'",
        "shifts = CAST('3' AS INTEGER)",
        "shifts = 1e3",
        "role = E'Welder'",
        "role = 'Welder' OR TRUE",
        "role = (SELECT max(role) FROM people)",
        "people.role = 'Welder'",
        "select = 1",
        "(" * 40 + "shifts = 1" + ")" * 40,
        " OR ".join(["shifts = 1"] * 300),  # over the guard's length cap
        "shifts IN ()",
        "role LIKE 'W%'",
    ],
)
def test_injection_shaped_fragments_are_left_to_the_guard(fragment: str) -> None:
    assert parse_simple(fragment) is None


@pytest.mark.parametrize(
    "fragment",
    [
        "role LIKE 'Weld%'",  # patterns
        "lower(role) = 'welder'",  # functions
        "note = 'free text 1'",  # a text column with too many distinct values
        "state > 'NY'",  # text ranges
        "shifts = '3'",  # a number compared with text
        "role = 3",  # text compared with a number
        "missing = 1",  # no such column
        "shifts IN (1, NULL)",  # NULL constants
    ],
)
def test_what_the_index_cannot_answer_exactly_is_left_to_duckdb(
    people: tuple[Lake, AttributeIndex], fragment: str
) -> None:
    assert _index_keys(people[1], fragment) is None
