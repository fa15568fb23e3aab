"""Schema linking: which of a lake's datasets a question is about."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agentlake.agents.linking import link_datasets, words
from agentlake.lake import Lake
from agentlake.settings import Settings

FILES = {
    "penguins": "species,island,body_mass_g\nAdelie,Biscoe,3750\nGentoo,Dream,5000\n",
    "seattle_weather": "date,precipitation,temp_max,weather\n2012-01-01,0.0,12.8,drizzle\n2012-01-02,10.9,10.6,rain\n",
    "orders": "order_id,status,total\n1,S,10.5\n2,C,3.0\n",
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
