"""The executor and reviewer over an OpenAI-compatible server with no models file: the action
schemas go out as json_schema ``response_format`` with root ``type: object``, and each tier
samples at its own temperature (``executor_temperature``, ``reviewer_temperature``)."""

from __future__ import annotations

import json
from typing import Any

from agents_support import action

from agentlake.agents import LLMPolicy

FIND = {"role": "Warehouse Associate", "city": "New York", "state": "NY"}


def _tier(request: dict[str, Any]) -> str:
    """Which agent sent ``request``: the reviewer's schema is the critique's (``approve``)."""
    schema = json.dumps(request["response_format"]["json_schema"]["schema"])
    return "reviewer" if '"approve"' in schema else "executor"


def test_actions_over_an_openai_compatible_server(make_ctx, lake, order, qualified) -> None:
    from agentlake.llm import ScriptedProvider
    from agentlake.llm.fakeserver import serve_fake_openai

    served = ScriptedProvider("Qwen/Qwen2.5-7B-Instruct")
    served.enqueue(action("tool_call", tool="find_workers", args=FIND))  # executor
    served.enqueue(action("propose_done", worker_ids=qualified[:3]))  # executor
    served.enqueue(action("critique", approve=True, notes="ok"))  # reviewer
    with serve_fake_openai(served, cards={"Qwen/Qwen2.5-7B-Instruct": {"max_model_len": 32768}}) as url:
        settings = lake.settings.model_copy(
            update={"openai_base_url": url, "executor_temperature": 0.3, "reviewer_temperature": 0.0}
        )
        outcome = LLMPolicy("openai:Qwen/Qwen2.5-7B-Instruct").run(order, make_ctx(settings=settings))
    assert outcome.success
    sent = served.raw_requests
    assert {request["response_format"]["json_schema"]["schema"]["type"] for request in sent} == {"object"}
    assert {request["temperature"] for request in sent if _tier(request) == "executor"} == {0.3}
    assert {request["temperature"] for request in sent if _tier(request) == "reviewer"} == {0.0}
