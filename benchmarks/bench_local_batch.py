"""Concurrent completions of one embedded ``local:`` model: what batching their passes buys.

One model is loaded once (one copy in the process whatever the concurrency). The tasks are
agent turns as ``bench_local_llm`` builds them (a ~1.5k-token staffing executor's prompt, the
same system part for all, a different tool result each; a JSON action constrained by its
schema as the reply), ``--tasks`` of them. Each is run at every concurrency of ``--concurrency``
(threads calling ``generate`` at once, each taking the next task): first one at a time (the
baseline), then batched. A warm-up round at the highest concurrency fills as many prefix-cache
slots with the shared system prompt as the batched runs will use, so every run reuses it.

Printed per concurrency: wall seconds for all tasks, reply tokens per second over the wall
time, p50 and max seconds per task (a task's latency from its start to its reply), p50 against
the one-at-a-time p50, how many replies equal the one-at-a-time reply to the same task
(greedy; int8 quantises a pass's activations with one scale, so a near tie can go the other
way), and the widest engine call the batch made. Then the process's RSS after loading and its
peak.

``--gateway`` measures the same through the doors: an ``agentlake serve`` on 127.0.0.1 over a
generated workforce lake (``--workers``), ``--tasks`` questions POSTed to /ask with
``model=local:...``: a warm-up round of them at once (it loads the model), then one at a time,
then all at once; p50 and max seconds per request, their ratio, how many answers equal the
one-at-a-time answer, and the server's peak RSS (``VmHWM``).

Run: .venv/bin/python benchmarks/bench_local_batch.py [--model 0.5b] [--tasks 8]
[--concurrency 1,2,4,8] [--gateway [--workers 2000]]
Target (issue 33): 8 concurrent POST /ask with the 0.5B, p50 latency <= 2x a single request's.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import shutil
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

# Run as a script, this directory is on the path: the tasks are bench_local_llm's turns.
from bench_local_llm import ACTION_SCHEMA, MODELS, ORDER, system_prompt, tool_result
from gateway_process import clean_env, start_gateway

from agentlake.llm import Message, generate, reset_llm_state
from agentlake.llm.local import LocalProvider, unload_engines
from agentlake.settings import load_settings


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def run(provider: LocalProvider, tasks: list[list[Message]], concurrency: int, max_tokens: int) -> dict:
    """Every task answered by ``concurrency`` threads at once; latencies, replies, tokens."""
    latencies: list[float] = [0.0] * len(tasks)
    replies: list[str] = [""] * len(tasks)
    tokens = [0] * len(tasks)
    start = threading.Barrier(concurrency)

    def one(index: int) -> None:
        if index < concurrency:
            start.wait()  # the first ``concurrency`` tasks start together
        t0 = time.perf_counter()
        completion = generate(
            provider, tasks[index], schema=ACTION_SCHEMA, max_tokens=max_tokens, temperature=0
        )
        latencies[index] = time.perf_counter() - t0
        replies[index] = completion.text
        tokens[index] = completion.usage.output_tokens

    batch = provider.decoder().batch
    batch.widest = 0
    started = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(one, range(len(tasks))))
    wall = time.perf_counter() - started
    return {
        "wall_s": wall,
        "tok_s": sum(tokens) / wall,
        "p50_s": statistics.median(latencies),
        "max_s": max(latencies),
        "replies": replies,
        "widest": batch.widest,
    }


QUESTIONS = [
    "How many welders live in Ohio?",
    "How many electricians live in Texas?",
    "What is the average hourly rate of forklift operators?",
    "How many workers have a reliability above 0.9?",
    "Which state has the most welders?",
    "How many CNAs live in California?",
    "What is the highest hourly rate of any electrician?",
    "How many workers live in Pennsylvania?",
]
KEY = "bench-batch-key"


def gateway(model: str, tasks: int, workers: int) -> None:
    """The /ask figures through ``agentlake serve`` (module docstring)."""
    import httpx

    from agentlake.lake import Lake
    from agentlake.workforce.generator import generate_workforce, load_workforce

    root = Path(tempfile.mkdtemp(prefix="bench-local-batch-"))
    try:
        with Lake.open(load_settings(data_dir=root)) as lake:
            load_workforce(lake, generate_workforce(workers, seed=7))
        env = clean_env(
            {
                "AGENTLAKE_DATA_DIR": str(root),
                "AGENTLAKE_CONFIG": str(root / "none.toml"),
                "AGENTLAKE_API_KEYS": f"{KEY}:read",
                "AGENTLAKE_LEARN_SCHEDULE": "false",
                "AGENTLAKE_RATE_LIMIT_PER_MINUTE": "1000000000",
            }
        )
        # The server's log (its request failures among them) goes to stderr, beside the figures.
        base, server = start_gateway(env, sys.stderr, wait_s=120)
        try:
            questions = [QUESTIONS[i % len(QUESTIONS)] for i in range(tasks)]

            def ask(question: str) -> tuple[float, str]:
                t0 = time.perf_counter()
                response = httpx.post(
                    f"{base}/ask",
                    json={"question": question, "model": f"local:{model}"},
                    headers={"X-API-Key": KEY},
                    timeout=900,
                )
                answer = (
                    response.json().get("answer", "")
                    if response.status_code == 200
                    else f"HTTP {response.status_code}"
                )
                return time.perf_counter() - t0, answer

            def together() -> list[tuple[float, str]]:
                with ThreadPoolExecutor(len(questions)) as pool:
                    return list(pool.map(ask, questions))

            together()  # loads the model, fills the prefix caches
            alone = [ask(question) for question in questions]
            started = time.perf_counter()
            at_once = together()
            wall = time.perf_counter() - started
            hwm = next(
                line.split()[1]
                for line in Path(f"/proc/{server.pid}/status").read_text().splitlines()
                if line.startswith("VmHWM:")
            )
        finally:
            server.terminate()
            server.wait(timeout=60)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    single = statistics.median(t for t, _ in alone)
    batched = statistics.median(t for t, _ in at_once)
    same = sum(a == b for (_, a), (_, b) in zip(alone, at_once, strict=True))
    errors = sum(answer.startswith("HTTP ") for _, answer in alone + at_once)
    print("| POST /ask | p50 s/request | max s/request | p50 vs one at a time | same answers | HTTP errors |")
    print("|---|---|---|---|---|---|")
    print(f"| one at a time | {single:.2f} | {max(t for t, _ in alone):.2f} | 1.00 | - | - |")
    print(
        f"| {len(questions)} at once (wall {wall:.1f} s) | {batched:.2f} | {max(t for t, _ in at_once):.2f} | "
        f"{batched / single:.2f} | {same}/{len(questions)} | {errors} |"
    )
    print(f"# server peak RSS (VmHWM) {int(hwm) / 1024:.0f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="0.5b", choices=sorted(MODELS))
    parser.add_argument("--tasks", type=int, default=8)
    parser.add_argument("--concurrency", default="1,2,4,8", help="comma-separated; 1 is the baseline")
    parser.add_argument("--max-tokens", type=int, default=160)
    parser.add_argument("--gateway", action="store_true", help="also POST /ask to an agentlake serve")
    parser.add_argument("--workers", type=int, default=2000, help="the gateway's workforce lake")
    args = parser.parse_args()
    levels = sorted({int(c) for c in args.concurrency.split(",")} | {1})

    load1, load5, load15 = os.getloadavg()
    settings = load_settings()
    print(
        f"# bench_local_batch  {datetime.now(UTC):%Y-%m-%d %H:%M} UTC  {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores, load average {load1:.2f} {load5:.2f} {load15:.2f}; "
        f"local:{MODELS[args.model]} transformers-{settings.local_torch_dtype}, "
        f"draft {settings.local_draft_tokens}, {args.tasks} tasks"
    )
    reset_llm_state()
    provider = LocalProvider(MODELS[args.model], settings)
    provider.decoder()
    loaded_rss = _rss_mb()
    system = Message(role="system", content=system_prompt())
    tasks = [[system, Message(role="user", content=f"{ORDER}\n{tool_result(i)}")] for i in range(args.tasks)]
    warm = [
        [system, Message(role="user", content=f"{ORDER}\n{tool_result(100 + i)}")] for i in range(max(levels))
    ]
    run(provider, warm, max(levels), args.max_tokens)

    print(
        "| concurrency | wall s | reply tok/s | p50 s/task | max s/task | p50 vs one at a time | same replies | widest call |"
    )
    print("|---|---|---|---|---|---|---|---|")
    baseline: dict | None = None
    for level in levels:
        result = run(provider, tasks, level, args.max_tokens)
        baseline = baseline or result
        same = sum(a == b for a, b in zip(result["replies"], baseline["replies"], strict=True))
        print(
            f"| {level} | {result['wall_s']:.1f} | {result['tok_s']:.1f} | {result['p50_s']:.2f} | "
            f"{result['max_s']:.2f} | {result['p50_s'] / baseline['p50_s']:.2f} | {same}/{len(tasks)} | "
            f"{result['widest']} |",
            flush=True,
        )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    load1, load5, load15 = os.getloadavg()
    print(
        f"# RSS after loading {loaded_rss:.0f} MB, peak {peak:.0f} MB; "
        f"{len(provider.decoder().slots)} KV-cache slots; load average at the end: {load1:.2f} {load5:.2f} {load15:.2f}"
    )
    if args.gateway:
        unload_engines()  # the gateway's process loads its own
        gateway(MODELS[args.model], args.tasks, args.workers)
        load1, load5, load15 = os.getloadavg()
        print(f"# load average at the end: {load1:.2f} {load5:.2f} {load15:.2f}")


if __name__ == "__main__":
    main()
