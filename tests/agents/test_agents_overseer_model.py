"""The overseer tier backed by a model (overseer_model): off by default; when set, its drafts
are proposed pending beside the code overseer's; a failing model costs nothing but the advice."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from agentlake.agents import FillOrder, Overseer, RulesPolicy, ScheduleBook
from agentlake.llm import ScriptedProvider, register_scripted, unregister_scripted


def _day(make_ctx, lake):
    schedule = ScheduleBook(lake)
    policy = RulesPolicy(spares=0)
    base = FillOrder.parse("2 x Welder in New York, NY for Riverfront Steel at 08:00 on 2026-04-22")
    for hour in (0, 24):
        order = base.model_copy(
            update={
                "shift_start": base.shift_start + timedelta(hours=hour),
                "shift_end": base.shift_end + timedelta(hours=hour),
                "event_id": f"e{hour}",
            }
        )
        policy.run(order, make_ctx(schedule=schedule, overseer=True))
    return schedule


@pytest.fixture
def store(tmp_path):
    from agentlake.learn import LessonStore

    store = LessonStore.open(path=tmp_path / "lessons.duckdb", embedder=False)
    yield store
    store.close()


@pytest.fixture
def model():
    provider = ScriptedProvider("overseer", context_window=32768)
    register_scripted("overseer", provider)
    yield provider
    unregister_scripted("overseer")


def test_the_models_drafts_are_proposed_pending_beside_the_code_overseers(
    make_ctx, lake, store, model
) -> None:
    from agentlake.settings import load_settings

    schedule = _day(make_ctx, lake)
    idea = {
        "trigger": "welders for Riverfront Steel",
        "action": "keep two spares AWS-certified",
        "role": "Welder",
        "client_id": "riverfront-steel",
    }
    model.enqueue(json.dumps({"lessons": [idea]}))
    settings = load_settings(overseer_model="scripted:overseer")

    Overseer.for_day(schedule).end_of_day(make_ctx(schedule=schedule, lessons=store, settings=settings))

    drafted = [lesson for lesson in store.list(status="pending") if lesson.action == idea["action"]]
    assert len(drafted) == 1
    assert (drafted[0].source, drafted[0].match.get("role")) == ("overseer", "Welder")
    prompt = model.history[-1][0][-1].content
    assert "2 x Welder for riverfront-steel" in prompt


def test_no_model_is_called_by_default(make_ctx, lake, store, model) -> None:
    schedule = _day(make_ctx, lake)
    Overseer.for_day(schedule).end_of_day(make_ctx(schedule=schedule, lessons=store))
    assert model.calls == 0


def test_a_failing_model_costs_only_its_advice(make_ctx, lake, store, model) -> None:
    from agentlake.settings import load_settings

    schedule = _day(make_ctx, lake)
    model.enqueue("not json at all")
    model.enqueue("still not json")
    settings = load_settings(overseer_model="scripted:overseer")
    applied = Overseer.for_day(schedule).end_of_day(
        make_ctx(schedule=schedule, lessons=store, settings=settings)
    )
    assert model.calls == 2  # the reply and one schema retry
    assert all(lesson.action != "not json at all" for lesson in store.list(status="pending"))
    assert isinstance(applied, list)


def test_a_staffer_profiles_overseer_model_reaches_the_overseer(make_ctx, lake, model) -> None:
    from types import SimpleNamespace

    from agentlake.scenarios.day import _overseer_end_of_day
    from agentlake.scenarios.profile import StafferProfile
    from agentlake.settings import load_settings

    schedule = _day(make_ctx, lake)
    model.enqueue(json.dumps({"lessons": [{"trigger": "welders", "action": "keep a spare welder"}]}))
    profile = StafferProfile(
        staffer="full-t3", policy="llm", overseer=True, models={"overseer": "scripted:overseer"}
    )
    settings = load_settings()  # no overseer_model: the profile's own model must be the one called
    task = SimpleNamespace(profile=profile, settings=settings)

    deltas = _overseer_end_of_day(task, schedule, make_ctx(schedule=schedule, settings=settings))

    assert model.calls == 1
    assert [d.lesson.action for d in deltas if d.reason.startswith("overseer model")] == [
        "keep a spare welder"
    ]
