"""The doors: agentlake run / leaderboard / compare / report, as a user types them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentlake.settings import Settings

PACK = Path(__file__).parents[2] / "src/agentlake/scenarios/pack"


@pytest.fixture
def cli_env(scenario_settings: Settings, monkeypatch: pytest.MonkeyPatch):
    from agentlake.observe import close_default_observer

    monkeypatch.setenv("AGENTLAKE_RUNS_DIR", str(scenario_settings.runs_dir))
    monkeypatch.setenv("COLUMNS", "200")
    close_default_observer()
    yield scenario_settings
    close_default_observer()


@pytest.mark.slow
def test_run_then_read_the_numbers(cli_env: Settings, cli) -> None:
    code, out, err = cli("run", "--check", "--concurrency", "3")
    assert code == 0, err
    assert "ok: 8 scenarios" in out
    assert "backend inline, 3 days at once" in " ".join(out.split())
    assert "rules-learning (rules, learning on)" in out
    assert "rules-static" in out

    days = [str(PACK / "eagle-container-day1.yaml"), str(PACK / "tri-county-container-day1.yaml")]
    code, out, err = cli(
        "run", "-s", ",".join(days), "-t", "rules-learning,rules-static", "-b", "2", "--run-id", "cli"
    )
    assert code == 0, err
    assert "batch 2/2 [4/4]" in out
    assert "rules-learning" in out
    assert "report:" in out
    run_dir = cli_env.runs_dir / "cli"
    assert (run_dir / "report.html").is_file()
    # Resuming a run that finished runs no day again and reprints its board.
    code, again, err = cli(
        "run",
        "-s",
        ",".join(days),
        "-t",
        "rules-learning,rules-static",
        "-b",
        "2",
        "--run-id",
        "cli",
        "--resume",
    )
    assert code == 0, err
    assert "batch 2/2" not in again
    assert "report:" in again

    code, out, err = cli("leaderboard", "cli", "--format", "json")
    assert code == 0, err
    board = json.loads(out)
    assert [row["staffer"] for row in board["leaderboard"]] == ["rules-learning", "rules-static"]
    assert board["learning_curve"]["rules-learning"][1] > board["learning_curve"]["rules-learning"][0]

    code, out, err = cli("leaderboard", str(run_dir), "--batch", "2")
    assert code == 0
    assert "score" in out
    assert "rules-learning" in out
    assert "by batch" in out

    code, out, err = cli("compare", str(run_dir), "rules-static", "rules-learning", "--batch", "2")
    assert code == 0, err
    assert "fill rate" in out
    assert "A = rules-static, B = rules-learning" in out
    assert "95% intervals" in out

    code, out, err = cli("compare", "cli", "rules-static", "rules-learning", "--format", "json")
    card = json.loads(out)
    assert card["rows"][0]["metric"] == "fill_rate"
    assert card["rows"][0]["verdict"] == "rules-learning better"

    code, out, err = cli("compare", str(run_dir), "rules-static", "nobody")
    assert code == 2
    assert "no results for staffer 'nobody'" in err

    (run_dir / "report.html").unlink()
    code, out, err = cli("report", str(run_dir))
    assert code == 0
    assert (run_dir / "report.html").is_file()


def test_cli_refuses_bad_input_with_one_line(cli_env: Settings, cli, tmp_path: Path) -> None:
    code, _, err = cli("run", "-s", str(tmp_path / "missing.yaml"))
    assert code == 2
    assert "no such scenario file or directory" in err
    code, _, err = cli("run", "-t", "rules-static,nobody", "--check")
    assert code == 2
    assert "unknown staffer 'nobody'" in err
    code, _, err = cli("run", "--resume")
    assert code == 2
    assert "--resume needs the --run-id of the run to continue" in err
    code, _, err = cli("run", "--concurrency", "0", "--check")
    assert code == 2
    assert err.strip().splitlines()[-1].endswith("--concurrency must be at least 1")
    code, _, err = cli("run", "--concurrency", "4", "--backend", "process", "--check")
    assert code == 2
    assert "the process backend runs --workers days at once" in err
    code, _, err = cli("leaderboard", str(tmp_path))
    assert code == 2
    assert "not a run directory" in err
    assert not cli_env.runs_dir.exists()


@pytest.mark.slow
def test_run_as_json_prints_its_summary_and_progress_on_stderr(cli_env: Settings, cli) -> None:
    day = str(PACK / "eagle-container-day1.yaml")
    code, out, err = cli("run", "-s", day, "-t", "rules-static", "-b", "1", "--run-id", "j", "-f", "json")
    assert code == 0, err
    summary = json.loads(out)
    assert (summary["run_id"], [row["staffer"] for row in summary["leaderboard"]]) == ("j", ["rules-static"])
    assert "batch 1/1" in err


def test_run_check_as_json_lists_the_pools(cli_env: Settings, cli) -> None:
    day = str(PACK / "eagle-container-day1.yaml")
    code, out, err = cli("run", "-s", day, "-t", "rules-static", "--check", "--format", "json")
    assert code == 0, err
    checked = json.loads(out)
    assert checked["pools"][0]["scenario"] == "eagle-container-day1"
