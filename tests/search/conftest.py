"""Search fixtures: one small real lake (generated workers + a handcrafted 'profiles' dataset),
indexed with the real MiniLM once per session and copied into each test's data dir."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from agentlake.settings import load_settings

WORKERS = 300
PROFILES = [
    (1, "Certified welder: AWS D1.1, MIG and TIG on structural steel, eight years in fabrication shops."),
    (2, "Registered nurse with ten years of patient care on a hospital ICU, BLS and ACLS certified."),
    (3, "Forklift operator, OSHA 10, reach truck and order picker in a cold-storage warehouse."),
    (4, "Line cook and dishwasher in a busy downtown restaurant, food handler card."),
]


def profiles_table() -> pa.Table:
    return pa.table({"id": [p[0] for p in PROFILES], "bio": [p[1] for p in PROFILES]})


@pytest.fixture(scope="session")
def search_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from agentlake.lake import Lake
    from agentlake.lake.index import build_index
    from agentlake.workforce.generator import generate_workforce, load_workforce

    data_dir = tmp_path_factory.mktemp("search-template") / "data"
    with Lake.open(load_settings(data_dir=data_dir)) as lake:
        load_workforce(lake, generate_workforce(WORKERS, seed=5, clients=20))
        lake.write_table("profiles", profiles_table(), key="id")
        build_index(lake, "workers", "resume_text")
        build_index(lake, "profiles", "bio")
    return data_dir


@pytest.fixture
def data_dir(search_template: Path, tmp_path: Path) -> Path:
    """This test's own copy (the autouse fixture already points AGENTLAKE_DATA_DIR here)."""
    target = tmp_path / "data"
    shutil.copytree(search_template, target)
    return target


@pytest.fixture
def lake(data_dir: Path):
    from agentlake.lake import Lake

    with Lake.open() as lake:
        yield lake
