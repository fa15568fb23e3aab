"""benchmarks/bench_ask.py's pass: the real ``ask`` with a scripted model over a lake built from
the pack, judged right or wrong; a failing ask or an answer with no evidence is an error."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentlake.agents.ask import Answer, ask
from agentlake.errors import RunError, UnavailableError
from agentlake.lake import Lake
from agentlake.llm import ScriptedProvider, register_scripted, unregister_scripted
from agentlake.questions.pack import Truth, build_lake, compute_truths, load_pack

BENCH_FILE = Path(__file__).parents[2] / "benchmarks" / "bench_ask.py"
PACK = load_pack(Path(__file__).parents[2] / "benchmarks" / "ask_pack" / "pack.yaml")
ASKED = [q for q in PACK.questions if q.id in ("penguins-gentoo-mass", "airports-texas")]


def _bench():  # the benchmark script as a module
    spec = importlib.util.spec_from_file_location("bench_ask", BENCH_FILE)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_ask"] = module  # pydantic resolves the models' annotations through it
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


bench = _bench()


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lake]:
    directory = tmp_path_factory.mktemp("bench-ask")
    with pytest.MonkeyPatch.context() as patch:
        for name in list(os.environ):
            if name.startswith("AGENTLAKE_"):
                patch.delenv(name)
        patch.setenv("AGENTLAKE_CONFIG", str(directory / "agentlake.toml"))
        built = build_lake(PACK, directory)
    yield built
    built.close()


@pytest.fixture(scope="module")
def truths(lake: Lake) -> dict[str, Truth]:
    return compute_truths(PACK, lake, ASKED)


@pytest.fixture
def model() -> Iterator[ScriptedProvider]:
    provider = ScriptedProvider("bench-ask")
    register_scripted("bench-ask", provider)
    yield provider
    unregister_scripted("bench-ask")


def test_a_pass_judges_the_real_asks_answers(
    lake: Lake, truths: dict[str, Truth], model: ScriptedProvider
) -> None:
    gentoo, texas = (question.truth for question in ASKED)
    model.enqueue(json.dumps({"route": "sql", "sql": gentoo}))
    model.enqueue("Gentoo penguins weigh 5,076 grams on average [SQL].")
    # A filter of its own that code has no ground to mend: the answer states what it found.
    model.enqueue(json.dumps({"route": "sql", "sql": texas + " AND latitude > 30"}))
    model.enqueue("There are 154 airports in Texas [SQL].")
    results = bench.run_pass(ASKED, truths, lambda text: ask(text, lake=lake, model="scripted:bench-ask"))
    assert [(r.id, r.right, r.error) for r in results] == [
        ("penguins-gentoo-mass", True, None),
        ("airports-texas", False, None),
    ]


def test_the_sql_that_ran_is_kept(lake: Lake, truths: dict[str, Truth], model: ScriptedProvider) -> None:
    model.enqueue(json.dumps({"route": "sql", "sql": ASKED[0].truth}))
    model.enqueue("5076 grams [SQL].")
    results = bench.run_pass(ASKED[:1], truths, lambda text: ask(text, lake=lake, model="scripted:bench-ask"))
    assert results[0].sql == ASKED[0].truth


def test_a_failing_ask_is_an_error_not_a_wrong_answer(truths: dict[str, Truth]) -> None:
    def failing(text: str) -> Answer:
        raise RunError("the model returned nothing")

    results = bench.run_pass(ASKED[:1], truths, failing)
    assert results[0].error == "RunError: the model returned nothing"


def test_an_answer_with_no_evidence_is_an_error(truths: dict[str, Truth]) -> None:
    def unsupported(text: str) -> Answer:
        return Answer(question=text, answer="5076 grams", route="sql", sources=[], cited=[], model="m")

    results = bench.run_pass(ASKED[:1], truths, unsupported)
    assert results[0].error == "no evidence: the answer cites nothing that ran"


def test_no_model_stops_the_pass(truths: dict[str, Truth]) -> None:
    def unavailable(text: str) -> Answer:
        raise UnavailableError("no model to answer with")

    with pytest.raises(UnavailableError):
        bench.run_pass(ASKED[:1], truths, unavailable)


def test_the_summary_counts_errors_apart_from_wrong_answers() -> None:
    results = [
        bench.QuestionResult(id="a", pass_=1, question="q", expected=1.0, right=True, seconds=1.0),
        bench.QuestionResult(id="b", pass_=1, question="q", expected=1.0, seconds=2.0),
        bench.QuestionResult(id="c", pass_=1, question="q", expected=1.0, error="boom", seconds=3.0),
        bench.QuestionResult(id="d", pass_=1, question="q", expected=1.0, error="boom", seconds=2.0),
    ]
    assert bench.summarize(results) == {
        "asked": 4,
        "right": 1,
        "wrong": 1,
        "errors": 2,
        "accuracy": 0.25,
        "mean_seconds": 2.0,
    }


@pytest.mark.parametrize(("step", "written"), [(0.5, "5076"), (0.05, "5076.5"), (0.0, "5076.47")])
def test_the_expected_value_is_written_to_the_questions_tolerance(step: float, written: str) -> None:
    from agentlake.questions.judge import Tolerance

    truth = Truth(question=ASKED[0], value=5076.4739, tolerance=Tolerance(abs=step))

    assert bench.expected_text(truth) == written


def test_feedback_on_a_pass_teaches_the_next_one(
    tmp_path: Path, lake: Lake, truths: dict[str, Truth], model: ScriptedProvider
) -> None:
    from agentlake.learn import LessonStore
    from agentlake.observe import Observer, OpStore

    model.enqueue(json.dumps({"route": "sql", "sql": ASKED[0].truth}))
    model.enqueue("Gentoo penguins weigh 5,076 grams on average [SQL].")
    with (
        Observer(OpStore(tmp_path / "ops.duckdb")) as observer,
        LessonStore.open(lake.settings, path=tmp_path / "lessons.duckdb", embedder=False) as store,
    ):
        results = bench.run_pass(
            ASKED[:1],
            truths,
            lambda text: ask(text, lake=lake, model="scripted:bench-ask", observer=observer, lessons=False),
        )
        bench.give_feedback_on(results, truths, observer)

        bench.learn(store, observer, lake, 0)

        assert bench.lesson_summary(store, results)["by_kind"] == {"playbook/active": 1}
