"""Metrics, leaderboard, A/B scorecard and the offline report, over hand-made event results."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from agentlake.errors import UserError
from agentlake.scenarios import EventResult, compare, compute_metrics, leaderboard, leaderboard_document
from agentlake.scenarios.judge import ClientRejection
from agentlake.scenarios.metrics import learning_curve, pass_at_k, score
from agentlake.scenarios.report import render_report
from agentlake.scenarios.scorecard import wilson_interval


def result(
    staffer: str, batch: int, rep: int, event: str, requested: int, filled: int, **extra: object
) -> EventResult:
    rejected = requested - filled
    return EventResult(
        run_id="r1",
        staffer=staffer,
        batch=batch,
        scenario=extra.pop("scenario", "acme-day1"),  # type: ignore[arg-type]
        client_id="acme",
        repetition=rep,
        event_id=event,
        kind="baseline_fill",
        at="08:00",
        role="Welder",
        city="Cleveland",
        state="OH",
        requested=requested,
        filled=filled,
        success=filled == requested,
        accepted=list(range(filled)),
        rejections=[
            ClientRejection(
                worker_id=100 + i, reason="no OSHA 30 on file; site policy", rule="required_certification"
            )
            for i in range(rejected)
        ],
        **extra,
    )


def test_fill_rate_pass_k_and_score() -> None:
    results = [
        result("s", 1, 1, "e1", 3, 3, lessons_cited=["L-1"]),
        result("s", 1, 2, "e1", 3, 2),  # e1 fails in one repetition: pass^k says unsolved
        result("s", 1, 1, "e2", 2, 2, turns=4, input_tokens=100, output_tokens=20, latency_ms=50),
        result("s", 1, 2, "e2", 2, 2, turns=2, input_tokens=100, output_tokens=20, latency_ms=150),
    ]
    m = compute_metrics(results, staffer="s", batch=1)
    assert m.requested == 10
    assert m.filled == 9
    assert m.fill_rate == 0.9
    assert (m.pass_k, m.pass_k_events) == (0.5, 2)
    assert m.event_success_rate == 0.75
    assert m.days == 2
    assert m.citations_per_run == 0.5
    assert m.turns_per_event == 1.5
    assert m.tokens_per_event == 60
    assert m.latency_ms_mean == 50
    assert m.precision == 0.9
    assert m.score == score(0.9, 0.5, 0.9) == pytest.approx(100 * (0.6 * 0.9 + 0.3 * 0.5 + 0.1 * 0.9))
    assert pass_at_k([]) == (0.0, 0)


def test_leaderboard_ranks_by_score_and_shows_gain() -> None:
    results = []
    for batch, filled in ((1, 1), (2, 2), (3, 3)):
        results.append(result("learner", batch, 1, "e1", 3, filled))
        results.append(result("static", batch, 1, "e1", 3, 1))
    board = leaderboard(results)
    assert [row.metrics.staffer for row in board] == ["learner", "static"]
    assert board[0].gain_points == pytest.approx(66.7, abs=0.1)
    assert board[1].gain_points == 0
    assert learning_curve(results) == {"learner": [0.3333, 0.6667, 1.0], "static": [0.3333, 0.3333, 0.3333]}
    last = leaderboard(results, batch=3)
    assert last[0].metrics.fill_rate == 1.0
    assert last[0].metrics.batch == 3
    doc = leaderboard_document(results, run_id="r1")
    json.dumps(doc)
    assert doc["leaderboard"][0]["staffer"] == "learner"
    assert len(doc["per_batch"]) == 6
    assert doc["events"][0]["rejections_by_rule"] == {"required_certification": 2}


def test_wilson_interval_known_values() -> None:
    ci = wilson_interval(8, 10)
    assert ci.low == pytest.approx(0.4902, abs=1e-3)
    assert ci.high == pytest.approx(0.9433, abs=1e-3)
    assert wilson_interval(0, 0).low == 0
    assert wilson_interval(0, 0).high == 1


def test_scorecard_detects_a_real_difference_and_not_a_fake_one() -> None:
    good, bad, same = [], [], []
    for rep in range(1, 4):
        for e in range(12):
            good.append(result("good", 1, rep, f"e{e}", 3, 3))
            bad.append(result("bad", 1, rep, f"e{e}", 3, 1 if e % 3 else 3))
            same.append(result("same", 1, rep, f"e{e}", 3, 3))
    card = compare(good + bad + same, "bad", "good")
    assert card.paired
    assert card.a_events == 36
    fill = next(r for r in card.rows if r.metric == "fill_rate")
    assert fill.diff == pytest.approx(1 - (8 * 1 + 4 * 3) / 36, abs=1e-6)
    assert fill.diff_ci.low > 0
    assert fill.verdict == "good better"
    tie = next(r for r in compare(good + same, "good", "same").rows if r.metric == "fill_rate")
    assert tie.diff == 0
    assert tie.verdict == "no clear difference"
    assert [r.metric for r in card.rows][:3] == ["fill_rate", "event_success_rate", "pass_k"]
    with pytest.raises(UserError, match="no results for staffer 'nobody'; this run has bad, good, same"):
        compare(good + bad + same, "nobody", "good")


def test_report_is_self_contained_and_shows_the_numbers(tmp_path: Path) -> None:
    results = []
    for batch, filled in ((1, 1), (2, 2), (3, 3)):
        results.append(result("rules-learning", batch, 1, "e1", 3, filled))
        results.append(result("rules-static", batch, 1, "e1", 3, 1))
    html = render_report(results, plan={"run_id": "r1", "backend": "inline"})
    assert "<script" not in html
    assert "http://" not in html.replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in html
    # The learning curve's points carry the per-batch fill rates.
    assert re.search(r"rules-learning batch 1: 33\.3%", html)
    assert "rules-learning batch 3: 100.0%" in html
    assert "rules-learning (+67 pts)" in html
    assert "rules-static (+0 pts)" in html
    assert "1/3" in html
    assert "3/3" in html
    assert "required_certification" in html
