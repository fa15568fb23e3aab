"""Code's fixes of a model's query, on a real lake: each fix for the problem ask found."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agentlake.agents.fixes import fix_query, missing_dates, named_dates, unheld_values
from agentlake.agents.tools import listed_values
from agentlake.lake import Lake
from agentlake.settings import Settings

WEATHER = """date,precipitation,temp_max,weather
2012-01-01,0.0,12.8,drizzle
2012-01-02,10.9,10.6,rain
2013-03-05,0.0,15.0,fog
"""
ORDERS = """order_date,shipped_date,channel,amount
2016-03-01,2016-03-04,WEB,10.0
2016-03-02,2016-03-05,Web,20.0
2016-04-02,2016-04-05,web,30.0
"""


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lake]:
    root = tmp_path_factory.mktemp("fixes")
    (root / "weather.csv").write_text(WEATHER)
    (root / "orders.csv").write_text(ORDERS)
    with Lake.open(Settings(data_dir=root), path=root / "lake.duckdb") as opened:
        opened.ingest(root / "weather.csv", "weather")
        opened.ingest(root / "orders.csv", "orders")
        yield opened


def _fix(lake: Lake, sql: str, kind: str, question: str, error: str | None = None) -> str | None:
    listed = listed_values(lake)
    from agentlake.agents.linking import named_values

    found = fix_query(
        sql, kind, error, lake=lake, question=question, named=named_values(question, listed), listed=listed
    )
    return found[0] if found else None


def test_a_year_and_month_are_read_from_a_question() -> None:
    assert named_dates("How many orders were placed in March 2016, or in 2017?") == [
        named_dates("March 2016")[0],
        named_dates("2017")[0],
    ]


def test_a_query_without_the_named_year_leaves_it_out() -> None:
    assert missing_dates("SELECT count(*) FROM t", named_dates("in 2005")) == "2005"


def test_the_named_year_is_added_on_the_only_date_column(lake: Lake) -> None:
    fixed = _fix(
        lake, "SELECT count(*) AS n FROM weather WHERE weather = 'rain'", "missing", "Rain days in 2012?"
    )
    assert fixed == "SELECT COUNT(*) AS n FROM weather WHERE weather = 'rain' AND YEAR(\"date\") = 2012"


def test_the_named_month_goes_on_the_date_the_question_is_about(lake: Lake) -> None:
    fixed = _fix(
        lake, "SELECT count(*) AS n FROM orders", "missing", "How many orders were placed in March 2016?"
    )
    assert (
        fixed
        == 'SELECT COUNT(*) AS n FROM orders WHERE YEAR("order_date") = 2016 AND MONTH("order_date") = 3'
    )


def test_a_range_of_days_is_read_with_the_year_said_once() -> None:
    (named,) = named_dates("How many orders were placed between June 1 and August 31, 2017?")
    assert named.conditions("d") == ["CAST(\"d\" AS DATE) BETWEEN DATE '2017-06-01' AND DATE '2017-08-31'"]


def test_a_quarter_is_read_as_its_three_months() -> None:
    (named,) = named_dates("How many orders were placed in the first quarter of 2016?")
    assert named.conditions("d") == ["CAST(\"d\" AS DATE) BETWEEN DATE '2016-01-01' AND DATE '2016-03-31'"]


def test_a_range_written_as_parts_of_its_last_day_is_mended(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM orders WHERE year(order_date) = 2016 AND month(order_date) = 4 AND day(order_date) = 2"
    fixed = _fix(lake, sql, "dates", "How many orders were placed between March 2 and April 2, 2016?")
    assert lake.query(fixed or "").rows == [[2]]


def test_a_value_written_in_several_cases_is_compared_lower_cased(lake: Lake) -> None:
    fixed = _fix(
        lake, "SELECT count(*) AS n FROM orders WHERE channel = 'WEB'", "missing", "orders through the web"
    )
    assert fixed == "SELECT COUNT(*) AS n FROM orders WHERE LOWER(channel) = 'web'"


def test_an_unnamed_value_is_dropped(lake: Lake) -> None:
    fixed = _fix(
        lake, "SELECT max(temp_max) FROM weather WHERE weather = 'drizzle'", "unnamed", "hottest day?"
    )
    assert fixed == "SELECT MAX(temp_max) FROM weather"


def test_a_value_the_column_does_not_hold_is_the_listed_one_most_like_it(lake: Lake) -> None:
    fixed = _fix(lake, "SELECT avg(temp_max) FROM weather WHERE weather = 'foggy'", "unheld", "foggy days?")
    assert fixed == "SELECT AVG(temp_max) FROM weather WHERE weather = 'fog'"


def test_an_unheld_value_is_reported_with_what_the_column_holds(lake: Lake) -> None:
    assert unheld_values("SELECT 1 FROM weather WHERE weather = 'foggy'", listed_values(lake)) == (
        "weather = 'foggy' (it holds: drizzle, fog, rain)"
    )


def test_a_missing_column_compared_with_a_value_another_holds_is_that_column(lake: Lake) -> None:
    error = 'Binder Error: Referenced column "kind" not found in FROM clause! Candidate bindings: "date"'
    fixed = _fix(lake, "SELECT count(*) FROM weather WHERE kind = 'rain'", "error", "rain days?", error)
    assert fixed == "SELECT count(*) FROM weather WHERE weather = 'rain'"


def test_a_missing_date_column_is_the_tables_date(lake: Lake) -> None:
    error = 'Binder Error: Referenced column "day" not found in FROM clause! Candidate bindings: "date"'
    fixed = _fix(
        lake, "SELECT temp_max FROM weather WHERE day = DATE '2012-01-01'", "error", "that day?", error
    )
    assert fixed == "SELECT temp_max FROM weather WHERE date = DATE '2012-01-01'"


def test_a_filter_on_a_column_no_table_has_is_dropped(lake: Lake) -> None:
    error = 'Binder Error: Referenced column "state" not found in FROM clause! Candidate bindings: "date"'
    fixed = _fix(
        lake, "SELECT count(*) FROM weather WHERE state = 'WA' AND weather = 'rain'", "error", "q", error
    )
    assert fixed == "SELECT COUNT(*) FROM weather WHERE weather = 'rain'"
