"""Graph fixtures: a small generated lake (copied per test), runtimes over it with their own
observer, and a scripted model registered as ``scripted:graph``.

The lake template is generated once per session (200 workers); the index over
``workers.resume_text`` is built only for the tests that search (``indexed_lake_dir``).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentlake.graph import GraphRuntime, Resources
from agentlake.llm import ScriptedProvider, register_scripted, reset_llm_state
from agentlake.settings import Settings, load_settings

WORKERS = 200


def _template(root: Path, *, index: bool) -> Path:
    from agentlake.lake import Lake
    from agentlake.workforce.generator import generate_workforce, load_workforce

    data_dir = root / "data"
    # Explicit settings: a session fixture is built before the per-test environment is cleaned.
    settings = Settings(data_dir=data_dir, ollama_host="http://127.0.0.1:9", openai_base_url=None)
    with Lake.open(settings) as lake:
        load_workforce(lake, generate_workforce(WORKERS, seed=5, clients=12))
        if index:
            from agentlake.lake.index import build_index

            build_index(lake, "workers", "resume_text")
    return data_dir


@pytest.fixture(scope="session")
def lake_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _template(tmp_path_factory.mktemp("graph-lake"), index=False)


@pytest.fixture(scope="session")
def indexed_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _template(tmp_path_factory.mktemp("graph-indexed-lake"), index=True)


@pytest.fixture
def lake_dir(lake_template: Path, tmp_path: Path) -> Path:
    """This test's own copy of the lake (the autouse fixture points AGENTLAKE_DATA_DIR here)."""
    target = tmp_path / "data"
    shutil.copytree(lake_template, target)
    return target


@pytest.fixture
def indexed_lake_dir(indexed_template: Path, tmp_path: Path) -> Path:
    target = tmp_path / "data"
    shutil.copytree(indexed_template, target)
    return target


@pytest.fixture(autouse=True)
def _clean_llm_state() -> Iterator[None]:
    reset_llm_state()
    yield
    reset_llm_state()


@pytest.fixture
def model() -> ScriptedProvider:
    """The graph's model in these tests: ``scripted:graph``; enqueue its replies."""
    provider = ScriptedProvider("graph")
    register_scripted("graph", provider)
    return provider


@pytest.fixture
def make_runtime(tmp_path: Path) -> Iterator[Callable[..., GraphRuntime]]:
    """``make_runtime(graph="default", data_dir=None, **settings)``: a runtime with its own
    observer (also the process default, so nested ops land in it), closed after the test."""
    from agentlake.observe import open_observer, set_observer

    opened: list[tuple[GraphRuntime, Any]] = []

    def make(graph: str = "default", data_dir: Path | None = None, **overrides: Any) -> GraphRuntime:
        overrides.setdefault("graph_model", "scripted:graph")
        settings = load_settings(data_dir=data_dir or tmp_path / "data", **overrides)
        observer = open_observer(settings)
        set_observer(observer)
        runtime = GraphRuntime(settings, resources=Resources(settings, observer=observer), graph=graph)
        opened.append((runtime, observer))
        return runtime

    yield make
    for runtime, observer in reversed(opened):
        runtime.resources.close()
        set_observer(None)
        observer.close()
