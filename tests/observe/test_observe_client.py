"""ObserverClient against a real server that is stopped and started: spool, ordered replay,
no loss, no duplicates; invalid events are refused, never spooled."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentlake.errors import UserError
from agentlake.observe import ObservedOp, Observer, ObserverClient, OpStore, RemoteSink
from agentlake.observe.service import running_service
from agentlake.settings import load_settings


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def observer(tmp_path: Path) -> Iterator[Observer]:
    with Observer(OpStore(tmp_path / "o.duckdb")) as obs:
        yield obs


def _ops(prefix: str, n: int) -> list[ObservedOp]:
    return [ObservedOp(id=f"{prefix}-{i:03d}", endpoint="tool.sql", source="agent") for i in range(n)]


def test_spools_while_down_and_replays_in_order_once_up(observer: Observer, tmp_path: Path) -> None:
    port = _free_port()
    spool = tmp_path / "spool" / "client.jsonl"
    settings = load_settings()
    with ObserverClient(f"http://127.0.0.1:{port}", spool_path=spool, timeout=2.0) as client:
        with running_service(observer, settings, port=port):
            client.send_many(_ops("up", 3))
        assert client.pending == 0
        # The service is down: every op is fsynced into the spool before send returns.
        for op in _ops("down", 5):
            client.send(op)
        assert client.pending == 5
        assert len(spool.read_text().splitlines()) == 5
        with running_service(observer, settings, port=port):
            # Spooled ops go first: this one is either queued behind them (still in back-off)
            # or sent right after their replay; either way it lands after them.
            client.send(ObservedOp(id="after-000", endpoint="tool.sql"))
            client.flush()
            assert client.pending == 0
            assert client.replayed_total in (5, 6)
            client.send(ObservedOp(id="after-001", endpoint="tool.sql"))
            # A replay after a crash between "sent" and "spool cleared" is harmless.
            client.send_many(_ops("down", 2))
    order = [op.id for op in observer.recent()]
    assert order == [
        *(f"up-{i:03d}" for i in range(3)),
        *(f"down-{i:03d}" for i in range(5)),
        "after-000",
        "after-001",
    ]
    assert observer.stats().total == 10
    assert not spool.exists() or spool.read_text() == ""


def test_a_restarted_client_replays_the_spool_it_left(observer: Observer, tmp_path: Path) -> None:
    port = _free_port()
    spool = tmp_path / "spool.jsonl"
    with ObserverClient(f"http://127.0.0.1:{port}", spool_path=spool) as client:
        client.send_many(_ops("kept", 4))
    assert len(spool.read_text().splitlines()) == 4
    with (
        running_service(observer, load_settings(), port=port),
        ObserverClient(f"http://127.0.0.1:{port}", spool_path=spool) as again,
    ):
        assert again.pending == 4
        again.send(ObservedOp(id="new-000", endpoint="tool.sql"))
    assert [op.id for op in observer.recent()] == [*(f"kept-{i:03d}" for i in range(4)), "new-000"]


def test_a_dead_processs_spool_is_adopted(observer: Observer, tmp_path: Path) -> None:
    spool_dir = tmp_path / "spool"
    spool_dir.mkdir()
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True
    )
    pid = int(dead.stdout)
    orphan = spool_dir / f"observer-{pid}-0badc0de.jsonl"
    orphan.write_text("".join(op.model_dump_json() + "\n" for op in _ops("orphan", 3)))
    alive = spool_dir / f"observer-{os.getpid()}-00000001.jsonl"  # a live client's spool is left alone
    holder = ObserverClient("http://127.0.0.1:9", spool_path=alive)
    holder.send(_ops("alive", 1)[0])  # nothing answers on port 9: spooled, and the spool is locked
    with running_service(observer, load_settings()) as url:
        with ObserverClient(url, spool_path=spool_dir / f"observer-{os.getpid()}-00000002.jsonl") as client:
            client.flush()  # the client's own background replay may already have taken it
            _wait_for(observer, 3)
    holder._closed = True  # keep its spool: stop its replayer without handing the spool over
    assert [op.id for op in observer.recent()] == ["orphan-000", "orphan-001", "orphan-002"]
    assert not orphan.exists()
    assert alive.exists()


def test_invalid_events_and_bad_keys_are_refused_not_spooled(observer: Observer, tmp_path: Path) -> None:
    with running_service(observer, load_settings(api_keys="w:write,r:read")) as url:
        with ObserverClient(url, api_key="r", spool_path=tmp_path / "s.jsonl") as reader:
            with pytest.raises(UserError, match="'write'"):
                reader.send(ObservedOp(endpoint="a"))
            assert reader.pending == 0
        with ObserverClient(url, api_key="w", spool_path=tmp_path / "s2.jsonl") as writer:
            # An op that passes the client's model but not the service's (an oversized id
            # forced in by model_construct) is refused with the field named.
            bad = ObservedOp.model_construct(**{**ObservedOp(endpoint="a").__dict__, "id": "x" * 500})
            with pytest.raises(UserError, match="id"):
                writer.send(bad)
            assert writer.pending == 0
            writer.send(ObservedOp(id="good", endpoint="a"))
    assert [op.id for op in observer.recent()] == ["good"]


def test_remote_sink_reads_through_the_service(observer: Observer, tmp_path: Path) -> None:
    observer.record_many(_ops("seen", 3))
    with running_service(observer, load_settings()) as url:
        remote = Observer(RemoteSink(ObserverClient(url, spool_path=tmp_path / "r.jsonl")))
        try:
            remote.record(ObservedOp(id="from-worker", endpoint="task.fill", source="scenario"))
            assert remote.stats().total == 4
            assert remote.stats().by_source["scenario"] == 1
            assert [op.id for op in remote.query(source="scenario")] == ["from-worker"]
            assert [op.id for op in remote.sink.recent(2)] == ["seen-002", "from-worker"]
        finally:
            remote.close()


class _RefusingSecondAppend:
    """The real store behind a sink that answers "queue full" (503) to its second append, as a
    service does when it is overloaded in the middle of a replay."""

    local = True
    submit = None  # no ticket path: every append goes through append() below

    def __init__(self, store: OpStore) -> None:
        self.store = store
        self.calls = 0

    def append(self, ops, *, timeout=None, wait_for_space=0.0):  # type: ignore[no-untyped-def]
        from agentlake.observe import QueueFullError

        self.calls += 1
        if self.calls == 2:
            raise QueueFullError("observer write queue is full", retry_after=0.1)
        return self.store.append(ops)

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        return getattr(self.store, name)


def test_a_replay_cut_short_by_a_503_resumes_in_order_without_duplicates(tmp_path: Path) -> None:
    store = OpStore(tmp_path / "o.duckdb")
    observer = Observer(_RefusingSecondAppend(store))  # type: ignore[arg-type]
    port = _free_port()
    try:
        with ObserverClient(
            f"http://127.0.0.1:{port}", spool_path=tmp_path / "s.jsonl", batch_size=2
        ) as client:
            client.send_many(_ops("sp", 6))  # down: all spooled
            with running_service(observer, load_settings(), port=port):
                assert client.flush() == 2
                assert client.pending == 4  # the second batch got a 503
                assert client.flush() == 4
                assert client.pending == 0
        assert [op.id for op in store.query(order="asc", limit=10)] == [f"sp-{i:03d}" for i in range(6)]
        assert store.count() == 6
    finally:
        observer.close()


def _wait_for(observer: Observer, count: int, seconds: float = 15.0) -> None:
    deadline = time.monotonic() + seconds
    while observer.stats().total < count and time.monotonic() < deadline:
        time.sleep(0.05)


def test_the_spool_replays_by_itself_once_the_observer_answers(observer: Observer, tmp_path: Path) -> None:
    # Issue 17.14: nothing replayed the spool until the next send or flush.
    port = _free_port()
    spool = tmp_path / "spool" / "observer-1-00000001.jsonl"
    with ObserverClient(f"http://127.0.0.1:{port}", spool_path=spool) as client:
        client.send_many(_ops("bg", 3))
        assert client.pending == 3
        with running_service(observer, load_settings(), port=port):
            _wait_for(observer, 3)
        assert client.pending == 0
    assert [op.id for op in observer.recent()] == [f"bg-{i:03d}" for i in range(3)]


def test_another_client_of_the_process_takes_over_a_closed_clients_spool(
    observer: Observer, tmp_path: Path
) -> None:
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    spool_dir = tmp_path / "spool"
    with ObserverClient(url, spool_path=spool_dir / f"observer-{os.getpid()}-0000000b.jsonl") as staying:
        leaving = ObserverClient(url, spool_path=spool_dir / f"observer-{os.getpid()}-0000000a.jsonl")
        leaving.send_many(_ops("left", 4))
        leaving.close()
        assert staying.pending == 0
        with running_service(observer, load_settings(), port=port):
            _wait_for(observer, 4)
    assert [op.id for op in observer.recent()] == [f"left-{i:03d}" for i in range(4)]
