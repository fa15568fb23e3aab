"""`agentlake lessons list|show|history|retire|rollback|export|import|prune|promote|learn`."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentlake.cli.main import app, main
from agentlake.observe import ObservedOp, Observer, OpStore
from agentlake.settings import load_settings

runner = CliRunner()
REJECTIONS = [
    {"worker_id": 7, "reason": "reliability 0.55 below 0.70", "rule": "min_reliability", "value": 0.7},
    {
        "worker_id": 9,
        "reason": "no OSHA 30 on file; site policy",
        "rule": "required_certification",
        "value": "OSHA 30",
    },
]


def seed_ops(*, hours_ago: float = 0.1) -> None:
    now = datetime.now(UTC)
    with Observer(OpStore(load_settings().observer_path)) as observer:
        observer.record_many(
            [
                ObservedOp(
                    id="judged-1",
                    ts=now - timedelta(hours=hours_ago),
                    endpoint="fill.judged",
                    source="scenario",
                    success=False,
                    run_id="r-1",
                    labels={"role": "Welder", "city": "Cleveland", "state": "OH"},
                    attributes={
                        "client_id": "riverfront-steel",
                        "task_kind": "baseline_fill",
                        "requested": 3,
                        "filled": 1,
                        "rejections": REJECTIONS,
                    },
                ),
                ObservedOp(
                    id="old-judged",
                    ts=now - timedelta(days=3),
                    endpoint="fill.judged",
                    source="scenario",
                    success=False,
                    attributes={
                        "client_id": "acme-foods",
                        "requested": 2,
                        "filled": 1,
                        "rejections": [{**REJECTIONS[0], "value": 0.9}],
                    },
                ),
            ]
        )


def invoke(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output + repr(result.exception)
    return result.output


def exit_code(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as info:
        main(argv)
    return int(info.value.code or 0), capsys.readouterr().err


def listed(*args: str) -> list[dict]:
    return json.loads(invoke("lessons", "list", "--format", "json", *args))


def test_learn_reads_recent_ops_and_lists_lessons() -> None:
    seed_ops()
    out = invoke("lessons", "learn", "--since", "1d", "--no-similarity")
    assert "1 op(s) read, 1 new; induction: 2 added" in out
    lessons = listed()
    assert {row["status"] for row in lessons} == {"active"}
    assert {row["match"] for row in lessons} == {"client_id=riverfront-steel"}
    assert any("OSHA 30" in row["action"] for row in lessons)
    again = invoke("lessons", "learn", "--since", "1d", "--no-similarity")
    assert "1 op(s) read, 0 new; induction: no deltas" in again
    everything = invoke("lessons", "learn", "--no-similarity", "--json")
    report = json.loads(everything)
    assert report["ops_read"] == 2
    assert report["ops_new"] == 1
    assert listed("--client", "acme-foods")[0]["action"].startswith(
        "Only propose workers with reliability >= 0.9"
    )
    assert listed("--status", "retired") == []


def test_show_history_rollback(capsys: pytest.CaptureFixture[str]) -> None:
    seed_ops()
    invoke("lessons", "learn", "--no-similarity")
    lesson_id = listed("--client", "riverfront-steel")[0]["id"]
    shown = json.loads(invoke("lessons", "show", lesson_id))
    assert shown["id"] == lesson_id
    assert shown["evidence_op_ids"] == ["judged-1"]
    history = json.loads(invoke("lessons", "history", lesson_id, "--format", "json"))
    assert [(h["version"], h["event"]) for h in history] == [(1, "add")]
    out = invoke("lessons", "rollback", lesson_id, "1", "--reason", "checked by hand")
    assert f"{lesson_id} is now version 2" in out
    history = json.loads(invoke("lessons", "history", lesson_id, "--format", "json"))
    assert history[-1]["event"] == "rollback"
    assert history[-1]["reason"] == "checked by hand"
    code, err = exit_code(["lessons", "show", "L-nothere"], capsys)
    assert code == 2
    assert "no lesson 'L-nothere'" in err
    code, err = exit_code(["lessons", "rollback", lesson_id, "7"], capsys)
    assert code == 2
    assert "has no version 7" in err


def test_export_then_import_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seed_ops()
    invoke("lessons", "learn", "--no-similarity")
    out_file = tmp_path / "lessons.json"
    invoke("lessons", "export", "--out", str(out_file))
    exported = json.loads(out_file.read_text())
    assert len(exported["lessons"]) == 3
    monkeypatch.setenv("AGENTLAKE_DATA_DIR", str(tmp_path / "elsewhere"))
    assert "added 3, replaced 0, kept 0 existing" in invoke("lessons", "import", str(out_file))
    assert "added 0, replaced 0, kept 3 existing" in invoke("lessons", "import", str(out_file))
    assert len(listed()) == 3
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "something-else"}')
    code, err = exit_code(["lessons", "import", str(bad)], capsys)
    assert code == 2
    assert "not a lesson export" in err


def test_prune_and_promote_report_their_changes() -> None:
    seed_ops()
    invoke("lessons", "learn", "--no-similarity")
    assert json.loads(invoke("lessons", "prune", "--format", "json")) == []
    assert json.loads(invoke("lessons", "promote", "--no-similarity", "--format", "json")) == []


def test_bad_since_and_missing_observer_store(capsys: pytest.CaptureFixture[str]) -> None:
    code, err = exit_code(["lessons", "learn", "--since", "yesterday"], capsys)
    assert code == 2
    assert "30m, 2h, 7d" in err
    code, err = exit_code(["lessons", "learn"], capsys)
    assert code == 2
    assert "no observer store" in err


def test_help_of_every_command() -> None:
    for command in (
        "list", "show", "history", "retire", "rollback", "export", "import", "prune", "promote", "learn"
    ):  # fmt: skip
        out = invoke("lessons", command, "--help")
        assert "Usage:" in out


# --- reading without creating, a run's stores, retiring ------------------------------------------


def learned_project() -> str:
    """Lessons learned into the project's store; the id of the riverfront-steel one."""
    seed_ops()
    invoke("lessons", "learn", "--no-similarity")
    return listed("--client", "riverfront-steel")[0]["id"]


def a_run(arms: dict[str, bool]) -> Path:
    """A run directory under runs_dir with these staffers (name -> learning) as its plan says."""
    from agentlake.scenarios.results import PLAN_FILE, RESULTS_FILE, write_json

    run_dir = load_settings().runs_dir / "run-7"
    (run_dir / "lessons").mkdir(parents=True)
    write_json(
        run_dir / PLAN_FILE,
        {
            "staffers": [{"staffer": name, "learning": learning} for name, learning in arms.items()],
            "arms": [{"arm": name, "staffer": name, "feedback": "explicit"} for name in arms],
        },
    )
    (run_dir / RESULTS_FILE).write_text("")
    return run_dir


def test_list_on_a_fresh_data_dir_is_empty_and_creates_no_store() -> None:
    assert listed() == []
    settings = load_settings()
    assert not (settings.data_dir / settings.learn_file).exists()


def test_a_runs_lessons_are_listed_by_run_and_staffer() -> None:
    lesson_id = learned_project()
    settings = load_settings()
    run_dir = a_run({"rules-learning": True, "rules-static": False})
    (settings.data_dir / settings.learn_file).rename(run_dir / "lessons" / "rules-learning.duckdb")
    by_run = listed("--run", "run-7", "--staffer", "rules-learning")
    assert lesson_id in {row["id"] for row in by_run}


def test_a_runs_only_learning_staffer_needs_no_name() -> None:
    lesson_id = learned_project()
    settings = load_settings()
    run_dir = a_run({"rules-learning": True, "rules-static": False})
    (settings.data_dir / settings.learn_file).rename(run_dir / "lessons" / "rules-learning.duckdb")
    shown = json.loads(invoke("lessons", "show", lesson_id, "--run", str(run_dir)))
    assert shown["evidence_op_ids"] == ["judged-1"]


def test_reading_a_runs_store_leaves_its_file_unchanged() -> None:
    lesson_id = learned_project()
    settings = load_settings()
    run_dir = a_run({"rules-learning": True})
    store = run_dir / "lessons" / "rules-learning.duckdb"
    (settings.data_dir / settings.learn_file).rename(store)
    before = store.read_bytes()
    invoke("lessons", "history", lesson_id, "--run", "run-7", "-f", "json")
    invoke("lessons", "export", "--run", "run-7")
    assert store.read_bytes() == before


def test_store_option_reads_a_lesson_file() -> None:
    lesson_id = learned_project()
    settings = load_settings()
    store = settings.data_dir / "elsewhere.duckdb"
    (settings.data_dir / settings.learn_file).rename(store)
    assert lesson_id in {row["id"] for row in listed("--store", str(store))}


def test_a_staffer_the_run_did_not_learn_with_names_those_that_did(
    capsys: pytest.CaptureFixture[str],
) -> None:
    a_run({"rules-learning": True, "rules-static": False})
    code, err = exit_code(["lessons", "list", "--run", "run-7", "--staffer", "rules-static"], capsys)
    assert code == 2
    assert "its learning staffers: rules-learning" in err


def test_a_run_with_two_learning_staffers_asks_for_one(capsys: pytest.CaptureFixture[str]) -> None:
    a_run({"rules-learning": True, "llm-learning": True})
    code, err = exit_code(["lessons", "list", "--run", "run-7"], capsys)
    assert code == 2
    assert "name one with --staffer (rules-learning, llm-learning)" in err


def test_staffer_without_run_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code, err = exit_code(["lessons", "list", "--staffer", "rules-learning"], capsys)
    assert code == 2
    assert "give --run RUN_ID too" in err


def test_retire_stops_a_lesson_and_rollback_restores_it() -> None:
    lesson_id = learned_project()
    retired = json.loads(
        invoke("lessons", "retire", lesson_id, "--reason", "client changed policy", "-f", "json")
    )
    assert retired["status"] == "retired"
    history = json.loads(invoke("lessons", "history", lesson_id, "--format", "json"))
    assert (history[-1]["event"], history[-1]["reason"]) == ("retire", "client changed policy")
    invoke("lessons", "rollback", lesson_id, str(retired["version"] - 1))
    assert json.loads(invoke("lessons", "show", lesson_id))["status"] == "active"


def test_retire_says_how_to_undo_it() -> None:
    lesson_id = learned_project()
    out = invoke("lessons", "retire", lesson_id, "--reason", "stale")
    assert f"agentlake lessons rollback {lesson_id} 1" in out


def test_retire_needs_a_reason(capsys: pytest.CaptureFixture[str]) -> None:
    lesson_id = learned_project()
    code, err = exit_code(["lessons", "retire", lesson_id, "--reason", " "], capsys)
    assert code == 2
    assert "say why" in err


def test_retire_of_an_unknown_lesson_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    learned_project()
    code, err = exit_code(["lessons", "retire", "L-nothere", "--reason", "x"], capsys)
    assert code == 2
    assert "L-nothere" in err


def test_import_and_rollback_print_json_for_scripts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lesson_id = learned_project()
    exported = tmp_path / "lessons.json"
    invoke("lessons", "export", "--out", str(exported))
    monkeypatch.setenv("AGENTLAKE_DATA_DIR", str(tmp_path / "elsewhere"))
    report = json.loads(invoke("lessons", "import", str(exported), "--format", "json"))
    assert lesson_id in report["added"]
    rolled = json.loads(invoke("lessons", "rollback", lesson_id, "1", "--format", "json"))
    assert (rolled["id"], rolled["version"]) == (lesson_id, 2)


def test_learn_format_json_and_its_json_alias_agree() -> None:
    seed_ops()
    by_format = json.loads(invoke("lessons", "learn", "--no-similarity", "--format", "json"))
    by_alias = json.loads(invoke("lessons", "learn", "--no-similarity", "--json"))
    assert (by_format["ops_read"], by_alias["ops_read"]) == (2, 2)
