"""How often ``agentlake ask`` answers plain questions over a user's own tables right.

Builds a lake from the ask question pack (``benchmarks/ask_pack/pack.yaml``: seven public CSVs
installed by ``make ask-pack`` and the shop's three messy ones) in a temporary directory, computes
each question's truth from its SQL, then asks each question of a pass with
``agentlake.agents.ask.ask`` and judges the written answer (``agentlake.questions.judge``: a
number within the question's tolerance and no other number beside it; text as a whole word).
Pass 1 and pass 2 ask different questions of the same shape over the same tables.

Printed per pass: right / wrong / errors (``ask`` raised, or answered with no evidence),
accuracy (right over all asked), mean seconds a question, and accuracy per tag. Written to
``--out`` (JSON): the summary per pass and, per question, id, pass, question, expected, answer,
route, sql, right, error, judged (why), seconds.

Usage: ``.venv/bin/python benchmarks/bench_ask.py [--model local:qwen2.5-coder-1.5b]
[--pass 1|2|both] [--limit N] [--out FILE]``
"""

from __future__ import annotations

import argparse
import json
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
    question: str
    expected: float | str
    answer: str | None = None
    route: str | None = None
    sql: str | None = None
    right: bool = False
    error: str | None = None
    judged: str | None = None
    seconds: float


def run_pass(
    questions: list[Question], truths: dict[str, Truth], ask: Callable[[str], Any]
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
            id=question.id, pass_=question.pass_, question=question.text, expected=truth.value, seconds=0.0
        )
        started = time.perf_counter()
        try:
            answer = ask(question.text)
        except UnavailableError:
            raise
        except Exception as exc:  # noqa: BLE001 - one question's failure is a measured error
            result.error = f"{type(exc).__name__}: {exc}"
        else:
            result.answer, result.route, result.sql = answer.answer, answer.route, answer.sql
            if not answer.sources:
                result.error = "no evidence: the answer cites nothing that ran"
            else:
                judgement = truth.judge(answer.answer)
                result.right, result.judged = judgement.right, judgement.reason
        result.seconds = round(time.perf_counter() - started, 3)
        results.append(result)
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
    from agentlake.questions.pack import build_lake, compute_truths, load_pack

    pack = load_pack(args.pack)
    passes = [1, 2] if args.pass_ == "both" else [int(args.pass_)]
    root = Path(tempfile.mkdtemp(prefix="bench-ask-"))
    summaries: dict[str, Any] = {}
    everything: list[QuestionResult] = []
    try:
        started = time.perf_counter()
        with build_lake(pack, root) as lake:
            print(
                f"lake: {len(pack.datasets)} datasets in {time.perf_counter() - started:.1f} s; model {args.model}"
            )
            for pass_ in passes:
                questions = pack.questions_of(pass_)[: args.limit]
                truths = compute_truths(pack, lake, questions)
                results = run_pass(questions, truths, lambda text: ask(text, lake=lake, model=args.model))
                for result in results:
                    verdict = "ERROR" if result.error else "right" if result.right else "wrong"
                    said = (result.error or result.answer or "").replace("\n", " ")[:90]
                    print(f"  p{pass_} {result.id:32s} {verdict:5s} {result.seconds:6.1f}s  {said}")
                summary = summarize(results)
                summaries[str(pass_)] = summary
                everything += results
                print(
                    f"pass {pass_}: {summary['right']} right / {summary['wrong']} wrong / "
                    f"{summary['errors']} errors of {summary['asked']}, accuracy "
                    f"{100 * summary['accuracy']:.1f}%, {summary['mean_seconds']:.1f} s a question"
                )
                tags = by_tag(results, {q.id: q for q in questions})
                print("  by tag: " + ", ".join(f"{tag} {r}/{n}" for tag, (r, n) in tags.items()))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "model": args.model,
                "pack": str(args.pack),
                "passes": summaries,
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
