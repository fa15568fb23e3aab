"""Code's fixes of a query's shape and period, on a real lake: a grouping the question never
asks for, a count of missing values that never asks for them, a filter on the column whose
different values are counted, a lookup code the question does not describe, a period other
than the one named, and a table or column the database refused where the query put it."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from agents_support import MemorySink, csv_lake, fixed_rows, problem_kinds

from agentlake.agents.ask import ask
from agentlake.agents.fix_dates import NamedDate, named_dates
from agentlake.agents.fix_shape import held_values, null_column, unasked_grouping
from agentlake.agents.linking import lake_columns, named_values
from agentlake.agents.tools import listed_values
from agentlake.lake import Lake
from agentlake.llm import ScriptedProvider, register_scripted, unregister_scripted
from agentlake.settings import Settings

ORDERS = """order_id,customer_id,status,currency,amount,order_date,shipped_date
1,C1,S,USD,10.0,2016-01-05,2016-01-08
2,C3,C,USD,20.0,2016-03-02,
3,C2,C,EUR,30.0,2016-03-09,
4,C3,S,EUR,600.0,2016-07-01,2016-07-05
5,C3,R,USD,700.0,2017-02-01,2017-02-03
6,C2,S,USD,60.0,2017-05-01,2017-05-11
"""
CUSTOMERS = """customer_id,name,state
C1,Ann,TX
C2,Bob,OH
C3,Cy,TX
"""
STATUSES = """code,meaning
S,shipped
C,cancelled
R,returned
"""
WEATHER = """date,weather,temp_min
2013-01-01,rain,5.0
2013-01-02,snow,-4.4
2013-01-20,rain,-1.0
2013-03-01,rain,2.0
2013-03-02,sun,3.0
2013-07-04,sun,15.0
"""
PENGUINS = """species,sex,bill_length_mm,body_mass_g
Adelie,male,39.1,3750
Adelie,NA,NA,NA
Gentoo,female,46.1,NA
Gentoo,male,50.0,5700
"""
RIOTS = """type,neighborhood
Death,Koreatown
Homicide,Koreatown
Death,South Park
Officer-involved shooting,Watts
"""


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lake]:
    root = tmp_path_factory.mktemp("fixes-shape")
    files = {
        "orders": ORDERS,
        "customers": CUSTOMERS,
        "order_statuses": STATUSES,
        "weather": WEATHER,
        "penguins": PENGUINS,
        "riots": RIOTS,
    }
    with csv_lake(root, files) as opened:
        yield opened


def _refused(lake: Lake, sql: str) -> str:
    with pytest.raises(Exception) as refused:
        lake.query(sql, max_rows=100)
    return str(refused.value)


# A period other than the one the question names.


def test_a_month_range_for_a_year_is_found(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM weather WHERE weather = 'rain' AND date BETWEEN '2013-03-01' AND '2013-03-31'"
    assert "dates" in problem_kinds(lake, sql, "How many days in 2013 had rain?")


def test_a_month_range_for_a_year_is_widened_to_the_year(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM weather WHERE weather = 'rain' AND date BETWEEN '2013-03-01' AND '2013-03-31'"
    assert fixed_rows(lake, sql, "dates", "How many days in 2013 had rain?") == [(3,)]


def test_one_day_for_a_month_is_widened_to_the_month(lake: Lake) -> None:
    sql = "SELECT min(temp_min) AS low FROM weather WHERE date = '2013-01-01'"
    assert fixed_rows(lake, sql, "dates", "What was the lowest temperature in January 2013?") == [(-4.4,)]


def test_a_month_the_question_does_not_name_is_dropped_for_its_year(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM weather WHERE year(date) = 2013 AND month(date) = 3"
    assert fixed_rows(lake, sql, "dates", "How many days were recorded in 2013?") == [(6,)]


def test_the_range_of_the_named_year_is_no_problem(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM weather WHERE date BETWEEN '2013-01-01' AND '2013-12-31'"
    assert problem_kinds(lake, sql, "How many days were recorded in 2013?") == []


# A grouping the question never asks for.


def test_a_grouping_by_a_key_not_selected_is_unasked_for_how_many(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM orders GROUP BY status ORDER BY n DESC LIMIT 1"
    assert unasked_grouping(sql, "How many orders were placed?")


def test_a_grouping_is_asked_for_by_which(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM orders GROUP BY status ORDER BY n DESC LIMIT 1"
    assert not unasked_grouping(sql, "Which status has the most orders?")


def test_a_grouping_whose_key_is_selected_is_left_alone_when_no_number_is_asked(lake: Lake) -> None:
    sql = "SELECT status, count(*) AS n FROM orders GROUP BY status"
    assert not unasked_grouping(sql, "What statuses do the orders have?")


def test_a_grouping_whose_key_is_selected_is_unasked_for_how_many(lake: Lake) -> None:
    sql = "SELECT status, count(*) AS n FROM orders GROUP BY status ORDER BY n DESC LIMIT 1"
    assert unasked_grouping(sql, "How many orders were placed?")


def test_a_grouping_whose_key_is_selected_is_dropped_with_the_key(lake: Lake) -> None:
    sql = "SELECT status, count(*) AS n FROM orders WHERE amount > 50 GROUP BY status ORDER BY n DESC LIMIT 1"
    assert fixed_rows(lake, sql, "ungrouped", "How many orders were over 50?") == [(3,)]


def test_an_unasked_grouping_is_dropped(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM orders WHERE year(order_date) = 2016 GROUP BY status ORDER BY n DESC LIMIT 1"
    assert fixed_rows(lake, sql, "ungrouped", "How many orders were placed in 2016?") == [(4,)]


# Missing values, counted.


def test_the_column_with_no_recorded_value_is_named(lake: Lake) -> None:
    assert (
        null_column("How many penguins have no recorded body mass?", ["species", "body_mass_g"])
        == "body_mass_g"
    )


def test_a_count_of_missing_values_that_never_asks_for_them_is_found(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM penguins WHERE bill_length_mm = 0"
    assert "nulls" in problem_kinds(lake, sql, "How many penguins have no recorded body mass?")


def test_a_zero_standing_for_missing_becomes_is_null(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM penguins WHERE bill_length_mm = 0"
    assert fixed_rows(lake, sql, "nulls", "How many penguins have no recorded body mass?") == [(2,)]


def test_is_null_is_added_when_nothing_stands_for_missing(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM penguins WHERE species = 'Gentoo'"
    assert fixed_rows(lake, sql, "nulls", "How many Gentoo penguins have no recorded body mass?") == [(1,)]


# Different values counted, one kept by a filter.


def test_a_filter_on_the_counted_column_is_found(lake: Lake) -> None:
    sql = "SELECT count(DISTINCT type) AS n FROM riots WHERE type = 'Death'"
    assert "counted" in problem_kinds(lake, sql, "How many different types of death are listed?")


def test_a_filter_on_the_counted_column_is_dropped(lake: Lake) -> None:
    sql = "SELECT count(DISTINCT type) AS n FROM riots WHERE type = 'Death'"
    assert fixed_rows(lake, sql, "counted", "How many different types of death are listed?") == [(3,)]


# A lookup code the question does not describe.


def test_a_code_whose_meaning_the_question_does_not_say_is_found(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM orders WHERE status = 'C' AND currency = 'EUR'"
    assert "unsaid" in problem_kinds(lake, sql, "How many orders were paid in EUR?")


def test_a_code_whose_meaning_the_question_says_is_no_problem(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM orders WHERE status = 'C'"
    assert "unsaid" not in problem_kinds(lake, sql, "How many orders were cancelled?")


def test_a_code_the_question_does_not_describe_is_dropped(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM orders WHERE status = 'C' AND currency = 'EUR'"
    assert fixed_rows(lake, sql, "unsaid", "How many orders were paid in EUR?") == [(2,)]


# What the database refused: a table or column out of place.


def test_a_table_the_where_names_and_nothing_joins_is_joined(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM customers WHERE customer_id = orders.customer_id AND state = 'TX'"
    error = _refused(lake, sql)
    assert fixed_rows(lake, sql, "error", "How many orders came from customers in TX?", error) == [(4,)]


def test_a_column_read_through_the_wrong_alias_is_read_through_its_table(lake: Lake) -> None:
    sql = (
        "SELECT T2.name FROM customers AS T1 JOIN orders AS T2 ON T1.customer_id = T2.customer_id "
        "WHERE T2.order_id = 6"
    )
    error = _refused(lake, sql)
    assert fixed_rows(lake, sql, "error", "Who placed order 6?", error) == [("Bob",)]


def test_a_column_of_a_table_not_read_joins_that_table(lake: Lake) -> None:
    sql = "SELECT count(shipped_date) AS n FROM order_statuses WHERE meaning = 'shipped'"
    error = _refused(lake, sql)
    assert fixed_rows(lake, sql, "error", "How many shipped orders have a shipped date?", error) == [(3,)]


def test_a_grouping_by_a_column_no_table_has_is_dropped(lake: Lake) -> None:
    sql = "SELECT sum(amount) AS total FROM orders WHERE currency = 'EUR' GROUP BY country ORDER BY total DESC LIMIT 1"
    error = _refused(lake, sql)
    assert fixed_rows(lake, sql, "error", "What is the total amount paid in EUR?", error) == [(630.0,)]


# Through ask: a problem code cannot mend does not keep the others from being mended.


@pytest.fixture
def asker() -> Iterator[ScriptedProvider]:
    provider = ScriptedProvider("shape-asker")
    register_scripted("shape-asker", provider)
    yield provider
    unregister_scripted("shape-asker")


def test_a_problem_code_cannot_mend_leaves_the_others_mended(
    lake: Lake, asker: ScriptedProvider, sink: MemorySink
) -> None:
    # "over 500" is left out (only the model can say which column); the unasked grouping and
    # the copied code are mended by code before the query is sent back.
    plan = "SELECT count(*) AS n FROM orders WHERE status = 'C' AND currency = 'USD' GROUP BY order_date ORDER BY n DESC LIMIT 1"
    asker.enqueue(json.dumps({"route": "sql", "sql": plan}))
    asker.enqueue(
        json.dumps(
            {
                "route": "sql",
                "sql": "SELECT count(*) AS n FROM orders WHERE currency = 'USD' AND amount > 500",
            }
        )
    )
    asker.enqueue("1 order [SQL].")

    answer = ask("How many orders over 500 were paid in USD?", lake=lake, model="scripted:shape-asker")

    assert any("(repaired by code: dropped status = 'C'" in tried for tried in answer.tried)


# Averages, superlatives, periods counted, null tests nobody asked for.

STOCKS_QUESTION = "In which year did orders have their lowest average amount?"


def test_a_minimum_for_the_lowest_average_is_found(lake: Lake) -> None:
    sql = "SELECT year(order_date) AS year, min(amount) AS low FROM orders GROUP BY ALL ORDER BY low LIMIT 1"
    assert "averaged" in problem_kinds(lake, sql, STOCKS_QUESTION)


def test_a_minimum_for_the_lowest_average_is_averaged(lake: Lake) -> None:
    sql = "SELECT year(order_date) AS year, min(amount) AS low FROM orders GROUP BY ALL ORDER BY low LIMIT 1"
    assert fixed_rows(lake, sql, "averaged", STOCKS_QUESTION) == [(2016, 165.0)]


def test_groups_left_unordered_for_the_lowest_are_found(lake: Lake) -> None:
    sql = "SELECT year(order_date) AS year, avg(amount) AS mean FROM orders GROUP BY ALL"
    assert "unordered" in problem_kinds(lake, sql, STOCKS_QUESTION)


def test_groups_left_unordered_for_the_lowest_keep_the_lowest(lake: Lake) -> None:
    sql = "SELECT year(order_date) AS year, avg(amount) AS mean FROM orders GROUP BY ALL"
    assert fixed_rows(lake, sql, "unordered", STOCKS_QUESTION) == [(2016, 165.0)]


def test_different_months_are_counted_by_month(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM weather"
    assert fixed_rows(lake, sql, "periods", "How many different months does the weather data cover?") == [
        (3,)
    ]


def test_a_null_test_on_a_column_the_question_never_names_is_found(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM orders WHERE NOT shipped_date IS NULL AND currency = 'USD'"
    assert "nulltests" in problem_kinds(lake, sql, "How many orders were paid in USD?")


def test_a_null_test_on_a_column_the_question_never_names_is_dropped(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM orders WHERE NOT shipped_date IS NULL AND currency = 'USD'"
    assert fixed_rows(lake, sql, "nulltests", "How many orders were paid in USD?") == [(4,)]


def test_a_null_test_the_question_asks_for_is_no_problem(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM orders WHERE shipped_date IS NULL"
    assert "nulltests" not in problem_kinds(lake, sql, "How many orders have no shipped date?")


# A count of the different values of a column held to one value.


def test_different_values_of_a_column_held_to_one_are_found(lake: Lake) -> None:
    sql = "SELECT count(DISTINCT neighborhood) AS n FROM riots WHERE neighborhood = 'Koreatown'"
    assert "onedistinct" in problem_kinds(lake, sql, "How many people died in Koreatown?")


def test_different_values_of_a_column_held_to_one_become_rows(lake: Lake) -> None:
    sql = "SELECT count(DISTINCT neighborhood) AS n FROM riots WHERE neighborhood = 'Koreatown'"
    assert fixed_rows(lake, sql, "onedistinct", "How many people died in Koreatown?") == [(2,)]


# More of what the database refuses.


def test_a_measure_read_outside_the_grouping_is_averaged_for_an_average(lake: Lake) -> None:
    sql = "SELECT species, bill_length_mm FROM penguins GROUP BY species ORDER BY bill_length_mm DESC LIMIT 1"
    question = "Which species has the longest bills on average?"
    assert fixed_rows(lake, sql, "error", question, _refused(lake, sql)) == [("Gentoo", 48.05)]


def test_a_column_read_outside_the_grouping_is_grouped_by_too(lake: Lake) -> None:
    sql = (
        "SELECT customer_id, name FROM customers WHERE state = 'TX' GROUP BY customer_id ORDER BY customer_id"
    )
    question = "Which customers are in TX?"
    assert fixed_rows(lake, sql, "error", question, _refused(lake, sql)) == [("C1", "Ann"), ("C3", "Cy")]


def test_a_text_the_question_does_not_name_compared_with_a_number_is_dropped(lake: Lake) -> None:
    sql = "SELECT max(bill_length_mm) AS longest FROM penguins WHERE body_mass_g = 'Biscoe'"
    question = "What is the longest bill length of any penguin?"
    assert fixed_rows(lake, sql, "error", question, _refused(lake, sql)) == [(50.0,)]


def test_the_year_of_a_text_column_becomes_the_year_of_the_date(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM weather WHERE YEAR(lower(weather)) = 2013"
    question = "How many days were recorded in 2013?"
    assert fixed_rows(lake, sql, "error", question, _refused(lake, sql)) == [(6,)]


def test_a_missing_column_compared_with_a_lookup_meaning_becomes_its_code(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM orders WHERE order_status = 'cancelled'"
    question = "How many orders were cancelled?"
    assert fixed_rows(lake, sql, "error", question, _refused(lake, sql)) == [(2,)]


# What a small model writes that the database cannot parse, or copies from a join.


def test_a_second_where_is_read_as_and(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM orders WHERE currency = 'USD' WHERE status = 'S'"
    question = "How many shipped orders were paid in USD?"
    assert fixed_rows(lake, sql, "error", question, _refused(lake, sql)) == [(2,)]


def test_a_type_word_after_a_column_is_dropped(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM weather WHERE weather date = 'rain'"
    question = "How many days had rain?"
    assert fixed_rows(lake, sql, "error", question, _refused(lake, sql)) == [(3,)]


def test_a_date_range_written_as_numbers_becomes_the_named_year(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM weather WHERE date BETWEEN 2013-03-01 AND 2013-03-31"
    question = "How many days were recorded in 2013?"
    assert fixed_rows(lake, sql, "error", question, _refused(lake, sql)) == [(6,)]


def test_a_join_condition_on_a_table_nothing_reads_nor_names_is_dropped(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM customers WHERE customer_id = orders.customer_id AND state = 'TX'"
    question = "How many customers are in TX?"
    assert fixed_rows(lake, sql, "error", question, _refused(lake, sql)) == [(2,)]


def test_extract_without_parentheses_is_mended(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM weather WHERE weather = 'rain' AND EXTRACT YEAR FROM date = 2013 AND EXTRACT MONTH FROM date = 1"
    question = "How many days in January 2013 had rain?"
    assert fixed_rows(lake, sql, "error", question, _refused(lake, sql)) == [(2,)]


# A day the question names.


def test_a_day_with_its_month_written_first_is_named() -> None:
    assert named_dates("What was the low on July 4, 2013?") == [NamedDate(2013, 7, 4)]


def test_a_day_written_before_its_month_is_named() -> None:
    assert named_dates("How many died on the 1st of May 1992?") == [NamedDate(1992, 5, 1)]


def test_a_day_that_does_not_exist_is_not_named() -> None:
    assert named_dates("What happened on February 30, 2013?") == [NamedDate(2013)]


def test_a_year_filter_for_a_named_day_is_found(lake: Lake) -> None:
    sql = "SELECT min(temp_min) AS low FROM weather WHERE year(date) = 2013"
    assert "dates" in problem_kinds(lake, sql, "What was the lowest temperature on July 4, 2013?")


def test_a_year_filter_for_a_named_day_is_narrowed_to_the_day(lake: Lake) -> None:
    sql = "SELECT min(temp_min) AS low FROM weather WHERE year(date) = 2013"
    assert fixed_rows(lake, sql, "dates", "What was the lowest temperature on July 4, 2013?") == [(15.0,)]


def test_the_named_day_compared_whole_is_no_problem(lake: Lake) -> None:
    sql = "SELECT min(temp_min) AS low FROM weather WHERE date = '2013-07-04'"
    assert problem_kinds(lake, sql, "What was the lowest temperature on July 4, 2013?") == []


def test_the_named_day_in_parts_is_no_problem(lake: Lake) -> None:
    sql = "SELECT min(temp_min) AS low FROM weather WHERE year(date) = 2013 AND month(date) = 7 AND day(date) = 4"
    assert problem_kinds(lake, sql, "What was the lowest temperature on July 4, 2013?") == []


def test_a_named_day_left_out_is_added(lake: Lake) -> None:
    sql = "SELECT min(temp_min) AS low FROM weather"
    assert fixed_rows(lake, sql, "missing", "What was the lowest temperature on January 20, 2013?") == [
        (-1.0,)
    ]


# Rows listed under a LIMIT for "how many".


def test_rows_cut_by_a_limit_for_how_many_are_found(lake: Lake) -> None:
    sql = "SELECT order_id, amount FROM orders WHERE amount > 50 ORDER BY amount DESC LIMIT 1"
    assert "listed" in problem_kinds(lake, sql, "How many orders were over 50?")


def test_rows_cut_by_a_limit_for_how_many_are_counted(lake: Lake) -> None:
    sql = "SELECT order_id, amount FROM orders WHERE amount > 50 ORDER BY amount DESC LIMIT 1"
    assert fixed_rows(lake, sql, "listed", "How many orders were over 50?") == [(3,)]


def test_the_one_row_a_limit_keeps_of_one_is_no_listing(lake: Lake) -> None:
    sql = "SELECT amount FROM orders WHERE order_id = 4 LIMIT 1"
    assert "listed" not in problem_kinds(lake, sql, "How many euros was order 4?")


# A name or code the question says that a column with too many values to list holds.

CITIES = "iata,city,state,owner\n" + "".join(f"A{i:02d},Town {i},OH,Owner {i}\n" for i in range(70))
CITIES += "HOU,Houston,TX,Houston\nIAH,Houston,TX,City\nHSV,Houston,MS,County\n"


@pytest.fixture(scope="module")
def places(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lake]:
    root = tmp_path_factory.mktemp("fixes-held")
    settings = Settings(data_dir=root, default_model="none", executor_model=None, llm_max_retries=0)
    with Lake.open(settings, path=root / "lake.duckdb") as opened:
        for name, text in {"airports": CITIES, "orders": ORDERS, "customers": CUSTOMERS}.items():
            (root / f"{name}.csv").write_text(text)
            opened.ingest(root / f"{name}.csv", name)
        yield opened


def test_a_city_the_question_names_is_held(places: Lake) -> None:
    sql = "SELECT count(*) AS n FROM airports WHERE state = 'TX'"
    question = "How many airports are in Town 7, Ohio?"
    assert held_values(sql, question, places, listed_values(places)) == [('"city"', "Town 7")]


def test_a_value_two_columns_hold_is_not_taken(places: Lake) -> None:
    sql = "SELECT count(*) AS n FROM airports WHERE state = 'TX'"
    assert held_values(sql, "How many airports are in Houston?", places, listed_values(places)) == []


def test_a_value_the_query_compares_already_is_not_taken(places: Lake) -> None:
    sql = "SELECT count(*) AS n FROM airports WHERE owner = 'Owner 7'"
    assert held_values(sql, "How many airports does Owner 7 own?", places, listed_values(places)) == []


def test_a_held_value_left_out_is_filtered_on(places: Lake) -> None:
    sql = "SELECT count(*) AS n FROM airports WHERE state = 'OH'"
    assert fixed_rows(places, sql, "held", "How many airports are in Town 7, Ohio?") == [(1,)]


def test_a_held_id_of_two_joined_tables_is_filtered_through_one(places: Lake) -> None:
    sql = "SELECT count(*) AS n FROM orders o JOIN customers c ON o.customer_id = c.customer_id"
    question = "How many orders did customer C3 place?"
    assert held_values(sql, question, places, {}) == [('"c"."customer_id"', "C3")]


def test_a_code_inside_an_id_is_not_named(lake: Lake) -> None:
    assert named_values("How many orders did customer C0071 place?", listed_values(lake)) == []


def test_a_value_inside_a_column_name_the_question_says_is_not_named(lake: Lake) -> None:
    question = "How many orders have no shipped date?"
    assert named_values(question, listed_values(lake), lake_columns(lake)) == []


def test_the_same_value_outside_a_column_name_is_named(lake: Lake) -> None:
    question = "How many orders were shipped?"
    assert ("meaning", "shipped") in named_values(question, listed_values(lake), lake_columns(lake))


# The largest or smallest value of a named column.

GROUPED_COUNT = "SELECT currency, count(*) AS n FROM orders WHERE currency = 'EUR' GROUP BY currency ORDER BY n DESC LIMIT 1"


def test_a_count_for_the_largest_amount_is_found(lake: Lake) -> None:
    assert "extreme" in problem_kinds(lake, GROUPED_COUNT, "What is the largest order amount paid in euros?")


def test_a_count_for_the_largest_amount_becomes_the_maximum(lake: Lake) -> None:
    assert fixed_rows(lake, GROUPED_COUNT, "extreme", "What is the largest order amount paid in euros?") == [
        (600.0,)
    ]


def test_the_maximum_of_the_named_column_is_no_problem(lake: Lake) -> None:
    sql = "SELECT max(amount) AS n FROM orders WHERE currency = 'EUR'"
    assert "extreme" not in problem_kinds(lake, sql, "What is the largest order amount paid in euros?")


def test_the_named_column_listed_in_order_is_no_problem(lake: Lake) -> None:
    sql = "SELECT amount FROM orders WHERE currency = 'EUR' ORDER BY amount DESC LIMIT 1"
    assert "extreme" not in problem_kinds(lake, sql, "What is the largest order amount paid in euros?")


def test_a_code_whose_meaning_is_said_only_in_a_column_name_is_unsaid(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM orders WHERE status = 'S' AND shipped_date IS NULL"
    assert "unsaid" in problem_kinds(lake, sql, "How many orders have no shipped date?")


def test_a_code_whose_meaning_is_said_only_in_a_column_name_is_dropped(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM orders WHERE status = 'S' AND shipped_date IS NULL"
    assert fixed_rows(lake, sql, "unsaid", "How many orders have no shipped date?") == [(2,)]
