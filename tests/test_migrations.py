from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from agentlake.errors import RunError
from agentlake.migrations import Migration, apply_migrations

M1 = Migration("001_items", "CREATE TABLE items (id INTEGER)")
M2 = Migration("002_items_name", "ALTER TABLE items ADD COLUMN name VARCHAR")


def test_applies_once_in_order_and_survives_reopen(tmp_path: Path) -> None:
    path = tmp_path / "m.duckdb"
    with duckdb.connect(str(path)) as conn:
        assert apply_migrations(conn, [M1]) == ["001_items"]
    with duckdb.connect(str(path)) as conn:
        assert apply_migrations(conn, [M1, M2]) == ["002_items_name"]
        assert apply_migrations(conn, [M1, M2]) == []
        assert [row[0] for row in conn.execute("DESCRIBE items").fetchall()] == ["id", "name"]


def test_failed_migration_rolls_back_and_is_not_recorded(tmp_path: Path) -> None:
    with duckdb.connect(str(tmp_path / "m.duckdb")) as conn:
        bad = Migration("002_bad", "ALTER TABLE nowhere ADD COLUMN x INTEGER")
        with pytest.raises(RunError, match="002_bad"):
            apply_migrations(conn, [M1, bad])
        assert [r[0] for r in conn.execute("SELECT name FROM _migrations").fetchall()] == ["001_items"]


def test_unknown_recorded_migration_is_refused(tmp_path: Path) -> None:
    with duckdb.connect(str(tmp_path / "m.duckdb")) as conn:
        apply_migrations(conn, [M1, M2])
        with pytest.raises(RunError, match="upgrade agentlake"):
            apply_migrations(conn, [M1])
