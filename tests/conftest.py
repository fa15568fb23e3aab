"""Test-wide fixtures. The network beyond 127.0.0.1 is off: a test that reaches out fails. Tests
write only to temp dirs: a file a test leaves in the checkout fails the session, named."""

from __future__ import annotations

import os
import socket
import subprocess
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
    # runs_dir's default is relative ("runs"): a scenario run would land in the checkout, and
    # the dashboard would show a test's run as the latest.
    monkeypatch.setenv("AGENTLAKE_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("AGENTLAKE_CONFIG", str(tmp_path / "agentlake.toml"))
    # Any model server a test needs is a fake on 127.0.0.1; default hosts point nowhere real.
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")
    monkeypatch.setenv("AGENTLAKE_OLLAMA_CLOUD_HOST", "http://127.0.0.1:9")
    # No door falls back to the embedded model unless a test asks for it (loading one takes
    # seconds); the graph runs its scripted demo model unless a test names another.
    monkeypatch.setenv("AGENTLAKE_DEFAULT_MODEL", "none")
    monkeypatch.setenv("AGENTLAKE_GRAPH_MODEL", "function:graph-demo")


# --- tests write only to temp dirs ----------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[1]
# The tools' own caches (and the virtualenv `make install` builds) are not a test's doing.
_TOOL_DIRS = frozenset({".pytest_cache", ".hypothesis", "__pycache__", ".ruff_cache", ".venv"})
_LEFT_IN_CHECKOUT = pytest.StashKey[list[str]]()
_CHECKOUT_BEFORE = pytest.StashKey["set[str] | None"]()


def checkout_entries() -> set[str] | None:
    """The checkout's ``git status --porcelain --ignored -uall`` lines (new, changed and ignored
    files), the tools' caches left out; ``None`` outside a git checkout (nothing to compare)."""
    try:
        listed = subprocess.run(
            ["git", "status", "--porcelain", "--ignored", "-uall", "--", ".", ":(exclude).venv"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return {line for line in listed.splitlines() if not _TOOL_DIRS.intersection(Path(line[3:]).parts)}


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[_CHECKOUT_BEFORE] = checkout_entries()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the session when its tests left a file in the checkout that was not there before."""
    before = session.config.stash.get(_CHECKOUT_BEFORE, None)
    after = checkout_entries() if before is not None else None
    left = sorted(line[3:] for line in (after or set()) - (before or set()))
    session.config.stash[_LEFT_IN_CHECKOUT] = left
    if left and session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED  # an interrupted run keeps its code


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    left = terminalreporter.config.stash.get(_LEFT_IN_CHECKOUT, [])
    if left:
        terminalreporter.section("files left in the checkout", red=True, bold=True)
        terminalreporter.write_line(
            f"this session's tests wrote {len(left)} file(s) into {ROOT}; tests write only to temp "
            "dirs (tmp_path, monkeypatch.chdir, AGENTLAKE_DATA_DIR / AGENTLAKE_RUNS_DIR):"
        )
        for path in left:
            terminalreporter.write_line(f"  {path}")


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
def postgres_cluster():  # agentlake.postgres.LocalCluster
    """A PostgreSQL cluster initdb'd in a temp dir on 127.0.0.1 (see ``LocalCluster``), started
    once per session. Skips only when Debian's server programs are absent (`make postgres`)."""
    from agentlake.postgres import LocalCluster, server_binaries

    if server_binaries() is None:
        pytest.skip("PostgreSQL's server programs are not installed (`make postgres` installs them)")
    # fsync off: the tests kill agentlake's processes, never the cluster's.
    with LocalCluster(fsync=False) as cluster:
        yield cluster


@pytest.fixture
def database_url(postgres_cluster) -> str:
    """The URL of a new empty database in the session's cluster."""
    return postgres_cluster.create_database()


# A password in the source's URL: the tests check it is never printed nor recorded. (The
# cluster trusts the loopback, so the server does not check it; agentlake cannot tell.)
SOURCE_PASSWORD = "Src-Pw-7f3a91c2e5"


@pytest.fixture
def crm_url(database_url: str) -> str:
    """A PostgreSQL database ``crm`` of 4 orders and 2 customers, and the URL of its read-only
    role ``reader`` (with :data:`SOURCE_PASSWORD`): what `agentlake sources add` is given."""
    import psycopg

    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE customers (id integer PRIMARY KEY, name text NOT NULL, city text);"
            "CREATE TABLE orders (id integer PRIMARY KEY, customer_id integer REFERENCES customers(id), "
            "status text NOT NULL, amount numeric(10,2), placed date);"
            "CREATE SEQUENCE order_numbers;"
            "INSERT INTO customers VALUES (1, 'Acme', 'Toledo'), (2, 'Globex', 'Akron');"
            "INSERT INTO orders VALUES (1, 1, 'open', 120.50, '2026-01-05'), (2, 1, 'shipped', 80, '2026-02-01'),"
            " (3, 2, 'open', 42.25, '2026-02-11'), (4, 2, 'cancelled', 10, '2025-12-30');"
            "CREATE SCHEMA sales; CREATE TABLE sales.targets (region text, goal integer);"
            "INSERT INTO sales.targets VALUES ('north', 100);"
            "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'reader') THEN "
            f"CREATE ROLE reader LOGIN PASSWORD '{SOURCE_PASSWORD}'; END IF; END $$;"
            "GRANT USAGE ON SCHEMA public, sales TO reader;"
            "GRANT SELECT ON ALL TABLES IN SCHEMA public, sales TO reader;"
            "GRANT USAGE ON SEQUENCE order_numbers TO reader;"
        )
    return database_url.replace("postgresql://agentlake@", f"postgresql://reader:{SOURCE_PASSWORD}@")
