"""What is wrong with a model's query, told from what the question names and what the data holds.

Owns :func:`find_problem` (the first problem ``ask`` sends back or has code fix: a value, date
or table the question names left out, a value it does not name filtered on, a date filtered as
text, a column required to equal two values, another measure aggregated or another column
grouped by than the one named, rows counted for "how many different") and each check behind it,
with what they read a question with (:class:`NamedDate`, the dates a question names) and a
value as a lookup table's code (:func:`coded_values`). Fixing a query is ``fixes``'; running it
and deciding when to check is ``ask``'s.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from agentlake.agents.linking import (
    KEYISH,
    compares,
    joins,
    missing_values,
    unnamed_values,
    words,
)
from agentlake.errors import AgentlakeError
from agentlake.lake.repair import column_types
from agentlake.lake.rewrite import (
    aggregated_columns,
    comparisons,
    conjuncts_of,
    count_distinct,
    count_rows,
    grouped_by,
    tables_read,
    unused_joins,
)

if TYPE_CHECKING:
    from agentlake.lake import Lake


MISSING_COLUMN = re.compile(
    r'Referenced column "([^"]+)" not found|does not have a column named "([^"]+)"', re.IGNORECASE
)

MONTH_NUMBERS = {name.casefold(): number for number, name in enumerate(calendar.month_name) if name}
MONTH_NUMBERS |= {name.casefold(): number for number, name in enumerate(calendar.month_abbr) if name}

_YEAR = re.compile(r"\b(1[89]\d\d|20\d\d)\b")

_MONTH_YEAR = re.compile(
    rf"\b({'|'.join(sorted(MONTH_NUMBERS, key=len, reverse=True))})\.?\s+(1[89]\d\d|20\d\d)\b", re.I
)

DATE_WORDS = ("date", "day", "time", "when")

BAD_DATE_ERROR = re.compile(r"Conversion Error.*date|date field|invalid date", re.IGNORECASE)

_ISO_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")

_HOW_MANY_Q = re.compile(r"\bhow many\b", re.IGNORECASE)

_HOW_MANY = re.compile(r"\bhow many\s+((?:[a-z]+\s*){1,3})", re.IGNORECASE)

_NUMERIC = re.compile(r"INT|DOUBLE|FLOAT|DECIMAL|REAL|NUMERIC", re.IGNORECASE)

_COUNT_ROWS = re.compile(r"\bcount\s*\(\s*\*\s*\)", re.IGNORECASE)

_WHICH_YEAR = re.compile(r"\b(?:which|what) year\b", re.IGNORECASE)

_WHICH = re.compile(r"\bwhich\s+((?:[a-z]+\s*){1,2})", re.IGNORECASE)

# Words that end a noun phrase: "types of death" counts types, "cities in Ohio" cities.
_PHRASE_END = frozenset("of in on at for from by with are is was were did do does have has had".split())

_COMPARED_NUMBER = re.compile(
    r"\b(?:over|under|above|below|more than|less than|fewer than|greater than|at least|at most)\s+\$?(\d+(?:\.\d+)?)",
    re.IGNORECASE,
)

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
        found.append(NamedDate(int(match.group(2)), MONTH_NUMBERS[match.group(1).casefold()]))
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


def named_tables(question: str, tables: list[str]) -> list[str]:
    """The tables whose name's words ``question`` all says, in the order it says them first
    ("How many orders came from customers in Texas?": orders, customers), the longer name first
    on a tie (order_statuses before orders)."""
    text, said = question.casefold(), words(question)
    found = []
    for table in tables:
        name = words(table)
        if name and name <= said:
            starts = [match.start() for w in name if (match := re.search(rf"\b{re.escape(w)}", text))]
            found.append((min(starts, default=len(text)), -len(name), table))
    return [table for _, _, table in sorted(found)]


def subject_table(question: str, tables: list[str]) -> str | None:
    """The table ``question`` is about: the first of ``named_tables``; None when it names none."""
    named = named_tables(question, tables)
    return named[0] if named else None


def unread_subject(sql: str, question: str, lake: Lake) -> str | None:
    """A table ``question`` names that ``sql`` does not read: the one it is about (a small
    model counts the rows of order_statuses for "How many orders were cancelled?"), or another
    that joins a table read ("Which customer placed the most orders?" over customers alone);
    else None."""
    tables = [info.name for info in lake.datasets()]
    read = [table for table in tables if table.casefold() in {t.casefold() for t in tables_read(sql)}]
    if not read:
        return None
    for position, table in enumerate(named_tables(question, tables)):
        if table in read:
            continue
        if position == 0 or any(
            join.joins(table, other) for join in joins(lake, [table, *read]) for other in read
        ):
            return table
    return None


def unneeded_join(sql: str, question: str, lake: Lake) -> str | None:
    """A table ``sql`` joins that the question does not name and that the query reads nothing
    of beyond the join (customers joined to their orders for an average over customers: each
    customer counted once per order), else None."""
    infos = lake.datasets()
    columns = {info.name.casefold(): {c.casefold() for c, _ in info.columns} for info in infos}
    named = {table.casefold() for table in named_tables(question, [info.name for info in infos])}
    return next((table for table in unused_joins(sql, columns) if table.casefold() not in named), None)


def different_column(question: str, columns: list[str]) -> str | None:
    """The column whose different values ``question`` counts ("How many different cities ...":
    city; "... different stock symbols": symbol), or None: a column named by one of the (up
    to three) words after "different", the last such word first, one column exactly so named
    before one whose name holds the word."""
    match = _DIFFERENT.search(question)
    if match is None:
        return None
    nouns = []
    for word in match.group(1).split():
        if word.casefold() in _PHRASE_END:
            break
        nouns.append(word)
    for noun in reversed(nouns):
        said = words(noun)
        if not said:
            continue
        for found in ([c for c in columns if words(c) == said], [c for c in columns if said <= words(c)]):
            if len(found) == 1:
                return found[0]
    return None


def counts_not_different(sql: str, question: str, lake: Lake) -> str | None:
    """The column ``question`` counts the different values of when ``sql`` counts rows or
    the different values of another column instead (``count(*)`` for "How many different
    cities ..."), else None."""
    column = different_column(question, list(column_types(lake, sql)))
    return column if column is not None and count_distinct(sql, column) is not None else None


def named_measure(question: str, types: dict[str, str]) -> str | None:
    """The one numeric column (not a key) all of whose name's words ``question`` says
    ("the average number of manufacturing jobs": manufacturing; "body mass": body_mass_g), or
    None when it names none or several."""
    said = words(question)
    named = [
        column
        for column, kind in types.items()
        if _NUMERIC.search(kind) and not KEYISH.search(column) and words(column) and words(column) <= said
    ]
    return named[0] if len(named) == 1 else None


def unread_measure(sql: str, question: str, lake: Lake) -> str | None:
    """The numeric column ``question`` names when ``sql`` aggregates another one instead
    (``avg(private)`` for manufacturing jobs) or counts rows where the question counts that
    column ("How many nonfarm jobs ...": ``count(*)`` for the sum of nonfarm); else None."""
    measure = named_measure(question, column_types(lake, sql))
    if measure is None:
        return None
    how_many = _HOW_MANY.search(question)
    if how_many and words(measure) <= words(how_many.group(1)) and _COUNT_ROWS.search(sql):
        return measure
    aggregated = aggregated_columns(sql)
    return measure if len(aggregated) == 1 and aggregated[0].casefold() != measure.casefold() else None


def asked_group(question: str, columns: list[str]) -> str | None:
    """The column whose value ``question`` asks for with "which" ("Which penguin species ...":
    species; "Which city in Texas ...": city), the last of the two words after it first; None
    when neither names one column."""
    match = _WHICH.search(question)
    if match is None:
        return None
    for noun in reversed(match.group(1).split()):
        said = words(noun)
        found = [column for column in columns if said and words(column) == said]
        if len(found) == 1:
            return found[0]
    return None


def grouped_otherwise(sql: str, question: str, lake: Lake) -> str | None:
    """The column ``question`` asks "which" of when ``sql`` groups by one other column
    instead (``GROUP BY sex`` for "Which penguin species ..."; ``year("date")`` for "In which
    year ..." grouped by the date itself), else None."""
    grouped = grouped_by(sql)
    if len(grouped) != 1:
        return None
    types = column_types(lake, sql)
    kind = next((k for name, k in types.items() if name.casefold() == grouped[0].casefold()), "")
    if _WHICH_YEAR.search(question) and _is_date(kind):
        return f"year({quote_name(grouped[0])})"
    asked = asked_group(question, list(types))
    return asked if asked is not None and asked.casefold() != grouped[0].casefold() else None


def conflicting(sql: str) -> tuple[str, list[str]] | None:
    """A column ``sql`` requires to equal two different text values at once (``sex = 'Female'
    AND sex = 'female'``: no row can), with the values; else None."""
    seen: dict[str, list[str]] = {}
    for comparison in comparisons(sql):
        if comparison.op == "=":
            seen.setdefault(comparison.column.casefold(), []).append(comparison.value)
    return next(((column, values) for column, values in seen.items() if len(set(values)) > 1), None)


def text_dates(sql: str, question: str, lake: Lake) -> str | None:
    """The date column ``sql`` filters wrongly on the one date ``question`` names, else None:
    as text (``CAST(date AS VARCHAR) LIKE '2014-07-%d'``, ``month = '2009-01'``, ``month =
    2009``; a range of whole ISO days, ``BETWEEN '2016-03-01' AND '2016-03-31'``, is no text),
    or another date column than the one the question is about (``signup_date`` for "placed an
    order in 2017")."""
    found = date_filters(sql, question, lake)
    return found[1] if found else None


def date_filters(
    sql: str, question: str, lake: Lake, *, broken: bool = False
) -> tuple[NamedDate, str, Callable[[exp.Expression], bool]] | None:
    """The named date, the date column to filter, and which conjuncts filter wrongly (with
    ``broken``, the database refused a date the query wrote: every filter of a date column on
    the named year, such as ``BETWEEN '2015-11-01' AND '2015-11-31'``)."""
    dates = named_dates(question)
    if len(dates) != 1:
        return None
    date = dates[0]
    dated = {name.casefold(): name for name, kind in column_types(lake, sql).items() if _is_date(kind)}
    target = date_column(lake, sql, question)

    def wrong(node: exp.Expression) -> bool:
        if _text_date(node, date, dated) or (broken and (_on_year(node, date, dated) or _date_part(node))):
            return True
        return target is not None and _other_date(node, date, dated, target)

    found = [node for node in conjuncts_of(sql) if wrong(node)]
    if not found:
        return None
    column = target or next(
        dated[c.name.casefold()] for c in found[0].find_all(exp.Column) if c.name.casefold() in dated
    )
    return date, column, wrong


def _is_date(kind: str) -> bool:
    return kind.upper().startswith(("DATE", "TIMESTAMP"))


def _text_date(node: exp.Expression, date: NamedDate, dated: dict[str, str]) -> bool:
    if not any(column.name.casefold() in dated for column in node.find_all(exp.Column)):
        return False
    year = str(date.year)
    literals = [literal for literal in node.find_all(exp.Literal) if year in literal.this]
    if not literals or node.find(exp.Year):
        return False
    if isinstance(node, (exp.Like, exp.ILike)) or node.find(exp.Cast):
        return True
    return isinstance(node, exp.EQ) and not (literals[0].is_string and _ISO_DAY.match(literals[0].this))


def _date_part(node: exp.Expression) -> bool:
    """A filter on a column named year, month or day (which the table has not, when asked)."""
    return any(column.name.casefold() in ("year", "month", "day") for column in node.find_all(exp.Column))


def _on_year(node: exp.Expression, date: NamedDate, dated: dict[str, str]) -> bool:
    on_date = any(column.name.casefold() in dated for column in node.find_all(exp.Column))
    return on_date and any(str(date.year) in literal.this for literal in node.find_all(exp.Literal))


def _other_date(node: exp.Expression, date: NamedDate, dated: dict[str, str], target: str) -> bool:
    columns = {c.name.casefold() for c in node.find_all(exp.Column)} & set(dated)
    year = str(date.year)
    return (
        bool(columns)
        and target.casefold() not in columns
        and any(year in literal.this for literal in node.find_all(exp.Literal))
    )


def missing_numbers(sql: str, question: str) -> str | None:
    """The number a question compares with ("orders over 500") that ``sql`` never writes, or
    None."""
    left = [
        m.group(0)
        for m in _COMPARED_NUMBER.finditer(question)
        if not re.search(rf"(?<![\d.]){re.escape(m.group(1))}(?![\d])", sql)
    ]
    return " and ".join(left) or None


def find_problem(
    sql: str,
    rows: list[Any],
    *,
    lake: Lake,
    question: str,
    named: list[tuple[str, str]],
    listed: dict[tuple[str, str], list[str]],
) -> tuple[str, str] | None:
    """What is wrong with ``sql``, which ran and returned ``rows``, for ``question``: the
    problem's kind (the ``kind`` ``fix_query`` takes) and what to tell the model; None when
    nothing is. Checked in order, the first found: a table named and not read, a join read
    for nothing, a date filtered as text, one column equal to two values, a named value left
    out, an unnamed one filtered on, the named column not aggregated, another column grouped
    by, rows counted for different values or listed for "how many", a value the column does
    not hold, no rows."""
    # "How many different types of death": types counted, not a filter on the type 'Death'.
    counted = different_column(question, list(column_types(lake, sql)))
    named = [
        (c, v)
        for c, v in coded_values(sql, lake, named)
        if counted is None or c.casefold() != counted.casefold()
    ]
    left = (
        missing_values(sql, named)
        or missing_dates(sql, named_dates(question))
        or missing_numbers(sql, question)
    )
    if subject := unread_subject(sql, question, lake):
        return "subject", f"does not read {subject}, a table the question names"
    if joined := unneeded_join(sql, question, lake):
        return "joined", f"joins {joined} and reads nothing of it"
    if text_date := text_dates(sql, question, lake):
        return "dates", f"filters {text_date} as text, not on the date the question names"
    if conflict := conflicting(sql):
        said = " and ".join(f"'{value}'" for value in conflict[1])
        return "conflict", f"requires {conflict[0]} to equal {said} at once"
    if left:
        return "missing", f"leaves out {left}, which the question names"
    if extra := unnamed_values(sql, question, named, listed):
        return "unnamed", f"filters on {extra}, which the question does not name"
    if measure := unread_measure(sql, question, lake):
        return "measure", f"does not aggregate {measure}, the column the question names"
    if asked := grouped_otherwise(sql, question, lake):
        return "grouped", f"groups by another column than {asked}, which the question asks for"
    if different := counts_not_different(sql, question, lake):
        return "different", f"counts rows, but the question counts different {different} values"
    if _HOW_MANY_Q.search(question) and len(rows) > 1 and count_rows(sql):
        return "listed", f"lists {len(rows)} rows, but the question asks how many"
    if unheld := unheld_values(sql, listed):
        return "unheld", f"compares {unheld}, a value the column does not hold"
    if not rows or all(value is None for row in rows for value in row):
        return "empty", "returned no rows (or only empty values)"
    return None


def coded_values(sql: str, lake: Lake, named: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """``named`` as ``sql`` compares them: a value of a lookup table's column that ``sql``
    compares as its code (``status = 'R'`` for meaning 'returned') becomes ``(status, 'R')``,
    the rest as they are."""
    read = {table.casefold() for table in tables_read(sql)}
    columns = {c.casefold() for c in column_types(lake, sql)}
    out: list[tuple[str, str]] = []
    lookups = [
        j for j in joins(lake, [i.name for i in lake.datasets()]) if j.lookup and j.left.casefold() in read
    ]
    for column, value in named:
        code = None
        if column.casefold() not in columns:
            for join in lookups:
                code = lookup_code(lake, join.right, join.right_column, column, value)
                if code is not None and compares(sql, join.left_column, code):
                    out.append((join.left_column, code))
                    break
                code = None
        if code is None:
            out.append((column, value))
    return out


def lookup_code(lake: Lake, table: str, code: str, column: str, value: str) -> str | None:
    """The ``code`` of the one row of lookup ``table`` whose ``column`` is ``value`` (any case)."""
    try:
        result = lake.query(
            f"SELECT {quote_name(code)} FROM {quote_name(table)} WHERE lower(CAST({quote_name(column)} AS VARCHAR)) = "
            f"{sql_literal(value.casefold())}",
            max_rows=2,
        )
    except AgentlakeError:
        return None
    return str(result.rows[0][0]) if len(result.rows) == 1 else None


def quote_name(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def sql_literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"
