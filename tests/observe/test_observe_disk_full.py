"""The DuckDB op store on a disk that fills up under load, through a real observer service on
127.0.0.1: writes are answered 503 with Retry-After and a message naming the full disk, nothing
acknowledged is lost (the file is opened again afterwards and read), and the same service
takes ops again once space is freed, without a restart.

The disk is real: a 16 MB tmpfs mounted in the test's temp dir, filled by a ballast file but
for a few MB, and freed by deleting the ballast. Mounting needs root (CAP_SYS_ADMIN): elsewhere
these tests skip. Two ways to meet the full disk: a commit whose write-ahead log append does
not fit (DuckDB refuses that commit and goes on), and, with a small checkpoint threshold, a
checkpoint that does not fit (DuckDB then invalidates the database until it is opened again,
which the writer does once space is back)."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import httpx
import pytest

from agentlake.observe import Observer, OpStore
from agentlake.observe.service import running_service
from agentlake.settings import load_settings

DISK_MB = 16
LEFT_FREE = 3_000_000
SUMMARY = "x" * 1500  # what makes the events big enough to fill the disk within seconds


@pytest.fixture(scope="module")
def small_disk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A 16 MB tmpfs for the module's stores, unmounted at the end."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small filesystem needs root")
    disk = tmp_path_factory.mktemp("disk")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={DISK_MB}m", "tmpfs", str(disk)], capture_output=True, text=True
    )
    if done.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield disk
    finally:
        if subprocess.run(["umount", str(disk)], capture_output=True).returncode:
            subprocess.run(["umount", "-l", str(disk)], capture_output=True)  # a file still open


@dataclass
class Load:
    url: str
    stop: threading.Event = field(default_factory=threading.Event)
    acked: set[str] = field(default_factory=set)
    answers: list[tuple[float, int, bool]] = field(default_factory=list)
    refusals: list[dict[str, Any]] = field(default_factory=list)

    def post(self) -> None:
        with httpx.Client(base_url=self.url, timeout=30) as client:
            n = 0
            while not self.stop.is_set():
                n += 1
                events = [
                    {"id": f"e-{n}-{i}", "endpoint": "load.write", "input_summary": SUMMARY}
                    for i in range(20)
                ]
                asked = time.monotonic()
                answer = client.post("/events", json=events)
                self.answers.append((asked, answer.status_code, "retry-after" in answer.headers))
                if answer.status_code == 200:
                    self.acked.update(event["id"] for event in events)
                else:
                    self.refusals.append(answer.json())
                    time.sleep(0.02)


@dataclass
class DiskFull:
    load: Load
    freed_at: float
    read_status: int
    health: dict[str, Any]
    stored: list[str]
    checkpoint_mb: float | None
    reopened: int


@pytest.fixture(scope="module", params=[None, 0.25], ids=["wal-full", "checkpoint-full"])
def disk_full(request: pytest.FixtureRequest, small_disk: Path) -> Iterator[DiskFull]:
    """One run per checkpoint threshold: the disk fills, stays full a second, is freed."""
    directory = small_disk / f"store-{request.param}"
    directory.mkdir()
    ballast = small_disk / "ballast"
    with open(ballast, "wb") as handle:
        os.posix_fallocate(handle.fileno(), 0, shutil.disk_usage(small_disk).free - LEFT_FREE)
    store = OpStore(directory / "o.duckdb", checkpoint_mb=request.param)
    with Observer(store) as observer, running_service(observer, load_settings()) as url:
        load = Load(url)
        thread = threading.Thread(target=load.post)
        thread.start()
        try:
            deadline = time.monotonic() + 60
            while not load.refusals and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(1.0)  # full for a while: every write meanwhile is refused
            read = httpx.get(f"{url}/ops", params={"limit": 1}, timeout=30)
            health = httpx.get(f"{url}/health", timeout=30).json()
            ballast.unlink()
            freed_at = time.monotonic()
            deadline = freed_at + 30
            while time.monotonic() < deadline and not any(
                status == 200 for asked, status, _ in load.answers if asked > freed_at
            ):
                time.sleep(0.05)
            time.sleep(0.5)
        finally:
            load.stop.set()
            thread.join(60)
            ballast.unlink(missing_ok=True)
    with duckdb.connect(str(directory / "o.duckdb"), read_only=True) as conn:
        stored = [row[0] for row in conn.execute("SELECT id FROM ops").fetchall()]
    yield DiskFull(load, freed_at, read.status_code, health, stored, request.param, store.reopened)
    shutil.rmtree(directory)


def test_a_write_that_meets_the_full_disk_is_answered_503(disk_full: DiskFull) -> None:
    assert 503 in {status for _, status, _ in disk_full.load.answers}


def test_every_503_says_when_to_retry(disk_full: DiskFull) -> None:
    assert all(retry for _, status, retry in disk_full.load.answers if status == 503)


def test_the_503_is_one_line(disk_full: DiskFull) -> None:
    assert "\n" not in disk_full.load.refusals[0]["error"]["message"]


def test_the_503_names_the_full_disk(disk_full: DiskFull) -> None:
    assert "the disk holding" in disk_full.load.refusals[0]["error"]["message"]


def test_the_503_names_its_reason_for_programs(disk_full: DiskFull) -> None:
    assert {refusal["error"]["details"]["reason"] for refusal in disk_full.load.refusals} == {"disk_full"}


def test_every_answer_is_200_or_503(disk_full: DiskFull) -> None:
    assert {status for _, status, _ in disk_full.load.answers} <= {200, 503}


def test_reads_while_the_disk_is_full_answer_200_or_503(disk_full: DiskFull) -> None:
    assert disk_full.read_status in (200, 503)


def test_health_names_the_full_disk(disk_full: DiskFull) -> None:
    assert "is full" in (disk_full.health["store_unavailable"] or "")


def test_every_acknowledged_event_is_in_the_file(disk_full: DiskFull) -> None:
    assert disk_full.load.acked - set(disk_full.stored) == set()


def test_no_event_is_stored_twice(disk_full: DiskFull) -> None:
    assert len(disk_full.stored) == len(set(disk_full.stored))


def test_the_same_service_acknowledges_again_once_space_is_freed(disk_full: DiskFull) -> None:
    assert 200 in {status for asked, status, _ in disk_full.load.answers if asked > disk_full.freed_at}


def test_a_checkpoint_that_met_the_full_disk_left_a_database_the_writer_opened_again(
    disk_full: DiskFull,
) -> None:
    # DuckDB invalidates the database when a checkpoint fails; a failed commit leaves it usable.
    assert (disk_full.reopened > 0) == (disk_full.checkpoint_mb is not None)
