"""The Lake: catalog, atomic ingest modes, schema checks, guarded queries, one writer."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from agentlake.errors import NotFoundError, RunError, UserError
from agentlake.lake import Lake
from agentlake.settings import load_settings


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.fixture
def lake():
    with Lake.open() as opened:
        yield opened


def test_open_creates_the_file_under_data_dir_and_reopens(tmp_path: Path) -> None:
    settings = load_settings()
    with Lake.open(settings) as lake:
        assert lake.path == settings.lake_path.resolve()
        assert lake.datasets() == []
    assert settings.lake_path.exists()
    with Lake.open(settings) as lake:
        assert lake.read_arrow("SELECT name FROM _migrations ORDER BY name").column("name").to_pylist() == [
            "lake_001_catalog",
            "lake_002_embedding_cache",
            "lake_003_vector_indexes",
        ]


def test_append_is_default_and_every_ingest_is_in_the_history(lake: Lake, tmp_path: Path) -> None:
    first = lake.ingest(write(tmp_path / "a.csv", "id,name,score\n1,a,0.5\n2,b,0.7\n"), "items", key="id")
    second = lake.ingest(write(tmp_path / "b.csv", "id,name,score\n3,c,0.1\n"), "items")
    assert (first.rows_before, first.rows_after, second.rows_before, second.rows_after) == (0, 2, 2, 3)
    info = lake.dataset("items")
    assert info.row_count == 3
    assert info.key == "id"
    assert info.columns == [("id", "BIGINT"), ("name", "VARCHAR"), ("score", "DOUBLE")]
    assert [(h.mode, h.rows_in, h.rows_before, h.rows_after) for h in info.history] == [
        ("append", 2, 0, 2),
        ("append", 1, 2, 3),
    ]
    assert info.history[0].source.endswith("a.csv")
    assert info.created_at <= info.updated_at


def test_replace_swaps_the_data_and_keeps_the_history(lake: Lake, tmp_path: Path) -> None:
    lake.ingest(write(tmp_path / "a.csv", "id,name\n1,a\n2,b\n"), "items")
    result = lake.ingest(write(tmp_path / "r.csv", "id,other\n9,z\n"), "items", mode="replace")
    assert (result.rows_before, result.rows_after) == (2, 1)
    assert lake.query("SELECT * FROM items").to_dicts() == [{"id": 9, "other": "z"}]
    assert [h.mode for h in lake.dataset("items").history] == ["append", "replace"]


def test_upsert_updates_matching_keys_and_adds_the_rest(lake: Lake, tmp_path: Path) -> None:
    lake.ingest(write(tmp_path / "a.csv", "id,name\n1,a\n2,b\n"), "items", key="id")
    result = lake.ingest(write(tmp_path / "u.csv", "id,name\n2,bb\n3,c\n"), "items", mode="upsert", key="id")
    assert (result.rows_before, result.rows_after) == (2, 3)
    assert lake.query("SELECT id, name FROM items ORDER BY id").rows == [[1, "a"], [2, "bb"], [3, "c"]]


def test_upsert_needs_a_key_and_a_unique_one(lake: Lake, tmp_path: Path) -> None:
    lake.ingest(write(tmp_path / "a.csv", "id,name\n1,a\n"), "items", key="id")
    with pytest.raises(UserError, match="upsert needs a key"):
        lake.ingest(write(tmp_path / "u.csv", "id,name\n1,x\n"), "items", mode="upsert")
    with pytest.raises(UserError, match="not unique in the input"):
        lake.ingest(write(tmp_path / "d.csv", "id,name\n1,x\n1,y\n"), "items", mode="upsert", key="id")
    with pytest.raises(UserError, match="keyed by id"):
        lake.ingest(write(tmp_path / "n.csv", "id,name\n1,x\n"), "items", mode="upsert", key="name")
    assert lake.query("SELECT * FROM items").rows == [[1, "a"]]
    assert len(lake.dataset("items").history) == 1


def test_append_onto_a_keyed_dataset_refuses_existing_keys(lake: Lake, tmp_path: Path) -> None:
    lake.ingest(write(tmp_path / "a.csv", "id,name\n1,a\n2,b\n"), "items", key="id")
    with pytest.raises(UserError, match="already in items.*--mode upsert --key id"):
        lake.ingest(write(tmp_path / "b.csv", "id,name\n2,x\n3,y\n"), "items")
    assert lake.dataset("items").row_count == 2


def test_schema_mismatch_names_missing_extra_and_mistyped_columns(lake: Lake, tmp_path: Path) -> None:
    lake.ingest(write(tmp_path / "a.csv", "id,name,score\n1,a,0.5\n"), "items")
    table = pa.table({"id": pa.array(["x"]), "extra": pa.array([1])})  # no name/score, id not a number
    with pytest.raises(UserError) as caught:
        lake.write_table("items", table)
    message = caught.value.message
    assert "lacks column(s) name, score" in message
    assert "new column(s) extra" in message
    assert "--evolve" in message
    assert "id is BIGINT in items but the input has VARCHAR values such as 'x'" in message
    assert lake.dataset("items").row_count == 1


def test_lossy_numeric_values_are_refused_not_rounded(lake: Lake) -> None:
    lake.write_table("items", pa.table({"n": pa.array([1], pa.int32())}))
    with pytest.raises(UserError, match="n is INTEGER in items but the input has DOUBLE values such as 1.5"):
        lake.write_table("items", pa.table({"n": pa.array([2.0, 1.5])}))
    lake.write_table("items", pa.table({"n": pa.array([2.0])}))  # exact values convert
    assert lake.query("SELECT n FROM items ORDER BY n").rows == [[1], [2]]


def test_evolve_adds_new_nullable_columns(lake: Lake, tmp_path: Path) -> None:
    lake.ingest(write(tmp_path / "a.csv", "id,name\n1,a\n"), "items")
    result = lake.ingest(write(tmp_path / "e.csv", "id,name,shift\n2,b,night\n"), "items", evolve=True)
    assert result.added_columns == ["shift"]
    assert lake.query("SELECT id, shift FROM items ORDER BY id").rows == [[1, None], [2, "night"]]
    assert lake.dataset("items").history[-1].added_columns == ["shift"]


def test_parquet_and_jsonl_files(lake: Lake, tmp_path: Path) -> None:
    pq.write_table(pa.table({"id": [1, 2], "city": ["Cleveland", "Akron"]}), tmp_path / "c.parquet")
    lake.ingest(tmp_path / "c.parquet", "cities")
    lake.ingest(
        write(tmp_path / "c.jsonl", '{"id": 3, "city": "Toledo"}\n{"id": 4, "city": "Dayton"}\n'), "cities"
    )
    assert lake.query("SELECT city FROM cities ORDER BY id").rows == [
        ["Cleveland"],
        ["Akron"],
        ["Toledo"],
        ["Dayton"],
    ]


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        (
            "m.csv",
            "id,name,score\n1,a,0.5\n2,b\n3,c,0.1\n",
            r"m.csv line 3 has 2 fields but the header has 3",
        ),
        ("e.csv", "", r"e.csv is empty"),
        ("h.csv", "id,name\n", r"has no data rows"),
        ("x.xlsx", "id\n1\n", r"cannot tell the format"),
        ("j.jsonl", '{"id": 1}\n{"id": \n', r"cannot read .*j.jsonl as JSON"),
    ],
)
def test_bad_files_say_what_is_wrong_and_write_nothing(
    lake: Lake, tmp_path: Path, name: str, content: str, message: str
) -> None:
    with pytest.raises(UserError, match=message):
        lake.ingest(write(tmp_path / name, content), "items")
    assert lake.datasets() == []


def test_a_wrong_value_type_on_append_names_the_line_and_column(lake: Lake, tmp_path: Path) -> None:
    lake.ingest(write(tmp_path / "a.csv", "id,score\n1,0.5\n"), "items")
    with pytest.raises(UserError, match=r"line 3: column score has 'high', which is not a DOUBLE"):
        lake.ingest(write(tmp_path / "b.csv", "id,score\n2,0.7\n3,high\n"), "items")
    assert lake.dataset("items").row_count == 1


def test_missing_file_and_bad_names(lake: Lake, tmp_path: Path) -> None:
    with pytest.raises(UserError, match="file not found"):
        lake.ingest(tmp_path / "nope.csv", "items")
    for bad in ("Items", "1items", "items;drop", "_catalog"):
        with pytest.raises(UserError, match="invalid dataset name"):
            lake.ingest(write(tmp_path / "a.csv", "id\n1\n"), bad)
    with pytest.raises(UserError, match="unknown ingest mode"):
        lake.ingest(tmp_path / "a.csv", "items", mode="merge")  # type: ignore[arg-type]


def test_unknown_dataset_lists_the_known_ones(lake: Lake) -> None:
    with pytest.raises(NotFoundError, match="no datasets yet"):
        lake.dataset("workers")
    lake.write_table("clients", pa.table({"id": [1]}))
    with pytest.raises(NotFoundError, match="unknown dataset 'workers'; known datasets: clients"):
        lake.dataset("workers")


def test_write_is_one_transaction(lake: Lake) -> None:
    def half_then_fail(conn):
        conn.execute("CREATE TABLE scratch AS SELECT 1 AS x")
        raise UserError("stop")

    with pytest.raises(UserError):
        lake.write(half_then_fail)
    assert lake.read_arrow(
        "SELECT count(*) AS n FROM duckdb_tables() WHERE table_name = 'scratch'"
    ).to_pylist() == [{"n": 0}]

    # a DuckDB error after a half-read result becomes a RunError and leaves the writer usable
    def broken(conn):
        conn.execute("SELECT * FROM range(10)").fetchone()
        conn.execute("SELECT * FROM nowhere")

    with pytest.raises(RunError, match="lake write failed: Catalog Error"):
        lake.write(broken)
    assert lake.write_table("items", pa.table({"id": [1]})).rows_after == 1
    # a write inside a write joins the outer transaction
    assert lake.write(lambda conn: lake.write(lambda inner: inner is conn)) is True


def test_writes_from_threads_are_serialized(lake: Lake) -> None:
    lake.write(lambda conn: conn.execute("CREATE TABLE counter (n INTEGER); INSERT INTO counter VALUES (0)"))

    def bump(conn):
        (n,) = conn.execute("SELECT n FROM counter").fetchone()
        time.sleep(0.002)  # widen the race a missing lock would lose
        conn.execute("UPDATE counter SET n = ?", [n + 1])

    threads = [threading.Thread(target=lambda: [lake.write(bump) for _ in range(10)]) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert lake.query("SELECT n FROM counter").rows == [[40]]


def test_query_caps_rows_and_flags_truncation(lake: Lake) -> None:
    capped = lake.query("SELECT * FROM range(50)", max_rows=10)
    assert len(capped.rows) == 10
    assert capped.truncated
    exact = lake.query("SELECT * FROM range(10)", max_rows=10)
    assert len(exact.rows) == 10
    assert not exact.truncated
    assert lake.query("SELECT ? + 1 AS answer", params=[41]).to_dicts() == [{"answer": 42}]
    assert lake.read_arrow("SELECT * FROM range(5000)").num_rows == 5000  # trusted reads are not capped


def test_default_cap_comes_from_settings(tmp_path: Path) -> None:
    with Lake.open(load_settings(sql_max_rows=7)) as lake:
        result = lake.query("SELECT * FROM range(100)")
    assert len(result.rows) == 7
    assert result.truncated


def test_timeout_really_interrupts(lake: Lake) -> None:
    started = time.perf_counter()
    with pytest.raises(RunError, match=r"interrupted after the 0.5 s timeout.*sql_timeout_s"):
        lake.query("SELECT count(*) FROM range(1000000000000) a", timeout_s=0.5)
    assert time.perf_counter() - started < 5
    assert lake.query("SELECT 1 AS ok").rows == [[1]]  # the lake is usable afterwards


def test_wrong_queries_are_user_errors(lake: Lake) -> None:
    with pytest.raises(UserError, match="Table with name nope does not exist"):
        lake.query("SELECT * FROM nope")
    with pytest.raises(UserError, match="SQL syntax error"):
        lake.query("SELEC 1")


def test_external_access_is_off_even_for_trusted_reads(lake: Lake, tmp_path: Path) -> None:
    path = write(tmp_path / "secret.csv", "a\n1\n")
    with pytest.raises(RunError, match="disabled by configuration"):
        lake.read_arrow(f"SELECT * FROM read_csv('{path}')")


def test_read_only_lake(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="no lake at"):
        Lake.open(read_only=True)
    with Lake.open() as lake:
        lake.write_table("items", pa.table({"id": [1, 2]}))
    with Lake.open(read_only=True) as lake:
        assert lake.query("SELECT count(*) FROM items").rows == [[2]]
        with pytest.raises(UserError, match="opened read-only"):
            lake.write_table("items", pa.table({"id": [3]}))


def test_internal_tables_are_not_datasets_and_only_library_code_reads_them(lake: Lake) -> None:
    lake.write_table("items", pa.table({"id": [1]}))
    assert [d.name for d in lake.datasets()] == ["items"]
    assert lake.read_arrow("SELECT dataset, mode FROM _ingest_history").to_pylist() == [
        {"dataset": "items", "mode": "append"}
    ]
    with pytest.raises(UserError, match="internal tables"):
        lake.query("SELECT dataset, mode FROM _ingest_history")


def test_cursors_read_while_the_writer_writes(lake: Lake) -> None:
    lake.write_table("items", pa.table({"id": list(range(1000))}))
    counts: list[int] = []

    def reader() -> None:
        with lake.cursor() as cur:
            for _ in range(20):
                counts.append(cur.execute("SELECT count(*) FROM items").fetchone()[0])

    thread = threading.Thread(target=reader)
    thread.start()
    for start in range(1000, 1100, 10):
        lake.write_table("items", pa.table({"id": list(range(start, start + 10))}))
    thread.join()
    assert counts
    assert all(1000 <= c <= 1100 and c % 10 == 0 for c in counts)
