"""Repairing a query the database's own error points to: what a near miss should have said.

DuckDB names the near match of a table or column it cannot find ("Did you mean ...",
"Candidate bindings: ..."); this module applies such a hint to the query's text, and adds
``GROUP BY ALL`` where a selected column is missing from one. A fix is made only where the
hint is close to what was written (a column at least ``NEAR_MATCH`` alike), and never inside a
string literal. Given the types of the columns the query reads, it also mends what a model
writes for dates as if they were text or numbers: ``date LIKE '2014-%'`` compares the date's
text, ``year = 2010`` on a date column compares its year, ``month = 2009-01-01`` (a subtraction)
is the date ``DATE '2009-01-01'``, and a missing column ``month`` of a table with one date
column is that date's month. It does not run anything (``Lake.query`` does) nor decide when to repair
(``agents.ask``, the data-questions lessons).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from typing import Any

from agentlake.errors import AgentlakeError

_MISSING_TABLE = re.compile(r'Table with name "?([\w.]+)"? does not exist!.*?Did you mean "([\w.]+)"')
_MISSING_COLUMN = re.compile(r'Referenced column "([^"]+)" not found.*?Candidate bindings: "([^"]+)"')
_UNGROUPED = re.compile(r"must appear in the GROUP BY clause", re.IGNORECASE)
_LIKE_ON_DATE = re.compile(r"argument types '!?~~\*?\((DATE|TIMESTAMP)", re.IGNORECASE)
_DATE_VS_NUMBER = re.compile(
    r"Cannot compare values of type (DATE|TIMESTAMP)\w* and type INTEGER|"
    r"Unimplemented type for cast \(INTEGER -> (DATE|TIMESTAMP)",
    re.IGNORECASE,
)
_DATE_PARTS = ("year", "month", "day", "quarter")
_TABLES = re.compile(r'\b(?:FROM|JOIN)\s+"?([A-Za-z_][\w]*)"?', re.IGNORECASE)
_DATE_TYPES = ("DATE", "TIMESTAMP")
# A column type (as ``column_types`` gives it) that holds numbers: searched, so DECIMAL(18,3),
# UBIGINT and HUGEINT match too.
NUMERIC_TYPE = re.compile(r"INT|DOUBLE|FLOAT|DECIMAL|REAL|NUMERIC", re.IGNORECASE)
_STRINGS = re.compile(r"'(?:[^']|'')*'")
NEAR_MATCH = 0.7


def repaired_sql(sql: str, error: str, columns: Mapping[str, str] | None = None) -> tuple[str, str] | None:
    """``sql`` with one fix the database's error points to, and what was fixed; ``None`` when
    the error names no near match (a table it suggests, a column candidate at least
    ``NEAR_MATCH`` alike), is not a column missing from GROUP BY and is no date written as text
    or a number (``columns``: the types of the columns of the tables ``sql`` reads, by name)."""
    dated = _date_columns(columns or {})
    if dated:
        fixed = _dates_repaired(sql, error, dated)
        if fixed is not None:
            return fixed
    table = _MISSING_TABLE.search(error)
    if table:
        wrong, right = table.group(1), table.group(2)
        return rename_identifier(sql, wrong, right, after=r"\b(?:FROM|JOIN)\s+"), f"table {wrong} -> {right}"
    column = _MISSING_COLUMN.search(error)
    if column:
        wrong, right = column.group(1), column.group(2).split(".")[-1]
        alike = difflib.SequenceMatcher(None, wrong.casefold(), right.casefold()).ratio()
        if alike >= NEAR_MATCH or wrong.casefold() in right.casefold():
            return rename_identifier(sql, wrong, right), f"column {wrong} -> {right}"
        compared_with_number = re.search(
            rf'(?<![\w."]){re.escape(wrong)}"?\s*(?:=|<>|!=|<=|>=|<|>|BETWEEN|IN\s*\()\s*\d',
            sql,
            re.IGNORECASE,
        )
        if wrong.casefold() in _DATE_PARTS and len(dated) == 1 and compared_with_number:
            part = f'{wrong.casefold()}("{dated[0]}")'
            pattern = rf'(?<![\w."])"?{re.escape(wrong)}"?(?!\w|\s*\()'
            return _outside_strings(sql, pattern, part, flags=re.IGNORECASE), f"column {wrong} -> {part}"
        return None
    if _UNGROUPED.search(error) and not re.search(r"\bGROUP\s+BY\b", sql, re.IGNORECASE):
        tail = re.search(r"\s(ORDER\s+BY|LIMIT)\b", sql, re.IGNORECASE)
        at = tail.start() if tail else len(sql.rstrip().rstrip(";"))
        return f"{sql[:at]} GROUP BY ALL{sql[at:]}", "GROUP BY ALL added"
    return None


def column_types(lake: Any, sql: str) -> dict[str, str]:
    """The type of each column of the lake's tables ``sql`` reads (after FROM or JOIN), by
    name; empty when the lake cannot say."""
    read = {name.casefold() for name in _TABLES.findall(sql)}
    try:
        infos = lake.datasets()
    except AgentlakeError:
        return {}
    return {column: kind for info in infos if info.name.casefold() in read for column, kind in info.columns}


def table_types(lake: Any, table: str) -> dict[str, str]:
    """Each column of ``table`` with its type, as ``column_types`` reads them."""
    return column_types(lake, 'SELECT * FROM "' + table.replace('"', '""') + '"')


def _date_columns(columns: Mapping[str, str]) -> list[str]:
    return [name for name, kind in columns.items() if kind.upper().startswith(_DATE_TYPES)]


def _dates_repaired(sql: str, error: str, dated: list[str]) -> tuple[str, str] | None:
    """A date compared as text (LIKE) or with a number, as the date's text or year."""
    if _LIKE_ON_DATE.search(error):
        fixed = sql
        for column in dated:
            fixed = _outside_strings(
                fixed,
                rf'(?<![\w."(])"?{re.escape(column)}"?(\s+(?:NOT\s+)?I?LIKE\s+)',
                rf'CAST("{column}" AS VARCHAR)\1',
                flags=re.IGNORECASE,
            )
        # A pattern written with slashes ('2012/%') is matched against the ISO text, with dashes.
        fixed = re.sub(
            r"(AS VARCHAR\)\s+(?:NOT\s+)?I?LIKE\s+')(\d{4}/[^']*)'",
            lambda m: m.group(1) + m.group(2).replace("/", "-") + "'",
            fixed,
            flags=re.IGNORECASE,
        )
        if fixed != sql:
            return fixed, "a date compared as text: CAST(date AS VARCHAR)"
    if _DATE_VS_NUMBER.search(error):
        fixed = _outside_strings(sql, r"(?<![\w'])(\d{4}-\d{2}-\d{2})(?![\w'])", r"DATE '\1'")
        for column in dated:
            fixed = _outside_strings(
                fixed,
                rf'(?<![\w."(])("?{re.escape(column)}"?)(\s*(?:=|<>|!=|<=|>=|<|>)\s*)(\d{{4}})(?![\d-])',
                r"year(\1)\2\3",
                flags=re.IGNORECASE,
            )
        if fixed != sql:
            return fixed, "a date compared with a number: its year, or a DATE literal"
    return None


def _outside_strings(sql: str, pattern: str, replacement: str, flags: int = 0) -> str:
    """``re.sub`` of ``pattern`` in ``sql`` outside its string literals."""
    parts, last = [], 0
    for literal in _STRINGS.finditer(sql):
        parts.append(re.sub(pattern, replacement, sql[last : literal.start()], flags=flags))
        parts.append(literal.group(0))
        last = literal.end()
    parts.append(re.sub(pattern, replacement, sql[last:], flags=flags))
    return "".join(parts)


def rename_identifier(sql: str, wrong: str, right: str, *, after: str = "") -> str:
    """``sql`` with the identifier ``wrong`` (bare or double-quoted) replaced by ``right``,
    outside string literals (``after``: only where this pattern precedes it, e.g. FROM)."""
    pattern = re.compile(rf'({after})(?<![\w.])"?{re.escape(wrong)}"?(?!\w)', re.IGNORECASE)
    parts, last = [], 0
    for literal in _STRINGS.finditer(sql):
        parts.append(pattern.sub(lambda m: m.group(1) + right, sql[last : literal.start()]))
        parts.append(literal.group(0))
        last = literal.end()
    parts.append(pattern.sub(lambda m: m.group(1) + right, sql[last:]))
    return "".join(parts)


def missing_name(error: str) -> tuple[str, str, str] | None:
    """``(kind, wrong, suggested)`` of a missing table or column the error names a near match
    for (kind ``table`` or ``column``), or ``None``."""
    table = _MISSING_TABLE.search(error)
    if table:
        return "table", table.group(1), table.group(2)
    column = _MISSING_COLUMN.search(error)
    if column:
        return "column", column.group(1), column.group(2).split(".")[-1]
    return None
