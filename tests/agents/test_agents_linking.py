"""Schema linking: which of a lake's datasets a question is about."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agentlake.agents.linking import (
    join_hints,
    joins,
    link_datasets,
    missing_values,
    named_values,
    named_values_hint,
    unnamed_values,
    words,
)
from agentlake.lake import Lake
from agentlake.settings import Settings

FILES = {
    "penguins": "species,island,body_mass_g\nAdelie,Biscoe,3750\nGentoo,Dream,5000\n",
    "seattle_weather": (
        "date,precipitation,temp_max,weather\n2012-01-01,0.0,12.8,drizzle\n2012-01-02,10.9,10.6,rain\n"
        "2012-01-03,0.0,11.7,sun\n"
    ),
    "orders": "order_id,status,total\n1,S,10.5\n2,C,3.0\n3,S,7.0\n",
    "order_statuses": "code,meaning\nS,shipped\nC,cancelled\n",
}


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lake]:
    root: Path = tmp_path_factory.mktemp("linking")
    with Lake.open(Settings(data_dir=root), path=root / "lake.duckdb") as opened:
        for name, text in FILES.items():
            (root / f"{name}.csv").write_text(text)
            opened.ingest(root / f"{name}.csv", name)
        yield opened


def test_a_tables_name_in_the_question_links_it_first(lake: Lake) -> None:
    assert link_datasets("How many days of rain did Seattle have?", lake)[0] == "seattle_weather"


def test_a_column_named_in_the_question_links_its_table(lake: Lake) -> None:
    assert link_datasets("What is the heaviest body mass?", lake) == ["penguins"]


def test_a_listed_value_named_in_the_question_links_its_table(lake: Lake) -> None:
    assert "order_statuses" in link_datasets("How many orders were cancelled?", lake)


def test_a_question_naming_nothing_gets_every_table(lake: Lake) -> None:
    assert link_datasets("Tell me something", lake) == sorted(FILES)


def test_words_drop_plurals_and_stop_words() -> None:
    assert words("How many penguins are there on the islands?") == {"penguin", "island"}


def test_a_us_state_named_by_name_names_its_code() -> None:
    listed = {("airports", "state"): ["AK", "AL", "CA", "HI", "TX", "WA"]}
    assert named_values("What is the average latitude of the airports in Hawaii?", listed) == [
        ("state", "HI")
    ]


def test_a_code_that_is_part_of_a_named_table_is_no_value() -> None:
    listed = {("airports", "state"): ["AK", "CA", "LA", "TX", "WA"], ("la_riots", "race"): ["Asian", "Black"]}
    assert named_values("How many people died during the LA riots?", listed) == []


def test_a_state_that_names_a_table_is_no_value() -> None:
    listed = {
        ("airports", "state"): ["AK", "CA", "IA", "TX", "WA"],
        ("iowa_electricity", "source"): ["Nuclear"],
    }
    assert named_values("How much electricity did Iowa generate?", listed) == []


def test_a_value_written_in_several_cases_is_named_in_all() -> None:
    listed = {("orders", "channel"): ["Phone", "WEB", "Web", "web"]}
    assert named_values("How many orders came through the web?", listed) == [
        ("channel", "WEB"),
        ("channel", "Web"),
        ("channel", "web"),
    ]


def test_the_hint_for_a_value_in_several_cases_compares_it_lower_cased() -> None:
    listed = {("orders", "channel"): ["WEB", "Web", "web"]}
    named = named_values("How many orders came through the web?", listed)
    assert "lower(channel) = 'web'" in named_values_hint(named, listed)


def test_a_query_comparing_the_lower_cased_value_leaves_nothing_out() -> None:
    named = [("channel", "WEB"), ("channel", "Web"), ("channel", "web")]
    assert missing_values("SELECT count(*) FROM orders WHERE lower(channel) = 'web'", named) is None


def test_a_column_of_codes_a_lookup_table_explains_is_a_join(lake: Lake) -> None:
    assert join_hints(lake, ["orders", "order_statuses"]) == [
        "orders.status = order_statuses.code (order_statuses says what each code means)"
    ]


def test_tables_that_share_no_key_have_no_join(lake: Lake) -> None:
    assert join_hints(lake, ["penguins", "seattle_weather"]) == []


def test_an_adjective_names_its_value() -> None:
    listed = {("seattle_weather", "weather"): ["drizzle", "fog", "rain"]}
    assert named_values("What was the wind on foggy days?", listed) == [("weather", "fog")]


def test_the_ranking_example_groups_a_listed_column_of_another_table(lake: Lake) -> None:
    from agentlake.agents.examples import worked_ranking

    ranking = worked_ranking(lake, avoid=frozenset({"order_statuses", "orders", "penguins"}))
    assert ranking is not None
    assert ranking.sql == (
        "SELECT weather, count(*) AS n FROM seattle_weather GROUP BY weather ORDER BY n DESC LIMIT 1"
    )


def test_a_lookup_join_names_the_column_on_each_side(lake: Lake) -> None:
    join = joins(lake, ["orders", "order_statuses"])[0]
    assert (join.column_of("orders"), join.column_of("order_statuses")) == ("status", "code")


def test_a_currency_named_in_words_names_its_code() -> None:
    listed = {("orders", "currency"): ["EUR", "GBP", "USD"]}
    assert named_values("How many orders were paid in euros?", listed) == [("currency", "EUR")]


def test_a_company_name_names_the_ticker_it_abbreviates() -> None:
    listed = {("stocks", "symbol"): ["AAPL", "AMZN", "GOOG", "IBM", "MSFT"]}
    assert named_values("What was Apple's stock price in March 2009?", listed) == [("symbol", "AAPL")]


def test_the_first_word_of_a_question_abbreviates_nothing() -> None:
    listed = {("stocks", "symbol"): ["AAPL", "WHC"]}
    assert named_values("Which stock rose most?", listed) == []


def test_a_one_letter_value_inside_a_word_is_not_said() -> None:
    listed = {("orders", "status"): ["S", "C"]}
    assert unnamed_values(
        "SELECT count(*) FROM orders WHERE status = 'S'", "How many were shipped?", [], listed
    ) == ("status = 'S'")


def test_a_one_letter_value_as_a_word_is_said() -> None:
    listed = {("orders", "status"): ["S", "C"]}
    assert (
        unnamed_values(
            "SELECT count(*) FROM orders WHERE status = 'S'", "How many have status S?", [], listed
        )
        is None
    )
