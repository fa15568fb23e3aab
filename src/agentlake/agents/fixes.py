"""Code's fixes of a model's query, from what the question names and what the data holds.

A small model's query is often one filter away from the answer: it leaves out the year the
question names, filters on a value the question never said (copied from an example), compares
a value that is written in several cases with one of them, names a column the table does not
have, or writes a value the column does not hold ("foggy" for "fog"). ``fix_query`` returns the
query with one such fix and what was done, or ``None``; ``agents.ask`` runs it through the
lake's guard like any query and keeps the trace. The problems are found by ``query_checks``
(``find_problem``); the fixes, by the problem ``ask`` found:

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
- it filters a date as text ("LIKE '2014-07-%'", "month = '2009-01'") or on another date
  column than the question's: ``year()``/``month()`` of the question's date column;
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

Filters are read and written as a tree (``lake.rewrite``, sqlglot), never as text. It does not
run queries nor decide when to fix (``agents.ask``).
"""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, Any

from agentlake.agents.linking import (
    compares,
    compares_folded,
    joins,
)
from agentlake.agents.query_checks import (
    BAD_DATE_ERROR,
    DATE_WORDS,
    MISSING_COLUMN,
    conflicting,
    counts_not_different,
    date_column,
    date_filters,
    different_column,
    grouped_otherwise,
    lookup_code,
    named_dates,
    quote_name,
    sql_literal,
    subject_table,
    unneeded_join,
    unread_measure,
    unread_subject,
)
from agentlake.lake.repair import column_types, rename_identifier, repaired_sql
from agentlake.lake.rewrite import (
    add_filters,
    aggregate_instead,
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
    replace_conjuncts,
    replace_value,
    tables_read,
)

if TYPE_CHECKING:
    from agentlake.lake import Lake

NEAR_VALUE = 0.6


def _conflict_fix(sql: str, question: str, named: list[tuple[str, str]]) -> tuple[str, str] | None:
    found = conflicting(sql)
    if found is None:
        return None
    column, values = found
    same = {value.casefold() for value in values}
    if len(same) == 1:
        held = {value for c, value in named if c.casefold() == column and value.casefold() in same}
        condition = (
            f"{quote_name(column)} = {sql_literal(held.pop())}"
            if len(held) == 1
            else f"lower({quote_name(column)}) = {sql_literal(values[0].casefold())}"
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


def _date_fix(sql: str, lake: Lake, question: str, *, broken: bool = False) -> tuple[str, str] | None:
    found = date_filters(sql, question, lake, broken=broken)
    if found is None:
        return None
    date, column, wrong = found
    conditions = [f"year({quote_name(column)}) = {date.year}"]
    if date.month:
        conditions.append(f"month({quote_name(column)}) = {date.month}")
    fixed = replace_conjuncts(sql, wrong, conditions)
    return (
        (fixed, f"filtered {' AND '.join(conditions)}: the question names {date.describe()}")
        if fixed
        else None
    )


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
    """``sql`` with one fix for its problem ``kind`` (``error``, ``subject``, ``joined``, ``dates``, ``conflict``, ``missing``,
    ``unnamed``, ``measure``, ``grouped``, ``different``, ``listed``, ``unheld``, ``empty``) and what was done, or ``None`` (see the
    module docstring)."""
    read = {table.casefold() for table in tables_read(sql)}
    columns = {column: values for (table, column), values in listed.items() if table.casefold() in read}
    if kind == "error":
        missing = MISSING_COLUMN.search(error or "")
        absent = (missing.group(1) or missing.group(2)).casefold() if missing else ""
        broken = BAD_DATE_ERROR.search(error or "") is not None or absent in ("year", "month", "day")
        if broken:  # a date written wrong, or a year/month column the table has not: the named date
            return _date_fix(sql, lake, question, broken=True) or _error_fix(sql, error or "", lake, columns)
        return _error_fix(sql, error or "", lake, columns)
    if kind == "missing":
        counted = different_column(question, list(column_types(lake, sql)))
        kept = [(c, v) for c, v in named if counted is None or c.casefold() != counted.casefold()]
        return _missing_fix(sql, lake, question, kept, columns)
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
        return _date_fix(sql, lake, question)
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
    fixed = repaired_sql(sql, error, types)
    if fixed is not None:
        return fixed
    missing = MISSING_COLUMN.search(error)
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
    if any(word in wrong.casefold() for word in DATE_WORDS) and len(dated) == 1:
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
            f"lower({quote_name(column)}) = {sql_literal(value)}"
            if len(variants) > 1
            else f"{quote_name(column)} = {sql_literal(variants[0])}"
        )
        added = add_filters(sql, [condition])
        if added is not None:
            return added, f"added the filter {condition}, which the question names"
    dates = [date for date in named_dates(question) if str(date.year) not in sql]
    if dates:
        column = date_column(lake, sql, question)
        if column is not None:
            conditions = [f"year({quote_name(column)}) = {dates[0].year}"]
            if dates[0].month:
                conditions.append(f"month({quote_name(column)}) = {dates[0].month}")
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
    subject = unread_subject(sql, question, lake)
    read = tables_read(sql)
    if subject is None or len(read) != 1 or read[0].casefold() not in infos:
        return None
    other = infos[read[0].casefold()].name
    mine = {column for column, _ in infos[subject.casefold()].columns}
    theirs = {column for column, _ in infos[other.casefold()].columns}
    join = next((j for j in joins(lake, [subject, other]) if j.joins(subject, other)), None)
    if join is not None:
        fixed = join_table(sql, subject, (join.column_of(subject), join.column_of(other)), mine & theirs)
        what = f"joined {subject} ({join.hint()}): the question names it"
    elif subject == subject_table(question, [i.name for i in infos.values()]) and columns_named(sql) <= {
        c.casefold() for c in mine
    }:
        fixed = join_table(sql, subject, None, set())
        what = f"read {subject} in place of {other}: the question is about {subject}"
    else:
        return None
    return (fixed, what) if fixed is not None else None


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
            dropped = drop_filters(sql, lambda c, unsaid=comparison: c.sql == unsaid.sql)
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


def _code_filter(sql: str, lake: Lake, column: str, value: str) -> tuple[str, str] | None:
    """``sql`` filtering the codes' column of a table it reads on the code a lookup table gives
    ``value`` of its ``column`` ("the returned orders": ``status = 'R'``, where order_statuses
    says R means returned): the value the query compared that column with replaced, else the
    filter added; None when no table read has such codes."""
    read = {table.casefold() for table in tables_read(sql)}
    for join in joins(lake, [info.name for info in lake.datasets()]):
        if not join.lookup or join.left.casefold() not in read or join.right.casefold() in read:
            continue
        code = lookup_code(lake, join.right, join.right_column, column, value)
        if code is None:
            continue
        compared = [c for c in comparisons(sql) if c.column.casefold() == join.left_column.casefold()]
        if compared:
            fixed = replace_value(sql, join.left_column, compared[0].value, code)
        else:
            fixed = add_filters(sql, [f"{quote_name(join.left_column)} = {sql_literal(code)}"])
        if fixed is not None:
            return fixed, f"{join.left_column} = '{code}': {join.right} says '{code}' means '{value}'"
    return None


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
                code = lookup_code(lake, join.right, join.right_column, described, value)
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
