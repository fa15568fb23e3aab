"""Every file a run writes carries the run directory's format version; files of runs made
before versions still read, and a newer format is refused naming the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentlake.errors import UserError
from agentlake.scenarios import load_scenarios, read_results
from agentlake.scenarios.results import FORMAT_VERSION, read_lines, read_plan
from agentlake.scenarios.runner import run_scenarios
from agentlake.settings import Settings

RUN_FILES = ("plan.json", "leaderboard.json")
RUN_LINES = ("results.jsonl", "learning.jsonl")


def test_every_file_of_a_run_carries_the_format_version(learned_run: Path) -> None:
    for name in RUN_FILES:
        document = json.loads((learned_run / name).read_text())
        assert next(iter(document)) == "format_version", f"{name}: the version comes first"
        assert document["format_version"] == FORMAT_VERSION, name
    for name in RUN_LINES:
        lines = (learned_run / name).read_text().splitlines()
        assert lines, name
        assert all(line.startswith('{"format_version": 1, ') for line in lines), name
    assert "format_version" not in read_plan(learned_run), "readers hand back the content only"
    assert all("format_version" not in line for line in read_lines(learned_run / "learning.jsonl"))


def test_a_run_from_before_format_versions_still_reads_and_resumes(
    learned_run: Path, scenario_settings: Settings, observer: object
) -> None:
    before = read_results(learned_run)
    for name in RUN_FILES:
        document = json.loads((learned_run / name).read_text())
        document.pop("format_version")
        for profile in document.get("staffers", []):
            profile.pop("colour", None)  # nor the staffers' colours
        (learned_run / name).write_text(json.dumps(document))
    for name in RUN_LINES:
        lines = [json.loads(line) for line in (learned_run / name).read_text().splitlines()]
        for line in lines:
            line.pop("format_version")
        (learned_run / name).write_text("".join(json.dumps(line) + "\n" for line in lines))

    assert read_results(learned_run) == before
    assert [line["batch"] for line in read_lines(learned_run / "learning.jsonl")] == [1, 2]
    assert read_plan(learned_run)["batches"] == 2
    # Resuming the finished run runs no day again and rewrites its files in today's format.
    ran: list[object] = []
    resumed = run_scenarios(
        [s for s in load_scenarios("builtin") if s.client.id == "riverfront-steel"][:1],
        ["rules-learning", "rules-static"],
        batches=2,
        settings=scenario_settings,
        observer=observer,
        run_id="learned",
        resume=True,
        on_progress=ran.append,
    )
    assert ran == []
    assert resumed.results == len(before)
    assert json.loads((learned_run / "leaderboard.json").read_text())["format_version"] == FORMAT_VERSION


def test_a_newer_format_is_refused_naming_the_file(learned_run: Path) -> None:
    lines = (learned_run / "results.jsonl").read_text().splitlines()
    newer = json.loads(lines[0]) | {"format_version": FORMAT_VERSION + 1}
    (learned_run / "results.jsonl").write_text(json.dumps(newer) + "\n" + "\n".join(lines[1:]) + "\n")
    with pytest.raises(UserError, match=r"results\.jsonl: line 1: .*newer agentlake.*upgrade agentlake"):
        read_results(learned_run)
    plan = json.loads((learned_run / "plan.json").read_text()) | {"format_version": FORMAT_VERSION + 1}
    (learned_run / "plan.json").write_text(json.dumps(plan))
    with pytest.raises(UserError, match=r"plan\.json: written by a newer agentlake \(run format 2"):
        read_plan(learned_run)
