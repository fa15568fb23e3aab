"""How many of a run's days go at once in this process, and in which order their ops are learned.

Owns the choice (``choose_concurrency``): the ``--concurrency`` asked for, or by default one
from the cores and the staffers' models, capped, with a one-line note, where the memory the
embedded models' concurrent replies would need is more than the machine has free; and
``day_order``, the order a batch's ops are learned in: the batch's days in the order they were
planned, each day's ops in the order they happened. Days that run at once interleave in time;
learning reads them as if they had run one after another, so what it learns does not depend on
how many ran at once (nor on where an interrupted run was resumed).

Days run at once in threads of this process (``backends.InlineBackend``), sharing the lake
(each read takes its own cursor) and the loaded models (``llm/local``: the replies of
concurrent days decode together over one copy of the model) and nothing else: each day has its
own observer (``observe.observing``), lesson snapshot, ledger and policy. It does not own
running days (``backends``) nor a day (``day``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NamedTuple

from agentlake.errors import UserError

if TYPE_CHECKING:
    from agentlake.observe.model import ObservedOp
    from agentlake.scenarios.profile import StafferProfile
    from agentlake.settings import Settings

# More days at once than this gains nothing on a CPU the days share (a batch's tail waits anyway).
MAX_DEFAULT = 8
GIB = 1024**3
_DAY = re.compile(r"^(?P<scenario>.+?):r(?P<repetition>\d+):")


class Concurrency(NamedTuple):
    """How many days run at once, and the one-line note when fewer than asked do."""

    days: int
    note: str | None = None


def choose_concurrency(
    asked: int | None, profiles: Sequence[StafferProfile], settings: Settings, *, backend: str
) -> Concurrency:
    """The days a run stages at once: ``asked`` (``None``: ``default_concurrency``), capped by
    memory (``memory_cap``). Only the inline backend runs days at once in this process; the
    others run ``--workers`` days at once. ``UserError`` for ``asked`` below 1, or above 1 on
    another backend."""
    if asked is not None and asked < 1:
        raise UserError("--concurrency must be at least 1")
    if backend != "inline":
        if asked is not None and asked > 1:
            raise UserError(
                f"--concurrency runs days at once in this process (backend inline); the {backend} "
                "backend runs --workers days at once"
            )
        return Concurrency(1)
    wanted = asked if asked is not None else default_concurrency(profiles, settings)
    return memory_cap(wanted, profiles, settings)


def default_concurrency(
    profiles: Sequence[StafferProfile], settings: Settings, cores: int | None = None
) -> int:
    """Two days a core (at most ``MAX_DEFAULT``) when a staffer calls models: while one day
    waits for its reply, another's tools and checks run, and the replies of an embedded model
    decode together (one read of its weights serves them all). Rules staffers: one a core."""
    cores = cores or os.cpu_count() or 1
    if any(profile.model_list(settings) for profile in profiles):
        return max(1, min(MAX_DEFAULT, 2 * cores))
    return max(1, min(MAX_DEFAULT, cores))


def memory_cap(
    wanted: int,
    profiles: Sequence[StafferProfile],
    settings: Settings,
    *,
    free: int | None = None,
) -> Concurrency:
    """``wanted`` days at once, or as many as the free memory (``free``: the machine's now)
    holds the embedded (``local:``) models' weights and, per model, one KV cache slot for each
    day decoding at once (at the full context window); with a note when capped."""
    from agentlake.llm.local.decoder import CACHE_SLOTS

    names = sorted(
        {m.removeprefix("local:") for p in profiles for m in p.model_list(settings) if m.startswith("local:")}
    )
    if wanted <= 1 or not names:
        return Concurrency(wanted)
    if free is None:
        from agentlake.llm.local.engine import available_memory

        free = available_memory()
    if free is None:
        return Concurrency(wanted)
    from agentlake.llm.local.engines import reply_memory
    from agentlake.llm.packaged import packaged_model

    costs = [reply_memory(packaged_model(name), settings) for name in names]
    weights = sum(w for w, _ in costs)
    per_day = sum(r for _, r in costs)

    def needed(days: int) -> int:
        return weights + max(days, CACHE_SLOTS) * per_day

    days = wanted
    while days > 1 and needed(days) > free:
        days -= 1
    if days == wanted:
        return Concurrency(wanted)
    models = ", ".join(f"local:{name}" for name in names)
    return Concurrency(
        days,
        f"concurrency {wanted} is more than memory allows: each day at once keeps a KV cache of up to "
        f"{per_day / GIB:.1f} GiB for {models} and {free / GIB:.1f} GiB is free; running {days} at once",
    )


def day_order(prefix: str, days: Sequence[tuple[str, int]]) -> Callable[[ObservedOp], int]:
    """A sort key for one arm's ops of one batch, whose run ids start with ``prefix``
    (``results.batch_run_prefix``, then ``<scenario>:r<repetition>:<event>``): the position in
    ``days`` ((scenario, repetition), as planned) of the day each op belongs to. Sorting stably
    by it keeps each day's ops in the order they were read (their time)."""
    position = {day: index for index, day in enumerate(days)}

    def key(op: ObservedOp) -> int:
        run_id = op.run_id or ""
        found = _DAY.match(run_id[len(prefix) :]) if run_id.startswith(prefix) else None
        if found is None:
            return len(position)
        return position.get((found["scenario"], int(found["repetition"])), len(position))

    return key
