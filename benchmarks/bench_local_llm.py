"""Per-turn latency of the in-process ``local:`` models, each engine side by side.

A turn is what an agent's loop sends: a ~1.5k-token prompt (instructions, tool list, the order)
whose first ~1.4k tokens are the previous turn's too, plus a new tool result; the reply is a
JSON action constrained by its schema (~60 tokens). The first turn fills the prefix cache and
is not counted. Reported per model and engine: median and 90th-percentile seconds per turn,
prompt tokens evaluated per second (the uncached tail) and generated tokens per second, the
cached share of the prompt, and load times: cold (transformers: dequantising the GGUF into the
weights cache; llama.cpp: first mapping of the file) and warm (later loads). The transformers
engine is measured in both weight modes (int8, bfloat16); the ratio column is each engine's
median against transformers-int8's, measured in the same run.

Run: .venv/bin/python benchmarks/bench_local_llm.py [--models 0.5b,1.5b] [--turns 10] [--cold]
[--drafts 0,8] (prompt-lookup decoding off and on, side by side)
Targets (issue 14): 0.5B <= 2 s median per turn, 1.5B <= 5 s.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import shutil
import statistics
import time
from datetime import UTC, datetime

from agentlake.llm import Message, generate, reset_llm_state
from agentlake.llm.local import LocalProvider, unload_engines
from agentlake.settings import load_settings

MODELS = {"0.5b": "qwen2.5-coder-0.5b", "1.5b": "qwen2.5-coder-1.5b"}
TOOLS = [
    ("find_workers", "role, city, state, radius_miles, certifications, min_rating, limit",
     "search the workforce for active workers of a role near a place; returns ids, distance, rating"),
    ("get_worker", "worker_id", "one worker's full record: certifications, availability, reliability, shifts"),
    ("check_availability", "worker_ids, shift_start, shift_end", "which of these workers are free for the shift"),
    ("client_history", "client_id", "past placements for the client, with the client's feedback on each"),
    ("propose", "worker_ids, spares, reason", "propose the workers for the order; verification checks them"),
]  # fmt: skip
RULES = [
    "Search before you propose; never invent a worker id.",
    "Propose exactly the number of workers the order asks for, and keep spares when the search found more.",
    "A certification the order needs must be on the worker's record, spelled as the catalogue spells it.",
    "Workers must be available for the whole shift and within the radius the client accepts.",
    "Prefer workers with a higher reliability score and a good history with the client.",
    "When a search finds nothing, widen the radius or drop the least important filter, and say which.",
    "Never repeat a call you already made with the same arguments; read its result instead.",
    "Keep reasons short: one sentence a staffing coordinator can check.",
]
ACTION_SCHEMA = {
    "type": "object",
    "properties": {
        "thought": {"type": "string", "maxLength": 160},
        "tool": {"type": "string", "enum": [name for name, _, _ in TOOLS]},
        "args": {
            "type": "object",
            "properties": {
                "role": {"type": "string"},
                "city": {"type": "string"},
                "state": {"type": "string"},
                "radius_miles": {"type": "integer"},
            },
            "required": ["role", "city", "state", "radius_miles"],
            "additionalProperties": False,
        },
    },
    "required": ["thought", "tool", "args"],
    "additionalProperties": False,
}


def system_prompt() -> str:
    lines = [
        "You are the executor of a staffing agency. You fill orders for shifts with qualified workers.",
        "Each turn you answer with one JSON action: the tool to call and its arguments.",
        "",
        "Tools:",
    ]
    for name, args, what in TOOLS:
        lines.append(f"- {name}({args}): {what}.")
    lines += ["", "Rules:"] + [f"{i}. {rule}" for i, rule in enumerate(RULES, start=1)]
    lines += ["", "Examples of past orders and what worked:"]
    cities = [
        "Cleveland, OH",
        "Akron, OH",
        "Toledo, OH",
        "Pittsburgh, PA",
        "Erie, PA",
        "Detroit, MI",
        "Gary, IN",
    ]
    roles = ["Welder", "Electrician", "Forklift Operator", "Pipefitter", "Machinist", "Painter", "Millwright"]
    for i in range(28):
        city, role = cities[i % len(cities)], roles[(i * 3) % len(roles)]
        lines.append(
            f"- {2 + i % 4} x {role} in {city}: find_workers(role={role!r}, radius_miles={10 + 5 * (i % 5)}) "
            f"found {6 + i % 9}; proposed the {2 + i % 4} most reliable with forklift, OSHA-10 or AWS cards checked."
        )
    return "\n".join(lines)


ORDER = "Order: fill 3 x Welder in Cleveland, OH for Riverfront Steel at 08:00 tomorrow, 8-hour shift, AWS D1.1 required."


def tool_result(turn: int) -> str:
    rows = ", ".join(
        f'{{"worker_id": {1000 + 37 * turn + i}, "distance_miles": {3 + (i * 7 + turn) % 20}, "rating": 4.{(turn + i) % 10}}}'
        for i in range(5)
    )
    return f'Result of your last call (turn {turn}): {{"rows": [{rows}], "total": {5 + turn}}}. What next?'


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def measure(
    model: str, engine: str, dtype: str, turns: int, cold: bool, max_tokens: int, draft: int | None = None
) -> dict:
    settings = load_settings(local_engine=engine, local_torch_dtype=dtype)
    if draft is not None:
        settings = settings.model_copy(update={"local_draft_tokens": draft})
    reset_llm_state()
    unload_engines()
    provider = LocalProvider(model, settings)
    cold_s = None
    if cold and engine == "transformers":
        from agentlake.llm.local.engines.torch import weights_dir

        shutil.rmtree(weights_dir(provider.packaged, settings), ignore_errors=True)
    started = time.perf_counter()
    provider.decoder()
    first_load = time.perf_counter() - started
    if cold:
        cold_s = first_load
        unload_engines()
        started = time.perf_counter()
        provider.decoder()
        warm_s = time.perf_counter() - started
    else:
        warm_s = first_load
    system = Message(role="system", content=system_prompt())
    rows = []
    for turn in range(turns + 1):
        messages = [system, Message(role="user", content=f"{ORDER}\n{tool_result(turn)}")]
        t0 = time.perf_counter()
        completion = generate(provider, messages, schema=ACTION_SCHEMA, max_tokens=max_tokens, temperature=0)
        seconds = time.perf_counter() - t0
        if turn == 0:
            continue  # fills the prefix cache
        usage = completion.usage
        rows.append(
            (
                seconds,
                usage.input_tokens,
                usage.cached_input_tokens,
                usage.output_tokens,
                completion.prompt_ms or 0.0,
                completion.generation_ms or 0.0,
            )
        )
    times = [r[0] for r in rows]
    evaluated = sum(r[1] - r[2] for r in rows)
    return {
        "model": model,
        "engine": engine
        if engine == "llamacpp"
        else f"transformers-{dtype}" + ("" if draft is None else f" (draft {draft})"),
        "median_s": statistics.median(times),
        "p90_s": percentile(times, 0.9),
        "prompt_tokens": statistics.median(r[1] for r in rows),
        "cached_share": sum(r[2] for r in rows) / max(1, sum(r[1] for r in rows)),
        "prompt_tok_s": evaluated / max(1e-9, sum(r[4] for r in rows) / 1000),
        "output_tokens": statistics.median(r[3] for r in rows),
        "gen_tok_s": sum(r[3] for r in rows) / max(1e-9, sum(r[5] for r in rows) / 1000),
        "cold_load_s": cold_s,
        "warm_load_s": warm_s,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="0.5b,1.5b", help="comma-separated: 0.5b, 1.5b")
    parser.add_argument(
        "--engines",
        default="",
        help="comma-separated: transformers-int8, transformers-bfloat16, llamacpp (default: all installed)",
    )
    parser.add_argument("--turns", type=int, default=10, help="measured turns per model and engine")
    parser.add_argument(
        "--drafts",
        default="",
        help="comma-separated local_draft_tokens to measure the transformers engines with, e.g. 0,8 "
        "(default: the setting's value)",
    )
    parser.add_argument("--max-tokens", type=int, default=160)
    parser.add_argument(
        "--cold", action="store_true", help="also time a cold load (rebuilds the transformers weights cache)"
    )
    args = parser.parse_args()

    engines = [e for e in args.engines.split(",") if e] or ["transformers-int8", "transformers-bfloat16"] + (
        ["llamacpp"] if importlib.util.find_spec("llama_cpp") else []
    )
    load1, load5, load15 = os.getloadavg()
    print(
        f"# bench_local_llm  {datetime.now(UTC):%Y-%m-%d %H:%M} UTC  {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores, load average {load1:.2f} {load5:.2f} {load15:.2f}; threads={load_settings().local_threads or os.cpu_count()}"
    )
    print(
        "| model | engine | median s/turn | p90 s/turn | prompt tokens (cached) | prompt tok/s | reply tokens | gen tok/s | cold load s | warm load s | median vs transformers-int8 |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    drafts = [int(d) for d in args.drafts.split(",") if d] or [None]
    runs = [
        (spec, draft) for spec in engines for draft in (drafts if spec.startswith("transformers") else [None])
    ]
    for size in args.models.split(","):
        baseline = None
        for spec, draft in runs:
            engine, _, dtype = spec.partition("-")
            result = measure(
                MODELS[size], engine, dtype or "int8", args.turns, args.cold, args.max_tokens, draft
            )
            if spec == "transformers-int8" and baseline is None:
                baseline = result["median_s"]
            ratio = f"{result['median_s'] / baseline:.2f}" if baseline else "-"
            cold = "-" if result["cold_load_s"] is None else f"{result['cold_load_s']:.1f}"
            print(
                f"| {size} | {result['engine']} | {result['median_s']:.2f} | {result['p90_s']:.2f} | "
                f"{result['prompt_tokens']:.0f} ({result['cached_share']:.0%}) | {result['prompt_tok_s']:.0f} | "
                f"{result['output_tokens']:.0f} | {result['gen_tok_s']:.1f} | {cold} | {result['warm_load_s']:.1f} | {ratio} |",
                flush=True,
            )
        unload_engines()
    load1, load5, load15 = os.getloadavg()
    print(f"# load average at the end: {load1:.2f} {load5:.2f} {load15:.2f}")


if __name__ == "__main__":
    main()
