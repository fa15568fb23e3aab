"""Learning-loop benchmarks: curation writes, retrieval latency, extraction throughput.

Run: .venv/bin/python benchmarks/bench_learn.py [--lessons 1000] [--ops 5000] [--repeats 5] [--semantic]

Measures, in one run and on one machine, each beside a baseline measured in the same run:
- ``LessonStore.propose`` of N ADD deltas in ONE transaction, against the same N deltas
  proposed one per call (one transaction each, what a naive caller does);
- ``retrieve_lessons`` over N lessons (structured ranking on the in-memory current state, no
  citation; then with the run's citation written by ``record_citations``), against a baseline that reloads the current
  lessons from the DuckDB table and re-parses them for every call;
- the heuristic extractor over M ``fill.judged`` ops (ops/s) and ``learn_from_ops``
  (extraction + curation + marking ops learned), against re-learning the same ops (skipped);
- with ``--semantic``: retrieval including the embedding stage (real all-MiniLM-L6-v2).
Prints a Markdown table; figures are medians of ``--repeats`` runs.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from agentlake.learn import (
    Delta,
    ExtractContext,
    HeuristicExtractor,
    Lesson,
    LessonDraft,
    LessonMatch,
    LessonStore,
    TaskKey,
    learn_from_ops,
    retrieve_lessons,
)
from agentlake.learn.retrieval import rank_lessons
from agentlake.observe.model import ObservedOp
from agentlake.settings import load_settings
from agentlake.workforce.learning import StaffingAction

ROLES = ["Welder", "Electrician", "Forklift Operator", "Line Cook", "Warehouse Associate", "Pipefitter"]
RULES = [
    ("required_certification", "OSHA 30"),
    ("min_reliability", 0.7),
    ("max_distance_miles", 40),
    ("exclude_prior_no_show", True),
    ("double_booked", "08:00-16:00"),
]


def median_of(fn: Callable[[], object], repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def drafts(n: int, rng: random.Random) -> list[LessonDraft]:
    out = []
    for i in range(n):
        client = f"client-{i % 50}"
        role = ROLES[i % len(ROLES)] if i % 3 else None
        out.append(
            LessonDraft(
                trigger=f"Filling {role or 'any role'} for {client} (case {i})",
                action=f"Only propose workers with reliability >= {0.5 + (i % 40) / 100:.2f} and shift note {i}",
                match=LessonMatch(client_id=client, role=role),
                machine=StaffingAction(min_scores={f"score_{i}": round(rng.uniform(0.1, 0.9), 2)}),
                confidence=0.8,
                evidence_op_ids=[f"op-{i}"],
                domain="staffing",
            )
        )
    return out


def judged_ops(m: int, rng: random.Random, tag: str) -> list[ObservedOp]:
    ops = []
    for i in range(m):
        client = f"client-{rng.randrange(50)}"
        rejections = [
            {"worker_id": rng.randrange(10**6), "reason": f"{rule} {value}", "rule": rule, "value": value}
            for rule, value in rng.sample(RULES, k=rng.randrange(0, 4))
        ]
        ops.append(
            ObservedOp(
                id=f"{tag}-{i}",
                endpoint="fill.judged",
                source="scenario",
                success=not rejections,
                run_id=f"{tag}-run-{i}",
                labels=dict(role=rng.choice(ROLES), city="Cleveland", state="OH"),
                attributes={
                    "client_id": client,
                    "task_kind": "baseline_fill",
                    "requested": 3,
                    "filled": 3 - len(rejections),
                    "rejections": rejections,
                },
            )
        )
    return ops


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lessons", type=int, default=1000)
    parser.add_argument("--ops", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--semantic", action="store_true", help="also time retrieval with the embedding stage"
    )
    args = parser.parse_args()
    rng = random.Random(5)
    rows: list[tuple[str, str, str, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        settings = load_settings(data_dir=Path(tmp))

        # --- propose: one transaction vs one per delta --------------------------------------
        batch = drafts(args.lessons, rng)
        one_by_one = batch[: max(50, args.lessons // 10)]
        with LessonStore.open(settings, path=Path(tmp) / "a.duckdb", embedder=False) as store:
            started = time.perf_counter()
            store.propose([Delta(op="ADD", lesson=d) for d in batch])
            batched_s = time.perf_counter() - started
        with LessonStore.open(settings, path=Path(tmp) / "b.duckdb", embedder=False) as store:
            started = time.perf_counter()
            for d in one_by_one:
                store.propose([Delta(op="ADD", lesson=d)])
            single_s = time.perf_counter() - started
        per_batched = batched_s / len(batch) * 1000
        per_single = single_s / len(one_by_one) * 1000
        rows.append(
            (
                f"propose {len(batch)} ADDs in one transaction",
                f"{per_batched:.2f} ms/delta",
                f"one transaction per delta ({len(one_by_one)}): {per_single:.2f} ms/delta",
                f"{per_single / per_batched:.1f}x faster",
            )
        )

        # --- retrieval: in-memory ranking vs reloading the table per call -------------------
        with LessonStore.open(settings, path=Path(tmp) / "a.duckdb", embedder=False) as store:
            tasks = [
                TaskKey(
                    task_kind="baseline_fill",
                    role=ROLES[i % len(ROLES)],
                    client_id=f"client-{i % 50}",
                    city="Cleveland",
                    state="OH",
                )
                for i in range(200)
            ]
            counter = iter(range(10**9))

            def retrieve() -> None:
                for task in tasks:
                    retrieve_lessons(store, task, semantic=False)

            def retrieve_cited() -> None:
                # Retrieval is a read; a run's citation is written by record_citations (what
                # the learner does with the lessons a run states it was given).
                for task in tasks[:50]:
                    given = retrieve_lessons(store, task, semantic=False)
                    store.record_citations(
                        f"run-{next(counter)}", given.ids, used=False, sig_hash=given.sig_hash
                    )

            def reload_and_rank() -> None:
                for task in tasks[:50]:
                    fresh = [
                        Lesson.model_validate_json(body)
                        for (body,) in store.query("SELECT body FROM lessons")
                    ]
                    store.db._lessons = {lesson.id: lesson for lesson in fresh}  # the naive store: no cache,
                    store._pool = None  # no index
                    rank_lessons(store, task, semantic=False)

            per_call = median_of(retrieve, args.repeats) / len(tasks) * 1000
            per_cited = median_of(retrieve_cited, args.repeats) / 50 * 1000
            per_reload = median_of(reload_and_rank, max(1, args.repeats // 2)) / 50 * 1000
            rows.append(
                (
                    f"retrieve_lessons over {len(store.list())} lessons, 400-token budget",
                    f"{per_call:.2f} ms/call",
                    f"reload + parse the lessons table per call: {per_reload:.2f} ms/call",
                    f"{per_reload / per_call:.1f}x faster",
                )
            )
            rows.append(
                (
                    "retrieve_lessons with the citation written (record_citations)",
                    f"{per_cited:.2f} ms/call",
                    f"same without citation: {per_call:.2f} ms/call",
                    f"{per_cited / per_call:.1f}x the cost",
                )
            )

            if args.semantic:
                from agentlake.embed import get_embedder

                store._embedder = get_embedder(settings=settings)
                retrieve_lessons(store, tasks[0])  # load the model, embed the lessons once

                def semantic() -> None:
                    for task in tasks[:50]:
                        retrieve_lessons(store, task)

                per_sem = median_of(semantic, args.repeats) / 50 * 1000
                rows.append(
                    (
                        "retrieve_lessons with the semantic stage (MiniLM, cached vectors)",
                        f"{per_sem:.2f} ms/call",
                        f"structured only: {per_call:.2f} ms/call",
                        f"{per_sem / per_call:.1f}x the cost",
                    )
                )

        # --- extraction and learning -------------------------------------------------------
        ops = judged_ops(args.ops, rng, "bench")
        extractor = HeuristicExtractor()
        extract_s = median_of(lambda: extractor.extract(ops, ExtractContext()), args.repeats)
        with LessonStore.open(settings, path=Path(tmp) / "c.duckdb", embedder=False) as store:
            started = time.perf_counter()
            applied = learn_from_ops(store, ops, extractor=extractor)
            learn_s = time.perf_counter() - started
            relearn_s = median_of(lambda: learn_from_ops(store, ops, extractor=extractor), args.repeats)
            lessons = len(store.list())
        rows.append(
            (
                f"heuristic extractor over {len(ops)} fill.judged ops",
                f"{len(ops) / extract_s:,.0f} ops/s",
                "",
                "",
            )
        )
        rows.append(
            (
                f"learn_from_ops over {len(ops)} ops ({len(applied)} deltas -> {lessons} lessons)",
                f"{learn_s * 1000:.0f} ms",
                f"the same ops again (all skipped): {relearn_s * 1000:.0f} ms",
                f"{learn_s / relearn_s:.1f}x",
            )
        )

    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, python {platform.python_version()}"
    )
    print("| measurement | agentlake | baseline (same run) | ratio |")
    print("|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
