"""How a query's result is said to a model: one value, one row, as a small model quotes it."""

from __future__ import annotations

from agentlake.agents.render import one_value_text


def test_one_value_is_said_as_one_value() -> None:
    assert one_value_text([{"n": 61}]) == "one value: n = 61"


def test_one_row_of_several_columns_is_said_without_a_row_count() -> None:
    assert one_value_text([{"symbol": "AAPL", "price": 105.12}]) == "one row: symbol = AAPL, price = 105.12"


def test_several_rows_are_not_said_as_one() -> None:
    assert one_value_text([{"n": 1}, {"n": 2}]) is None
