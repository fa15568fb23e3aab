"""Code's fixes of a query over the wrong table or counting rows for "how many different",
on a real lake of a shop (orders, customers, a lookup table of status codes) and airports."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from agents_support import csv_lake, fixed_rows

from agentlake.agents.fixes import (
    asked_group,
    conflicting,
    counts_not_different,
    different_column,
    find_problems,
    fix_query,
    grouped_otherwise,
    missing_numbers,
    named_measure,
    named_tables,
    subject_table,
    text_dates,
    unneeded_join,
    unread_measure,
    unread_subject,
)
from agentlake.agents.tools import listed_values
from agentlake.lake import Lake

ORDERS = """order_id,customer_id,status,amount
1,C1,S,10.0
2,C3,X,20.0
3,C2,X,30.0
4,C3,S,40.0
5,C3,S,50.0
6,C2,S,60.0
"""
CUSTOMERS = """customer_id,name,state
C1,Ann,TX
C2,Bob,OH
C3,Cy,TX
"""
STATUSES = """code,meaning
S,shipped
X,cancelled
"""
AIRPORTS = """iata,city,state
A1,Miami,FL
A2,Miami,FL
A3,Tampa,FL
A4,Dayton,OH
"""
EMPLOYMENT = """month,nonfarm,private,manufacturing
2009-01-01,100,80,10
2009-02-01,110,90,12
2010-01-01,120,95,14
"""
TABLES = ["orders", "customers", "order_statuses", "airports"]


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lake]:
    root = tmp_path_factory.mktemp("fixes-tables")
    files = {
        "orders": ORDERS,
        "customers": CUSTOMERS,
        "order_statuses": STATUSES,
        "airports": AIRPORTS,
        "employment": EMPLOYMENT,
    }
    with csv_lake(root, files) as opened:
        yield opened


def test_the_table_a_question_says_first_is_its_subject() -> None:
    assert subject_table("How many orders came from customers in Texas?", TABLES) == "orders"


def test_the_longer_table_name_is_the_subject_on_a_tie() -> None:
    assert subject_table("How many order statuses are there?", TABLES) == "order_statuses"


def test_a_question_naming_no_table_has_no_subject() -> None:
    assert subject_table("What was the wind on foggy days?", TABLES) is None


def test_a_query_reading_the_subject_has_no_unread_subject(lake: Lake) -> None:
    assert unread_subject("SELECT count(*) FROM orders", "How many orders were cancelled?", lake) is None


def test_a_query_counting_the_lookup_table_misses_the_subject(lake: Lake) -> None:
    sql = "SELECT count(*) FROM order_statuses WHERE meaning = 'cancelled'"
    assert unread_subject(sql, "How many orders were cancelled?", lake) == "orders"


def test_another_table_the_question_names_that_joins_is_unread(lake: Lake) -> None:
    sql = "SELECT name FROM customers WHERE state = 'TX' GROUP BY ALL ORDER BY count(*) DESC LIMIT 1"
    assert unread_subject(sql, "Which customer in Texas placed the most orders?", lake) == "orders"


def test_the_table_a_ranking_counts_is_joined_by_code(lake: Lake) -> None:
    sql = "SELECT name FROM customers WHERE state = 'TX' GROUP BY ALL ORDER BY count(*) DESC, name LIMIT 1"
    assert fixed_rows(lake, sql, "subject", "Which customer in Texas placed the most orders?") == [("Cy",)]


def test_the_subject_is_joined_through_the_lookup_of_its_codes(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM order_statuses WHERE meaning = 'cancelled'"
    assert fixed_rows(lake, sql, "subject", "How many orders were cancelled?") == [(2,)]


def test_the_subject_is_joined_on_the_key_both_tables_share(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM customers WHERE state = 'TX'"
    assert fixed_rows(lake, sql, "subject", "How many orders came from customers in Texas?") == [(4,)]


def test_a_table_with_no_join_is_replaced_by_the_subject_holding_its_columns(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM airports WHERE amount > 25"
    assert fixed_rows(lake, sql, "subject", "How many orders were over 25?") == [(4,)]


def test_a_table_with_no_join_and_other_columns_is_not_replaced(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM airports WHERE city = 'Miami'"
    found = fix_query(
        sql, "subject", None, lake=lake, question="How many orders?", named=[], listed=listed_values(lake)
    )
    assert found is None


def test_the_column_of_different_values_is_named_after_different() -> None:
    assert (
        different_column("How many different cities in Florida have an airport?", ["iata", "city"]) == "city"
    )


def test_the_last_word_naming_a_column_is_the_counted_one() -> None:
    assert different_column("How many different stock symbols are there?", ["symbol", "price"]) == "symbol"


def test_a_word_inside_a_columns_name_names_it() -> None:
    assert different_column("How many different customers placed an order?", ["order_id", "customer_id"]) == (
        "customer_id"
    )


def test_a_question_without_different_counts_no_column() -> None:
    assert different_column("How many cities in Florida have an airport?", ["city"]) is None


def test_counting_rows_for_different_values_is_found(lake: Lake) -> None:
    sql = "SELECT count(*) FROM airports WHERE state = 'FL'"
    assert counts_not_different(sql, "How many different cities in Florida have an airport?", lake) == "city"


def test_counting_different_values_is_not_a_problem(lake: Lake) -> None:
    sql = "SELECT count(DISTINCT city) FROM airports WHERE state = 'FL'"
    assert counts_not_different(sql, "How many different cities in Florida have an airport?", lake) is None


def test_a_count_of_rows_is_fixed_to_count_different_values(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM airports WHERE state = 'FL'"
    assert fixed_rows(lake, sql, "different", "How many different cities in Florida have an airport?") == [
        (2,)
    ]


def test_rows_listed_for_how_many_are_counted(lake: Lake) -> None:
    sql = "SELECT DISTINCT city FROM airports WHERE state = 'FL'"
    assert fixed_rows(lake, sql, "listed", "How many different cities in Florida have an airport?") == [(2,)]


def test_the_one_numeric_column_a_question_names_is_its_measure() -> None:
    types = {"month": "DATE", "nonfarm": "BIGINT", "private": "BIGINT", "manufacturing": "BIGINT"}
    assert (
        named_measure("What was the average number of manufacturing jobs per month?", types)
        == "manufacturing"
    )


def test_a_text_column_is_no_measure() -> None:
    assert named_measure("Which city has the most airports?", {"city": "VARCHAR"}) is None


def test_an_aggregate_of_another_column_misses_the_measure(lake: Lake) -> None:
    sql = "SELECT avg(private) FROM employment WHERE year(month) = 2009"
    assert (
        unread_measure(sql, "What was the average number of manufacturing jobs in 2009?", lake)
        == "manufacturing"
    )


def test_an_aggregate_of_the_measure_is_no_problem(lake: Lake) -> None:
    sql = "SELECT avg(manufacturing) FROM employment"
    assert unread_measure(sql, "What was the average number of manufacturing jobs?", lake) is None


def test_a_count_of_rows_for_how_many_of_a_measure_misses_it(lake: Lake) -> None:
    sql = "SELECT count(*) FROM employment WHERE year(month) = 2009"
    assert unread_measure(sql, "How many nonfarm jobs were there in 2009?", lake) == "nonfarm"


def test_the_measure_is_aggregated_in_place_of_the_other_column(lake: Lake) -> None:
    sql = "SELECT avg(private) AS a FROM employment WHERE year(month) = 2009"
    assert fixed_rows(lake, sql, "measure", "What was the average number of manufacturing jobs in 2009?") == [
        (11.0,)
    ]


def test_a_count_of_rows_becomes_the_sum_of_the_measure_without_its_filter(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM employment WHERE month = '2010-01-01' AND nonfarm = 1"
    assert fixed_rows(lake, sql, "measure", "How many nonfarm jobs were there in January 2010?") == [(120,)]


def test_the_column_a_which_question_asks_for_is_named_after_which() -> None:
    assert (
        asked_group("Which penguin species has the deepest bills?", ["sex", "species", "island"]) == "species"
    )


def test_a_which_question_naming_no_column_asks_for_none() -> None:
    assert asked_group("Which one is the deepest?", ["sex", "species"]) is None


def test_grouping_by_another_column_than_the_one_asked_for_is_found(lake: Lake) -> None:
    sql = "SELECT state, count(*) AS n FROM airports GROUP BY state ORDER BY n DESC LIMIT 1"
    assert grouped_otherwise(sql, "Which city in Florida has the most airports?", lake) == "city"


def test_grouping_by_the_column_asked_for_is_no_problem(lake: Lake) -> None:
    sql = "SELECT city, count(*) AS n FROM airports GROUP BY city"
    assert grouped_otherwise(sql, "Which city in Florida has the most airports?", lake) is None


def test_the_query_is_grouped_by_the_column_asked_for(lake: Lake) -> None:
    sql = "SELECT state, count(*) AS n FROM airports GROUP BY state ORDER BY n DESC, state LIMIT 1"
    assert fixed_rows(lake, sql, "grouped", "Which city has the most airports?") == [("Miami", 2)]


def test_the_tables_a_question_names_are_in_its_order() -> None:
    assert named_tables("How many orders came from customers in Texas?", TABLES) == ["orders", "customers"]


def test_a_column_equal_to_two_values_at_once_conflicts() -> None:
    sql = "SELECT count(*) FROM p WHERE sex = 'Female' AND sex = 'female'"
    assert conflicting(sql) == ("sex", ["Female", "female"])


def test_one_column_equal_to_one_value_does_not_conflict() -> None:
    assert conflicting("SELECT count(*) FROM p WHERE sex = 'female' AND island = 'Dream'") is None


def test_a_conflict_of_one_value_in_two_cases_is_compared_once(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM customers WHERE state = 'Tx' AND state = 'tx'"
    assert fixed_rows(lake, sql, "conflict", "How many customers live in tx?") == [(2,)]


def test_a_conflict_keeps_the_value_the_question_names(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM customers WHERE state = 'OH' AND state = 'TX'"
    assert fixed_rows(lake, sql, "conflict", "How many customers live in TX?") == [(2,)]


def test_a_value_the_column_does_not_hold_is_written_as_its_lookup_code(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM orders WHERE status = 'cancelled'"
    assert fixed_rows(lake, sql, "unheld", "How many orders were cancelled?") == [(2,)]


def test_a_value_the_column_does_not_hold_nor_the_question_names_is_dropped(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM orders WHERE status = 'SHIPPED'"
    assert fixed_rows(lake, sql, "unheld", "How many orders are there?") == [(6,)]


def test_a_date_filtered_as_text_is_found(lake: Lake) -> None:
    sql = "SELECT sum(nonfarm) FROM employment WHERE CAST(month AS VARCHAR) LIKE '2009-01%'"
    assert text_dates(sql, "How many nonfarm jobs were there in January 2009?", lake) == "month"


def test_a_range_of_whole_days_is_no_text_date(lake: Lake) -> None:
    sql = "SELECT sum(nonfarm) FROM employment WHERE month BETWEEN '2009-01-01' AND '2009-01-31'"
    assert text_dates(sql, "How many nonfarm jobs were there in January 2009?", lake) is None


def test_a_date_filtered_as_text_is_filtered_on_its_year_and_month(lake: Lake) -> None:
    sql = "SELECT sum(nonfarm) AS n FROM employment WHERE month = '2009-02'"
    assert fixed_rows(lake, sql, "dates", "How many nonfarm jobs were there in February 2009?") == [(110,)]


def test_a_year_asked_for_regroups_a_date_by_its_year(lake: Lake) -> None:
    sql = "SELECT month, avg(nonfarm) AS a FROM employment GROUP BY month ORDER BY a DESC LIMIT 1"
    assert fixed_rows(lake, sql, "grouped", "In which year were there the most nonfarm jobs?") == [
        (2010, 120.0)
    ]


def test_a_join_read_only_in_its_condition_is_unneeded(lake: Lake) -> None:
    sql = "SELECT avg(c.customer_id = 'C1') FROM customers AS c JOIN orders AS o ON c.customer_id = o.customer_id"
    assert unneeded_join(sql, "What share of customers is C1?", lake) == "orders"


def test_a_join_of_a_table_the_question_names_is_needed(lake: Lake) -> None:
    sql = "SELECT name FROM customers JOIN orders ON orders.customer_id = customers.customer_id GROUP BY ALL"
    assert unneeded_join(sql, "Which customer placed the most orders?", lake) is None


def test_an_unneeded_join_is_dropped_so_each_row_counts_once(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM customers AS c JOIN orders AS o ON c.customer_id = o.customer_id WHERE c.state = 'TX'"
    assert fixed_rows(lake, sql, "joined", "How many customers live in Texas?") == [(2,)]


def test_a_named_value_of_a_lookup_table_is_filtered_as_its_code(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM orders"
    found = fix_query(
        sql, "missing", None, lake=lake, question="How many orders were cancelled?",
        named=[("meaning", "cancelled")], listed=listed_values(lake),
    )  # fmt: skip
    assert found is not None
    assert [tuple(r) for r in lake.query(found[0]).rows] == [(2,)]


def test_a_code_compared_for_a_named_lookup_value_leaves_nothing_out(lake: Lake) -> None:
    problems = find_problems(
        "SELECT count(*) FROM orders WHERE status = 'X'", [(2,)], lake=lake,
        question="How many orders were cancelled?", named=[("meaning", "cancelled")], listed=listed_values(lake),
    )  # fmt: skip
    assert problems == []


def test_a_date_the_database_refuses_is_filtered_on_its_year_and_month(lake: Lake) -> None:
    found = fix_query(
        "SELECT sum(nonfarm) AS n FROM employment WHERE month BETWEEN '2009-02-01' AND '2009-02-31'", "error",
        'Conversion Error: date field value out of range: "2009-02-31"', lake=lake,
        question="How many nonfarm jobs were there in February 2009?", named=[], listed=listed_values(lake),
    )  # fmt: skip
    assert found is not None
    assert [tuple(r) for r in lake.query(found[0]).rows] == [(110,)]


def test_the_counted_noun_ends_at_of() -> None:
    assert different_column("How many different types of death are listed?", ["type", "death_date"]) == "type"


def test_a_count_of_different_other_values_is_a_problem(lake: Lake) -> None:
    sql = "SELECT count(DISTINCT state) FROM airports"
    assert counts_not_different(sql, "How many different cities have an airport?", lake) == "city"


def test_a_number_the_question_compares_with_and_the_query_lacks_is_missing() -> None:
    assert (
        missing_numbers("SELECT count(*) FROM orders WHERE currency = 'USD'", "How many orders over 500?")
        == "over 500"
    )


def test_a_number_the_query_compares_with_is_not_missing() -> None:
    assert (
        missing_numbers("SELECT count(*) FROM orders WHERE amount > 500", "How many orders over 500?") is None
    )


def test_a_filter_on_a_year_column_the_table_lacks_is_the_named_date(lake: Lake) -> None:
    found = fix_query(
        "SELECT sum(nonfarm) AS n FROM employment WHERE month = 2 AND year = 2009", "error",
        'Binder Error: Referenced column "year" not found in FROM clause!', lake=lake,
        question="How many nonfarm jobs were there in February 2009?", named=[], listed=listed_values(lake),
    )  # fmt: skip
    assert found is not None
    assert [tuple(r) for r in lake.query(found[0]).rows] == [(110,)]
