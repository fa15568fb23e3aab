"""Days run at once (``agentlake run --concurrency N``): the same fills, the same lessons, the
same resume, and a task that fails fails alone."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from scenarios_support import approver, lesson_follower

from agentlake.errors import RunError, UserError
from agentlake.learn import read_ops
from agentlake.llm.provider import ProviderTimeoutError
from agentlake.scenarios import StafferProfile, load_scenarios, read_results
from agentlake.scenarios.concurrency import choose_concurrency, day_order, default_concurrency, memory_cap
from agentlake.scenarios.runner import RunSummary, run_scenarios
from agentlake.settings import Settings

# Four days of four clients, 18 events a batch per staffer: small, and every kind of event.
DAYS = (
    "eagle-container-day1",
    "tri-county-container-day1",
    "riverfront-steel-day1",
    "pacific-hospital-day1",
)


def _days() -> list[Any]:
    return [s for s in load_scenarios("builtin") if s.scenario in DAYS]


@pytest.fixture
def scripted_llm() -> Iterator[StafferProfile]:
    """A learning LLM staffer on function providers (the reply is a function of the prompt, so
    it does not depend on which day asks first)."""
    from agentlake.llm import FunctionProvider, register_scripted, unregister_scripted

    register_scripted("lesson-follower", FunctionProvider(lesson_follower, "lesson-follower"))
    register_scripted("approver", FunctionProvider(approver, "approver"))
    try:
        yield StafferProfile(
            staffer="scripted-llm",
            policy="llm",
            models={"executor": "function:lesson-follower", "reviewer": "function:approver"},
            rescue=False,
        )
    finally:
        unregister_scripted("lesson-follower")
        unregister_scripted("approver")


def _fills(summary: RunSummary) -> dict[tuple, tuple]:
    """The fills of the run ``summary`` tells of (``_fills_of`` its results)."""
    return _fills_of(read_results(summary.run_dir))


def _fills_of(results: list[Any]) -> dict[tuple, tuple]:
    """Event for event: what was proposed, accepted and filled, and the lessons given and cited."""
    return {
        (r.arm, r.batch, r.scenario, r.repetition, r.event_id): (
            r.filled,
            r.proposed,
            r.accepted,
            r.lessons_given,
            r.lessons_cited,
        )
        for r in results
    }


def _lessons(summary: RunSummary) -> dict[str, list[tuple]]:
    return {
        arm: [
            (x.id, x.trigger, x.action, x.status, x.confidence, x.evidence_count, x.learned_after_batch)
            for x in lessons
        ]
        for arm, lessons in summary.lessons.items()
    }


def _ops_per_event(observer: Any, run_id: str) -> Counter[tuple[str | None, str]]:
    return Counter(
        (op.run_id.split(":", 1)[1], op.endpoint) for op in read_ops(observer, run_id=f"{run_id}:*")
    )


@pytest.mark.slow
def test_four_days_at_once_fill_and_learn_as_one_at_a_time(
    scenario_settings: Settings, observer: Any, scripted_llm: StafferProfile
) -> None:
    run = partial(
        run_scenarios,
        _days(),
        ["rules-learning", scripted_llm],
        batches=2,
        settings=scenario_settings,
        observer=observer,
    )
    one = run(run_id="one", concurrency=1)
    four = run(run_id="four", concurrency=4)
    assert _fills(four) == _fills(one)
    assert list(_fills(four)) == list(_fills(one)), "results are written in the same order"
    assert _lessons(four) == _lessons(one)
    assert all(_lessons(one).values()), "both arms learned something to compare"
    assert four.learning_curve == one.learning_curve
    # Each day recorded its own ops only: a day's observer never took another day's model calls.
    assert _ops_per_event(observer, "four") == _ops_per_event(observer, "one")
    assert len(read_results(four.run_dir)) == 2 * 2 * sum(len(s.events) for s in _days())


class _Interrupted(Exception):
    """Stands for the crash or kill that stops a run between two days."""


@pytest.mark.slow
def test_a_run_of_days_at_once_resumes_where_it_stopped(scenario_settings: Settings, observer: Any) -> None:
    run = partial(
        run_scenarios,
        _days(),
        ["rules-learning", "rules-static"],
        batches=3,
        settings=scenario_settings,
        observer=observer,
    )
    whole = run(run_id="whole", concurrency=1)

    def stop_in_batch_2(p: Any) -> None:  # a runner.Progress
        if p.batch == 2 and p.done == 3:
            raise _Interrupted

    with pytest.raises(_Interrupted):
        run(run_id="cut", concurrency=4, on_progress=stop_in_batch_2)
    assert sum(r.batch == 2 for r in read_results(scenario_settings.runs_dir / "cut")) > 0
    ran: list[tuple[int, str]] = []
    resumed = run(
        run_id="cut", concurrency=4, resume=True, on_progress=lambda p: ran.append((p.batch, p.scenario))
    )
    # 8 days a batch: batch 1 and 3 of batch 2 had landed (the days under way when it stopped
    # finished, but only what was handed back in order was written), so 13 days were left.
    assert len(ran) == 13
    assert _fills(resumed) == _fills(whole)
    assert _lessons(resumed) == _lessons(whole)
    assert [(x.staffer, x.batch) for x in resumed.learning] == [("rules-learning", b) for b in (1, 2, 3)]


# The client whose tasks the tests below break: the other days go on as if nothing happened.
BROKEN_CLIENT = "tri-county-container"


def _with_a_client_broken(
    run: Callable[..., RunSummary], breaking: Callable[[], object]
) -> tuple[dict[tuple, tuple], list[Any], list[Any]]:
    """``run`` with four days at once, as a reference, then again (run ``broken``) after
    ``breaking`` broke ``BROKEN_CLIENT``'s tasks: the reference's fills, the broken run's
    results and those of them that are ``BROKEN_CLIENT``'s."""
    reference = _fills(run(run_id="reference", concurrency=4))
    breaking()
    results = read_results(run(run_id="broken", concurrency=4).run_dir)
    return reference, results, [r for r in results if r.client_id == BROKEN_CLIENT]


def _timing_out_for(client: str, follower: Any) -> Any:
    """The lesson follower, except that every reply about an order of ``client`` times out."""

    def reply(messages: list[Any], options: Any) -> str:
        if any(f"for client {client}" in message.content for message in messages):
            raise ProviderTimeoutError(f"the reply took longer than its timeout of {1:g} s", timeout_s=1.0)
        return follower(messages, options)

    return reply


@pytest.mark.slow
def test_a_task_that_times_out_among_days_at_once_fails_alone(
    scenario_settings: Settings, observer: Any, scripted_llm: StafferProfile
) -> None:
    from agentlake.llm import FunctionProvider, register_scripted

    # The provider's circuit breaker is the process's, over every day at once: a model that keeps
    # timing out is opened for all of them after llm_breaker_failures in a row (which under load
    # can be one day's calls alone). Here it stays closed, so what is measured is the task.
    settings = scenario_settings.model_copy(update={"llm_breaker_failures": 1000})
    run = partial(run_scenarios, _days(), [scripted_llm], settings=settings, observer=observer, batches=1)
    slow = FunctionProvider(_timing_out_for(BROKEN_CLIENT, lesson_follower), "slow")
    reference, results, failed = _with_a_client_broken(
        run, lambda: register_scripted("lesson-follower", slow)
    )
    assert failed
    assert not any(r.filled for r in failed)
    assert all("timeout" in (r.failure_reason or "") for r in failed)
    others = {k: v for k, v in _fills_of(results).items() if k[2] != failed[0].scenario}
    assert others == {k: v for k, v in reference.items() if k[2] != failed[0].scenario}
    # Its transcript is kept: the model calls that timed out are in the observer, failed.
    calls = read_ops(observer, run_id=f"broken:scripted-llm:b1:{failed[0].scenario}:*", endpoint="llm.*")
    assert calls
    assert not any(op.success for op in calls)


@pytest.mark.slow
def test_a_staffer_that_raises_fails_its_task_and_the_day_goes_on(
    scenario_settings: Settings, observer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentlake.agents.rules import RulesPolicy

    run = partial(
        run_scenarios, _days(), ["rules-static"], settings=scenario_settings, observer=observer, batches=1
    )
    original = RulesPolicy.run

    def broken(self: Any, order: Any, ctx: Any) -> Any:
        if order.client_id == BROKEN_CLIENT:
            raise ZeroDivisionError("a bug in one task")
        return original(self, order, ctx)

    reference, results, failed = _with_a_client_broken(
        run, lambda: monkeypatch.setattr(RulesPolicy, "run", broken)
    )
    assert failed
    assert all(r.error == "ZeroDivisionError: a bug in one task" for r in failed)
    assert len(results) == sum(len(s.events) for s in _days()), "every event was judged"
    fine = {
        (r.arm, r.batch, r.scenario, r.repetition, r.event_id)
        for r in results
        if r.client_id != BROKEN_CLIENT
    }
    assert {k: reference[k] for k in fine} == {k: v for k, v in _fills_of(results).items() if k in fine}


def test_a_day_that_crashes_stops_no_other_and_is_the_one_a_resume_runs(
    scenario_settings: Settings, observer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import agentlake.scenarios.backends as backends

    days = _days()
    run_day = backends.run_day

    def crashing(task: Any, **kwargs: Any) -> Any:
        if task.scenario.scenario == days[1].scenario:
            raise KeyError("lost")
        return run_day(task, **kwargs)

    monkeypatch.setattr(backends, "run_day", crashing)
    run = partial(run_scenarios, days, ["rules-static"], settings=scenario_settings, observer=observer)
    with pytest.raises(
        RunError, match=rf"scenario day {days[1].scenario} r1 of rules-static \(batch 1\) failed: KeyError"
    ):
        run(run_id="crash", concurrency=4, batches=1)
    landed = {r.scenario for r in read_results(scenario_settings.runs_dir / "crash")}
    assert landed == {s.scenario for s in days} - {days[1].scenario}
    monkeypatch.setattr(backends, "run_day", run_day)
    ran: list[str] = []
    run(run_id="crash", concurrency=4, batches=1, resume=True, on_progress=lambda p: ran.append(p.scenario))
    assert ran == [days[1].scenario]


def test_a_batch_is_learned_day_by_day_in_the_order_planned() -> None:
    from agentlake.observe.model import ObservedOp

    prefix = "run:arm:b2:"
    planned = [("day-a", 1), ("day-b", 1), ("day-a", 2)]
    ran = [  # three days at once: their ops interleave in time
        ("day-a:r2:e1", "x1"),
        ("day-b:r1:e1", "y1"),
        ("day-a:r1:e1", "z1"),
        ("day-a:r2:e2", "x2"),
        ("day-a:r1:e2", "z2"),
        ("day-b:r1:e2", "y2"),
    ]
    ops = [ObservedOp(endpoint=endpoint, source="scenario", run_id=prefix + day) for day, endpoint in ran]
    learned = sorted(ops, key=day_order(prefix, planned))
    assert [op.endpoint for op in learned] == ["z1", "z2", "y1", "y2", "x1", "x2"]


def test_the_default_concurrency_comes_from_the_cores_and_the_staffers(scenario_settings: Settings) -> None:
    rules = [StafferProfile(staffer="r", policy="rules")]
    model = [*rules, StafferProfile(staffer="m", policy="llm", models={"executor": "ollama:qwen3:4b"})]
    assert default_concurrency(rules, scenario_settings, cores=2) == 2
    assert default_concurrency(model, scenario_settings, cores=2) == 4
    assert default_concurrency(model, scenario_settings, cores=32) == 8
    assert choose_concurrency(None, model, scenario_settings, backend="process").days == 1


def test_a_concurrency_memory_cannot_hold_is_capped_with_a_note(
    scenario_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    import agentlake.llm.local.engines as engines

    gib = 1024**3
    monkeypatch.setattr(engines, "reply_memory", lambda packaged, settings: (gib, gib // 4))
    local = [StafferProfile(staffer="q", policy="llm", models={"executor": "local:qwen2.5-coder-0.5b"})]
    capped = memory_cap(16, local, scenario_settings, free=3 * gib)
    assert capped.days == 8  # 1 GiB of weights and 8 slots of 0.25 GiB
    assert capped.note == (
        "concurrency 16 is more than memory allows: each day at once keeps a KV cache of up to 0.2 GiB "
        "for local:qwen2.5-coder-0.5b and 3.0 GiB is free; running 8 at once"
    )
    assert memory_cap(8, local, scenario_settings, free=3 * gib) == (8, None)
    assert memory_cap(16, [StafferProfile(staffer="r", policy="rules")], scenario_settings, free=0) == (
        16,
        None,
    )


def test_a_bad_concurrency_is_refused_before_anything_runs(scenario_settings: Settings) -> None:
    days = _days()[:1]
    with pytest.raises(UserError, match="--concurrency must be at least 1"):
        run_scenarios(days, ["rules-static"], settings=scenario_settings, concurrency=0)
    with pytest.raises(UserError, match="the process backend runs --workers days at once"):
        run_scenarios(days, ["rules-static"], settings=scenario_settings, concurrency=2, backend="process")
    assert not Path(scenario_settings.runs_dir).exists(), "nothing was written"
