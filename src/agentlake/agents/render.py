"""Compact text for prompts: the substance of rows and results, not raw JSON.

Owns how tool results, worker rows and rejections are written into an agent's prompt (short
``key=value`` lines, floats rounded, long lists cut with a count). It does not own what a tool
returns (``tools``), the shape of the prompt around it (``prompts``) or the data fence that
text from the lake goes inside (``agentlake.llm.fence``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date, datetime
from typing import Any

MAX_ROWS = 15
MAX_VALUE_CHARS = 60

# Columns that say most about a worker come first, in this order; the rest follow as they are.
_LEADING = ("worker_id", "name", "role", "city", "state", "distance_miles", "reliability", "availability")


def value_text(value: Any) -> str:
    """One value, short: floats to 2 decimals, datetimes to minutes, lists joined."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.2f}".rstrip("0").rstrip(".") if abs(value) < 1e6 else f"{value:.3g}"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, (list, tuple)):
        text = ", ".join(value_text(item) for item in value)
        return f"[{text}]"
    text = " ".join(str(value).split())
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 3] + "..."


def one_value_text(rows: Any) -> str | None:
    """``one value: n = 61`` for a result of one row of one column (a count, an average), ``one
    row: symbol = AAPL, price = 105.12`` for one row of several, else None. Said so, a small model
    quotes the value, where it answers "1 row" to ``1 row: n=61``."""
    if isinstance(rows, list) and len(rows) == 1 and isinstance(rows[0], Mapping) and len(rows[0]) == 1:
        ((column, value),) = rows[0].items()
        return f"one value: {column} = {value}"
    if isinstance(rows, list) and len(rows) == 1 and isinstance(rows[0], Mapping):
        return "one row: " + ", ".join(f"{column} = {value}" for column, value in rows[0].items())
    return None


def row_text(row: Mapping[str, Any], *, skip: Sequence[str] = ()) -> str:
    """``worker_id=12 name=Ann Lee role=Welder ...``: leading columns first, Nones dropped."""
    keys = [key for key in _LEADING if key in row] + [key for key in row if key not in _LEADING]
    parts = [f"{key}={value_text(row[key])}" for key in keys if key not in skip and row[key] is not None]
    return " ".join(parts)


def rows_text(
    rows: Sequence[Mapping[str, Any]],
    *,
    total: int | None = None,
    truncated: bool = False,
    limit: int = MAX_ROWS,
    columns: Sequence[str] | None = None,
) -> str:
    """Several rows, one per line, with a count line; at most ``limit`` rows shown, only
    ``columns`` (when given) of each."""
    count = total if total is not None else len(rows)
    if not rows:
        return "0 rows."
    head = f"{count}{'+' if truncated else ''} row{'s' if count != 1 else ''}:"
    if columns is not None:
        rows = [{key: row[key] for key in columns if key in row} for row in rows]
    lines = [head] + [f"- {row_text(row)}" for row in rows[:limit]]
    if len(rows) > limit:
        lines.append(f"... {len(rows) - limit} more rows not shown")
    return "\n".join(lines)


def ids_text(ids: Sequence[int], limit: int = 30) -> str:
    """``[1, 2, 3, ... +12 more]``."""
    shown = ", ".join(str(i) for i in ids[:limit])
    more = f", ... +{len(ids) - limit} more" if len(ids) > limit else ""
    return f"[{shown}{more}]"
