"""Several writers at once: two gateways (separate processes with their own data directories, as
on two hosts) recording ops and curating the same lesson in one PostgreSQL database, one of them
SIGKILLed mid-run. The run is benchmarks/bench_pg_writers.py (the 60 s benchmark), here for 8 s
against the session's cluster: its counts are what this test checks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "bench_pg_writers.py"


@pytest.fixture(scope="module")
def run(postgres_cluster) -> dict[str, int]:
    done = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--seconds",
            "8",
            "--database-url",
            postgres_cluster.create_database(),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.stdout.strip(), done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_both_gateways_acknowledged_ops_and_the_survivor_went_on(run: dict[str, int]) -> None:
    assert run["acked_b"] > 0
    assert run["acked_a_after_kill"] > 0


def test_every_acknowledged_op_is_stored(run: dict[str, int]) -> None:
    assert run["acked_not_stored"] == 0


def test_no_op_is_stored_twice(run: dict[str, int]) -> None:
    assert run["stored_twice"] == 0


def test_no_op_is_stored_that_was_never_sent(run: dict[str, int]) -> None:
    assert run["stored_never_sent"] == 0


def test_both_gateways_curated_one_lesson_and_lost_no_update(run: dict[str, int]) -> None:
    assert run["lesson_updates_acked_b"] > 0
    assert run["lessons_curated"] == 1
    assert run["lesson_updates_lost"] == 0
