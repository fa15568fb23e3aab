"""``ask`` over a lake agentlake has never seen: no staffing table, no search index.

Scripted models decide the plans, so each route a model may take is walked on purpose: a plan
that fails twice, one that finds nothing, a search where the question counts, a search where
no index exists. Whatever the model chooses, the answer ends well: from what ran, or saying
that nothing did, never by searching a table the lake does not have.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from agents_support import MemorySink

from agentlake.agents.ask import ask, plan_schema
from agentlake.errors import UserError
from agentlake.lake import Lake
from agentlake.llm import ScriptedProvider, register_scripted, unregister_scripted
from agentlake.settings import Settings

PENGUINS = """species,island,bill_length_mm,body_mass_g,sex,year
Adelie,Torgersen,39.1,3750,male,2007
Adelie,Torgersen,39.5,3800,female,2007
Adelie,Biscoe,NA,NA,NA,2007
Gentoo,Biscoe,46.1,4500,female,2007
Gentoo,Biscoe,50.0,5700,male,2008
Chinstrap,Dream,46.5,3500,female,2008
"""


@pytest.fixture
def own_lake(tmp_path: Path) -> Iterator[Lake]:
    settings = Settings(data_dir=tmp_path, default_model="none", executor_model=None, llm_max_retries=0)
    csv = tmp_path / "penguins.csv"
    csv.write_text(PENGUINS)
    with Lake.open(settings, path=tmp_path / "lake.duckdb") as lake:
        lake.ingest(csv, "penguins")
        yield lake


@pytest.fixture
def asker() -> Iterator[ScriptedProvider]:
    provider = ScriptedProvider("asker")
    register_scripted("asker", provider)
    yield provider
    unregister_scripted("asker")


def _plan(sql: str) -> str:
    return json.dumps({"route": "sql", "sql": sql})


def test_a_plan_that_fails_twice_is_answered_saying_what_was_tried(
    own_lake: Lake, asker: ScriptedProvider, sink: MemorySink
) -> None:
    asker.enqueue(_plan("SELECT avg(mass) FROM penguins"))
    asker.enqueue(_plan("SELECT avg(weight) FROM penguins"))

    answer = ask("What is the average body mass?", lake=own_lake, model="scripted:asker")

    assert answer.route == "none"
    assert answer.answer.startswith("I could not answer this from the data. Tried: sql: SELECT avg(mass)")
    assert len(answer.tried) == 2
    assert asker.calls == 2  # two plans, and no answer written from nothing


def test_the_revision_is_told_the_real_error_and_the_tables_columns(
    own_lake: Lake, asker: ScriptedProvider, sink: MemorySink
) -> None:
    asker.enqueue(_plan("SELECT avg(mass) FROM penguins"))
    asker.enqueue(_plan("SELECT count(*) AS n FROM penguins"))
    asker.enqueue("There are 6 rows [SQL].")

    ask("How many penguins are there?", lake=own_lake, model="scripted:asker")

    told = asker.history[1][0][-1].content
    assert '"mass" not found' in told
    assert "- penguins (6 rows): species varchar" in told


def test_a_value_the_column_does_not_hold_is_written_by_code_as_the_one_it_holds(
    own_lake: Lake, asker: ScriptedProvider, sink: MemorySink
) -> None:
    asker.enqueue(_plan("SELECT count(*) AS n FROM penguins WHERE island = 'biscoe'"))
    asker.enqueue("3 penguins live on Biscoe [SQL].")

    answer = ask("How many penguins live on biscoe island?", lake=own_lake, model="scripted:asker")

    assert answer.sql == "SELECT COUNT(*) AS n FROM penguins WHERE island = 'Biscoe'"


def test_a_value_no_listed_value_is_like_is_sent_back_with_what_the_column_holds(
    own_lake: Lake, asker: ScriptedProvider, sink: MemorySink
) -> None:
    asker.enqueue(_plan("SELECT count(*) AS n FROM penguins WHERE island = 'Atlantis'"))
    asker.enqueue(_plan("SELECT count(*) AS n FROM penguins WHERE island = 'Biscoe'"))
    asker.enqueue("3 penguins live on Biscoe [SQL].")

    answer = ask("How many penguins live on the island of Atlantis?", lake=own_lake, model="scripted:asker")

    assert answer.revision == (
        "the first query compares island = 'Atlantis' (it holds: Biscoe, Dream, Torgersen), a value the column does not hold"
    )


def test_a_value_the_column_does_not_hold_nor_the_question_names_is_dropped_by_code(
    own_lake: Lake, asker: ScriptedProvider, sink: MemorySink
) -> None:
    asker.enqueue(_plan("SELECT count(*) AS n FROM penguins WHERE island = 'Atlantis'"))
    asker.enqueue("6 penguins [SQL].")

    answer = ask("How many penguins live on the islands?", lake=own_lake, model="scripted:asker")

    assert answer.sources[0].text == "one value: n = 6"


def test_a_plan_that_finds_nothing_is_sent_back_once_and_the_revision_answers(
    own_lake: Lake, asker: ScriptedProvider, sink: MemorySink
) -> None:
    asker.enqueue(_plan("SELECT island FROM penguins WHERE bill_length_mm > 1000"))
    asker.enqueue(_plan("SELECT count(*) AS n FROM penguins WHERE bill_length_mm > 10"))
    asker.enqueue("6 penguins have long bills [SQL].")

    answer = ask("How many penguins have long bills?", lake=own_lake, model="scripted:asker")

    assert answer.revision == "the first query returned no rows (or only empty values)"


def test_a_lake_without_an_index_offers_no_search_route(
    own_lake: Lake, asker: ScriptedProvider, sink: MemorySink
) -> None:
    asker.enqueue(_plan("SELECT count(*) AS n FROM penguins"))
    asker.enqueue("6 [SQL].")

    ask("How many penguins are there?", lake=own_lake, model="scripted:asker")

    assert '"search"' not in asker.history[0][0][0].content


def test_the_plan_schema_names_only_indexed_datasets_for_search() -> None:
    schema = plan_schema(["notes"])

    assert schema["anyOf"][1]["properties"]["dataset"]["enum"] == ["notes"]


def test_the_plan_schema_without_an_index_is_sql_only() -> None:
    assert plan_schema([])["properties"]["route"] == {"const": "sql"}


def test_a_search_reply_without_an_index_is_sent_back_and_sql_answers(
    own_lake: Lake, asker: ScriptedProvider, sink: MemorySink
) -> None:
    # A provider without native schema support can still reply with a search.
    asker.enqueue(json.dumps({"route": "search", "dataset": "penguins", "search_text": "heavy"}))
    asker.enqueue(_plan("SELECT max(body_mass_g) AS n FROM penguins"))
    asker.enqueue("5700 [SQL].")

    answer = ask("Which penguin is heaviest?", lake=own_lake, model="scripted:asker")

    assert answer.route == "sql"
    assert "no dataset has a search index" in asker.history[1][0][-1].content


def test_the_worked_example_is_made_from_the_users_own_table(
    own_lake: Lake, asker: ScriptedProvider, sink: MemorySink
) -> None:
    asker.enqueue(_plan("SELECT count(*) AS n FROM penguins"))
    asker.enqueue("6 [SQL].")

    ask("How many penguins are there?", lake=own_lake, model="scripted:asker")

    shown = asker.history[0][0][1].content + asker.history[0][0][2].content
    assert "FROM penguins WHERE species = 'Adelie' AND island = 'Torgersen'" in shown


def test_no_staffing_word_reaches_a_prompt_about_another_lake(
    own_lake: Lake, asker: ScriptedProvider, sink: MemorySink
) -> None:
    asker.enqueue(_plan("SELECT count(*) AS n FROM penguins"))
    asker.enqueue("6 [SQL].")

    ask("How many penguins are there?", lake=own_lake, model="scripted:asker")

    prompts = " ".join(m.content for messages, _ in asker.history for m in messages).lower()
    assert not [word for word in ("worker", "forklift", "welder", " tx") if word in prompts]


def test_an_empty_lake_is_one_line_saying_to_ingest(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, default_model="none")
    with Lake.open(settings, path=tmp_path / "lake.duckdb") as lake, pytest.raises(UserError) as raised:
        ask("How many rows?", lake=lake, model="scripted:asker")

    assert "agentlake ingest" in raised.value.message


def test_the_answer_is_recorded_as_an_op_under_its_id(
    own_lake: Lake, asker: ScriptedProvider, sink: MemorySink
) -> None:
    asker.enqueue(_plan("SELECT count(*) AS n FROM penguins"))
    asker.enqueue("6 [SQL].")

    answer = ask("How many penguins are there?", lake=own_lake, model="scripted:asker")

    (op,) = sink.endpoint("ask.answer")
    assert op.id == answer.id


def test_each_query_an_answer_ran_is_recorded_as_a_sql_tool_op(
    own_lake: Lake, asker: ScriptedProvider, sink: MemorySink
) -> None:
    asker.enqueue(_plan("SELECT avg(mass) FROM penguins"))
    asker.enqueue(_plan("SELECT count(*) AS n FROM penguins"))
    asker.enqueue("6 [SQL].")

    ask("How many penguins are there?", lake=own_lake, model="scripted:asker")

    assert [op.success for op in sink.endpoint("tool.sql")] == [False, True]


def test_a_query_wrong_twice_is_repaired_by_code_when_the_database_names_the_table(
    own_lake: Lake, asker: ScriptedProvider, sink: MemorySink
) -> None:
    asker.enqueue(_plan("SELECT count(*) AS n FROM penguin"))
    asker.enqueue(_plan("SELECT count(*) AS n FROM penguin"))
    asker.enqueue("6 penguins [SQL].")

    answer = ask("How many penguins are there?", lake=own_lake, model="scripted:asker")

    assert answer.sql == "SELECT count(*) AS n FROM penguins"
    assert "(repaired by code: table penguin -> penguins)" in answer.tried[-1]


@pytest.mark.parametrize(
    ("sql", "error", "fixed"),
    [
        (
            "SELECT * FROM weather WHERE weather = 'rain'",
            'Catalog Error: Table with name weather does not exist! Did you mean "seattle_weather"?',
            "SELECT * FROM seattle_weather WHERE weather = 'rain'",
        ),
        (
            "SELECT avg(temp) FROM w WHERE note = 'temp'",
            'Binder Error: Referenced column "temp" not found in FROM clause! Candidate bindings: "temp_max"',
            "SELECT avg(temp_max) FROM w WHERE note = 'temp'",
        ),
        (
            "SELECT city FROM airports WHERE state = 'TX' ORDER BY count(*) DESC LIMIT 1",
            'Binder Error: column "city" must appear in the GROUP BY clause or must be part of an aggregate function.',
            "SELECT city FROM airports WHERE state = 'TX' GROUP BY ALL ORDER BY count(*) DESC LIMIT 1",
        ),
    ],
)
def test_code_repairs_what_the_database_points_to(sql: str, error: str, fixed: str) -> None:
    from agentlake.lake.repair import repaired_sql

    assert repaired_sql(sql, error)[0] == fixed


def test_code_does_not_repair_to_a_column_unlike_the_one_written() -> None:
    from agentlake.lake.repair import repaired_sql

    error = 'Binder Error: Referenced column "gender" not found in FROM clause! Candidate bindings: "island"'
    assert repaired_sql("SELECT gender FROM penguins", error) is None


def test_the_question_reaches_the_plan_with_the_tables_it_names_in_detail(
    own_lake: Lake, asker: ScriptedProvider, sink: MemorySink
) -> None:
    asker.enqueue(_plan("SELECT count(*) AS n FROM penguins WHERE island = 'Biscoe'"))
    asker.enqueue("3 [SQL].")

    ask("How many penguins live on Biscoe?", lake=own_lake, model="scripted:asker")

    assert "- penguins (" in asker.history[0][0][-1].content


def test_no_sample_row_reaches_the_plan_to_be_copied(
    own_lake: Lake, asker: ScriptedProvider, sink: MemorySink
) -> None:
    asker.enqueue(_plan("SELECT count(*) AS n FROM penguins WHERE island = 'Biscoe'"))
    asker.enqueue("3 [SQL].")

    ask("How many penguins live on Biscoe?", lake=own_lake, model="scripted:asker")

    assert "one row of" not in asker.history[0][0][-1].content


def test_a_filter_on_a_value_the_question_does_not_name_is_dropped_by_code(
    own_lake: Lake, asker: ScriptedProvider, sink: MemorySink
) -> None:
    asker.enqueue(_plan("SELECT count(*) AS n FROM penguins WHERE island = 'Biscoe' AND species = 'Gentoo'"))
    asker.enqueue("3 [SQL].")

    answer = ask("How many penguins live on Biscoe?", lake=own_lake, model="scripted:asker")

    assert answer.sql == "SELECT COUNT(*) AS n FROM penguins WHERE island = 'Biscoe'"


@pytest.fixture
def shop_lake(tmp_path: Path) -> Iterator[Lake]:
    settings = Settings(data_dir=tmp_path, default_model="none", executor_model=None, llm_max_retries=0)
    files = {
        "orders": "order_id,customer_id,status\n1,C1,S\n2,C1,X\n3,C2,X\n4,C2,S\n5,C1,S\n",
        "order_statuses": "code,meaning\nS,shipped\nX,cancelled\n",
    }
    with Lake.open(settings, path=tmp_path / "lake.duckdb") as lake:
        for name, text in files.items():
            (tmp_path / f"{name}.csv").write_text(text)
            lake.ingest(tmp_path / f"{name}.csv", name)
        yield lake


def test_a_count_over_the_lookup_table_is_joined_to_the_table_asked_about_by_code(
    shop_lake: Lake, asker: ScriptedProvider, sink: MemorySink
) -> None:
    asker.enqueue(_plan("SELECT count(*) AS n FROM order_statuses WHERE meaning = 'cancelled'"))
    asker.enqueue("2 orders were cancelled [SQL].")

    answer = ask("How many orders were cancelled?", lake=shop_lake, model="scripted:asker")

    assert answer.sources[0].text == "one value: n = 2"


def test_rows_listed_for_a_how_many_question_are_counted_by_code(
    shop_lake: Lake, asker: ScriptedProvider, sink: MemorySink
) -> None:
    asker.enqueue(_plan("SELECT DISTINCT customer_id FROM orders"))
    asker.enqueue("2 customers [SQL].")

    answer = ask("How many customers placed orders?", lake=shop_lake, model="scripted:asker")

    assert answer.sources[0].text == "one value: n = 2"
