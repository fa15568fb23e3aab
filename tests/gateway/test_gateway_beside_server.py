"""The CLI beside a running `agentlake serve` of the same data directory (real processes): the
server announces itself, commands that would open the stores it holds go through its HTTP API
with the same output and exit codes, the others say in one line which server to stop, and a
stale announcement fools nobody."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from gateway_support import AGENTLAKE, clean_env, running_server

from agentlake.serving import announce, running_servers
from agentlake.settings import load_settings

pytestmark = pytest.mark.slow

ORDER = "2 x Welder in Cleveland, OH for Riverfront Steel at 08:00 on 2026-04-22"
KEYS = "beside-read-1:read,beside-write-1:write"
SEARCH = "certified welder, night shifts"


def cli(data_dir: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [AGENTLAKE, *args],
        env=clean_env(data_dir, COLUMNS="200", **env),
        capture_output=True,
        text=True,
        timeout=300,
    )


def _without_timings(text: str) -> str:
    # The facts line ends with the fill's own latency; everything else must match.
    return re.sub(r"\d+ ms\b", "N ms", text)


def _seed_lessons(data_dir: Path) -> None:
    """A judged fill recorded and learned from, so there are lessons to list."""
    from agentlake.observe import ObservedOp, Observer, OpStore

    settings = load_settings(data_dir=data_dir)
    rejection = {
        "worker_id": 7,
        "reason": "reliability 0.55 below 0.70",
        "rule": "min_reliability",
        "value": 0.7,
    }
    with Observer(OpStore(settings.observer_path)) as observer:
        observer.record(
            ObservedOp(
                id="judged-beside-1",
                endpoint="fill.judged",
                source="scenario",
                success=False,
                run_id="r-1",
                labels={"role": "Welder", "city": "Cleveland", "state": "OH"},
                attributes={
                    "client_id": "riverfront-steel",
                    "task_kind": "baseline_fill",
                    "requested": 3,
                    "filled": 1,
                    "rejections": [rejection],
                },
            )
        )
    learned = cli(data_dir, "lessons", "learn")
    assert learned.returncode == 0, learned.stderr


@pytest.fixture(scope="module")
def shared(lake_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One seeded data dir for the tests that only read (a server start and the standalone runs
    are the slow part, so they are made once)."""
    target = tmp_path_factory.mktemp("beside") / "data"
    shutil.copytree(lake_template, target)
    _seed_lessons(target)
    return target


@pytest.fixture
def seeded(data_dir: Path) -> Path:
    """This test's own seeded data dir (for tests that start their own server or write files)."""
    _seed_lessons(data_dir)
    return data_dir


@pytest.fixture(scope="module")
def standalone(shared: Path) -> dict[str, subprocess.CompletedProcess[str]]:
    """What the commands answer with no server running."""
    return {
        "fill": cli(shared, "fill", ORDER),
        "lessons": cli(shared, "lessons", "list"),
        "sql": cli(shared, "sql", "SELECT count(*) AS n FROM workers"),
        "search": cli(shared, "search", "workers", SEARCH, "--where", "state = 'OH'", "-k", "5"),
    }


@pytest.fixture(scope="module")
def server(
    shared: Path, standalone, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, subprocess.Popen]]:
    """`agentlake serve` over the shared data dir, started once the standalone runs are done."""
    # The dashboard chat's scripted model: what is tested is the way through the server, and a
    # real model's turn (make models) would only add minutes.
    log = tmp_path_factory.mktemp("beside-log") / "serve.log"
    with running_server(shared, log, AGENTLAKE_GRAPH_MODEL="function:graph-demo") as running:
        yield running


def test_a_running_server_announces_itself_for_its_data_dir(shared: Path, server) -> None:
    _, process = server
    (announced,) = running_servers(shared)
    assert announced.pid == process.pid
    assert announced.holds(load_settings(data_dir=shared).data_dir / "lessons.duckdb")


def test_the_announcement_is_removed_when_the_server_stops(data_dir: Path, tmp_path: Path) -> None:
    with running_server(data_dir, tmp_path / "serve.log"):
        pass
    assert list((data_dir / "servers").glob("*.json")) == []


def test_fill_beside_the_server_prints_what_it_prints_alone(shared: Path, standalone, server) -> None:
    through = cli(shared, "fill", ORDER)
    assert _without_timings(through.stdout) == _without_timings(standalone["fill"].stdout)


def test_fill_beside_the_server_exits_as_it_does_alone(shared: Path, standalone, server) -> None:
    assert cli(shared, "fill", ORDER).returncode == standalone["fill"].returncode


def test_an_unfilled_order_exits_1_through_the_server(shared: Path, server) -> None:
    assert cli(shared, "fill", "40 x Welder in Cleveland, OH", "--radius", "1", "--no-rescue").returncode == 1


def test_a_bad_order_exits_2_through_the_server(shared: Path, server) -> None:
    assert cli(shared, "fill", "3 x Welder in Atlantis, ZZ").returncode == 2


def test_a_bad_order_is_one_line_through_the_server(shared: Path, server) -> None:
    result = cli(shared, "fill", "3 x Welder in Atlantis, ZZ")
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_lessons_list_beside_the_server_prints_what_it_prints_alone(shared: Path, standalone, server) -> None:
    assert cli(shared, "lessons", "list").stdout == standalone["lessons"].stdout


def test_the_seeded_lessons_are_there_to_compare(standalone) -> None:
    assert "0 lesson(s)" not in standalone["lessons"].stdout


def test_sql_beside_the_server_prints_what_it_prints_alone(shared: Path, standalone, server) -> None:
    assert cli(shared, "sql", "SELECT count(*) AS n FROM workers").stdout == standalone["sql"].stdout


def test_search_beside_the_server_prints_what_it_prints_alone(shared: Path, standalone, server) -> None:
    through = cli(shared, "search", "workers", SEARCH, "--where", "state = 'OH'", "-k", "5")
    assert through.stdout == standalone["search"].stdout


def test_ops_stats_finds_the_gateways_mounted_observer(shared: Path, server) -> None:
    cli(shared, "fill", ORDER)  # recorded by the server
    stats = json.loads(cli(shared, "ops", "stats", "--format", "json").stdout)
    assert stats["by_endpoint"].get("POST /fill", 0) >= 1, stats


@pytest.fixture
def held(shared: Path, server) -> subprocess.Popen:
    """The server with its lesson store open (it opens stores on first use)."""
    assert cli(shared, "lessons", "list").returncode == 0
    return server[1]


def test_a_command_that_cannot_go_through_names_the_server_to_stop(shared: Path, held) -> None:
    assert f"pid {held.pid}" in cli(shared, "lessons", "prune").stderr


def test_a_command_that_cannot_go_through_exits_2(shared: Path, held) -> None:
    assert cli(shared, "lessons", "prune").returncode == 2


def test_a_command_that_cannot_go_through_says_so_in_one_line(shared: Path, held) -> None:
    result = cli(shared, "lessons", "prune")
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_a_refused_key_says_which_variable_to_set(data_dir: Path, tmp_path: Path) -> None:
    with running_server(data_dir, tmp_path / "serve.log", AGENTLAKE_API_KEYS=KEYS):
        result = cli(data_dir, "lessons", "list")
    assert "AGENTLAKE_API_KEY" in result.stderr


def test_the_key_from_the_environment_is_sent(data_dir: Path, tmp_path: Path) -> None:
    with running_server(data_dir, tmp_path / "serve.log", AGENTLAKE_API_KEYS=KEYS):
        result = cli(data_dir, "lessons", "list", AGENTLAKE_API_KEY="beside-read-1")
    assert result.returncode == 0, result.stderr


def _stale_announcement(data_dir: Path, *, pid: int, process_start: int | None) -> Path:
    path = data_dir / "servers" / "gateway.json"
    path.parent.mkdir(exist_ok=True)
    body = {
        "kind": "gateway",
        "url": "http://127.0.0.1:9",
        "pid": pid,
        "stores": [str(data_dir / "lessons.duckdb")],
    }
    path.write_text(json.dumps(body | {"process_start": process_start}))
    return path


def test_a_dead_servers_file_is_ignored_with_a_note(data_dir: Path) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    _stale_announcement(data_dir, pid=dead.pid, process_start=None)
    assert "stale server file" in cli(data_dir, "lessons", "list").stderr


def test_a_dead_servers_file_does_not_stop_the_command(data_dir: Path) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    _stale_announcement(data_dir, pid=dead.pid, process_start=None)
    assert cli(data_dir, "lessons", "list").returncode == 0


def test_a_reused_pid_does_not_fool_the_lookup(data_dir: Path) -> None:
    # This test's own process is alive, but it started at another time than the file says.
    _stale_announcement(data_dir, pid=os.getpid(), process_start=1)
    assert running_servers(data_dir) == []


def test_the_stale_file_is_removed(data_dir: Path) -> None:
    path = _stale_announcement(data_dir, pid=os.getpid(), process_start=1)
    running_servers(data_dir)
    assert not path.exists()


def test_an_announcement_is_read_back_as_written(tmp_path: Path) -> None:
    settings = load_settings(data_dir=tmp_path)
    with announce(
        settings, kind="observer", url="http://127.0.0.1:3800/", stores=[tmp_path / "observe.duckdb"]
    ) as mine:
        # Another process reads what this one wrote (its own pid is skipped only by server_holding).
        assert running_servers(tmp_path) == [mine]


def test_an_announcement_states_what_it_holds(tmp_path: Path) -> None:
    settings = load_settings(data_dir=tmp_path)
    with announce(
        settings, kind="observer", url="http://127.0.0.1:3800", stores=[tmp_path / "observe.duckdb"]
    ) as mine:
        assert mine.holds(tmp_path / "observe.duckdb")


def services_lines() -> list[str]:
    text = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    block = re.search(r"```bash services\n(.*?)```", text, re.S)
    assert block, "README.md has no ```bash services block"
    return [line.split("  #")[0].strip() for line in block.group(1).splitlines() if line.strip()]


# The servers themselves are what runs beside; `observer serve` would be a second writer of the
# op store the gateway holds (it says so and exits 2, tested above for another command).
SERVERS = ("agentlake serve", "agentlake observer serve")


@pytest.mark.parametrize("line", [line for line in services_lines() if line not in SERVERS])
def test_the_readme_services_commands_work_beside_the_server(shared: Path, server, line: str) -> None:
    follow = "--follow" in line
    try:
        result = subprocess.run(
            ["bash", "-c", line.replace("agentlake", AGENTLAKE, 1)],
            env=clean_env(shared, COLUMNS="200"),
            capture_output=True,
            text=True,
            timeout=8 if follow else 300,
        )
    except subprocess.TimeoutExpired as stopped:
        # A follower runs until stopped: it must have printed the backlog by then.
        if not follow:
            raise
        assert (stopped.stdout or b"").strip(), stopped.stderr
        return
    assert result.returncode == 0, result.stderr


def test_retire_beside_the_server_goes_through_it(seeded: Path, tmp_path: Path) -> None:
    (lesson, *_) = json.loads(cli(seeded, "lessons", "list", "--format", "json").stdout)
    with running_server(seeded, tmp_path / "serve.log"):
        retired = cli(seeded, "lessons", "retire", lesson["id"], "--reason", "stale", "-f", "json")
        listed = cli(seeded, "lessons", "list", "--status", "retired", "-f", "json")
    assert retired.returncode == 0, retired.stderr
    assert [row["id"] for row in json.loads(listed.stdout)] == [lesson["id"]]
