"""Code's fixes of a query over the wrong table or counting rows for "how many different",
on a real lake of a shop (orders, customers, a lookup table of status codes) and airports."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agentlake.agents.fixes import (
    counts_not_different,
    different_column,
    fix_query,
    subject_table,
    unread_subject,
)
from agentlake.agents.tools import listed_values
from agentlake.lake import Lake
from agentlake.settings import Settings

ORDERS = """order_id,customer_id,status,amount
1,C1,S,10.0
2,C1,X,20.0
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
TABLES = ["orders", "customers", "order_statuses", "airports"]


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lake]:
    root = tmp_path_factory.mktemp("fixes-tables")
    files = {"orders": ORDERS, "customers": CUSTOMERS, "order_statuses": STATUSES, "airports": AIRPORTS}
    with Lake.open(Settings(data_dir=root), path=root / "lake.duckdb") as opened:
        for name, text in files.items():
            (root / f"{name}.csv").write_text(text)
            opened.ingest(root / f"{name}.csv", name)
        yield opened


def _fixed(lake: Lake, sql: str, kind: str, question: str) -> list[tuple[object, ...]]:
    found = fix_query(sql, kind, None, lake=lake, question=question, named=[], listed=listed_values(lake))
    assert found is not None, f"no {kind} fix for {sql}"
    return [tuple(row) for row in lake.query(found[0]).rows]


def test_the_table_a_question_says_first_is_its_subject() -> None:
    assert subject_table("How many orders came from customers in Texas?", TABLES) == "orders"


def test_the_longer_table_name_is_the_subject_on_a_tie() -> None:
    assert subject_table("How many order statuses are there?", TABLES) == "order_statuses"


def test_a_question_naming_no_table_has_no_subject() -> None:
    assert subject_table("What was the wind on foggy days?", TABLES) is None


def test_a_query_reading_the_subject_has_no_unread_subject() -> None:
    assert unread_subject("SELECT count(*) FROM orders", "How many orders were cancelled?", TABLES) is None


def test_a_query_counting_the_lookup_table_misses_the_subject() -> None:
    sql = "SELECT count(*) FROM order_statuses WHERE meaning = 'cancelled'"
    assert unread_subject(sql, "How many orders were cancelled?", TABLES) == "orders"


def test_the_subject_is_joined_through_the_lookup_of_its_codes(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM order_statuses WHERE meaning = 'cancelled'"
    assert _fixed(lake, sql, "subject", "How many orders were cancelled?") == [(2,)]


def test_the_subject_is_joined_on_the_key_both_tables_share(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM customers WHERE state = 'TX'"
    assert _fixed(lake, sql, "subject", "How many orders came from customers in Texas?") == [(4,)]


def test_a_table_with_no_join_is_replaced_by_the_subject_holding_its_columns(lake: Lake) -> None:
    sql = "SELECT count(*) AS n FROM airports WHERE amount > 25"
    assert _fixed(lake, sql, "subject", "How many orders were over 25?") == [(4,)]


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
    assert _fixed(lake, sql, "different", "How many different cities in Florida have an airport?") == [(2,)]


def test_rows_listed_for_how_many_are_counted(lake: Lake) -> None:
    sql = "SELECT DISTINCT city FROM airports WHERE state = 'FL'"
    assert _fixed(lake, sql, "listed", "How many different cities in Florida have an airport?") == [(2,)]
