"""Scenario days at once (``agentlake run --concurrency N``): events a minute of an LLM staffer.

One process, one copy of the staffer's embedded model (loaded and warmed before anything is
timed). A workforce lake is generated once (``--workers`` workers, seed 7) in a temporary data
directory, or ``--data-dir`` is used read-only. Then the same run, ``--staffer`` (default the
embedded ``qwen-0.5b-learning``) over ``--scenarios`` (``builtin``: the whole built-in pack;
``reduced``: the demo's reduced pack) for ``--batches`` batches, is made once per value of
``--concurrency`` (default ``1,4``), in that order, each its own run directory.

Printed per concurrency: wall seconds, judged events, events a minute and the ratio against
the first concurrency's, the widest engine call the batching made (how many replies shared a
pass), the process's peak RSS after that run (``ru_maxrss``: a peak, so it only grows), and
how many events' fills (the workers proposed and accepted) differ from the first
concurrency's, each listed: a batched int8 pass does not give bit-identical logits to a pass
alone (activations are quantised with one scale per call), so a near tie can go the other way.
The load average is printed before and after.

Run: .venv/bin/python benchmarks/bench_concurrency.py [--concurrency 1,4] [--scenarios builtin]
     [--staffer qwen-0.5b-learning] [--batches 1] [--data-dir DIR]
Target (issue 33): events a minute at --concurrency 4 >= 3x --concurrency 1, same fills.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import shutil
import subprocess
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path


def _commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _lake(args: argparse.Namespace, tmp: Path) -> Path:
    from agentlake.lake import Lake
    from agentlake.settings import load_settings
    from agentlake.workforce.generator import ensure_workforce

    if args.data_dir:
        return Path(args.data_dir)
    settings = load_settings(data_dir=tmp / "data")
    with Lake.open(settings) as lake:
        ensure_workforce(lake, args.workers, 7)
    return tmp / "data"


def _warm(staffer: str, settings) -> object | None:  # the model's Decoder
    """Load the staffer's local model and decode one reply, so no run pays for either (None:
    the staffer has no local model, a rules staffer)."""
    from agentlake.scenarios.profile import load_profile

    models = [m for m in load_profile(staffer).model_list(settings) if m.startswith("local:")]
    if not models:
        return None
    from agentlake.llm import generate
    from agentlake.llm.local import LocalProvider

    provider = LocalProvider(models[0].removeprefix("local:"), settings)
    generate(provider, [{"role": "user", "content": "Say OK."}], max_tokens=4)
    return provider.decoder()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", default="1,4", help="comma-separated; the first is the baseline")
    parser.add_argument("--scenarios", default="builtin", choices=("builtin", "reduced"))
    parser.add_argument("--staffer", default="qwen-0.5b-learning")
    parser.add_argument("--batches", type=int, default=1)
    parser.add_argument("--workers", type=int, default=50_000, help="workers in the generated lake")
    parser.add_argument("--data-dir", help="a data directory with a workforce lake (read-only)")
    args = parser.parse_args()
    levels = [int(x) for x in args.concurrency.split(",")]

    from agentlake.lake import Lake
    from agentlake.observe import open_observer
    from agentlake.scenarios import load_scenarios, read_results
    from agentlake.scenarios.main_job import reduced_pack
    from agentlake.scenarios.runner import run_scenarios
    from agentlake.settings import load_settings

    tmp = Path(tempfile.mkdtemp(prefix="bench-concurrency-"))
    try:
        data_dir = _lake(args, tmp)
        settings = load_settings(data_dir=data_dir, runs_dir=tmp / "runs")
        (tmp / "ops").mkdir()
        observer_settings = load_settings(data_dir=tmp / "ops")  # never written into --data-dir
        pack = reduced_pack() if args.scenarios == "reduced" else load_scenarios("builtin")
        print(
            f"# {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, commit {_commit()}, {platform.processor() or platform.machine()}, "
            f"{os.cpu_count()} cores; {args.staffer} over the {args.scenarios} pack "
            f"({len(pack)} days, {sum(len(s.events) for s in pack)} events a batch), {args.batches} batch(es)"
        )
        decoder = _warm(args.staffer, settings)
        print(f"# model loaded and warm; peak RSS {_peak_rss_mb():.0f} MB; load {_load()}")
        observer = open_observer(observer_settings)
        rows = []
        first: dict | None = None
        try:
            with Lake.open(settings, read_only=True) as lake:
                for level in levels:
                    if decoder is not None:
                        decoder.batch.widest = 0
                    print(f"# concurrency {level}: start, load {_load()}", flush=True)
                    started = time.perf_counter()
                    summary = run_scenarios(
                        pack,
                        [args.staffer],
                        batches=args.batches,
                        concurrency=level,
                        settings=settings,
                        lake=lake,
                        observer=observer,
                        run_id=f"c{level}",
                    )
                    wall = time.perf_counter() - started
                    results = read_results(summary.run_dir)
                    fills = {
                        (r.batch, r.scenario, r.event_id): (r.filled, tuple(r.proposed), tuple(r.accepted))
                        for r in results
                    }
                    first = first or fills
                    differ = sorted(k for k in fills if fills[k] != first.get(k))
                    rows.append(
                        {
                            "level": level,
                            "wall": wall,
                            "events": len(results),
                            "per_min": len(results) / wall * 60,
                            "filled": sum(r.filled for r in results),
                            "requested": sum(r.requested for r in results),
                            "widest": decoder.batch.widest if decoder is not None else "-",
                            "rss": _peak_rss_mb(),
                            "differ": differ,
                        }
                    )
                    print(f"# concurrency {level}: {wall:.1f} s, load {_load()}", flush=True)
        finally:
            observer.close()
        base = rows[0]["per_min"]
        print(
            "| concurrency | wall s | events | events/min | vs first | filled/requested | widest call | peak RSS MB | fills differing |"
        )
        print("|---|---|---|---|---|---|---|---|---|")
        for row in rows:
            print(
                f"| {row['level']} | {row['wall']:.1f} | {row['events']} | {row['per_min']:.2f} | "
                f"{row['per_min'] / base:.2f}x | {row['filled']}/{row['requested']} | {row['widest']} | "
                f"{row['rss']:.0f} | {len(row['differ'])} |"
            )
        for row in rows[1:]:
            for key in row["differ"]:
                print(f"# concurrency {row['level']}: batch {key[0]} {key[1]} {key[2]} differs")
        print(f"# load after: {_load()}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
