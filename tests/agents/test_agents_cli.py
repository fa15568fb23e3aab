"""``agentlake fill``: the live turns, the final table, the exit codes."""

from __future__ import annotations

import json

import pytest
from agents_support import action

from agentlake.agents import fill
from agentlake.llm import ScriptedProvider, register_scripted, unregister_scripted

ORDER = "3 x Warehouse Associate in New York, NY at 08:00 on 2026-04-22"


@pytest.fixture
def data_lake(sink, monkeypatch: pytest.MonkeyPatch) -> None:
    """The generated lake at this test's settings.lake_path (the CLI opens it read-only)."""
    from agentlake.lake import Lake
    from agentlake.workforce.generator import generate_workforce, load_workforce

    monkeypatch.setenv("AGENTLAKE_LLM_MAX_RETRIES", "0")
    with Lake.open() as lake:
        load_workforce(lake, generate_workforce(4000, seed=7, clients=40))


def test_fill_rules_shows_turns_and_the_table(data_lake, cli, sink) -> None:
    code, out, err = cli("fill", ORDER, "--require", "OSHA-10")
    assert code == 0, err
    assert "rules" in out
    assert "search" in out
    assert "propose" in out
    assert "3/3 filled (rules)" in out
    assert out.count("placed") == 3
    assert "spare" in out
    assert sink.endpoint("task.fill")[0].success


def test_fill_json_and_unfilled_exit_code(data_lake, cli) -> None:
    code, out, _ = cli("fill", ORDER, "--json")
    outcome = json.loads(out)
    assert code == 0
    assert outcome["success"]
    assert len(outcome["proposed"]) == 3
    assert outcome["transcript"]
    code, out, _ = cli("fill", "3 x Welder in New York, NY", "--radius", "1", "--no-rescue")
    assert code == 1
    assert "not filled: only" in out


def test_fill_llm_with_scripted_models(data_lake, cli, lake) -> None:
    from agentlake.agents import FillOrder
    from agentlake.workforce.candidates import CandidateQuery, find_candidates

    order = FillOrder.parse(ORDER)
    best = [
        r["worker_id"]
        for r in find_candidates(
            lake, CandidateQuery(role=order.role, city="New York", state="NY", min_availability=0.3, limit=3)
        )
    ]
    executor, reviewer = ScriptedProvider("cli-exec"), ScriptedProvider("cli-rev")
    executor.enqueue(
        action("tool_call", tool="find_workers", args={"role": order.role, "city": "New York", "state": "NY"})
    )
    executor.enqueue(action("propose_done", worker_ids=best))
    reviewer.enqueue(action("critique", approve=True, notes="verified"))
    register_scripted("cli-exec", executor)
    register_scripted("cli-rev", reviewer)
    try:
        code, out, err = cli(
            "fill",
            ORDER,
            "--policy",
            "llm",
            "--executor",
            "scripted:cli-exec",
            "--reviewer",
            "scripted:cli-rev",
        )
    finally:
        unregister_scripted("cli-exec")
        unregister_scripted("cli-rev")
    assert code == 0, err
    assert "executor" in out
    assert "tool_call" in out
    assert "propose_done" in out
    assert "consensus" in out
    assert "3/3 filled (llm)" in out
    assert "turns 3" in out


def test_fill_llm_without_a_model_is_one_line_exit_2(data_lake, cli) -> None:
    code, out, err = cli("fill", ORDER, "--policy", "llm")
    assert code == 2
    assert "AGENTLAKE_EXECUTOR_MODEL" in err
    assert len(err.strip().splitlines()) == 1
    code, out, err = cli("fill", ORDER, "--policy", "llm", "--executor", "ollama:qwen3:4b")
    assert code == 2
    assert "127.0.0.1:9" in err
    assert len(err.strip().splitlines()) == 1


def test_bad_order_and_missing_lake_exit_2(cli, sink) -> None:
    code, _, err = cli("fill", "some welders please")
    assert code == 2
    assert "write it like '3 x Welder in Cleveland, OH'" in err
    code, _, err = cli("fill", ORDER)
    assert code == 2
    assert "agentlake data generate" in err


# --- issue 17.10: no tracebacks for bad input, and a fill that fails is still an op -------------


def test_a_huge_worker_count_is_refused_in_one_line(data_lake, cli) -> None:
    code, out, err = cli("fill", "99999999999 x Welder in Cleveland, OH")
    assert code == 2
    assert "count: Input should be less than or equal to 1000" in err
    assert "Traceback" not in err + out


def test_a_binary_scenario_file_is_refused_in_one_line(cli, tmp_path) -> None:
    binary = tmp_path / "days.yaml"
    binary.write_bytes(bytes(range(256)) * 4)
    code, out, err = cli("run", "--scenarios", str(binary))
    assert code == 2
    assert "not UTF-8 text" in err
    assert "Traceback" not in err + out


def test_a_fill_that_fails_part_way_is_recorded_failed(lake, sink, monkeypatch) -> None:
    def broken(*_: object, **__: object) -> list[dict]:
        raise RuntimeError("the candidate search broke")

    monkeypatch.setattr("agentlake.agents.rules.find_candidates", broken)
    with pytest.raises(RuntimeError):
        fill("3 x Welder in New York, NY", lake=lake, lessons=False)
    (op,) = sink.endpoint("task.fill")
    assert op.success is False
    assert "the candidate search broke" in (op.error or "")
