"""Test-wide fixtures. The network beyond 127.0.0.1 is off: a test that reaches out fails."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

_LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", "0.0.0.0", ""}
_real_connect = socket.socket.connect
_real_create_connection = socket.create_connection


def _host_of(address: object) -> str | None:
    if isinstance(address, tuple) and address:
        return str(address[0])
    return None  # unix sockets and the like are local


def _guarded_connect(self: socket.socket, address: object) -> object:
    host = _host_of(address)
    if host is not None and host not in _LOCAL_HOSTS and not host.startswith("127."):
        raise OSError(f"tests may not reach beyond 127.0.0.1 (tried {host})")
    return _real_connect(self, address)


socket.socket.connect = _guarded_connect  # type: ignore[method-assign]


_AMBIENT = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OLLAMA_HOST", "OLLAMA_API_KEY", "OLLAMA_CLOUD_KEY")


@pytest.fixture(autouse=True)
def _isolated_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test gets its own data dir and no config file, ambient keys or OTEL_* export."""
    for name in list(os.environ):
        if name.startswith(("AGENTLAKE_", "OTEL_")) or name in _AMBIENT:
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AGENTLAKE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("AGENTLAKE_CONFIG", str(tmp_path / "agentlake.toml"))
    # Any model server a test needs is a fake on 127.0.0.1; default hosts point nowhere real.
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")
    # No door falls back to the embedded model unless a test asks for it (loading one takes
    # seconds); the graph runs its scripted demo model unless a test names another.
    monkeypatch.setenv("AGENTLAKE_DEFAULT_MODEL", "none")
    monkeypatch.setenv("AGENTLAKE_GRAPH_MODEL", "function:graph-demo")


class CliResult(NamedTuple):
    """What ``agentlake ARGS`` did: its exit code and what it wrote."""

    code: int
    out: str
    err: str

    @property
    def output(self) -> str:
        return self.out + self.err


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., CliResult]:
    """``cli("index", "build", ...)``: runs ``agentlake ARGS`` in this process the way the console
    script does (errors rendered, exit codes kept) and returns the code, stdout and stderr of
    that command alone."""
    from agentlake.cli.main import main

    def run(*args: str) -> CliResult:
        capsys.readouterr()
        try:
            main(list(args))
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run


# --- PostgreSQL: one throwaway cluster per test session, a fresh database per test ------------


@pytest.fixture(scope="session")
def postgres_cluster():  # noqa: ANN201 - agentlake.postgres.LocalCluster
    """A PostgreSQL cluster initdb'd in a temp dir on 127.0.0.1 (see ``LocalCluster``), started
    once per session. Skips only when Debian's server programs are absent (`make postgres`)."""
    from agentlake.postgres import LocalCluster, server_binaries

    if server_binaries() is None:
        pytest.skip("PostgreSQL's server programs are not installed (`make postgres` installs them)")
    # fsync off: the tests kill agentlake's processes, never the cluster's.
    with LocalCluster(fsync=False) as cluster:
        yield cluster


@pytest.fixture
def database_url(postgres_cluster) -> str:  # noqa: ANN001
    """The URL of a new empty database in the session's cluster."""
    return postgres_cluster.create_database()
