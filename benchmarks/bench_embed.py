"""Embedding throughput of the offline MiniLM on this machine's CPU, per backend, and their agreement.

Texts are real generated resumes (``agentlake.workforce``), 2-4 sentences each. Measured in one run,
alternating configurations so load on a shared machine hits all alike:

* torch float32 (sentence-transformers), the baseline;
* torch bf16 autocast (the default before issue 33 part 3);
* OpenVINO (``embed_backend=openvino``: the model exported once to ONNX in the model cache, run by
  OpenVINO's CPU plugin, bf16 where the CPU has it), the default since;
* the same ONNX export quantised to int8 (onnxruntime's dynamic quantisation, per channel) run by
  onnxruntime, what sentence-transformers' ``export_dynamic_quantized_onnx_model`` makes: measured
  when ``onnxruntime`` is installed (it is not a dependency of agentlake);

then, through ``embed_texts``, single-question latency (what a search pays before ranking) and the
content-hash cache (a second pass over the same texts through a lake: the model is not called).

Agreement: each configuration embeds ``--corpus`` generated resumes and the held queries of the
search benchmark's real-recall check (``bench_search.py --real-recall``: 200 held-out resumes and 40
short questions); each query's exact top 10 by cosine is compared with torch bf16's (today's
results) and with float32's (the model's own numbers): the share of queries whose top 10 is the
same set (issue 33's bar: >= 99% of the queries), the mean overlap (the share of the top 10 that
agrees), the worst query's, and the share of queries that keep at least 9 of their 10. Float32
against bf16 shows how far today's results move with the arithmetic alone.

Run: ``.venv/bin/python benchmarks/bench_embed.py [--texts 2000] [--rounds 3] [--corpus 20000] [--busy 0]``;
``--busy N`` runs N busy-loop processes beside the throughput rounds (a shared machine at load ~1+N).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

# Run as a script, this directory is on the path: the held queries are bench_search's.
from bench_search import RECALL_QUESTIONS

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

AGREEMENT_BAR = 0.99
HELD_OUT = 200


class OnnxInt8:
    """The OpenVINO backend's ONNX export, quantised to int8, on onnxruntime (benchmark only)."""

    def __init__(self, onnx_path: Path, workdir: Path, reference: Any) -> None:
        import onnxruntime as ort
        from onnxruntime.quantization import QuantType, quantize_dynamic

        self.name = "onnx-int8"
        quantised = workdir / "model-int8.onnx"
        quantize_dynamic(str(onnx_path), str(quantised), weight_type=QuantType.QInt8, per_channel=True)
        options = ort.SessionOptions()
        options.intra_op_num_threads = os.cpu_count() or 1
        # Threads that sleep while they wait, as OMP_WAIT_POLICY=PASSIVE does for torch.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(str(quantised), options, providers=["CPUExecutionProvider"])
        self.reference = reference  # an OpenVinoModel: its tokenizer and batching
        self.dimension = 384

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        def run(ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
            return self.session.run(None, {"input_ids": ids, "attention_mask": mask})[0]

        vectors = _batched(self.reference, list(texts), run)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _batched(model: Any, texts: list[str], run: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> np.ndarray:
    """``OpenVinoModel.pooled``'s batching (length-sorted, padded to the longest) over ``run``."""
    from agentlake.embed.openvino import padded_batches

    encodings = model.tokenizer.encode_batch(texts)
    out = np.empty((len(texts), model.dimension), dtype=np.float32)
    for rows, ids, mask in padded_batches(encodings, model.pad_id, 32):
        out[rows] = run(ids, mask)
    return out


def top10(embedder: Any, corpus: list[str], queries: list[str]) -> tuple[np.ndarray, float]:
    started = time.perf_counter()
    corpus_vectors = embedder.embed(corpus)
    rate = len(corpus) / (time.perf_counter() - started)
    sims = embedder.embed(queries) @ corpus_vectors.T
    return np.argsort(-sims, axis=1, kind="stable")[:, :10], rate


def agreement(found: np.ndarray, reference: np.ndarray) -> tuple[list[bool], list[float]]:
    """Per query: whether its top 10 is the reference's set, and the share of it that is."""
    same = [set(a) == set(b) for a, b in zip(found, reference, strict=True)]
    overlap = [len(set(a) & set(b)) / len(b) for a, b in zip(found, reference, strict=True)]
    return same, overlap


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=2000, help="resumes per measured pass")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per configuration")
    parser.add_argument(
        "--corpus", type=int, default=20000, help="resumes searched by the held queries (0: skip)"
    )
    parser.add_argument(
        "--busy", type=int, default=0, help="busy-loop processes beside the throughput rounds (load ~ 1 + N)"
    )
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
    loads: dict[str, float] = {}
    configs: dict[str, Any] = {}
    for label, backend, precision in (
        ("torch float32 (baseline)", "torch", "fp32"),
        ("torch bf16 (default before)", "torch", "auto"),
        ("openvino (default now)", "openvino", "auto"),
    ):
        started = time.perf_counter()
        embedder = LocalEmbedder(backend=backend, precision=precision)
        embedder.embed(["load the model"])
        loads[label] = time.perf_counter() - started
        configs[label] = embedder
    openvino = configs["openvino (default now)"]
    workdir = tempfile.TemporaryDirectory()
    try:
        from agentlake.embed.openvino import verified_export

        onnx_path = verified_export(openvino.path, openvino.cache_dir, openvino.label)
        started = time.perf_counter()
        configs["onnx int8 (onnxruntime)"] = OnnxInt8(onnx_path, Path(workdir.name), openvino.model)
        loads["onnx int8 (onnxruntime)"] = time.perf_counter() - started
    except ImportError:
        print(
            "onnxruntime is not installed: the int8 configuration is not measured (pip install onnxruntime)"
        )

    for embedder in configs.values():
        embedder.embed(texts[:64])  # warm-up: first batches allocate
    rates: dict[str, list[float]] = {label: [] for label in configs}
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
    try:
        for _ in range(args.rounds):
            for label, embedder in configs.items():
                t0 = time.perf_counter()
                embed_texts(embedder, texts)
                rates[label].append(len(texts) / (time.perf_counter() - t0))
        load = os.getloadavg()[0]
    finally:
        for process in busy:
            process.kill()
            process.wait()

    default = openvino
    latencies = []
    for question in [
        f"certified {role} with {n} years" for n in range(5) for role in ("welder", "nurse", "cook", "driver")
    ]:
        t0 = time.perf_counter()
        default.embed([question])
        latencies.append((time.perf_counter() - t0) * 1000)

    with tempfile.TemporaryDirectory() as tmp, Lake.open(load_settings(data_dir=Path(tmp))) as lake:
        embed_texts(default, texts, lake=lake)
        t0 = time.perf_counter()
        _, stats = embed_texts(default, texts, lake=lake)
        cached_rate = len(texts) / (time.perf_counter() - t0)
        assert stats.embedded == 0

    reference = "torch bf16 (default before)"
    base = statistics.median(rates[reference])
    print(
        f"texts: {len(texts)} generated resumes, {words:.0f} words on average; torch threads "
        f"{torch.get_num_threads()}, OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}; "
        f"precision: torch {configs[reference].precision}, openvino {openvino.precision}; "
        f"{args.busy} busy-loop processes beside the rounds, load average (1 min) at their end {load:.2f}"
    )
    print("| configuration | docs/s (median of rounds) | all rounds | vs torch bf16 | load (s) |")
    print("|---|---|---|---|---|")
    for label, values in rates.items():
        median = statistics.median(values)
        print(
            f"| {label} | {median:.0f} | {', '.join(f'{r:.0f}' for r in values)} | {median / base:.2f}x | {loads[label]:.1f} |"
        )
    print(f"| cache hits through the lake (no model call) | {cached_rate:.0f} | | | |")
    print(
        f"single question (openvino): median {statistics.median(latencies):.1f} ms over {len(latencies)} questions"
    )

    if args.corpus:
        workforce = generate_workforce(args.corpus + HELD_OUT, seed=9, clients=20).workers
        corpus = workforce.slice(0, args.corpus).column("resume_text").to_pylist()
        queries = workforce.slice(args.corpus).column("resume_text").to_pylist() + RECALL_QUESTIONS
        tops = {}
        for label, embedder in configs.items():
            tops[label], rate = top10(embedder, corpus, queries)
            print(f"corpus embedded by {label}: {rate:.0f} docs/s")
        baseline = "torch float32 (baseline)"
        print(f"\nagreement: exact top 10 of {len(queries)} held queries over {len(corpus)} resumes")
        print(
            "| configuration | same top 10 as torch bf16 | mean overlap@10 with torch bf16 | worst query "
            "| >= 9 of 10 kept | same top 10 as float32 | mean overlap@10 with float32 | issue 33's bar |"
        )
        print("|---|---|---|---|---|---|---|---|")
        for label, found in tops.items():
            same, overlap = agreement(found, tops[reference])
            same32, overlap32 = agreement(found, tops[baseline])
            print(
                f"| {label} | {np.mean(same):.1%} ({sum(same)}/{len(same)}) | {np.mean(overlap):.4f} | "
                f"{min(overlap):.1f} | {np.mean([o >= 0.9 for o in overlap]):.1%} | "
                f"{np.mean(same32):.1%} | {np.mean(overlap32):.4f} | "
                f"{'met' if np.mean(same) >= AGREEMENT_BAR else 'missed'} |"
            )
    workdir.cleanup()


if __name__ == "__main__":
    main()
