"""Named, add-only schema migrations for agentlake's DuckDB files.

Each owner of a DuckDB file (the lake, the observer's store, the lesson store) declares an
ordered list of :class:`Migration` and calls :func:`apply_migrations` when it opens the file.
Applied names are recorded in ``_migrations``; a migration is never edited or removed once
released, only new ones appended. This module does not own any schema itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import duckdb

from agentlake.errors import RunError


@dataclass(frozen=True)
class Migration:
    name: str
    sql: str


def apply_migrations(conn: duckdb.DuckDBPyConnection, migrations: Sequence[Migration]) -> list[str]:
    """Apply the migrations not yet recorded, in order, each in its own transaction.

    Returns the names applied now. Raises ``RunError`` if a recorded name is not in
    ``migrations`` (the file was written by a newer agentlake) or a migration fails.
    """
    names = [migration.name for migration in migrations]
    if len(set(names)) != len(names):
        raise RunError(f"duplicate migration names in {names}")
    conn.execute(
        "CREATE TABLE IF NOT EXISTS _migrations (name VARCHAR PRIMARY KEY, applied_at TIMESTAMPTZ DEFAULT now())"
    )
    done = {row[0] for row in conn.execute("SELECT name FROM _migrations").fetchall()}
    unknown = done - set(names)
    if unknown:
        raise RunError(
            f"this file has migrations {sorted(unknown)} unknown to this agentlake version; upgrade agentlake"
        )
    applied = []
    for migration in migrations:
        if migration.name in done:
            continue
        try:
            conn.execute("BEGIN TRANSACTION")
            conn.execute(migration.sql)
            conn.execute("INSERT INTO _migrations (name) VALUES (?)", [migration.name])
            conn.execute("COMMIT")
        except duckdb.Error as exc:
            conn.execute("ROLLBACK")
            raise RunError(f"migration {migration.name} failed: {exc}") from exc
        applied.append(migration.name)
    return applied
