"""Overhead of the LLM layer per call: ``generate()`` vs a raw httpx request to the same server.

Both talk to the same fake Ollama server (real HTTP on 127.0.0.1, keep-alive), sending the same
request body; calls alternate so drift on a shared machine hits both alike. The overhead is
the difference of the medians (and of the 90th percentiles). Also measured: ``generate()``
against an in-process provider (no HTTP), i.e. the layer's own cost.

Run: .venv/bin/python benchmarks/bench_llm.py [--calls N]
Target: median overhead <= 1 ms.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import httpx

from agentlake.llm import FunctionProvider, Message, add_recorder, generate, reset_llm_state
from agentlake.llm.fakeserver import serve_fake_ollama

REPLY = '{"worker_ids": [101, 102, 103], "reason": "closest certified welders"}'
PROMPT = "Fill 3 x Welder in Cleveland, OH for Riverfront Steel at 08:00. " * 8


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="measured calls per variant")
    parser.add_argument("--warmup", type=int, default=100)
    args = parser.parse_args()

    reset_llm_state()
    provider = FunctionProvider(
        lambda messages, options: REPLY, "bench-model", context_window=32768, supports_thinking=False
    )
    unsubscribe = add_recorder(lambda record: None)  # an observer is usually subscribed
    messages = [Message(role="system", content="You staff shifts."), Message(role="user", content=PROMPT)]
    with serve_fake_ollama(provider) as url:
        os.environ["OLLAMA_HOST"] = url
        generate("ollama:bench-model", messages, max_tokens=64)  # resolves the provider, /api/show once
        body = provider.raw_requests[-1]  # exactly what generate() sends
        raw_client = httpx.Client(base_url=url, timeout=30)

        def raw() -> None:
            response = raw_client.post("/api/chat", json=body)
            response.raise_for_status()
            response.json()

        def ours() -> None:
            generate("ollama:bench-model", messages, max_tokens=64)

        raw_times: list[float] = []
        our_times: list[float] = []
        for index in range(args.warmup + args.calls):
            for fn, sink in ((raw, raw_times), (ours, our_times)):
                started = time.perf_counter()
                fn()
                if index >= args.warmup:
                    sink.append((time.perf_counter() - started) * 1000)
        raw_client.close()

    in_process: list[float] = []
    for index in range(args.warmup + args.calls):
        started = time.perf_counter()
        generate(provider, messages, max_tokens=64)
        if index >= args.warmup:
            in_process.append((time.perf_counter() - started) * 1000)
    unsubscribe()

    raw_median, our_median = statistics.median(raw_times), statistics.median(our_times)
    overhead = our_median - raw_median
    print(f"machine: {platform.machine()} {os.cpu_count()} cpus, python {platform.python_version()}")
    print(f"calls per variant: {args.calls} (after {args.warmup} warm-up), alternating")
    print(f"raw httpx POST /api/chat    median {raw_median:.3f} ms  p90 {percentile(raw_times, 0.9):.3f} ms")
    print(f"generate() over HTTP        median {our_median:.3f} ms  p90 {percentile(our_times, 0.9):.3f} ms")
    print(
        f"generate() in-process       median {statistics.median(in_process):.3f} ms  p90 {percentile(in_process, 0.9):.3f} ms"
    )
    print(
        f"median overhead per call    {overhead:.3f} ms (ratio {our_median / raw_median:.2f}x); "
        f"p90 overhead {percentile(our_times, 0.9) - percentile(raw_times, 0.9):.3f} ms"
    )
    print(f"target <= 1 ms: {'met' if overhead <= 1.0 else 'NOT met'}")


if __name__ == "__main__":
    main()
