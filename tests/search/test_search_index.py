"""The vector index: built from DuckDB through the cache, refused when stale, files rebuilt from the lake."""

from __future__ import annotations

import shutil

import pyarrow as pa
import pytest

from agentlake.errors import NotFoundError, UserError
from agentlake.lake import Lake
from agentlake.lake.index import (
    StaleIndexError,
    build_index,
    drop_index,
    ensure_index,
    index_info,
    index_root,
    index_status,
    list_indexes,
    vectors_table,
)
from agentlake.lake.search import hybrid_search


def new_worker(lake: Lake, worker_id: int, resume: str) -> pa.Table:
    row = lake.read_arrow("SELECT * FROM workers ORDER BY worker_id LIMIT 1").to_pylist()[0]
    row.update(worker_id=worker_id, resume_text=resume)
    return pa.Table.from_pylist([row], schema=lake.read_arrow("SELECT * FROM workers LIMIT 0").schema)


def test_rebuilding_unchanged_rows_embeds_nothing(lake: Lake) -> None:
    result = build_index(lake, "workers", "resume_text")
    assert result.embedded == 0
    assert result.cached == result.index.row_count
    info = index_info(lake, "workers")
    assert (info.key_column, info.model, info.dimension) == ("worker_id", "local:all-MiniLM-L6-v2", 384)
    stored = lake.read_arrow(f"SELECT count(*) AS n FROM {vectors_table('workers')}").column("n")[0].as_py()
    assert stored == info.row_count == lake.dataset("workers").row_count
    assert [i.dataset for i in list_indexes(lake)] == ["profiles", "workers"]


def test_an_ingest_makes_the_index_stale_until_rebuilt(lake: Lake) -> None:
    resume = "Underwater welder and commercial diver, AWS D3.6 certified, offshore platforms."
    lake.write_table("workers", new_worker(lake, 999_001, resume))
    with pytest.raises(StaleIndexError, match="agentlake index build workers --column resume_text"):
        hybrid_search(lake, "workers", "underwater welding diver")
    assert not index_status(lake, "workers")[0].fresh

    result = ensure_index(lake, "workers", "resume_text")
    assert result is not None
    assert result.embedded == 1  # only the new row reaches the model
    top = hybrid_search(lake, "workers", "underwater welding diver", k=1)[0]
    assert (top.key, top.doc_id, top.chunk_text) == (999_001, "W-999001", resume)
    assert ensure_index(lake, "workers", "resume_text") is None  # fresh now
    assert index_status(lake, "workers")[0].fresh


def test_rows_changed_behind_the_catalog_are_caught(lake: Lake) -> None:
    # A raw write (not an ingest) does not touch the catalog; the filtered path notices the
    # unknown key and `index status` notices the content.
    def sneak(conn) -> None:
        conn.execute("UPDATE workers SET resume_text = 'changed' WHERE worker_id = 1")
        conn.execute(
            "INSERT INTO workers SELECT * REPLACE (777777 AS worker_id) FROM workers WHERE worker_id = 2"
        )

    lake.write(sneak)
    with pytest.raises(StaleIndexError, match="777777"):
        hybrid_search(lake, "workers", "welder", where="worker_id >= 777777")
    state = index_status(lake, "workers")[0]
    assert not state.fresh
    assert "rows" in state.reason


def test_missing_or_damaged_files_are_rebuilt_from_the_lake(lake: Lake) -> None:
    before = [s.key for s in hybrid_search(lake, "profiles", "hospital nurse", k=4)]
    shutil.rmtree(index_root(lake) / "profiles")
    # A fresh process would have nothing loaded; forget this one's copy too.
    from agentlake.lake import index as index_module

    index_module._loaded.clear()
    assert [s.key for s in hybrid_search(lake, "profiles", "hospital nurse", k=4)] == before
    files = list((index_root(lake) / "profiles").iterdir())
    assert len(files) == 1
    assert (files[0] / "vectors.npy").is_file()

    (files[0] / "meta.json").write_text("{not json")
    index_module._loaded.clear()
    assert [s.key for s in hybrid_search(lake, "profiles", "hospital nurse", k=4)] == before


def test_drop_removes_the_index(lake: Lake) -> None:
    drop_index(lake, "profiles")
    with pytest.raises(NotFoundError, match="no vector index"):
        hybrid_search(lake, "profiles", "nurse")
    assert not (index_root(lake) / "profiles").exists()


@pytest.mark.parametrize(
    "dataset, column, key, error, message",
    [
        ("staff", "bio", None, NotFoundError, "unknown dataset 'staff'"),
        ("workers", "cv", None, UserError, "no column 'cv'.*resume_text"),
        ("workers", "reliability", None, UserError, "not text"),
        ("workers", "resume_text", "email", UserError, "integer key"),
        ("placements", "role", None, UserError, "no key column: pass --key"),
        ("placements", "role", "worker_id", UserError, "duplicate values"),
    ],
)
def test_bad_build_input_writes_nothing(lake: Lake, dataset, column, key, error, message) -> None:
    before = {i.dataset: i.fingerprint for i in list_indexes(lake)}
    with pytest.raises(error, match=message):
        build_index(lake, dataset, column, key=key)
    assert {i.dataset: i.fingerprint for i in list_indexes(lake)} == before


def test_a_change_by_another_process_is_seen_after_reopening(data_dir, tmp_path) -> None:
    import subprocess
    import sys

    with Lake.open() as lake:
        assert hybrid_search(lake, "profiles", "nurse", k=1)[0].key == 2  # loaded and checked
    extra = tmp_path / "more.csv"
    extra.write_text("id,bio\n9,Pharmacy technician filling prescriptions in a retail drugstore.\n")
    done = subprocess.run(
        [sys.executable, "-m", "agentlake.cli.main", "ingest", str(extra), "--dataset", "profiles"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    with Lake.open() as lake, pytest.raises(StaleIndexError):
        hybrid_search(lake, "profiles", "nurse", k=1)
