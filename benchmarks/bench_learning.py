"""Learning from what clients say: fill rate per batch, per feedback mode, on two packs.

Generates a workforce lake (default 50,000 workers, seed 7) in a temporary directory, then,
for each pack (the built-in pack and the second pack of the tests,
``tests/scenarios/data/pack2``: five other clients, cities and hidden values), runs
``rules-learning`` (learning between batches and within the day) and its learning-off twin
``rules-static`` under explicit, vague and silent feedback, over three batches. It prints:

- the learning curve (fill rate per batch) of every arm;
- per learning arm, the clients' hidden rules recovered exactly / too strict / too loose /
  missed, spurious filters, harmful lessons in use at the end, and the pool cost (workers the
  client would take that the learned filters leave out, over all of them);
- each issue-15 target with met / MISSED.

Fill rates, precision and counts do not depend on the machine's load (no model, no timing in
them); ``AGENTLAKE_PLAYBOOK_BOOST=false`` runs the arms without the playbook boost (issue 32's A/B).
Run: ``.venv/bin/python benchmarks/bench_learning.py`` (``--packs builtin`` for one pack).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

PACK2 = Path(__file__).resolve().parent.parent / "tests" / "scenarios" / "data" / "pack2"
MODES = ("explicit", "vague", "silent")
# (mode, batch, at least) for the learning arm; every learning-off twin must stay flat.
TARGETS = (("explicit", 1, 0.80), ("vague", 3, 0.90), ("silent", 3, 0.85))
MAX_POOL_COST = 0.10


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers-rows", type=int, default=50_000, help="workers in the generated lake")
    parser.add_argument("--batches", type=int, default=3)
    parser.add_argument("--packs", default=f"builtin,{PACK2}", help="comma-separated packs")
    args = parser.parse_args()

    from agentlake.lake import Lake
    from agentlake.observe import open_observer
    from agentlake.scenarios.runner import run_scenarios
    from agentlake.settings import load_settings
    from agentlake.workforce.generator import generate_workforce, load_workforce

    root = Path(tempfile.mkdtemp(prefix="bench-learning-"))
    failed = 0
    try:
        settings = load_settings(data_dir=str(root / "data"), runs_dir=str(root / "runs"))
        started = time.perf_counter()
        with Lake.open(settings) as lake:
            load_workforce(lake, generate_workforce(args.workers_rows, seed=7))
        print(f"lake: {args.workers_rows} workers (seed 7) in {time.perf_counter() - started:.1f} s")
        with open_observer(settings) as observer:
            for n, pack in enumerate(p for p in args.packs.split(",") if p):
                started = time.perf_counter()
                summary = run_scenarios(
                    pack,
                    ["rules-learning", "rules-static"],
                    batches=args.batches,
                    feedback=",".join(MODES),
                    settings=settings,
                    observer=observer,
                    run_id=f"pack{n + 1}",
                )
                name = "built-in pack" if pack == "builtin" else Path(pack).name
                print(f"\n== {name}: {time.perf_counter() - started:.1f} s, run dir {summary.run_dir}")
                for arm, curve in summary.learning_curve.items():
                    print(f"{arm:28s} " + " > ".join(f"{100 * v:.1f}%" for v in curve))
                for row in summary.leaderboard:  # precision: accepted of proposed, over the run
                    precision = row.get("precision")
                    shown = "n/a" if precision is None else f"{100 * precision:.1f}%"
                    print(f"precision {row.get('staffer', '?'):28s} {shown}")
                failed += report_targets(summary)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    raise SystemExit(1 if failed else 0)


def report_targets(summary) -> int:  # a runner.RunSummary
    """Print recovery per arm and each target; the number of targets missed."""
    from agentlake.scenarios.recovery import recovery_line

    missed = 0
    by_arm = summary.recovery_by_arm
    for arm, row in by_arm.items():
        print(recovery_line(arm, row))
    for mode, batch, floor in TARGETS:
        arm = "rules-learning" if mode == "explicit" else f"rules-learning@{mode}"
        value = summary.learning_curve[arm][batch - 1]
        ok = value >= floor
        missed += not ok
        print(
            f"target {arm} batch {batch} >= {100 * floor:.0f}%: {100 * value:.1f}% {'met' if ok else 'MISSED'}"
        )
    for arm, row in by_arm.items():
        ok = row["harmful"] == 0 and row["pool_cost"] <= MAX_POOL_COST
        missed += not ok
        print(f"target {arm}: 0 harmful, pool cost <= 10%: {'met' if ok else 'MISSED'}")
    for arm, curve in summary.learning_curve.items():
        if arm.startswith("rules-static"):
            ok = max(curve) - min(curve) < 1e-9
            missed += not ok
            print(f"target {arm} flat: {'met' if ok else 'MISSED'}")
    return missed


if __name__ == "__main__":
    main()
