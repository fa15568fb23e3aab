"""Process-level tuning for agentlake's long-running HTTP servers (the gateway and the observer).

Owns one choice: how the garbage collector runs in a server process. It does not build apps
or run uvicorn (``gateway.server``, ``observe.service``).

Why: CPython's defaults (a young collection every 700 net allocations) promote the objects of
every request in flight to the older generations, so a full collection ran about once a second
under 50 concurrent clients. A full collection walks every tracked object, including the
~200k objects of the imported libraries and the observer's ring of recent ops, and it holds
the GIL: each one stalled every request for 130-200 ms (measured in a gateway at ~2,000 req/s),
which was the whole p99 of the gateway and the observer (benchmarks/bench_gateway.py).

The policy: freeze what exists at start-up (imported modules, the app) into the permanent
generation, which no collection walks, and collect the young generation every
``YOUNG_THRESHOLD`` allocations instead of 700, so request objects usually die before a
collection sees them and full collections become rare. Memory is still reclaimed at once by
reference counting; only cyclic garbage waits longer, and the request path makes none
(``observe.store`` drops its callbacks once called; tested).
"""

from __future__ import annotations

import gc

# Young generation: allocations between collections (CPython's default: 700). A young
# collection then walks up to this many objects (a few ms), a small share of the time saved.
YOUNG_THRESHOLD = 50_000
# Young collections per middle one, and middle ones per full one (defaults: 10 and 10).
MIDDLE_THRESHOLD = 20
OLD_THRESHOLD = 100


def tune_collector() -> None:
    """Freeze the start-up heap and space out collections; call once, just before serving.

    Process-wide and idempotent. Meant for server processes only: a short CLI command gains
    nothing from it.
    """
    gc.collect()  # what start-up left as garbage is freed, not frozen
    gc.freeze()
    gc.set_threshold(YOUNG_THRESHOLD, MIDDLE_THRESHOLD, OLD_THRESHOLD)
