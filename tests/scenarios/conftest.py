"""Fixtures for the scenarios tests: one generated lake per session, copied into each test."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentlake.settings import Settings, load_settings

# Modest but not tiny: the built-in pack's client sites (Fort Worth, Chandler, Garland,
# Cleveland) need a few dozen workers per role nearby for the hidden rules to be solvable.
TEST_WORKERS = 20_000
TEST_SEED = 7


@pytest.fixture(scope="session")
def generated_lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A lake file with the generated workforce (20k workers, seed 7), built once per session."""
    from agentlake.lake import Lake
    from agentlake.workforce.generator import generate_workforce, load_workforce

    path = tmp_path_factory.mktemp("scenario-lake") / "lake.duckdb"
    settings = load_settings(data_dir=str(path.parent))
    with Lake.open(settings, path=path) as lake:
        load_workforce(lake, generate_workforce(TEST_WORKERS, seed=TEST_SEED))
    return path


@pytest.fixture
def scenario_settings(tmp_path: Path, generated_lake: Path) -> Settings:
    """Settings of this test's data dir (from conftest's AGENTLAKE_DATA_DIR) holding a copy of the lake."""
    settings = load_settings(runs_dir=str(tmp_path / "runs"))
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(generated_lake, settings.lake_path)
    return settings


@pytest.fixture
def observer(scenario_settings: Settings) -> Iterator[object]:
    """An embedded observer on this test's data dir (not the process-wide one)."""
    from agentlake.observe import open_observer

    obs = open_observer(scenario_settings)
    try:
        yield obs
    finally:
        obs.close()


@pytest.fixture
def learned_run(scenario_settings: Settings, observer: object) -> Path:
    """A finished run: Riverfront Steel's first day, rules-learning and rules-static, 2 batches."""
    from agentlake.scenarios import load_scenarios
    from agentlake.scenarios.runner import run_scenarios

    summary = run_scenarios(
        [s for s in load_scenarios("builtin") if s.client.id == "riverfront-steel"][:1],
        ["rules-learning", "rules-static"],
        batches=2,
        settings=scenario_settings,
        observer=observer,
        run_id="learned",
    )
    return summary.run_dir
