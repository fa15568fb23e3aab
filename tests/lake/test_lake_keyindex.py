"""Key indexes: created once, used by point reads, and compatible with every ingest mode."""

from __future__ import annotations

import pyarrow as pa
import pytest

from agentlake.errors import UserError
from agentlake.lake import Lake
from agentlake.lake.keyindex import ensure_key_index, key_index_name
from agentlake.settings import load_settings


def _people(ids: range, name: str = "n") -> pa.Table:
    return pa.table({"person_id": list(ids), "name": [f"{name}{i}" for i in ids]})


def _indexes(lake: Lake) -> list[str]:
    with lake.cursor() as cur:
        return [
            row[0] for row in cur.execute("SELECT index_name FROM duckdb_indexes() ORDER BY 1").fetchall()
        ]


def _plan(lake: Lake) -> str:
    # EXPLAIN ANALYZE: DuckDB chooses the index scan when the query runs, not when it is planned.
    with lake.cursor() as cur:
        return "\n".join(
            row[1]
            for row in cur.execute("EXPLAIN ANALYZE SELECT * FROM people WHERE person_id = 7").fetchall()
        )


def test_the_index_is_created_once_and_point_reads_use_it() -> None:
    with Lake.open(load_settings()) as lake:
        lake.write_table("people", _people(range(2000)))
        assert "Type: Sequential Scan" in _plan(lake)
        token = lake.change_token
        assert ensure_key_index(lake, "people", "person_id") is True
        assert lake.change_token != token  # a write: caches keyed on the token are dropped
        assert _indexes(lake) == [key_index_name("people", "person_id")]
        assert ensure_key_index(lake, "people", "person_id") is False  # already there: nothing written
        assert "Type: Index Scan" in _plan(lake)
        assert lake.query("SELECT name FROM people WHERE person_id = ?", params=[7]).rows == [["n7"]]


def test_every_ingest_mode_works_with_the_index_and_replace_drops_it() -> None:
    with Lake.open(load_settings()) as lake:
        lake.write_table("people", _people(range(100)))
        ensure_key_index(lake, "people", "person_id")
        lake.write_table("people", _people(range(100, 110)))  # append
        lake.write_table("people", _people(range(5, 15), name="u"), mode="upsert", key="person_id")
        extra = _people(range(200, 201)).append_column("city", pa.array(["Cleveland"]))
        lake.write_table("people", extra, evolve=True)  # adds a column under the index
        rows = lake.query("SELECT person_id, name FROM people WHERE person_id IN (4, 5, 105) ORDER BY 1").rows
        assert rows == [[4, "n4"], [5, "u5"], [105, "n105"]]
        assert lake.query("SELECT count(*) FROM people").rows == [[111]]

        lake.write_table("people", _people(range(3)), mode="replace")
        assert _indexes(lake) == []  # gone with the old table ...
        assert ensure_key_index(lake, "people", "person_id") is True  # ... and made again


def test_nothing_to_index_is_not_an_error_and_a_bad_name_is() -> None:
    settings = load_settings()
    with Lake.open(settings) as lake:
        assert ensure_key_index(lake, "people", "person_id") is False  # no such dataset yet
        lake.write_table("people", _people(range(3)))
        assert ensure_key_index(lake, "people", "no_such_column") is False
        with pytest.raises(UserError, match="invalid dataset name"):
            ensure_key_index(lake, "People; DROP TABLE people", "person_id")
        assert _indexes(lake) == []
    with Lake.open(settings, read_only=True) as reader:
        assert ensure_key_index(reader, "people", "person_id") is False
