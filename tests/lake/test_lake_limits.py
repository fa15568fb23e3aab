"""The lake under hostile SQL (issue 17): every SQL path is bounded in time, memory, result bytes
and error text; WHERE fragments cannot close the caller's parentheses; read SQL does not show
the server's internals."""

from __future__ import annotations

import json
import time

import pyarrow as pa
import pytest

from agentlake.errors import RunError, UserError
from agentlake.lake import Lake, check_select, check_where
from agentlake.lake.index import IndexInfo
from agentlake.lake.search import _duckdb_filter_keys, hybrid_search
from agentlake.settings import load_settings
from agentlake.workforce.learning import StaffingAction


@pytest.fixture
def lake():
    with Lake.open(load_settings(sql_timeout_s=1.0)) as opened:
        opened.write_table("items", pa.table({"id": list(range(3000)), "state": ["OH", "PA", "NY"] * 1000}))
        yield opened


# --- 17.2: a fragment cannot escape its parentheses -----------------------------------------


@pytest.mark.parametrize(
    "fragment",
    [
        "state = 'OH') OR (1=1",
        "1=1) WINDOW w AS (ORDER BY worker_id",
        "1=1) OR (state = 'PA'",
    ],
)
def test_a_fragment_cannot_close_the_callers_parenthesis(fragment: str) -> None:
    with pytest.raises(UserError, match="closes a parenthesis it did not open"):
        check_where(fragment)


def test_balanced_fragments_with_or_still_pass() -> None:
    assert check_where("(state = 'OH') OR (state = 'PA')") == "(state = 'OH') OR (state = 'PA')"


def test_an_escaping_lesson_filter_is_refused_before_any_search(lake: Lake) -> None:
    with pytest.raises(ValueError, match="closes a parenthesis"):
        StaffingAction(extra_where="state = 'OH') OR (1=1")


# --- 17.1 and 17.3: one timeout that really interrupts, a memory limit ------------------------


def test_a_slow_search_filter_is_interrupted_at_the_timeout(lake: Lake) -> None:
    info = IndexInfo.model_construct(dataset="items", key_column="id")
    started = time.perf_counter()
    with pytest.raises(RunError, match=r"search filter was interrupted after the 1 s timeout"):
        _duckdb_filter_keys(lake, info, "(SELECT count(*) FROM items a, items b, items c) > 0")
    assert time.perf_counter() - started < 2.5


def test_library_reads_with_a_lesson_filter_are_interrupted_at_the_timeout(lake: Lake) -> None:
    started = time.perf_counter()
    with pytest.raises(RunError, match=r"interrupted after the 1 s timeout.*sql_timeout_s"):
        lake.read_bounded(
            f"SELECT * FROM items WHERE ({check_where('(SELECT count(*) FROM items a, items b, items c) > 0')})",
            what="the candidate search",
        )
    overrun = time.perf_counter() - started - 1.0
    assert overrun < 1.5


def test_a_query_is_interrupted_close_to_its_timeout(lake: Lake) -> None:
    started = time.perf_counter()
    with pytest.raises(RunError, match="interrupted after the 0.5 s timeout"):
        lake.query("SELECT count(*) FROM range(1000000000000) a", timeout_s=0.5)
    assert time.perf_counter() - started < 1.5


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT count(*) FROM unnest(range(100000000))",
        "SELECT len(range(100000000))",
        "SELECT len(list_resize([1], 300000000))",
        "SELECT len(range(n)) FROM (SELECT 5 AS n)",
        "SELECT list_transform(range(10), lambda x: range(10))",
        "SELECT length(printf('%0500000000d', 1))",
    ],
)
def test_values_no_interrupt_can_stop_are_refused_at_once(lake: Lake, sql: str) -> None:
    started = time.perf_counter()
    with pytest.raises(
        UserError, match=r"\(\) (in read-only SQL needs literal sizes|is not allowed inside a lambda)"
    ):
        lake.query(sql)
    assert time.perf_counter() - started < 0.5


def test_small_built_values_still_work(lake: Lake) -> None:
    assert lake.query("SELECT len(range(10)) AS n, repeat('ab', 3) AS s").rows == [[10, "ababab"]]


def test_the_lake_runs_under_its_memory_limit(tmp_path) -> None:
    with Lake.open(load_settings(duckdb_memory_limit="100MB")) as lake:
        with lake.cursor() as cur:
            limit = cur.execute("SELECT current_setting('memory_limit')").fetchone()[0]
        assert limit == "95.3 MiB"
        with pytest.raises(
            RunError, match=r"more memory than the lake's limit of 100MB.*duckdb_memory_limit"
        ):
            lake.query("SELECT list(range) FROM range(100000000)")


# --- 17.4: bytes of results and of error messages -------------------------------------------


def test_results_are_cut_at_the_byte_cap(tmp_path) -> None:
    with Lake.open(load_settings(sql_max_result_bytes=100_000)) as lake:
        lake.write_table("docs", pa.table({"text": ["x" * 9000] * 200}))
        many = lake.query("SELECT text FROM docs")
        one = lake.query("SELECT string_agg(text, '') AS all_text FROM docs")
        listed = lake.query("SELECT list(range) AS numbers FROM range(10000000)")
    assert many.truncated
    assert len(json.dumps(many.rows)) <= 100_000
    assert one.truncated
    assert len(json.dumps(one.rows)) <= 100_000
    assert one.rows[0][0].startswith("x" * 1000)
    assert listed.truncated
    assert len(json.dumps(listed.rows)) <= 100_000
    assert listed.rows[0][0][:3] == [0, 1, 2]


def test_huge_values_are_refused_before_they_are_built(lake: Lake) -> None:
    with pytest.raises(UserError, match=r"repeat\(\) in read-only SQL needs literal sizes"):
        lake.query("SELECT repeat('x', 100000000)")


def test_error_messages_do_not_echo_huge_values(lake: Lake) -> None:
    lake.write_table("docs", pa.table({"text": ["y" * 9000] * 200}))
    with pytest.raises(UserError) as refused:
        lake.query("SELECT CAST(string_agg(text, '') AS INTEGER) FROM docs")
    assert len(refused.value.message) < 600


def test_search_filter_errors_do_not_echo_huge_values(lake: Lake) -> None:
    lake.write_table("docs", pa.table({"id": [1], "text": ["z" * 9000]}))
    info = IndexInfo.model_construct(dataset="docs", key_column="id")
    with pytest.raises(UserError) as refused:
        _duckdb_filter_keys(lake, info, check_where("CAST(text AS INTEGER) = 1"))
    assert len(refused.value.message) < 600


# --- 17.12: read SQL does not show server internals -----------------------------------------


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT source FROM _ingest_history",
        "SELECT * FROM main._catalog",
        'SELECT * FROM "_embedding_cache"',
        "SELECT * FROM items WHERE id IN (SELECT 1 FROM _vector_indexes)",
        "DESCRIBE _migrations",
    ],
)
def test_internal_tables_are_not_readable(lake: Lake, sql: str) -> None:
    with pytest.raises(UserError, match="internal tables"):
        lake.query(sql)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT current_setting('temp_directory')",
        "SELECT current_setting('home_directory')",
        "SELECT * FROM duckdb_settings()",
        "SELECT path FROM duckdb_databases()",
    ],
)
def test_settings_and_paths_are_not_readable(sql: str) -> None:
    with pytest.raises(UserError, match="not allowed"):
        check_select(sql)


def test_no_answer_names_the_data_directory(lake: Lake, tmp_path) -> None:
    lake.ingest(_csv(tmp_path), "people")
    answers = []
    for sql in (
        "SELECT * FROM people",
        "SHOW TABLES",
        "SELECT * FROM duckdb_tables()",
        "SELECT * FROM duckdb_columns()",
    ):
        answers.append(json.dumps(lake.query(sql).rows, default=str))
    assert not any(str(tmp_path) in answer for answer in answers)


def _csv(tmp_path):
    path = tmp_path / "people.csv"
    path.write_text("id,name\n1,Ann\n")
    return path


def test_hybrid_search_filters_pass_the_same_guard(lake: Lake) -> None:
    with pytest.raises(UserError, match="closes a parenthesis"):
        hybrid_search(lake, "items", "anything", where="state = 'OH') OR (1=1")
