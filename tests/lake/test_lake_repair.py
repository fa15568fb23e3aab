"""Repairing a query by what the database's error says, given the types of the columns it reads:
dates written as text or as numbers, a date part named as a column."""

from __future__ import annotations

import pytest

from agentlake.lake.repair import NUMERIC_TYPE, repaired_sql

WEATHER = {"date": "DATE", "temp_max": "DOUBLE", "weather": "VARCHAR"}
LIKE_ON_DATE = (
    "Binder Error: No function matches the given name and argument types '~~(DATE, STRING_LITERAL)'."
)
INT_TO_DATE = "Conversion Error: Unimplemented type for cast (INTEGER -> DATE)"
DATE_VS_INT = (
    "Binder Error: Cannot compare values of type DATE and type INTEGER_LITERAL - an explicit cast is required"
)


def _fixed(sql: str, error: str, columns: dict[str, str]) -> str:
    found = repaired_sql(sql, error, columns)
    assert found is not None
    return found[0]


def test_a_date_compared_with_like_is_compared_as_its_text() -> None:
    sql = "SELECT count(*) FROM w WHERE date LIKE '2014-%' AND temp_max > 30"
    assert _fixed(sql, LIKE_ON_DATE, WEATHER) == (
        "SELECT count(*) FROM w WHERE CAST(\"date\" AS VARCHAR) LIKE '2014-%' AND temp_max > 30"
    )


def test_a_like_pattern_with_slashes_matches_the_iso_text() -> None:
    sql = "SELECT count(*) FROM w WHERE date LIKE '2014/03/%'"
    assert _fixed(sql, LIKE_ON_DATE, WEATHER).endswith("LIKE '2014-03-%'")


def test_a_date_column_equal_to_a_year_compares_its_year() -> None:
    sql = "SELECT sum(n) FROM iowa WHERE source = 'Renewables' AND year = 2010"
    assert _fixed(sql, INT_TO_DATE, {"year": "DATE", "source": "VARCHAR"}).endswith("AND year(year) = 2010")


def test_an_unquoted_date_is_a_date_literal() -> None:
    assert _fixed("SELECT nonfarm FROM us WHERE month=2009-01-01", INT_TO_DATE, {"month": "DATE"}) == (
        "SELECT nonfarm FROM us WHERE month=DATE '2009-01-01'"
    )


def test_a_date_above_a_year_compares_its_year() -> None:
    assert _fixed("SELECT count(*) FROM us WHERE month >= 2006", DATE_VS_INT, {"month": "DATE"}) == (
        "SELECT count(*) FROM us WHERE year(month) >= 2006"
    )


def test_a_missing_month_column_is_the_only_dates_month() -> None:
    error = 'Binder Error: Referenced column "month" not found in FROM clause! Candidate bindings: "weather"'
    sql = "SELECT max(temp_max) FROM w WHERE month = 7 AND month(date) > 0"
    assert (
        _fixed(sql, error, WEATHER)
        == 'SELECT max(temp_max) FROM w WHERE month("date") = 7 AND month(date) > 0'
    )


@pytest.mark.parametrize("columns", [{}, {"date": "DATE", "shipped": "DATE"}])
def test_a_missing_month_is_left_alone_without_exactly_one_date_column(columns: dict[str, str]) -> None:
    error = 'Binder Error: Referenced column "month" not found in FROM clause! Candidate bindings: "weather"'
    assert repaired_sql("SELECT 1 FROM w WHERE month = 7", error, columns) is None


def test_text_inside_a_string_literal_is_never_changed() -> None:
    sql = "SELECT 'date LIKE x' AS t FROM w WHERE date LIKE '2014%'"
    assert _fixed(sql, LIKE_ON_DATE, WEATHER).startswith("SELECT 'date LIKE x' AS t")


@pytest.mark.parametrize("kind", ["INTEGER", "UBIGINT", "HUGEINT", "DOUBLE", "FLOAT", "DECIMAL(18,3)"])
def test_a_numeric_column_type_is_numeric(kind: str) -> None:
    assert NUMERIC_TYPE.search(kind)


@pytest.mark.parametrize("kind", ["VARCHAR", "DATE", "TIMESTAMP", "BOOLEAN"])
def test_a_column_type_of_no_number_is_not_numeric(kind: str) -> None:
    assert NUMERIC_TYPE.search(kind) is None
