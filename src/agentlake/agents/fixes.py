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
- it does not read a table the question names: that table joined (a lookup of its codes, a
  key both share), or read in place of the one read when the question is about it;
- it joins a table the question does not name and reads nothing of it: the join dropped (it
  repeats rows);
- it filters a date as text ("LIKE '2014-07-%'", "month = '2009-01'"), on another date
  column than the question's or over another period than the one named (March for "in
  2014"): ``year()``/``month()`` of the question's date column (``agents.fix_dates``);
- it groups for a question that asks for no group, counts what has no value without asking
  for it, filters the column whose different values it counts, or filters on a lookup code
  the question does not describe; or the database refused a table or column read where it is
  not (``agents.fix_shape``);
- it requires a column to equal two values at once: one comparison (the value in one case,
  or the one the question names);
- it aggregates another numeric column than the one the question names, or counts rows for
  "how many <that column>": the named column aggregated (summed);
- it groups by another column than the one "which ..." asks for (the year of a date for
  "which year");
- it counts rows for "how many different ...": the different values counted; it lists rows
  for "how many": the rows counted;
- it compares a column with a value the column does not hold, or returned nothing: that
  filter dropped when the question does not say the value, else the value written as the code
  a lookup table gives it or as the listed value most like it (at least ``NEAR_VALUE`` alike).

What the question's words fix about the query's shape (a direction, a ranking, a count of
groups, a key, a difference) is ``agents.fix_words``'s; numbers compared, ``agents.fix_compare``'s.

Filters are read and written as a tree (``lake.rewrite``, sqlglot), never as text. It does not
run queries nor decide when to fix (``agents.ask``).
"""

from __future__ import annotations

import difflib
import re
from typing import TYPE_CHECKING, Any

from agentlake.agents.fix_compare import COMPARE_KINDS, compare_problems, fix_compared, named_measure
from agentlake.agents.fix_dates import (
    date_column,
    date_fix,
    is_date,
    missing_dates,
    named_dates,
    part_fix,
    quote,
    text_dates,
)
from agentlake.agents.fix_shape import (
    average_fix,
    counted_filtered,
    counted_fix,
    cut_listing,
    extreme_fix,
    held_fix,
    held_values,
    join_fix,
    null_fix,
    null_test_fix,
    nulls_not_counted,
    one_distinct,
    one_distinct_fix,
    order_fix,
    periods_fix,
    placement_fix,
    syntax_fix,
    unasked_grouping,
    unaveraged,
    uncounted_periods,
    unextreme,
    ungroup_fix,
    unheld_values,
    unordered,
    unsaid_codes,
    unsaid_fix,
    unsaid_null_tests,
    unselect,
)
from agentlake.agents.fix_whole import settled, whole_query
from agentlake.agents.fix_words import HOW_MANY, WORD_KINDS, fix_worded, word_problems
from agentlake.agents.linking import (
    compares,
    compares_folded,
    joins,
    missing_values,
    named_tables,
    state_codes,
    unnamed_values,
    words,
)
from agentlake.errors import AgentlakeError
from agentlake.lake.repair import column_types, rename_identifier, repaired_sql
from agentlake.lake.rewrite import (
    Comparison,
    add_filters,
    aggregate_instead,
    aggregated_columns,
    columns_named,
    comparisons,
    count_distinct,
    count_rows,
    drop_filters,
    drop_join,
    fold_case,
    grouped_by,
    join_table,
    regroup,
    replace_value,
    sql_literal,
    tables_read,
    unused_joins,
)

if TYPE_CHECKING:
    from agentlake.lake import Lake

NEAR_VALUE = 0.6
_MISSING = re.compile(
    r'Referenced column "([^"]+)" not found|does not have a column named "([^"]+)"', re.IGNORECASE
)
_DATE_WORDS = ("date", "day", "time", "when")
_BAD_DATE = re.compile(
    r"Conversion Error.*date|date field|invalid date|argument types '(?:year|month)\((?:VARCHAR|BIGINT|INTEGER|DOUBLE)"
    r"|Cannot mix values of type (?:DATE|TIMESTAMP)\w* and INTEGER",
    re.IGNORECASE,
)
_HOW_MANY = re.compile(r"\bhow many\s+((?:[a-z]+\s*){1,3})", re.IGNORECASE)
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
    if _WHICH_YEAR.search(question) and is_date(kind):
        return f"year({quote(grouped[0])})"
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


def _conflict_fix(sql: str, question: str, named: list[tuple[str, str]]) -> tuple[str, str] | None:
    found = conflicting(sql)
    if found is None:
        return None
    column, values = found
    same = {value.casefold() for value in values}
    if len(same) == 1:
        held = {value for c, value in named if c.casefold() == column and value.casefold() in same}
        condition = (
            f"{quote(column)} = {sql_literal(held.pop())}"
            if len(held) == 1
            else f"lower({quote(column)}) = {sql_literal(values[0].casefold())}"
        )
        kept = drop_filters(sql, lambda c: c.op == "=" and c.column.casefold() == column)
        fixed = add_filters(kept, [condition]) if kept else None
        return (fixed, f"compared {column} once: {' and '.join(values)} are one value") if fixed else None
    said = {value for c, value in named if c.casefold() == column} | {
        value for value in values if value.casefold() in question.casefold()
    }
    keep = [value for value in values if value in said]
    if len(set(keep)) != 1:
        return None
    fixed = drop_filters(sql, lambda c: c.op == "=" and c.column.casefold() == column and c.value != keep[0])
    return (fixed, f"kept {column} = '{keep[0]}', the value the question names") if fixed else None


def missing_numbers(sql: str, question: str) -> str | None:
    """The number a question compares with ("orders over 500") that ``sql`` never writes, or
    None."""
    left = [
        m.group(0)
        for m in _COMPARED_NUMBER.finditer(question)
        if not re.search(rf"(?<![\d.]){re.escape(m.group(1))}(?![\d])", sql)
    ]
    return " and ".join(left) or None


def find_problems(
    sql: str,
    rows: list[Any],
    *,
    lake: Lake,
    question: str,
    named: list[tuple[str, str]],
    listed: dict[tuple[str, str], list[str]],
) -> list[tuple[str, str]]:
    """What is wrong with ``sql``, which ran and returned ``rows``, for ``question``: each
    problem's kind (the ``kind`` ``fix_query`` takes) and what to tell the model, in this order:
    a table named and not read, a join read for nothing, a date filtered as text or over
    another period, one column equal to two values, a grouping the question does not ask for,
    a count of missing values that never asks for them, a filter on the column whose different
    values are counted, the different months (years, ...) of a date not counted, a named value
    left out, an unnamed one filtered on, a null test on a column the question never names, a
    lookup code the question does not describe, the named column not averaged or not
    aggregated, another column grouped by, groups left unordered for "which ... highest",
    rows counted for different values or listed for "how many", a value the column does not
    hold, no rows. Empty when nothing is."""
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
    if settled(sql, question, lake, rows, named):
        return []  # the value of the query code writes whole for this question
    worded = word_problems(sql, question, lake, rows, named)
    # A query code writes whole, and a key stated (one row): before any other fix.
    found = [problem for problem in worded if problem[0] in ("whole", "key")]
    if subject := unread_subject(sql, question, lake):
        found.append(("subject", f"does not read {subject}, a table the question names"))
    if joined := unneeded_join(sql, question, lake):
        found.append(("joined", f"joins {joined} and reads nothing of it"))
    if text_date := text_dates(sql, question, lake):
        found.append(
            ("dates", f"filters {text_date} as text or over another period than the date the question names")
        )
    if conflict := conflicting(sql):
        said = " and ".join(f"'{value}'" for value in conflict[1])
        found.append(("conflict", f"requires {conflict[0]} to equal {said} at once"))
    if unasked_grouping(sql, question):
        found.append(
            ("ungrouped", "groups the rows and answers for one group, but the question asks for no group")
        )
    if missing_of := nulls_not_counted(sql, question, lake):
        found.append(
            ("nulls", f"never asks for the rows where {missing_of} IS NULL, which the question counts")
        )
    if held := one_distinct(sql):
        found.append(("onedistinct", f"counts the different {held} values, but holds {held} to one value"))
    if kept := counted_filtered(sql, counted):
        found.append(("counted", f"filters {kept}, but the question counts the different {counted} values"))
    if periods := uncounted_periods(sql, question, lake):
        found.append(
            (
                "periods",
                f"does not count the different {periods[0]}s of {periods[1]}, which the question counts",
            )
        )
    if left:
        found.append(("missing", f"leaves out {left}, which the question names"))
    if said_values := held_values(sql, question, lake, listed):
        said = " and ".join(f"{column} = '{value}'" for column, value in said_values)
        found.append(("held", f"leaves out {said}, a value the question names"))
    if extra := unnamed_values(sql, question, named, listed):
        found.append(("unnamed", f"filters on {extra}, which the question does not name"))
    if tests := unsaid_null_tests(sql, question):
        found.append(("nulltests", f"filters {', '.join(tests)}, which the question says nothing of"))
    if codes := unsaid_codes(sql, question, lake, named):
        found.append(("unsaid", f"filters on {', '.join(codes)}, a code the question does not describe"))
    if averaged := unaveraged(sql, question, named_measure(question, column_types(lake, sql))):
        found.append(("averaged", f"does not average {averaged}, which the question asks the average of"))
    if extreme := unextreme(sql, question, named_measure(question, column_types(lake, sql))):
        found.append(
            ("extreme", f"does not take the {extreme} of the column the question asks the {extreme} of")
        )
    if measure := unread_measure(sql, question, lake):
        found.append(("measure", f"does not aggregate {measure}, the column the question names"))
    if asked := grouped_otherwise(sql, question, lake):
        found.append(("grouped", f"groups by another column than {asked}, which the question asks for"))
    if unordered(sql, question, rows):
        found.append(
            ("unordered", "returns every group unordered, but the question asks for the highest or lowest")
        )
    if different := counts_not_different(sql, question, lake):
        found.append(("different", f"counts rows, but the question counts different {different} values"))
    if HOW_MANY.search(question) and count_rows(sql) and (len(rows) > 1 or cut_listing(sql, rows, lake)):
        found.append(("listed", f"lists {len(rows)} rows, but the question asks how many"))
    found += [problem for problem in worded if problem[0] not in ("whole", "key")]
    found += compare_problems(sql, question, lake, rows, listed)
    if unheld := unheld_values(sql, listed):
        found.append(("unheld", f"compares {unheld}, a value the column does not hold"))
    if not rows or all(value is None for row in rows for value in row):
        found.append(("empty", "returned no rows (or only empty values)"))
    return found


def fix_query(
    sql: str,
    kind: str,
    error: str | None,
    *,
    lake: Lake,
    question: str,
    named: list[tuple[str, str]],
    listed: dict[tuple[str, str], list[str]],
    rows: list[Any] | None = None,
) -> tuple[str, str] | None:
    """``sql`` (which returned ``rows``, when it ran) with one fix for its problem ``kind``
    (``error``, ``subject``, ``joined``, ``unsaidfilter``, ``bound``, ``unstated``, ``columnvalue``,
    ``dates``, ``conflict``, ``ungrouped``, ``nulls``, ``onedistinct``, ``counted``, ``periods``, ``missing``,
    ``unnamed``, ``nulltests``, ``unsaid``, ``averaged``, ``measure``, ``grouped``,
    ``unordered``, ``different``, ``listed``, ``unheld``, ``empty``) and
    what was done, or ``None`` (see the module docstring)."""
    read = {table.casefold() for table in tables_read(sql)}
    columns = {column: values for (table, column), values in listed.items() if table.casefold() in read}
    if kind == "error":
        missing = _MISSING.search(error or "")
        absent = (missing.group(1) or missing.group(2)).casefold() if missing else ""
        broken = _BAD_DATE.search(error or "") is not None or absent in ("year", "month", "day")
        if broken:  # a date written wrong, or a year/month column the table has not: the named date
            return (
                date_fix(sql, lake, question, broken=True)
                or part_fix(sql, absent, lake, question)
                or _error_fix(sql, error or "", lake, columns)
            )
        return (
            _error_fix(sql, error or "", lake, columns)
            or placement_fix(sql, error or "", lake, question)
            or syntax_fix(sql, error or "")
            or whole_query(question, lake, named)
        )
    if kind == "ungrouped":
        return ungroup_fix(sql, question)
    if kind == "nulls":
        return null_fix(sql, question, lake)
    if kind == "counted":
        return counted_fix(sql, different_column(question, list(column_types(lake, sql))))
    if kind == "unsaid":
        return unsaid_fix(sql, question, lake, coded_values(sql, lake, named))
    if kind == "onedistinct":
        return one_distinct_fix(sql)
    if kind == "periods":
        return periods_fix(sql, question, lake)
    if kind == "nulltests":
        return null_test_fix(sql, question)
    if kind == "averaged":
        return average_fix(sql, question, named_measure(question, column_types(lake, sql)))
    if kind == "extreme":
        return extreme_fix(sql, question, named_measure(question, column_types(lake, sql)))
    if kind == "unordered":
        return order_fix(sql, question)
    if kind == "missing":
        counted = different_column(question, list(column_types(lake, sql)))
        kept = [(c, v) for c, v in named if counted is None or c.casefold() != counted.casefold()]
        return _missing_fix(sql, lake, question, kept, columns)
    if kind == "held":
        return held_fix(sql, question, lake, listed)
    if kind == "unnamed":
        return _unnamed_fix(sql, question, named, columns)
    if kind in ("empty", "unheld"):
        return _empty_fix(sql, columns, lake, question, named, listed)
    if kind == "subject":
        return _subject_fix(sql, lake, question)
    if kind == "joined":
        table = unneeded_join(sql, question, lake)
        fixed = drop_join(sql, table) if table else None
        return (fixed, f"dropped the join of {table}: the query reads nothing of it") if fixed else None
    if kind == "dates":
        return date_fix(sql, lake, question)
    if kind == "conflict":
        return _conflict_fix(sql, question, named)
    if kind == "measure":
        measure = unread_measure(sql, question, lake)
        fixed = aggregate_instead(sql, measure) if measure else None
        return (fixed, f"aggregated {measure}, the column the question names") if fixed else None
    if kind == "grouped":
        asked = grouped_otherwise(sql, question, lake)
        fixed = regroup(sql, grouped_by(sql)[0], asked) if asked else None
        return (fixed, f"grouped by {asked}, which the question asks for") if fixed else None
    if kind in COMPARE_KINDS:
        return fix_compared(sql, kind, question, lake, rows, listed)
    if kind in WORD_KINDS:
        return fix_worded(sql, kind, question, lake, rows, named)
    if kind == "listed":
        counted = count_rows(sql)
        return (counted, "counted the rows it lists: the question asks how many") if counted else None
    if kind == "different":
        column = counts_not_different(sql, question, lake)
        fixed = count_distinct(sql, _qualified(lake, sql, column)) if column else None
        return (fixed, f"counted different {column} values, as the question asks") if fixed else None
    return None


def _error_fix(sql: str, error: str, lake: Lake, columns: dict[str, list[str]]) -> tuple[str, str] | None:
    types = column_types(lake, sql)
    fixed = _looked_up(sql, error, lake)
    if fixed is not None:
        return fixed
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
    return unselect(sql, wrong)


def _looked_up(sql: str, error: str, lake: Lake) -> tuple[str, str] | None:
    """A column no table read has, compared with a value a lookup table of a table read
    describes (``order_status = 'on hold'``, where order_statuses says H means on hold): that
    filter written as the code's (``status = 'H'``)."""
    missing = _MISSING.search(error)
    wrong = (missing.group(1) or missing.group(2)) if missing else None
    if wrong is None:
        return None
    for comparison in [c for c in comparisons(sql) if c.column.casefold() == wrong.casefold()]:

        def gone(c: Comparison, dropped: str = comparison.sql) -> bool:
            return c.sql == dropped

        kept = drop_filters(sql, gone)
        lookups = {j.right.casefold() for j in joins(lake, [i.name for i in lake.datasets()]) if j.lookup}
        for info in [i for i in lake.datasets() if i.name.casefold() in lookups]:
            for column, kind in info.columns:
                if "CHAR" not in kind.upper() and "TEXT" not in kind.upper():
                    continue
                coded = _code_filter(kept, lake, column, comparison.value) if kept else None
                if coded is not None:
                    return coded[0], f"{comparison.sql} -> {coded[1]}"
    return None


def _missing_fix(
    sql: str, lake: Lake, question: str, named: list[tuple[str, str]], columns: dict[str, list[str]]
) -> tuple[str, str] | None:
    for column, value in dict.fromkeys((column, value.casefold()) for column, value in named):
        if column not in columns:
            coded = _code_filter(sql, lake, column, value)
            if coded is not None:
                return coded
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
            f"lower({quote(column)}) = {sql_literal(value)}"
            if len(variants) > 1
            else f"{quote(column)} = {sql_literal(variants[0])}"
        )
        added = add_filters(sql, [condition])
        if added is not None:
            return added, f"added the filter {condition}, which the question names"
    dates = [date for date in named_dates(question) if str(date.year) not in sql]
    if dates:
        dated = date_column(lake, sql, question)
        if dated is not None:
            conditions = dates[0].conditions(dated)
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
        listed = columns.get(comparison.column, [])
        if value.isupper() and len(value) <= 3 and not state_codes(listed):
            return False  # a code: a question describes it in words (a state's, by its name: linked)
        return value in listed and (comparison.column, value) not in named and value.casefold() not in text

    dropped = [c.sql for c in comparisons(sql) if unnamed(c)]
    fixed = drop_filters(sql, unnamed) if dropped else None
    return (fixed, f"dropped {', '.join(dropped)}: the question does not name it") if fixed else None


def _subject_fix(sql: str, lake: Lake, question: str) -> tuple[str, str] | None:
    infos = {info.name.casefold(): info for info in lake.datasets()}
    subject = unread_subject(sql, question, lake)
    read = tables_read(sql)
    if subject is None or len(read) != 1 or read[0].casefold() not in infos:
        return None
    other = infos[read[0].casefold()].name
    joined = join_fix(sql, lake, subject, other, "the question names it")
    mine = {column.casefold() for column, _ in infos[subject.casefold()].columns}
    if joined is not None or subject != subject_table(question, [i.name for i in infos.values()]):
        return joined
    if not columns_named(sql) <= mine:
        return None
    fixed = join_table(sql, subject, None, set())
    return (fixed, f"read {subject} in place of {other}: the question is about {subject}") if fixed else None


def _empty_fix(
    sql: str,
    columns: dict[str, list[str]],
    lake: Lake,
    question: str,
    named: list[tuple[str, str]],
    listed: dict[tuple[str, str], list[str]],
) -> tuple[str, str] | None:
    """A compared value the column does not hold: dropped when the question does not say it
    ("status = 'SHIPPED'" for "How many orders were placed in March?"), else written as the
    code a lookup table gives it ('shipped' -> 'S') or as the listed value most like it."""
    text = question.casefold()
    for comparison in comparisons(sql):
        held = columns.get(comparison.column)
        if not held or comparison.value in held:
            continue
        value = comparison.value
        if value.casefold() not in text and (comparison.column, value) not in named:
            dropped = drop_filters(sql, lambda c, unsaid=comparison: c.sql == unsaid.sql)  # type: ignore[misc]
            if dropped is not None:
                return (
                    dropped,
                    f"dropped {comparison.sql}: a value the column does not hold, which the question does not name",
                )
        code = _code_for(lake, listed, comparison.column, value)
        if code is not None:
            fixed = replace_value(sql, comparison.column, value, code)
            if fixed is not None:
                return (
                    fixed,
                    f"{comparison.column} '{value}' -> '{code}' (the code a lookup table gives '{value}')",
                )
        near = difflib.get_close_matches(value.casefold(), [v.casefold() for v in held], 1, NEAR_VALUE)
        if near:
            replacement = next(v for v in held if v.casefold() == near[0])
            fixed = replace_value(sql, comparison.column, value, replacement)
            if fixed is not None:
                return fixed, f"{comparison.column} '{value}' -> '{replacement}' (the value the column holds)"
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
                code = _lookup_code(lake, join.right, join.right_column, column, value)
                if code is not None and compares(sql, join.left_column, code):
                    out.append((join.left_column, code))
                    break
                code = None
        if code is None:
            out.append((column, value))
    return out


def _code_filter(sql: str, lake: Lake, column: str, value: str) -> tuple[str, str] | None:
    """``sql`` filtering the codes' column of a table it reads on the code a lookup table gives
    ``value`` of its ``column`` ("the returned orders": ``status = 'R'``, where order_statuses
    says R means returned): the value the query compared that column with replaced, else the
    filter added; None when no table read has such codes."""
    read = {table.casefold() for table in tables_read(sql)}
    for join in joins(lake, [info.name for info in lake.datasets()]):
        if not join.lookup or join.left.casefold() not in read or join.right.casefold() in read:
            continue
        code = _lookup_code(lake, join.right, join.right_column, column, value)
        if code is None:
            continue
        compared = [c for c in comparisons(sql) if c.column.casefold() == join.left_column.casefold()]
        if compared:
            fixed = replace_value(sql, join.left_column, compared[0].value, code)
        else:
            fixed = add_filters(sql, [f"{quote(join.left_column)} = {sql_literal(code)}"])
        if fixed is not None:
            return fixed, f"{join.left_column} = '{code}': {join.right} says '{code}' means '{value}'"
    return None


def _lookup_code(lake: Lake, table: str, code: str, column: str, value: str) -> str | None:
    """The ``code`` of the one row of lookup ``table`` whose ``column`` is ``value`` (any case)."""
    try:
        result = lake.query(
            f"SELECT {quote(code)} FROM {quote(table)} WHERE lower(CAST({quote(column)} AS VARCHAR)) = "
            f"{sql_literal(value.casefold())}",
            max_rows=2,
        )
    except AgentlakeError:
        return None
    return str(result.rows[0][0]) if len(result.rows) == 1 else None


def _code_for(lake: Lake, listed: dict[tuple[str, str], list[str]], column: str, value: str) -> str | None:
    """The code of ``column`` a lookup table gives ``value`` (its row whose listed column holds
    ``value``, any case), or None."""
    tables = sorted({table for table, _ in listed})
    for join in joins(lake, tables):
        if not join.lookup or join.left_column.casefold() != column.casefold():
            continue
        for (table, described), values in listed.items():
            if table != join.right or described == join.right_column:
                continue
            if any(v.casefold() == value.casefold() for v in values):
                code = _lookup_code(lake, join.right, join.right_column, described, value)
                if code is not None:
                    return code
    return None


def _qualified(lake: Lake, sql: str, column: str) -> str:
    """``column`` qualified with the first table ``sql`` reads that has it when another table
    read has it too (``customers.customer_id`` over a join), else as it is."""
    read = [table.casefold() for table in tables_read(sql)]
    holders = [
        info.name
        for info in sorted(
            lake.datasets(), key=lambda i: read.index(i.name.casefold()) if i.name.casefold() in read else 99
        )
        if info.name.casefold() in read and any(c.casefold() == column.casefold() for c, _ in info.columns)
    ]
    return f"{holders[0]}.{column}" if len(holders) > 1 else column


def _rename_column(sql: str, wrong: str, right: str) -> str | None:
    fixed = rename_identifier(sql, wrong, right)
    return fixed if fixed != sql else None
