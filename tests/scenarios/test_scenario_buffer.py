"""The emergency buffer: an earlier event's spares are handed to the emergency that replaces its
no-shows, and the rules policy places those that still verify before it searches."""

from __future__ import annotations

from datetime import datetime

from agentlake.settings import Settings

SHIFT = (datetime(2026, 4, 21, 8), datetime(2026, 4, 21, 16))


def _order(count: int, **extra):
    from agentlake.agents import FillOrder

    return FillOrder(
        role="Welder",
        count=count,
        city="Cleveland",
        state="OH",
        client_id="riverfront-steel",
        shift_start=SHIFT[0],
        shift_end=SHIFT[1],
        task_kind="emergency",
        **extra,
    )


def test_the_rules_policy_places_verified_buffer_candidates_before_searching(
    scenario_settings: Settings,
    observer,
) -> None:
    from agentlake.agents import Booking, RulesPolicy, RunContext, ScheduleBook
    from agentlake.lake import Lake

    with Lake.open(scenario_settings, read_only=True) as lake:

        def run(order, buffer, schedule=None):
            ctx = RunContext(
                lake=lake,
                schedule=schedule or ScheduleBook(lake),
                observer=observer,
                rescue=False,
                buffer=buffer,
            )
            return RulesPolicy(spares=4).run(order, ctx)

        plain = run(_order(2), [])
        assert plain.success
        assert len(plain.candidates) == 4
        top, spares = plain.proposed, plain.candidates
        assert not any(step.kind == "buffer" for step in plain.transcript)

        # Handed the two lowest-ranked spares, it places them rather than the search's top two.
        held = run(_order(2), spares[2:])
        assert held.success
        assert held.proposed == spares[2:]
        assert held.proposed != top
        assert any(step.kind == "buffer" and "2 of 2" in step.summary for step in held.transcript)

        # A held worker booked since, or excluded by the order, is skipped; the search fills the rest.
        schedule = ScheduleBook(lake)
        schedule.add(Booking(worker_id=spares[0], start=SHIFT[0], end=SHIFT[1], client_id="acme"))
        mixed = run(_order(3, exclude_worker_ids=[spares[1]]), spares, schedule)
        assert mixed.success
        assert mixed.proposed[:2] == spares[2:]
        assert spares[0] not in mixed.proposed
        assert spares[1] not in mixed.proposed
        assert mixed.proposed[2] not in spares


def test_an_emergency_is_handed_the_earlier_events_buffer_less_anyone_placed_there() -> None:
    from agentlake.scenarios import load_scenarios
    from agentlake.scenarios.day import DayLedger, plan_event

    day = next(s for s in load_scenarios("builtin") if any(e.kind == "emergency" for e in s.events))
    emergency = next(e for e in day.events if e.kind == "emergency")
    ledger = DayLedger()
    for event in day.events:
        if event.id == emergency.id:
            break
        planned = plan_event(day, event, ledger)
        ledger.orders[event.id] = planned.order
        ledger.placed[event.id] = [100 + i for i in range(event.count or 1)]
        ledger.ever_placed[event.id] = set(ledger.placed[event.id])
        ledger.buffers[event.id] = [900, 100, 901]
    planned = plan_event(day, emergency, ledger)
    assert planned.buffer == [900, 901], "spares handed over, a worker placed on that event is not"
    assert planned.removed
    assert set(planned.removed) <= ledger.ever_placed[emergency.ref]
    first = plan_event(day, day.events[0], DayLedger())
    assert first.buffer == [], "only replacements are handed a buffer"
