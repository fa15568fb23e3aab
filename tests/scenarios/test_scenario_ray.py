"""Scenario days on the Ray backend: one local Ray (2 CPUs) for the module.

The days run in Ray worker processes; with ``database_url`` set the parent records their ops in
PostgreSQL and each learning arm's lessons live in their own schema there, which the workers read.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from agentlake.learn import LessonStore
from agentlake.learn.store import PgSchema
from agentlake.observe import open_observer
from agentlake.scenarios import load_scenarios, read_results
from agentlake.scenarios.results import arm_schema
from agentlake.scenarios.runner import run_scenarios
from agentlake.settings import Settings, load_settings

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def ray_instance() -> Iterator[object]:
    """A local Ray with 2 CPUs, started once for the module (its start-up is seconds)."""
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield ray
    finally:
        ray.shutdown()


def test_ray_backend_on_a_local_instance(scenario_settings: Settings, observer, ray_instance) -> None:
    days = [s for s in load_scenarios("builtin") if s.scenario == "eagle-container-day1"]
    inline = run_scenarios(
        days,
        ["rules-learning"],
        batches=2,
        repeat=2,
        settings=scenario_settings,
        observer=observer,
        run_id="i",
    )
    on_ray = run_scenarios(
        days,
        ["rules-learning"],
        batches=2,
        repeat=2,
        backend="ray",
        settings=scenario_settings,
        observer=observer,
        run_id="r",
    )
    key = lambda r: (r.batch, r.repetition, r.event_id, r.filled, tuple(r.accepted))  # noqa: E731
    assert sorted(map(key, read_results(on_ray.run_dir))) == sorted(map(key, read_results(inline.run_dir)))
    assert json.loads((on_ray.run_dir / "plan.json").read_text())["backend"] == "ray"
    board = json.loads((on_ray.run_dir / "leaderboard.json").read_text())
    assert {row["repetitions"] for row in board["per_batch"]} == {2}
    assert all(0 <= row["pass_k"] <= row["event_success_rate"] for row in board["per_batch"])


def test_a_ray_run_learns_into_postgresql(
    scenario_settings: Settings,
    database_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    ray_instance,
) -> None:
    monkeypatch.setenv("AGENTLAKE_DATABASE_URL", database_url)
    settings = load_settings(runs_dir=str(tmp_path / "runs"))
    pack = [s for s in load_scenarios("builtin") if s.scenario.startswith("eagle-container-")]
    observer = open_observer(settings)
    try:
        summary = run_scenarios(
            pack,
            ["rules-learning"],
            batches=2,
            backend="ray",
            workers=2,
            settings=settings,
            observer=observer,
            run_id="rp",
        )
    finally:
        observer.close()
    with psycopg.connect(database_url) as conn:
        stored = conn.execute("SELECT count(*), count(DISTINCT id) FROM ops").fetchone()
    # Every op the workers' days recorded is in PostgreSQL, and none twice.
    assert summary.ops > 0
    assert stored == (summary.ops, summary.ops)

    with LessonStore.open(
        settings, path=PgSchema(name=arm_schema("rp", "rules-learning")), read_only=True
    ) as store:
        lessons = {lesson.id: lesson for lesson in store.list()}
        histories = {lesson_id: store.history(lesson_id) for lesson_id in lessons}
    assert lessons, "the arm learned lessons into its schema in PostgreSQL"
    assert all(
        [event.version for event in history] == list(range(1, lessons[lesson_id].version + 1))
        for lesson_id, history in histories.items()
    )

    # 08:00 of each day of batch 2 (before the day learns anything itself) was given lessons
    # batch 1 wrote into PostgreSQL; at 08:00 of batch 1 there were none.
    results = read_results(summary.run_dir)
    first_event = {s.scenario: s.events[0].id for s in pack}
    mornings = {
        (r.batch, r.scenario): set(r.lessons_given) for r in results if r.event_id == first_event[r.scenario]
    }
    assert all(not given for (batch, _), given in mornings.items() if batch == 1)
    assert all(given and given <= set(lessons) for (batch, _), given in mornings.items() if batch == 2)
    assert len(mornings) == 2 * len(pack)

    # Nothing went to the DuckDB stores: neither the data dir's op and lesson files nor a
    # lesson file in the run.
    assert not settings.observer_path.exists()
    assert not (settings.data_dir / settings.learn_file).exists()
    assert list((summary.run_dir / "lessons").iterdir()) == []


def test_an_arms_store_in_postgresql_without_a_database_url_is_an_error_not_a_file(
    scenario_settings: Settings,
) -> None:
    from agentlake.errors import UserError
    from agentlake.learn.store import lesson_snapshot

    with pytest.raises(UserError, match="needs database_url; set AGENTLAKE_DATABASE_URL"):
        with lesson_snapshot(PgSchema(name="run_x"), scenario_settings):
            pass
