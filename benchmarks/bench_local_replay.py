"""An embedded LLM staffer's own model calls, replayed with prompt-lookup drafts off and on.

First the staffer (default: the demo's qwen-0.5b-learning) staffs the demo's reduced pack over
three batches with drafts off, and every call its ``local:`` model gets (messages and options)
is recorded to ``--calls`` (kept: a later run with the same file skips this step). Then the
recorded calls are replayed, in order, on a freshly loaded engine once per ``--drafts`` value:
the same prompts, so the same prefix-cache hits, and the decode time is the only difference.
Reported per value: wall seconds, median seconds per call, prompt-evaluation and decoding
seconds, output tokens (forced by the grammar, taken from drafts) and decoding milliseconds per
output token, and how many replies are identical to the first value's.

Run: .venv/bin/python benchmarks/bench_local_replay.py --data-dir DIR [--staffer qwen-0.5b-learning]
     [--drafts 0,8,16] [--calls calls.pkl]
DIR is a data directory with a workforce (``make demo`` makes one under ``data/``).
"""

from __future__ import annotations

import argparse
import os
import pickle
import statistics
import time
from datetime import UTC, datetime
from pathlib import Path

from agentlake.lake import Lake
from agentlake.llm import local
from agentlake.llm.local import LocalProvider, unload_engines
from agentlake.scenarios.main_job import reduced_pack
from agentlake.scenarios.runner import run_scenarios
from agentlake.settings import load_settings


def record(data_dir: Path, staffer: str, calls_file: Path) -> None:
    calls = []
    complete = LocalProvider.complete

    def recording(self, messages, options):
        calls.append((self.model, messages, options))
        return complete(self, messages, options)

    LocalProvider.complete = recording
    try:
        settings = load_settings(
            data_dir=data_dir, runs_dir=calls_file.parent / "replay-runs", local_draft_tokens=0
        )
        with Lake.open(settings) as lake:
            run_scenarios(reduced_pack(), [staffer], batches=3, settings=settings, lake=lake)
    finally:
        LocalProvider.complete = complete
    with calls_file.open("wb") as out:
        pickle.dump(calls, out)  # our own file, read back below
    print(f"# recorded {len(calls)} calls of {staffer} into {calls_file}")


def replay(calls: list, draft: int) -> tuple[dict, list[str]]:
    unload_engines()
    generations = []
    generate = local.Decoder.generate

    def keeping(self, *args, **kwargs):
        generation = generate(self, *args, **kwargs)
        generations.append(generation)
        return generation

    local.Decoder.generate = keeping
    try:
        provider = LocalProvider(calls[0][0], load_settings(local_draft_tokens=draft))
        provider.decoder()  # the load is not timed
        started = time.perf_counter()
        texts = [provider.complete(messages, options).text for _, messages, options in calls]
        wall = time.perf_counter() - started
    finally:
        local.Decoder.generate = generate
    decode_ms = sum(g.generation_ms for g in generations)
    output = sum(g.output_tokens for g in generations)
    return {
        "wall_s": wall,
        "median_call_s": statistics.median((g.prompt_ms + g.generation_ms) / 1000 for g in generations),
        "prompt_s": sum(g.prompt_ms for g in generations) / 1000,
        "decode_s": decode_ms / 1000,
        "output": output,
        "forced": sum(g.forced_tokens for g in generations),
        "drafted": sum(g.drafted_tokens for g in generations),
        "ms_per_token": decode_ms / max(1, output),
    }, texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True, help="a data directory with a workforce")
    parser.add_argument("--staffer", default="qwen-0.5b-learning")
    parser.add_argument("--drafts", default="0,8,16", help="comma-separated local_draft_tokens values")
    parser.add_argument("--calls", type=Path, default=Path("replay-calls.pkl"))
    args = parser.parse_args()
    drafts = [int(d) for d in args.drafts.split(",") if d]
    load1, load5, load15 = os.getloadavg()
    print(
        f"# bench_local_replay  {datetime.now(UTC):%Y-%m-%d %H:%M} UTC  {os.cpu_count()} cores, "
        f"load average {load1:.2f} {load5:.2f} {load15:.2f}; {args.staffer}"
    )
    if not args.calls.exists():
        record(args.data_dir, args.staffer, args.calls)
    with args.calls.open("rb") as source:
        calls = pickle.load(source)  # the file this script wrote
    print(
        "| draft tokens | wall s | median s/call | prompt s | decode s | output tokens (forced, drafted) "
        "| decode ms/output token | replies identical to the first row's |"
    )
    print("|---|---|---|---|---|---|---|---|")
    first: list[str] | None = None
    for draft in drafts:
        row, texts = replay(calls, draft)
        first = first or texts
        same = sum(a == b for a, b in zip(first, texts, strict=True))
        print(
            f"| {draft} | {row['wall_s']:.1f} | {row['median_call_s']:.2f} | {row['prompt_s']:.1f} | "
            f"{row['decode_s']:.1f} | {row['output']} ({row['forced']}, {row['drafted']}) | "
            f"{row['ms_per_token']:.1f} | {same}/{len(calls)} |",
            flush=True,
        )
    load1, load5, load15 = os.getloadavg()
    print(f"# load average at the end: {load1:.2f} {load5:.2f} {load15:.2f}")


if __name__ == "__main__":
    main()
