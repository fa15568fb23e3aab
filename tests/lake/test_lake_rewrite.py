"""Rewriting a query's filters as a tree (sqlglot's DuckDB dialect): dropped, added, replaced."""

from __future__ import annotations

from agentlake.lake.rewrite import (
    add_filters,
    aggregate_instead,
    aggregated_columns,
    columns_named,
    comparisons,
    count_distinct,
    count_rows,
    drop_filters,
    drop_join,
    fold_case,
    grouped_by,
    join_table,
    regroup,
    replace_strings,
    replace_value,
    tables_read,
    unused_joins,
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


def test_the_text_literals_a_rewrite_names_are_replaced_wherever_they_stand() -> None:
    sql = "SELECT 'a' AS x FROM t WHERE y = 'b' AND z = 'a'"
    assert replace_strings(sql, lambda literal: "c" if literal.this == "a" else None) == (
        "SELECT 'c' AS x FROM t WHERE y = 'b' AND z = 'c'"
    )


def test_a_rewrite_that_names_no_literal_is_none() -> None:
    assert replace_strings("SELECT 'a' FROM t", lambda literal: None) is None


def test_a_value_compared_from_the_left_is_replaced() -> None:
    assert replace_value("SELECT 1 FROM w WHERE 'foggy' = weather", "weather", "foggy", "fog") == (
        "SELECT 1 FROM w WHERE 'fog' = weather"
    )


def test_a_value_inside_a_bracketed_and_is_replaced() -> None:
    sql = "SELECT 1 FROM w WHERE (weather LIKE 'foggy' AND day = 1)"
    assert replace_value(sql, "weather", "foggy", "fog") == (
        "SELECT 1 FROM w WHERE (weather LIKE 'fog' AND day = 1)"
    )


def test_a_value_on_one_side_of_an_or_is_not_replaced() -> None:
    sql = "SELECT 1 FROM w WHERE weather = 'rain' OR weather = 'foggy'"
    assert replace_value(sql, "weather", "foggy", "fog") is None


def test_a_value_in_a_subquery_s_where_is_not_replaced() -> None:
    sql = "SELECT 1 FROM w WHERE id IN (SELECT id FROM v WHERE weather = 'foggy')"
    assert replace_value(sql, "weather", "foggy", "fog") is None


def test_a_value_compared_with_another_column_is_not_replaced() -> None:
    assert replace_value("SELECT 1 FROM w WHERE sky = 'foggy'", "weather", "foggy", "fog") is None


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


def test_a_table_is_joined_on_the_columns_given() -> None:
    assert join_table(
        "SELECT count(*) FROM order_statuses WHERE meaning = 'x'", "orders", ("status", "code"), set()
    ) == (
        "SELECT COUNT(*) FROM order_statuses JOIN orders ON orders.status = order_statuses.code WHERE meaning = 'x'"
    )


def test_a_joined_tables_shared_column_is_qualified_with_the_table_read() -> None:
    fixed = join_table(
        "SELECT count(customer_id) FROM customers", "orders", ("customer_id", "customer_id"), {"customer_id"}
    )
    assert fixed == (
        "SELECT COUNT(customers.customer_id) FROM customers JOIN orders ON orders.customer_id = customers.customer_id"
    )


def test_without_a_join_the_table_is_read_in_place_of_the_other() -> None:
    assert (
        join_table("SELECT count(*) FROM t WHERE a = 1", "u", None, set())
        == "SELECT COUNT(*) FROM u WHERE a = 1"
    )


def test_a_query_that_joins_already_is_not_joined_again() -> None:
    assert join_table("SELECT 1 FROM a JOIN b ON a.k = b.k", "c", ("k", "k"), set()) is None


def test_a_count_of_rows_becomes_a_count_of_different_values() -> None:
    assert count_distinct("SELECT count(*) AS n FROM airports WHERE state = 'FL'", "city") == (
        "SELECT COUNT(DISTINCT city) AS n FROM airports WHERE state = 'FL'"
    )


def test_a_count_of_different_values_is_left_alone() -> None:
    assert count_distinct("SELECT count(DISTINCT city) FROM airports", "city") is None


def test_the_columns_a_query_names_leave_out_its_aliases() -> None:
    assert columns_named("SELECT avg(price) AS p FROM stocks WHERE Symbol = 'X' ORDER BY p") == {
        "price",
        "symbol",
    }


def test_the_rows_a_query_lists_are_counted() -> None:
    assert count_rows("SELECT DISTINCT city FROM airports WHERE state = 'FL' ORDER BY city LIMIT 10") == (
        "SELECT COUNT(*) AS n FROM (SELECT DISTINCT city FROM airports WHERE state = 'FL') AS listed"
    )


def test_a_query_that_aggregates_is_not_counted_again() -> None:
    assert count_rows("SELECT state, count(*) FROM airports GROUP BY state") is None


def test_the_columns_an_aggregate_reads_leave_out_counts() -> None:
    assert aggregated_columns("SELECT avg(private), count(*) FROM t") == ["private"]


def test_an_aggregate_of_another_column_reads_the_one_given() -> None:
    assert aggregate_instead("SELECT avg(e.private) AS a FROM t AS e", "manufacturing") == (
        "SELECT AVG(e.manufacturing) AS a FROM t AS e"
    )


def test_a_count_of_rows_becomes_a_sum_without_the_columns_number_filter() -> None:
    assert aggregate_instead("SELECT count(*) AS n FROM t WHERE y = 2009 AND nonfarm = 1", "nonfarm") == (
        "SELECT SUM(nonfarm) AS n FROM t WHERE y = 2009"
    )


def test_the_columns_a_query_groups_by_are_read() -> None:
    assert grouped_by("SELECT sex, avg(x) FROM penguins GROUP BY sex") == ["sex"]


def test_a_query_is_regrouped_with_its_selected_column() -> None:
    assert regroup("SELECT p.sex AS s, avg(p.sex_x) FROM penguins AS p GROUP BY p.sex", "sex", "species") == (
        "SELECT p.species AS s, AVG(p.sex_x) FROM penguins AS p GROUP BY p.species"
    )


def test_a_join_read_only_in_its_condition_is_unused() -> None:
    columns = {"c": {"id", "points"}, "o": {"id", "items"}}
    assert unused_joins("SELECT avg(points) FROM c JOIN o ON c.id = o.id", columns) == ["o"]


def test_a_join_whose_column_is_read_is_used() -> None:
    columns = {"c": {"id", "points"}, "o": {"id", "items"}}
    assert unused_joins("SELECT sum(items) FROM c JOIN o ON c.id = o.id", columns) == []


def test_a_dropped_join_leaves_the_rest() -> None:
    assert (
        drop_join("SELECT 1 FROM c JOIN o ON c.id = o.id WHERE c.x = 1", "o")
        == "SELECT 1 FROM c WHERE c.x = 1"
    )


def test_a_count_of_different_other_values_counts_the_column_given() -> None:
    assert count_distinct("SELECT count(DISTINCT death_date) FROM riots", "type") == (
        "SELECT COUNT(DISTINCT type) FROM riots"
    )
