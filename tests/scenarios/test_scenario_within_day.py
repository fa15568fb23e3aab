"""Learning within the day: the morning's refusals shape the afternoon's fills."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentlake.errors import UserError
from agentlake.learn import LessonStore
from agentlake.scenarios import load_scenarios, read_results
from agentlake.scenarios.day import DayResult, DayTask, run_day
from agentlake.scenarios.profile import StafferProfile, load_profile, parse_profile
from agentlake.scenarios.runner import run_scenarios
from agentlake.settings import Settings
from agentlake.workforce.learning import action_of


def _riverfront():  # a Scenario
    return next(s for s in load_scenarios("builtin") if s.scenario == "riverfront-steel-day1")


def _day(settings: Settings, profile: StafferProfile, mode: str, lessons: Path) -> DayResult:
    task = DayTask(
        run_id="wd",
        batch=1,
        repetition=1,
        scenario=_riverfront(),
        profile=profile,
        settings=settings,
        lake_path=str(settings.lake_path),
        lessons_path=str(lessons),
        feedback=mode,
    )
    return run_day(task)


@pytest.mark.parametrize("mode", ["explicit", "silent"])
def test_later_events_of_the_day_use_what_the_morning_taught(
    scenario_settings: Settings, tmp_path: Path, mode: str
) -> None:
    learner = load_profile("rules-learning")
    assert learner.learn_within_day
    store = tmp_path / "rules-learning.duckdb"  # not learned yet: batch 1
    within = _day(scenario_settings, learner, mode, store)
    later = _day(scenario_settings, learner.model_copy(update={"learn_within_day": False}), mode, store)
    assert within.results[0].lessons_given == [], "nothing is known before the first judgement"
    assert any(r.lessons_given for r in within.results[1:])
    assert not any(r.lessons_given for r in later.results)
    assert not store.exists(), "the day learns into its private copy; the parent owns the store"


def test_the_afternoon_fills_better_for_the_morning_s_refusals(
    scenario_settings: Settings, tmp_path: Path
) -> None:
    """Explicit feedback: the 12:15 laborers are refused for want of OSHA 10; the 14:00
    emergency then places a welder's spare only if the spare holds it (kept at 08:00, before
    anyone knew), so it is filled with learning within the day and refused without."""
    learner = load_profile("rules-learning")
    store = tmp_path / "rules-learning.duckdb"
    within = _day(scenario_settings, learner, "explicit", store)
    later = _day(scenario_settings, learner.model_copy(update={"learn_within_day": False}), "explicit", store)
    assert sum(r.filled for r in within.results) > sum(r.filled for r in later.results)
    emergency = next(r for r in within.results if r.kind == "emergency")
    assert emergency.rejections == []


def test_the_parent_learns_the_same_ops_between_batches(scenario_settings: Settings, observer) -> None:
    summary = run_scenarios(
        [_riverfront()],
        ["rules-learning"],
        batches=1,
        feedback="silent",
        settings=scenario_settings,
        observer=observer,
        run_id="wd-run",
    )
    with LessonStore.open(
        scenario_settings, path=summary.run_dir / "lessons" / "rules-learning@silent.duckdb", embedder=False
    ) as store:
        induced = [lesson for lesson in store.list(source="induction") if lesson.status == "active"]
    refused = {x.worker_id for r in read_results(summary.run_dir) for x in r.rejections}
    assert refused, "riverfront-steel refuses workers on its first day"
    # One day of silence is too little evidence for a rule (p > 0.02): the refused are left out by id.
    (lesson,) = induced
    assert set(action_of(lesson).exclude_ids) == refused


def test_learning_within_the_day_needs_learning() -> None:
    with pytest.raises(UserError, match="learn_within_day: true needs learning: true"):
        parse_profile(
            {"staffer": "x", "policy": "rules", "lessons": True, "learning": False, "learn_within_day": True}
        )
