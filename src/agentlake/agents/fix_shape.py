"""Code's fixes of a query's shape: a grouping, a filter or a missing table the question does
not account for.

Owns the checks and fixes, for a query that ran, of a grouping the question never asks for
(``GROUP BY sex ORDER BY n DESC LIMIT 1`` for "How many penguins ...": one group's count, the
group unnamed), a count of what has no value that never asks for the missing value ("no
recorded body mass": ``body_mass_g IS NULL``), a filter on the very column whose different
values are counted (``count(DISTINCT type) ... WHERE type = 'Death'``), a lookup code the
question does not describe (``status = 'C'``, copied from an example, where the lookup table
says C means cancelled and the question says nothing of cancelling), a null test on a column
the question never names, the different months (years, days, weeks) of a date not counted,
the column the question asks the average of aggregated otherwise (``min(price)`` for "the
lowest average price"), and groups left unordered for "which ... the highest"; and, for a query the
database refused, a table or column read where it is not: a table named in the WHERE but never
joined, a column read through the wrong alias, a column of a table the query did not join, a
grouping by a column no table has. It does not run queries nor decide when to fix
(``agents.ask``); ``agents.fixes`` dispatches to it.
"""

from __future__ import annotations

import calendar
import re
from typing import TYPE_CHECKING

from sqlglot import exp

from agentlake.agents.fix_dates import date_column, quote
from agentlake.agents.linking import joins, lake_columns, outside_column_names, words
from agentlake.errors import AgentlakeError
from agentlake.lake.repair import NUMERIC_TYPE, column_types
from agentlake.lake.rewrite import (
    add_filters,
    aggregate_with,
    aliases_read,
    comparisons,
    conjuncts_of,
    count_all,
    count_distinct_of,
    count_rows,
    counted_distinct,
    drop_filters,
    group_keys_selected,
    grouped_by,
    join_table,
    order_by_aggregate,
    parse_select,
    replace_conjuncts,
    requalify,
    settle_ungrouped,
    sql_literal,
    tables_read,
    ungroup,
)

if TYPE_CHECKING:
    from agentlake.lake import Lake

# Words by which a question asks for one number over its rows.
_ONE_NUMBER = re.compile(r"\bhow (?:many|much|old|long)\b|\b(?:average|mean|total|sum)\b", re.IGNORECASE)
# Words by which a question asks for a value per group: "which city", "each year", "who".
_GROUP_WORDS = re.compile(
    r"\b(?:which|each|per|every|who|whose|most|least|fewest|top|by|rank\w*|yearly|monthly|weekly|daily|annual\w*"
    r"|what\s+[a-z]+\s+(?:had|has|have|was|were|did|saw))\b",
    re.IGNORECASE,
)
# "no recorded body mass", "without a shipped date", "missing sex": the column with no value.
_NO_VALUE = re.compile(
    r"\b(?:no|without|missing|unknown|unrecorded)\s+(?:an?\s+|any\s+)?(?:recorded\s+|known\s+|listed\s+)?"
    r"((?:[a-z]+\s*){1,3})",
    re.IGNORECASE,
)
_PHRASE_END = frozenset(
    "of in on at for from by with are is was were did do does have has had and or".split()
)
_NULLISH = frozenset({"", "0", "na", "n/a", "null", "none", "nan", "unknown"})
_TABLE_MISSING = re.compile(r'Referenced table "([^"]+)" not found', re.IGNORECASE)
_WRONG_ALIAS = re.compile(r'Table "([^"]+)" does not have a column named "([^"]+)"', re.IGNORECASE)
_COLUMN_MISSING = re.compile(r'Referenced column "([^"]+)" not found', re.IGNORECASE)
_NOT_GROUPED = re.compile(r'column "([^"]+)" must appear in the GROUP BY clause', re.IGNORECASE)
_NOT_A_NUMBER = re.compile(
    r"Could not convert string '((?:[^']|'')*)' to (?:U?(?:TINY|SMALL|BIG|HUGE)?INT\w*|INTEGER|DOUBLE|FLOAT|DECIMAL)",
    re.IGNORECASE,
)


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


def unasked_grouping(sql: str, question: str) -> bool:
    """Whether ``sql`` groups for a question that asks for no value per group (no "which",
    "each", "per", "who", "most", ...): by keys it does not select (it answers for one group
    and never says which), or by one key it selects when the question asks for one number
    ("How many penguins weighed more than 5000 grams?" is not answered by the largest sex)."""
    selected = group_keys_selected(sql)
    if selected is None or _GROUP_WORDS.search(question):
        return False
    return not selected or (len(grouped_by(sql)) == 1 and _ONE_NUMBER.search(question) is not None)


def null_column(question: str, columns: list[str]) -> str | None:
    """The column ``question`` counts the missing values of ("How many penguins have no
    recorded body mass?": body_mass_g), or None: the one column all of whose name's words the
    (up to three) words after "no", "without" or "missing" say."""
    match = _NO_VALUE.search(question)
    if match is None:
        return None
    nouns: list[str] = []
    for word in match.group(1).split():
        if word.casefold() in _PHRASE_END:
            break
        nouns.append(word)
    said = words(" ".join(nouns))
    found = [column for column in columns if words(column) and words(column) <= said]
    return found[0] if len(found) == 1 else None


def _is_null_of(node: exp.Expression, column: str) -> bool:
    return (
        isinstance(node, exp.Is)
        and isinstance(node.this, exp.Column)
        and node.this.name.casefold() == column.casefold()
        and isinstance(node.expression, exp.Null)
    )


def nulls_not_counted(sql: str, question: str, lake: Lake) -> str | None:
    """The column ``question`` counts the missing values of when ``sql`` never asks whether it
    is NULL (``WHERE bill_length_mm = 0`` for "no recorded body mass"), else None."""
    column = null_column(question, list(column_types(lake, sql)))
    if column is None:
        return None
    tree = parse_select(sql)
    if tree is None:
        return None
    return None if any(_is_null_of(node, column) for node in tree.find_all(exp.Is)) else column


def null_fix(sql: str, question: str, lake: Lake) -> tuple[str, str] | None:
    """``sql`` asking for the rows where the column the question counts the missing values of
    is NULL: its filters on that column, or comparing any column with 0, '' or 'NA' (a small
    model's idea of missing), replaced by ``column IS NULL``; else that filter added."""
    column = nulls_not_counted(sql, question, lake)
    if column is None:
        return None
    condition = f"{quote(column)} IS NULL"

    def stands_for_missing(node: exp.Expression) -> bool:
        named = any(c.name.casefold() == column.casefold() for c in node.find_all(exp.Column))
        literal = node.expression if isinstance(node, (exp.EQ, exp.NEQ)) else None
        nullish = isinstance(literal, exp.Literal) and literal.this.strip().casefold() in _NULLISH
        return named or nullish

    fixed = replace_conjuncts(sql, stands_for_missing, [condition]) or add_filters(sql, [condition])
    return (fixed, f"filtered {condition}: the question counts what has no {column}") if fixed else None


def counted_filtered(sql: str, counted: str | None) -> str | None:
    """The filter ``sql`` keeps on the column whose different values the question counts
    (``type = 'Death'`` for "How many different types of death ..."): one value left to count;
    else None."""
    if counted is None:
        return None
    found = [c.sql for c in comparisons(sql) if c.column.casefold() == counted.casefold()]
    return found[0] if found else None


def counted_fix(sql: str, counted: str | None) -> tuple[str, str] | None:
    """``sql`` without its filters on the column whose different values are counted."""
    dropped = counted_filtered(sql, counted)
    if counted is None or dropped is None:
        return None
    fixed = drop_filters(sql, lambda c: c.column.casefold() == counted.casefold())
    return (
        (fixed, f"dropped {dropped}: the question counts the different {counted} values") if fixed else None
    )


def unsaid_codes(sql: str, question: str, lake: Lake, named: list[tuple[str, str]]) -> list[str]:
    """The lookup codes ``sql`` compares (``status = 'C'``) whose meaning, as the lookup table
    gives it, the question does not say (and that the question's values do not name): a
    filter copied from an example."""
    read = {table.casefold() for table in tables_read(sql)}
    said = words(outside_column_names(question, lake_columns(lake)))
    unsaid = []
    for join in joins(lake, [info.name for info in lake.datasets()]):
        if not join.lookup or join.left.casefold() not in read:
            continue
        for comparison in comparisons(sql):
            if comparison.op != "=" or comparison.column.casefold() != join.left_column.casefold():
                continue
            if (comparison.column, comparison.value) in named or words(comparison.value) & said:
                continue
            meanings = _lookup_row(lake, join.right, join.right_column, comparison.value)
            if meanings and not any(words(text) and words(text) <= said for text in meanings):
                unsaid.append(comparison.sql)
    return unsaid


def _lookup_row(lake: Lake, table: str, code: str, value: str) -> list[str]:
    """The short texts (three words at most) of lookup ``table``'s row for ``value``."""
    try:
        result = lake.query(
            f"SELECT * FROM {quote(table)} WHERE CAST({quote(code)} AS VARCHAR) = {sql_literal(value)}",
            max_rows=2,
        )
    except AgentlakeError:
        return []
    if len(result.rows) != 1:
        return []
    texts = [str(cell) for cell in result.rows[0] if isinstance(cell, str) and cell != value]
    return [text for text in texts if len(text.split()) <= 3]


def unsaid_fix(sql: str, question: str, lake: Lake, named: list[tuple[str, str]]) -> tuple[str, str] | None:
    """``sql`` without the lookup codes the question does not describe."""
    unsaid = unsaid_codes(sql, question, lake, named)
    fixed = drop_filters(sql, lambda c: c.sql in unsaid) if unsaid else None
    return (fixed, f"dropped {', '.join(unsaid)}: the question does not say what it means") if fixed else None


def ungroup_fix(sql: str, question: str) -> tuple[str, str] | None:
    """``sql`` over all its rows when it groups for a question that asks for no group."""
    if not unasked_grouping(sql, question):
        return None
    keys = grouped_by(sql)
    fixed = ungroup(sql, keys[0]) if group_keys_selected(sql) and keys else ungroup(sql)
    return (
        (fixed, "dropped the grouping: the question asks for one value over all the rows") if fixed else None
    )


def placement_fix(sql: str, error: str, lake: Lake, question: str) -> tuple[str, str] | None:
    """``sql``, which the database refused, with a table or column put where it is: a table
    the WHERE names and the query never joins, joined on the key they share; a column read
    through an alias whose table lacks it, read through the one that has it; a column of a
    table the query does not read, that table joined; a grouping by a column no table has,
    dropped when the question asks for no group. None when the error says none of these."""
    infos = {info.name.casefold(): info for info in lake.datasets()}
    read = aliases_read(sql)
    if (match := _TABLE_MISSING.search(error)) and match.group(1).casefold() in infos:
        table = infos[match.group(1).casefold()].name
        if not words(table) <= words(question):  # a join condition copied from an example
            dropped = replace_conjuncts(
                sql,
                lambda node: any(c.table.casefold() == table.casefold() for c in node.find_all(exp.Column)),
                [],
            )
            if dropped is not None:
                return (
                    dropped,
                    f"dropped the filters on {table}: the query does not read it nor the question name it",
                )
        return _join_fix(sql, lake, table, read, "the query names it")
    if match := _WRONG_ALIAS.search(error):
        alias, column = match.group(1).casefold(), match.group(2)
        holders = [
            other
            for other, table in read.items()
            if other != alias
            and any(c.casefold() == column.casefold() for c, _ in infos[table.casefold()].columns)
        ]
        if len(holders) == 1:
            fixed = requalify(sql, column, alias, holders[0])
            if fixed is not None:
                return fixed, f"read {column} through {holders[0]}, whose table has it"
    if match := _NOT_GROUPED.search(error):
        column = match.group(1)
        kind = column_types(lake, sql).get(column, "")
        function = "avg" if NUMERIC_TYPE.search(kind) and _AVERAGE.search(question) else None
        fixed = settle_ungrouped(sql, column, function)
        if fixed is not None:
            how = f"averaged {column}" if function else f"grouped by {column} too"
            return fixed, f"{how}: it was read outside the grouping"
    if (match := _NOT_A_NUMBER.search(error)) and match.group(1).replace(
        "''", "'"
    ).casefold() not in question.casefold():
        value = match.group(1).replace("''", "'")
        fixed = drop_filters(sql, lambda c: c.value == value)
        if fixed is not None:
            return (
                fixed,
                f"dropped the filter on '{value}': a text compared with a number, which the question does not name",
            )
    if match := _COLUMN_MISSING.search(error):
        column = match.group(1)
        holders = [
            info.name
            for name, info in infos.items()
            if name not in {t.casefold() for t in read.values()}
            and any(c.casefold() == column.casefold() for c, _ in info.columns)
        ]
        if len(holders) == 1:
            joined = _join_fix(sql, lake, holders[0], read, f"it has {column}")
            if joined is not None:
                return joined
        if not _GROUP_WORDS.search(question):
            fixed = ungroup(sql, column)
            if fixed is not None:
                return (
                    fixed,
                    f"dropped the grouping by {column}: no table has it and the question asks for no group",
                )
    return None


_SYNTAX_AT = re.compile(r'syntax error at or near "([^"]+)"', re.IGNORECASE)
_TYPE_WORDS = r"date|timestamp|int|integer|bigint|varchar|text|double|float|numeric"
_WHERE = re.compile(r"\bWHERE\b", re.IGNORECASE)
_STRING = re.compile(r"'(?:[^']|'')*'")


_BARE_EXTRACT = re.compile(
    r"\bEXTRACT\s+(YEAR|MONTH|DAY|QUARTER|WEEK|HOUR|MINUTE)\s+FROM\s+((?:\w+\.)?(?:\w+|\"[^\"]+\"))",
    re.IGNORECASE,
)


def syntax_fix(sql: str, error: str) -> tuple[str, str] | None:
    """``sql``, which the database could not parse, with what a small model writes wrong
    mended as text outside its strings: a second WHERE where AND was meant (``... WHERE a = 1
    WHERE b = 2``), a column followed by a type word (``WHERE month date = 2010``), EXTRACT
    without its parentheses (``EXTRACT YEAR FROM date = 2014``)."""
    near = _SYNTAX_AT.search(error)
    if near is None:
        return None
    word = near.group(1)
    masked = _STRING.sub(lambda m: "_" * len(m.group(0)), sql)
    bare = list(_BARE_EXTRACT.finditer(masked))
    if bare:
        fixed = sql
        for extract in reversed(bare):
            part, column = extract.group(1), sql[extract.start(2) : extract.end(2)]
            fixed = fixed[: extract.start()] + f"EXTRACT({part} FROM {column})" + fixed[extract.end() :]
        return fixed, "EXTRACT written with its parentheses"
    if word.upper() == "WHERE" and "SELECT" not in masked.upper()[masked.upper().find("WHERE") :]:
        places = [m.start() for m in _WHERE.finditer(masked)]
        if len(places) > 1:
            fixed = sql
            for at in reversed(places[1:]):
                fixed = fixed[:at] + "AND" + fixed[at + len("WHERE") :]
            return fixed, "a second WHERE read as AND"
    if re.fullmatch(_TYPE_WORDS, word, re.IGNORECASE):
        typed = re.compile(
            rf"(\b\w+)\s+(?:{_TYPE_WORDS})\b(?=\s*(?:=|<|>|!|BETWEEN\b|IN\b|LIKE\b))", re.IGNORECASE
        )
        typed_at = typed.search(masked)
        if typed_at is not None:
            return (
                sql[: typed_at.end(1)] + sql[typed_at.end() :],
                f"dropped the type word after {typed_at.group(1)}",
            )
    return None


def join_fix(sql: str, lake: Lake, table: str, other: str, why: str) -> tuple[str, str] | None:
    """``sql``, which reads ``other``, with ``table`` joined to it on the join the lake's
    catalog knows between them (``why``: the reason given), or None without one."""
    join = next((j for j in joins(lake, [table, other]) if j.joins(table, other)), None)
    if join is None:
        return None
    infos = {info.name.casefold(): info for info in lake.datasets()}
    mine = {c for c, _ in infos[table.casefold()].columns}
    theirs = {c for c, _ in infos[other.casefold()].columns}
    fixed = join_table(sql, table, (join.column_of(table), join.column_of(other)), mine & theirs)
    return (fixed, f"joined {table} ({join.hint()}): {why}") if fixed else None


def _join_fix(sql: str, lake: Lake, table: str, read: dict[str, str], why: str) -> tuple[str, str] | None:
    return join_fix(sql, lake, table, next(iter(read.values())), why) if len(read) == 1 else None


_AVERAGE = re.compile(r"\b(?:average|mean)\b", re.IGNORECASE)
_HIGH = re.compile(r"\b(?:highest|most|largest|biggest|greatest|best|maximum|top)\b", re.IGNORECASE)
_LOW = re.compile(r"\b(?:lowest|least|fewest|smallest|worst|minimum)\b", re.IGNORECASE)
_ASKS_GROUP = re.compile(
    r"\b(?:which|who|whose|what\s+[a-z]+\s+(?:had|has|have|was|were|did|saw))\b", re.IGNORECASE
)
_PERIODS = re.compile(
    r"\bhow many (?:different|distinct|unique|separate)\s+(month|year|day|week)s\b", re.IGNORECASE
)
_SAYS_MISSING = re.compile(
    r"\b(?:no|not|without|missing|unknown|recorded|known|null|empty|blank)\b", re.IGNORECASE
)


def unaveraged(sql: str, question: str, measure: str | None) -> str | None:
    """The column ``question`` asks the average of ("the lowest average price": price) when
    ``sql`` aggregates it otherwise (``min(price)``), else None."""
    if measure is None or not _AVERAGE.search(question):
        return None
    tree = parse_select(sql)
    if tree is None:
        return None
    folded = measure.casefold()
    aggregated = [
        node
        for node in tree.find_all(exp.AggFunc)
        if not isinstance(node, exp.Count)
        and any(c.name.casefold() == folded for c in node.find_all(exp.Column))
    ]
    if not aggregated or any(isinstance(node, exp.Avg) for node in aggregated):
        return None
    return measure


def average_fix(sql: str, question: str, measure: str | None) -> tuple[str, str] | None:
    """``sql`` averaging the column the question asks the average of."""
    column = unaveraged(sql, question, measure)
    fixed = aggregate_with(sql, column, "avg") if column else None
    return (fixed, f"averaged {column}: the question asks for its average") if fixed else None


def superlative(question: str) -> bool | None:
    """Whether ``question`` asks for the group with the highest (True) or the lowest (False)
    value ("In which year ... the lowest average price": False); None when it asks for no
    group or says both or neither."""
    if not _ASKS_GROUP.search(question):
        return None
    high, low = bool(_HIGH.search(question)), bool(_LOW.search(question))
    return high if high != low else None


def unordered(sql: str, question: str, rows: list[object]) -> bool:
    """Whether ``sql`` groups, returns several groups and does not order them, for a question
    that asks for the highest or lowest one: the answer would be whichever came first."""
    return superlative(question) is not None and len(rows) > 1 and order_by_aggregate(sql, True) is not None


def order_fix(sql: str, question: str) -> tuple[str, str] | None:
    """``sql`` ordered by its aggregate, the top row kept, as the question's superlative says."""
    descending = superlative(question)
    fixed = order_by_aggregate(sql, descending) if descending is not None else None
    way = "highest" if descending else "lowest"
    return (
        (fixed, f"ordered by its aggregate and kept the {way}: the question asks for it") if fixed else None
    )


def uncounted_periods(sql: str, question: str, lake: Lake) -> tuple[str, str] | None:
    """The period and date column whose different values ``question`` counts ("How many
    different months does the data cover?": month, date) when ``sql`` counts something else;
    else None."""
    match = _PERIODS.search(question)
    column = date_column(lake, sql, question) if match else None
    if match is None or column is None:
        return None
    tree = parse_select(sql)
    if tree is None:
        return None
    for count in tree.find_all(exp.Count):
        if isinstance(count.this, exp.Distinct) and count.this.find(
            exp.DateTrunc, exp.TimestampTrunc, exp.Year, exp.Month
        ):
            return None
    return match.group(1).casefold(), column


def periods_fix(sql: str, question: str, lake: Lake) -> tuple[str, str] | None:
    """``sql`` counting the different periods of its date column the question counts."""
    found = uncounted_periods(sql, question, lake)
    if found is None:
        return None
    part, column = found
    fixed = count_distinct_of(sql, f"date_trunc('{part}', {quote(column)})")
    return (fixed, f"counted the different {part}s of {column}, as the question asks") if fixed else None


def _null_test(node: exp.Expression) -> exp.Column | None:
    inner = node.this if isinstance(node, exp.Not) else node
    if (
        isinstance(inner, exp.Is)
        and isinstance(inner.expression, exp.Null)
        and isinstance(inner.this, exp.Column)
    ):
        return inner.this
    return None


def unsaid_null_tests(sql: str, question: str) -> list[str]:
    """The ``IS NULL`` / ``IS NOT NULL`` filters of ``sql`` on a column the question never
    names, for a question that says nothing of missing values (``NOT loyalty_points IS
    NULL``, copied from a lesson's example, for "How many customers placed an order?")."""
    if _SAYS_MISSING.search(question):
        return []
    said = words(question)
    return [
        node.sql(dialect="duckdb")
        for node in conjuncts_of(sql)
        if (column := _null_test(node)) is not None and not words(column.name) <= said
    ]


def null_test_fix(sql: str, question: str) -> tuple[str, str] | None:
    """``sql`` without the null tests on columns the question never names."""
    unsaid = unsaid_null_tests(sql, question)
    fixed = replace_conjuncts(sql, lambda node: node.sql(dialect="duckdb") in unsaid, []) if unsaid else None
    return (fixed, f"dropped {', '.join(unsaid)}: the question says nothing of it") if fixed else None


def one_distinct(sql: str) -> str | None:
    """The column ``sql`` counts the different values of while its WHERE holds it to one value
    (``count(DISTINCT neighborhood) ... WHERE neighborhood = 'South Park'``: at most 1), else
    None."""
    filtered = {c.column.casefold() for c in comparisons(sql) if c.op == "="}
    return next((column for column in counted_distinct(sql) if column.casefold() in filtered), None)


def one_distinct_fix(sql: str) -> tuple[str, str] | None:
    """``sql`` counting the rows where it counted the different values of a column held to one."""
    column = one_distinct(sql)
    fixed = count_all(sql) if column else None
    return (
        (fixed, f"counted the rows: {column} is held to one value, so its different values are one")
        if fixed
        else None
    )


def cut_listing(sql: str, rows: list[object], lake: Lake) -> bool:
    """Whether ``sql`` lists rows (no aggregate) under a LIMIT that cuts off more of them than
    it returned (``ORDER BY precipitation DESC LIMIT 1`` for "On how many days ..."): the
    count of what it lists is not the number of rows it returned."""
    tree = parse_select(sql)
    counted = count_rows(sql)
    if tree is None or tree.args.get("limit") is None or counted is None:
        return False
    try:
        total = lake.query(counted, max_rows=1).rows
    except AgentlakeError:
        return False
    return bool(total) and isinstance(total[0][0], int) and total[0][0] > len(rows)


# A name or a code a question may name as a value: capitalised words, with the numbers among
# them ("Houston", "John F Kennedy", "Terminal 2"), or a token of letters and digits ("C0071").
_CANDIDATE = re.compile(r"\b(?:[A-Z][A-Za-z-]*(?:[ ]+(?:[A-Z][A-Za-z-]*|\d+\b))*|[A-Za-z]+\d[A-Za-z0-9-]*)\b")
_NOT_VALUES = frozenset(
    "how what which who whom whose when where why is was are were did do does in on at of for the a an i"
    " and or by from to with".split()
) | frozenset(name.casefold() for name in calendar.month_name if name)


def held_values(
    sql: str, question: str, lake: Lake, listed: dict[tuple[str, str], list[str]]
) -> list[tuple[str, str]]:
    """``(column, value)`` (the column as ``sql`` must write it) for each name or code ``question`` says ("Houston", "C0071") that
    exactly one text column of the tables ``sql`` reads holds as written, among the columns
    with too many values to be listed (those are ``linking.named_values``'); empty when none."""
    said = {m.group(0) for m in _CANDIDATE.finditer(question) if m.group(0).casefold() not in _NOT_VALUES}
    said = {value for value in said if f"'{value}'".casefold() not in sql.casefold()}
    if not said:
        return []
    read = {table.casefold() for table in tables_read(sql)}
    holders: dict[str, list[tuple[str, str]]] = {}
    values = ", ".join(sql_literal(value) for value in sorted(said))
    for info in lake.datasets():
        if info.name.casefold() not in read:
            continue
        for column, kind in info.columns:
            if kind.upper() != "VARCHAR" or (info.name, column) in listed:
                continue
            try:
                found = lake.query(
                    f"SELECT DISTINCT {quote(column)} FROM {quote(info.name)} WHERE {quote(column)} IN ({values})",
                    max_rows=len(said),
                ).rows
            except AgentlakeError:
                continue
            for (value,) in found:
                holders.setdefault(str(value), []).append((info.name, column))
    return sorted(
        (qualified(sql, *places[0]), value)
        for value, places in holders.items()
        if len({column.casefold() for _, column in places}) == 1
    )


def qualified(sql: str, table: str, column: str) -> str:
    """``column`` as ``sql`` must write it: through its table's alias (or name) when ``sql``
    reads several tables, else bare."""
    read = aliases_read(sql)
    if len({of.casefold() for of in read.values()}) <= 1:
        return quote(column)
    alias = min(
        (name for name, of in read.items() if of.casefold() == table.casefold()), key=len, default=table
    )
    return f"{quote(alias)}.{quote(column)}"


def held_fix(
    sql: str, question: str, lake: Lake, listed: dict[tuple[str, str], list[str]]
) -> tuple[str, str] | None:
    """``sql`` filtering on the first value ``held_values`` finds."""
    for column, value in held_values(sql, question, lake, listed):
        condition = f"{column} = {sql_literal(value)}"
        fixed = add_filters(sql, [condition])
        if fixed is not None:
            return fixed, f"added the filter {condition}: the question names '{value}', which {column} holds"
    return None


_EXTREME = re.compile(
    r"\b(?:what|how \w+)\s+(?:is|was|were|are)\s+(?:the|\w+'s)\s+(?:(largest|biggest|highest|greatest|maximum|"
    r"longest|heaviest|oldest)|(smallest|lowest|minimum|shortest|lightest|youngest|cheapest))\b",
    re.IGNORECASE,
)


def unextreme(sql: str, question: str, measure: str | None) -> str | None:
    """``max`` or ``min`` when ``question`` asks the largest (smallest) value of the column it
    names ("What is the largest order amount ...": amount) and ``sql`` neither takes that of it
    nor lists it ordered (``count(*)`` per currency, ``sum(amount)``); else None."""
    match = _EXTREME.search(question)
    tree = parse_select(sql) if match and measure else None
    if tree is None or measure is None or match is None:
        return None
    function, kind = ("max", exp.Max) if match.group(1) else ("min", exp.Min)
    folded = measure.casefold()

    def reads(node: exp.Expression) -> bool:
        return any(c.name.casefold() == folded for c in node.find_all(exp.Column))

    if any(reads(node) for node in tree.find_all(kind)):
        return None
    order = tree.args.get("order")
    listed = not any(s.find(exp.AggFunc) for s in tree.expressions) and any(
        reads(s) for s in tree.expressions
    )
    if listed and order is not None and tree.args.get("limit") is not None and reads(order):
        return None
    return function


def extreme_fix(sql: str, question: str, measure: str | None) -> tuple[str, str] | None:
    """``sql`` answering ``unextreme``'s function of ``measure`` over the rows it filters."""
    function = unextreme(sql, question, measure)
    tree = parse_select(sql) if function else None
    if tree is None or function is None or measure is None:
        return None
    aggregate = exp.Max if function == "max" else exp.Min
    tree.set("expressions", [exp.alias_(aggregate(this=exp.column(measure)), "n")])
    for part in ("group", "having", "order", "limit"):
        tree.set(part, None)
    return tree.sql("duckdb"), f"took the {function} of {measure}, the value the question asks for"


def unselect(sql: str, wrong: str) -> tuple[str, str] | None:
    """``sql`` without the column ``wrong`` no table has, where the query only selects it
    beside something else, groups by it, or counts its different values (``SELECT customer_id,
    name, symbol``; ``count(DISTINCT country) ... GROUP BY country`` copied from an example):
    not selected, not grouped by, the rows counted."""
    tree = parse_select(sql)
    if tree is None:
        return None
    folded = wrong.casefold()

    def names(node: exp.Expression) -> bool:
        return isinstance(node, exp.Column) and node.name.casefold() == folded

    uses = [c for c in tree.find_all(exp.Column) if names(c)]
    picked = [e for e in tree.expressions if names(e.unalias())]
    group = tree.args.get("group")
    grouped = [e for e in group.expressions if names(e)] if group else []
    counted = [
        c
        for c in tree.find_all(exp.Count)
        if isinstance(c.this, exp.Distinct) and any(names(e) for e in c.this.expressions)
    ]
    order = tree.args.get("order")
    ordered = [o for o in order.expressions if names(o.this)] if order else []
    if not uses or len(uses) != len(picked) + len(grouped) + len(counted) + len(ordered):
        return None
    if len(picked) == len(tree.expressions):
        return None  # nothing else is selected
    tree.set("expressions", [e for e in tree.expressions if e not in picked])
    if group is not None:
        kept = [e for e in group.expressions if e not in grouped]
        tree.set("group", exp.Group(expressions=kept) if kept else None)
    if order is not None:
        kept_order = [o for o in order.expressions if o not in ordered]
        tree.set("order", exp.Order(expressions=kept_order) if kept_order else None)
    for count in counted:
        count.set("this", exp.Star())
    return tree.sql("duckdb"), f"dropped {wrong} where it was selected, grouped by or counted: no such column"
