"""Durable ingest throughput of the observer service, on loopback.

Starts `agentlake observer serve` as a subprocess on a fresh data dir and drives it from THIS
process (the load generator) with a small asyncio HTTP/1.1 keep-alive client, so the client's
own overhead stays low. Every event is acknowledged only after its DuckDB commit.

Measured in the same run:
  health floor    GET /health at the single-POST concurrency: the HTTP stack alone, nothing stored
  single c=1      POST /event, one connection: one commit per event (no group commit possible)
  single c=C      POST /event, C connections (each value of --concurrency): group commit shares each fsync
  batched         POST /events, 1000 events per request, B connections
  in-process      OpStore.append of 1000-event batches, no HTTP (the store's ceiling)
The served measurements run once per store backend (--backends duckdb,postgres): the DuckDB file,
then PostgreSQL (AGENTLAKE_DATABASE_URL; a throwaway local cluster with fsync on), same run.

And the in-process recording path (no HTTP; a wrapped tool, an embedded store, CPU per op):
  observe(), one by one      each op durable before the call returns (one commit each)
  observe(), no store        the same into a list: the recording path's own cost
  observe(), deferred x10    ten ops per deferred() scope (a turn or a task): one commit per scope
  async wrap_tool, 64 tasks  the gateway's way: 64 concurrent calls, each awaiting its commit

Usage: .venv/bin/python benchmarks/bench_observe.py [--seconds 8] [--concurrency 64,256] [--batch 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

EVENT = {
    "endpoint": "tool.hybrid_search",
    "source": "agent",
    "agent_id": "executor",
    "input_summary": '{"query": "certified welder, forklift", "city": "Cleveland", "state": "OH", "k": 20}',
    "output_summary": "20 workers, top score 0.83",
    "duration_ms": 12.5,
    "run_id": "run-2026-11-21",
    "labels": {
        "staffer_id": "st-12",
        "role": "Welder",
        "city": "Cleveland",
        "state": "OH",
        "count": 3,
    },
}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used (Linux /proc), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _event(event_id: str) -> bytes:
    return json.dumps({**EVENT, "id": event_id}, separators=(",", ":")).encode()


class Load:
    """C keep-alive connections sending requests built by ``make(conn, n)`` for ``seconds``.

    Besides wall-clock rates it records the CPU time the SERVER process spent: on a machine
    shared with other work, CPU-microseconds per event is the figure that does not depend on
    how much of the machine the benchmark happened to get."""

    def __init__(
        self, port: int, path: str, method: str, make, events_per_request: int, server_pid: int
    ) -> None:
        self.server_pid = server_pid
        self.port, self.path, self.method, self.make = port, path, method, make
        self.events_per_request = events_per_request
        self.latencies: list[float] = []
        self.events = 0
        self.errors: dict[int, int] = {}

    async def _conn(self, conn: int, until: float) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        n = 0
        try:
            while time.perf_counter() < until:
                n += 1
                body = self.make(conn, n)
                head = f"{self.method} {self.path} HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
                started = time.perf_counter()
                writer.write(head.encode() + body)
                status_line_and_headers = await reader.readuntil(b"\r\n\r\n")
                status = int(status_line_and_headers[9:12])
                length = 0
                for line in status_line_and_headers.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                await reader.readexactly(length)
                self.latencies.append(time.perf_counter() - started)
                if status == 200:
                    self.events += self.events_per_request
                else:
                    self.errors[status] = self.errors.get(status, 0) + 1
        finally:
            writer.close()

    def run(self, connections: int, seconds: float) -> dict[str, float]:
        async def main() -> float:
            until = time.perf_counter() + seconds
            start = time.perf_counter()
            await asyncio.gather(*(self._conn(c, until) for c in range(connections)))
            return time.perf_counter() - start

        cpu_before, client_before = _cpu_seconds(self.server_pid), time.process_time()
        elapsed = asyncio.run(main())
        server_cpu, client_cpu = (
            _cpu_seconds(self.server_pid) - cpu_before,
            time.process_time() - client_before,
        )
        lat = sorted(self.latencies)
        units = self.events or len(lat)
        return {
            "server_cpu_us": 1e6 * server_cpu / units if units else float("nan"),
            "client_cpu_us": 1e6 * client_cpu / units if units else float("nan"),
            "events_per_s": self.events / elapsed,
            "requests_per_s": len(lat) / elapsed,
            "p50_ms": 1000 * lat[len(lat) // 2] if lat else float("nan"),
            "p99_ms": 1000 * lat[min(len(lat) - 1, int(len(lat) * 0.99))] if lat else float("nan"),
            "events": self.events,
            "errors": dict(self.errors),
        }


def _in_process(batch: int, seconds: float) -> dict[str, dict[str, float]]:
    """OpStore.append of ``batch``-event batches, no HTTP. Where the store can checkpoint in the
    background, two stores are driven in alternation (so machine load hits both alike): one
    leaving checkpoints to DuckDB inside a commit (at its 16 MB), one checkpointing beside the
    writer; per-append latency shows the stalls."""
    import inspect

    from agentlake.observe import ObservedOp, OpStore

    variants = {"in-process OpStore": {}}
    if "checkpoint_mb" in inspect.signature(OpStore).parameters:
        variants = {
            "in-process, inline ckpt": {"checkpoint_mb": None},
            "in-process OpStore": {},  # background checkpoints, the default
        }
    with tempfile.TemporaryDirectory() as tmp:
        stores = {
            name: OpStore(Path(tmp) / f"bench-{i}.duckdb", **kw)
            for i, (name, kw) in enumerate(variants.items())
        }
        stats = {name: {"events": 0, "cpu": 0.0, "wall": 0.0, "latencies": []} for name in variants}
        n = 0
        deadline = time.perf_counter() + seconds * len(variants)
        while time.perf_counter() < deadline:
            for name, store in stores.items():
                cpu_start, wall_start = time.process_time(), time.perf_counter()
                for _ in range(10):
                    n += 1
                    ops = [ObservedOp(**{**EVENT, "id": f"ip-{n}-{k}"}) for k in range(batch)]
                    began = time.perf_counter()
                    stats[name]["events"] += len(store.append(ops))
                    stats[name]["latencies"].append(time.perf_counter() - began)
                stats[name]["cpu"] += time.process_time() - cpu_start
                stats[name]["wall"] += time.perf_counter() - wall_start
        checkpoints = {name: getattr(store, "checkpoints", 0) for name, store in stores.items()}
        for store in stores.values():
            store.close()
    results: dict[str, dict[str, float]] = {}
    for name, st in stats.items():
        latencies = sorted(st["latencies"])
        results[name] = {
            "events_per_s": st["events"] / st["wall"],
            "events": st["events"],
            "server_cpu_us": 1e6 * st["cpu"] / st["events"],
            "p50_ms": 1000 * latencies[len(latencies) // 2],
            "p99_ms": 1000 * latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))],
            "max_ms": 1000 * latencies[-1],
            "background_checkpoints": checkpoints[name],
        }
    return results


class _ListSink:
    """Ops into a list: the recording path's own cost, without a store (works on any version)."""

    local = False

    def __init__(self) -> None:
        self.ops: list = []

    def append(self, ops, *, timeout=None, wait_for_space=0.0):
        from agentlake.observe import AppendResult

        self.ops.extend(ops)
        return [AppendResult(op.id) for op in ops]

    def close(self) -> None:
        pass


def _recording(seconds: float) -> dict[str, dict[str, float]]:
    """CPU per op of the in-process recording path: a wrapped tool over an embedded store."""
    import agentlake.observe as observe_module
    from agentlake.observe import Observer, OpStore, observe, wrap_tool

    deferred = getattr(observe_module, "deferred", None)  # absent before deferred() existed

    def search(query: str, city: str, k: int = 20) -> str:
        return f"{k} workers near {city}, top score 0.83"

    async def fetch(worker_id: str) -> dict[str, str]:
        return {"id": worker_id, "role": "Welder"}

    def measure(observer: Observer, step) -> dict[str, float]:
        ops, start, cpu_start = 0, time.perf_counter(), time.process_time()
        while time.perf_counter() - start < seconds:
            ops += step()
        cpu, wall = time.process_time() - cpu_start, time.perf_counter() - start
        return {"events_per_s": ops / wall, "events": ops, "server_cpu_us": 1e6 * cpu / ops}

    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp, Observer(OpStore(Path(tmp) / "rec.duckdb")) as observer:
        tool = wrap_tool(search, observer=observer)

        def one() -> int:
            with observe("task.step", input="fill 3 x Welder", observer=observer) as op:
                op.set_output(tool("certified welder", "Cleveland"))
            return 2

        results["observe(), one by one"] = measure(observer, one)
        memory = Observer(_ListSink(), ring_size=1000)
        memory_tool = wrap_tool(search, observer=memory)

        def in_memory() -> int:
            with observe("task.step", input="fill 3 x Welder", observer=memory) as op:
                op.set_output(memory_tool("certified welder", "Cleveland"))
            memory.sink.ops.clear()
            return 2

        results["observe(), no store"] = measure(memory, in_memory)
        if deferred is not None:

            def scoped() -> int:
                with deferred():
                    for _ in range(5):
                        one()
                return 10

            results["observe(), deferred x10"] = measure(observer, scoped)
        wrapped = wrap_tool(fetch, observer=observer)

        def gathered() -> int:
            async def main() -> None:
                await asyncio.gather(*(wrapped(f"w-{i}") for i in range(64)))

            asyncio.run(main())
            return 64

        results["async wrap_tool, 64 tasks"] = measure(observer, gathered)
    return results


def _served(
    backend: str, extra_env: dict[str, str], args: argparse.Namespace, levels: list[int], results: dict
) -> tuple[int, list[str]]:
    """The HTTP measurements against `agentlake observer serve` storing into ``backend``; adds
    them to ``results`` (named with the backend) and returns (events stored, their names)."""
    data_dir = Path(tempfile.mkdtemp(prefix="bench-observe-"))
    port = _free_port()
    exe = shutil.which("agentlake", path=str(Path(sys.executable).parent)) or "agentlake"
    env = {
        **os.environ,
        "AGENTLAKE_DATA_DIR": str(data_dir),
        "AGENTLAKE_CONFIG": str(data_dir / "none.toml"),
        **extra_env,
    }
    server = subprocess.Popen(
        [exe, "observer", "serve", "--port", str(port)], env=env, stderr=subprocess.DEVNULL
    )
    names: list[str] = []

    def record(name: str, result: dict) -> None:
        results[f"{backend}: {name}"] = result
        names.append(f"{backend}: {name}")

    try:
        for _ in range(600):
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        floor = Load(port, "/health", "GET", lambda c, n: b"", 0, server.pid).run(levels[0], args.seconds)
        floor["events_per_s"] = floor["requests_per_s"]
        record("health floor", floor)
        record(
            "single c=1",
            Load(port, "/event", "POST", lambda c, n: _event(f"s1-{c}-{n}"), 1, server.pid).run(
                1, args.seconds
            ),
        )
        for concurrency in levels:
            record(
                f"single c={concurrency}",
                Load(
                    port, "/event", "POST", lambda c, n, k=concurrency: _event(f"s{k}-{c}-{n}"), 1, server.pid
                ).run(concurrency, args.seconds),
            )

        def batch_body(c: int, n: int) -> bytes:
            return b"[" + b",".join(_event(f"b-{c}-{n}-{k}") for k in range(args.batch)) + b"]"

        record(
            f"batched {args.batch}/req x{args.batch_connections}",
            Load(port, "/events", "POST", batch_body, args.batch, server.pid).run(
                args.batch_connections, args.seconds
            ),
        )
        stored = httpx.get(f"http://127.0.0.1:{port}/stats", timeout=60).json()["total"]
    finally:
        server.terminate()
        server.wait(60)
        shutil.rmtree(data_dir, ignore_errors=True)
    return stored, names


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=8.0, help="Duration of each measurement.")
    parser.add_argument(
        "--concurrency", default="64,256", help="Connections for single POSTs (comma-separated runs)."
    )
    parser.add_argument("--batch", type=int, default=1000, help="Events per POST /events.")
    parser.add_argument("--batch-connections", type=int, default=4, help="Connections for batched POSTs.")
    parser.add_argument(
        "--backends",
        default="duckdb,postgres",
        help="Stores behind the service, measured in this order in the same run: duckdb (the file), "
        "postgres (a throwaway local cluster, fsync on; its server's CPU is not in srv cpu).",
    )
    args = parser.parse_args()
    levels = [int(level) for level in str(args.concurrency).split(",")]

    load_before = f"{os.getloadavg()[0]:.2f}"
    results: dict[str, dict] = {}
    served: dict[str, tuple[int, list[str]]] = {}  # backend -> (stored, its measurements)
    for backend in args.backends.split(","):
        if backend == "postgres":
            from agentlake.postgres import LocalCluster, server_binaries

            if server_binaries() is None:
                print("postgres: skipped, PostgreSQL's server programs are not installed (make postgres)")
                continue
            # fsync on, as a real server: an acknowledged event is on disk.
            with LocalCluster(fsync=True) as cluster:
                url = cluster.create_database("bench")
                served[backend] = _served(backend, {"AGENTLAKE_DATABASE_URL": url}, args, levels, results)
        else:
            served[backend] = _served(backend, {}, args, levels, results)
    in_process = _in_process(args.batch, args.seconds)
    results.update(in_process)
    recording = _recording(args.seconds / 2)
    single_one = next(r["events_per_s"] for name, r in results.items() if name.endswith("single c=1"))
    print(f"load average before/after: {load_before} / {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    print(
        f"{'measurement':<38}{'events/s':>10}{'p50 ms':>9}{'p99 ms':>9}{'x c=1':>8}{'srv cpu us/ev':>15}{'=> ev/cpu-s':>13}  errors"
    )
    for name, r in results.items():
        cpu = r.get("server_cpu_us", float("nan"))
        print(
            f"{name:<38}{r['events_per_s']:>10,.0f}{r.get('p50_ms', float('nan')):>9.1f}{r.get('p99_ms', float('nan')):>9.1f}"
            f"{r['events_per_s'] / single_one:>8.1f}{cpu:>15.1f}{1e6 / cpu:>13,.0f}  {r.get('errors', {})}"
        )
    for backend, (stored, names) in served.items():
        acknowledged = sum(results[name]["events"] for name in names)
        print(
            f"{backend}: acknowledged {acknowledged:,} events; stored: {stored:,} "
            f"({'all durable' if stored == acknowledged else 'MISMATCH'})"
        )
    for name, r in in_process.items():
        print(
            f"{name}: slowest append {r['max_ms']:.0f} ms; background checkpoints {r['background_checkpoints']}"
        )
    print(f"\n{'in-process recording':<28}{'ops/s':>10}{'cpu us/op':>12}")
    for name, r in recording.items():
        print(f"{name:<28}{r['events_per_s']:>10,.0f}{r['server_cpu_us']:>12.1f}")


if __name__ == "__main__":
    main()
