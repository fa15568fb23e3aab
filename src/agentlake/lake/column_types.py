"""What the text columns of an ingested file hold: dates in the formats people write, and why
a column stays text.

DuckDB's readers decide numbers and booleans (and the JSON reader ISO dates); they are never
asked to guess dates in CSV, because their sniffer reads ``03/04/2012`` as day-first without a
value that says so. This module looks at each text column (VARCHAR) of a file already read,
on the reader's private connection: it tries candidate date and timestamp readings with
``TRY_STRPTIME`` over the column's distinct values, takes one only when every value fits it,
takes a day/month order only when some value settles it (``13/04/2012``), and otherwise
keeps the text and says why (ambiguous dates, mixed values, leading zeros). It does not read
files or write to the lake.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

import duckdb

from agentlake.lake.catalog import quote_ident

# Formats whose day, month and year cannot be mistaken for each other.
_DATES = (
    "%Y-%m-%d",
    "%Y/%m/%d",
    "%Y.%m.%d",
    "%b %d %Y",
    "%b %d, %Y",
    "%B %d %Y",
    "%B %d, %Y",
    "%d %b %Y",
    "%d-%b-%Y",
    "%d %B %Y",
    "%d-%B-%Y",
)
_MONTH_FIRST = ("%m/%d/%Y", "%m-%d-%Y", "%m.%d.%Y")
_DAY_FIRST = ("%d/%m/%Y", "%d-%m-%Y", "%d.%m.%Y")
_TIMES = (" %H:%M", " %H:%M:%S")
# ISO 8601 with a T or a space, to the second or finer; DuckDB's own cast reads these.
_ISO_DAY = r"\d{4}-\d{1,2}-\d{1,2}"
_ISO_CLOCK = r"[T ]\d{1,2}:\d{2}(:\d{2}(\.\d{1,9})?)?"
_ISO_STAMP = rf"\s*{_ISO_DAY}({_ISO_CLOCK})?\s*"
_ISO_ZONED = rf"\s*{_ISO_DAY}{_ISO_CLOCK}\s*(Z|[+-]\d{{2}}(:?\d{{2}})?)\s*"
# The shape every reading above starts with. strptime with a list of formats is slow next to
# a regular expression, so a column's first values meet it before they meet strptime.
_LOOKS_LIKE_TIME = r"^\s*(\d{1,4}[-/.]\d{1,2}[-/.]\d{1,4}|\d{1,2}[- ][A-Za-z]{3,9}[- ]\d{4}|[A-Za-z]{3,9}\.? \d{1,2},? \d{4})"
# A column is looked at in full only when at least half of its first values read as time or numbers.
_SAMPLE = 200
_EXAMPLE_CHARS = 40


def _one(conn: duckdb.DuckDBPyConnection, sql: str) -> tuple:
    """The first row of ``sql``, or ``()``; fetches every row, so that the connection has no
    half-read result left (DuckDB refuses the next statement then)."""
    rows = conn.execute(sql).fetchall()
    return tuple(rows[0]) if rows else ()


def _strptime(value: str, formats: Sequence[str]) -> str:
    listed = ", ".join("'" + fmt + "'" for fmt in formats)
    return f"TRY_STRPTIME({value}, [{listed}])"


@dataclass(frozen=True)
class _Reading:
    """One way to read a column's text as time: its name for the user and the SQL that does it
    (a DATE, TIMESTAMP or TIMESTAMPTZ)."""

    name: str
    template: str  # SQL with {v} for the value (not str.format: the regexes have braces)

    def sql(self, value: str) -> str:
        return self.template.replace("{v}", value)


def _readings() -> dict[str, _Reading]:
    def stamps(dates: Sequence[str]) -> tuple[str, ...]:
        return tuple(date + time for date in dates for time in _TIMES) + tuple(dates)

    iso = f"CASE WHEN regexp_full_match({{v}}, '{_ISO_STAMP}') THEN TRY_CAST({{v}} AS TIMESTAMP) END"
    zoned = f"CASE WHEN regexp_full_match({{v}}, '{_ISO_ZONED}') THEN TRY_CAST({{v}} AS TIMESTAMPTZ) END"
    slashed = _strptime("{v}", stamps(("%Y/%m/%d",)))
    return {
        "date": _Reading("date", f"CAST({_strptime('{v}', _DATES)} AS DATE)"),
        "timestamp": _Reading("timestamp", f"COALESCE({iso}, {slashed})"),
        "zoned": _Reading("zoned", zoned),
        "date_mdy": _Reading("month/day/year", f"CAST({_strptime('{v}', _MONTH_FIRST)} AS DATE)"),
        "date_dmy": _Reading("day/month/year", f"CAST({_strptime('{v}', _DAY_FIRST)} AS DATE)"),
        "stamp_mdy": _Reading("month/day/year", _strptime("{v}", stamps(_MONTH_FIRST))),
        "stamp_dmy": _Reading("day/month/year", _strptime("{v}", stamps(_DAY_FIRST))),
    }


_READINGS = _readings()
_UNAMBIGUOUS = ("date", "timestamp", "zoned")
_ORDERS = (("date_mdy", "date_dmy"), ("stamp_mdy", "stamp_dmy"))


def _fits(reading: _Reading, value: str) -> str:
    """SQL true when ``value`` reads as a plausible time (a four-digit year: ``%Y`` also takes
    ``12``, which is a two-digit year misread)."""
    return f"year({reading.sql(value)}) BETWEEN 1000 AND 9999"


@dataclass
class TextColumns:
    """What :func:`examine_text_columns` found.

    ``replace``: column -> SQL expression of its new values (dates read, null markers
    removed), for ``SELECT * REPLACE (...)``; ``notes``: column -> one line for the user
    (why a column stays text, or which day/month order was read).
    """

    replace: dict[str, str] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)


def examine_text_columns(
    conn: duckdb.DuckDBPyConnection,
    relation: str,
    *,
    keep: Collection[str] = (),
    nulls: Sequence[str] = (),
) -> TextColumns:
    """Look at every VARCHAR column of ``relation`` (a table or view on ``conn``).

    Columns named in ``keep`` (lower case) stay as they are, with no note: the dataset they
    go into holds them as text. ``nulls`` are values that mean "missing", for readers that
    cannot drop them themselves (JSON); they become NULL. Queries run on ``conn`` only.
    """
    found = TextColumns()
    described = conn.execute(f"DESCRIBE SELECT * FROM {relation}").fetchall()
    texts = [str(row[0]) for row in described if str(row[1]) == "VARCHAR" and str(row[0]).lower() not in keep]
    for name in texts:
        value = quote_ident(name)
        if nulls:
            markers = ", ".join("'" + marker.replace("'", "''") + "'" for marker in nulls)
            value = f"(CASE WHEN {value} IN ({markers}) THEN NULL ELSE {value} END)"
            found.replace[name] = value
        reading, note = _examine(conn, relation, value)
        if reading is not None:
            found.replace[name] = reading.sql(value)
        if note:
            found.notes[name] = note
    return found


def _examine(
    conn: duckdb.DuckDBPyConnection, relation: str, value: str
) -> tuple[_Reading | None, str | None]:
    """How to read one text column as time, or None; and a note. The column's first values
    decide what is worth a look over all of them (most text columns are plain text)."""
    sample = f"(SELECT {value} AS v FROM {relation} WHERE {value} IS NOT NULL LIMIT {_SAMPLE})"
    counts = ", ".join(f"count(*) FILTER (WHERE {_fits(reading, 'v')})" for reading in _READINGS.values())
    row = _one(
        conn,
        f"WITH first AS {sample} SELECT (SELECT count(*) FROM first), (SELECT count(TRY_CAST(v AS DOUBLE)) FROM first), "
        f"{counts} FROM first WHERE regexp_matches(v, '{_LOOKS_LIKE_TIME}')",
    )
    seen, numbers = int(row[0]), int(row[1])
    fits = {key: int(n) for key, n in zip(_READINGS, row[2:], strict=True)}
    if not seen:
        return None, "no values: every field is empty or a null marker"
    if max(fits.values()) * 2 >= seen:
        candidates = [key for key, n in fits.items() if n == seen]
        return _read_as_time(conn, relation, value, candidates, max(fits, key=lambda key: fits[key]))
    if numbers * 2 >= seen:
        return None, _why_not_numbers(conn, relation, value)
    return None, None


def _read_as_time(
    conn: duckdb.DuckDBPyConnection, relation: str, value: str, candidates: list[str], best: str
) -> tuple[_Reading | None, str | None]:
    """The reading that fits every value of a column that looks like time (``candidates``
    fit all of its first values, ``best`` most of them), or None and why not."""
    full: set[str] = set()
    if candidates:
        counts = ", ".join(f"count(*) FILTER (WHERE {_fits(_READINGS[key], 'v')})" for key in candidates)
        distinct = f"(SELECT DISTINCT {value} AS v FROM {relation} WHERE {value} IS NOT NULL)"
        row = _one(conn, f"SELECT count(*), {counts} FROM {distinct}")
        full = {key for key, n in zip(candidates, row[1:], strict=True) if n == row[0]}
        best = max(zip(candidates, row[1:], strict=True), key=lambda pair: pair[1])[0]
    for key in _UNAMBIGUOUS:
        if key in full:
            return _READINGS[key], None
    for month_first, day_first in _ORDERS:
        if month_first in full and day_first in full:
            example = _example(conn, relation, value, "true")
            return None, f"ambiguous dates: day/month order unknown, e.g. {example}"
        for chosen, other in ((month_first, day_first), (day_first, month_first)):
            if chosen in full:
                misfit = f"NOT coalesce({_fits(_READINGS[other], value)}, false)"
                settles = _example(conn, relation, value, misfit)
                return _READINGS[chosen], f"dates read {_READINGS[chosen].name}, as {settles} shows"
    misfit = f"NOT coalesce({_fits(_READINGS[best], value)}, false)"
    return None, _mixed(conn, relation, value, misfit, "dates")


def _why_not_numbers(conn: duckdb.DuckDBPyConnection, relation: str, value: str) -> str | None:
    """Why a column whose first values are at least half numbers stays text: leading zeros,
    or values that are not numbers."""
    zero = f"regexp_matches({value}, '^\\s*[+-]?0\\d')"
    row = _one(
        conn,
        f"SELECT count({value}), count({value}) - count(TRY_CAST({value} AS DOUBLE)), "
        f"count({value}) FILTER (WHERE {zero}) FROM {relation}",
    )
    present, not_numbers, zeros = (int(n) for n in row)
    if not not_numbers and zeros:
        example = _example(conn, relation, value, zero)
        return f"numbers with leading zeros, e.g. {example}: kept as text so the zeros stay"
    if 0 < not_numbers and not_numbers * 2 <= present:
        return _mixed(conn, relation, value, f"TRY_CAST({value} AS DOUBLE) IS NULL", "numbers")
    return None


def _mixed(conn: duckdb.DuckDBPyConnection, relation: str, value: str, misfit: str, kind: str) -> str:
    row = _one(conn, f"SELECT count({value}) FILTER (WHERE {misfit}), count({value}) FROM {relation}")
    example = _example(conn, relation, value, misfit)
    return f"mixed values: {row[0]} of {row[1]} are not {kind}, e.g. {example}"


def _example(conn: duckdb.DuckDBPyConnection, relation: str, value: str, condition: str) -> str:
    """The first value (in file order) meeting ``condition``, quoted and cut short."""
    row = _one(conn, f"SELECT {value} FROM {relation} WHERE {value} IS NOT NULL AND ({condition}) LIMIT 1")
    text = str(row[0]) if row else ""
    return repr(text if len(text) <= _EXAMPLE_CHARS else text[: _EXAMPLE_CHARS - 3] + "...")
