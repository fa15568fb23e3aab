"""The overseer tier: concerns per completed event, pending cross-day lessons at the end of a day."""

from __future__ import annotations

from datetime import timedelta

from agentlake.agents import FillOrder, Overseer, RulesPolicy, ScheduleBook
from agentlake.workforce.learning import action_of


def test_concerns_double_booking_across_events_thin_buffer_and_drift(make_ctx, lake, sink) -> None:
    schedule = ScheduleBook(lake)
    morning = FillOrder.parse(
        "3 x Warehouse Associate in New York, NY for Riverfront Steel at 08:00 on 2026-04-22 with osha10"
    )
    noon = morning.model_copy(
        update={
            "shift_start": morning.shift_start + timedelta(hours=4),
            "shift_end": morning.shift_end + timedelta(hours=4),
            "event_id": "noon",
        }
    )
    policy = RulesPolicy(spares=0)

    first = policy.run(
        morning.model_copy(update={"event_id": "morning"}), make_ctx(schedule=schedule, overseer=True)
    )
    second = policy.run(noon, make_ctx(schedule=schedule, overseer=True))

    kinds_first = {c.kind for c in first.concerns}
    assert "double_booking" not in kinds_first
    assert "thin_buffer" in kinds_first
    double = [c for c in second.concerns if c.kind == "double_booking"]
    # Nobody booked the morning's workers (no judge here), so the rules policy proposed them again.
    assert {c.worker_ids[0] for c in double} == set(first.proposed) & set(second.proposed) != set()
    assert all("also proposed for event morning" in c.message for c in double)
    drift = [c for c in first.concerns if c.kind == "certification_drift"]
    assert drift
    assert "OSHA 10 matched only through other spellings on file" in drift[0].message
    assert any(r.agent == "overseer" for r in second.transcript)
    ops = sink.endpoint("overseer.concern")
    assert len(ops) == len(first.concerns) + len(second.concerns)
    assert not ops[0].success
    assert Overseer.for_day(schedule).outcomes == [first, second]
    assert Overseer.for_day(ScheduleBook(lake)).outcomes == []  # another day, another overseer


def test_end_of_day_proposes_pending_cross_day_lessons(make_ctx, lake, tmp_path) -> None:
    from agentlake.learn import LessonStore

    store = LessonStore.open(path=tmp_path / "lessons.duckdb", embedder=False)
    schedule = ScheduleBook(lake)
    policy = RulesPolicy(spares=0)
    base = FillOrder.parse(
        "4 x Warehouse Associate in New York, NY for Riverfront Steel at 08:00 on 2026-04-22"
    )
    for hour, kind in ((0, "baseline_fill"), (24, "recurring")):
        order = base.model_copy(
            update={
                "shift_start": base.shift_start + timedelta(hours=hour),
                "shift_end": base.shift_end + timedelta(hours=hour),
                "task_kind": kind,
                "event_id": f"e{hour}",
            }
        )
        policy.run(order, make_ctx(schedule=schedule, overseer=True))
    short = FillOrder.parse(
        "3 x Welder in New York, NY for Riverfront Steel within 3 miles", task_kind="emergency"
    )
    policy.run(short, make_ctx(schedule=schedule, overseer=True))
    overseer = Overseer.for_day(schedule)

    applied = overseer.end_of_day(make_ctx(schedule=schedule, lessons=store))

    assert [a.outcome for a in applied] == ["added", "added"]
    lessons = {lesson.id: lesson for lesson in store.list(status="pending")}
    assert {lesson.source for lesson in lessons.values()} == {"overseer"}
    by_role = {lesson.match.get("role"): lesson for lesson in lessons.values()}
    assert action_of(by_role["Warehouse Associate"]).min_candidate_buffer == 2
    assert action_of(by_role["Welder"]).min_candidate_buffer == 3
    assert by_role["Welder"].match.get("client_id") == "riverfront-steel"
    assert overseer.end_of_day(make_ctx(schedule=schedule)) == []  # no store, nothing proposed
    store.close()
