"""Fixtures for the observer tests: op stores on both backends (DuckDB file, PostgreSQL)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agentlake.observe import OpStore


@pytest.fixture(params=["duckdb", "postgres"])
def open_ops(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[..., OpStore]]:
    """``open_ops(read_only=False, cls=None, **kwargs)``: an op store on this test's backend, the
    same one each call (a DuckDB file in tmp_path, or a fresh PostgreSQL database)."""
    if request.param == "postgres":
        from agentlake.observe.pg_store import PgOpStore

        url = request.getfixturevalue("database_url")

        def _open(*, cls: type | None = None, **kwargs: object) -> OpStore:
            base = PgOpStore if cls is None else type(cls.__name__, (cls, PgOpStore), {})
            return base(url, **kwargs)
    else:

        def _open(*, cls: type | None = None, **kwargs: object) -> OpStore:
            base = OpStore if cls is None else type(cls.__name__, (cls, OpStore), {})
            return base(tmp_path / "o.duckdb", **kwargs)

    yield _open
