"""A playbook's query adapted to a question of its shape (agents.adapt), on a real lake: each
kind of difference carried into the query, and a difference nothing carries left unadapted."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from agents_support import csv_lake

from agentlake.agents.adapt import adapt
from agentlake.agents.tools import listed_values
from agentlake.lake import Lake

PENGUINS = """species,island,sex,flipper_length_mm,bill_length_mm
Adelie,Torgersen,male,181,39.1
Adelie,Dream,female,186,39.5
Gentoo,Biscoe,female,217,46.1
Gentoo,Biscoe,male,230,50.0
Chinstrap,Dream,female,192,46.5
"""
WEATHER = """date,weather,temp_max,temp_min
2013-07-04,sun,25.0,12.0
2014-07-04,sun,27.0,13.0
2013-12-25,rain,6.0,-1.0
"""
STOCKS = """symbol,date,price
AAPL,2008-01-01,180.0
AAPL,2008-02-01,120.0
MSFT,2008-01-01,30.0
MSFT,2008-02-01,28.0
"""
ORDERS = """order_id,customer_id,items
1,C0071,2
2,C0071,1
3,C0236,5
"""


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lake]:
    root = tmp_path_factory.mktemp("adapt")
    files = {"penguins": PENGUINS, "weather": WEATHER, "stocks": STOCKS, "orders": ORDERS}
    with csv_lake(root, files) as opened:
        yield opened


def _adapted(lake: Lake, example: str, sql: str, question: str) -> list[tuple[object, ...]] | None:
    adapted = adapt(example, sql, question, lake, listed_values(lake))
    return None if adapted is None else [tuple(row) for row in lake.query(adapted).rows]


def test_the_same_question_gets_the_same_query(lake: Lake) -> None:
    sql = "SELECT count(*) FROM penguins WHERE species = 'Gentoo'"
    assert adapt("How many Gentoo penguins?", sql, "How many Gentoo penguins?", lake, {}) == (
        "SELECT COUNT(*) FROM penguins WHERE species = 'Gentoo'"
    )


def test_two_listed_values_are_carried(lake: Lake) -> None:
    sql = "SELECT avg(flipper_length_mm) FROM penguins WHERE species = 'Gentoo' AND sex = 'male'"
    example, question = (
        "Average flipper length of male Gentoo penguins?",
        "Average flipper length of female Adelie penguins?",
    )
    assert _adapted(lake, example, sql, question) == [(186.0,)]


def test_a_code_named_by_its_company_is_carried(lake: Lake) -> None:
    sql = "SELECT max(price) FROM stocks WHERE symbol = 'AAPL' AND year(date) = 2008"
    example, question = (
        "What was Apple's highest price in 2008?",
        "What was Microsoft's highest price in 2008?",
    )
    assert _adapted(lake, example, sql, question) == [(30.0,)]


def test_the_other_end_turns_the_query_round(lake: Lake) -> None:
    sql = "SELECT max(price) FROM stocks WHERE symbol = 'AAPL'"
    assert _adapted(lake, "What was Apple's highest price?", sql, "What was Apple's lowest price?") == [
        (120.0,)
    ]


def test_a_day_is_carried_into_its_parts(lake: Lake) -> None:
    sql = "SELECT temp_max FROM weather WHERE year(date) = 2013 AND month(date) = 7 AND day(date) = 4"
    example, question = (
        "The maximum temperature on July 4, 2013?",
        "The maximum temperature on December 25, 2013?",
    )
    assert _adapted(lake, example, sql, question) == [(6.0,)]


def test_a_column_named_by_the_other_end_is_renamed_not_turned(lake: Lake) -> None:
    sql = "SELECT temp_max FROM weather WHERE date = DATE '2013-07-04'"
    example, question = "The maximum temperature on July 4, 2013?", "The minimum temperature on July 4, 2013?"
    assert _adapted(lake, example, sql, question) == [(12.0,)]


def test_a_rare_value_is_carried_as_its_literal(lake: Lake) -> None:
    sql = "SELECT count(*) FROM orders WHERE customer_id = 'C0071'"
    assert _adapted(lake, "Orders of customer C0071?", sql, "Orders of customer C0236?") == [(1,)]


def test_a_number_is_carried(lake: Lake) -> None:
    sql = "SELECT count(*) FROM orders WHERE items > 1"
    assert _adapted(lake, "Orders with more than 1 items?", sql, "Orders with more than 4 items?") == [(1,)]


def test_a_difference_nothing_carries_leaves_it_unadapted(lake: Lake) -> None:
    sql = "SELECT count(*) FROM penguins WHERE species = 'Gentoo'"
    assert (
        adapt("How many Gentoo penguins?", sql, "How many Gentoo penguins live on Biscoe?", lake, {}) is None
    )
