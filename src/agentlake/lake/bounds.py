"""The limits every SQL path of the lake runs under: one timeout, result bytes, error text.

Owns the watchdog that interrupts a DuckDB cursor at its deadline (one daemon thread for all
queries: a ``threading.Timer`` per query costs more than a selective search), the conversion
of DuckDB's interrupt and out-of-memory errors into ``RunError`` naming the setting to raise,
the cap on the bytes of a result (:func:`fit_rows`) and the cap on DuckDB error text that
reaches a message (:func:`error_line`). ``Lake.bounded`` puts them together; the guarded
query, the search filter and the lesson filters of candidate searches all read through it.

It does not decide what SQL may run (``guard``) and owns no connection. DuckDB's memory limit
is a setting of the lake's connection (``duckdb_memory_limit``, applied by ``Lake.open``).
"""

from __future__ import annotations

import atexit
import heapq
import itertools
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import duckdb

from agentlake.errors import RunError

# DuckDB error text is cut to this many characters wherever it reaches a message: a failing
# cast echoes the value it could not cast, which a query can make as large as it likes.
MAX_ERROR_CHARS = 300


# The line DuckDB adds after a missing table or column with the names it does have: worth
# its characters, as it is what fixes the query.
_HINT = ("Did you mean", "Candidate bindings")


def error_line(exc: BaseException, limit: int = MAX_ERROR_CHARS) -> str:
    """The first line of an error's text, and DuckDB's hint line after it when there is one
    ("Did you mean ...", "Candidate bindings: ..."), at most ``limit`` characters (the cut is
    marked)."""
    text = str(exc).strip()
    lines = text.splitlines() if text else [type(exc).__name__]
    line = lines[0]
    hint = next((item.strip() for item in lines[1:3] if item.strip().startswith(_HINT)), None)
    if hint:
        line = f"{line} {hint}"
    return line if len(line) <= limit else line[:limit] + f"...[+{len(line) - limit} chars]"


def excerpt(text: str, limit: int = 200) -> str:
    """``repr`` of user text for a message, cut to ``limit`` characters."""
    return repr(text) if len(text) <= limit else repr(text[:limit]) + f"...[+{len(text) - limit} chars]"


class Watchdog:
    """Interrupts DuckDB cursors that outlive their deadline (one thread, a heap of deadlines)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._deadlines: list[tuple[float, int]] = []
        self._cursors: dict[int, duckdb.DuckDBPyConnection] = {}
        self._ids = itertools.count()
        self._thread: threading.Thread | None = None
        self._stopping = False

    def stop(self) -> None:
        """End the thread (at exit: a thread still parked in DuckDB's objects at interpreter
        teardown makes the bindings report leaks)."""
        with self._cond:
            self._stopping = True
            self._cond.notify()
        if self._thread is not None:
            self._thread.join(timeout=1)

    def watch(self, cursor: duckdb.DuckDBPyConnection, timeout_s: float) -> int:
        """Interrupt ``cursor`` in ``timeout_s`` seconds unless :meth:`release` comes first."""
        ticket = next(self._ids)
        with self._cond:
            self._cursors[ticket] = cursor
            heapq.heappush(self._deadlines, (time.monotonic() + timeout_s, ticket))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="agentlake-sql-watchdog", daemon=True)
                self._thread.start()
            elif self._deadlines[0][1] == ticket:
                self._cond.notify()
        return ticket

    def release(self, ticket: int) -> None:
        with self._cond:
            self._cursors.pop(ticket, None)

    def _run(self) -> None:
        with self._cond:
            while not self._stopping:
                while self._deadlines and self._deadlines[0][1] not in self._cursors:
                    heapq.heappop(self._deadlines)
                if not self._deadlines:
                    self._cond.wait()
                    continue
                deadline, ticket = self._deadlines[0]
                wait = deadline - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                heapq.heappop(self._deadlines)
                cursor = self._cursors.pop(ticket, None)
                if cursor is not None:
                    cursor.interrupt()


WATCHDOG = Watchdog()
atexit.register(WATCHDOG.stop)


@contextmanager
def watched(
    cursor: duckdb.DuckDBPyConnection, timeout_s: float, *, what: str, memory_limit: str
) -> Iterator[duckdb.DuckDBPyConnection]:
    """Run the block with ``cursor`` interrupted after ``timeout_s``; closes the cursor.

    An interrupt becomes ``RunError`` naming ``sql_timeout_s``, running out of DuckDB's memory
    limit a ``RunError`` naming ``duckdb_memory_limit``; other DuckDB errors pass through for
    the caller to judge (wrong SQL is the user's, anything else a run failure).
    """
    ticket = WATCHDOG.watch(cursor, timeout_s)
    try:
        yield cursor
    except duckdb.InterruptException:
        raise RunError(
            f"{what} was interrupted after the {timeout_s:g} s timeout; narrow it (filter, LIMIT) or raise "
            "sql_timeout_s (AGENTLAKE_SQL_TIMEOUT_S)"
        ) from None
    except duckdb.OutOfMemoryException:
        raise RunError(
            f"{what} needs more memory than the lake's limit of {memory_limit}; narrow it or raise "
            "duckdb_memory_limit (AGENTLAKE_DUCKDB_MEMORY_LIMIT)"
        ) from None
    finally:
        WATCHDOG.release(ticket)
        cursor.close()


# --- result bytes ---------------------------------------------------------------------------

_CUT = "...[cut: sql_max_result_bytes]"


def value_bytes(value: Any, limit: int) -> int:
    """About how many bytes ``value`` takes as JSON; stops counting once past ``limit``."""
    if value is None or isinstance(value, bool):
        return 4
    if isinstance(value, str):
        return (len(value) if value.isascii() else len(value.encode())) + 2
    if isinstance(value, (bytes, bytearray)):
        return 2 * len(value) + 2
    if isinstance(value, (list, tuple)):
        total = 2
        for item in value:
            total += value_bytes(item, limit - total) + 2
            if total > limit:
                break
        return total
    if isinstance(value, dict):
        total = 2
        for key, item in value.items():
            total += len(str(key)) + value_bytes(item, limit - total) + 4
            if total > limit:
                break
        return total
    return 24  # numbers, dates, decimals, uuids: short


def fit_value(value: Any, budget: int) -> Any:
    """``value`` cut to about ``budget`` bytes: text keeps its head, lists their first items."""
    if isinstance(value, str):
        head = value[: max(0, budget - len(_CUT) - 2)]
        while head and value_bytes(head, budget) + len(_CUT) > budget:  # multi-byte characters
            head = head[: len(head) * 3 // 4]
        return head + _CUT
    if isinstance(value, (bytes, bytearray)):
        return bytes(value[: max(0, budget // 2)])
    if isinstance(value, (list, tuple)):
        kept: list[Any] = []
        used = 2
        for item in value:
            size = value_bytes(item, budget) + 2
            if used + size > budget:
                if not kept and budget - used > 16:
                    kept.append(fit_value(item, budget - used))
                break
            kept.append(item)
            used += size
        return kept
    if isinstance(value, dict):
        return {"truncated": fit_value(str(value), budget)}
    return value


def fit_rows(rows: Sequence[Sequence[Any]], max_bytes: int) -> tuple[list[list[Any]], bool]:
    """The leading rows that fit ``max_bytes`` (about, as JSON) and whether anything was cut.

    A value too large for what is left of the budget is cut (text to its head, lists to their
    first items) rather than dropped, so a single huge value still shows what it starts with.
    """
    kept: list[list[Any]] = []
    used = 2
    for row in rows:
        sizes = [value_bytes(value, max_bytes) for value in row]
        size = sum(sizes) + 2 * len(row) + 2  # brackets, separators
        if used + size <= max_bytes:
            kept.append(list(row))
            used += size
            continue
        room = max_bytes - used - 2 * len(row) - 2
        if room > 64:
            share = room // max(1, len(row))
            kept.append(
                [value if sizes[i] <= share else fit_value(value, share) for i, value in enumerate(row)]
            )
        return kept, True
    return kept, False
