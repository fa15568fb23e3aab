"""Issue 14's targets for LLM staffers, read from a finished scenario run's results.

For each staffer of the run (``agentlake run ... --run-id NAME``): the fill rate per batch (the
learning curve), the valid-action rate (model turns whose first reply was a valid action, no
schema retry) and the ids the model proposed that no tool had returned (invented). A final
proposal is always the verified part of what the model proposed (the orchestrator), so no worker
verification rejects is ever submitted. Fill rates do not depend on the machine's load (greedy
decoding), so these figures may be taken on a busy machine.

Run: ``.venv/bin/python benchmarks/llm_staffer_targets.py runs/NAME``.
"""

from __future__ import annotations

import argparse
from collections import defaultdict


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", help="a run directory (runs_dir/RUN_ID)")
    args = parser.parse_args()

    from agentlake.scenarios.results import read_results

    results = read_results(args.run_dir)
    by_staffer: dict[str, list] = defaultdict(list)
    for result in results:
        by_staffer[result.staffer].append(result)
    for staffer, rows in by_staffer.items():
        curve = []
        for batch in sorted({r.batch for r in rows}):
            done = [r for r in rows if r.batch == batch]
            filled, requested = sum(r.filled for r in done), sum(r.requested for r in done)
            curve.append(f"b{batch} {100 * filled / max(requested, 1):.0f}% ({filled}/{requested})")
        turns = sum(r.model_turns for r in rows)
        valid = sum(r.first_try_valid for r in rows)
        invented = sum(len(r.invented_ids) for r in rows)
        errors = sum(1 for r in rows if r.error)
        line = f"{staffer}: {len(rows)} events; " + " -> ".join(curve)
        if turns:
            line += (
                f"; valid actions without retry {valid}/{turns} ({100 * valid / turns:.1f}%)"
                f"; invented ids {invented}; model calls {sum(r.model_calls for r in rows)}"
            )
        line += f"; policy errors {errors}"
        print(line)


if __name__ == "__main__":
    main()
