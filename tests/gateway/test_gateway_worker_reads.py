"""GET /worker/{id} from its cache of rendered records: the same JSON as the model renders, the
lake's changes seen at once, a key index made for the misses, misses grouped into shared reads,
and a bounded memory."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa

from agentlake.errors import UserError
from agentlake.gateway.schemas import Worker
from agentlake.gateway.worker_cache import WorkerCache
from agentlake.lake import Lake

H = dict[str, dict[str, str]]


def _row(lake: Lake, worker_id: int) -> pa.Table:
    return lake.read_arrow("SELECT * FROM workers WHERE worker_id = ?", [worker_id])


def test_a_cached_answer_is_what_the_model_renders(gateway: Any, keys: H) -> None:
    first = gateway.get("/worker/3", headers=keys["read"])
    again = gateway.get("/worker/3", headers=keys["read"])
    assert first.status_code == again.status_code == 200
    assert first.headers["content-type"] == "application/json"
    assert again.content == first.content  # served from the cache the second time
    workers = gateway.app.state.services.workers
    assert workers.hits >= 1
    assert workers.misses == 1
    lake = gateway.app.state.services.lake
    expected = Worker(**_row(lake, 3).to_pylist()[0]).model_dump(mode="json")
    assert first.json() == expected


def test_a_change_to_the_lake_is_served_at_once(gateway: Any, keys: H) -> None:
    lake = gateway.app.state.services.lake
    assert gateway.get("/worker/5", headers=keys["read"]).json()["name"] != "Renamed Person"
    renamed = _row(lake, 5).set_column(
        _row(lake, 5).schema.get_field_index("name"), "name", pa.array(["Renamed Person"])
    )
    lake.write_table("workers", renamed, mode="upsert", key="worker_id")
    assert gateway.get("/worker/5", headers=keys["read"]).json()["name"] == "Renamed Person"

    # A column added by an ingest appears in the record (the model keeps extra fields).
    extra = _row(lake, 6).append_column("badge", pa.array(["B-6"]))
    lake.write_table("workers", extra, mode="upsert", key="worker_id", evolve=True)
    assert gateway.get("/worker/6", headers=keys["read"]).json()["badge"] == "B-6"

    # A worker removed by a replace is gone, not served from memory.
    assert gateway.get("/worker/7", headers=keys["read"]).status_code == 200
    lake.write_table("workers", _row(lake, 8), mode="replace")
    gone = gateway.get("/worker/7", headers=keys["read"])
    assert gone.status_code == 404
    assert "no worker with worker_id 7" in gone.json()["error"]["message"]
    assert gateway.get("/worker/8", headers=keys["read"]).status_code == 200


def test_misses_read_through_a_key_index(gateway: Any, keys: H) -> None:
    lake = gateway.app.state.services.lake
    with lake.cursor() as cur:
        before = cur.execute(
            "SELECT index_name FROM duckdb_indexes() WHERE table_name = 'workers'"
        ).fetchall()
    assert before == []
    assert gateway.get("/worker/9", headers=keys["read"]).status_code == 200
    with lake.cursor() as cur:
        after = cur.execute("SELECT index_name FROM duckdb_indexes() WHERE table_name = 'workers'").fetchall()
    assert after == [("workers__worker_id__key",)]


def test_the_cache_is_bounded(gateway: Any) -> None:
    services = gateway.app.state.services
    cache = WorkerCache(lambda: services.lake, max_entries=2)
    for worker_id in (1, 2, 3):
        cache.load_many([worker_id])
    assert len(cache) == 2
    assert cache.cached(1) is None  # the least recently used went first
    assert cache.cached(3) is not None
    assert cache.cached(2) is not None


def test_concurrent_misses_share_reads_and_each_gets_its_own_record(gateway: Any, keys: H) -> None:
    ids = [*range(20, 60), 999_999]  # the last one is no worker

    async def fetch_all() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=gateway.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
            return await asyncio.gather(*(client.get(f"/worker/{i}", headers=keys["read"]) for i in ids))

    answers = asyncio.run(fetch_all())
    lake = gateway.app.state.services.lake
    for worker_id, answer in zip(ids[:-1], answers, strict=False):
        assert answer.status_code == 200
        assert answer.json() == Worker(**_row(lake, worker_id).to_pylist()[0]).model_dump(mode="json")
    unknown = answers[-1]
    assert unknown.status_code == 404
    assert "no worker with worker_id 999999" in unknown.json()["error"]["message"]
    workers = gateway.app.state.services.workers
    assert workers.misses == len(ids)
    assert workers.reads <= len(ids) // 2  # grouped: one query served several misses


def test_a_group_is_one_read_and_a_request_that_goes_away_leaves_the_others(gateway: Any) -> None:
    services = gateway.app.state.services
    cache = WorkerCache(lambda: services.lake)

    async def scenario() -> tuple[list[bytes], bool]:
        leaving = asyncio.ensure_future(cache.read(3))
        staying = [asyncio.ensure_future(cache.read(i)) for i in (3, 4, 5)]
        await asyncio.sleep(0)  # every read has joined the group; the reader has not run yet
        leaving.cancel()
        bodies = await asyncio.gather(*staying)
        return bodies, leaving.cancelled()

    bodies, left = asyncio.run(scenario())
    assert left
    assert bodies[0] == cache.cached(3)
    assert bodies[1] == cache.cached(4)
    assert bodies[2] == cache.cached(5)
    assert cache.reads == 1
    assert cache.misses == 3  # ids 3, 4 and 5 in one query


def test_every_waiting_request_hears_the_reads_error(tmp_path: Path) -> None:
    with Lake.open(path=tmp_path / "empty.duckdb") as lake:  # no workers dataset
        cache = WorkerCache(lambda: lake)

        async def scenario() -> list[BaseException | bytes]:
            return await asyncio.gather(*(cache.read(i) for i in (1, 2, 3)), return_exceptions=True)

        outcomes = asyncio.run(scenario())
    assert len(outcomes) == 3
    assert all(isinstance(o, UserError) and "no workers dataset" in str(o) for o in outcomes)
    assert cache.reads == 0  # the read failed: nothing was read or kept
