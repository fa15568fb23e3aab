"""Gateway latency under load: p50/p99 of GET /worker/{id} and POST /match, 50 concurrent clients.

Builds a workforce lake (generated, indexed with the local MiniLM) in a temporary data dir,
starts `agentlake serve` (uvicorn, one process, an API key configured so authentication is
paid for) and drives it from ANOTHER process with N concurrent keep-alive connections on
loopback: first closed loop (each client sends its next request as soon as the previous one is
answered: the server's saturation), then paced (each client sends `--rate` requests per second:
latency at a stated load). Every request is authenticated and observed (one durable op each),
as in production. GET /health runs first as the framework floor (same middleware, no lake read),
and the server's own CPU per request is read from /proc.

GET /worker/{id} is measured twice, because the gateway caches rendered records:
"first reads" asks for every id once (each request a cache miss: a point read of the lake),
then "any id" draws ids uniformly, as before (by then every id has been read once, so these are
cache hits; the share of repeated ids is printed).

With `--baseline-src DIR` a second server runs the same protocol from another source tree
(e.g. `git archive <rev> src | tar -x -C DIR`, then DIR/src), on its own copy of the lake,
alternating with the current one run by run, so both face the same machine load; the table
then shows current / baseline ratios. The learning schedule is off in both servers (a lesson
extraction cycle every 5 minutes would land at random in some runs).

    .venv/bin/python benchmarks/bench_gateway.py [--workers 10000] [--clients 50] [--seconds 20]
        [--rate 2] [--data-dir DIR] [--baseline-src DIR/src] [--no-match]

The load generator speaks HTTP/1.1 over asyncio streams: a general-purpose client would spend
more CPU than the server on this 2-core machine and measure itself.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KEY = "bench-read-key"
MATCH_QUESTIONS = [
    "MIG and TIG welding on structural steel",
    "forklift operator with warehouse inventory experience",
    "night shift packaging line, quality checks",
    "CNA with patient care and vitals",
    "electrician with panel installation and NEC code",
]
MATCH_FILTERS = [
    "state = 'OH'",
    "reliability >= 0.7",
    "state IN ('TX', 'CA') AND availability >= 0.5",
    "role = 'Welder'",
]
# Ids the warm-up reads; "first reads" never asks for them.
WARMUP_IDS = 200
NAMES = {
    "health": "GET /health (floor)",
    "worker-new": "GET /worker first reads",
    "worker": "GET /worker any id",
    "match": "POST /match",
}


# --- load generator (runs in its own process) -------------------------------------------


async def _client(
    host: str,
    port: int,
    make_request,
    deadline: float,
    latencies: list[float],
    errors: list[str],
    interval: float,
) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    due = time.perf_counter() + random.random() * interval  # paced clients start staggered
    try:
        while time.perf_counter() < deadline:
            if interval:
                # Paced: one request per interval; a late response delays the next (no pile-up).
                await asyncio.sleep(max(0.0, due - time.perf_counter()))
                due = max(due + interval, time.perf_counter())
            request = make_request()
            if request is None:
                return  # "first reads": every id has been asked for
            started = time.perf_counter()
            writer.write(request)
            await writer.drain()
            head = await reader.readuntil(b"\r\n\r\n")
            status = int(head[9:12])
            length = 0
            for line in head.split(b"\r\n"):
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
            await reader.readexactly(length)
            latencies.append((time.perf_counter() - started) * 1000)
            if status != 200:
                errors.append(str(status))
    finally:
        writer.close()


def _requests(kind: str, host: str, max_worker: int, asked: list[int]):
    common = f"Host: {host}\r\nX-API-Key: {KEY}\r\n"
    if kind == "health":
        return lambda: f"GET /health HTTP/1.1\r\n{common}\r\n".encode()
    if kind in ("worker", "worker-new", "worker-warmup"):
        if kind == "worker-new":
            # Every id once, in a fixed shuffled order: each request is the first for its id.
            fresh = list(range(WARMUP_IDS + 1, max_worker + 1))
            random.Random(7).shuffle(fresh)
            pick = iter(fresh).__next__
        elif kind == "worker-warmup":
            pick = lambda: random.randint(1, WARMUP_IDS)  # noqa: E731
        else:
            pick = lambda: random.randint(1, max_worker)  # noqa: E731

        def worker() -> bytes | None:
            try:
                worker_id = pick()
            except StopIteration:
                return None
            asked.append(worker_id)
            return f"GET /worker/{worker_id} HTTP/1.1\r\n{common}\r\n".encode()

        return worker

    def match() -> bytes:
        body = json.dumps(
            {"where": random.choice(MATCH_FILTERS), "question": random.choice(MATCH_QUESTIONS), "k": 10}
        )
        return (
            f"POST /match HTTP/1.1\r\n{common}Content-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n{body}"
        ).encode()

    return match


async def _load(kind: str, port: int, clients: int, seconds: float, max_worker: int, rate: float) -> dict:
    latencies: list[float] = []
    errors: list[str] = []
    asked: list[int] = []
    deadline = time.perf_counter() + seconds
    started = time.perf_counter()
    make = _requests(kind, "127.0.0.1", max_worker, asked)
    results = await asyncio.gather(
        *(
            _client("127.0.0.1", port, make, deadline, latencies, errors, 1.0 / rate if rate else 0.0)
            for _ in range(clients)
        ),
        return_exceptions=True,
    )
    elapsed = time.perf_counter() - started
    failures = [repr(r) for r in results if isinstance(r, BaseException)]
    latencies.sort()
    return {
        "kind": kind,
        "requests": len(latencies),
        "errors": len(errors) + len(failures),
        "error_examples": (errors + failures)[:3],
        "rps": round(len(latencies) / elapsed, 1),
        "p50_ms": round(statistics.median(latencies), 2) if latencies else None,
        "p99_ms": round(latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))], 2)
        if latencies
        else None,
        "max_ms": round(latencies[-1], 2) if latencies else None,
        "ids": asked,
    }


def load_main(argv: list[str]) -> None:
    kind, port, clients, seconds, max_worker = (
        argv[0],
        int(argv[1]),
        int(argv[2]),
        float(argv[3]),
        int(argv[4]),
    )
    rate = float(argv[5]) if len(argv) > 5 else 0.0
    print(json.dumps(asyncio.run(_load(kind, port, clients, seconds, max_worker, rate))))


# --- orchestration ------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _build_lake(data_dir: Path, workers: int, index: bool) -> float:
    from agentlake.lake import Lake
    from agentlake.lake.index import build_index
    from agentlake.settings import load_settings
    from agentlake.workforce.generator import generate_workforce, load_workforce

    started = time.perf_counter()
    with Lake.open(load_settings(data_dir=data_dir)) as lake:
        load_workforce(lake, generate_workforce(workers, seed=7))
        if index:
            build_index(lake, "workers", "resume_text", progress=True)
    return time.perf_counter() - started


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc), to report the server's CPU per request."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _load_average() -> float:
    return os.getloadavg()[0]


class Server:
    """One `agentlake serve` process over its own copy of the lake, and what it was asked."""

    def __init__(self, label: str, lake_dir: Path, root: Path, src: Path | None) -> None:
        import httpx

        self.label = label
        data_dir = root / label
        data_dir.mkdir(parents=True)
        # Only the lake and its vector index: each server starts with an empty op store.
        shutil.copy(lake_dir / "lake.duckdb", data_dir / "lake.duckdb")
        if (lake_dir / "lake.indexes").exists():  # absent with --no-match
            shutil.copytree(lake_dir / "lake.indexes", data_dir / "lake.indexes")
        self.port = _free_port()
        self.seen: set[int] = set()  # worker ids this server has answered (for the repeat share)
        env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTLAKE_")}
        env |= {
            "AGENTLAKE_DATA_DIR": str(data_dir),
            "AGENTLAKE_CONFIG": str(root / "none.toml"),
            "AGENTLAKE_API_KEYS": f"{KEY}:read",
            "AGENTLAKE_LEARN_SCHEDULE": "false",
            # The per-key limiter runs as in production (every request charged), but high
            # enough that the load generator's one key is never refused.
            "AGENTLAKE_RATE_LIMIT_PER_MINUTE": "1000000000",
        }
        if src is not None:
            env["PYTHONPATH"] = str(src)  # ahead of the editable install of this checkout
        command = [sys.executable, "-m", "agentlake.cli.main", "serve", "--port", str(self.port)]
        self.process = subprocess.Popen([*command, "--log-level", "warning"], env=env)
        for _ in range(600):
            try:
                httpx.get(f"http://127.0.0.1:{self.port}/health", timeout=1)
                return
            except httpx.TransportError:
                if self.process.poll() is not None:
                    raise SystemExit(f"the {label} gateway did not start") from None
                time.sleep(0.2)
        raise SystemExit(f"the {label} gateway did not answer within 120 s")

    def run(self, kind: str, clients: int, seconds: float, workers: int, rate: float = 0.0) -> dict:
        load_before = _load_average()
        before = _cpu_seconds(self.process.pid)
        command = [
            sys.executable,
            __file__,
            "--load",
            kind,
            str(self.port),
            str(clients),
            str(seconds),
            str(workers),
            str(rate),
        ]
        output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
        result = json.loads(output.strip().splitlines()[-1])
        spent = _cpu_seconds(self.process.pid) - before
        ids = result.pop("ids")
        if ids:
            result["repeat_pct"] = round(100 * sum(1 for i in ids if i in self.seen) / len(ids), 1)
            self.seen.update(ids)
        result["server_cpu_ms"] = round(spent * 1000 / max(result["requests"], 1), 3)
        result["rate"] = rate
        result["load"] = f"{load_before:.1f}-{_load_average():.1f}"
        result["server"] = self.label
        return result

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


def _table(title: str, results: list[dict], baseline: dict[str, dict] | None) -> None:
    floor = results[0]
    print(f"\n{title}")
    header = (
        f"{'endpoint':<26}{'requests':>9}{'rps':>8}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}{'errors':>7}"
        f"{'p99/floor':>10}{'cpu ms/req':>11}{'repeat %':>9}{'load':>10}"
    )
    if baseline:
        header += f"{'rps x':>7}{'p99 x':>7}{'cpu x':>7}"
    print(header)
    for r in results:
        line = (
            f"{NAMES[r['kind']]:<26}{r['requests']:>9}{r['rps']:>8}{r['p50_ms']:>9}{r['p99_ms']:>9}"
            f"{r['max_ms']:>9}{r['errors']:>7}{r['p99_ms'] / floor['p99_ms']:>10.2f}{r['server_cpu_ms']:>11}"
            f"{r.get('repeat_pct', ''):>9}{r['load']:>10}"
        )
        base = (baseline or {}).get(r["kind"])
        if base:
            line += (
                f"{r['rps'] / base['rps']:>7.2f}{r['p99_ms'] / base['p99_ms']:>7.2f}"
                f"{r['server_cpu_ms'] / base['server_cpu_ms']:>7.2f}"
            )
        print(line)
        if r["errors"]:
            print(f"    error examples: {r['error_examples']}")


def _alternate(
    servers: list[Server], kinds: tuple[str, ...], args: argparse.Namespace, rate: float = 0.0
) -> dict:
    """Each kind on every server in turn, alternating which server goes first so neither always
    meets the same load; the results by server label."""
    results: dict[str, list[dict]] = {server.label: [] for server in servers}
    for index, kind in enumerate(kinds):
        for server in servers if index % 2 == 0 else servers[::-1]:
            results[server.label].append(server.run(kind, args.clients, args.seconds, args.workers, rate))
    return results


def _baseline_of(results: dict[str, list[dict]], label: str) -> dict[str, dict] | None:
    """The baseline's results by kind, to set beside the current server's."""
    if label != "current" or "baseline" not in results:
        return None
    return {r["kind"]: r for r in results["baseline"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=10_000, help="Workers in the generated lake.")
    parser.add_argument("--clients", type=int, default=50, help="Concurrent keep-alive connections.")
    parser.add_argument("--seconds", type=float, default=20.0, help="Duration of each measured run.")
    parser.add_argument(
        "--rate",
        type=float,
        default=2.0,
        help="Requests per second per client in the paced run (0: skip the paced run).",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="Build the lake here (or reuse the one already there) instead of a temporary dir.",
    )
    parser.add_argument(
        "--no-match",
        action="store_true",
        help="Skip POST /match and the search index it needs (embedding every resume): "
        "lets /worker be measured on a 500k-worker lake in minutes.",
    )
    parser.add_argument(
        "--baseline-src",
        type=Path,
        default=None,
        help="The src/ directory of another agentlake tree to run as the baseline, alternating with this one.",
    )
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    with tempfile.TemporaryDirectory(prefix="bench-gateway-") as tmp:
        lake_dir = args.data_dir or Path(tmp) / "lake"
        if not (lake_dir / "lake.duckdb").exists():
            what = "" if args.no_match else " with its index"
            print(f"building a {args.workers}-worker lake{what} ...", flush=True)
            print(f"  built in {_build_lake(lake_dir, args.workers, not args.no_match):.1f} s", flush=True)
        servers = [Server("current", lake_dir, Path(tmp) / "servers", None)]
        if args.baseline_src:
            servers.insert(0, Server("baseline", lake_dir, Path(tmp) / "servers", args.baseline_src))
        endpoints = ("health", "worker") + (() if args.no_match else ("match",))
        try:
            for server in servers:
                # Warm up: the embedding model, DuckDB caches, the observer's store.
                if not args.no_match:
                    server.run("match", 4, 3, args.workers)
                server.run("worker-warmup", 4, 2, args.workers)
            results = _alternate(servers, ("health", "worker-new", *endpoints[1:]), args)
            paced = _alternate(servers, endpoints, args, args.rate) if args.rate else {}
        finally:
            for server in servers:
                server.stop()

    print(
        f"\n{args.workers} workers, {args.seconds:g} s per run, {os.cpu_count()} CPUs shared with the load "
        "generator; load = the 1-minute load average at the start-end of each run; "
        "repeat % = requests for an id this server had already answered"
    )
    for label in results:
        _table(
            f"[{label}] closed loop: {args.clients} clients, each sends its next request on the previous answer",
            results[label],
            _baseline_of(results, label),
        )
        if paced:
            _table(
                f"[{label}] paced: {args.clients} clients x {args.rate:g} requests/s = "
                f"{args.clients * args.rate:g} offered/s",
                paced[label],
                _baseline_of(paced, label),
            )
    for kind in ("worker", "worker-new"):
        worker = next(r for r in results["current"] if r["kind"] == kind)
        verdict = "met" if worker["p99_ms"] <= 50 and worker["errors"] == 0 else "MISSED"
        print(
            f"\ntarget p99 <= 50 ms for {NAMES[kind]} (closed loop, {args.clients} clients) with 0 errors: "
            f"{verdict} (p99 {worker['p99_ms']} ms, {worker['errors']} errors)"
        )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--load":
        load_main(sys.argv[2:])
    else:
        main()
