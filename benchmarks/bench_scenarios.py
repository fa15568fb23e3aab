"""Scenario runner speed: days per second inline and on a process pool, and what lessons cost.

Generates a workforce lake (default 50,000 workers, seed 7) in a temporary directory, then runs
the built-in pack with ``rules-learning`` and ``rules-static`` over three batches:

1. inline (the baseline);
2. on the process backend with ``--workers`` processes (default 2).

It reports wall time, days and judged events per second, the mean seconds of one day per
staffer (``rules-static`` is the no-lessons baseline of ``rules-learning``'s retrieval and
lesson-driven search), the ratio process/inline, and checks that both backends gave the same
results. No model is called. Run: ``.venv/bin/python benchmarks/bench_scenarios.py``.

``--main-job`` measures ``make demo``'s first run instead, each in a fresh data directory (the
embedding model is loaded once beforehand, so neither pays for it):

1. the baseline: the same work in sequence, as the demo did before the background index
   (``run_demo``: generate, embed and index, examples; then the pack);
2. ``run_main_job``: the index built in a background thread while the rules staffers run the
   pack; its steps and their times are printed.

The main job ends with its embedded LLM staffer (``--llm-staffer``, default
``qwen-0.5b-learning``; ``none`` skips it; its model is installed by ``make models``): the
script prints its model calls, seconds per call and fill rate per batch. The load average is
printed before and after each (the machine may be shared).
Run: ``.venv/bin/python benchmarks/bench_scenarios.py --main-job [--llm-staffer NAME]``.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers-rows", type=int, default=50_000, help="workers in the generated lake")
    parser.add_argument("--workers", type=int, default=2, help="processes of the process backend")
    parser.add_argument("--batches", type=int, default=3)
    parser.add_argument("--main-job", action="store_true", help="time make demo's first run (see above)")
    parser.add_argument(
        "--llm-staffer",
        default="qwen-0.5b-learning",
        help="with --main-job: the embedded LLM staffer (none: skip)",
    )
    args = parser.parse_args()
    if args.main_job:
        main_job(args)
        return

    from agentlake.lake import Lake
    from agentlake.observe import open_observer
    from agentlake.scenarios import read_results
    from agentlake.scenarios.runner import run_scenarios
    from agentlake.settings import load_settings
    from agentlake.workforce.generator import generate_workforce, load_workforce

    root = Path(tempfile.mkdtemp(prefix="bench-scenarios-"))
    try:
        settings = load_settings(data_dir=str(root / "data"), runs_dir=str(root / "runs"))
        started = time.perf_counter()
        with Lake.open(settings) as lake:
            load_workforce(lake, generate_workforce(args.workers_rows, seed=7))
        print(
            f"lake: {args.workers_rows} workers generated and loaded in {time.perf_counter() - started:.1f} s"
        )

        timings: dict[str, dict[str, list[float]]] = {}
        walls: dict[str, float] = {}
        outcomes: dict[str, dict[tuple, tuple]] = {}
        learned: dict[str, float] = {}
        with open_observer(settings) as observer:
            for backend in ("inline", "process"):
                per_staffer: dict[str, list[float]] = defaultdict(list)

                def day(p, per_staffer=per_staffer) -> None:
                    per_staffer[p.staffer].append(p.seconds)

                started = time.perf_counter()
                summary = run_scenarios(
                    "builtin",
                    ["rules-learning", "rules-static"],
                    batches=args.batches,
                    backend=backend,
                    workers=args.workers,
                    settings=settings,
                    observer=observer,
                    run_id=backend,
                    on_progress=day,
                )
                walls[backend] = time.perf_counter() - started
                timings[backend] = per_staffer
                results = read_results(summary.run_dir)
                outcomes[backend] = {
                    (r.staffer, r.batch, r.scenario, r.event_id): (r.filled, tuple(r.accepted))
                    for r in results
                }
                curve = summary.learning_curve
                learned[backend] = curve["rules-learning"][-1] - curve["rules-learning"][0]
                days = sum(len(v) for v in per_staffer.values())
                print(
                    f"{backend:8s} wall {walls[backend]:6.1f} s  {days / walls[backend]:5.2f} days/s  "
                    f"{len(results) / walls[backend]:6.1f} events/s  curve {curve}"
                )
        for backend, per_staffer in timings.items():
            for staffer, seconds in per_staffer.items():
                print(
                    f"{backend:8s} {staffer:15s} mean day {statistics.mean(seconds):.3f} s  p95 {sorted(seconds)[int(0.95 * (len(seconds) - 1))]:.3f} s"
                )
        ratio = walls["process"] / walls["inline"]
        lessons_cost = statistics.mean(timings["inline"]["rules-learning"]) / statistics.mean(
            timings["inline"]["rules-static"]
        )
        print(f"process/inline wall-time ratio: {ratio:.2f} (with {args.workers} worker processes)")
        print(f"rules-learning/rules-static mean day (inline): {lessons_cost:.2f}x")
        print(f"same results on both backends: {outcomes['inline'] == outcomes['process']}")
        print(f"rules-learning gain batch 1 -> {args.batches}: {100 * learned['inline']:+.1f} points")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3]) if Path("/proc/loadavg").exists() else "?"


def main_job(args: argparse.Namespace) -> None:
    """The first run of ``make demo``: sequential baseline, then the background-index main job."""
    from agentlake.embed import get_embedder
    from agentlake.scenarios import read_results
    from agentlake.scenarios.main_job import DEMO_STAFFERS, StepDone, run_demo, run_main_job
    from agentlake.scenarios.runner import run_scenarios
    from agentlake.settings import load_settings

    get_embedder().embed(["load the model once, outside both measurements"])
    root = Path(tempfile.mkdtemp(prefix="bench-main-job-"))
    try:
        baseline = load_settings(data_dir=str(root / "seq" / "data"), runs_dir=str(root / "seq" / "runs"))
        print(f"baseline (index, then pack): load average before {_load()}")
        started = time.perf_counter()
        first = run_demo(baseline, workers=args.workers_rows)
        indexed = time.perf_counter() - started
        run_scenarios("builtin", list(DEMO_STAFFERS), batches=args.batches, settings=baseline)
        sequential = time.perf_counter() - started
        print(
            f"  {sequential:.1f} s: generate + embed {first.index.embedded if first.index else 0} + index "
            f"+ examples {indexed:.1f} s, pack {sequential - indexed:.1f} s; load average after {_load()}"
        )

        settings = load_settings(data_dir=str(root / "job" / "data"), runs_dir=str(root / "job" / "runs"))
        print(f"main job (index in the background): load average before {_load()}")
        steps: list[StepDone] = []
        started = time.perf_counter()
        job = run_main_job(
            settings,
            workers=args.workers_rows,
            batches=args.batches,
            llm_staffer=None if args.llm_staffer == "none" else args.llm_staffer,
            on_event=lambda e: steps.append(e) if isinstance(e, StepDone) else None,
        )
        wall = time.perf_counter() - started
        print(f"  {wall:.1f} s; load average after {_load()}")
        for step in steps:
            print(
                f"  {step.name:20s} from {step.started_s:7.1f} s  took {step.seconds:7.1f} s  {step.summary}"
            )
        print(f"main job / baseline wall time: {wall / sequential:.2f}")
        if job.local is not None:
            local = [r for r in read_results(job.local.run_dir) if r.staffer == args.llm_staffer]
            calls = sum(r.turns for r in local)
            seconds = sum(r.latency_ms for r in local) / 1000
            print(
                f"{args.llm_staffer}: {len(local)} events, {calls} turns, {seconds:.1f} s "
                f"({seconds / max(calls, 1):.2f} s per turn)"
            )
            for batch in sorted({r.batch for r in local}):
                rows = [r for r in local if r.batch == batch]
                filled, requested = sum(r.filled for r in rows), sum(r.requested for r in rows)
                print(f"  batch {batch}: {filled}/{requested} filled")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
