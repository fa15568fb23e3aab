"""The dates a question names and the filters of a query on them.

Owns reading a question's years and months ("in 2005", "in March 2016": ``named_dates``), the
date column a query's question is about (``date_column``), and finding and mending a filter
that misses the named date: written as text, on another date column, written so the database
refuses it (``text_dates``, ``date_fix``) or over another period than the one named
(``wrong_period``). It does not run queries (``agents.ask``) nor own the other fixes
(``agents.fixes``).
"""

from __future__ import annotations

import calendar
import datetime
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlglot import exp

from agentlake.agents.linking import words
from agentlake.lake.repair import column_types
from agentlake.lake.rewrite import conjuncts_of, parse_select, replace_conjuncts

if TYPE_CHECKING:
    from agentlake.lake import Lake

_MONTHS = {name.casefold(): number for number, name in enumerate(calendar.month_name) if name}
_MONTHS |= {name.casefold(): number for number, name in enumerate(calendar.month_abbr) if name}
_YEAR = re.compile(r"\b(1[89]\d\d|20\d\d)\b")
_MONTH_YEAR = re.compile(
    rf"\b({'|'.join(sorted(_MONTHS, key=len, reverse=True))})\.?\s+(1[89]\d\d|20\d\d)\b", re.I
)
_MONTH_NAMES = "|".join(sorted(_MONTHS, key=len, reverse=True))
# "July 4, 2015", "May 1st 1992", "4 July 2015", "the 4th of July, 2015".
_DAY_MONTH_YEAR = re.compile(
    rf"\b(?:({_MONTH_NAMES})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?|(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH_NAMES})\.?)"
    r",?\s+(1[89]\d\d|20\d\d)\b",
    re.I,
)
_ISO_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
# "between June 1 and August 31, 2017", "from March 2016 to May 2016", "from 3 March to 9 May 2015".
_ON = rf"(?:({_MONTH_NAMES})\.?(?:\s+(\d{{1,2}})(?:st|nd|rd|th)?)?|(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH_NAMES})\.?)"
_RANGE = re.compile(
    rf"\b(?:between|from)\s+{_ON}(?:,?\s+(1[89]\d\d|20\d\d))?\s+(?:and|to|through|until|till)\s+{_ON},?\s+(1[89]\d\d|20\d\d)\b",
    re.I,
)
_ORDINALS = {
    "first": 1,
    "1st": 1,
    "second": 2,
    "2nd": 2,
    "third": 3,
    "3rd": 3,
    "fourth": 4,
    "4th": 4,
    "last": 4,
}
_QUARTER = re.compile(
    r"\b(?:(?:the\s+)?(first|1st|second|2nd|third|3rd|fourth|4th|last)\s+(quarter|half)\s+of\s+|q([1-4])\s+)(1[89]\d\d|20\d\d)\b",
    re.I,
)


@dataclass(frozen=True)
class NamedDate:
    """A year (and month, and day) a question names: "in 2005", "in March 2016", "on July 4,
    2015"."""

    year: int
    month: int | None = None
    day: int | None = None
    last: datetime.date | None = None  # a range's last day: "between June 1 and August 31, 2017"

    def describe(self) -> str:
        if self.last is not None:
            first = datetime.date(self.year, self.month or 1, self.day or 1)
            return f"{first:%B} {first.day}, {first.year} to {self.last:%B} {self.last.day}, {self.last.year}"
        if self.month and self.day:
            return f"{calendar.month_name[self.month]} {self.day}, {self.year}"
        return f"{calendar.month_name[self.month]} {self.year}" if self.month else str(self.year)

    def conditions(self, column: str) -> list[str]:
        """The filters of date ``column`` on this date: its year, month and day (a range: its
        first and last day)."""
        if self.last is not None:
            first = datetime.date(self.year, self.month or 1, self.day or 1)
            return [f"CAST({quote(column)} AS DATE) BETWEEN DATE '{first}' AND DATE '{self.last}'"]
        parts = [("year", self.year), ("month", self.month), ("day", self.day)]
        return [f"{part}({quote(column)}) = {value}" for part, value in parts if value]


def named_dates(question: str) -> list[NamedDate]:
    """The years, with their months where named, that ``question`` names, in order."""
    found: list[NamedDate] = []
    taken: set[int] = set()
    for named in _ranges(question):
        found.append(named[0])
        taken |= named[1]
    for match in _DAY_MONTH_YEAR.finditer(question):
        if match.start(5) in taken:
            continue
        month = _MONTHS[(match.group(1) or match.group(4)).casefold()]
        day = int(match.group(2) or match.group(3))
        try:
            datetime.date(int(match.group(5)), month, day)
        except ValueError:
            continue
        found.append(NamedDate(int(match.group(5)), month, day))
        taken.add(match.start(5))
    for match in _MONTH_YEAR.finditer(question):
        if match.start(2) in taken:
            continue
        found.append(NamedDate(int(match.group(2)), _MONTHS[match.group(1).casefold()]))
        taken.add(match.start(2))
    for match in _YEAR.finditer(question):
        if match.start() not in taken:
            found.append(NamedDate(int(match.group(1))))
    return found


def _ranges(question: str) -> list[tuple[NamedDate, set[int]]]:
    """The ranges of days ``question`` names (between two days or months, a quarter, a half),
    each with the positions of the years it read."""
    found = []
    for match in _RANGE.finditer(question):
        end_year = int(match.group(10))
        start_year = int(match.group(5) or end_year)
        start_month = _MONTHS[(match.group(1) or match.group(4)).casefold()]
        end_month = _MONTHS[(match.group(6) or match.group(9)).casefold()]
        start_day = match.group(2) or match.group(3)
        end_day = match.group(7) or match.group(8)
        try:
            first = datetime.date(start_year, start_month, int(start_day or 1))
            last = datetime.date(
                end_year, end_month, int(end_day) if end_day else calendar.monthrange(end_year, end_month)[1]
            )
        except ValueError:
            continue
        if last < first:
            continue
        positions = {match.start(10)} | ({match.start(5)} if match.group(5) else set())
        found.append((NamedDate(first.year, first.month, first.day, last), positions))
    for match in _QUARTER.finditer(question):
        year = int(match.group(4))
        if match.group(3):
            part, size = int(match.group(3)), 3
        else:
            size = 3 if match.group(2).casefold() == "quarter" else 6
            part = min(_ORDINALS[match.group(1).casefold()], 12 // size)
        first_month, last_month = (part - 1) * size + 1, part * size
        last = datetime.date(year, last_month, calendar.monthrange(year, last_month)[1])
        found.append((NamedDate(year, first_month, 1, last), {match.start(4)}))
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


def text_dates(sql: str, question: str, lake: Lake) -> str | None:
    """The date column ``sql`` filters wrongly on the one date ``question`` names, else None:
    as text (``CAST(date AS VARCHAR) LIKE '2014-07-%d'``, ``month = '2009-01'``, ``month =
    2009``; a range of whole ISO days, ``BETWEEN '2016-03-01' AND '2016-03-31'``, is no text),
    or another date column than the one the question is about (``signup_date`` for "placed an
    order in 2017")."""
    found = _date_filters(sql, question, lake)
    return found[1] if found else None


def _date_filters(
    sql: str, question: str, lake: Lake, *, broken: bool = False
) -> tuple[NamedDate, str, Callable[[exp.Expression], bool]] | None:
    """The named date, the date column to filter, and which conjuncts filter wrongly (with
    ``broken``, the database refused a date the query wrote: every filter of a date column on
    the named year, such as ``BETWEEN '2015-11-01' AND '2015-11-31'``)."""
    dates = named_dates(question)
    if len(dates) != 1:
        return None
    date = dates[0]
    dated = {name.casefold(): name for name, kind in column_types(lake, sql).items() if is_date(kind)}
    target = date_column(lake, sql, question)

    wide = (
        {node.sql() for node in _too_wide(conjuncts_of(sql), date, target)} if target is not None else set()
    )

    def wrong(node: exp.Expression) -> bool:
        if (
            node.sql() in wide
            or _text_date(node, date, dated)
            or (broken and (_on_year(node, date, dated) or _date_part(node) or _part_of_other(node, dated)))
        ):
            return True
        return target is not None and (
            _other_date(node, date, dated, target) or _wrong_period(node, date, target)
        )

    found = [node for node in conjuncts_of(sql) if wrong(node)]
    if not found:
        return None
    column = target or next(
        dated[c.name.casefold()] for c in found[0].find_all(exp.Column) if c.name.casefold() in dated
    )
    return date, column, wrong


def is_date(kind: str) -> bool:
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


def _part_of_other(node: exp.Expression, dated: dict[str, str]) -> bool:
    """A year or month taken of no date column (``YEAR(lower(source)) = 2005``)."""
    parts = [part for part in node.find_all(exp.Year, exp.Month)]
    return bool(parts) and not any(
        column.name.casefold() in dated for part in parts for column in part.find_all(exp.Column)
    )


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


def period(date: NamedDate) -> tuple[datetime.date, datetime.date]:
    """The first and last day of ``date``: its range, its day, its month, or its whole year."""
    if date.last is not None:
        return datetime.date(date.year, date.month or 1, date.day or 1), date.last
    if date.month and date.day:
        named = datetime.date(date.year, date.month, date.day)
        return named, named
    if date.month:
        last = calendar.monthrange(date.year, date.month)[1]
        return datetime.date(date.year, date.month, 1), datetime.date(date.year, date.month, last)
    return datetime.date(date.year, 1, 1), datetime.date(date.year, 12, 31)


def _day(node: exp.Expression | None) -> datetime.date | None:
    if isinstance(node, exp.Cast):
        node = node.this
    if not isinstance(node, exp.Literal) or not node.is_string or not _ISO_DAY.match(node.this):
        return None
    try:
        return datetime.date.fromisoformat(node.this)
    except ValueError:
        return None


def _on(node: exp.Expression | None, target: str) -> bool:
    return isinstance(node, exp.Column) and node.name.casefold() == target.casefold()


def _wrong_period(node: exp.Expression, date: NamedDate, target: str) -> bool:
    """A filter of ``target`` on whole days that selects another period than the one the
    question names (``BETWEEN '2014-03-01' AND '2014-03-31'`` or ``= '2014-03-01'`` for "in
    2014"; a day for "in January 2013"), or on a month the question does not name
    (``month(date) = 3`` for "in 2012")."""
    first, last = period(date)
    day = datetime.timedelta(days=1)
    if isinstance(node, exp.Between) and _on(node.this, target):
        low, high = _day(node.args.get("low")), _day(node.args.get("high"))
        return low is not None and high is not None and (low, high) != (first, last)
    bounds: dict[type, datetime.date | None] = {
        exp.EQ: first if date.day else None,
        exp.GTE: first,
        exp.GT: first - day,
        exp.LTE: last,
        exp.LT: last + day,
    }
    if type(node) in bounds and _on(node.this, target):
        value = _day(node.expression)
        return value is not None and value != bounds[type(node)]
    for part, named in ((exp.Month, date.month), (exp.Day, date.day)):
        if isinstance(node, exp.EQ) and isinstance(node.this, part) and _on(node.this.this, target):
            literal = node.expression
            return isinstance(literal, exp.Literal) and not literal.is_string and int(literal.this) != named
    return False


def _too_wide(conjuncts: list[exp.Expression], date: NamedDate, target: str) -> list[exp.Expression]:
    """The year (or month) filters of ``target`` in ``conjuncts`` when the question names a
    finer date that no other conjunct filters on (``year(date) = 2015`` for "on July 4,
    2015"): they select more than the named date."""
    parts = {
        kind
        for node in conjuncts
        for kind in (exp.Year, exp.Month, exp.Day)
        if isinstance(node, exp.EQ) and isinstance(node.this, kind) and _on(node.this.this, target)
    }
    if date.last is not None:  # a range: no one year, month or day is it
        return [
            node
            for node in conjuncts
            if isinstance(node, exp.EQ)
            and isinstance(node.this, (exp.Year, exp.Month, exp.Day))
            and _on(node.this.this, target)
        ]
    finer = (date.month and exp.Month not in parts) or (date.day and exp.Day not in parts)
    return [
        node
        for node in conjuncts
        if finer
        and isinstance(node, exp.EQ)
        and isinstance(node.this, (exp.Year, exp.Month))
        and _on(node.this.this, target)
    ]


def date_fix(sql: str, lake: Lake, question: str, *, broken: bool = False) -> tuple[str, str] | None:
    found = _date_filters(sql, question, lake, broken=broken)
    if found is None:
        return None
    date, column, wrong = found
    conditions = date.conditions(column)
    fixed = replace_conjuncts(sql, wrong, conditions)
    return (
        (fixed, f"filtered {' AND '.join(conditions)}: the question names {date.describe()}")
        if fixed
        else None
    )


_PARTS: dict[str, type[exp.Func]] = {"year": exp.Year, "month": exp.Month, "day": exp.Day}


def part_fix(sql: str, part: str, lake: Lake, question: str = "") -> tuple[str, str] | None:
    """``sql`` reading ``year(<date>)`` where it read a column ``year`` the tables do not have
    (``month``, ``day`` alike), of their one date column, else of the one ``question`` is about
    (``date_column``), else of the first (a table's own date, such as order_date, comes before
    the dates of what followed it); with what was done."""
    dated = [name for name, kind in column_types(lake, sql).items() if is_date(kind)]
    tree = parse_select(sql)
    if part not in _PARTS or not dated or tree is None:
        return None
    if len(dated) > 1:
        dated = [date_column(lake, sql, question) or dated[0]]
    columns = [c for c in tree.find_all(exp.Column) if c.name.casefold() == part and not c.table]
    if any(_whole_date(column) for column in columns):
        return None  # "day = DATE '2012-01-01'" names the date itself (``fixes._error_fix``)
    for column in columns:
        column.replace(_PARTS[part](this=exp.column(dated[0], quoted=True)))
    fixed = f"{part}({quote(dated[0])})"
    return (
        (tree.sql("duckdb"), f"read {fixed} for the {part} the table has no column of") if columns else None
    )


def _whole_date(column: exp.Column) -> bool:
    """``column`` is compared with a text or a date (not a number, as a part is)."""
    compared = column.parent
    if not isinstance(compared, (exp.EQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Between)):
        return False
    others = [node for node in compared.iter_expressions() if node is not column]
    return any(
        (isinstance(other, exp.Literal) and other.is_string) or isinstance(other, (exp.Cast, exp.Date))
        for other in others
    )


def quote(name: str) -> str:
    """``name`` as a quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'
