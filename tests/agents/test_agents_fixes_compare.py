"""Code's fixes of the numbers a query compares, on a real lake (agents.fix_compare): a bound
the question puts on its measure, a number the question never states, a column's name compared
as a value, a date filter for a question that says no time, a subquery over tables the question
does not name; and the answer check (agents.answer_check): an answer that misstates its one
value is written by code."""

from __future__ import annotations

import datetime
from collections.abc import Iterator

import pytest
from agents_support import csv_lake, fixed_rows, problem_kinds

from agentlake.agents.answer_check import code_answer, shown, states
from agentlake.agents.fix_compare import bound, named_measure
from agentlake.agents.linking import lake_columns, named_values
from agentlake.agents.tools import listed_values
from agentlake.lake import Lake

WEATHER = """date,weather,temp_max,wind
2013-01-01,rain,5.0,8.1
2013-01-02,snow,3.0,2.0
2013-07-04,sun,25.0,7.5
2014-07-05,sun,27.0,1.0
"""
CUSTOMERS = """customer_id,state,loyalty_points
C1,TX,4500
C2,OH,300
C3,TX,5000
"""
ORDERS = """order_id,customer_id,status,items
1,C1,S,1
2,C2,C,3
3,C3,S,1
"""
JOBS = """month,nonfarm,nonfarm_change
2009-01-01,100,-10
2009-02-01,90,-20
2010-01-01,95,5
"""
POWER = """year,source,net_generation
2001,Renewables,100
2002,Renewables,300
2001,Nuclear,50
2002,Nuclear,40
"""
STOCKS = """symbol,date,price
AMZN,2008-01-01,40.0
AMZN,2009-01-01,60.0
AMZN,2010-01-01,45.0
"""


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lake]:
    root = tmp_path_factory.mktemp("fixes-compare")
    files = {
        "weather": WEATHER,
        "customers": CUSTOMERS,
        "orders": ORDERS,
        "jobs": JOBS,
        "stocks": STOCKS,
        "power": POWER,
    }
    with csv_lake(root, files) as opened:
        yield opened


# The bound a question puts on a number.


def test_more_than_is_a_strict_bound() -> None:
    assert bound("How many customers have more than 4000 loyalty points?") == (">", "4000")


def test_no_more_than_is_read_once_as_at_most() -> None:
    assert bound("How many orders had no more than 3 items?") == ("<=", "3")


def test_a_bound_in_words_is_read_as_its_number() -> None:
    assert bound("How many orders had exactly one item?") == ("=", "1")


def test_a_column_name_may_stand_before_the_number() -> None:
    assert bound("How many airports lie west of longitude -150?") == ("<", "-150")


def test_between_is_one_bound_of_two_numbers() -> None:
    assert bound("In how many months was the price between 20 and 30?") == ("BETWEEN", "20 AND 30")


def test_two_bounds_are_no_one_bound() -> None:
    assert bound("How many days had more than 5 mm and less than 9 mm?") is None


def test_the_widest_named_column_is_the_measure() -> None:
    types = {"nonfarm": "BIGINT", "nonfarm_change": "BIGINT", "month": "DATE"}
    assert named_measure("What was the average monthly change in nonfarm jobs?", types) == "nonfarm_change"


def test_a_bound_on_another_column_is_found(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM weather WHERE temp_max > 7"
    assert "bound" in problem_kinds(lake, sql, "On how many days was the wind speed above 7?")


def test_a_bound_on_another_column_is_moved_to_the_measure(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM weather WHERE temp_max > 7"
    assert fixed_rows(lake, sql, "bound", "On how many days was the wind speed above 7?") == [(2,)]


def test_a_bound_left_out_is_added(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM customers"
    assert fixed_rows(lake, sql, "bound", "How many customers have more than 4000 loyalty points?") == [(2,)]


def test_a_bound_written_with_another_comparison_is_rewritten(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM customers WHERE loyalty_points <= 4500"
    assert fixed_rows(lake, sql, "bound", "How many customers have fewer than 4500 loyalty points?") == [(1,)]


def test_the_bound_as_the_question_says_is_no_problem(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM customers WHERE loyalty_points > 4000"
    assert "bound" not in problem_kinds(lake, sql, "How many customers have more than 4000 loyalty points?")


# A number the question never states.


def test_an_unstated_number_on_an_unnamed_column_is_dropped(lake: Lake) -> None:
    sql = "SELECT weather, count(*) AS n FROM weather WHERE year(date) = 2013 AND wind = 0 GROUP BY weather ORDER BY n DESC LIMIT 1"
    assert fixed_rows(lake, sql, "unstated", "Which weather was most common in 2013?") == [("rain", 1)]


def test_an_unstated_number_that_finds_nothing_is_dropped(lake: Lake) -> None:
    sql = "SELECT avg(nonfarm_change) AS n FROM jobs WHERE nonfarm = 1 AND year(month) = 2009"
    assert fixed_rows(lake, sql, "unstated", "What was the average change in nonfarm jobs in 2009?") == [
        (-15.0,)
    ]


def test_a_number_stated_in_words_is_kept(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM orders WHERE items = 1"
    assert "unstated" not in problem_kinds(lake, sql, "How many orders had exactly one item?")


# A column's name compared as a value.


def test_a_column_name_as_a_value_is_found(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM weather WHERE weather = 'wind' AND wind > 7"
    assert "columnvalue" in problem_kinds(lake, sql, "On how many days was the wind speed above 7?")


def test_a_column_name_as_a_value_is_dropped(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM weather WHERE weather = 'wind' AND wind > 7"
    assert fixed_rows(lake, sql, "columnvalue", "On how many days was the wind speed above 7?") == [(2,)]


# Filters the question gives no ground for.


def test_a_date_filter_for_a_question_that_says_no_time_is_dropped(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM stocks WHERE symbol = 'AMZN' AND price < 50 AND date BETWEEN '2008-01-01' AND '2008-12-31'"
    assert fixed_rows(lake, sql, "unsaidfilter", "In how many months was Amazon's stock price below 50?") == [
        (2,)
    ]


def test_a_date_filter_for_a_question_that_names_a_year_is_kept(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM stocks WHERE year(date) = 2008"
    assert "unsaidfilter" not in problem_kinds(lake, sql, "How many prices were recorded in 2008?")


def test_a_subquery_over_a_table_the_question_does_not_name_is_dropped(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM customers WHERE customer_id IN (SELECT customer_id FROM orders WHERE status = 'S')"
    assert fixed_rows(lake, sql, "unsaidfilter", "How many customers live in TX or OH?") == [(3,)]


def test_a_subquery_over_a_table_the_question_names_is_kept(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM customers WHERE customer_id IN (SELECT customer_id FROM orders)"
    assert "unsaidfilter" not in problem_kinds(lake, sql, "How many customers placed orders?")


# A month is no company's name.


def test_a_month_name_is_not_read_as_a_stock_code(lake: Lake) -> None:
    listed = listed_values(lake) | {("stocks", "symbol"): ["AAPL", "AMZN"]}
    named = named_values("How many jobs were there in April 2009?", listed, lake_columns(lake))
    assert ("symbol", "AAPL") not in named


# The answer states its one value.


def test_an_answer_stating_another_number_does_not_state_the_value() -> None:
    assert not states("The youngest was 12 years old [SQL].", 15, "How old was the youngest?")


def test_a_thousands_comma_in_the_wrong_place_does_not_state_the_value() -> None:
    assert not states("Iowa generated 566,750 megawatts [SQL].", 56675, "How much in 2012?")


def test_a_rounded_number_states_the_value() -> None:
    assert states("The average is 191.74 mm [SQL].", 191.735294, "What is the average flipper length?")


def test_the_question_s_own_numbers_are_set_aside() -> None:
    assert states(
        "44 airports lie north of latitude 60 [SQL].", 44, "How many airports lie north of latitude 60?"
    )


def test_a_text_value_is_stated_as_a_word() -> None:
    assert states("Biscoe island had the most [SQL].", "Biscoe", "Which island had the most penguins?")


def test_a_date_answering_which_year_is_shown_as_its_year() -> None:
    assert shown(datetime.date(2010, 1, 1), "In which year did Iowa generate the most?") == "2010"


def test_code_s_answer_states_the_value() -> None:
    answer = code_answer(15, "How old was the youngest?", "SQL")
    assert states(answer, 15, "How old was the youngest?")


# Groups ranked by their rows where the question ranks them by an amount.


def test_a_ranking_by_rows_for_an_amount_is_found(lake: Lake) -> None:
    sql = "SELECT year FROM power WHERE source = 'Nuclear' GROUP BY year ORDER BY count(*) DESC LIMIT 1"
    assert "amount" in problem_kinds(lake, sql, "In which year was the most electricity made from nuclear?")


def test_a_ranking_by_rows_for_an_amount_ranks_by_its_sum(lake: Lake) -> None:
    sql = "SELECT year FROM power WHERE source = 'Nuclear' GROUP BY year ORDER BY count(*) DESC LIMIT 1"
    assert fixed_rows(lake, sql, "amount", "In which year was the most electricity made from nuclear?") == [
        (2001,)
    ]


def test_a_ranking_by_rows_of_the_table_s_own_name_is_no_problem(lake: Lake) -> None:
    sql = "SELECT state, count(*) AS n FROM customers GROUP BY state ORDER BY n DESC LIMIT 1"
    assert "amount" not in problem_kinds(lake, sql, "Which state has the most wholesale customers?")


def test_the_most_common_value_is_ranked_by_rows(lake: Lake) -> None:
    sql = "SELECT weather, count(*) AS n FROM weather GROUP BY weather ORDER BY n DESC LIMIT 1"
    assert "amount" not in problem_kinds(lake, sql, "Which weather was the most common?")


# A year (month, day) column the table has not: the part of its one date column.


def test_a_year_column_the_table_has_not_is_the_year_of_its_date(lake: Lake) -> None:
    sql = "SELECT year FROM weather WHERE weather = 'rain' GROUP BY year ORDER BY count(*) DESC LIMIT 1"
    error = 'Binder Error: Referenced column "year" not found in FROM clause!'
    assert fixed_rows(lake, sql, "error", "In which year did it rain most often?", error) == [(2013,)]


def test_a_range_of_numbers_says_no_time(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM stocks WHERE price BETWEEN 40 AND 50 AND date BETWEEN '2020-01-01' AND '2020-12-31'"
    assert "unsaidfilter" in problem_kinds(lake, sql, "In how many months was the price between 40 and 50?")


# "How many months": rows counted, not a column summed.


def test_a_sum_for_how_many_months_is_found(lake: Lake) -> None:
    sql = "SELECT sum(price) AS n FROM stocks WHERE price BETWEEN 40 AND 50"
    assert "periodcount" in problem_kinds(lake, sql, "In how many months was the price between 40 and 50?")


def test_a_sum_for_how_many_months_counts_the_rows(lake: Lake) -> None:
    sql = "SELECT sum(price) AS n FROM stocks WHERE price BETWEEN 40 AND 50"
    assert fixed_rows(lake, sql, "periodcount", "In how many months was the price between 40 and 50?") == [
        (2,)
    ]


def test_a_sum_of_the_named_column_is_no_period_count(lake: Lake) -> None:
    sql = "SELECT sum(nonfarm) AS n FROM jobs"
    assert "periodcount" not in problem_kinds(lake, sql, "How many nonfarm jobs were there?")
