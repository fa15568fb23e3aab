"""Issue 35's targets on the word-heavy pack (``benchmarks/word_pack``), with real staffers.

Builds (once) a lake of the generated workforce in ``--data-dir`` (50,000 workers, seed 7, as the
demo's), writes the pack's facts into the resumes around its clients (``prepare_resumes``), runs
the staffers over the pack for ``--batches`` batches under ``--run-id`` (``--resume`` goes on
with a run that was stopped: its finished days are kept), then prints per staffer the fill rate
by batch, the lessons cited per event and cited-but-not-given (always 0: a citation is kept only
for a given lesson), and the targets: the LLM learning staffer's batch 3 >= rules-learning's
batch 3 + 25 points and >= 80%, its learning-off twin flat (within 5 points of its batch 1).

Without the search index the candidates are ranked for reading by the wishes' words in code
(``agents/resume_check.py``); with it (``agentlake index build`` in the data dir), by the hybrid
search. Fill rates do not depend on the machine's load (greedy decoding); wall times do.

Run: ``AGENTLAKE_LOCAL_THREADS=2 .venv/bin/python benchmarks/bench_word_pack.py
--staffers qwen-1.5b-learning,qwen-1.5b-static,rules-learning --run-id w15``.
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from pathlib import Path

PACK = Path(__file__).parent / "word_pack"
GAIN_OVER_RULES = 25.0
BATCH3_MIN = 80.0
TWIN_BAND = 5.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--staffers", default="qwen-1.5b-learning,qwen-1.5b-static,rules-learning")
    parser.add_argument("--batches", type=int, default=3)
    parser.add_argument("--run-id", default="words")
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--data-dir", default="/tmp/agentlake-word-pack")
    parser.add_argument("--workers-rows", type=int, default=50_000)
    args = parser.parse_args()

    from agentlake.lake import Lake
    from agentlake.scenarios import load_scenarios
    from agentlake.scenarios.results import read_results
    from agentlake.scenarios.runner import run_scenarios
    from agentlake.scenarios.word_days import prepare_resumes
    from agentlake.settings import load_settings
    from agentlake.workforce.generator import ensure_workforce

    settings = load_settings(data_dir=args.data_dir, runs_dir=str(Path(args.data_dir) / "runs"))
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    pack = load_scenarios(PACK)
    started = time.perf_counter()
    with Lake.open(settings) as lake:
        generated, rows = ensure_workforce(lake, args.workers_rows, seed=7)
        written = prepare_resumes(lake, pack)
    print(f"lake: {rows} workers ({generated} generated now), {written} resumes given their facts now")
    summary = run_scenarios(
        pack,
        args.staffers.split(","),
        batches=args.batches,
        run_id=args.run_id,
        settings=settings,
        resume=args.resume,
    )
    print(f"run {summary.run_dir}: {summary.results} results in {time.perf_counter() - started:.0f} s")
    report(read_results(summary.run_dir))


def report(results: list) -> None:
    """Fill rate by batch, citations, and the targets."""
    by: dict[str, dict[int, list]] = defaultdict(lambda: defaultdict(list))
    for r in results:
        by[r.staffer][r.batch].append(r)
    rates: dict[str, dict[int, float]] = {}
    for staffer, batches in sorted(by.items()):
        rates[staffer] = {
            b: 100 * sum(r.filled for r in rs) / max(sum(r.requested for r in rs), 1)
            for b, rs in batches.items()
        }
        cited = sum(len(r.lessons_cited) for rs in batches.values() for r in rs)
        stray = sum(len(set(r.lessons_cited) - set(r.lessons_given)) for rs in batches.values() for r in rs)
        with_lessons = [r for rs in batches.values() for r in rs if r.lessons_given]
        curve = " -> ".join(
            f"{rates[staffer][b]:.0f}% ({sum(r.filled for r in batches[b])}/{sum(r.requested for r in batches[b])}"
            f", {len(batches[b])} events)"
            for b in sorted(batches)
        )
        per = cited / len(with_lessons) if with_lessons else 0.0
        print(f"{staffer}: {curve}; citations {cited} ({per:.2f} per event given lessons), not given {stray}")
    rules = rates.get("rules-learning", {})
    for staffer, curve in rates.items():
        if not staffer.endswith("-learning") or staffer == "rules-learning" or 3 not in curve:
            continue
        if 3 in rules:
            gain = curve[3] - rules[3]
            print(f"target {staffer} batch 3 >= rules-learning + {GAIN_OVER_RULES:g}: {gain:+.1f} points, "
                  + ("met" if gain >= GAIN_OVER_RULES else "MISSED"))  # fmt: skip
        print(f"target {staffer} batch 3 >= {BATCH3_MIN:g}%: {curve[3]:.1f}%, "
              + ("met" if curve[3] >= BATCH3_MIN else "MISSED"))  # fmt: skip
        twin = rates.get(staffer.removesuffix("-learning") + "-static")
        if twin and 1 in twin:
            spread = max(abs(v - twin[1]) for v in twin.values())
            print(f"target twin flat: within {spread:.1f} points of its batch 1, "
                  + ("met" if spread <= TWIN_BAND else "MISSED"))  # fmt: skip


if __name__ == "__main__":
    main()
