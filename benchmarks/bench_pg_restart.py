"""PostgreSQL restarted under load: a gateway's acknowledged events are stored exactly once.

Starts a throwaway PostgreSQL cluster (fsync on) and one `agentlake serve` with
AGENTLAKE_DATABASE_URL pointing at it, and drives the gateway's observer mount from this
process: two threads posting batches (POST /observer/events, 25 each), one posting single
events (POST /observer/event), one ObserverClient (the spooling client, batches of 10) and one
reader (GET /observer/ops every 0.2 s). A raw writer that is not answered 200 waits 0.1 s and
goes on with new events (what it was refused is not retried: it was never acknowledged). At a
third of the run the server is stopped with `pg_ctl stop -m fast`, at two thirds with
`-m immediate` (like a crash: the next start recovers from its write-ahead log); each time it
is started again --down seconds later. The gateway is never restarted. Then the database is read:

  acknowledged   every event answered 200 is stored; none is stored twice; none that was never
                 sent is stored (exactly once)
  refused        while the server is down, writes are answered 503 with Retry-After, reads 503;
                 no other status
  client         every event given to ObserverClient is stored once its spool is replayed
  recovery       seconds from each `pg_ctl start` returning to the first write answered 200

Exit code 1 on any violation. --json prints the counts as one JSON object (the test of this
runs it for a few seconds: tests/gateway/test_gateway_pg_restart.py).

Usage: .venv/bin/python benchmarks/bench_pg_restart.py [--seconds 60] [--down 5]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from collections import Counter
from contextlib import ExitStack
from pathlib import Path

import httpx
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gateway_process import start_gateway, store_env

from agentlake.observe import ObservedOp
from agentlake.observe.client import ObserverClient
from agentlake.postgres import LocalCluster

MODES = ("fast", "immediate")


def _serve(data_dir: Path, url: str, stack: ExitStack) -> tuple[str, Path]:
    env = store_env(data_dir, url)
    log_path = data_dir.parent / f"{data_dir.name}.log"
    log = log_path.open("w")
    stack.callback(log.close)
    base, process = start_gateway(env, log)
    stack.callback(lambda: (process.poll() is None and process.terminate(), process.wait(30)))
    return base, log_path


class Load:
    """What the gateway was sent and acknowledged, and every answer, until ``stop``."""

    def __init__(self, url: str, spool: Path) -> None:
        self.url = url
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.sent: set[str] = set()
        self.acked: set[str] = set()
        # (asked at, answered at, status, carried Retry-After), monotonic seconds
        self.writes: list[tuple[float, float, int, bool]] = []
        self.reads: list[tuple[float, float, int]] = []
        self.client_sent: set[str] = set()
        self.client = ObserverClient(f"{url}/observer", spool_path=spool, timeout=30)

    def _post(self, name: str, size: int) -> None:
        with httpx.Client(base_url=self.url, timeout=60) as http:
            n = 0
            while not self.stop.is_set():
                n += 1
                events = [{"id": f"{name}-{n}-{i}", "endpoint": "bench.write"} for i in range(size)]
                with self.lock:
                    self.sent.update(event["id"] for event in events)
                asked = time.monotonic()
                try:
                    if size == 1:
                        answer = http.post("/observer/event", json=events[0])
                    else:
                        answer = http.post("/observer/events", json=events)
                except httpx.TransportError:
                    status, retry = 0, False  # the gateway did not answer: a violation below
                else:
                    status, retry = answer.status_code, "retry-after" in answer.headers
                with self.lock:
                    self.writes.append((asked, time.monotonic(), status, retry))
                    if status == 200:
                        self.acked.update(event["id"] for event in events)
                if status != 200:
                    time.sleep(0.1)

    def _client(self) -> None:
        n = 0
        while not self.stop.is_set():
            n += 1
            ops = [ObservedOp(id=f"client-{n}-{i}", endpoint="bench.write") for i in range(10)]
            self.client_sent.update(op.id for op in ops)
            self.client.send_many(ops)
            time.sleep(0.005)

    def _read(self) -> None:
        with httpx.Client(base_url=self.url, timeout=60) as http:
            while not self.stop.is_set():
                asked = time.monotonic()
                try:
                    status = http.get("/observer/ops", params={"limit": 10}).status_code
                except httpx.TransportError:
                    status = 0
                self.reads.append((asked, time.monotonic(), status))
                time.sleep(0.2)

    def threads(self) -> list[threading.Thread]:
        jobs = [
            (self._post, ("batch-a", 25)),
            (self._post, ("batch-b", 25)),
            (self._post, ("single", 1)),
            (self._client, ()),
            (self._read, ()),
        ]
        return [threading.Thread(target=job, args=args, daemon=True) for job, args in jobs]


def run(seconds: float, down: float, work: Path, keep_log: Path | None = None) -> dict[str, object]:
    with ExitStack() as stack:
        cluster = stack.enter_context(LocalCluster(fsync=True))
        url = cluster.create_database("bench")
        base, log_path = _serve(work / "gateway", url, stack)
        load = Load(base, work / "spool" / "observer-bench.jsonl")
        threads = load.threads()
        started = time.monotonic()
        for thread in threads:
            thread.start()
        outages: list[tuple[float, float]] = []
        for k, mode in enumerate(MODES, start=1):
            time.sleep(max(0.0, started + seconds * k / (len(MODES) + 1) - time.monotonic()))
            cluster.stop(mode)
            down_at = time.monotonic()
            time.sleep(down)
            cluster.start()
            outages.append((down_at, time.monotonic()))
        time.sleep(max(0.0, started + seconds - time.monotonic()))
        load.stop.set()
        for thread in threads:
            thread.join(120)
        elapsed = time.monotonic() - started
        spooled = load.client.spooled_total
        deadline = time.monotonic() + 60
        while load.client.pending and time.monotonic() < deadline:
            load.client.flush()
            time.sleep(0.2)
        client_left = load.client.pending
        load.client.close()
        with psycopg.connect(url) as conn:
            stored = [row[0] for row in conn.execute("SELECT id FROM ops WHERE endpoint = 'bench.write'")]
        log_lines = len(log_path.read_text().splitlines())
        if keep_log is not None:
            shutil.copy(log_path, keep_log)
    stored_set = set(stored)
    statuses = Counter(status for _, _, status, _ in load.writes)
    recovery = []
    for _, up_at in outages:
        firsts = [answered for asked, answered, status, _ in load.writes if status == 200 and asked >= up_at]
        recovery.append(round(min(firsts) - up_at, 2) if firsts else None)
    down_reads = [
        (answered - asked, status)
        for asked, answered, status in load.reads
        if any(down_at <= asked < up_at for down_at, up_at in outages)
    ]
    return {
        "seconds": round(elapsed, 1),
        "restarts": len(outages),
        "down_s_each": down,
        "writes_answered_200": statuses.get(200, 0),
        "writes_answered_503": statuses.get(503, 0),
        "writes_answered_other": sum(n for status, n in statuses.items() if status not in (200, 503)),
        "writes_503_without_retry_after": sum(
            1 for _, _, status, retry in load.writes if status == 503 and not retry
        ),
        "acked": len(load.acked),
        "acked_ops_per_s": round(len(load.acked) / elapsed),
        "stored": len(stored),
        "acked_not_stored": len(load.acked - stored_set),
        "stored_twice": len(stored) - len(stored_set),
        "stored_never_sent": len(stored_set - load.sent - load.client_sent),
        "sent_not_acked_stored": len((stored_set & load.sent) - load.acked),
        "client_sent": len(load.client_sent),
        "client_spooled": spooled,
        "client_left_in_spool": client_left,
        "client_not_stored": len(load.client_sent - stored_set),
        "reads_while_down": len(down_reads),
        # A read waits up to POOL_WAIT_S for a connection: one asked late in an outage may be
        # answered 200 once the server is back.
        "reads_while_down_other_than_200_503": sum(1 for _, status in down_reads if status not in (200, 503)),
        "reads_while_down_statuses": sorted(Counter(status for _, status in down_reads).items()),
        "read_while_down_max_s": round(max((s for s, _ in down_reads), default=0.0), 2),
        "recovery_s": recovery,
        "gateway_log_lines": log_lines,
    }


VIOLATIONS = (
    "acked_not_stored",
    "stored_twice",
    "stored_never_sent",
    "writes_answered_other",
    "writes_503_without_retry_after",
    "client_not_stored",
    "client_left_in_spool",
    "reads_while_down_other_than_200_503",
)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=60.0, help="Length of the run.")
    parser.add_argument("--down", type=float, default=5.0, help="Seconds the server stays down each time.")
    parser.add_argument("--json", action="store_true", help="Print the counts as one JSON object.")
    parser.add_argument("--keep-log", type=Path, help="Copy the gateway's log here.")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench-pg-restart-") as tmp:
        result = run(args.seconds, args.down, Path(tmp), args.keep_log)
    recovered = all(value is not None for value in result["recovery_s"])  # type: ignore[attr-defined]
    violations = sum(int(result[key]) for key in VIOLATIONS) + (0 if recovered else 1)  # type: ignore[call-overload]
    if args.json:
        print(json.dumps(result))
    else:
        print(
            f"load average before/after: {load_before:.2f} / {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores"
        )
        for key, value in result.items():
            print(f"{key:<34}{value!s:>14}")
        print("exactly once: " + ("yes" if violations == 0 else f"NO ({violations} violations)"))
    sys.exit(1 if violations else 0)


if __name__ == "__main__":
    main()
