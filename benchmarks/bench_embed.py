"""Embedding throughput of the offline MiniLM on this machine's CPU (target >= 300 docs/s).

Texts are real generated resumes (``agentlake.workforce``), 2-4 sentences each. Measured in one run,
alternating configurations so load on a shared machine hits all alike:

* ``embed_texts`` with the default ``LocalEmbedder`` (bf16 autocast where the CPU has it);
* the same in float32, the baseline;
* single-question latency (what a search pays before ranking);
* the content-hash cache: a second pass over the same texts through a lake (model not called).

Run: ``.venv/bin/python benchmarks/bench_embed.py [--texts 2000] [--rounds 3]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=2000, help="resumes per measured pass")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per configuration")
    args = parser.parse_args()

    # agentlake.embed.local first: it sets OMP_WAIT_POLICY before torch loads its OpenMP.
    from agentlake.embed.local import LocalEmbedder  # isort: skip
    import torch

    from agentlake.embed import embed_texts
    from agentlake.lake import Lake
    from agentlake.settings import load_settings
    from agentlake.workforce.generator import generate_workforce

    texts = generate_workforce(args.texts, seed=21, clients=20).workers.column("resume_text").to_pylist()
    words = statistics.mean(len(t.split()) for t in texts)
    started = time.perf_counter()
    auto = LocalEmbedder()
    auto.embed(["load the model"])
    load_s = time.perf_counter() - started
    fp32 = LocalEmbedder(precision="fp32")
    for embedder in (auto, fp32):
        embedder.embed(texts[:64])  # warm-up: first batches allocate

    rates: dict[str, list[float]] = {"auto": [], "fp32": []}
    for _ in range(args.rounds):
        for label, embedder in (("auto", auto), ("fp32", fp32)):
            t0 = time.perf_counter()
            embed_texts(embedder, texts)
            rates[label].append(len(texts) / (time.perf_counter() - t0))

    questions = [
        f"certified {role} with {n} years of experience"
        for n in range(5)
        for role in ("welder", "nurse", "forklift operator", "electrician")
    ]
    latencies = []
    for question in questions:
        t0 = time.perf_counter()
        auto.embed([question])
        latencies.append((time.perf_counter() - t0) * 1000)

    with tempfile.TemporaryDirectory() as tmp, Lake.open(load_settings(data_dir=Path(tmp))) as lake:
        embed_texts(auto, texts, lake=lake)
        t0 = time.perf_counter()
        _, stats = embed_texts(auto, texts, lake=lake)
        cached_rate = len(texts) / (time.perf_counter() - t0)
        assert stats.embedded == 0

    best, base = statistics.median(rates["auto"]), statistics.median(rates["fp32"])
    print(
        f"texts: {len(texts)} generated resumes, {words:.0f} words on average; torch threads "
        f"{torch.get_num_threads()}, OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}"
    )
    print(f"model load: {load_s:.1f} s; precision auto = {auto.precision}")
    print("| configuration | docs/s (median of rounds) | all rounds |")
    print("|---|---|---|")
    print(f"| MiniLM float32 (baseline) | {base:.0f} | {', '.join(f'{r:.0f}' for r in rates['fp32'])} |")
    print(
        f"| MiniLM {auto.precision} (default) | {best:.0f} | {', '.join(f'{r:.0f}' for r in rates['auto'])} |"
    )
    print(f"| cache hits through the lake (no model call) | {cached_rate:.0f} | |")
    print(
        f"default vs baseline: {best / base:.2f}x; target >= 300 docs/s: {'met' if best >= 300 else 'missed'}"
    )
    print(f"single question: median {statistics.median(latencies):.1f} ms over {len(latencies)} questions")


if __name__ == "__main__":
    main()
