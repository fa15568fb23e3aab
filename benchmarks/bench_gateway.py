"""Gateway latency under load: p50/p99 of GET /worker/{id} and POST /match, 50 concurrent clients.

Builds a workforce lake (generated, indexed with the local MiniLM) in a temporary data dir,
starts `agentlake serve` (uvicorn, one process, an API key configured so authentication is
paid for) and drives it from ANOTHER process with N concurrent keep-alive connections on
loopback: first closed loop (each client sends its next request as soon as the previous one is
answered: the server's saturation), then paced (each client sends `--rate` requests per second:
latency at a stated load). Every request is authenticated and observed (one durable op each),
as in production. GET /health runs first as the framework floor (same middleware, no lake read),
and the server's own CPU per request is read from /proc.

    .venv/bin/python benchmarks/bench_gateway.py [--workers 10000] [--clients 50] [--seconds 20] [--rate 2]

The load generator speaks HTTP/1.1 over asyncio streams: a general-purpose client would spend
more CPU than the server on this 2-core machine and measure itself.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
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


def _requests(kind: str, host: str, max_worker: int):
    common = f"Host: {host}\r\nX-API-Key: {KEY}\r\n"
    if kind == "health":
        return lambda: f"GET /health HTTP/1.1\r\n{common}\r\n".encode()
    if kind == "worker":
        return lambda: f"GET /worker/{random.randint(1, max_worker)} HTTP/1.1\r\n{common}\r\n".encode()

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
    deadline = time.perf_counter() + seconds
    started = time.perf_counter()
    make = _requests(kind, "127.0.0.1", max_worker)
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


def _build_lake(data_dir: Path, workers: int) -> float:
    from agentlake.data.workforce import generate_workforce, load_workforce
    from agentlake.lake import Lake
    from agentlake.lake.index import build_index
    from agentlake.settings import load_settings

    started = time.perf_counter()
    with Lake.open(load_settings(data_dir=data_dir)) as lake:
        load_workforce(lake, generate_workforce(workers, seed=7))
        build_index(lake, "workers", "resume_text", progress=True)
    return time.perf_counter() - started


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc), to report the server's CPU per request."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _run_load(
    kind: str, port: int, clients: int, seconds: float, workers: int, server_pid: int, rate: float = 0.0
) -> dict:
    before = _cpu_seconds(server_pid)
    command = [
        sys.executable,
        __file__,
        "--load",
        kind,
        str(port),
        str(clients),
        str(seconds),
        str(workers),
        str(rate),
    ]
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    result = json.loads(output.strip().splitlines()[-1])
    spent = _cpu_seconds(server_pid) - before
    result["server_cpu_ms"] = round(spent * 1000 / max(result["requests"], 1), 2)
    result["rate"] = rate
    return result


def _start_server(data_dir: Path) -> tuple[subprocess.Popen, int]:
    import httpx

    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTLAKE_")}
    env |= {"AGENTLAKE_DATA_DIR": str(data_dir), "AGENTLAKE_API_KEYS": f"{KEY}:read"}
    agentlake = str(Path(sys.executable).with_name("agentlake"))
    server = subprocess.Popen([agentlake, "serve", "--port", str(port), "--log-level", "warning"], env=env)
    for _ in range(600):
        try:
            httpx.get(f"http://127.0.0.1:{port}/health", timeout=1)
            return server, port
        except httpx.TransportError:
            if server.poll() is not None:
                raise SystemExit("the gateway did not start") from None
            time.sleep(0.2)
    raise SystemExit("the gateway did not answer within 120 s")


def _table(title: str, results: list[dict]) -> None:
    floor = results[0]
    names = {"health": "GET /health (floor)", "worker": "GET /worker/{id}", "match": "POST /match"}
    print(f"\n{title}")
    print(
        f"{'endpoint':<22}{'requests':>9}{'rps':>8}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}{'errors':>7}"
        f"{'p50/floor':>10}{'p99/floor':>10}{'server cpu ms/req':>18}"
    )
    for r in results:
        print(
            f"{names[r['kind']]:<22}{r['requests']:>9}{r['rps']:>8}{r['p50_ms']:>9}{r['p99_ms']:>9}{r['max_ms']:>9}"
            f"{r['errors']:>7}{r['p50_ms'] / floor['p50_ms']:>10.2f}{r['p99_ms'] / floor['p99_ms']:>10.2f}"
            f"{r['server_cpu_ms']:>18}"
        )
        if r["errors"]:
            print(f"    error examples: {r['error_examples']}")


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
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    with tempfile.TemporaryDirectory(prefix="bench-gateway-") as tmp:
        data_dir = args.data_dir or Path(tmp) / "data"
        if not (data_dir / "lake.duckdb").exists():
            print(f"building a {args.workers}-worker lake with its index ...", flush=True)
            print(f"  built in {_build_lake(data_dir, args.workers):.1f} s", flush=True)
        server, port = _start_server(data_dir)
        try:
            # Warm up: the embedding model, DuckDB caches, the observer's store.
            _run_load("match", port, 4, 3, args.workers, server.pid)
            _run_load("worker", port, 4, 2, args.workers, server.pid)
            kinds = ("health", "worker", "match")
            closed = [
                _run_load(kind, port, args.clients, args.seconds, args.workers, server.pid) for kind in kinds
            ]
            paced = (
                [
                    _run_load(kind, port, args.clients, args.seconds, args.workers, server.pid, args.rate)
                    for kind in kinds
                ]
                if args.rate
                else []
            )
        finally:
            server.terminate()
            server.wait(timeout=30)

    print(
        f"\n{args.workers} workers, {args.seconds:g} s per run, {os.cpu_count()} CPUs shared with the load generator"
    )
    _table(f"closed loop: {args.clients} clients, each sends its next request on the previous answer", closed)
    if paced:
        _table(
            f"paced: {args.clients} clients x {args.rate:g} requests/s = {args.clients * args.rate:g} offered/s",
            paced,
        )
    worker = closed[1]
    verdict = "met" if worker["p99_ms"] <= 50 and worker["errors"] == 0 else "MISSED"
    print(f"\ntarget p99 <= 50 ms for /worker (closed loop, {args.clients} clients) with 0 errors: {verdict}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--load":
        load_main(sys.argv[2:])
    else:
        main()
