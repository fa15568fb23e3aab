"""How often an order written in words is read into the right structured order (issue 35).

Reads each of the 100 written orders of ``benchmarks/order_reading/orders.yaml`` with
``agentlake.agents.order_reader.read_order`` (the reader the fill doors use: a model writes down
the order's parts, the staffing domain checks them against the words and the catalogue), at the
set's fixed "now", and judges the reading against the order's truth: role, count, city, state,
shift start and end, radius, requirements (as a set), client and, for each wish word in the
truth, a wish that holds it; an order the truth says lacks something must be a question back
for exactly those parts (and offer the role named, if one is). No lake: cities are the shipped
reference data.

Printed: right / all, by kind (complete, hostile, question), by half (odd ids shaped the
reader's rules while they were written, even ids were held out), invented requirements (a
requirement the truth does not name; on orders that name none, and in all), questions asked of
complete orders and orders filled that should have been asked, how often the model's own
reading stood (no disagreement with the words) per part, and seconds per order. ``--model
none`` is the baseline without a model: a reader that writes nothing down, so only the words
read by code remain. ``--out`` writes every reading and verdict as JSON.

Usage: ``.venv/bin/python benchmarks/bench_order_reading.py [--model local:qwen2.5-coder-0.5b]
[--dtype int8] [--ids all|odd|even] [--limit N] [--out FILE]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field

from agentlake.workforce.order_words import ReadOrder

ORDERS_FILE = Path(__file__).resolve().parent / "order_reading" / "orders.yaml"
EMPTY_READER = "order-bench-empty"  # --model none: a function: model that writes nothing down
HOSTILE = ("ignore", "disregard", "</data>", "system:")


class OrderCase(BaseModel):
    """One written order and what it means (see the orders file's header)."""

    model_config = ConfigDict(extra="forbid")

    id: int
    text: str
    role: str | None = None
    count: int | None = None
    place: str | None = None
    start: str | None = None
    end: str | None = None
    radius: float = 25.0
    requires: list[str] = Field(default_factory=list)
    wishes: list[str] = Field(default_factory=list)
    client: str | None = None
    asks: list[str] = Field(default_factory=list)
    offers: str | None = None

    @property
    def kind(self) -> str:
        if self.asks:
            return "question"
        return "hostile" if any(mark in self.text.lower() for mark in HOSTILE) else "complete"


class OrderSet(BaseModel):
    model_config = ConfigDict(extra="forbid")

    now: datetime
    orders: list[OrderCase]


def load_orders(path: Path = ORDERS_FILE) -> OrderSet:
    return OrderSet.model_validate(yaml.safe_load(path.read_text()))


def _at(value: str) -> datetime:
    return datetime.strptime(value, "%Y-%m-%d %H:%M")


def judge(case: OrderCase, reading: ReadOrder) -> list[str]:
    """What the reading got wrong against the case's truth; ``[]`` when it is right."""
    if case.asks:
        if reading.order is not None:
            return [f"filled '{reading.order.as_text()}' where it should ask for {', '.join(case.asks)}"]
        wrong = []
        if sorted(reading.missing) != sorted(case.asks):
            wrong.append(f"asked for {reading.missing}, should ask for {case.asks}")
        if case.offers and case.offers not in reading.roles_offered:
            wrong.append(f"offered {reading.roles_offered}, not {case.offers}")
        return wrong
    order = reading.order
    if order is None:
        return [f"asked '{reading.question}'"]
    start = _at(case.start) if case.start else None
    end = _at(case.end) if case.end else (start + timedelta(hours=8) if start else None)
    expected: dict[str, Any] = {
        "role": case.role,
        "count": case.count,
        "place": case.place,
        "start": start,
        "end": end,
        "radius": case.radius,
        "requirements": sorted(case.requires),
        "client": case.client,
    }
    got: dict[str, Any] = {
        "role": order.role,
        "count": order.count,
        "place": f"{order.city}, {order.state}",
        "start": order.shift_start,
        "end": order.shift_end,
        "radius": order.radius_miles,
        "requirements": sorted(order.requirements),
        "client": order.client_id,
    }
    wrong = [f"{key} {got[key]} (truth {value})" for key, value in expected.items() if got[key] != value]
    said = " ".join(order.wishes).lower()
    wrong += [
        f"no wish holds {word!r} (wishes {order.wishes})" for word in case.wishes if word.lower() not in said
    ]
    return wrong


def invented(case: OrderCase, reading: ReadOrder) -> list[str]:
    """Requirements of the reading that the truth does not name."""
    if reading.order is None:
        return []
    return sorted(set(reading.order.requirements) - set(case.requires))


def run(model: str, cases: list[OrderCase], now: datetime, settings: Any) -> list[dict[str, Any]]:
    from agentlake.agents.order_reader import read_order
    from agentlake.errors import AgentlakeError

    results = []
    for case in cases:
        started = time.perf_counter()
        try:
            reading = read_order(case.text, model=model, settings=settings, now=now)
        except AgentlakeError as exc:
            reading, error = None, exc.message
        else:
            error = None
        seconds = time.perf_counter() - started
        wrong = [f"error: {error}"] if reading is None else judge(case, reading)
        results.append(
            {
                "id": case.id,
                "kind": case.kind,
                "text": case.text,
                "right": not wrong,
                "wrong": wrong,
                "invented": [] if reading is None else invented(case, reading),
                "reading": None if reading is None else reading.model_dump(mode="json"),
                "seconds": round(seconds, 2),
            }
        )
        mark = "ok " if not wrong else "BAD"
        print(
            f"{mark} {case.id:>3} {seconds:5.1f}s {case.text[:70]}"
            + ("" if not wrong else f"\n      {'; '.join(wrong)}")
        )
    return results


def summary(results: list[dict[str, Any]], cases: list[OrderCase]) -> dict[str, Any]:
    by_id = {case.id: case for case in cases}

    def share(rows: list[dict[str, Any]]) -> str:
        right = sum(row["right"] for row in rows)
        return f"{right}/{len(rows)} ({100 * right / len(rows):.0f}%)" if rows else "-"

    none_named = [r for r in results if by_id[r["id"]].kind != "question" and not by_id[r["id"]].requires]
    read = [r["reading"] for r in results if r["reading"] and r["reading"]["source"] != "grammar"]
    differed = Counter(d["part"] for reading in read for d in reading["disagreements"])
    stood = {part: f"{1 - differed[part] / len(read):.0%}" for part in sorted(differed)} if read else {}
    return {
        "right": share(results),
        "by kind": {
            kind: share([r for r in results if r["kind"] == kind])
            for kind in ("complete", "hostile", "question")
        },
        "odd ids (shaped the rules)": share([r for r in results if r["id"] % 2]),
        "even ids (held out)": share([r for r in results if not r["id"] % 2]),
        "invented requirements on orders naming none": sum(bool(r["invented"]) for r in none_named),
        "invented requirements in all": sum(len(r["invented"]) for r in results),
        "questions asked of complete orders": sum(
            1 for r in results if r["kind"] != "question" and r["reading"] and r["reading"]["order"] is None
        ),
        "orders filled that should ask": sum(
            1
            for r in results
            if r["kind"] == "question" and r["reading"] and r["reading"]["order"] is not None
        ),
        "readings where the model's parts all stood": f"{sum(not x['disagreements'] for x in read)}/{len(read)}",
        "model's reading stood, per part": stood,
        "seconds per order (median, max)": (
            round(statistics.median(r["seconds"] for r in results), 2),
            round(max(r["seconds"] for r in results), 2),
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="local:qwen2.5-coder-0.5b", help="the reader; none: no model")
    parser.add_argument("--dtype", default=None, help="local_torch_dtype for a local: model (int8, bfloat16)")
    parser.add_argument("--ids", choices=("all", "odd", "even"), default="all")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    from agentlake.settings import load_settings

    loaded = load_orders()
    cases = [c for c in loaded.orders if args.ids == "all" or (c.id % 2) == (args.ids == "odd")]
    cases = cases[: args.limit] if args.limit else cases
    overrides: dict[str, Any] = {"local_engine": "transformers"}
    if args.dtype:
        overrides["local_torch_dtype"] = args.dtype
    settings = load_settings(**overrides)
    model = args.model
    if model == "none":
        from agentlake.llm import FunctionProvider, register_scripted

        register_scripted(EMPTY_READER, FunctionProvider(lambda messages, options: "{}", EMPTY_READER))
        model = f"function:{EMPTY_READER}"
    started = time.perf_counter()
    results = run(model, cases, loaded.now, settings)
    report = {"model": args.model, "dtype": args.dtype, "orders": len(cases)} | summary(results, cases)
    report["wall seconds"] = round(time.perf_counter() - started, 1)
    print(json.dumps(report, indent=2))
    if args.out:
        args.out.write_text(json.dumps({"summary": report, "results": results}, indent=2))


if __name__ == "__main__":
    main()
