"""The report shows what was learned: each learning arm's lessons, and the learning curve with
its intervals, labels that never overlap, a legend never cut and one colour per staffer."""

from __future__ import annotations

import itertools
import json
import re
from html import escape
from pathlib import Path
from xml.etree import ElementTree

import pytest
from test_scenario_metrics import result

from agentlake.learn import LessonStore
from agentlake.learn.effect import effect_rows
from agentlake.learn.store import PgSchema
from agentlake.observe import open_observer
from agentlake.scenarios import load_scenarios
from agentlake.scenarios.metrics import leaderboard_document, learning_curve_points
from agentlake.scenarios.report import (
    learning_curve_svg,
    render_report,
    series_styles,
    spread,
    staffer_colour,
    text_width,
)
from agentlake.scenarios.results import FORMAT_VERSION, arm_schema
from agentlake.scenarios.runner import regenerate_outputs, run_scenarios
from agentlake.scenarios.scorecard import wilson_interval
from agentlake.settings import Settings, load_settings

SVG = "{http://www.w3.org/2000/svg}"
RUN_FILES = ("plan.json", "leaderboard.json")
RUN_LINES = ("results.jsonl", "learning.jsonl")


def test_the_report_lists_the_lessons_each_learning_arm_ended_with(
    learned_run: Path, scenario_settings: Settings
) -> None:
    board = json.loads((learned_run / "leaderboard.json").read_text())
    assert set(board["lessons"]) == {"rules-learning"}, "the static arm learns nothing and has no store"
    listed = board["lessons"]["rules-learning"]
    with LessonStore.open(
        scenario_settings,
        path=learned_run / "lessons" / "rules-learning.duckdb",
        read_only=True,
        embedder=False,
    ) as store:
        stored = {lesson.id: lesson for lesson in store.list()}
        effects = {lesson_id: effect_rows(store, lesson_id) for lesson_id in stored}
    assert stored, "the client refused workers in batch 1: the learner ended with lessons"
    assert {item["id"] for item in listed} == set(stored)
    statuses = [item["status"] for item in listed]
    assert statuses == sorted(statuses, key=lambda s: {"active": 0, "pending": 1}.get(s, 2)), "active first"
    html = (learned_run / "report.html").read_text()
    assert "What each learning arm learned" in html
    for item in listed:
        lesson = stored[item["id"]]
        assert (item["trigger"], item["action"], item["status"]) == (
            lesson.trigger,
            lesson.action,
            lesson.status,
        )
        assert (item["evidence_count"], item["helpful"], item["harmful"]) == (
            lesson.evidence_count,
            lesson.helpful,
            lesson.harmful,
        )
        deltas = [row["delta"] for row in effects[item["id"]]]
        assert item["measured_runs"] == len(deltas)
        if deltas:
            assert item["mean_effect"] == pytest.approx(sum(deltas) / len(deltas), abs=1e-4)
        else:
            assert item["mean_effect"] is None
        # Only batch 1's learning ran before the last batch; batch 2's learning ends the run.
        assert item["learned_after_batch"] in (1, 2)
        row = html[html.index(item["id"]) :].split("</tr>", 1)[0]
        assert escape(f"{lesson.trigger}: {lesson.action}") in row
        assert f"after batch {item['learned_after_batch']}" in row
        assert f'<td class="">{lesson.evidence_count}</td>' in row
        assert f"{lesson.helpful} / {lesson.harmful}" in row
        assert ("not measured" in row) == (not deltas)
    assert any(item["learned_after_batch"] == 1 for item in listed), "batch 1's rejections taught lessons"


def test_the_report_says_its_format_version(learned_run: Path) -> None:
    html = (learned_run / "report.html").read_text()
    assert f'<meta name="agentlake-format-version" content="{FORMAT_VERSION}">' in html


def test_the_report_of_a_run_from_before_the_lessons_list_reads_them_from_its_files(
    learned_run: Path, scenario_settings: Settings
) -> None:
    """A run written before the lessons were listed (and before format versions): `agentlake
    report` finds the lessons in the arms' lesson files."""
    before = json.loads((learned_run / "leaderboard.json").read_text())
    for name in RUN_FILES:
        document = json.loads((learned_run / name).read_text())
        document.pop("format_version")
        document.pop("lessons", None)
        for item in document.get("learning", []):
            item.pop("finished_at", None)
        (learned_run / name).write_text(json.dumps(document))
    for name in RUN_LINES:
        lines = [json.loads(line) for line in (learned_run / name).read_text().splitlines()]
        for line in lines:
            line.pop("format_version")
            line.pop("finished_at", None)
        (learned_run / name).write_text("".join(json.dumps(line) + "\n" for line in lines))
    (learned_run / "report.html").unlink()

    board, report = regenerate_outputs(learned_run, scenario_settings)
    regenerated = json.loads(board.read_text())
    assert regenerated["format_version"] == FORMAT_VERSION
    assert regenerated["leaderboard"] == before["leaderboard"]
    old = {item["id"]: item for item in before["lessons"]["rules-learning"]}
    for item in regenerated["lessons"]["rules-learning"]:
        # Without the learning's times, when a lesson was learned is its timestamp.
        assert item["learned_after_batch"] is None
        assert {k: v for k, v in item.items() if k != "learned_after_batch"} == {
            k: v for k, v in old[item["id"]].items() if k != "learned_after_batch"
        }
    html = report.read_text()
    for lesson_id, item in old.items():
        row = html[html.index(lesson_id) :].split("</tr>", 1)[0]
        assert f"{item['created_at'][:19].replace('T', ' ')} UTC" in row


def test_the_curves_points_carry_wilson_intervals_over_judged_events() -> None:
    results = [result("learner", 1, 1, f"e{i}", 2, 1 if i % 2 else 2) for i in range(24)]
    results += [result("learner", 2, 1, f"e{i}", 2, 2) for i in range(24)]
    (first, second) = learning_curve_points(results)["learner"]
    assert (first.batch, first.events, first.fill_rate) == (1, 24, 0.75)
    expected = wilson_interval(0.75 * 24, 24)
    assert (first.low, first.high) == (round(expected.low, 4), round(expected.high, 4))
    assert first.low < 0.75 < first.high
    assert second.fill_rate == second.high == 1.0
    assert second.low == round(wilson_interval(24, 24).low, 4)
    # The event is the unit: 48 workers in 24 events give the interval of 24 trials, not 48.
    assert first.high - first.low > wilson_interval(36, 48).high - wilson_interval(36, 48).low
    document = leaderboard_document(results)
    assert document["learning_curve_points"]["learner"][0] == first.model_dump()
    html = render_report(results)
    assert "learner batch 1: 75.0% (95% interval" in html
    assert f"{100 * first.low:.0f}-{100 * first.high:.0f}%" in html
    svg = _curve(html)
    assert len(svg.findall(f".//{SVG}path[@class='interval']")) == 2


def _curve(html: str) -> ElementTree.Element:
    found = re.search(r'<svg[^>]*aria-label="Learning curve.*?</svg>', html, re.S)
    assert found, "no learning curve in the report"
    return ElementTree.fromstring(found.group(0))


def _boxes(svg: ElementTree.Element, cls: str) -> list[tuple[float, float, float, float, str]]:
    """(left, top, right, bottom, text) of each text of class ``cls``: its advance width at its
    size, its height the font's ascent and descent (1.17 em in DejaVu Sans, the tallest here)."""
    out = []
    for text in svg.iter(f"{SVG}text"):
        if text.get("class") != cls:
            continue
        size, x, y = float(text.get("font-size")), float(text.get("x")), float(text.get("y"))
        out.append((x, y - 0.93 * size, x + text_width(text.text, size), y + 0.24 * size, text.text))
    return out


def _overlap(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def crowded_results() -> list:
    """Six arms (two sharing a staffer, long names) ending on equal or nearly equal values."""
    arms = {
        "qwen-0.5b-learning": (1, 2, 3),
        "qwen-1.5b-learning": (1, 2, 3),
        "rules-learning": (1, 3, 3),
        "rules-static": (1, 1, 3),
        "a-very-long-staffer-name-for-the-legend": (2, 2, 3),
        "oracle": (3, 3, 3),
    }
    out = []
    for staffer, filled in arms.items():
        for batch, value in enumerate(filled, start=1):
            out.extend(result(staffer, batch, 1, f"e{i}", 3, value if i else 3) for i in range(24))
    out += [
        result("rules-learning", b, 1, f"e{i}", 3, 3, feedback="silent") for b in (1, 2, 3) for i in range(24)
    ]
    return out


def test_point_labels_never_overlap_and_the_legend_is_never_cut() -> None:
    svg = _curve(render_report(crowded_results()))
    labels = _boxes(svg, "point-label")
    legend = _boxes(svg, "legend-label")
    assert len(labels) == len(legend) == 7
    for a, b in itertools.combinations(labels + legend, 2):
        assert not _overlap(a, b), (a, b)
    width, height = float(svg.get("width")), float(svg.get("height"))
    for box in labels + legend:
        assert 0 <= box[0] <= box[2] <= width, box
        assert 0 <= box[1] <= box[3] <= height, box
    assert any(box[4].startswith("a-very-long-staffer-name-for-the-legend (+") for box in legend)


def test_spread_keeps_order_and_gap_even_when_crowded() -> None:
    wanted = [100, 100, 101, 300, 99.5, 0, 10_000]
    placed = spread(wanted, 15, 20, 400)
    ordered = sorted(range(len(wanted)), key=lambda i: (wanted[i], i))
    gaps = [placed[b] - placed[a] for a, b in itertools.pairwise(ordered)]
    assert min(gaps) >= 15 - 1e-9
    assert placed[wanted.index(300)] == 300, "a label with room stays on its point"
    assert 20 <= min(placed) <= max(placed) <= 400


def test_a_staffer_keeps_its_colour_in_every_report() -> None:
    one = render_report([result("my-staffer", 1, 1, "e1", 3, 1), result("rules-static", 1, 1, "e1", 3, 1)])
    other = render_report([result("zeta", 1, 1, "e1", 3, 3), result("my-staffer", 1, 1, "e1", 3, 2)])
    colour = staffer_colour("my-staffer")
    for html in (one, other):
        assert re.search(rf'<polyline [^>]*stroke="{colour}"', html)
        assert f'class="swatch" style="background:{colour}"' in html
    # A profile may pin its colour (the built-in staffers do), and the report takes it from the plan.
    pinned = render_report(
        [result("my-staffer", 1, 1, "e1", 3, 1)],
        plan={"staffers": [{"staffer": "my-staffer", "colour": "#123456"}]},
    )
    assert re.search(r'<polyline [^>]*stroke="#123456"', pinned)


def test_series_of_one_colour_are_told_apart_by_their_dash() -> None:
    styles = series_styles(
        {
            "rules-learning": "rules-learning",
            "rules-learning@silent": "rules-learning",
            "rules-static": "rules-static",
        },
        {"rules-learning": "#0072B2", "rules-static": "#0072B2"},
    )
    assert {colour for colour, _ in styles.values()} == {"#0072B2"}
    assert len({dash for _, dash in styles.values()}) == 3
    assert styles["rules-learning"][1] == "", "the first of a colour is solid"
    svg = learning_curve_svg(learning_curve_points(crowded_results()), [1, 2, 3])
    assert 'stroke-dasharray="' in svg, "rules-learning@silent is dashed beside rules-learning"


def test_an_arm_whose_lessons_live_in_postgresql_lists_them_too(
    scenario_settings: Settings, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTLAKE_DATABASE_URL", database_url)
    settings = load_settings(runs_dir=str(scenario_settings.runs_dir))
    observer = open_observer(settings)
    try:
        summary = run_scenarios(
            [s for s in load_scenarios("builtin") if s.client.id == "riverfront-steel"][:1],
            ["rules-learning"],
            batches=2,
            settings=settings,
            observer=observer,
            run_id="pg",
        )
    finally:
        observer.close()
    where = PgSchema(name=arm_schema("pg", "rules-learning"))
    with LessonStore.open(settings, path=where, read_only=True, embedder=False) as store:
        stored = {lesson.id for lesson in store.list()}
    assert stored
    assert {lesson.id for lesson in summary.lessons["rules-learning"]} == stored
    html = (summary.run_dir / "report.html").read_text()
    assert all(lesson_id in html for lesson_id in stored)
