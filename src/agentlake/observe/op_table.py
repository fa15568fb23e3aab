"""The ``ops`` table: its named migrations, the Arrow schema ops are written in, an op as a row.

Owns the table's shape in DuckDB (``MIGRATIONS``: add-only, recorded in ``_migrations``; the
PostgreSQL store derives its own text from them), the columns and their Arrow types a batch of
ops is committed as (:func:`op_rows`), and a stored row read back as an ``ObservedOp``
(:func:`op_of_row`). It does not own writing (the queue, group commit and outages of
``store.OpStore`` and ``pg_store.PgOpStore``) or reading by filter (``store``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

from agentlake.errors import UserError
from agentlake.migrations import Migration
from agentlake.observe.model import LLMUsage, ObservedOp

MIGRATIONS = [
    Migration(
        "0001_ops",
        """
        CREATE TABLE ops (
            id VARCHAR PRIMARY KEY,
            seq BIGINT NOT NULL,
            ts TIMESTAMP NOT NULL,            -- UTC
            trace_id VARCHAR,
            span_id VARCHAR,
            parent_span_id VARCHAR,
            endpoint VARCHAR NOT NULL,
            source VARCHAR NOT NULL,
            agent_id VARCHAR,
            input_summary VARCHAR,
            output_summary VARCHAR,
            success BOOLEAN NOT NULL,
            duration_ms DOUBLE NOT NULL,
            error VARCHAR,
            staffer_id VARCHAR,
            run_id VARCHAR,
            event_kind VARCHAR,
            role VARCHAR,
            city VARCHAR,
            state VARCHAR,
            "count" INTEGER,
            sig_hash VARCHAR,
            rescue_attempted BOOLEAN,
            rescue_succeeded BOOLEAN,
            llm_provider VARCHAR,
            llm_model VARCHAR,
            input_tokens BIGINT,
            output_tokens BIGINT,
            thinking_tokens BIGINT,
            finish_reason VARCHAR,
            attempts INTEGER,
            continuations INTEGER,
            cost_usd DOUBLE,
            attributes VARCHAR,               -- JSON object
            stored_at TIMESTAMP NOT NULL      -- UTC, when the writer committed it
        )
        """,
    ),
]

# Labels (0002): the fields a domain stamps on its ops, as one JSON object. The columns that
# held such fields before (written by releases up to 0.1) are read into labels by the
# migration and left empty since; ``run_id`` stays a column of its own.
LABELS_MIGRATION_SQL = """
    ALTER TABLE ops ADD COLUMN labels VARCHAR;
    UPDATE ops SET labels = CAST(json_object(
        'staffer_id', staffer_id, 'event_kind', event_kind, 'role', role, 'city', city, 'state', state,
        'count', "count", 'sig_hash', sig_hash, 'rescue_attempted', rescue_attempted,
        'rescue_succeeded', rescue_succeeded) AS VARCHAR)
    WHERE staffer_id IS NOT NULL OR event_kind IS NOT NULL OR role IS NOT NULL OR city IS NOT NULL
        OR state IS NOT NULL OR "count" IS NOT NULL OR sig_hash IS NOT NULL
        OR rescue_attempted IS NOT NULL OR rescue_succeeded IS NOT NULL;
"""
MIGRATIONS.append(Migration("0002_labels", LABELS_MIGRATION_SQL))

# LLMUsage field -> column; provider and model are prefixed so they read clearly in SQL.
USAGE_COLUMNS = {
    name: (f"llm_{name}" if name in ("provider", "model") else name) for name in LLMUsage.model_fields
}

_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("seq", pa.int64()),
        ("ts", pa.timestamp("us")),
        ("trace_id", pa.string()),
        ("span_id", pa.string()),
        ("parent_span_id", pa.string()),
        ("endpoint", pa.string()),
        ("source", pa.string()),
        ("agent_id", pa.string()),
        ("input_summary", pa.string()),
        ("output_summary", pa.string()),
        ("success", pa.bool_()),
        ("duration_ms", pa.float64()),
        ("error", pa.string()),
        ("run_id", pa.string()),
        ("labels", pa.string()),
        ("llm_provider", pa.string()),
        ("llm_model", pa.string()),
        ("input_tokens", pa.int64()),
        ("output_tokens", pa.int64()),
        ("thinking_tokens", pa.int64()),
        ("finish_reason", pa.string()),
        ("attempts", pa.int32()),
        ("continuations", pa.int32()),
        ("cost_usd", pa.float64()),
        ("attributes", pa.string()),
        ("stored_at", pa.timestamp("us")),
    ]
)

OPS_COLUMNS = [f.name for f in _SCHEMA]

OPS_SELECT = ", ".join(f'"{name}"' for name in OPS_COLUMNS)

_TYPES = {f.name: f.type for f in _SCHEMA}


def naive_utc(value: datetime) -> datetime:
    """``value`` as naive UTC; ``UserError`` when UTC falls outside years 1-9999."""
    try:
        return value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value
    except OverflowError:
        raise UserError(
            f"{value.isoformat()} is outside the range of timestamps once converted to UTC"
        ) from None


def op_rows(ops: Sequence[ObservedOp], first_seq: int, stored_at: datetime) -> pa.Table:
    # Column by column with comprehensions: about 5x faster than appending row by row, and
    # this runs on the writer thread for every op ingested. Arrays are built per column and a
    # column with no value at all is a typed null array: Table.from_pydict spent ~115 us on
    # matching 35 lists to the schema, the main cost of the small commits of single events.
    usages = [op.usage for op in ops]
    cols: dict[str, Any] = {
        "id": [op.id for op in ops],
        "seq": list(range(first_seq, first_seq + len(ops))),
        # ObservedOp keeps ts UTC-aware; Arrow converts to UTC wall time in C (see below).
        "ts": pa.array([op.ts for op in ops], pa.timestamp("us", tz="UTC")).cast(pa.timestamp("us")),
        "trace_id": [op.trace_id for op in ops],
        "span_id": [op.span_id for op in ops],
        "parent_span_id": [op.parent_span_id for op in ops],
        "endpoint": [op.endpoint for op in ops],
        "source": [op.source for op in ops],
        "agent_id": [op.agent_id for op in ops],
        "input_summary": [op.input_summary for op in ops],
        "output_summary": [op.output_summary for op in ops],
        "success": [op.success for op in ops],
        "duration_ms": [op.duration_ms for op in ops],
        "error": [op.error for op in ops],
        "run_id": [op.run_id for op in ops],
        "labels": [json.dumps(op.labels, ensure_ascii=False) if op.labels else None for op in ops],
        "attributes": [
            json.dumps(op.attributes, default=str, ensure_ascii=False) if op.attributes else None
            for op in ops
        ],
        "stored_at": [stored_at] * len(ops),
    }
    any_usage = any(usage is not None for usage in usages)
    for name, column in USAGE_COLUMNS.items():
        cols[column] = [None if u is None else getattr(u, name) for u in usages] if any_usage else None
    n = len(ops)
    arrays = []
    for name in OPS_COLUMNS:
        values = cols[name]
        if isinstance(values, pa.Array):
            arrays.append(values)
        elif values is None or all(value is None for value in values):
            arrays.append(pa.nulls(n, _TYPES[name]))
        else:
            arrays.append(pa.array(values, _TYPES[name]))
    return pa.Table.from_arrays(arrays, schema=_SCHEMA)


def _finite(value: Any) -> Any:
    """A stored float that JSON can carry: NaN and infinities (stored before ingest refused them)
    read as None, so one old row cannot break every read that includes it."""
    return None if isinstance(value, float) and not math.isfinite(value) else value


def op_of_row(row: Sequence[Any]) -> ObservedOp:
    rec = dict(zip(OPS_COLUMNS, row, strict=True))
    usage_values = {name: _finite(rec[column]) for name, column in USAGE_COLUMNS.items()}
    # model_construct: rows were validated on the way in (and rows stored before a rule was
    # added must still be readable).
    usage = (
        LLMUsage.model_construct(**usage_values)
        if any(v is not None for v in usage_values.values())
        else None
    )
    return ObservedOp.model_construct(
        id=rec["id"],
        ts=rec["ts"].replace(tzinfo=UTC),
        trace_id=rec["trace_id"],
        span_id=rec["span_id"],
        parent_span_id=rec["parent_span_id"],
        endpoint=rec["endpoint"],
        source=rec["source"],
        agent_id=rec["agent_id"],
        input_summary=rec["input_summary"] or "",
        output_summary=rec["output_summary"] or "",
        success=rec["success"],
        duration_ms=_finite(rec["duration_ms"]) or 0.0,
        error=rec["error"],
        run_id=rec["run_id"],
        labels=_labels(rec["labels"]),
        usage=usage,
        seq=rec["seq"],
        # parse_constant: a NaN or Infinity stored before ingest refused them reads as text.
        attributes=json.loads(rec["attributes"], parse_constant=str) if rec["attributes"] else {},
    )


def _labels(text: str | None) -> dict[str, Any]:
    """Stored labels as a dict (the migrated ones of older rows hold nulls: dropped)."""
    if not text:
        return {}
    return {key: value for key, value in json.loads(text).items() if value is not None}
