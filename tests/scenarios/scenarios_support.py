"""A scripted LLM staffer for the scenarios tests (a module, not a conftest, so tests import it).

``lesson_follower`` stands for a model: it reads the order and the lessons block in its prompt,
asks the ``sql`` tool for candidates, then proposes from the candidate ledger, filtering by
what the lessons say (certifications, minimum scores, distance). It never sees the clients'
hidden rules; without lessons it proposes the most reliable candidates, like a naive model.
``approver`` is the reviewer: it approves a proposal that passed verification.
"""

from __future__ import annotations

import json
import re
from typing import Any

from agentlake.workforce.geo import bounding_box, gazetteer, haversine_sql
from agentlake.workforce.roles import CERTIFICATIONS, certification_key, role_names

_ORDER = re.compile(
    r"Fill this order: (?P<count>\d+) x (?P<role>.+?) in (?P<city>[^,]+), (?P<state>[A-Z]{2}) "
    r"\(within (?P<radius>[\d.]+) miles\)(?P<rest>.*?)\.\n"
)
_EXCLUDED = re.compile(r"excluding workers \[([\d, ]*)\]")
_REQUIRES = re.compile(r"requires (.+?)(?: excluding workers|$)")
_LESSON = re.compile(r"^\[(L-[\w-]+)\] (.*)$", re.MULTILINE)
_CERT = re.compile(r"Only propose workers with (.+?) on file:")
_SCORE = re.compile(r"Only propose workers with (\w+) >= ([\d.]+):")
_DISTANCE = re.compile(r"within ([\d.]+) miles of the site")
_LEDGER = re.compile(r"^- (\d+): (.*)$", re.MULTILINE)


def _content(message: Any) -> str:
    return message.content if hasattr(message, "content") else message["content"]


def _lessons(system: str) -> tuple[list[str], dict[str, Any]]:
    rules: dict[str, Any] = {"certs": [], "scores": {}, "distance": None}
    ids = []
    for lesson_id, text in _LESSON.findall(system):
        used = False
        if m := _CERT.search(text):
            rules["certs"].append(m.group(1))
            used = True
        if m := _SCORE.search(text):
            rules["scores"][m.group(1)] = float(m.group(2))
            used = True
        if m := _DISTANCE.search(text):
            limit = float(m.group(1))
            rules["distance"] = limit if rules["distance"] is None else min(limit, rules["distance"])
            used = True
        if used:
            ids.append(lesson_id)
    return ids, rules


def _candidate_sql(order: re.Match[str], radius: float, rules: dict[str, Any], excluded: set[int]) -> str:
    """The SELECT a careful model would write: role synonyms, distance, the lessons' filters."""
    place = gazetteer(None).resolve(order["city"], order["state"])
    limit = min(radius, rules["distance"] or radius)
    lat_min, lat_max, lon_min, lon_max = bounding_box(place.lat, place.lon, limit)
    roles = ", ".join(f"'{r}'" for r in sorted(role_names(order["role"])))
    distance = haversine_sql("lat", "lon").replace("$lat", str(place.lat)).replace("$lon", str(place.lon))
    where = [
        f"lower(role) IN ({roles})",
        f"lat BETWEEN {lat_min} AND {lat_max}",
        f"lon BETWEEN {lon_min} AND {lon_max}",
        f"{distance} <= {limit}",
    ]
    where += [f"{name} >= {floor}" for name, floor in rules["scores"].items()]
    for cert in rules["certs"]:
        spellings = [cert, *(CERTIFICATIONS[cert].variants if cert in CERTIFICATIONS else ())]
        where.append("(" + " OR ".join(f"certifications ILIKE '%{v}%'" for v in spellings) + ")")
    if excluded:
        where.append(f"worker_id NOT IN ({', '.join(map(str, sorted(excluded)))})")
    return (
        f"SELECT worker_id, name, role, city, round({distance}, 1) AS distance_miles, reliability, availability, "
        f"certifications FROM workers WHERE {' AND '.join(where)} ORDER BY reliability DESC LIMIT 25"
    )


def lesson_follower(messages: list[Any], options: Any) -> str:
    system, user = _content(messages[0]), _content(messages[-1])
    order = _ORDER.search(system)
    assert order is not None, system[:300]
    count, radius = int(order["count"]), float(order["radius"])
    cited, rules = _lessons(system)
    excluded: set[int] = set()
    if m := _EXCLUDED.search(order["rest"]):
        excluded = {int(x) for x in m.group(1).split(",") if x.strip()}
    required = _REQUIRES.search(order["rest"])
    required_certs = [r.strip() for r in required.group(1).split(",")] if required else []
    entries = _LEDGER.findall(user.split("\nLog", 1)[0])
    if not entries:
        return json.dumps(
            {
                "kind": "tool_call",
                "tool": "sql",
                "args": {"query": _candidate_sql(order, radius, rules, excluded), "max_rows": 25},
                "reason": "find candidates that meet the order and the lessons",
            }
        )
    wanted_certs = {certification_key(c) for c in [*required_certs, *rules["certs"]]}
    chosen = []
    for worker_id, note in entries:
        if "[REJECTED" in note or int(worker_id) in excluded:
            continue
        miles = re.search(r", ([\d.]+) mi\b", note)
        if miles is None or float(miles.group(1)) > min(radius, rules["distance"] or radius):
            continue
        if any(
            (m := re.search(rf"\b{name} ([\d.]+)", note)) is None or float(m.group(1)) < floor
            for name, floor in rules["scores"].items()
        ):
            continue
        certs = note.split("certs: ", 1)[1].split(" [", 1)[0] if "certs: " in note else ""
        held = {certification_key(c) for c in certs.split(",") if c.strip()}
        if not wanted_certs <= held:
            continue
        chosen.append(int(worker_id))
    return json.dumps(
        {
            "kind": "propose_done",
            "worker_ids": chosen[:count],
            "spares": chosen[count : count + 3],
            "rationale": "most reliable candidates that meet the order and the lessons",
            "cited_lessons": cited,
        }
    )


def approver(messages: list[Any], options: Any) -> str:
    user = _content(messages[-1])
    verified = (
        "Verification of the proposal" in user
        and "REJECTED" not in user.split("Verification of the proposal", 1)[1]
    )
    return json.dumps(
        {"kind": "critique", "approve": verified, "notes": "" if verified else "fix the rejections"}
    )
