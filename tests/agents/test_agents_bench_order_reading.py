"""benchmarks/bench_order_reading.py: its 100 written orders hold together with the catalogue and
the city table, and its judge tells a right reading from a wrong one (scripted readers)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

from agentlake.agents.order_reader import read_order
from agentlake.llm import FunctionProvider, register_scripted, unregister_scripted
from agentlake.workforce.catalogue import CERTIFICATIONS, ROLES
from agentlake.workforce.geo import gazetteer
from agentlake.workforce.order_words import NEEDED, OrderParts

BENCH_FILE = Path(__file__).parents[2] / "benchmarks" / "bench_order_reading.py"


def _bench():  # the benchmark script as a module
    spec = importlib.util.spec_from_file_location("bench_order_reading", BENCH_FILE)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_order_reading"] = module  # pydantic resolves the models' annotations through it
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


bench = _bench()
SET = bench.load_orders()
COMPLETE = [case for case in SET.orders if not case.asks]


def test_the_set_has_a_hundred_orders() -> None:
    assert len({case.id for case in SET.orders}) == 100


def test_every_truth_role_is_a_catalogue_role() -> None:
    assert [case.id for case in COMPLETE if case.role not in ROLES] == []


def test_every_truth_requirement_is_a_catalogue_certification() -> None:
    assert [case.id for case in COMPLETE if not set(case.requires) <= set(CERTIFICATIONS)] == []


def test_every_truth_place_is_in_the_city_table() -> None:
    places = gazetteer()
    assert [
        c.id for c in COMPLETE if c.place.split(", ")[1] not in places.states_of(c.place.split(", ")[0])
    ] == []


def test_every_question_asks_for_needed_parts() -> None:
    assert [case.id for case in SET.orders if not set(case.asks) <= set(NEEDED)] == []


def test_most_orders_name_no_requirement() -> None:
    # The 'no invented requirement' figure needs orders that name none.
    assert sum(not case.requires for case in COMPLETE) >= 40


def reader_of(parts: OrderParts) -> str:
    register_scripted("bench-reader", FunctionProvider(lambda messages, options: parts.model_dump_json()))
    return "function:bench-reader"


@pytest.fixture(autouse=True)
def _forget_reader() -> Any:
    yield
    unregister_scripted("bench-reader")


FIRST = SET.orders[0]  # 'need two welders near Cleveland OH tomorrow morning, reliable folks ...'
RIGHT = OrderParts(
    role="welders", count=2, city="Cleveland", state="OH", day="tomorrow", part_of_day="morning",
    wishes=["reliable folks", "structural experience"],
)  # fmt: skip


def test_the_judge_passes_a_right_reading() -> None:
    reading = read_order(FIRST.text, model=reader_of(RIGHT), now=SET.now)
    assert bench.judge(FIRST, reading) == []


def test_the_judge_names_a_missing_wish() -> None:
    reading = read_order(FIRST.text, model=reader_of(RIGHT.model_copy(update={"wishes": []})), now=SET.now)
    assert bench.judge(FIRST, reading) == [
        "no wish holds 'reliable' (wishes [])",
        "no wish holds 'structural' (wishes [])",
    ]


def test_the_judge_fails_a_question_where_an_order_is_due() -> None:
    asking = SET.orders[-1]  # 'we need help asap, can anyone cover?'
    reading = read_order(FIRST.text, model=reader_of(RIGHT), now=SET.now)
    assert bench.judge(asking, reading)[0].startswith("filled '2 x Welder in Cleveland, OH")


def test_the_empty_reader_reads_by_the_words_alone() -> None:
    reading = read_order(FIRST.text, model=reader_of(OrderParts()), now=SET.now)
    assert reading.order.count == 2
