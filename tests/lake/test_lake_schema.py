"""The lake file's schema: what its named migrations build, and lakes written by older versions."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np

from agentlake.embed import embed_texts, text_hash
from agentlake.embed.cache import cached_vectors
from agentlake.lake import Lake, catalog
from agentlake.lake.index import list_indexes
from agentlake.migrations import apply_migrations
from agentlake.settings import load_settings

ALL_MIGRATIONS = ["lake_001_catalog", "lake_002_embedding_cache", "lake_003_vector_indexes"]

# How the search tables were created on first use, before they had migrations (kept verbatim:
# lakes written that way exist).
OLD_FIRST_USE_DDL = """
CREATE TABLE IF NOT EXISTS _embedding_cache (
    model VARCHAR NOT NULL,
    text_hash VARCHAR NOT NULL,
    vec FLOAT[] NOT NULL,
    PRIMARY KEY (model, text_hash)
);
CREATE TABLE IF NOT EXISTS _vector_indexes (
    dataset VARCHAR PRIMARY KEY,
    text_column VARCHAR NOT NULL,
    key_column VARCHAR NOT NULL,
    model VARCHAR NOT NULL,
    dimension INTEGER NOT NULL,
    row_count BIGINT NOT NULL,
    fingerprint VARCHAR NOT NULL,
    dataset_updated_at TIMESTAMP,
    built_at TIMESTAMP NOT NULL
);
"""


class FixedEmbedder:
    """Two-dimensional vectors from the text's length; counts the texts that reach it."""

    name = "test:fixed"
    dimension = 2

    def __init__(self) -> None:
        self.embedded = 0

    def embed(self, texts: list[str]) -> np.ndarray:
        self.embedded += len(texts)
        raw = np.array([[1.0, float(len(text))] for text in texts], dtype=np.float32)
        return raw / np.linalg.norm(raw, axis=1, keepdims=True)


def old_lake(path: Path, *, search_tables: bool) -> None:
    """A lake file as an older agentlake left it: only the catalog migration recorded."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = duckdb.connect(str(path))
    try:
        apply_migrations(conn, catalog.LAKE_MIGRATIONS)
        if search_tables:
            conn.execute(OLD_FIRST_USE_DDL)
            conn.execute(
                "INSERT INTO _embedding_cache VALUES (?, ?, ?)",
                ["test:fixed", text_hash("welder"), [0.6, 0.8]],
            )
            conn.execute(
                "INSERT INTO _vector_indexes VALUES ('workers', 'resume_text', 'worker_id', 'test:fixed', 2, 1, "
                "'abc', NULL, TIMESTAMP '2026-11-01 08:00:00')"
            )
    finally:
        conn.close()


def schema(lake: Lake) -> dict[str, list[tuple[str, str, str]]]:
    rows = lake.read_arrow(
        "SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns "
        "WHERE table_schema = 'main' ORDER BY table_name, ordinal_position"
    ).to_pylist()
    tables: dict[str, list[tuple[str, str, str]]] = {}
    for row in rows:
        tables.setdefault(row["table_name"], []).append(
            (row["column_name"], row["data_type"], row["is_nullable"])
        )
    return tables


def primary_keys(lake: Lake) -> dict[str, list[str]]:
    rows = lake.read_arrow(
        "SELECT table_name, constraint_column_names AS columns FROM duckdb_constraints() "
        "WHERE constraint_type = 'PRIMARY KEY' ORDER BY table_name"
    ).to_pylist()
    return {row["table_name"]: row["columns"] for row in rows}


def migrations(lake: Lake) -> list[str]:
    return lake.read_arrow("SELECT name FROM _migrations ORDER BY name").column("name").to_pylist()


def test_a_fresh_lake_has_the_final_schema() -> None:
    with Lake.open() as lake:
        assert migrations(lake) == ALL_MIGRATIONS
        tables = schema(lake)
        keys = primary_keys(lake)
    assert sorted(tables) == [
        "_catalog",
        "_embedding_cache",
        "_ingest_history",
        "_migrations",
        "_vector_indexes",
    ]
    assert tables["_catalog"] == [
        ("name", "VARCHAR", "NO"),
        ("key", "VARCHAR", "YES"),
        ("created_at", "TIMESTAMP", "NO"),
        ("updated_at", "TIMESTAMP", "NO"),
    ]
    assert tables["_ingest_history"] == [
        ("id", "BIGINT", "NO"),
        ("dataset", "VARCHAR", "NO"),
        ("at", "TIMESTAMP", "NO"),
        ("source", "VARCHAR", "NO"),
        ("mode", "VARCHAR", "NO"),
        ("rows_in", "BIGINT", "NO"),
        ("rows_before", "BIGINT", "NO"),
        ("rows_after", "BIGINT", "NO"),
        ("added_columns", "VARCHAR[]", "NO"),
    ]
    assert tables["_embedding_cache"] == [
        ("model", "VARCHAR", "NO"),
        ("text_hash", "VARCHAR", "NO"),
        ("vec", "FLOAT[]", "NO"),
    ]
    assert tables["_vector_indexes"] == [
        ("dataset", "VARCHAR", "NO"),
        ("text_column", "VARCHAR", "NO"),
        ("key_column", "VARCHAR", "NO"),
        ("model", "VARCHAR", "NO"),
        ("dimension", "INTEGER", "NO"),
        ("row_count", "BIGINT", "NO"),
        ("fingerprint", "VARCHAR", "NO"),
        ("dataset_updated_at", "TIMESTAMP", "YES"),
        ("built_at", "TIMESTAMP", "NO"),
    ]
    assert keys == {
        "_catalog": ["name"],
        "_embedding_cache": ["model", "text_hash"],
        "_migrations": ["name"],
        "_vector_indexes": ["dataset"],
    }


def test_a_lake_whose_search_tables_were_made_on_first_use_opens_and_keeps_them() -> None:
    path = load_settings().lake_path
    old_lake(path, search_tables=True)
    for _ in range(2):  # the second open finds everything applied
        with Lake.open() as lake:
            assert migrations(lake) == ALL_MIGRATIONS
            assert [(i.dataset, i.model, i.row_count) for i in list_indexes(lake)] == [
                ("workers", "test:fixed", 1)
            ]
            embedder = FixedEmbedder()
            vectors, stats = embed_texts(embedder, ["welder"], lake=lake)
            assert (stats.cached, embedder.embedded) == (1, 0)  # the old cache row answered
            np.testing.assert_allclose(vectors[0], [0.6, 0.8], rtol=1e-6)


def test_a_lake_from_before_the_search_tables_gets_them_and_can_cache() -> None:
    path = load_settings().lake_path
    old_lake(path, search_tables=False)
    with Lake.open(read_only=True) as lake:  # not migrated: reads see an empty cache and no index
        assert migrations(lake) == ["lake_001_catalog"]
        assert cached_vectors(lake, "test:fixed", [text_hash("welder")]) == {}
        assert list_indexes(lake) == []
    with Lake.open() as lake:
        assert migrations(lake) == ALL_MIGRATIONS
        embedder = FixedEmbedder()
        embed_texts(embedder, ["welder", "nurse"], lake=lake)
        _, stats = embed_texts(embedder, ["welder", "nurse"], lake=lake)
    assert (embedder.embedded, stats.cached) == (2, 2)
