"""Judged evidence: the items a judge accepted or refused, with their features, as ops state them.

Owns the op convention (docs/learning.md, "Judged evidence") and reading it: an op whose
``attributes.judged`` is ``{"scope", "shape", "features", "items"}`` states, for each item
(``{"id", "accepted", "explained"?, "values"}``), whether the judge took it and the item's
features; ``features`` says, per feature, the filter of the domain's machine action that acts
on it (``filter``) and the words people use for it. The judge's own words for a refused item
are the op's ``attributes.rejections[].said`` of that item (vague feedback): a rejection names
its item by the field ``judged.item_key`` says (ops recorded before it: by its one ``*_id``
field holding an item's id).

An op whose rejections name their rule (``rule``: the judge said why, explicit feedback) does
not count as evidence to induce from: a rule extractor copies what was said. Its items are
kept all the same, flagged ``rules_stated``: the gatekeeper (``gate``) replays every judged
event (``read_judged_events``), induction reads only the others (``read_evidence``).

``record_evidence`` keeps the items in the lesson store's evidence tables (idempotent by op and
item) and ``read_evidence`` reads them back, so rules can be induced from everything judged so
far, across batches and inside a day's private copy of the store: functions over the lesson
tables (``db.LessonTables``) and one ``db.Transaction``. It does not own induction (a domain's
inducer) nor any domain's features.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentlake.learn.db import dumps, naive

if TYPE_CHECKING:
    from agentlake.learn.db import LessonTables, Transaction
    from agentlake.observe.model import ObservedOp

JUDGED = "judged"
MAX_TEXT_VALUE = 100
MAX_FILTER_CHARS = 100
# Evidence kept per scope: the oldest items beyond this are not read (a long-lived service).
MAX_ITEMS_PER_SCOPE = 5000


@dataclass(frozen=True)
class EvidenceItem:
    """One judged item of one op."""

    op_id: str
    item_id: int
    scope: str
    shape: str
    accepted: bool
    explained: bool
    values: Mapping[str, Any]
    said: tuple[str, ...] = ()


@dataclass
class JudgedOp:
    """What one op states: its scope, the features' filters and words, its items."""

    op_id: str
    scope: str
    shape: str
    features: dict[str, dict[str, str]]
    items: list[EvidenceItem] = field(default_factory=list)
    rules_stated: bool = False


def states_rules(op: ObservedOp) -> bool:
    """The judge named the rule of a refusal (explicit feedback): nothing to induce."""
    rejections = op.attributes.get("rejections")
    return isinstance(rejections, list) and any(isinstance(r, dict) and r.get("rule") for r in rejections)


def read_judged(op: ObservedOp, *, stated: bool = False) -> JudgedOp | None:
    """The evidence ``op`` states, or ``None`` (no evidence, unreadable, or rules stated unless
    ``stated``: then it is read and flagged ``rules_stated``)."""
    judged = op.attributes.get(JUDGED)
    rules_stated = states_rules(op)
    if not isinstance(judged, dict) or (rules_stated and not stated):
        return None
    scope = judged.get("scope")
    items = judged.get("items")
    features = judged.get("features")
    if not isinstance(scope, str) or not scope.strip() or not isinstance(items, list):
        return None
    schema: dict[str, dict[str, str]] = {}
    if isinstance(features, dict):
        for name, spec in features.items():
            if isinstance(spec, dict) and 0 < len(str(spec.get("filter") or "")) <= MAX_FILTER_CHARS:
                schema[str(name)] = {"filter": str(spec["filter"]), "words": str(spec.get("words", ""))}
    ids = {_int(item.get("id")) for item in items if isinstance(item, dict)} - {None}
    key = judged.get("item_key") if isinstance(judged.get("item_key"), str) else None
    said: dict[int, list[str]] = {}
    for rejection in op.attributes.get("rejections") or []:
        if isinstance(rejection, dict) and isinstance(rejection.get("said"), str):
            item_id = _item_of(rejection, key, ids)
            if item_id is not None:
                said.setdefault(item_id, []).append(rejection["said"][:300])
    out = JudgedOp(
        op_id=op.id,
        scope=scope.strip(),
        shape=str(judged.get("shape") or ""),
        features=schema,
        rules_stated=rules_stated,
    )
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("values"), dict):
            continue
        item_id = _int(item.get("id"))
        if item_id is None or not isinstance(item.get("accepted"), bool):
            continue
        out.items.append(
            EvidenceItem(
                op_id=op.id,
                item_id=item_id,
                scope=out.scope,
                shape=out.shape,
                accepted=item["accepted"],
                explained=bool(item.get("explained")),
                values=_clean_values(item["values"]),
                said=tuple(said.get(item_id, ())),
            )
        )
    return out if out.items else None


def _item_of(rejection: Mapping[str, Any], key: str | None, ids: set[Any]) -> int | None:
    """The id of the item ``rejection`` is about: its ``key`` field, else its one ``*_id``
    field whose value is an item's id."""
    if key is not None:
        return _int(rejection.get(key))
    found = {
        value
        for name, raw in rejection.items()
        if str(name).endswith("_id") and (value := _int(raw)) is not None and value in ids
    }
    return found.pop() if len(found) == 1 else None


def record_evidence(store: LessonTables, ops: Sequence[ObservedOp], project_id: str | None) -> int:
    """Keep the evidence ``ops`` state in ``store``; returns how many items were read.

    Recording the same op again adds nothing (keyed by op and item). Ops whose rejections name
    their rule are kept too, flagged (see the module docstring).
    """
    judged = [found for op in ops if (found := read_judged(op, stated=True)) is not None]
    if judged:
        with store.transaction() as txn:
            write_judged(txn, judged, project_id=project_id)
    return sum(len(j.items) for j in judged)


def write_judged(txn: Transaction, judged: Sequence[JudgedOp], *, project_id: str | None) -> None:
    """Queue the items of ``judged`` ops in ``txn`` (idempotent by op and item)."""
    at = naive(txn.now)
    for op in judged:
        txn.insert(
            "evidence_ops",
            {
                "op_id": op.op_id,
                "project_id": project_id,
                "scope": op.scope,
                "shape": op.shape,
                "features": dumps(op.features),
                "recorded_at": at,
                "rules_stated": op.rules_stated,
            },
            conflict="ON CONFLICT DO NOTHING",
        )
        for item in op.items:
            txn.insert(
                "evidence",
                {
                    "op_id": op.op_id,
                    "item_id": item.item_id,
                    "accepted": item.accepted,
                    "explained": item.explained,
                    "said": dumps(list(item.said)),
                    "item_values": dumps(dict(item.values)),
                },
                conflict="ON CONFLICT DO NOTHING",
            )


def read_evidence(
    store: LessonTables, scope: str, *, project_id: str | None = None, limit: int = MAX_ITEMS_PER_SCOPE
) -> tuple[dict[str, dict[str, str]], list[EvidenceItem]]:
    """The features (the newest op's) and the newest ``limit`` items judged for ``scope``,
    oldest first."""
    where = "o.scope = ? AND NOT coalesce(o.rules_stated, false)" + (
        " AND o.project_id IS NOT DISTINCT FROM ?" if project_id is not None else ""
    )
    params: list[Any] = [scope] + ([project_id] if project_id is not None else [])
    rows = store.query(
        "SELECT * FROM (SELECT o.op_id, o.shape, o.features, o.recorded_at, e.item_id, e.accepted, "
        "e.explained, e.said, e.item_values FROM evidence e JOIN evidence_ops o USING (op_id) "
        f"WHERE {where} ORDER BY o.recorded_at DESC, o.op_id DESC, e.item_id LIMIT ?) AS newest "
        "ORDER BY recorded_at, op_id, item_id",
        [*params, limit],
    )
    features: dict[str, dict[str, str]] = {}
    items = []
    for op_id, shape, schema, _, item_id, accepted, explained, said, values in rows:
        features = json.loads(schema) or features
        items.append(
            EvidenceItem(
                op_id=op_id,
                item_id=int(item_id),
                scope=scope,
                shape=shape,
                accepted=bool(accepted),
                explained=bool(explained),
                values=json.loads(values),
                said=tuple(json.loads(said)),
            )
        )
    return features, items


def read_judged_events(
    store: LessonTables, *, scope: str | None = None, project_id: str | None = None, limit: int = 50
) -> list[JudgedOp]:
    """The newest ``limit`` judged ops (every one, rules stated or not), of ``scope`` when given,
    oldest first, each with its items: what the gatekeeper replays."""
    where, params = [], []
    if scope is not None:
        where.append("scope = ?")
        params.append(scope)
    if project_id is not None:
        where.append("project_id IS NOT DISTINCT FROM ?")
        params.append(project_id)
    clause = ("WHERE " + " AND ".join(where)) if where else ""
    heads = store.query(
        "SELECT op_id, scope, shape, features, coalesce(rules_stated, false) FROM evidence_ops "
        f"{clause} ORDER BY recorded_at DESC, op_id DESC LIMIT ?",
        [*params, limit],
    )
    out = [
        JudgedOp(op_id=op_id, scope=s, shape=shape, features=json.loads(schema) or {}, rules_stated=bool(rs))
        for op_id, s, shape, schema, rs in reversed(heads)
    ]
    if not out:
        return out
    by_id = {op.op_id: op for op in out}
    marks = ", ".join("?" for _ in by_id)
    rows = store.query(
        "SELECT op_id, item_id, accepted, explained, said, item_values FROM evidence "
        f"WHERE op_id IN ({marks}) ORDER BY op_id, item_id",
        list(by_id),
    )
    for op_id, item_id, accepted, explained, said, values in rows:
        op = by_id[op_id]
        op.items.append(
            EvidenceItem(
                op_id=op_id,
                item_id=int(item_id),
                scope=op.scope,
                shape=op.shape,
                accepted=bool(accepted),
                explained=bool(explained),
                values=json.loads(values),
                said=tuple(json.loads(said)),
            )
        )
    return out


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _clean_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """Numbers (finite), booleans, short strings and lists of strings; anything else is dropped."""
    out: dict[str, Any] = {}
    for name, value in values.items():
        if isinstance(value, bool):
            out[str(name)] = value
        elif isinstance(value, str) and value.strip():
            out[str(name)] = " ".join(value.split())[:MAX_TEXT_VALUE]
        elif isinstance(value, (int, float)) and math.isfinite(float(value)):
            out[str(name)] = float(value)
        elif isinstance(value, list):
            out[str(name)] = sorted({str(v).strip() for v in value if str(v).strip()})
    return out
