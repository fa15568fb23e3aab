"""The executor/reviewer loop with scripted models over the real generated lake."""

from __future__ import annotations

from datetime import timedelta

import pytest
from agents_support import action

from agentlake.agents import Booking, LLMPolicy, ScheduleBook, TurnRecord
from agentlake.errors import UserError

FIND = {"role": "Warehouse Associate", "city": "New York", "state": "NY"}


def _prompt(provider, call: int) -> str:
    messages, _ = provider.history[call]
    return "\n".join(m.content for m in messages)


def test_happy_path_plan_search_propose_consensus(make_ctx, order, qualified, models, sink) -> None:
    executor, reviewer = models
    executor.enqueue(
        action("plan", steps=["find warehouse associates near New York", "propose the 3 most reliable"])
    )
    reviewer.enqueue(action("critique", approve=True, notes="good plan"))
    executor.enqueue(action("tool_call", tool="find_workers", args=FIND, reason="candidates"))
    executor.enqueue(
        action("propose_done", worker_ids=qualified[:3], spares=qualified[3:5], rationale="top reliability")
    )
    reviewer.enqueue(action("critique", approve=True, notes="verified and fits"))
    seen: list[TurnRecord] = []

    outcome = LLMPolicy(executor, reviewer).run(order, make_ctx(on_turn=seen.append, agent_id="staffer-1"))

    assert outcome.success
    assert outcome.failure_reason is None
    assert outcome.proposed == qualified[:3]
    assert outcome.verification.ok
    assert outcome.candidates[:2] == qualified[3:5]  # the named spares, verified, come first
    assert outcome.turns == 5
    assert outcome.input_tokens > 0
    assert outcome.output_tokens > 0
    model_turns = [(r.agent, r.kind) for r in seen if r.turn]
    assert model_turns == [
        ("executor", "plan"),
        ("reviewer", "critique"),
        ("executor", "tool_call"),
        ("executor", "propose_done"),
        ("reviewer", "critique"),
    ]
    assert [r.kind for r in seen if r.agent == "orchestrator"] == ["verification", "consensus"]
    # The ledger carries the search results into the next prompt, in substance, not raw JSON.
    third = _prompt(executor, 2)
    assert "Candidate ledger (10 workers seen" in third
    assert f"- {qualified[0]}: " in third
    assert '"worker_id"' not in third
    # Every tool call and the outcome are ops.
    (tool_op,) = sink.endpoint("tool.find_workers")
    assert tool_op.source == "agent"
    assert tool_op.agent_id == "staffer-1"
    assert tool_op.success
    assert tool_op.attributes["rows"] == 10
    assert "Warehouse Associate" in tool_op.input_summary
    (task_op,) = sink.endpoint("task.fill")
    assert task_op.success
    assert task_op.attributes["filled"] == 3
    assert task_op.attributes["accepted"] == qualified[:3]
    assert task_op.provenance.role == "Warehouse Associate"
    assert task_op.provenance.count == 3
    assert task_op.trace_id == tool_op.trace_id  # one trace per task
    assert task_op.usage is not None
    assert task_op.usage.input_tokens == outcome.input_tokens


def test_malformed_json_then_recovery(make_ctx, order, qualified, models) -> None:
    executor, reviewer = models
    # Turn 1: three replies that are not an action: the turn is spent, the error fed back.
    executor.enqueue("Sure! Let me look for some workers first.")
    executor.enqueue("I will search now, promise.")
    executor.enqueue("[1, 2, 3]")
    # Turn 2: one bad reply, repaired within the turn after the schema feedback.
    executor.enqueue("Here is my action: search for workers")
    executor.enqueue(action("propose_done", worker_ids=qualified[:3]))
    reviewer.enqueue(action("critique", approve=True))
    seen: list[TurnRecord] = []

    outcome = LLMPolicy(executor, reviewer).run(order, make_ctx(on_turn=seen.append))

    assert outcome.success
    assert outcome.proposed == qualified[:3]
    errors = [r for r in seen if r.kind == "error"]
    assert len(errors) == 1
    assert errors[0].turn == 1
    assert not errors[0].ok
    assert "your last reply was not a valid action" in _prompt(executor, 3)
    assert "did not match the required JSON schema" in _prompt(executor, 4)  # the in-turn repair request
    proposal = next(r for r in seen if r.kind == "propose_done")
    assert proposal.turn == 2
    assert "valid after 1 repair request" in proposal.summary
    assert outcome.turns == 3


def test_hallucinated_worker_rejected_and_fed_back(make_ctx, order, qualified, models) -> None:
    executor, reviewer = models
    executor.enqueue(action("propose_done", worker_ids=[qualified[0], qualified[1], 987654]))
    reviewer.enqueue(action("critique", approve=False, notes="one id was never returned by a tool"))
    executor.enqueue(action("propose_done", worker_ids=qualified[:3]))
    reviewer.enqueue(action("critique", approve=True))

    outcome = LLMPolicy(executor, reviewer).run(order, make_ctx())

    assert outcome.success
    assert 987654 not in outcome.proposed
    feedback = _prompt(executor, 1)
    assert "verification rejected your proposal: 987654 unknown_worker" in feedback
    assert "reviewer: one id was never returned by a tool" in feedback
    # The reviewer saw the authoritative verification next to the proposal.
    assert "REJECTED 987654 (unknown_worker)" in _prompt(reviewer, 0)


def test_double_booking_caught(make_ctx, lake, order, qualified, models) -> None:
    executor, reviewer = models
    schedule = ScheduleBook(lake)
    booked = qualified[1]
    schedule.add(
        Booking(
            worker_id=booked,
            start=order.shift_start + timedelta(hours=4),
            end=order.shift_end + timedelta(hours=4),
            client_name="Acme Foods",
            source="test",
        )
    )
    executor.enqueue(action("propose_done", worker_ids=qualified[:3]))
    reviewer.enqueue(action("critique", approve=False, notes="check schedules"))
    executor.enqueue(
        action(
            "tool_call",
            tool="schedule_conflicts",
            args={
                "worker_ids": qualified[:6],
                "start": order.shift_start.isoformat(),
                "end": order.shift_end.isoformat(),
            },
        )
    )
    executor.enqueue(action("propose_done", worker_ids=[qualified[0], qualified[2], qualified[3]]))
    reviewer.enqueue(action("critique", approve=True))

    outcome = LLMPolicy(executor, reviewer).run(order, make_ctx(schedule=schedule))

    assert outcome.success
    assert booked not in outcome.proposed
    first = next(r for r in outcome.transcript if r.kind == "verification")
    assert not first.ok
    assert f"REJECTED {booked} (double_booked)" in first.detail
    assert "Acme Foods" in first.detail
    tool_turn = next(r for r in outcome.transcript if r.kind == "tool_call")
    assert "1 of 6 booked over the shift" in tool_turn.detail
    assert f"- {booked}: booked" in tool_turn.detail
    assert booked not in outcome.candidates


def test_reviewer_approval_of_invalid_fill_is_overridden(make_ctx, order, qualified, models, sink) -> None:
    executor, reviewer = models
    executor.enqueue(action("propose_done", worker_ids=[qualified[0], qualified[0], 555555]))
    reviewer.enqueue(action("critique", approve=True, notes="looks fine to me"))

    outcome = LLMPolicy(executor, reviewer, turn_budget=2).run(order, make_ctx())

    assert not outcome.success
    override = [r for r in outcome.transcript if r.kind == "override"]
    assert len(override) == 1
    assert "approval overridden" in override[0].summary
    assert {r.rule for r in outcome.verification.rejections} <= {"duplicate", "unknown_worker"}
    assert outcome.proposed == [qualified[0]]  # only the verified part survives, as a partial fill
    assert "turn budget of 2 exhausted; the last proposal failed verification" in outcome.failure_reason
    (task_op,) = sink.endpoint("task.fill")
    assert not task_op.success
    assert "failed verification" in task_op.error


def test_turn_budget_exhausted_is_a_clear_failure(make_ctx, order, models, sink) -> None:
    executor, reviewer = models
    for radius in (5, 10, 15):
        executor.enqueue(
            action(
                "tool_call",
                tool="nearby_cities",
                args={"city": "New York", "state": "NY", "radius_miles": radius},
            )
        )
    reviewer.enqueue(
        action(
            "critique", approve=False, notes="stop exploring; search workers", drift=["only cities searched"]
        )
    )

    outcome = LLMPolicy(executor, reviewer, turn_budget=4).run(order, make_ctx())

    assert not outcome.success
    assert outcome.turns == 4
    assert outcome.proposed == []
    assert outcome.failure_reason == "turn budget of 4 exhausted without a proposal"
    assert not outcome.rescue_attempted
    assert len(sink.endpoint("tool.nearby_cities")) == 3
    assert executor.pending == 0
    assert reviewer.pending == 0


def test_drift_notes_go_back_to_the_executor(make_ctx, order, qualified, models) -> None:
    executor, reviewer = models
    executor.enqueue(action("plan", steps=["search welders in Boston"]))
    reviewer.enqueue(
        action(
            "critique",
            approve=False,
            notes="wrong search",
            drift=["the order is Warehouse Associate in New York, not welders in Boston"],
        )
    )
    executor.enqueue(action("propose_done", worker_ids=qualified[:3]))
    reviewer.enqueue(action("critique", approve=True))

    outcome = LLMPolicy(executor, reviewer).run(order, make_ctx())

    assert outcome.success
    assert "reviewer (drift): the order is Warehouse Associate in New York, not welders in Boston" in _prompt(
        executor, 1
    )
    assert any(r.kind == "drift" for r in outcome.transcript)


def test_rescue_with_escalated_model(make_ctx, order, qualified, models) -> None:
    from agentlake.llm import ScriptedProvider

    executor, reviewer = models
    escalation = ScriptedProvider("bigger")
    executor.enqueue(action("plan", steps=["think"]))
    reviewer.enqueue(action("critique", approve=False, notes="act"))
    escalation.enqueue(action("propose_done", worker_ids=qualified[:3]))
    reviewer.enqueue(action("critique", approve=True))

    outcome = LLMPolicy(executor, reviewer, turn_budget=2, escalation_model=escalation).run(
        order, make_ctx(rescue=True)
    )

    assert outcome.success
    assert outcome.rescue_attempted
    assert outcome.rescue_succeeded
    assert outcome.turns == 4
    assert escalation.calls == 1
    assert "a first attempt failed: turn budget of 2 exhausted without a proposal" in _prompt(escalation, 0)
    assert any(
        r.kind == "rescue" and "escalated executor: scripted:bigger" in r.summary for r in outcome.transcript
    )


def test_lessons_injected_into_both_prompts_and_cited(make_ctx, order, qualified, models, tmp_path) -> None:
    from agentlake.learn import LessonDraft, LessonMatch, LessonStore, MachineAction

    store = LessonStore.open(path=tmp_path / "lessons.duckdb", embedder=False)
    added = store.add(
        LessonDraft(
            trigger="Warehouse Associate orders in New York",
            action="prefer reliability 0.9 and up",
            match=LessonMatch(role="Warehouse Associate", city="New York"),
            machine=MachineAction(min_scores={"reliability": 0.9}),
        )
    )
    lesson_id = added.lesson_id
    executor, reviewer = models
    executor.enqueue(
        action("propose_done", worker_ids=qualified[:3], cited_lessons=[lesson_id, "L-invented"])
    )
    reviewer.enqueue(action("critique", approve=True, cited_lessons=[lesson_id]))

    outcome = LLMPolicy(executor, reviewer).run(order, make_ctx(lessons=store, run_id="run-lessons-1"))

    assert outcome.lessons_given == [lesson_id]
    assert outcome.lessons_cited == [lesson_id]
    assert f"[{lesson_id}] Warehouse Associate orders in New York" in executor.history[0][0][0].content
    assert f"[{lesson_id}]" in reviewer.history[0][0][0].content
    citations = store.citations(run_id="run-lessons-1")
    assert [(c["lesson_id"], c["used"]) for c in citations] == [(lesson_id, True)]
    store.close()


def test_no_model_configured_is_a_user_error(make_ctx, order) -> None:
    with pytest.raises(UserError, match="AGENTLAKE_EXECUTOR_MODEL"):
        LLMPolicy().run(order, make_ctx())


def test_unreachable_model_server_is_a_user_error(make_ctx, order) -> None:
    with pytest.raises(UserError, match="127.0.0.1:9"):
        LLMPolicy("ollama:qwen3:4b").run(order, make_ctx())


def test_executor_and_reviewer_over_a_real_http_model_server(make_ctx, lake, order, qualified, sink) -> None:
    """The same loop through the Ollama provider and a fake Ollama server on 127.0.0.1."""
    from agentlake.llm import ScriptedProvider
    from agentlake.llm.fakeserver import serve_fake_ollama
    from agentlake.observe import install_llm_recording

    served = ScriptedProvider("qwen3:4b")
    served.enqueue(action("tool_call", tool="find_workers", args=FIND))  # executor
    served.enqueue(action("propose_done", worker_ids=qualified[:3]))  # executor
    served.enqueue(action("critique", approve=True, notes="ok"))  # reviewer
    with serve_fake_ollama(served) as url:
        settings = lake.settings.model_copy(update={"ollama_host": url})
        uninstall = install_llm_recording()
        try:
            outcome = LLMPolicy("ollama:qwen3:4b").run(order, make_ctx(settings=settings, run_id="run-http"))
        finally:
            uninstall()
    assert outcome.success
    assert outcome.proposed == qualified[:3]
    assert outcome.turns == 3
    # The action schema went over the wire as Ollama's "format".
    assert served.raw_requests
    assert served.raw_requests[0]["format"]["$defs"]
    llm_ops = sink.endpoint("llm.chat")
    assert len(llm_ops) == 3
    assert {op.usage.model for op in llm_ops} == {"qwen3:4b"}
    assert {op.agent_id for op in llm_ops} == {"agent.executor", "agent.reviewer"}
    assert sum(op.usage.input_tokens for op in llm_ops) == outcome.input_tokens
