"""The op store's PostgreSQL stopped and started again under load, through a real observer service
on 127.0.0.1: what was acknowledged is stored once, what was not is answered 503 with
Retry-After (or spooled by ObserverClient and delivered later), reads answer 503 while it is
down, and the same service takes ops again once the server is back, without a restart.

The server is a cluster of this module's own (`LocalCluster`), stopped with `pg_ctl stop` as
an operator would: `fast` (sessions ended, a clean shutdown) and `immediate` (like a crash; the
next start recovers from the write-ahead log). The 60 s run with two restarts through a real
`agentlake serve` is benchmarks/bench_pg_restart.py (tests/gateway/test_gateway_pg_restart.py)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import psycopg
import pytest

from agentlake.observe import ObservedOp, Observer, observe
from agentlake.observe.append import StoreUnavailableError
from agentlake.observe.client import ObserverClient
from agentlake.observe.pg_store import PgOpStore
from agentlake.observe.service import running_service
from agentlake.settings import load_settings

LOAD_BEFORE_S = 0.8
DOWN_S = 1.5
LOAD_AFTER_S = 3.0


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    from agentlake.postgres import LocalCluster, server_binaries

    if server_binaries() is None:
        pytest.skip("PostgreSQL's server programs are not installed (`make postgres` installs them)")
    with LocalCluster(fsync=False) as local:
        yield local


def _running(cluster: Any) -> None:
    """Start the server if a failed test left it stopped, for the next test."""
    if not (cluster.dir / "data" / "postmaster.pid").exists():
        cluster.start()


@pytest.fixture
def database(cluster: Any) -> Iterator[str]:
    yield cluster.create_database()
    _running(cluster)


@dataclass
class Load:
    """Events posted by threads until ``stop``: every id sent, every id acknowledged (a 200),
    and every answer as (when it was asked, status, whether it carried Retry-After)."""

    url: str
    stop: threading.Event = field(default_factory=threading.Event)
    sent: set[str] = field(default_factory=set)
    acked: set[str] = field(default_factory=set)
    answers: list[tuple[float, int, bool]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def post(self, name: str, batch: int) -> None:
        with httpx.Client(base_url=self.url, timeout=30) as client:
            n = 0
            while not self.stop.is_set():
                n += 1
                events = [{"id": f"{name}-{n}-{i}", "endpoint": "load.write"} for i in range(batch)]
                with self.lock:
                    self.sent.update(event["id"] for event in events)
                asked = time.monotonic()
                if batch == 1:
                    answer = client.post("/event", json=events[0])
                else:
                    answer = client.post("/events", json=events)
                with self.lock:
                    self.answers.append((asked, answer.status_code, "retry-after" in answer.headers))
                    if answer.status_code == 200:
                        self.acked.update(event["id"] for event in events)
                if answer.status_code != 200:
                    time.sleep(0.05)  # a client that backs off a little, not one that spins


@dataclass
class Outage:
    load: Load
    down_at: float
    up_at: float
    read_status: int
    read_seconds: float
    health: dict[str, Any]
    client_sent: set[str]
    client_spooled: int
    client_left: int
    stored: list[str]


def _client_load(client: ObserverClient, stop: threading.Event, sent: set[str]) -> None:
    n = 0
    while not stop.is_set():
        n += 1
        ops = [ObservedOp(id=f"client-{n}-{i}", endpoint="load.write") for i in range(5)]
        sent.update(op.id for op in ops)
        client.send_many(ops)
        time.sleep(0.01)


@pytest.fixture(scope="module", params=["fast", "immediate"])
def outage(request: pytest.FixtureRequest, cluster: Any, tmp_path_factory: pytest.TempPathFactory) -> Outage:
    """One run per way of stopping the server, read by every test below."""
    mode = request.param
    database = cluster.create_database()
    tmp_path = tmp_path_factory.mktemp(f"outage-{mode}")
    with Observer(PgOpStore(database)) as observer, running_service(observer, load_settings()) as url:
        load = Load(url)
        client_sent: set[str] = set()
        client = ObserverClient(url, spool_path=tmp_path / "spool" / "observer-test.jsonl", timeout=10)
        threads = [
            threading.Thread(target=load.post, args=("batch-a", 10)),
            threading.Thread(target=load.post, args=("batch-b", 10)),
            threading.Thread(target=load.post, args=("single", 1)),
            threading.Thread(target=_client_load, args=(client, load.stop, client_sent)),
        ]
        for thread in threads:
            thread.start()
        try:
            time.sleep(LOAD_BEFORE_S)
            cluster.stop(mode)
            down_at = time.monotonic()
            time.sleep(DOWN_S / 2)
            started = time.monotonic()
            read = httpx.get(f"{url}/ops", params={"limit": 1}, timeout=30)
            read_seconds = time.monotonic() - started
            health = httpx.get(f"{url}/health", timeout=30).json()
            time.sleep(max(0.0, down_at + DOWN_S - time.monotonic()))
            cluster.start()
            up_at = time.monotonic()
            time.sleep(LOAD_AFTER_S)
        finally:
            load.stop.set()
            for thread in threads:
                thread.join(60)
            _running(cluster)
        spooled = client.spooled_total
        deadline = time.monotonic() + 30
        while client.pending and time.monotonic() < deadline:
            client.flush()
            time.sleep(0.1)
        left = client.pending
        client.close()
    with psycopg.connect(database) as conn:
        stored = [row[0] for row in conn.execute("SELECT id FROM ops WHERE endpoint = 'load.write'")]
    return Outage(
        load, down_at, up_at, read.status_code, read_seconds, health, client_sent, spooled, left, stored
    )


def test_posts_while_it_is_down_are_answered_503(outage: Outage) -> None:
    during = [status for asked, status, _ in outage.load.answers if outage.down_at < asked < outage.up_at]
    assert 503 in during


def test_every_503_says_when_to_retry(outage: Outage) -> None:
    assert all(retry for _, status, retry in outage.load.answers if status == 503)


def test_every_answer_is_200_or_503(outage: Outage) -> None:
    assert {status for _, status, _ in outage.load.answers} <= {200, 503}


def test_every_acknowledged_event_is_stored(outage: Outage) -> None:
    assert outage.load.acked - set(outage.stored) == set()


def test_no_event_is_stored_twice(outage: Outage) -> None:
    assert len(outage.stored) == len(set(outage.stored))


def test_nothing_is_stored_that_was_never_sent(outage: Outage) -> None:
    assert set(outage.stored) - outage.load.sent - outage.client_sent == set()


def test_the_same_service_acknowledges_again_once_the_server_is_back(outage: Outage) -> None:
    after = [status for asked, status, _ in outage.load.answers if asked > outage.up_at + 2.0]
    assert set(after) == {200}


def test_reads_while_it_is_down_are_answered_503(outage: Outage) -> None:
    assert outage.read_status == 503


def test_reads_while_it_is_down_are_answered_within_seconds(outage: Outage) -> None:
    assert outage.read_seconds < 10


def test_health_names_the_outage(outage: Outage) -> None:
    assert "PostgreSQL at 127.0.0.1" in (outage.health["store_unavailable"] or "")


def test_the_client_spooled_during_the_outage(outage: Outage) -> None:
    assert outage.client_spooled > 0


def test_the_clients_spool_is_replayed_to_the_end(outage: Outage) -> None:
    assert outage.client_left == 0


def test_everything_the_client_was_given_is_stored(outage: Outage) -> None:
    assert outage.client_sent - set(outage.stored) == set()


def test_a_restart_between_commits_costs_no_commit(cluster: Any, database: str) -> None:
    with PgOpStore(database) as store:
        store.append([ObservedOp(id="before", endpoint="x")])
        cluster.stop("fast")
        cluster.start()
        results = store.append([ObservedOp(id="after", endpoint="x")], timeout=30)
    assert [result.status for result in results] == ["stored"]


@pytest.fixture
def refused(cluster: Any, database: str) -> tuple[float, str]:
    """(seconds the refusal took, its message) for an op offered after a commit met the outage."""
    with PgOpStore(database.replace("agentlake@", "agentlake:hunter2@")) as store:
        store.append([ObservedOp(id="before", endpoint="x")])
        cluster.stop("fast")
        try:
            with pytest.raises(StoreUnavailableError):
                store.append([ObservedOp(id="lost-connection", endpoint="x")], timeout=30)
            started = time.monotonic()
            with pytest.raises(StoreUnavailableError) as error:
                store.append([ObservedOp(id="refused", endpoint="x")], timeout=30)
            return time.monotonic() - started, error.value.message
        finally:
            _running(cluster)


def test_while_it_is_down_ops_are_refused_at_once(refused: tuple[float, str]) -> None:
    assert refused[0] < 0.5


def test_the_refusal_is_one_line(refused: tuple[float, str]) -> None:
    assert "\n" not in refused[1]


def test_the_refusal_names_the_server(refused: tuple[float, str], cluster: Any) -> None:
    assert f"PostgreSQL at 127.0.0.1:{cluster.port}/" in refused[1]


def test_the_refusal_never_shows_the_password(refused: tuple[float, str]) -> None:
    assert "hunter2" not in refused[1]


@pytest.fixture
def recorded_while_down(
    cluster: Any, database: str, caplog: pytest.LogCaptureFixture
) -> tuple[str, list[logging.LogRecord]]:
    """(what the observed work returned, the log records saying its op was not recorded)."""
    with Observer(PgOpStore(database)) as observer:
        observer.record_many([ObservedOp(id="before", endpoint="x")])
        cluster.stop("fast")
        try:
            with caplog.at_level(logging.WARNING, logger="agentlake.observe.recording"):
                for _ in range(2):  # the first meets the outage, the second is refused at once
                    with observe("tool.check", observer=observer) as op:
                        op.set_output("done")
                        returned = "done"
        finally:
            _running(cluster)
    lines = [r for r in caplog.records if r.getMessage().startswith("could not record op tool.check")]
    return returned, lines


def test_work_observed_while_it_is_down_goes_on(recorded_while_down: tuple[str, list]) -> None:
    assert recorded_while_down[0] == "done"


def test_each_op_not_recorded_is_one_log_line_naming_the_server(
    recorded_while_down: tuple[str, list],
) -> None:
    lines = recorded_while_down[1]
    assert [("PostgreSQL at 127.0.0.1" in r.getMessage(), r.exc_info) for r in lines] == [(True, None)] * 2
