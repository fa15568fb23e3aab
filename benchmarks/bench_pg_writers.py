"""Several writers at once: two gateways sharing one PostgreSQL, one SIGKILLed mid-run.

Starts two `agentlake serve` processes (separate data directories, as on two hosts) with the
same AGENTLAKE_DATABASE_URL, and drives each from this process with three writer threads:
batches of ops (POST /observer/events, 25 each), single ops (POST /observer/event), and
confirmations of ONE shared lesson (POST /log, a new evidence op each). At --kill-at of the run
gateway b is SIGKILLed with requests in flight; a goes on to the end. Then the database is read:

  ops         every op a gateway acknowledged is stored; none is stored twice; none that was
              never sent is stored (exactly once)
  lessons     every acknowledged confirmation's evidence op is in the shared lesson's history
              (no lost lesson update), and both gateways curated the same lesson

Without --database-url a throwaway local cluster (fsync on) is started. Exit code 1 on any
violation. --json prints the counts as one JSON object (the test of this runs it for a few
seconds: tests/gateway/test_gateway_postgres.py).

Usage: .venv/bin/python benchmarks/bench_pg_writers.py [--seconds 60] [--kill-at 0.5]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path

import httpx
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gateway_process import start_gateway, store_env

LESSON = {
    "trigger": "Filling any role for riverfront-steel",
    "action": "Only propose workers with OSHA 30 on file (site policy)",
    "match": {"client_id": "riverfront-steel"},
    "machine": {"require_certifications": ["OSHA 30"]},
    "confidence": 0.6,
}


def _serve(data_dir: Path, url: str, stack: ExitStack) -> tuple[str, subprocess.Popen]:
    env = store_env(data_dir, url)
    log = (data_dir.parent / f"{data_dir.name}.log").open("w")
    stack.callback(log.close)
    base, process = start_gateway(env, log)
    stack.callback(lambda: (process.poll() is None and process.terminate(), process.wait(30)))
    return base, process


class Writer:
    """What one gateway was sent and acknowledged, until ``stop`` (or its death)."""

    def __init__(self, name: str, url: str, stop: threading.Event) -> None:
        self.name, self.url, self.stop = name, url, stop
        self.sent: set[str] = set()
        self.acked: set[str] = set()
        self.lesson_acked: set[str] = set()
        self.lesson_ids: set[str] = set()
        self.lock = threading.Lock()

    def _loop(self, send) -> None:
        with httpx.Client(base_url=self.url, timeout=30) as client:
            n = 0
            while not self.stop.is_set():
                n += 1
                try:
                    send(client, n)
                except httpx.TransportError:
                    return  # the gateway is gone: what it acknowledged is what counts

    def batches(self, client: httpx.Client, n: int) -> None:
        events = [
            {"id": f"{self.name}-b{n}-{i}", "endpoint": "bench.write", "duration_ms": 1.0} for i in range(25)
        ]
        with self.lock:
            self.sent.update(event["id"] for event in events)
        answer = client.post("/observer/events", json=events)
        if answer.status_code == 200:
            with self.lock:
                self.acked.update(r["id"] for r in answer.json()["results"])

    def singles(self, client: httpx.Client, n: int) -> None:
        op_id = f"{self.name}-s{n}"
        with self.lock:
            self.sent.add(op_id)
        answer = client.post(
            "/observer/event", json={"id": op_id, "endpoint": "bench.write", "duration_ms": 1.0}
        )
        if answer.status_code == 200:
            with self.lock:
                self.acked.add(op_id)

    def lessons(self, client: httpx.Client, n: int) -> None:
        evidence = f"{self.name}-evidence-{n}"
        answer = client.post(
            "/log", json={"kind": "lesson", "lesson": LESSON | {"evidence_op_ids": [evidence]}}
        )
        if answer.status_code == 200 and answer.json()["outcome"] in ("added", "confirmed"):
            self.lesson_acked.add(evidence)
            self.lesson_ids.add(answer.json()["lesson_id"])

    def threads(self) -> list[threading.Thread]:
        return [
            threading.Thread(target=self._loop, args=(job,), daemon=True)
            for job in (self.batches, self.singles, self.lessons)
        ]


def run(url: str, seconds: float, kill_at: float, work: Path) -> dict[str, object]:
    stop = threading.Event()
    with ExitStack() as stack:
        (url_a, _), (url_b, process_b) = (_serve(work / name, url, stack) for name in ("host-a", "host-b"))
        a, b = Writer("a", url_a, stop), Writer("b", url_b, stop)
        threads = a.threads() + b.threads()
        started = time.monotonic()
        for thread in threads:
            thread.start()
        time.sleep(seconds * kill_at)
        process_b.send_signal(signal.SIGKILL)  # requests in flight
        b_killed_after = time.monotonic() - started
        with a.lock:
            a_at_kill = len(a.acked)
        time.sleep(seconds * (1 - kill_at))
        stop.set()
        for thread in threads:
            thread.join(60)
        elapsed = time.monotonic() - started
    with psycopg.connect(url) as conn:
        stored = [row[0] for row in conn.execute("SELECT id FROM ops WHERE endpoint = 'bench.write'")]
        snapshots = [row[0] for row in conn.execute("SELECT snapshot FROM lesson_events")]
    evidence = {op for snapshot in snapshots for op in json.loads(snapshot)["evidence_op_ids"]}
    acked = a.acked | b.acked
    return {
        "seconds": round(elapsed, 1),
        "b_killed_after_s": round(b_killed_after, 1),
        "acked_a": len(a.acked),
        "acked_a_after_kill": len(a.acked) - a_at_kill,
        "acked_b": len(b.acked),
        "stored": len(stored),
        "acked_ops_per_s": round(len(acked) / elapsed),
        "acked_not_stored": len(acked - set(stored)),
        "stored_twice": len(stored) - len(set(stored)),
        "stored_never_sent": len(set(stored) - a.sent - b.sent),
        "lesson_updates_acked_a": len(a.lesson_acked),
        "lesson_updates_acked_b": len(b.lesson_acked),
        "lesson_updates_lost": len((a.lesson_acked | b.lesson_acked) - evidence),
        "lessons_curated": len(a.lesson_ids | b.lesson_ids),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=60.0, help="Length of the run.")
    parser.add_argument(
        "--kill-at", type=float, default=0.5, help="Fraction of the run at which b is killed."
    )
    parser.add_argument("--database-url", help="An empty PostgreSQL database (default: a throwaway cluster).")
    parser.add_argument("--json", action="store_true", help="Print the counts as one JSON object.")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench-pg-writers-") as tmp, ExitStack() as stack:
        url = args.database_url
        if url is None:
            from agentlake.postgres import LocalCluster

            url = stack.enter_context(LocalCluster(fsync=True)).create_database("bench")
        result = run(url, args.seconds, args.kill_at, Path(tmp))
    violations = sum(
        int(result[key])  # type: ignore[call-overload]
        for key in ("acked_not_stored", "stored_twice", "stored_never_sent", "lesson_updates_lost")
    )
    if args.json:
        print(json.dumps(result))
    else:
        print(
            f"load average before/after: {load_before:.2f} / {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores"
        )
        for key, value in result.items():
            print(f"{key:<26}{value:>12}")
        print("exactly once: " + ("yes" if violations == 0 else f"NO ({violations} violations)"))
    sys.exit(1 if violations else 0)


if __name__ == "__main__":
    main()
