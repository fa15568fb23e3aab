"""The attribute index answers a filter with exactly the rows DuckDB keeps, on random filters
(equality, IN, ranges, BETWEEN, IS NULL, AND/OR/NOT) over a table with NULLs in every column,
and answers nothing it cannot answer exactly."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentlake.lake import Lake
from agentlake.lake.attrindex import AttributeIndex
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
numbers = st.one_of(st.integers(0, 13).map(str), st.integers(0, 100).map(lambda n: f"{n / 100:.2f}"))
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
    st.tuples(st.sampled_from(sorted(NUMBERS)), comparisons, numbers).map(lambda t: f"{t[0]} {t[1]} {t[2]}"),
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
    ),
    max_leaves=6,
)


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
