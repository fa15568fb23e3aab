"""`agentlake observer serve` killed with SIGKILL during a load, then restarted on the same file:
every acknowledged event is present, exactly once."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb
import httpx
import pyarrow as pa
import pytest


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _start(data_dir: Path, port: int) -> subprocess.Popen[bytes]:
    exe = shutil.which("agentlake", path=str(Path(sys.executable).parent)) or "agentlake"
    env = {**os.environ, "AGENTLAKE_DATA_DIR": str(data_dir)}
    process = subprocess.Popen(
        [exe, "observer", "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(
                f"observer exited: {process.stderr.read().decode() if process.stderr else ''}"
            )
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return process
        except httpx.TransportError:
            time.sleep(0.1)
    process.kill()
    raise AssertionError("observer did not come up within 60 s")


@pytest.mark.slow
def test_sigkill_mid_load_loses_no_acknowledged_event(tmp_path: Path) -> None:
    data_dir, port = tmp_path / "data", _free_port()
    url = f"http://127.0.0.1:{port}"
    server = _start(data_dir, port)
    acked: list[str] = []
    lock = threading.Lock()
    stop = threading.Event()

    def load(worker: int) -> None:
        with httpx.Client(base_url=url, timeout=5) as http:
            n = 0
            while not stop.is_set():
                n += 1
                try:
                    if n % 4 == 0:  # a batch now and then
                        ids = [f"w{worker}-{n}-{k}" for k in range(25)]
                        answer = http.post("/events", json=[{"id": i, "endpoint": "load.batch"} for i in ids])
                    else:
                        ids = [f"w{worker}-{n}"]
                        answer = http.post("/event", json={"id": ids[0], "endpoint": "load.single"})
                except httpx.TransportError:
                    return  # the server is gone: whatever was not answered was not acknowledged
                if answer.status_code == 200:
                    with lock:
                        acked.extend(ids)

    workers = [threading.Thread(target=load, args=(w,)) for w in range(8)]
    for thread in workers:
        thread.start()
    deadline = time.monotonic() + 30
    while len(acked) < 2000 and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(server.pid, signal.SIGKILL)
    server.wait(10)
    stop.set()
    for thread in workers:
        thread.join(10)
    assert len(acked) >= 500, "the load never got going"

    restarted = _start(data_dir, port)
    try:
        health = httpx.get(f"{url}/health", timeout=5).json()
        total = httpx.get(f"{url}/stats", timeout=5).json()["total"]
        assert health["ring_depth"] > 0
        assert total >= len(acked)  # the ring is rebuilt from the store
    finally:
        restarted.send_signal(signal.SIGTERM)
        restarted.wait(30)

    conn = duckdb.connect(str(data_dir / "observe.duckdb"), read_only=True)
    try:
        conn.register("acked", pa.table({"id": acked}))
        missing = conn.execute("SELECT count(*) FROM acked WHERE id NOT IN (SELECT id FROM ops)").fetchone()[
            0
        ]
        repeated = conn.execute(
            "SELECT count(*) FROM (SELECT id FROM ops GROUP BY id HAVING count(*) > 1)"
        ).fetchone()[0]
        stored = conn.execute("SELECT count(*) FROM ops").fetchone()[0]
    finally:
        conn.close()
    assert missing == 0, f"{missing} of {len(acked)} acknowledged events were lost"
    assert repeated == 0
    assert stored == total
