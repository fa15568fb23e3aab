"""Facts behind resumes: what a worker has done that only the resume's words say.

The word-heavy scenarios (``benchmarks/word_pack``) have clients whose rules depend on a
worker's background: equipment run, shifts worked, languages spoken, kinds of site. No column
holds it. This module owns those facts and their words:

- ``FACTS``: each fact's key, the sentences a resume says it in (several wordings), what a
  client writes when it wants it (``wish``), what a client says when it refuses someone without
  it (``vague``), and a sentence that mentions it without holding it (``distractor``: "would
  like to learn ...", so a search for the words alone is not enough);
- ``facts_of``: the facts a worker holds, generated from the worker's id (stable, no lake read);
- ``with_facts``: a resume with the worker's facts written into it; ``write_facts``: the lake's
  resumes around some sites rewritten that way (one upsert, with the ingest's history);
- ``load_resume_facts``: the truth the judge uses, the generated facts of the workers whose
  resume carries them (a worker whose resume was never rewritten holds none).

It is the scenarios' ground truth: agents never import it (they read the resumes).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agentlake.errors import UserError
from agentlake.workforce.geo import haversine_miles
from agentlake.workforce.tables import SEARCH_COLUMN, WORKERS

if TYPE_CHECKING:
    from agentlake.lake import Lake

# Share of the others whose resume mentions a fact without holding it.
DISTRACTED = 0.10
SEED = "issue-35"


@dataclass(frozen=True)
class Fact:
    key: str
    said: tuple[str, ...]
    wish: str
    vague: str
    distractor: str
    held: float = 0.2  # the share of workers holding it


FACTS: dict[str, Fact] = {
    f.key: f
    for f in (
        # None of these words is in the generator's resumes, skills or certifications: what a
        # resume says of them is what was written here.
        Fact(
            "equipment:turret-truck",
            (
                "Ran a turret truck in a very-narrow-aisle warehouse for two seasons.",
                "Turret truck operator on high-bay racking, wire-guided aisles.",
            ),
            "has turret truck experience",
            "we need people who can run the trucks in our narrow aisles",
            "Would like to learn the turret truck.",
            held=0.5,
        ),
        Fact(
            "equipment:telehandler",
            (
                "Ran a telehandler on plant retrofits.",
                "Two years on a telehandler setting material on mezzanines.",
            ),
            "has telehandler experience",
            "our people set loads up high, they have to know the machine",
            "Willing to train on a telehandler.",
            held=0.5,
        ),
        Fact(
            "shifts:12-hour",
            (
                "Worked 12-hour rotating shifts at a refinery for a year.",
                "Used to 12-hour rotating shifts, days and nights.",
            ),
            "has done 12-hour rotating shifts",
            "our shifts are long and they rotate, not everyone lasts",
            "Would prefer to avoid 12-hour rotating shifts.",
        ),
        Fact(
            "language:vietnamese",
            ("Speaks Vietnamese and English.", "Speaks Vietnamese; translates for new hires."),
            "speaks Vietnamese",
            "half our floor talks Vietnamese, the leads need someone who can talk to them",
            "Hopes to learn some Vietnamese.",
        ),
        Fact(
            "language:polish",
            ("Speaks Polish and English.", "Speaks Polish at home and on the floor."),
            "speaks Polish",
            "our crew leads are Polish speakers, we need people who understand them",
            "Hopes to learn some Polish.",
        ),
        Fact(
            "experience:cleanroom",
            (
                "Worked in an ISO 7 cleanroom, gowned daily.",
                "Two years of cleanroom assembly under gown-up procedures.",
            ),
            "has cleanroom experience",
            "our line is a clean line, we've had people who didn't know how to behave in one",
            "Interested in cleanroom work.",
            held=0.5,
        ),
        Fact(
            "experience:freezer",
            (
                "Picked orders in a freezer at minus ten for two winters.",
                "Worked the freezer aisles of a grocery warehouse.",
            ),
            "has worked in a freezer",
            "it's cold in there all day, we want people who have done it",
            "Would rather not work in a freezer.",
        ),
        Fact(
            "experience:bridge",
            (
                "Worked on two bridge jobs, decks and girders.",
                "Bridge crew member for three seasons.",
            ),
            "has bridge experience",
            "we need people who have done this kind of work over water before",
            "Wants to move into bridge work.",
        ),
    )
}


def fact_for_wish(words: str) -> Fact | None:
    """The fact a client's ``wish`` words stand for (as ``FACTS`` writes them), if any."""
    wanted = " ".join(words.split()).casefold()
    return next((f for f in FACTS.values() if f.wish.casefold() == wanted), None)


def _draw(worker_id: int, what: str) -> float:
    digest = hashlib.blake2b(f"{SEED}|{worker_id}|{what}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def facts_of(worker_id: int) -> frozenset[str]:
    """The facts worker ``worker_id`` holds: each with its chance (``Fact.held``), the same on every call."""
    return frozenset(key for key, fact in FACTS.items() if _draw(worker_id, key) < fact.held)


def facts_text(worker_id: int) -> str:
    """The sentences that state the worker's facts (and mention others it lacks), in one order."""
    held = facts_of(worker_id)
    parts = []
    for key, fact in FACTS.items():
        if key in held:
            parts.append(fact.said[int(_draw(worker_id, key + "|said") * len(fact.said))])
        elif _draw(worker_id, key + "|distractor") < DISTRACTED:
            parts.append(fact.distractor)
    return " ".join(parts)


def with_facts(resume: str, worker_id: int) -> str:
    """``resume`` with the worker's facts written after it (unchanged when already written)."""
    added = facts_text(worker_id)
    if not added or resume.endswith(added):
        return resume
    return f"{resume} {added}".strip()


def write_facts(lake: Lake, sites: Iterable[tuple[float, float]], *, radius_miles: float = 60.0) -> int:
    """Rewrite the resumes of every worker within ``radius_miles`` of a site with their facts
    (one upsert into ``workers``, kept in the ingest history); the number of resumes changed.
    Idempotent: a resume that carries its facts already is left as it is. ``UserError`` when the
    lake has no workers dataset. The lake's search index goes stale for those rows: rebuild it
    (``agentlake index build``) before a staffer searches resumes."""
    from agentlake.workforce.facts import workers_near

    ids: set[int] = set()
    places = list(sites)
    for lat, lon in places:
        ids.update(workers_near(lake, lat, lon, radius_miles))
    if not ids:
        return 0
    table = lake.read_arrow(
        f"SELECT * FROM {WORKERS} WHERE worker_id IN (SELECT unnest(?::BIGINT[])) ORDER BY worker_id",
        [sorted(ids)],
    )
    rows = table.to_pylist()
    keep, texts = [], []
    for index, row in enumerate(rows):
        near = any(haversine_miles(row["lat"], row["lon"], lat, lon) <= radius_miles for lat, lon in places)
        text = str(row[SEARCH_COLUMN] or "")
        rewritten = with_facts(text, int(row["worker_id"])) if near else text
        if rewritten != text:
            keep.append(index)
            texts.append(rewritten)
    if not keep:
        return 0
    import pyarrow as pa

    changed = table.take(pa.array(keep))
    column = changed.schema.get_field_index(SEARCH_COLUMN)
    changed = changed.set_column(column, SEARCH_COLUMN, pa.array(texts, pa.string()))
    lake.write_table(WORKERS, changed, mode="upsert", key="worker_id", source="resume facts (issue 35)")
    return len(keep)


def load_resume_facts(lake: Lake, worker_ids: Sequence[int]) -> dict[int, frozenset[str]]:
    """The facts each worker holds by its resume: the generated ones when the resume carries
    them (``write_facts``), none otherwise. Unknown ids are absent."""
    ids = sorted({int(w) for w in worker_ids})
    if not ids:
        return {}
    try:
        table = lake.read_arrow(
            f"SELECT worker_id, {SEARCH_COLUMN} FROM {WORKERS} WHERE worker_id IN (SELECT unnest(?::BIGINT[]))",
            [ids],
        )
    except Exception as exc:  # a lake without workers has no facts to judge by
        raise UserError(f"cannot read the workers' resumes: {exc}") from None
    out = {}
    for row in table.to_pylist():
        worker_id, text = int(row["worker_id"]), str(row[SEARCH_COLUMN] or "")
        added = facts_text(worker_id)
        out[worker_id] = facts_of(worker_id) if added and text.endswith(added) else frozenset()
    return out
