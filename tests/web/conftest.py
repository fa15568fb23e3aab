"""Dashboard fixtures: a small generated lake (copied per test) and the gateway over it, either
in-process (``web_app``) or as a real ``agentlake serve`` process on 127.0.0.1 (``live_server``)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from agentlake.llm import reset_llm_state
from agentlake.settings import Settings, load_settings

WORKERS = 200


@pytest.fixture(scope="session")
def web_lake_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from agentlake.lake import Lake
    from agentlake.workforce.generator import generate_workforce, load_workforce

    data_dir = tmp_path_factory.mktemp("web-lake") / "data"
    settings = Settings(data_dir=data_dir, ollama_host="http://127.0.0.1:9", openai_base_url=None)
    with Lake.open(settings) as lake:
        load_workforce(lake, generate_workforce(WORKERS, seed=5, clients=12))
    return data_dir


@pytest.fixture
def web_data_dir(web_lake_template: Path, tmp_path: Path) -> Path:
    target = tmp_path / "data"
    shutil.copytree(web_lake_template, target)
    return target


@pytest.fixture(autouse=True)
def _clean_llm_state() -> Iterator[None]:
    reset_llm_state()
    yield
    reset_llm_state()


@pytest.fixture
def make_web_app(
    web_data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[..., tuple[TestClient, Any]]]:
    """``make_web_app(keys=None, **settings) -> (client, app)``: the gateway in-process, its own observer."""
    from agentlake.gateway import Services, create_app
    from agentlake.learn import LessonStore
    from agentlake.observe import open_observer, set_observer

    opened: list[Any] = []

    def make(keys: str | None = None, **overrides: Any) -> tuple[TestClient, Any]:
        if keys:
            monkeypatch.setenv("AGENTLAKE_API_KEYS", keys)
        overrides.setdefault("runs_dir", web_data_dir.parent / "runs")
        settings = load_settings(data_dir=web_data_dir, **overrides)
        observer = open_observer(settings)
        set_observer(observer)
        services = Services(settings, observer=observer, lessons=LessonStore.open(settings, embedder=False))
        app = create_app(settings, services=services, mount_mcp=False)
        client = TestClient(app)
        client.__enter__()
        opened.append((client, services, observer))
        return client, app

    yield make
    for client, services, observer in reversed(opened):
        client.__exit__(None, None, None)
        services.lessons.close()
        set_observer(None)
        observer.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _serve(root: Path, template: Path, *args: str, **env_extra: str) -> Iterator[str]:
    data_dir = root / "data"
    shutil.copytree(template, data_dir)
    port = free_port()
    env = {key: value for key, value in os.environ.items() if not key.startswith("AGENTLAKE_")}
    env.update(
        AGENTLAKE_DATA_DIR=str(data_dir),
        AGENTLAKE_CONFIG=str(root / "none.toml"),
        AGENTLAKE_RUNS_DIR=str(root / "runs"),
        # The dashboard's model is the scripted demo, named: the default is the embedded model.
        AGENTLAKE_GRAPH_MODEL="function:graph-demo",
        AGENTLAKE_DEFAULT_MODEL="none",
        HF_HUB_OFFLINE="1",
        OLLAMA_HOST="http://127.0.0.1:9",
        **env_extra,
    )
    log_path = root / "server.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "agentlake.cli.main",
                "serve",
                "--port",
                str(port),
                *(args or ("--log-level", "warning")),
            ],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise RuntimeError(f"the server did not start: {log_path.read_text()[-2000:]}")
            time.sleep(0.2)
        try:
            yield url
        finally:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()


@pytest.fixture(scope="module")
def live_server(web_lake_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``agentlake serve`` in a subprocess on a free 127.0.0.1 port, over its own copy of the lake,
    with the demo model (the default); yields its URL. Shared by a module's tests."""
    yield from _serve(tmp_path_factory.mktemp("live-server"), web_lake_template)


@dataclass(frozen=True)
class KeyedServer:
    """A live server with API keys: its URL, a read and a write key, and its log file."""

    url: str
    keys: dict[str, str]
    log: Path

    def log_text(self) -> str:
        return self.log.read_text()


@pytest.fixture(scope="module")
def keyed_live_server(
    web_lake_template: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KeyedServer]:
    """Like ``live_server``, with a read and a write key configured, the access log on (at
    log level info) and the dashboard's own requests recorded, so tests can check that no key
    is ever logged or recorded."""
    root = tmp_path_factory.mktemp("keyed-live-server")
    keys = {"read": "dash-read-key-0001", "write": "dash-write-key-0001"}
    # Named keys (KEY:SCOPE:NAME): the page shows who signed in, "read-user" or "write-user".
    configured = ",".join(f"{key}:{scope}:{scope}-user" for scope, key in keys.items())
    args = ("--log-level", "info", "--access-log")
    env = {"AGENTLAKE_API_KEYS": configured, "AGENTLAKE_OBSERVE_DASHBOARD_REQUESTS": "true"}
    for url in _serve(root, web_lake_template, *args, **env):
        yield KeyedServer(url=url, keys=keys, log=root / "server.log")
