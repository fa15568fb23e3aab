"""CPU per event of reading an ingest body: parse, validate, range-check and scrub (no HTTP, no store).

What POST /events spends on each event before it is queued for the store, for a 1000-event
JSON array of bench_observe.py's event; best of 30 runs, so the figure is the code's, as far as
a shared machine allows. Compare two checkouts with PYTHONPATH=<checkout>/src.

Usage: .venv/bin/python benchmarks/bench_observe_parse.py
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_observe import EVENT

from agentlake.observe.ingest import parse_events


def main() -> None:
    body = json.dumps([{**EVENT, "id": f"e-{i:08d}"} for i in range(1000)]).encode()
    best = float("inf")
    for _ in range(30):
        started = time.perf_counter()
        parse_events(body)
        best = min(best, time.perf_counter() - started)
    print(f"parse+validate+scrub: {best * 1e6 / 1000:.2f} us/event (load {os.getloadavg()[0]:.2f})")


if __name__ == "__main__":
    main()
