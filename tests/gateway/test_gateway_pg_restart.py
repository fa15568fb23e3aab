"""PostgreSQL restarted twice under load behind a real `agentlake serve`: the run is
benchmarks/bench_pg_restart.py (the 60 s benchmark, docs/benchmarks.md), here for 16 s with the
server down 2 s each time (`pg_ctl stop -m fast`, then `-m immediate`): its counts are what
this test checks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "bench_pg_restart.py"


@pytest.fixture(scope="module")
def run() -> dict:
    from agentlake.postgres import server_binaries

    if server_binaries() is None:
        pytest.skip("PostgreSQL's server programs are not installed (`make postgres` installs them)")
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--seconds", "16", "--down", "2", "--json"],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.stdout.strip(), done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_server_was_restarted_twice(run: dict) -> None:
    assert run["restarts"] == 2


def test_writes_while_it_was_down_were_answered_503(run: dict) -> None:
    assert run["writes_answered_503"] > 0


def test_every_503_said_when_to_retry(run: dict) -> None:
    assert run["writes_503_without_retry_after"] == 0


def test_every_write_was_answered_200_or_503(run: dict) -> None:
    assert run["writes_answered_other"] == 0


def test_every_acknowledged_event_is_stored(run: dict) -> None:
    assert run["acked_not_stored"] == 0


def test_no_event_is_stored_twice(run: dict) -> None:
    assert run["stored_twice"] == 0


def test_no_event_is_stored_that_was_never_sent(run: dict) -> None:
    assert run["stored_never_sent"] == 0


def test_the_spooling_client_spooled_while_it_was_down(run: dict) -> None:
    assert run["client_spooled"] > 0


def test_the_spooling_client_delivered_everything_it_was_given(run: dict) -> None:
    assert run["client_not_stored"] == 0


def test_reads_while_it_was_down_were_answered_200_or_503(run: dict) -> None:
    assert run["reads_while_down_other_than_200_503"] == 0


def test_the_gateway_acknowledged_again_after_each_restart_within_seconds(run: dict) -> None:
    assert all(seconds is not None and seconds < 5 for seconds in run["recovery_s"])
