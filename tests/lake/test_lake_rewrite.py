"""Rewriting a query's filters as a tree (sqlglot's DuckDB dialect): dropped, added, replaced."""

from __future__ import annotations

from agentlake.lake.rewrite import (
    add_filters,
    comparisons,
    drop_filters,
    fold_case,
    replace_value,
    tables_read,
)

RIOTS = "SELECT count(*) AS n FROM la_riots WHERE race = 'White' AND death_date IS NOT NULL"


def test_the_text_comparisons_of_a_where_are_read() -> None:
    assert [(c.column, c.value, c.op) for c in comparisons(RIOTS)] == [("race", "White", "=")]


def test_a_dropped_filter_leaves_the_others() -> None:
    assert drop_filters(RIOTS, lambda c: c.column == "race") == (
        "SELECT COUNT(*) AS n FROM la_riots WHERE NOT death_date IS NULL"
    )


def test_dropping_the_only_filter_drops_the_where() -> None:
    assert (
        drop_filters("SELECT count(*) FROM t WHERE race = 'White'", lambda c: True)
        == "SELECT COUNT(*) FROM t"
    )


def test_nothing_to_drop_is_none() -> None:
    assert drop_filters(RIOTS, lambda c: False) is None


def test_filters_are_added_to_the_where() -> None:
    assert add_filters("SELECT avg(price) FROM stocks WHERE symbol = 'MSFT'", ['year("date") = 2005']) == (
        "SELECT AVG(price) FROM stocks WHERE symbol = 'MSFT' AND YEAR(\"date\") = 2005"
    )


def test_a_query_without_where_gets_one() -> None:
    assert add_filters("SELECT avg(price) FROM stocks", ["month(d) = 3"]) == (
        "SELECT AVG(price) FROM stocks WHERE MONTH(d) = 3"
    )


def test_a_compared_value_is_replaced() -> None:
    assert replace_value("SELECT 1 FROM w WHERE weather = 'foggy'", "weather", "foggy", "fog") == (
        "SELECT 1 FROM w WHERE weather = 'fog'"
    )


def test_a_value_in_several_cases_is_compared_lower_cased() -> None:
    assert fold_case("SELECT 1 FROM c WHERE segment = 'RETAIL'", "segment", "RETAIL") == (
        "SELECT 1 FROM c WHERE LOWER(segment) = 'retail'"
    )


def test_the_tables_read_leave_out_ctes() -> None:
    assert tables_read("WITH x AS (SELECT * FROM orders) SELECT * FROM x JOIN customers ON true") == [
        "customers",
        "orders",
    ]


def test_a_query_that_does_not_parse_is_left_alone() -> None:
    assert add_filters("SELECT FROM WHERE (", ["a = 1"]) is None
