"""Lake benchmarks: workforce generation time and ingest throughput.

Run: .venv/bin/python benchmarks/bench_lake.py [--workers 500000] [--repeats 3]

Measures, in one run and on one machine:
- generating N workers (+ clients, placements) in memory, and generating + loading them
  into a fresh lake (the issue's <= 30 s target for 500k);
- ``Lake.ingest`` of the generated workers table from CSV and from Parquet (rows/s),
  beside the baseline: plain DuckDB ``CREATE TABLE AS SELECT * FROM read_parquet(...)``
  (and ``read_csv``) into a fresh file, no catalog, no checks;
- an upsert of 10% of the rows into the full dataset.
Prints a Markdown table; figures are medians of ``--repeats`` runs, baseline and ingest run
alternately, with CPU seconds beside wall seconds because the machine is shared.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import duckdb
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from agentlake.lake import Lake
from agentlake.settings import load_settings
from agentlake.workforce.generator import generate_workforce, load_workforce


def timed(fn: Callable[[], object], repeats: int) -> tuple[float, float]:
    """Median wall and CPU seconds (CPU counts every thread of this process, so it moves
    far less than wall time when other work shares the machine)."""
    walls, cpus = [], []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def paired(
    first: Callable[[], object], second: Callable[[], object], repeats: int
) -> tuple[tuple[float, float], tuple[float, float], float]:
    """Run the two alternately so load on the shared machine hits both alike; returns both
    medians and the median of the per-pair wall ratios first/second."""
    a, b, ratios = [], [], []
    for _ in range(repeats):
        a.append(timed(first, 1))
        b.append(timed(second, 1))
        ratios.append(a[-1][0] / b[-1][0])
    med = lambda xs, i: statistics.median(x[i] for x in xs)  # noqa: E731
    return (med(a, 0), med(a, 1)), (med(b, 0), med(b, 1)), statistics.median(ratios)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=500_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    n, repeats = args.workers, args.repeats
    rows: list[tuple[str, str, str]] = []

    with tempfile.TemporaryDirectory(prefix="bench_lake_") as tmp:
        root = Path(tmp)
        gen, gen_cpu = timed(lambda: generate_workforce(n, seed=7), repeats)
        workforce = generate_workforce(n, seed=7)
        rows.append(
            (
                f"generate {n:,} workers + {workforce.placements.num_rows:,} placements (memory)",
                f"{gen:.2f} s",
                f"CPU {gen_cpu:.2f} s",
            )
        )

        counter = iter(range(1000))

        def generate_and_load() -> None:
            settings = load_settings(data_dir=root / f"gen{next(counter)}")
            with Lake.open(settings) as lake:
                load_workforce(lake, generate_workforce(n, seed=7))

        total, total_cpu = timed(generate_and_load, repeats)
        rows.append(
            (
                f"generate + load into a fresh lake ({n:,} workers)",
                f"{total:.2f} s",
                f"CPU {total_cpu:.2f} s; target <= 30 s",
            )
        )

        csv_path, parquet_path = root / "workers.csv", root / "workers.parquet"
        pacsv.write_csv(workforce.workers, csv_path)
        pq.write_table(workforce.workers, parquet_path)

        def baseline(reader: str, path: Path) -> Callable[[], None]:
            def run() -> None:
                target = root / f"base{next(counter)}.duckdb"
                with duckdb.connect(str(target), config={"threads": 2}) as conn:
                    conn.execute(f"CREATE TABLE workers AS SELECT * FROM {reader}('{path}')")

            return run

        def ours(path: Path) -> Callable[[], None]:
            def run() -> None:
                settings = load_settings(data_dir=root / f"lake{next(counter)}")
                with Lake.open(settings) as lake:
                    lake.ingest(path, "workers", key="worker_id")

            return run

        for label, path, reader in (("Parquet", parquet_path, "read_parquet"), ("CSV", csv_path, "read_csv")):
            (base, base_cpu), (mine, mine_cpu), ratio = paired(baseline(reader, path), ours(path), repeats)
            rows.append(
                (
                    f"baseline: DuckDB CTAS from {reader} ({label}, {n:,} rows)",
                    f"{base:.2f} s",
                    f"{n / base:,.0f} rows/s; CPU {base_cpu:.2f} s",
                )
            )
            rows.append(
                (
                    f"Lake.ingest {label} (new dataset, key checked, catalog + history)",
                    f"{mine:.2f} s",
                    f"{n / mine:,.0f} rows/s; CPU {mine_cpu:.2f} s; {ratio:.2f}x baseline speed (median of paired runs)",
                )
            )

        update = workforce.workers.slice(0, n // 10)
        settings = load_settings(data_dir=root / "upsert")
        with Lake.open(settings) as lake:
            lake.write_table("workers", workforce.workers, mode="replace", key="worker_id")
            up, _ = timed(
                lambda: lake.write_table("workers", update, mode="upsert", key="worker_id"), repeats
            )
        rows.append(
            (
                f"upsert {update.num_rows:,} rows into {n:,} (Arrow, by worker_id)",
                f"{up:.2f} s",
                f"{update.num_rows / up:,.0f} rows/s",
            )
        )

    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores; duckdb {duckdb.__version__}; median of {repeats}"
    )
    print()
    print("| measure | time | throughput / note |")
    print("|---|---|---|")
    for measure, seconds, note in rows:
        print(f"| {measure} | {seconds} | {note} |")


if __name__ == "__main__":
    main()
