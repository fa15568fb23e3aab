"""Issue 14's targets for LLM staffers, read from a finished scenario run's results.

For each staffer of the run (``agentlake run ... --run-id NAME``): the fill rate per batch (the
learning curve), the valid-action rate (model turns whose first reply was a valid action, no
schema retry) and the ids the model proposed that no tool had returned (invented). A final
proposal is always the verified part of what the model proposed (the orchestrator), so no worker
verification rejects is ever submitted. Fill rates do not depend on the machine's load (greedy
decoding), so these figures may be taken on a busy machine.

Then each target, met or missed and by how much, for every learning arm of a model beside its
learning-off twin (``qwen-1.5b-learning`` and ``qwen-1.5b-learning-by-batch`` beside
``qwen-1.5b-static``): batch 1 >= 60%, batch 3 >= batch 1 + 20 points, the twin flat (every
batch within 5 points of its batch 1), valid actions >= 98%. A batch with fewer events than the
first (a run stopped early) is marked partial.

Run: ``.venv/bin/python benchmarks/llm_staffer_targets.py runs/NAME``. The issue's whole-pack run,
the shipped staffers and the by-batch arm (``benchmarks/staffers/``) side by side::

    agentlake run --staffers qwen-1.5b-learning,qwen-1.5b-static,benchmarks/staffers/qwen-1.5b-learning-by-batch.yaml \\
        --batches 3 --run-id q15
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from dataclasses import dataclass

BATCH1_MIN = 60.0
GAIN_MIN = 20.0
TWIN_BAND = 5.0
VALID_MIN = 98.0


@dataclass
class Curve:
    """One staffer's figures over a run."""

    staffer: str
    rates: dict[int, float]
    events: dict[int, int]
    turns: int
    valid: int
    invented: int

    def partial(self, batch: int) -> bool:
        return self.events.get(batch, 0) < self.events.get(1, 0)


def curves(results: list) -> dict[str, Curve]:
    """Per staffer: fill rate (percent) and events per batch, model turns, valid first replies, invented ids."""
    by_staffer: dict[str, list] = defaultdict(list)
    for result in results:
        by_staffer[result.staffer].append(result)
    out = {}
    for staffer, rows in by_staffer.items():
        rates, events = {}, {}
        for batch in sorted({r.batch for r in rows}):
            done = [r for r in rows if r.batch == batch]
            rates[batch] = 100 * sum(r.filled for r in done) / max(sum(r.requested for r in done), 1)
            events[batch] = len(done)
        out[staffer] = Curve(
            staffer,
            rates,
            events,
            turns=sum(r.model_turns for r in rows),
            valid=sum(r.first_try_valid for r in rows),
            invented=sum(len(r.invented_ids) for r in rows),
        )
    return out


def _verdict(value: float, bound: float, *, at_least: bool = True) -> str:
    met = value >= bound if at_least else value <= bound
    return "met" if met else f"missed by {abs(value - bound):.1f} points"


def target_lines(found: dict[str, Curve]) -> list[str]:
    """Each issue-14 target, met or missed by how much, for every learning arm beside its twin."""
    lines = []
    for staffer, curve in sorted(found.items()):
        if "-learning" not in staffer:
            continue
        model = staffer.split("-learning")[0]
        name = f"{staffer}:"
        b1, b3 = curve.rates.get(1), curve.rates.get(3)
        if b1 is not None:
            lines.append(f"{name} batch 1 {b1:.1f}% >= {BATCH1_MIN:.0f}%: {_verdict(b1, BATCH1_MIN)}")
        if b1 is not None and b3 is not None:
            gain = b3 - b1
            partial = " (batch 3 partial)" if curve.partial(3) else ""
            lines.append(
                f"{name} batch 3 - batch 1 = {gain:+.1f} >= +{GAIN_MIN:.0f}: {_verdict(gain, GAIN_MIN)}{partial}"
            )
        twin = found.get(f"{model}-static")
        if twin is not None and twin.rates:
            drift = max(abs(rate - twin.rates[min(twin.rates)]) for rate in twin.rates.values())
            partial = " (partial)" if any(twin.partial(b) for b in twin.rates) or len(twin.rates) < 3 else ""
            lines.append(
                f"{name} twin {twin.staffer} {' -> '.join(f'{r:.1f}%' for r in twin.rates.values())}, "
                f"drift {drift:.1f} <= {TWIN_BAND:.0f}: {_verdict(drift, TWIN_BAND, at_least=False)}{partial}"
            )
        if b1 is not None and twin is not None and 1 in twin.rates:
            lines.append(f"{name} batch 1 against the twin: {b1 - twin.rates[1]:+.1f} points")
    for staffer, curve in sorted(found.items()):
        if curve.turns:
            rate = 100 * curve.valid / curve.turns
            lines.append(
                f"{staffer}: valid actions {curve.valid}/{curve.turns} = {rate:.1f}% >= {VALID_MIN:.0f}%: "
                f"{_verdict(rate, VALID_MIN)}; invented ids {curve.invented}"
            )
    return lines


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
            curve.append(
                f"b{batch} {100 * filled / max(requested, 1):.0f}% ({filled}/{requested}, {len(done)} events)"
            )
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
    print()
    for line in target_lines(curves(results)):
        print(line)


if __name__ == "__main__":
    main()
