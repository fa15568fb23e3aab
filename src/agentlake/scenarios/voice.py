"""What a client says when it refuses someone, by feedback mode.

Owns the three modes of docs/scenarios.md ("Feedback modes") and the client's phrasebook:

- ``explicit``: every refusal names its rule and value ("reliability 0.55 below 0.70"), as the
  judge wrote it;
- ``vague``: the client's own words only. Each rule has several phrasings, none with a rule id
  or a number, and a few that could belong to two rules ("too far out to rely on them getting
  here"); which one is said is a stable pick per client, event, worker and batch;
- ``silent``: who was accepted and who was not; nothing else.

The judge's verdicts (``ClientRejection``: rule and value) stay with the results, for
evaluation; what this module returns is all that goes into the ``fill.judged`` op learners
read. It does not own judging (``judge``) nor the op (``day``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from agentlake.scenarios.judge import ClientRejection
from agentlake.workforce.resume_facts import fact_for_wish

# Several phrasings per rule; the ones marked (two rules) could be said for either.
PHRASES: dict[str, tuple[str, ...]] = {
    "required_certification": (
        "we can't put anyone on our floor without the right card",
        "their paperwork isn't what this site needs",
        "not trained to our site's safety standard",  # (two rules: certification, compliance)
        "missing a ticket we insist on here",
    ),
    "min_reliability": (
        "we need people we can count on",
        "their track record isn't good enough for us",
        "we hear they don't always turn up",
        "not dependable enough for this crew",
    ),
    "min_responsiveness": (
        "we couldn't reach them when it mattered",
        "they never answer the phone",
        "too slow to respond for our pace",
    ),
    "min_engagement": (
        "doesn't seem motivated enough",
        "the attitude isn't right for our team",
        "we want people who put in the effort",
    ),
    "min_communications": (
        "our leads need people they can talk to",
        "they'd struggle with our instructions",
        "we need someone who can explain a problem clearly",
    ),
    "min_compliance": (
        "we need people who follow procedures to the letter",
        "not someone who sticks to the rules",
        "their safety record worries us",  # (two rules: compliance, reliability)
    ),
    "min_availability": (
        "their hours won't work for us",
        "not flexible enough on shifts",
        "we need someone more available",
    ),
    "max_distance_miles": (
        "that's too far for this site",
        "the commute would never work",
        "we want people who live close by",
        "too far out to rely on them getting here",  # (two rules: distance, reliability)
    ),
    "exclude_prior_no_show": (
        "this one let us down before",
        "we've been burned by them in the past",
        "they stood us up last time",
        "we can't count on them after last time",  # (two rules: no-show, reliability)
    ),
    # What the order said, or the day: the staffer can check these itself.
    "double_booked": ("they're already working somewhere else then", "that person is spoken for already"),
    "role_mismatch": ("that's not the trade we asked for", "wrong kind of worker for this job"),
    "missing_requirement": ("doesn't have what the order asked for",),
    "missing_wish": ("that's not the kind of person the order described",),
    "too_far": ("outside the area we gave you",),
    "excluded": ("not after this morning",),
    "duplicate": ("you sent us the same person twice",),
    "unknown_worker": ("we don't know who that is",),
}
GENERIC = ("not what we're looking for", "no, not this one")


def phrase(rule: str, key: str) -> str:
    """The client's words for ``rule``: a stable pick among its phrasings by ``key``."""
    options = PHRASES.get(rule, GENERIC)
    digest = hashlib.sha256(f"{key}|{rule}".encode()).digest()
    return options[int.from_bytes(digest[:4], "big") % len(options)]


def client_says(rejections: Sequence[ClientRejection], mode: str, *, key: str) -> list[dict[str, Any]]:
    """The ``rejections`` attribute of a ``fill.judged`` op in ``mode``.

    explicit: the judge's entries (worker, reason, rule, value). vague: one remark per entry,
    ``{worker_id, said}``, with no rule and no number. silent: nothing (the op's ``refused``
    list says who was refused). ``key`` makes the vague pick stable (client, event, batch).
    """
    if mode == "explicit":
        return [r.model_dump(mode="json") for r in rejections]
    if mode == "vague":
        return [{"worker_id": r.worker_id, "said": _vague(r, key)} for r in rejections]
    return []


def _vague(rejection: ClientRejection, key: str) -> str:
    # A refusal for what a resume does not show is said in the client's own loose words for it.
    fact = fact_for_wish(str(rejection.value or "")) if rejection.rule == "resume_wish" else None
    return fact.vague if fact is not None else phrase(rejection.rule, f"{key}|{rejection.worker_id}")


def summary(requested: int, filled: int, rules: dict[str, int], refused: int, mode: str) -> str:
    """The op's output summary: rule names only when the client stated them."""
    text = f"filled {filled}/{requested}"
    if mode == "explicit" and rules:
        text += "; client rejected: " + ", ".join(f"{rule} x{n}" for rule, n in sorted(rules.items()))
    elif refused:
        text += f"; client refused {refused} worker{'s' if refused != 1 else ''}"
    return text
