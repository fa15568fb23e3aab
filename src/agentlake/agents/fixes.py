"""Code's fixes of a model's query, from what the question names and what the data holds.

A small model's query is often one filter away from the answer: it leaves out the year the
question names, filters on a value the question never said (copied from an example), compares
a value that is written in several cases with one of them, names a column the table does not
have, or writes a value the column does not hold ("foggy" for "fog"). ``fix_query`` returns the
query with one such fix and what was done, or ``None``; ``agents.ask`` runs it through the
lake's guard like any query and keeps the trace. The fixes, by the problem ``ask`` found:

- it did not run: the database's own hint (``lake.repair``); else a missing column compared
  with a value another column of the table holds is that column ("gender = 'Female'" -> sex),
  a missing date-like column is the table's one date column, and a filter on a column no table
  read has is dropped;
- it leaves out what the question names: the value's filter added (lower-cased for a value
  written in several cases), the year and month named added on the one date column the
  question is about;
- it filters on a value the question does not name: that filter dropped (never a short code
  such as 'C', which a question describes in words);
- it compares a column with a value the column does not hold, or returned nothing: that value
  replaced by the listed value most like it (at least ``NEAR_VALUE`` alike).

Filters are read and written as a tree (``lake.rewrite``, sqlglot), never as text. It does not
run queries nor decide when to fix (``agents.ask``).
"""

from __future__ import annotations

import calendar
import difflib
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentlake.agents.linking import compares, compares_folded, joins, words
from agentlake.lake.repair import column_types, rename_identifier, repaired_sql
from agentlake.lake.rewrite import (
    add_filters,
    columns_named,
    comparisons,
    count_distinct,
    count_rows,
    drop_filters,
    fold_case,
    join_table,
    replace_value,
    tables_read,
)

if TYPE_CHECKING:
    from agentlake.lake import Lake

NEAR_VALUE = 0.6
_MISSING = re.compile(
    r'Referenced column "([^"]+)" not found|does not have a column named "([^"]+)"', re.IGNORECASE
)
_MONTHS = {name.casefold(): number for number, name in enumerate(calendar.month_name) if name}
_MONTHS |= {name.casefold(): number for number, name in enumerate(calendar.month_abbr) if name}
_YEAR = re.compile(r"\b(1[89]\d\d|20\d\d)\b")
_MONTH_YEAR = re.compile(
    rf"\b({'|'.join(sorted(_MONTHS, key=len, reverse=True))})\.?\s+(1[89]\d\d|20\d\d)\b", re.I
)
_DATE_WORDS = ("date", "day", "time", "when")
_DIFFERENT = re.compile(r"\bhow many (?:different|distinct|unique)\s+((?:[a-z]+\s*){1,3})", re.IGNORECASE)


@dataclass(frozen=True)
class NamedDate:
    """A year (and month) a question names: "in 2005", "in March 2016"."""

    year: int
    month: int | None = None

    def describe(self) -> str:
        return f"{calendar.month_name[self.month]} {self.year}" if self.month else str(self.year)


def named_dates(question: str) -> list[NamedDate]:
    """The years, with their months where named, that ``question`` names, in order."""
    found: list[NamedDate] = []
    taken: set[int] = set()
    for match in _MONTH_YEAR.finditer(question):
        found.append(NamedDate(int(match.group(2)), _MONTHS[match.group(1).casefold()]))
        taken.add(match.start(2))
    for match in _YEAR.finditer(question):
        if match.start() not in taken:
            found.append(NamedDate(int(match.group(1))))
    return found


def missing_dates(sql: str, dates: list[NamedDate]) -> str | None:
    """The named dates ``sql`` does not mention (its year nowhere in the query), or None."""
    left = [date.describe() for date in dates if str(date.year) not in sql]
    return " and ".join(left) or None


def date_column(lake: Lake, sql: str, question: str) -> str | None:
    """The date column of the tables ``sql`` reads that ``question`` is about: the only one,
    or the one whose name shares the most words with the question (None when that is a tie)."""
    types = column_types(lake, sql)
    dated = [name for name, kind in types.items() if kind.upper().startswith(("DATE", "TIMESTAMP"))]
    if len(dated) <= 1:
        return dated[0] if dated else None
    said = words(question)
    scored = sorted(((len(words(name) & said), name) for name in dated), reverse=True)
    return scored[0][1] if scored[0][0] > scored[1][0] else None


def unheld_values(sql: str, listed: dict[tuple[str, str], list[str]]) -> str | None:
    """The values ``sql`` compares (``=``) with a listed column that the column does not hold
    (``island = 'biscoe'`` where it holds 'Biscoe'), with what it holds; or None."""
    read = {table.casefold() for table in tables_read(sql)}
    columns = {column: values for (table, column), values in listed.items() if table.casefold() in read}
    wrong = [
        f"{c.column} = '{c.value}' (it holds: {', '.join(columns[c.column][:8])})"
        for c in comparisons(sql)
        if c.op == "=" and c.column in columns and c.value not in columns[c.column]
    ]
    return "; ".join(wrong) or None


def subject_table(question: str, tables: list[str]) -> str | None:
    """The table ``question`` is about: of the tables whose name's words it all says, the one
    it says first ("How many orders came from customers in Texas?": orders), the longer name
    on a tie (order_statuses before orders); None when it says none."""
    text, said = question.casefold(), words(question)
    found = []
    for table in tables:
        name = words(table)
        if name and name <= said:
            starts = [match.start() for w in name if (match := re.search(rf"\b{re.escape(w)}", text))]
            found.append((min(starts, default=len(text)), -len(name), table))
    return min(found)[2] if found else None


def unread_subject(sql: str, question: str, tables: list[str]) -> str | None:
    """The table ``question`` is about when ``sql`` does not read it (a small model counts the
    rows of order_statuses for "How many orders were cancelled?"), else None."""
    subject = subject_table(question, tables)
    read = {table.casefold() for table in tables_read(sql)}
    return subject if subject is not None and read and subject.casefold() not in read else None


def different_column(question: str, columns: list[str]) -> str | None:
    """The column whose different values ``question`` counts ("How many different cities ...":
    city; "... different stock symbols": symbol), or None: a column named by one of the (up
    to three) words after "different", the last such word first, one column exactly so named
    before one whose name holds the word."""
    match = _DIFFERENT.search(question)
    if match is None:
        return None
    for noun in reversed(match.group(1).split()):
        said = words(noun)
        if not said:
            continue
        for found in ([c for c in columns if words(c) == said], [c for c in columns if said <= words(c)]):
            if len(found) == 1:
                return found[0]
    return None


def counts_not_different(sql: str, question: str, lake: Lake) -> str | None:
    """The column ``question`` counts the different values of when ``sql`` counts rows instead
    (``count(*)`` for "How many different cities ..."), else None."""
    column = different_column(question, list(column_types(lake, sql)))
    return column if column is not None and count_distinct(sql, column) is not None else None


def fix_query(
    sql: str,
    kind: str,
    error: str | None,
    *,
    lake: Lake,
    question: str,
    named: list[tuple[str, str]],
    listed: dict[tuple[str, str], list[str]],
) -> tuple[str, str] | None:
    """``sql`` with one fix for its problem ``kind`` (``error``, ``subject``, ``missing``,
    ``unnamed``, ``different``, ``listed``, ``unheld``, ``empty``) and what was done, or ``None`` (see the
    module docstring)."""
    read = {table.casefold() for table in tables_read(sql)}
    columns = {column: values for (table, column), values in listed.items() if table.casefold() in read}
    if kind == "error":
        return _error_fix(sql, error or "", lake, columns)
    if kind == "missing":
        return _missing_fix(sql, lake, question, named, columns)
    if kind == "unnamed":
        return _unnamed_fix(sql, question, named, columns)
    if kind in ("empty", "unheld"):
        return _empty_fix(sql, columns)
    if kind == "subject":
        return _subject_fix(sql, lake, question)
    if kind == "listed":
        counted = count_rows(sql)
        return (counted, "counted the rows it lists: the question asks how many") if counted else None
    if kind == "different":
        column = counts_not_different(sql, question, lake)
        fixed = count_distinct(sql, column) if column else None
        return (fixed, f"counted different {column} values, as the question asks") if fixed else None
    return None


def _error_fix(sql: str, error: str, lake: Lake, columns: dict[str, list[str]]) -> tuple[str, str] | None:
    types = column_types(lake, sql)
    fixed = repaired_sql(sql, error, types)
    if fixed is not None:
        return fixed
    missing = _MISSING.search(error)
    if missing is None:
        return None
    wrong = missing.group(1) or missing.group(2)
    compared = [c for c in comparisons(sql) if c.column.casefold() == wrong.casefold()]
    for comparison in compared:
        holder = next(
            (column for column, values in columns.items()
             if any(v.casefold() == comparison.value.casefold() for v in values)),
            None,
        )  # fmt: skip
        if holder is not None:
            renamed = _rename_column(sql, wrong, holder)
            if renamed is not None:
                return renamed, f"column {wrong} -> {holder} (it holds '{comparison.value}')"
    dated = [name for name, kind in types.items() if kind.upper().startswith(("DATE", "TIMESTAMP"))]
    if any(word in wrong.casefold() for word in _DATE_WORDS) and len(dated) == 1:
        renamed = _rename_column(sql, wrong, dated[0])
        if renamed is not None:
            return renamed, f"column {wrong} -> {dated[0]} (the table's date)"
    if compared:
        dropped = drop_filters(sql, lambda c: c.column.casefold() == wrong.casefold())
        if dropped is not None:
            return dropped, f"dropped the filter {compared[0].sql}: no such column"
    return None


def _missing_fix(
    sql: str, lake: Lake, question: str, named: list[tuple[str, str]], columns: dict[str, list[str]]
) -> tuple[str, str] | None:
    for column, value in dict.fromkeys((column, value.casefold()) for column, value in named):
        if column not in columns:
            continue
        variants = [v for v in columns[column] if v.casefold() == value]
        if not variants or compares_folded(sql, column, variants[0]):
            continue
        hit = [v for v in variants if compares(sql, column, v)]
        if hit and len(variants) > 1:
            folded = fold_case(sql, column, hit[0])
            if folded is not None:
                return folded, f"{column} compared lower-cased: '{value}' is written in several cases"
        if hit:
            continue
        condition = (
            f"lower({_quote(column)}) = {_literal(value)}"
            if len(variants) > 1
            else f"{_quote(column)} = {_literal(variants[0])}"
        )
        added = add_filters(sql, [condition])
        if added is not None:
            return added, f"added the filter {condition}, which the question names"
    dates = [date for date in named_dates(question) if str(date.year) not in sql]
    if dates:
        column = date_column(lake, sql, question)
        if column is not None:
            conditions = [f"year({_quote(column)}) = {dates[0].year}"]
            if dates[0].month:
                conditions.append(f"month({_quote(column)}) = {dates[0].month}")
            added = add_filters(sql, conditions)
            if added is not None:
                return added, f"added {' AND '.join(conditions)}: the question names {dates[0].describe()}"
    return None


def _unnamed_fix(
    sql: str, question: str, named: list[tuple[str, str]], columns: dict[str, list[str]]
) -> tuple[str, str] | None:
    text = question.casefold()

    def unnamed(comparison: Any) -> bool:
        value = comparison.value
        if value.isupper() and len(value) <= 3:
            return False  # a code: a question describes it in words
        listed = columns.get(comparison.column, [])
        return value in listed and (comparison.column, value) not in named and value.casefold() not in text

    dropped = [c.sql for c in comparisons(sql) if unnamed(c)]
    fixed = drop_filters(sql, unnamed) if dropped else None
    return (fixed, f"dropped {', '.join(dropped)}: the question does not name it") if fixed else None


def _subject_fix(sql: str, lake: Lake, question: str) -> tuple[str, str] | None:
    infos = {info.name.casefold(): info for info in lake.datasets()}
    subject = subject_table(question, [info.name for info in infos.values()])
    read = tables_read(sql)
    if subject is None or len(read) != 1 or read[0].casefold() not in infos:
        return None
    other = infos[read[0].casefold()].name
    mine = {column for column, _ in infos[subject.casefold()].columns}
    theirs = {column for column, _ in infos[other.casefold()].columns}
    join = next((j for j in joins(lake, [subject, other]) if j.joins(subject, other)), None)
    if join is not None:
        fixed = join_table(sql, subject, (join.column_of(subject), join.column_of(other)), mine & theirs)
        what = f"joined {subject} ({join.hint()}): the question is about {subject}"
    elif columns_named(sql) <= {column.casefold() for column in mine}:
        fixed = join_table(sql, subject, None, set())
        what = f"read {subject} in place of {other}: the question is about {subject}"
    else:
        return None
    return (fixed, what) if fixed is not None else None


def _empty_fix(sql: str, columns: dict[str, list[str]]) -> tuple[str, str] | None:
    for comparison in comparisons(sql):
        listed = columns.get(comparison.column)
        if not listed or comparison.value in listed:
            continue
        near = difflib.get_close_matches(
            comparison.value.casefold(), [v.casefold() for v in listed], 1, NEAR_VALUE
        )
        if near:
            value = next(v for v in listed if v.casefold() == near[0])
            fixed = replace_value(sql, comparison.column, comparison.value, value)
            if fixed is not None:
                return (
                    fixed,
                    f"{comparison.column} '{comparison.value}' -> '{value}' (the value the column holds)",
                )
    return None


def _rename_column(sql: str, wrong: str, right: str) -> str | None:
    fixed = rename_identifier(sql, wrong, right)
    return fixed if fixed != sql else None


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"
