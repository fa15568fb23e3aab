"""Fixtures for the learning-loop tests: a controllable clock and lesson stores on disk."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

import pytest

from agentlake.learn import LessonStore
from agentlake.settings import Settings, load_settings

START = datetime(2026, 11, 21, 8, 0, tzinfo=UTC)


class Clock:
    """A clock tests move by hand: ``clock.advance(days=31)``."""

    def __init__(self, now: datetime = START) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> datetime:
        self.now += timedelta(**delta)
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> str:
    """Where the lesson store lives: "duckdb" (a file in the data dir) unless a module
    parametrises it (``pytest.mark.parametrize("backend", [...], indirect=True)``)."""
    return getattr(request, "param", "duckdb")


@pytest.fixture
def settings(backend: str, request: pytest.FixtureRequest) -> Settings:
    if backend == "postgres":
        return load_settings(database_url=request.getfixturevalue("database_url"))
    return load_settings()


@pytest.fixture
def duckdb_only(backend: str) -> None:
    """For a test of the DuckDB file itself (its schema on disk, its one-writer rule)."""
    if backend != "duckdb":
        pytest.skip("about the DuckDB file itself")


@pytest.fixture(scope="session")
def embedder():  # whatever agentlake.embed returns
    """The real default embedder (local all-MiniLM-L6-v2, offline), loaded once per session."""
    from agentlake.embed import get_embedder

    return get_embedder("local:all-MiniLM-L6-v2")


@pytest.fixture
def open_store(settings: Settings, clock: Clock) -> Iterator[Callable[..., LessonStore]]:
    """Open lesson stores in the test's data dir (similarity off unless an embedder is given)."""
    opened: list[LessonStore] = []

    def _open(**kwargs: object) -> LessonStore:
        kwargs.setdefault("clock", clock)
        kwargs.setdefault("embedder", False)
        store = LessonStore.open(settings, **kwargs)  # type: ignore[arg-type]
        opened.append(store)
        return store

    yield _open
    for store in opened:
        store.close()


@pytest.fixture
def store(open_store: Callable[..., LessonStore]) -> LessonStore:
    return open_store()
