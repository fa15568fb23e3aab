"""Orchestration overhead per turn of the executor/reviewer loop, model time excluded.

Runs ``LLMPolicy`` with scripted models (instant replies) over a generated lake, with the real
observer (embedded DuckDB op store, every tool call, model call and outcome recorded durably).
Each fill is six turns: plan, critique, find_workers, schedule_conflicts, propose_done (verified
in code), critique. Three observers, alternating fill by fill: in memory (``MemorySink``: the
orchestration alone), the embedded store with the default acknowledgement (a task's ops durable
together before the outcome returns) and with ``acknowledge="turn"`` (each turn's ops durable
before the next turn). Reported per turn:

- overhead: wall time minus model time (the scripted provider's own time) minus the tools' and
  verification's SQL over the lake: prompts, structured parsing and validation, the ledger and
  log, accounting, recording ops;
- overhead with SQL: the same plus the tools' and verification's queries;
- baseline: one bare ``generate_json`` call with the same provider and the executor's schema (the
  LLM layer's floor, no orchestration), measured in the same run, alternating fill by fill.

Usage: ``.venv/bin/python benchmarks/bench_agents.py [--workers 50000] [--fills 40]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

TARGET_MS = 5.0


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workers", type=int, default=50_000)
    parser.add_argument("--fills", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args()
    load_before = os.getloadavg()[0]

    from agentlake.agents import FillOrder, LLMPolicy, RunContext, ScheduleBook, default_tools, orchestrator
    from agentlake.agents.actions import ExecutorAction
    from agentlake.lake import Lake
    from agentlake.llm import FunctionProvider, generate_json
    from agentlake.observe import MemorySink, Observer, install_llm_recording, open_observer
    from agentlake.settings import Settings
    from agentlake.workforce.candidates import CandidateQuery, find_candidates
    from agentlake.workforce.generator import generate_workforce, load_workforce

    tmp = Path(tempfile.mkdtemp(prefix="bench-agents-"))
    settings = Settings(data_dir=tmp, executor_model=None, reviewer_model=None, agent_turn_budget=12)
    lake = Lake.open(settings)
    started = time.perf_counter()
    load_workforce(lake, generate_workforce(args.workers, seed=7))
    print(f"lake: {args.workers} workers generated and loaded in {time.perf_counter() - started:.1f} s")
    observer = open_observer(settings)

    order = FillOrder.parse("3 x Warehouse Associate in Chicago, IL at 08:00 on 2026-04-22")
    best = [
        r["worker_id"]
        for r in find_candidates(
            lake,
            CandidateQuery(
                role=order.role, city=order.city, state=order.state, min_availability=0.3, limit=12
            ),
        )
    ]
    free = [w for w in best if not ScheduleBook(lake).conflicts(w, order.shift_start, order.shift_end)]
    window = {"start": order.shift_start.isoformat(), "end": order.shift_end.isoformat()}
    executor_script = [
        {"kind": "plan", "steps": ["find warehouse associates near Chicago", "check schedules", "propose"]},
        {
            "kind": "tool_call",
            "tool": "find_workers",
            "args": {"role": order.role, "city": "Chicago", "state": "IL"},
        },
        {"kind": "tool_call", "tool": "schedule_conflicts", "args": {"worker_ids": best, **window}},
        {"kind": "propose_done", "worker_ids": free[:3], "spares": free[3:5]},
    ]
    critique = json.dumps({"kind": "critique", "approve": True, "notes": "ok"})
    model_ms = [0.0]
    queue: list[str] = []

    def reply(text_source):  # a FunctionProvider callback
        def fn(messages, options):
            t0 = time.perf_counter()
            text = text_source()
            model_ms[0] += (time.perf_counter() - t0) * 1000
            return text

        return fn

    executor = FunctionProvider(reply(lambda: queue.pop(0)), "bench-executor")
    reviewer = FunctionProvider(reply(lambda: critique), "bench-reviewer")
    sql_ms = [0.0]
    real_verify = orchestrator.verify_fill

    def timed_verify(*a, **k):
        t0 = time.perf_counter()
        try:
            return real_verify(*a, **k)
        finally:
            sql_ms[0] += (time.perf_counter() - t0) * 1000

    orchestrator.verify_fill = timed_verify
    tools = default_tools()
    real_call = tools.call

    def timed_call(*a, **k):
        result = real_call(*a, **k)
        sql_ms[0] += result.duration_ms  # the tool's own work; recording its op stays in the overhead
        return result

    tools.call = timed_call  # type: ignore[method-assign]
    policies = {
        "task": LLMPolicy(executor, reviewer),
        "turn": LLMPolicy(executor, reviewer, acknowledge="turn"),
    }
    schema = ExecutorAction.model_json_schema()
    plan_text = json.dumps(executor_script[0])
    messages = [{"role": "system", "content": "x" * 4000}, {"role": "user", "content": "y" * 2000}]

    memory_observer = Observer(MemorySink(), ring_size=1000)
    variants = {
        "memory": (memory_observer, "task"),
        "embedded": (observer, "task"),
        "embedded, per turn": (observer, "turn"),
    }
    results: dict[str, dict[str, list[float]]] = {
        name: {"overhead": [], "with_sql": [], "base": []} for name in variants
    }
    for i in range(args.warmup + args.fills):
        if isinstance(memory_observer.sink, MemorySink):
            memory_observer.sink.ops.clear()  # keep the in-memory variant's footprint flat
        for name, (chosen, acknowledge) in variants.items():  # alternate: machine load hits all alike
            policy = policies[acknowledge]
            uninstall = install_llm_recording(chosen)
            queue[:] = [json.dumps(step) for step in executor_script]
            model_ms[0] = sql_ms[0] = 0.0
            ctx = RunContext(
                lake=lake,
                schedule=ScheduleBook(lake),
                observer=chosen,
                settings=settings,
                rescue=False,
                tools=tools,
            )
            t0 = time.perf_counter()
            outcome = policy.run(order, ctx)
            wall = (time.perf_counter() - t0) * 1000
            assert outcome.success and outcome.turns == 6, outcome.failure_reason
            t1 = time.perf_counter()
            generate_json(
                FunctionProvider(lambda m, o: plan_text, "bench-baseline"),
                messages,
                schema,
                validate=ExecutorAction.model_validate,
                settings=settings,
            )
            base = (time.perf_counter() - t1) * 1000
            uninstall()
            if i >= args.warmup:
                results[name]["overhead"].append((wall - model_ms[0] - sql_ms[0]) / outcome.turns)
                results[name]["with_sql"].append((wall - model_ms[0]) / outcome.turns)
                results[name]["base"].append(base)
    observer.close()
    lake.close()

    def cell(values: list[float]) -> str:
        return f"{statistics.median(values):.3f} ms / {statistics.quantiles(values, n=10)[8]:.3f} ms"

    print(
        f"load average before/after: {load_before:.2f} / {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores"
    )
    print(
        "| per turn (median / p90) | observer in memory | embedded (DuckDB), acknowledged per task "
        "| embedded (DuckDB), acknowledged per turn |"
    )
    print("|---|---|---|---|")
    for key, label in (("base", "bare `generate_json` call, scripted (baseline)"),
                       ("overhead", "orchestration overhead (no model time, no SQL)"),
                       ("with_sql", "overhead + the tools' and verification's SQL")):  # fmt: skip
        print(f"| {label} | " + " | ".join(cell(results[name][key]) for name in variants) + " |")
    for name in variants:
        median = statistics.median(results[name]["overhead"])
        ratio = median / statistics.median(results[name]["base"])
        verdict = "met" if median <= TARGET_MS else "NOT met"
        print(
            f"{name}: overhead per turn {median:.3f} ms = {ratio:.1f}x the bare call; target <= {TARGET_MS:g} ms: {verdict}"
        )


if __name__ == "__main__":
    main()
