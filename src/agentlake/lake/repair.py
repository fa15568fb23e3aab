"""Repairing a query the database's own error points to: what a near miss should have said.

DuckDB names the near match of a table or column it cannot find ("Did you mean ...",
"Candidate bindings: ..."); this module applies such a hint to the query's text, and adds
``GROUP BY ALL`` where a selected column is missing from one. A fix is made only where the
hint is close to what was written (a column at least ``NEAR_MATCH`` alike), and never inside a
string literal. It does not run anything (``Lake.query`` does) nor decide when to repair
(``agents.ask``, the data-questions lessons).
"""

from __future__ import annotations

import difflib
import re

_MISSING_TABLE = re.compile(r'Table with name "?([\w.]+)"? does not exist!.*?Did you mean "([\w.]+)"')
_MISSING_COLUMN = re.compile(r'Referenced column "([^"]+)" not found.*?Candidate bindings: "([^"]+)"')
_UNGROUPED = re.compile(r"must appear in the GROUP BY clause", re.IGNORECASE)
_STRINGS = re.compile(r"'(?:[^']|'')*'")
NEAR_MATCH = 0.6


def repaired_sql(sql: str, error: str) -> tuple[str, str] | None:
    """``sql`` with one fix the database's error points to, and what was fixed; ``None`` when
    the error names no near match (a table it suggests, a column candidate at least
    ``NEAR_MATCH`` alike) and is not a column missing from GROUP BY."""
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
        return None
    if _UNGROUPED.search(error) and not re.search(r"\bGROUP\s+BY\b", sql, re.IGNORECASE):
        tail = re.search(r"\s(ORDER\s+BY|LIMIT)\b", sql, re.IGNORECASE)
        at = tail.start() if tail else len(sql.rstrip().rstrip(";"))
        return f"{sql[:at]} GROUP BY ALL{sql[at:]}", "GROUP BY ALL added"
    return None


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
