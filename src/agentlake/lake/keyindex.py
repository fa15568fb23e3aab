"""Key indexes: an ART index on a dataset's key column, so a point read by key is an index lookup.

Owns :func:`ensure_key_index`, which creates (once) the index named ``<dataset>__<column>__key``
through the lake's writer. Without it, ``WHERE worker_id = ?`` scans the column: ~3.5 ms of CPU
per read at 500,000 workers against ~0.55 ms with the index (``benchmarks/bench_gateway.py``
notes); building it takes ~0.2 s at that size. It does not decide which reads need one (the
gateway asks for ``workers.worker_id``) and it is not a migration: datasets come and go with
ingests, and a ``replace`` ingest drops the table's indexes with it, so callers ensure the
index again whenever the lake's change token moves (a check is one catalog query).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import duckdb

from agentlake.lake.catalog import check_dataset_name, quote_ident, table_columns

if TYPE_CHECKING:
    from agentlake.lake.lakehouse import Lake


def key_index_name(dataset: str, column: str) -> str:
    """The name :func:`ensure_key_index` gives the index of ``dataset.column``."""
    return f"{dataset}__{column}__key"


def ensure_key_index(lake: Lake, dataset: str, column: str) -> bool:
    """Create the key index of ``dataset.column`` unless it exists; ``True`` when it was created.

    ``False`` (nothing written) when it already exists, when the dataset or the column does not
    exist (there is nothing to index yet) or when the lake is read-only. Raises ``UserError`` for
    an invalid dataset name, ``RunError`` when creating it fails.
    """
    check_dataset_name(dataset)
    if lake.read_only:
        return False
    name = key_index_name(dataset, column)
    with lake.cursor() as cur:
        if column not in {existing for existing, _ in table_columns(cur, dataset)}:
            return False
        if _exists(cur, dataset, name):
            return False

    def create(conn: duckdb.DuckDBPyConnection) -> bool:
        # Checked again under the writer: another thread may have created it meanwhile.
        if _exists(conn, dataset, name):
            return False
        conn.execute(f"CREATE INDEX {quote_ident(name)} ON {quote_ident(dataset)} ({quote_ident(column)})")
        return True

    return lake.write(create)


def _exists(conn: duckdb.DuckDBPyConnection, dataset: str, name: str) -> bool:
    row = conn.execute(
        "SELECT count(*) FROM duckdb_indexes() WHERE schema_name = 'main' AND table_name = ? AND index_name = ?",
        [dataset, name],
    ).fetchone()
    return bool(row and row[0])
