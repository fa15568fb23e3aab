"""Hybrid search latency at 500k rows x 384-d, beside plain DuckDB cosine, with recall@10.

Data: ``--rows`` rows with a ``role`` (40 values) and a ``state`` (25 values), and one 384-d
unit vector each drawn from 300 anisotropic Gaussian clusters around a shared mean direction.
The generator's constants were fitted to MiniLM embeddings of the generated resumes (mean
pairwise cosine, nearest-neighbour cosines, variance in the top principal components, norm of
the mean); ``--calibrate`` prints both side by side. Queries are fresh draws from the same
distribution, a different one per measured search.

The index is built through the real path (``build_index``: embedding cache, ``_vectors_bench``,
files, HNSW graph) with an embedder that serves the pre-drawn vectors. Then, for each case, the
exact answers are computed first, and each method runs its searches as one block (back to
back, as a search service would; a DuckDB scan of the whole table between two searches would
evict their caches and slow them ~2x), after 5 unmeasured warm-up searches with other queries:

* ``search_vector`` (``agentlake.lake.search``): the lake's state check, the guard on the filter
  (its cache cleared before every search, so each filter is parsed as if new), the DuckDB
  filter, the ranking and the texts;
* plain DuckDB: ``SELECT id FROM bench_flat WHERE <filter> ORDER BY
  array_cosine_similarity(vec, ?::FLOAT[384]) DESC LIMIT 10`` on a table holding the
  attributes and the vectors together (no join);
* the DuckDB filter alone (``SELECT id FROM bench WHERE <filter>``), the floor under any
  method that filters in DuckDB.

Wall-clock medians are reported with the search's median process CPU time beside them: on a
machine shared with other work, a 1 ms search is often preempted, and CPU time shows what the
search itself costs (DuckDB's own threads count in it too).

Recall@10 is measured against an exact NumPy ranking of the same filtered rows.

Run: ``.venv/bin/python benchmarks/bench_search.py [--rows 500000] [--queries 25] [--calibrate]
[--real-recall 20000]``; the last embeds N generated resumes with the real MiniLM (minutes) and
measures the unfiltered path's recall@10 on them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

DIM = 384
ROLES = [f"role_{i:02d}" for i in range(40)]
STATES = [f"S{i:02d}" for i in range(25)]
WARMUP = 5  # unmeasured searches with other queries before each block


def clustered_vectors(n: int, queries: int, *, seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    """``n`` data and ``queries`` query unit vectors from the same clustered distribution."""
    rng = np.random.default_rng(seed)
    basis, _ = np.linalg.qr(rng.standard_normal((DIM, DIM)))
    # A decaying spectrum: real sentence embeddings put most variance in a few dozen directions.
    spectrum = np.arange(1, DIM + 1) ** -0.55
    spectrum /= np.sqrt((spectrum**2).sum())
    mean = rng.standard_normal(DIM)
    mean /= np.linalg.norm(mean)
    centers = (rng.standard_normal((300, DIM)) * spectrum) @ basis.T

    def draw(count: int, gen: np.random.Generator) -> np.ndarray:
        out = np.empty((count, DIM), dtype=np.float32)
        for start in range(0, count, 50_000):
            m = min(50_000, count - start)
            labels = gen.integers(0, len(centers), m)
            noise = (gen.standard_normal((m, DIM)) * spectrum) @ basis.T
            block = 0.9 * mean + centers[labels] + 0.7 * noise
            out[start : start + m] = block / np.linalg.norm(block, axis=1, keepdims=True)
        return out

    return draw(n, rng), draw(queries, np.random.default_rng(seed + 1))


def neighbourhood(vectors: np.ndarray) -> str:
    """The statistics the generator was fitted on, for a sample of 2,000 vectors."""
    x = vectors[:2000].astype(np.float64)
    sims = x @ x.T
    np.fill_diagonal(sims, -1)
    top = np.sort(sims, axis=1)[:, -10:]
    n = len(x)
    pair = (sims.sum() + n) / (n * n - n)
    centred = x - x.mean(0)
    var = np.linalg.svd(centred, compute_uv=False) ** 2
    var /= var.sum()
    return (
        f"mean pairwise cos {pair:.3f}, nearest {top[:, -1].mean():.3f}, 10th nearest {top[:, 0].mean():.3f}, "
        f"variance in top 10/50 components {var[:10].sum():.2f}/{var[:50].sum():.2f}, |mean| {np.linalg.norm(x.mean(0)):.3f}"
    )


class Precomputed:
    """Serves the pre-drawn vector of row ``id`` for the text ``row <id>`` (benchmark only)."""

    name = "synthetic:clustered-384"
    dimension = DIM

    def __init__(self, vectors: np.ndarray) -> None:
        self.vectors = vectors

    def embed(self, texts: list[str]) -> np.ndarray:
        return self.vectors[[int(text.split()[1]) - 1 for text in texts]]


def real_recall(workers: int, data_dir: Path) -> None:
    """Recall@10 of the unfiltered (HNSW) path on real MiniLM embeddings of generated resumes.

    Builds ``workers`` workers and their index (forced HNSW) through the real embedder, then
    searches with 200 held-out resumes and 40 short questions, against an exact ranking.
    """
    from agentlake.embed import get_embedder
    from agentlake.lake import Lake
    from agentlake.lake.index import build_index, fresh_index
    from agentlake.lake.search import search_vector
    from agentlake.settings import load_settings
    from agentlake.workforce.generator import generate_workforce

    workforce = generate_workforce(workers + 200, seed=9, clients=20).workers
    held_out = workforce.slice(workers).column("resume_text").to_pylist()
    embedder = get_embedder()
    questions = [
        f"{a} {b}"
        for a in ("certified", "experienced", "reliable", "new")
        for b in (
            "welder",
            "nurse",
            "forklift",
            "cook",
            "electrician",
            "driver",
            "warehouse",
            "hospital",
            "CNA",
            "machinist",
        )
    ]
    with Lake.open(load_settings(data_dir=data_dir / "real")) as lake:
        if "workers" not in {d.name for d in lake.datasets()}:
            lake.write_table("workers", workforce.slice(0, workers), key="worker_id")
        t0 = time.perf_counter()
        built = build_index(lake, "workers", "resume_text", embedder=embedder, ann=True, progress=True)
        print(
            f"\nreal resumes: indexed {workers} ({built.embedded} embedded) in {time.perf_counter() - t0:.0f} s"
        )
        index = fresh_index(lake, "workers")
        times, recall = [], []
        for vec in embedder.embed(held_out + questions):
            exact = index.keys[np.argsort(-(index.vectors @ vec), kind="stable")[:10]]
            t = time.perf_counter()
            found = search_vector(lake, "workers", vec, k=10)
            times.append(time.perf_counter() - t)
            recall.append(len({s.key for s in found} & set(exact.tolist())) / 10)
    print(
        f"real resumes, unfiltered: recall@10 {statistics.mean(recall):.4f} (worst query {min(recall):.1f}), "
        f"median {median_ms(times):.2f} ms over {len(recall)} queries"
    )


def median_ms(values: list[float]) -> float:
    return statistics.median(values) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=500_000)
    parser.add_argument("--queries", type=int, default=25, help="different queries per case (>= 20)")
    parser.add_argument(
        "--data-dir", type=Path, default=None, help="keep the lake here (default: a temp dir)"
    )
    parser.add_argument(
        "--calibrate", action="store_true", help="compare the vectors with MiniLM resume embeddings"
    )
    parser.add_argument(
        "--real-recall",
        type=int,
        default=0,
        metavar="N",
        help="also measure HNSW recall on N real resume embeddings",
    )
    args = parser.parse_args()

    import pyarrow as pa

    from agentlake.lake import Lake
    from agentlake.lake import search as search_module
    from agentlake.lake.index import ensure_index
    from agentlake.lake.search import search_vector
    from agentlake.settings import load_settings

    temp = None
    data_dir = args.data_dir
    if data_dir is None:
        temp = tempfile.TemporaryDirectory(prefix="bench-search-")
        data_dir = Path(temp.name)
    settings = load_settings(data_dir=data_dir)

    t0 = time.perf_counter()
    vectors, drawn = clustered_vectors(args.rows, args.queries + WARMUP)
    queries, warmups = drawn[: args.queries], drawn[args.queries :]
    rng = np.random.default_rng(11)
    ids = np.arange(1, args.rows + 1, dtype=np.int64)
    role = rng.integers(0, len(ROLES), args.rows)
    state = rng.integers(0, len(STATES), args.rows)
    table = pa.table(
        {
            "id": ids,
            "role": pa.array(np.array(ROLES)[role]),
            "state": pa.array(np.array(STATES)[state]),
            "text": pa.array([f"row {i}" for i in ids]),
        }
    )
    print(f"generated {args.rows} rows and {args.queries} queries in {time.perf_counter() - t0:.1f} s")
    print(f"synthetic vectors: {neighbourhood(vectors)}")
    if args.calibrate:
        from agentlake.embed import get_embedder
        from agentlake.workforce.generator import generate_workforce

        resumes = generate_workforce(2000, seed=3, clients=20).workers.column("resume_text").to_pylist()
        print(f"MiniLM resumes:    {neighbourhood(get_embedder().embed(resumes))}")

    with Lake.open(settings) as lake:
        if "bench" not in {d.name for d in lake.datasets()}:
            lake.write_table("bench", table, mode="replace", key="id")
        t0 = time.perf_counter()
        # A kept --data-dir reuses its fresh index; the build is timed when it runs.
        built = ensure_index(lake, "bench", "text", embedder=Precomputed(vectors), progress=True)
        if built is None:
            print("index build: reused the fresh index in --data-dir")
        else:
            print(
                f"index build: {time.perf_counter() - t0:.1f} s ({built.embedded} rows through the embedding cache, "
                f"HNSW graph: {built.ann})"
            )

        def flat(conn) -> None:
            conn.execute(
                "CREATE OR REPLACE TABLE bench_flat AS SELECT b.id, b.role, b.state, v.vec "
                "FROM bench b JOIN _vectors_bench v ON v.key = b.id ORDER BY b.id"
            )

        lake.write(flat)

        cases = {
            "selective (~0.1%)": [
                f"role = '{ROLES[(3 * q) % 40]}' AND state = '{STATES[(7 * q + 1) % 25]}'"
                for q in range(args.queries)
            ],
            "broad (~10%)": [
                "role IN (" + ", ".join(f"'{ROLES[(q + j * 10) % 40]}'" for j in range(4)) + ")"
                for q in range(args.queries)
            ],
            "none": [None] * args.queries,
        }
        cur = lake.cursor()
        search_vector(lake, "bench", warmups[0], k=10)  # load the index files once
        results = {}
        for case, filters in cases.items():
            ours, warm, duck, floor, recall_ours, recall_duck, matched = [], [], [], [], [], [], []
            ours_cpu: list[float] = []
            exacts = []
            for q, where in enumerate(filters):  # exact answers first, outside any timing
                clause = f"WHERE ({where})" if where else ""
                keys = cur.execute(f"SELECT id FROM bench {clause}").fetchnumpy()["id"]
                matched.append(len(keys))
                exacts.append(
                    set(keys[np.argsort(-(vectors[keys - 1] @ queries[q]), kind="stable")[:10]].tolist())
                )
            # Each method in its own block: a search service runs searches back to back, and
            # a DuckDB scan of the 768 MB table between two searches evicts their caches.
            for q in range(WARMUP):
                search_vector(lake, "bench", warmups[q], where=filters[q], k=10)
            for q, where in enumerate(filters):
                search_module.FILTERS.clear()
                t, c = time.perf_counter(), time.process_time()
                found = search_vector(lake, "bench", queries[q], where=where, k=10)
                ours.append(time.perf_counter() - t)
                ours_cpu.append(time.process_time() - c)
                recall_ours.append(len({s.key for s in found} & exacts[q]) / max(1, len(exacts[q])))
            for q, where in enumerate(filters):
                t = time.perf_counter()
                search_vector(lake, "bench", queries[q], where=where, k=10)
                warm.append(time.perf_counter() - t)
            for q, where in enumerate(filters):
                clause = f"WHERE ({where})" if where else ""
                if q == 0:  # the same warm-up for DuckDB
                    for w in range(WARMUP):
                        cur.execute(
                            f"SELECT id FROM bench_flat {clause} ORDER BY array_cosine_similarity(vec, ?::FLOAT[{DIM}]) "
                            "DESC LIMIT 10",
                            [warmups[w].tolist()],
                        ).fetchall()
                t = time.perf_counter()
                rows = cur.execute(
                    f"SELECT id FROM bench_flat {clause} ORDER BY array_cosine_similarity(vec, ?::FLOAT[{DIM}]) DESC LIMIT 10",
                    [queries[q].tolist()],
                ).fetchall()
                duck.append(time.perf_counter() - t)
                recall_duck.append(len({r[0] for r in rows} & exacts[q]) / max(1, len(exacts[q])))
            for where in filters:
                if where:
                    t = time.perf_counter()
                    cur.execute(f"SELECT id FROM bench WHERE ({where})").fetchnumpy()
                    floor.append(time.perf_counter() - t)
            results[case] = {
                "rows": statistics.median(matched),
                "ours": median_ms(ours),
                "ours_cpu": median_ms(ours_cpu),
                "ours_p90": float(np.percentile(ours, 90) * 1000),
                "warm": median_ms(warm),
                "duck": median_ms(duck),
                "floor": median_ms(floor) if floor else None,
                "recall": statistics.mean(recall_ours),
                "recall_duck": statistics.mean(recall_duck),
            }
        cur.close()

        # The unfiltered case again at other HNSW search widths (ef), same queries.
        from agentlake.lake.index import ANN_EXPANSION_SEARCH, fresh_index

        index = fresh_index(lake, "bench")
        sweep = []
        for ef in (64, 128, 256, 512):
            if index.ann is None:
                break
            index.ann.expansion_search = ef
            times, recall = [], []
            for q in range(args.queries):
                t = time.perf_counter()
                found = search_vector(lake, "bench", queries[q], k=10)
                times.append(time.perf_counter() - t)
                recall.append(len({s.key for s in found} & exacts[q]) / 10)  # exacts: the "none" case's
            sweep.append((ef, median_ms(times), statistics.mean(recall)))
        if index.ann is not None:
            index.ann.expansion_search = ANN_EXPANSION_SEARCH

    print()
    print(
        f"| case (median of {args.queries} queries) | rows kept | plain DuckDB cosine | hybrid_search | its p90 | its CPU time | same filter repeated | DuckDB filter alone | speed-up | recall@10 |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    targets = {"selective (~0.1%)": 1.0, "broad (~10%)": 15.0, "none": 1.0}
    for case, r in results.items():
        floor = f"{r['floor']:.2f} ms" if r["floor"] is not None else "-"
        print(
            f"| {case} | {r['rows']:.0f} | {r['duck']:.2f} ms | **{r['ours']:.2f} ms** | {r['ours_p90']:.2f} ms "
            f"| {r['ours_cpu']:.2f} ms | {r['warm']:.2f} ms | {floor} "
            f"| {r['duck'] / r['ours']:.1f}x | {r['recall']:.3f} (DuckDB {r['recall_duck']:.3f}) |"
        )
    print()
    for case, r in results.items():
        verdict = "met" if r["ours"] <= targets[case] and r["recall"] >= 0.99 else "MISSED"
        print(
            f"target {case}: <= {targets[case]:g} ms with recall@10 >= 0.99: {verdict} ({r['ours']:.2f} ms, {r['recall']:.3f})"
        )
    if sweep:
        print()
        print(f"unfiltered, by HNSW search width (default ef {ANN_EXPANSION_SEARCH}):")
        for ef, ms, recall in sweep:
            print(f"  ef {ef}: {ms:.2f} ms, recall@10 {recall:.3f}")
    if args.real_recall:
        real_recall(args.real_recall, data_dir)
    if temp is not None:
        temp.cleanup()


if __name__ == "__main__":
    main()
