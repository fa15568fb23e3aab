"""The overseer's T3 on and off (issue 32 point 1): the same rules staffer, the same pack.

Generates a workforce lake (default 50,000 workers, seed 7) in a temporary directory, then runs
one scenario run with three arms of ``rules-learning`` over ``--batches`` batches:

- ``rules-learning``: no tier (the baseline every other figure of docs/benchmarks.md uses);
- ``rules-t5``: the gatekeeper (T5) on, T3 off;
- ``rules-t3-t5``: T3 on with ``--model`` (default the embedded 0.5B, ``local:qwen2.5-coder-0.5b``,
  in process; installed by ``make models``) and T5 on.

It prints each arm's fill rate and precision per batch, what T3 drafted and what T5 did with
every lesson (passed, refused, waiting) per batch, the lessons each arm ended with by status,
the model calls (T3's, and T5's with ``--t5-model``) and their mean seconds, and the load
average before and after.
``--pack``: ``day1`` (each client's first day: 19 events a batch, the default), ``reduced``
(``make demo``'s pack for the embedded model: each client's first event) or ``builtin`` (all).
Run: ``.venv/bin/python benchmarks/bench_tiers.py [--pack day1] [--batches 3] [--feedback explicit]``.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from collections import Counter
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers-rows", type=int, default=50_000, help="workers in the generated lake")
    parser.add_argument("--batches", type=int, default=3)
    parser.add_argument("--pack", choices=("day1", "reduced", "builtin"), default="day1")
    parser.add_argument("--model", default="local:qwen2.5-coder-0.5b", help="T3's model")
    parser.add_argument("--feedback", default="explicit", help="explicit, vague or silent")
    parser.add_argument(
        "--t5-model",
        default=None,
        help="the gatekeeper's model for lessons in words (default none: they wait)",
    )
    args = parser.parse_args()

    from agentlake.lake import Lake
    from agentlake.learn import LessonStore
    from agentlake.observe import open_observer
    from agentlake.scenarios import StafferProfile, load_scenarios, read_results
    from agentlake.scenarios.main_job import reduced_pack
    from agentlake.scenarios.metrics import per_batch
    from agentlake.scenarios.results import read_lines
    from agentlake.scenarios.runner import run_scenarios
    from agentlake.settings import load_settings
    from agentlake.workforce.generator import generate_workforce, load_workforce

    if args.pack == "reduced":
        pack = reduced_pack()
    elif args.pack == "day1":
        pack = [s for s in load_scenarios("builtin") if s.scenario.endswith("-day1")]
    else:
        pack = load_scenarios("builtin")
    base = {"policy": "rules", "lessons": True, "learning": True, "learn_within_day": True}
    arms = [
        StafferProfile(staffer="rules-learning", **base),
        StafferProfile(staffer="rules-t5", t5_gate=True, models={"t5": args.t5_model}, **base),
        StafferProfile(
            staffer="rules-t3-t5",
            t3_review=True,
            t5_gate=True,
            models={"t3": args.model, "t5": args.t5_model},
            **base,
        ),
    ]
    root = Path(tempfile.mkdtemp(prefix="bench-tiers-"))
    try:
        settings = load_settings(data_dir=str(root / "data"), runs_dir=str(root / "runs"))
        with Lake.open(settings) as lake:
            load_workforce(lake, generate_workforce(args.workers_rows, seed=7))
        print(f"pack {args.pack}: {len(pack)} days, {sum(len(s.events) for s in pack)} events a batch")
        print(f"load before: {_load()}")
        days: dict[str, list[float]] = {}
        started = time.perf_counter()
        with open_observer(settings) as observer:
            summary = run_scenarios(
                pack,
                arms,
                batches=args.batches,
                settings=settings,
                observer=observer,
                run_id="tiers",
                feedback=args.feedback,
                on_progress=lambda p: days.setdefault(p.staffer, []).append(p.seconds),
            )
            calls = observer.query(endpoint="llm.*", limit=10_000)
        wall = time.perf_counter() - started
        print(f"load after: {_load()}; wall {wall:.0f} s")
        results = read_results(summary.run_dir)
        for m in per_batch(results):
            print(
                f"{m.staffer:14s} batch {m.batch}: fill {100 * m.fill_rate:5.1f}% ({m.filled}/{m.requested}), "
                f"precision {100 * m.precision:5.1f}%"
            )
        for line in read_lines(summary.run_dir / "learning.jsonl"):
            print(f"{line['staffer']:14s} learning after batch {line['batch']}: {line.get('tiers') or {}}")
        for arm in summary.leaderboard:
            print(
                f"leaderboard: {arm['staffer']:14s} score {arm['score']:.1f} tiers {arm.get('tiers') or '-'}"
            )
        for arm in arms:
            name = arm.staffer + ("" if args.feedback == "explicit" else f"@{args.feedback}")
            path = summary.run_dir / "lessons" / f"{name}.duckdb"
            with LessonStore.open(settings, path=path, embedder=False) as store:
                lessons = store.list()
                statuses = Counter(lesson.status for lesson in lessons)
                refused = [
                    store.history(lesson.id)[-1].reason
                    for lesson in lessons
                    if lesson.status == "retired" and store.history(lesson.id)[-1].actor == "gatekeeper"
                ]
                from_t3 = Counter(lesson.status for lesson in lessons if lesson.source == "overseer")
            print(
                f"{arm.staffer:14s} lessons {dict(statuses)}; T3's {dict(from_t3)}; refused by T5 {len(refused)}"
            )
            for reason in refused[:3]:
                print(f"    {reason[:220]}")
        seconds = [op.duration_ms / 1000 for op in calls if op.duration_ms]
        if seconds:
            print(f"model calls {len(seconds)}, mean {sum(seconds) / len(seconds):.1f} s a call")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3]) if Path("/proc/loadavg").exists() else "?"


if __name__ == "__main__":
    main()
