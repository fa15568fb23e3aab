"""docs/plugins.md's worked example, built from the page and installed with pip into a throwaway
directory (offline: no index, no build isolation), then loaded by name by the real CLI; and a
plugin that fails to import is named in a warning while everything else keeps working."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "plugins.md"
FILE_BLOCK = re.compile(r'^```\w+ title="([^"]+)"\n(.*?)^```$', re.M | re.S)

# A second distribution whose module needs a dependency nobody installed: a graph node type
# and a provider prefix that cannot load.
BROKEN_PYPROJECT = """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "agentlake-broken"
version = "0.1.0"

[project.entry-points."agentlake.graph_nodes"]
broken_v1 = "agentlake_broken:BrokenNode"

[project.entry-points."agentlake.providers"]
broken = "agentlake_broken:factory"

[tool.setuptools]
py-modules = ["agentlake_broken"]
"""
BROKEN_MODULE = "import a_dependency_nobody_installed  # noqa: F401\n"


def doc_files() -> dict[str, str]:
    """The files of the worked example, by name, as the page shows them."""
    return {name: body for name, body in FILE_BLOCK.findall(DOC.read_text(encoding="utf-8"))}


def write(project: Path, files: dict[str, str]) -> Path:
    project.mkdir()
    for name, body in files.items():
        (project / name).write_text(body, encoding="utf-8")
    return project


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding the example plugin and the broken one, installed by pip."""
    root = tmp_path_factory.mktemp("plugins")
    echo = write(root / "agentlake-echo", doc_files())
    broken = write(
        root / "agentlake-broken",
        {"pyproject.toml": BROKEN_PYPROJECT, "agentlake_broken.py": BROKEN_MODULE},
    )
    site = root / "site"
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps"]
    pip += ["--no-build-isolation", "--disable-pip-version-check", "--target", str(site)]
    done = subprocess.run(
        [*pip, str(echo), str(broken)], capture_output=True, text=True, timeout=300, cwd=root
    )
    assert done.returncode == 0, done.stderr
    return site


def agentlake(site: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI in a fresh process that has the plugins' directory on its path."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("AGENTLAKE_")}
    paths = [str(site), *sys.path]
    env.update(
        PYTHONPATH=os.pathsep.join(p for p in paths if p),
        AGENTLAKE_DATA_DIR=str(tmp_path / "data"),
        AGENTLAKE_CONFIG=str(tmp_path / "none.toml"),
        HF_HUB_OFFLINE="1",
        OLLAMA_HOST="http://127.0.0.1:9",
    )
    command = [sys.executable, "-m", "agentlake.cli.main", *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path)


def test_the_page_shows_the_whole_example() -> None:
    files = doc_files()
    assert sorted(files) == ["agentlake_echo.py", "pyproject.toml"]
    assert (
        '[project.entry-points."agentlake.providers"]\necho = "agentlake_echo:factory"'
        in files["pyproject.toml"]
    )


def test_the_example_provider_is_found_by_name_once_installed(installed: Path, tmp_path: Path) -> None:
    import importlib.metadata

    dists = {d.metadata["Name"]: d for d in importlib.metadata.distributions(path=[str(installed)])}
    points = {
        p.name: p.value for p in dists["agentlake-echo"].entry_points if p.group == "agentlake.providers"
    }
    assert points == {"echo": "agentlake_echo:factory"}

    shouted = agentlake(installed, tmp_path, "llm", "ask", "echo:shout", "hello from a plugin")
    assert shouted.returncode == 0, shouted.stderr
    assert shouted.stdout.strip() == "HELLO FROM A PLUGIN"
    # The plugin's own configuration error reaches the user as one (exit 2), with its message.
    unknown = agentlake(installed, tmp_path, "llm", "ask", "echo:whisper", "hello")
    assert unknown.returncode == 2
    assert "unknown echo model 'whisper'; use echo:plain, echo:shout" in unknown.stderr


def test_a_plugin_that_fails_to_import_is_named_and_the_rest_keeps_working(
    installed: Path, tmp_path: Path
) -> None:
    listed = agentlake(installed, tmp_path, "graph", "nodes", "--format", "json")
    assert listed.returncode == 0, listed.stderr
    assert "thinker_v1" in listed.stdout
    assert "broken_v1" not in listed.stdout
    assert (
        "node type plugin 'broken_v1' (agentlake_broken:BrokenNode in agentlake-broken) failed to load"
        in listed.stderr
    )
    assert "a_dependency_nobody_installed" in listed.stderr
    # The working plugin beside it still answers; the broken one, asked for by name, is named.
    assert (
        agentlake(installed, tmp_path, "llm", "ask", "echo:plain", "still here").stdout.strip()
        == "still here"
    )
    refused = agentlake(installed, tmp_path, "llm", "ask", "broken:model", "hello")
    assert refused.returncode == 1
    assert (
        "provider prefix plugin 'broken' (agentlake_broken:factory in agentlake-broken) failed to load"
        in refused.stderr
    )
