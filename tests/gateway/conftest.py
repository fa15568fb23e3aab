"""Gateway fixtures: a small real lake (generated workforce + MiniLM index) built once per session,
copied into each test's own data dir, and an in-process gateway over it."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from agentlake.settings import Settings, load_settings

WORKERS = 600
KEYS = "rk-0123456789:read,wk-0123456789:write,ak-0123456789:admin"
READ, WRITE, ADMIN = "rk-0123456789", "wk-0123456789", "ak-0123456789"


@pytest.fixture(scope="session")
def lake_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir with workers/clients/placements and an index over workers.resume_text."""
    from agentlake.lake import Lake
    from agentlake.lake.index import build_index
    from agentlake.workforce.generator import generate_workforce, load_workforce

    data_dir = tmp_path_factory.mktemp("gateway-template") / "data"
    settings = load_settings(data_dir=data_dir)
    with Lake.open(settings) as lake:
        load_workforce(lake, generate_workforce(WORKERS, seed=11, clients=40))
        build_index(lake, "workers", "resume_text")
    return data_dir


@pytest.fixture
def data_dir(lake_template: Path, tmp_path: Path) -> Path:
    """This test's own copy of the template (the autouse fixture points AGENTLAKE_DATA_DIR here)."""
    target = tmp_path / "data"
    shutil.copytree(lake_template, target)
    return target


@pytest.fixture
def make_gateway(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Any]]:
    """Build an in-process gateway: ``make_gateway(keys=KEYS, **settings) -> (client, app)``.

    Each gateway gets its own observer (set as the process default so nested ops land in it)
    and a lesson store without embeddings (dedup by identity keeps these tests fast).
    """
    from agentlake.gateway import Services, create_app
    from agentlake.learn import LessonStore
    from agentlake.observe import open_observer, set_observer

    opened: list[Any] = []

    def make(keys: str | None = KEYS, **overrides: Any) -> tuple[TestClient, Any]:
        if keys:
            monkeypatch.setenv("AGENTLAKE_API_KEYS", keys)
        settings: Settings = load_settings(data_dir=data_dir, **overrides)
        observer = open_observer(settings)
        set_observer(observer)
        services = Services(settings, observer=observer, lessons=LessonStore.open(settings, embedder=False))
        app = create_app(settings, services=services)
        client = TestClient(app)
        client.__enter__()  # runs the lifespan (the MCP session manager, closing at the end)
        opened.append((client, services, observer))
        return client, app

    yield make
    for client, services, observer in reversed(opened):
        client.__exit__(None, None, None)
        services.lessons.close()
        set_observer(None)
        observer.close()


@pytest.fixture
def gateway(make_gateway: Callable[..., Any]) -> TestClient:
    """An in-process gateway with read/write/admin keys configured."""
    client, _ = make_gateway()
    return client


@pytest.fixture
def keys() -> dict[str, dict[str, str]]:
    """Request headers per scope: ``keys["read"]``, ``keys["write"]``, ``keys["admin"]``."""
    return {"read": {"X-API-Key": READ}, "write": {"X-API-Key": WRITE}, "admin": {"X-API-Key": ADMIN}}
