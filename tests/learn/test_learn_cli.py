"""`agentlake lessons list|show|history|rollback|export|import|prune|promote|learn`."""

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
    for command in ("list", "show", "history", "rollback", "export", "import", "prune", "promote", "learn"):
        out = invoke("lessons", command, "--help")
        assert "Usage:" in out
