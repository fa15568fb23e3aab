"""What a staffer knows about the workers it submitted: their facts as evidence for learning.

Owns the evidence a judged fill carries for the learning loop (the ``judged`` attribute of a
``fill.judged`` op, read by ``agentlake.learn.induction``): for each submitted worker, accepted
or not, the features a client's rule could be about (every score column, the distance from the
site, the certifications by canonical name, a prior no-show at this client, and the worker's
role when it is not the ordered one by the catalogue, so a client's own synonyms show), whether the
staffer's own verification already explains a refusal (the order's stated terms), and, once
per op, what each feature is: the search filter that acts on it (a ``MachineAction`` field
such as ``min_scores.reliability``) and the words people use for it. Those words are the
domain's data dictionary, not any client's: they let a learner read a client's vague remarks
as a hint to which features matter.

Everything here is something the staffer can read in the lake for itself; a client's hidden
acceptance is never an input. It does not own judging (``agentlake.scenarios.judge``) or
what the client says (``agentlake.scenarios.voice``).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from datetime import date
from typing import Any

from agentlake.workforce.facts import WorkerFacts
from agentlake.workforce.geo import haversine_miles
from agentlake.workforce.roles import normalize_certification, same_role
from agentlake.workforce.tables import SCORE_COLUMNS

# The search filter each feature is filtered by (a MachineAction field; ``min_scores.<name>``
# keeps workers at or above, ``max_distance_miles`` at or below, ``require_certifications``
# those holding, ``exclude_prior_no_show_at_client`` those without the flag).
DISTANCE, CERTIFICATIONS, PRIOR_NO_SHOW = "distance_miles", "certifications", "prior_no_show"
# A worker of another role than the ordered one (``accept_roles``: a widening, not a filter):
# the worker's role, and the role it was judged for.
ROLE, ORDERED_ROLE = "role", "ordered_role"

# What people call each feature. Kept short: every op carries it.
FEATURE_WORDS: dict[str, str] = {
    "reliability": "reliable rely dependable depend count turn shows show attendance record punctual",
    "responsiveness": "responsive respond reply answer answers reach reachable phone call back",
    "engagement": "engaged motivated motivation effort attitude enthusiasm interest",
    "communications": "communicate communication talk speak explain instructions understand listen",
    "compliance": "compliance comply procedures protocol rules policy letter safety",
    "availability": "available availability hours schedule flexible shifts",
    DISTANCE: "far distance commute drive away close near nearby local live",
    CERTIFICATIONS: "certified certification certificate card carded ticket license paperwork trained",
    PRIOR_NO_SHOW: "before burned let down stood last past history no-show",
    ROLE: "role job title trade position",
}

# Attribute JSON the observer keeps per op is capped (observe.model.MAX_ATTRIBUTES_CHARS); the
# evidence leaves room for the rest of the op and drops the last workers beyond this.
MAX_EVIDENCE_CHARS = 5000


def feature_schema() -> dict[str, dict[str, str]]:
    """Each feature's filter and words, as the op carries them."""
    schema = {name: {"filter": f"min_scores.{name}", "words": FEATURE_WORDS[name]} for name in SCORE_COLUMNS}
    schema[DISTANCE] = {"filter": "max_distance_miles", "words": FEATURE_WORDS[DISTANCE]}
    schema[CERTIFICATIONS] = {"filter": "require_certifications", "words": FEATURE_WORDS[CERTIFICATIONS]}
    schema[PRIOR_NO_SHOW] = {
        "filter": "exclude_prior_no_show_at_client",
        "words": FEATURE_WORDS[PRIOR_NO_SHOW],
    }
    schema[ROLE] = {"filter": "accept_roles", "words": FEATURE_WORDS[ROLE]}
    return schema


def worker_features(
    facts: WorkerFacts, site: tuple[float, float], no_shows: Collection[date]
) -> dict[str, Any]:
    """One worker's features: scores (rounded to 0.001), miles from ``site`` (0.1), canonical
    certifications (sorted), and whether they no-showed at this client before."""
    values: dict[str, Any] = {name: round(facts.score(name), 3) for name in SCORE_COLUMNS}
    values[DISTANCE] = round(haversine_miles(facts.lat, facts.lon, site[0], site[1]), 1)
    values[CERTIFICATIONS] = sorted({normalize_certification(c) for c in facts.certifications})
    values[PRIOR_NO_SHOW] = bool(no_shows)
    return values


def judged_evidence(
    *,
    scope: str,
    shape: str,
    submitted: Sequence[int],
    accepted: Collection[int],
    facts: Mapping[int, WorkerFacts],
    site: tuple[float, float],
    no_shows: Mapping[int, Collection[date]],
    explained: Collection[int] = (),
    role: str | None = None,
) -> dict[str, Any]:
    """The ``judged`` attribute of a ``fill.judged`` op.

    ``scope``: whose rules these are (the client's id). ``shape``: the order's shape in words
    (role and site; the same worker accepted and refused for one shape is contradictory).
    ``explained``: submitted workers the staffer's own verification refuses (role, requirement,
    radius, booking): a refusal of theirs says nothing about the client's unwritten rules.
    ``role``: the ordered role; a worker not of it (by the catalogue) carries its own role.
    Unknown workers are left out; the last workers are dropped if the evidence would not fit.
    """
    items = []
    for worker_id in dict.fromkeys(submitted):
        worker = facts.get(worker_id)
        if worker is None:
            continue
        item: dict[str, Any] = {"id": worker_id, "accepted": worker_id in accepted}
        if worker_id in explained:
            item["explained"] = True
        item["values"] = worker_features(worker, site, no_shows.get(worker_id, ()))
        if role and not same_role(worker.role, role):
            item["values"].update({ROLE: worker.role, ORDERED_ROLE: role})
        items.append(item)
    # The rejections name their worker by worker_id: the judge's words for each item.
    evidence = {
        "scope": scope,
        "shape": shape,
        "item_key": "worker_id",
        "features": feature_schema(),
        "items": items,
    }
    while items and len(json.dumps(evidence)) > MAX_EVIDENCE_CHARS:
        items.pop()
    return evidence
