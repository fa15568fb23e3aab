"""Does the scheduled learner keep up with a busy gateway? Every learnable op read exactly once.

A writer thread records gateway ops into a real op store (DuckDB in a temporary directory) at
``--rate`` ops a minute for ``--minutes``: ``--learnable`` of them are failing ``POST /sql``
calls whose error names the near match of a misspelt column (what a client's agent sends), the
rest successful reads (``GET /datasets``, ``POST /search``). Beside it the product's
``LearningScheduler`` runs every ``--interval`` seconds (default: the setting
``learn_interval_s``) over the same observer, into a real
lesson store. When the writer stops, cycles run until the cursor reaches the last op.

Counted, from the ids each cycle was given (the scheduler's source is wrapped to record them):
ops written, ops read, ops read more than once, ops never read, learnable failures written and
how many the lesson store marks learned; per cycle the ops read and the seconds it took, and
the largest lag (ops committed but not yet read) seen at a cycle's start.

Baseline, in the same run over the same log: the scheduler as it was before (each cycle the
newest 2,000 ops since the newest op time it had seen), counting the learnable failures it read.

Usage: ``.venv/bin/python benchmarks/bench_learn_scheduler.py [--rate 10000] [--minutes 10]
[--learnable 0.01] [--interval SECONDS]``
"""

from __future__ import annotations

import argparse
import collections
import os
import platform
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

OLD_LIMIT = 2000  # what the previous scheduler read per cycle


class CountingSource:
    """The observer as the scheduler reads it, recording every op id it is given."""

    def __init__(self, observer: Any) -> None:
        self.observer = observer
        self.reads: collections.Counter[str] = collections.Counter()
        self.lock = threading.Lock()

    def query(self, **filters: Any) -> list[Any]:
        ops = list(self.observer.query(**filters))
        with self.lock:
            self.reads.update(op.id for op in ops)
        return ops


def _ops(start: int, count: int, every: int) -> tuple[list[Any], int]:
    """``count`` gateway ops numbered from ``start``: each ``every``-th a failing SQL call."""
    from agentlake.observe import ObservedOp

    ops = []
    failing = 0
    for n in range(start, start + count):
        if n % every == 0:
            failing += 1
            ops.append(
                ObservedOp(
                    endpoint="POST /sql",
                    source="gateway",
                    success=False,
                    input_summary='{"sql": "SELECT nme FROM customers"}',
                    error='Binder Error: Referenced column "nme" not found in FROM clause! '
                    'Candidate bindings: "name"',
                    duration_ms=2.0,
                )
            )
        else:
            endpoint = "GET /datasets" if n % 2 else "POST /search"
            ops.append(ObservedOp(endpoint=endpoint, source="gateway", duration_ms=1.0))
    return ops, failing


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rate", type=int, default=10_000, help="ops a minute")
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--learnable", type=float, default=0.01, help="share of failing SQL calls")
    parser.add_argument(
        "--interval", type=float, default=None, help="seconds between cycles (default: learn_interval_s, 300)"
    )
    args = parser.parse_args()

    from agentlake.lake import Lake
    from agentlake.learn import LearningScheduler, LessonStore
    from agentlake.learn.loop import read_recent_ops
    from agentlake.observe import Observer, OpStore
    from agentlake.settings import Settings

    root = Path(tempfile.mkdtemp(prefix="bench-learn-scheduler-"))
    settings = Settings(data_dir=root, default_model="none", learn_model=None)
    # The client's table: the learner checks the rename its failures teach on it.
    (root / "customers.csv").write_text("id,name\n1,Ada\n2,Grace\n")
    lake = Lake.open(settings)
    lake.ingest(root / "customers.csv", "customers")
    observer = Observer(OpStore(root / "ops.duckdb"))
    store = LessonStore.open(settings, path=root / "lessons.duckdb", embedder=False)
    source = CountingSource(observer)
    scheduler = LearningScheduler(store, source, interval_s=args.interval, lake=lake)
    args.interval = scheduler.interval_s
    every = max(1, round(1 / args.learnable))
    tick = 0.1
    per_tick = args.rate / 60 * tick
    written = failing = 0
    lags: list[int] = []
    cycle_seconds: list[float] = []
    cycle_reads: list[int] = []
    old_seen: set[str] = set()
    old_mark: Any = None
    stop = threading.Event()

    def write() -> None:
        nonlocal written, failing
        started = time.monotonic()
        owed = 0.0
        while not stop.is_set():
            owed += per_tick
            count = int(owed)
            owed -= count
            if count:
                ops, bad = _ops(written, count, every)
                observer.record_many(ops)
                written += count
                failing += bad
            delay = started + tick * (written / per_tick + 1) - time.monotonic()
            stop.wait(max(0.0, min(tick, delay)))

    def cycle() -> None:
        nonlocal old_mark
        lags.append(max(0, _last_seq(observer) - scheduler.cursor))
        began = time.perf_counter()
        report = scheduler.run_once()
        cycle_seconds.append(time.perf_counter() - began)
        cycle_reads.append(report.ops_read if report is not None else -1)
        # The baseline: the newest OLD_LIMIT ops since the newest op time seen so far.
        old = read_recent_ops(source=observer, since=old_mark, limit=OLD_LIMIT)
        old_seen.update(op.id for op in old if op.endpoint == "POST /sql" and not op.success)
        if old:
            old_mark = max(op.ts for op in old)

    load_before = os.getloadavg()
    writer = threading.Thread(target=write, name="writer", daemon=True)
    began = time.monotonic()
    writer.start()
    try:
        while time.monotonic() - began < args.minutes * 60:
            time.sleep(min(args.interval, args.minutes * 60 - (time.monotonic() - began)))
            cycle()
            print(
                f"{time.monotonic() - began:6.0f}s written {written:,} read {sum(source.reads.values()):,} "
                f"cursor {scheduler.cursor:,} cycle {cycle_seconds[-1]:.2f}s",
                flush=True,
            )
    finally:
        stop.set()
        writer.join()
    while scheduler.cursor < _last_seq(observer):
        cycle()
    cycle()  # the baseline's last look
    load_after = os.getloadavg()
    learned = store.query("SELECT count(*) FROM learned_ops")[0][0]
    read_twice = sum(1 for count in source.reads.values() if count > 1)
    never = written - len(source.reads)
    lessons = store.list()
    store.close()
    observer.close()
    lake.close()

    print()
    print(f"machine: {platform.node()} {platform.processor() or platform.machine()}, {os.cpu_count()} cores")
    print(
        f"load average before {load_before[0]:.2f} {load_before[1]:.2f}, after {load_after[0]:.2f} {load_after[1]:.2f}"
    )
    print(
        f"rate {args.rate:,}/min for {args.minutes} min, {args.learnable:.1%} learnable, interval {args.interval}s"
    )
    print()
    print("| measurement | value |")
    print("|---|---|")
    print(f"| ops written | {written:,} |")
    print(f"| ops read by the scheduler | {sum(source.reads.values()):,} ({len(source.reads):,} distinct) |")
    print(f"| ops read more than once | {read_twice:,} |")
    print(f"| ops never read | {never:,} |")
    print(f"| learnable failures written | {failing:,} |")
    print(f"| ops the lesson store marks learned | {learned:,} |")
    print(f"| lessons | {len(lessons)} ({', '.join(sorted({lesson.action[:60] for lesson in lessons}))}) |")
    print(
        f"| cycles | {len(cycle_seconds)}; ops a cycle median {statistics.median(cycle_reads):,.0f}, max {max(cycle_reads):,} |"
    )
    print(
        f"| seconds a cycle | median {statistics.median(cycle_seconds):.2f}, max {max(cycle_seconds):.2f} |"
    )
    print(f"| largest lag at a cycle's start (ops not yet read) | {max(lags):,} |")
    print(f"| baseline: learnable failures the previous scheduler read | {len(old_seen):,} of {failing:,} |")


def _last_seq(observer: Any) -> int:
    """The highest commit sequence in the observer's store."""
    return int(observer.sink.last_seq())


if __name__ == "__main__":
    main()
