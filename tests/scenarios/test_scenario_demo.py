"""The main job's choices: which LLM staffers are reachable, and refusing --local-llm without the model."""

from __future__ import annotations

from pathlib import Path

import pytest
from scenarios_support import approver, lesson_follower

from agentlake.cli.main import main
from agentlake.settings import Settings


def _staff(messages, options):  # one fake model plays both roles
    system = messages[0].content if hasattr(messages[0], "content") else messages[0]["content"]
    return (
        approver(messages, options)
        if system.startswith("You are the reviewer")
        else lesson_follower(messages, options)
    )


@pytest.mark.slow
def test_llm_staffers_run_when_their_model_answers_over_http(scenario_settings: Settings, observer) -> None:
    from agentlake.llm import FunctionProvider
    from agentlake.llm.fakeserver import serve_fake_ollama
    from agentlake.scenarios import load_scenarios, read_results
    from agentlake.scenarios.main_job import reachable_llm_staffers
    from agentlake.scenarios.runner import run_scenarios

    with serve_fake_ollama(FunctionProvider(_staff, "qwen3:4b"), models=["qwen3:4b"]) as url:
        settings = scenario_settings.model_copy(update={"ollama_host": url})
        ready, skipped = reachable_llm_staffers(settings)
        assert ready == ["basic"]
        assert "ollama pull qwen3:8b" in " ".join(skipped["full"])
        assert "no executor model" in " ".join(skipped["configured"])
        # The basic staffer really runs through the Ollama HTTP client against the fake server.
        day = [s for s in load_scenarios("builtin") if s.scenario == "eagle-container-day1"]
        summary = run_scenarios(
            day, ["basic"], batches=1, settings=settings, observer=observer, run_id="http"
        )
    results = read_results(summary.run_dir)
    assert results
    assert all(r.turns >= 2 and r.error is None for r in results)
    assert sum(r.filled for r in results) > 0
    assert observer.query(endpoint="llm.chat", limit=1), "model calls are observed"


def test_without_a_model_the_demo_says_how_to_add_one(scenario_settings: Settings) -> None:
    from agentlake.scenarios.main_job import ADD_AN_LLM, reachable_llm_staffers

    ready, skipped = reachable_llm_staffers(scenario_settings)
    assert ready == []
    assert set(skipped) == {"full", "basic", "minimal", "local", "configured"}
    assert "Ollama is not answering at http://127.0.0.1:9" in skipped["basic"][0]
    assert "ollama serve" in ADD_AN_LLM
    assert "OPENAI_BASE_URL" in ADD_AN_LLM
    assert len(ADD_AN_LLM.splitlines()) == 1


def test_local_llm_refuses_an_embedded_staffer_whose_model_is_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = tmp_path / "qwen-9b.yaml"
    profile.write_text(
        "staffer: qwen-9b\npolicy: llm\nmodels:\n  executor: local:qwen2.5-coder-9b\nlessons: false\nlearning: false\n"
    )
    try:
        main(["demo", "--local-llm", "--llm-staffer", str(profile), "--workers", "300"])
        code = 0
    except SystemExit as exc:
        code = exc.code
    _, err = capsys.readouterr()
    assert code == 2
    assert "qwen-9b: its model cannot run" in err
    assert "qwen2.5-coder-0.5b" in err  # the message names the packaged models there are
    assert not (tmp_path / "data" / "lake.duckdb").exists(), "nothing was generated"


def test_the_index_writing_line_is_printed_once(capsys: pytest.CaptureFixture[str]) -> None:
    from agentlake.cli.demo import _JobView
    from agentlake.lake.background_index import IndexProgress

    view = _JobView()
    for _ in range(3):  # the index reports each part of its writing alike
        view.show(IndexProgress(phase="indexing", total=100, done=100))
    assert capsys.readouterr().out.count("writing the index") == 1
