"""OTLP export of agentlake's own ops under load: spans exported per second, and what exporting
adds to an operation.

A collector (``agentlake.observe.otlp_collector``: the official protobuf decoding, in memory)
runs in a child process on loopback; THIS process records ops through ``observe()`` into an
in-memory observer, with the exporter attached as configured by ``OTEL_EXPORTER_OTLP_ENDPOINT``.

Measured in the same run, the variants interleaved round by round (so machine load hits all
alike):
  off            no exporter: the recording path's own cost per op (the baseline)
  live           exporter to the running collector
  down           exporter to a closed port (connection refused): a collector that is down

For each: per-op latency of ``with observe(...)`` (p50, p99), and for ``live`` the spans the
collector received per second while ops were recorded as fast as one thread can (saturation:
spans beyond the queue are dropped, counted), and at a paced rate below it (nothing dropped).

Usage: .venv/bin/python benchmarks/bench_otlp_export.py [--ops 20000] [--rounds 3] [--paced 2000]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import socket
import statistics
import time
from typing import Any

from agentlake.observe import MemorySink, Observer, observe
from agentlake.observe.otlp_export import OtlpExport


def _collector(port_out: Any, counts: Any, stop: Any) -> None:
    from agentlake.observe.otlp_collector import OtlpCollector

    with OtlpCollector() as collector:
        port_out.send(collector.endpoint)
        while not stop.wait(0.05):
            counts.value = len(collector.spans)
        counts.value = len(collector.spans)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _record(observer: Observer, ops: int, pace_per_s: float | None = None) -> list[float]:
    """Record ``ops`` ops (a tool call with a small input), one by one; per-op seconds."""
    latencies = []
    interval = 1.0 / pace_per_s if pace_per_s else 0.0
    next_at = time.perf_counter()
    for index in range(ops):
        if interval:
            next_at += interval
            delay = next_at - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
        started = time.perf_counter()
        with observe("tool.find_workers", observer=observer, input={"role": "Welder", "n": index}) as op:
            op.set_output({"rows": 10})
        latencies.append(time.perf_counter() - started)
    return latencies


def _exporter(endpoint: str) -> Any:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter(endpoint=f"{endpoint}/v1/traces", timeout=2)


def _variant(name: str, endpoint: str | None, ops: int, counts: Any, pace: float | None = None) -> dict:
    observer = Observer(MemorySink(), ring_size=1000)
    export = None
    if endpoint is not None:
        export = OtlpExport(observer, _exporter(endpoint), close_timeout_s=2.0)
        observer.attach(export)
    before = counts.value if counts is not None else 0
    start = time.perf_counter()
    latencies = _record(observer, ops, pace)
    recorded_s = time.perf_counter() - start
    result: dict[str, Any] = {"name": name, "p50_us": _percentile(latencies, 0.5) * 1e6}
    result["p99_us"] = _percentile(latencies, 0.99) * 1e6
    result["recorded_per_s"] = ops / recorded_s
    if export is not None and name.startswith("live"):
        export.flush(30)
        time.sleep(0.2)
        drained_s = time.perf_counter() - start
        received = counts.value - before
        result["received"] = received
        result["exported_per_s"] = received / drained_s
        result["dropped"] = ops - received
    observer.close()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--ops", type=int, default=20000, help="ops per variant and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--paced", type=float, default=2000.0, help="ops/s of the paced live variant")
    args = parser.parse_args()
    os.environ["OTEL_BSP_SCHEDULE_DELAY"] = "100"

    context = multiprocessing.get_context("spawn")
    receive_port, send_port = context.Pipe(duplex=False)
    counts = context.Value("q", 0)
    stop = context.Event()
    child = context.Process(target=_collector, args=(send_port, counts, stop), daemon=True)
    child.start()
    endpoint = receive_port.recv()
    down = f"http://127.0.0.1:{_closed_port()}"
    load_before = os.getloadavg()[0]

    results: dict[str, list[dict]] = {}
    for _ in range(args.rounds):
        for name, target, pace in (
            ("off", None, None),
            ("live", endpoint, None),
            ("down", down, None),
            ("live paced", endpoint, args.paced),
        ):
            ops = args.ops if pace is None else min(args.ops, int(pace * 3))
            results.setdefault(name, []).append(_variant(name, target, ops, counts, pace))
    stop.set()
    child.join(10)

    base = statistics.median(r["p99_us"] for r in results["off"])
    print(
        f"{'variant':<12} {'p50 us':>8} {'p99 us':>8} {'p99 vs off':>10} {'rec/s':>9} {'exported/s':>11} {'dropped':>8}"
    )
    for name, rounds in results.items():
        p50 = statistics.median(r["p50_us"] for r in rounds)
        p99 = statistics.median(r["p99_us"] for r in rounds)
        rec = statistics.median(r["recorded_per_s"] for r in rounds)
        exported = statistics.median(r.get("exported_per_s", 0.0) for r in rounds)
        dropped = statistics.median(r.get("dropped", 0) for r in rounds)
        shown = f"{exported:>11.0f}" if "exported_per_s" in rounds[0] else f"{'-':>11}"
        drops = f"{dropped:>8.0f}" if "dropped" in rounds[0] else f"{'-':>8}"
        print(f"{name:<12} {p50:>8.1f} {p99:>8.1f} {p99 / base:>10.2f} {rec:>9.0f} {shown} {drops}")
    print(
        f"ops per variant and round: {args.ops} (paced: {min(args.ops, int(args.paced * 3))} at "
        f"{args.paced:.0f}/s); rounds: {args.rounds}; medians over rounds"
    )
    print(
        f"load average before/after: {load_before:.2f} / {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores"
    )


if __name__ == "__main__":
    main()
