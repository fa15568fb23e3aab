"""How often ``agentlake ask`` answers plain questions over a user's own tables right, and how
much better it gets from feedback on its answers.

Builds a lake from the ask question pack (``benchmarks/ask_pack/pack.yaml``: seven public CSVs
installed by ``make ask-pack`` and the shop's three messy ones) in a temporary directory, computes
each question's truth from its SQL, then asks each question of a pass with
``agentlake.agents.ask.ask`` and judges the written answer (``agentlake.questions.judge``: a
number within the question's tolerance and no other number beside it; text as a whole word).
Pass 1 and pass 2 ask different questions of the same shape over the same tables.

The learning run (the default, ``--pass both``), as a user's day goes, every step through the
product's own doors over a real op log and lesson store in the temporary directory:

1. pass 1, cold (no lessons): the same answers for both arms;
2. feedback on each pass-1 answer (``questions.feedback.give_feedback``): right, or wrong with
   the expected value (the truth, written to the question's tolerance);
3. one learning cycle over the op log (``learn.learn_cycle`` with the lake): the lessons;
4. pass 2 twice: the learning arm (``lessons=store``) and the learning-off twin
   (``lessons=False``);
5. feedback on both arms' pass-2 answers and one more cycle, which measures each lesson's
   effect (the twin's runs are the baseline) and retires harmful ones.

Printed per pass and arm: right / wrong / errors (``ask`` raised, or answered with no
evidence), accuracy (right over all asked), mean seconds a question, accuracy per tag; then the
lessons learned by kind, how many answers cited one, the lessons measured harmful and still
active, and any data lesson that names no op. Written to ``--out`` (JSON): the summaries, the
lessons, and per question id, pass, arm, question, expected, answer, route, sql, right, error,
judged (why), seconds, lessons given and cited.

``--pass 1`` or ``--pass 2`` asks one pass cold, without feedback or learning.

Usage: ``.venv/bin/python benchmarks/bench_ask.py [--model local:qwen2.5-coder-1.5b]
[--pass 1|2|both] [--limit N] [--out FILE]``
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from agentlake.questions.pack import Question, Truth

PACK_FILE = Path(__file__).resolve().parent / "ask_pack" / "pack.yaml"
WORK = Path(__file__).resolve().parent / ".work"


class QuestionResult(BaseModel):
    """One question asked and judged."""

    model_config = ConfigDict(populate_by_name=True)

    id: str
    pass_: int = Field(..., alias="pass")
    arm: str = "cold"
    question: str
    expected: float | str
    answer: str | None = None
    route: str | None = None
    sql: str | None = None
    right: bool = False
    error: str | None = None
    judged: str | None = None
    seconds: float
    answer_id: str | None = None
    lessons: list[str] = Field(default_factory=list)
    lessons_cited: list[str] = Field(default_factory=list)


def run_pass(
    questions: list[Question],
    truths: dict[str, Truth],
    ask: Callable[[str], Any],
    *,
    arm: str = "cold",
    on_result: Callable[[QuestionResult], None] | None = None,
) -> list[QuestionResult]:
    """Ask each question with ``ask`` (question text -> an ``Answer``) and judge the answer.

    An exception from ``ask`` or an answer with no evidence is an error, not a wrong answer;
    ``UnavailableError`` (no model to ask) is raised: nothing can be measured without one.
    """
    from agentlake.errors import UnavailableError

    results = []
    for question in questions:
        truth = truths[question.id]
        result = QuestionResult(
            id=question.id,
            pass_=question.pass_,
            arm=arm,
            question=question.text,
            expected=truth.value,
            seconds=0.0,
        )
        started = time.perf_counter()
        try:
            answer = ask(question.text)
        except UnavailableError:
            raise
        except Exception as exc:  # one question's failure is a measured error
            result.error = f"{type(exc).__name__}: {exc}"
        else:
            result.answer, result.route, result.sql = answer.answer, answer.route, answer.sql
            result.answer_id = answer.id
            result.lessons, result.lessons_cited = list(answer.lessons), list(answer.lessons_cited)
            if not answer.sources:
                result.error = "no evidence: the answer cites nothing that ran"
            else:
                judgement = truth.judge(answer.answer)
                result.right, result.judged = judgement.right, judgement.reason
        result.seconds = round(time.perf_counter() - started, 3)
        results.append(result)
        if on_result is not None:
            on_result(result)
    return results


def summarize(results: list[QuestionResult]) -> dict[str, Any]:
    """Right / wrong / errors, accuracy and mean seconds of one pass's results."""
    right = sum(r.right for r in results)
    errors = sum(r.error is not None for r in results)
    return {
        "asked": len(results),
        "right": right,
        "wrong": len(results) - right - errors,
        "errors": errors,
        "accuracy": right / len(results) if results else 0.0,
        "mean_seconds": statistics.fmean(r.seconds for r in results) if results else 0.0,
    }


def by_tag(results: list[QuestionResult], questions: dict[str, Question]) -> dict[str, tuple[int, int]]:
    """``tag -> (right, asked)`` over ``results``."""
    counts: dict[str, tuple[int, int]] = {}
    for result in results:
        for tag in questions[result.id].tags:
            right, asked = counts.get(tag, (0, 0))
            counts[tag] = (right + result.right, asked + 1)
    return dict(sorted(counts.items()))


def expected_text(truth: Truth) -> str:
    """The truth as a person writes it in feedback: a number to its tolerance's last digit
    (abs 0.5: whole; 0.05: one decimal), text as it is."""
    if isinstance(truth.value, str):
        return truth.value
    step = truth.tolerance.abs
    decimals = max(0, math.ceil(-math.log10(2 * step))) if step > 0 else 2
    value = round(float(truth.value), decimals)
    return f"{value:.{decimals}f}"


def give_feedback_on(results: list[QuestionResult], truths: dict[str, Truth], observer: Any) -> int:
    """Feedback on every answer of ``results`` (right, or wrong with the expected value), as a
    user gives it; how many were given (an error without an answer gets none)."""
    from agentlake.questions.feedback import Feedback, give_feedback

    given = 0
    for result in results:
        if result.answer_id is None:
            continue
        expected = None if result.right else expected_text(truths[result.id])
        give_feedback(
            Feedback(answer_id=result.answer_id, right=result.right, expected=expected), observer=observer
        )
        given += 1
    return given


def learn(store: Any, observer: Any, lake: Any, cursor: int) -> tuple[Any, int]:
    """One learning cycle over the ops recorded after ``cursor`` (commit sequence), with the
    lake; the report and the new cursor."""
    from agentlake.learn import learn_cycle
    from agentlake.learn.loop import read_after

    ops, last = read_after(observer, cursor, page=1000, pages=1000)
    return learn_cycle(store, ops, lake=lake), last


def lesson_summary(store: Any, results: list[QuestionResult]) -> dict[str, Any]:
    """The data lessons by kind and status, harmful ones still active, lessons naming no op,
    and how many answers were given and cited one."""
    from agentlake.questions.domain import DOMAIN, action_of

    lessons = store.list(domain=DOMAIN)
    kinds: dict[str, int] = {}
    for lesson in lessons:
        action = action_of(lesson)
        key = f"{action.kind if action else 'words'}/{lesson.status}"
        kinds[key] = kinds.get(key, 0) + 1
    # Harmful: the mean of its measured effects is negative (learn.effect), and still active.
    effects = dict(store.query("SELECT lesson_id, avg(delta) FROM effects GROUP BY lesson_id"))
    harmful_active = [
        lesson.id for lesson in lessons if lesson.status == "active" and effects.get(lesson.id, 0.0) < 0
    ]
    return {
        "lessons": len(lessons),
        "by_kind": dict(sorted(kinds.items())),
        "harmful_active": harmful_active,
        "without_ops": [lesson.id for lesson in lessons if not lesson.evidence_op_ids],
        "answers_given_lessons": sum(bool(r.lessons) for r in results),
        "answers_citing": sum(bool(r.lessons_cited) for r in results),
    }


def line(label: str) -> Callable[[QuestionResult], None]:
    """Print each judged question as it comes (long work shows progress)."""

    def show(result: QuestionResult) -> None:
        verdict = "ERROR" if result.error else "right" if result.right else "wrong"
        said = (result.error or result.answer or "").replace("\n", " ")[:90]
        print(f"  {label} {result.id:32s} {verdict:5s} {result.seconds:6.1f}s  {said}", flush=True)

    return show


def report(label: str, results: list[QuestionResult], questions: list[Question]) -> dict[str, Any]:
    """Print one pass's summary and accuracy by tag; the summary."""
    summary = summarize(results)
    print(
        f"{label}: {summary['right']} right / {summary['wrong']} wrong / "
        f"{summary['errors']} errors of {summary['asked']}, accuracy "
        f"{100 * summary['accuracy']:.1f}%, {summary['mean_seconds']:.1f} s a question",
        flush=True,
    )
    tags = by_tag(results, {q.id: q for q in questions})
    print("  by tag: " + ", ".join(f"{tag} {r}/{n}" for tag, (r, n) in tags.items()), flush=True)
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default="local:qwen2.5-coder-1.5b")
    parser.add_argument("--pass", dest="pass_", choices=["1", "2", "both"], default="both")
    parser.add_argument("--limit", type=int, default=None, help="ask at most N questions a pass")
    parser.add_argument("--out", type=Path, default=None, help="the JSON results file")
    parser.add_argument("--pack", type=Path, default=PACK_FILE)
    args = parser.parse_args()
    out = args.out or WORK / f"bench_ask-{args.model.replace(':', '-').replace('/', '-')}.json"

    from agentlake.agents.ask import ask
    from agentlake.learn import LessonStore
    from agentlake.observe import Observer, OpStore
    from agentlake.questions.pack import build_lake, compute_truths, load_pack

    pack = load_pack(args.pack)
    root = Path(tempfile.mkdtemp(prefix="bench-ask-"))
    summaries: dict[str, Any] = {}
    everything: list[QuestionResult] = []
    lessons: dict[str, Any] = {}
    try:
        started = time.perf_counter()
        with build_lake(pack, root / "data") as lake:
            # A correction the learner asks a model for is asked of the model under test.
            settings = lake.settings.model_copy(update={"data_dir": root / "data", "learn_model": args.model})
            print(
                f"lake: {len(pack.datasets)} datasets in {time.perf_counter() - started:.1f} s; model {args.model}",
                flush=True,
            )
            observer = Observer(OpStore(root / "ops.duckdb"))
            store = LessonStore.open(settings, path=root / "lessons.duckdb", embedder=False)
            try:

                def asker(lessons_from: Any) -> Callable[[str], Any]:
                    return lambda text: ask(
                        text, lake=lake, model=args.model, observer=observer, lessons=lessons_from
                    )

                if args.pass_ != "both":
                    questions = pack.questions_of(int(args.pass_))[: args.limit]
                    truths = compute_truths(pack, lake, questions)
                    results = run_pass(questions, truths, asker(False), on_result=line(f"p{args.pass_}"))
                    summaries[f"pass {args.pass_}"] = report(f"p{args.pass_}", results, questions)
                    everything += results
                else:
                    first = pack.questions_of(1)[: args.limit]
                    second = pack.questions_of(2)[: args.limit]
                    truths = compute_truths(pack, lake, first + second)
                    cold = run_pass(first, truths, asker(False), on_result=line("p1"))
                    summaries["pass 1 (cold)"] = report("p1", cold, first)
                    print(
                        f"feedback on {give_feedback_on(cold, truths, observer)} answers; learning...",
                        flush=True,
                    )
                    cycle, cursor = learn(store, observer, lake, 0)
                    print(f"  learned: {cycle.counts()}", flush=True)
                    learning = run_pass(
                        second, truths, asker(store), arm="learning", on_result=line("p2 learning")
                    )
                    summaries["pass 2 (learning)"] = report("p2 learning", learning, second)
                    twin = run_pass(second, truths, asker(False), arm="twin", on_result=line("p2 twin"))
                    summaries["pass 2 (twin)"] = report("p2 twin", twin, second)
                    give_feedback_on(learning + twin, truths, observer)
                    cycle, cursor = learn(store, observer, lake, cursor)
                    print(f"  measured: {len(cycle.effects)} lessons; {cycle.counts()}", flush=True)
                    everything += cold + learning + twin
                    lessons = lesson_summary(store, learning)
                    print(f"lessons: {json.dumps(lessons)}", flush=True)
            finally:
                store.close()
                observer.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "model": args.model,
                "pack": str(args.pack),
                "passes": summaries,
                "lessons": lessons,
                "results": [result.model_dump(by_alias=True) for result in everything],
            },
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )
    print(f"results: {out}")


if __name__ == "__main__":
    main()
