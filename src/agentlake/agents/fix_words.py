"""Checks and fixes, for a query that ran, of what a question's own words fix about its shape.

A small model writes a query that runs and answers another question. Each check here reads one
kind of phrase and the query's tree; each fix rewrites the tree:

- a direction ("farthest west", "northernmost", "oldest", "heaviest"): the rows ordered by the
  column of that dimension (longitude, latitude, age, mass or weight) in that direction, where
  the query orders by another column or the other way;
- "which year ... the most" ranked by the year itself (``ORDER BY year DESC``): the groups
  ranked by their rows (and ``fix_compare`` then by the amount the question names);
- "no precipitation" read as ``precipitation IS NULL`` on a column that holds no missing
  value: ``precipitation = 0``;
- "how many people younger than 20" counting the different values of a column the question
  never names (``count(DISTINCT type)``): the rows counted;
- "order 100250", "the code SEA": a number or code the question states that is a key of a
  table the query reads, compared with that key where the query does not;
- "the difference between the maximum and the minimum temperature": the aggregate the question
  asks of the difference of the two columns in each row;
- "shipped within 3 days of being placed": the days between the table's two dates bounded;
- a share filtered on its own condition (always 100%): that filter dropped;
- "how many" answered with a value of the rows (``SELECT month(date) ... LIMIT 1``): the rows
  counted; a ranked column held to one value (``WHERE type = 'Death' GROUP BY type``): the
  filter dropped;
- a query whose value is not that of the query code writes whole for the question's shape
  (``agents.fix_whole``): that query in its place.

Like ``agents.fixes``, it reads and writes queries as trees (``lake.rewrite``); it runs a query
only to learn whether a column holds missing values or a key holds a number, and does not
decide when to fix (``agents.ask``).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from agentlake.agents.fix_compare import digits, measure_columns, measure_words, named_measure, says_column
from agentlake.agents.fix_dates import is_date, quote
from agentlake.agents.fix_shape import qualified, superlative
from agentlake.agents.fix_whole import SHARE, other_than_whole
from agentlake.agents.linking import KEYISH, words
from agentlake.errors import AgentlakeError
from agentlake.lake.repair import NUMERIC_TYPE, column_types, table_types
from agentlake.lake.rewrite import add_filters, comparisons, drop_filters, parse_select, tables_read

if TYPE_CHECKING:
    from agentlake.lake import Lake

# A direction a question asks the extreme of: the words, the dimension's column words, and
# whether the highest value is the one asked for.
_DIRECTIONS = [
    (re.compile(r"\b(?:(?:farthest|furthest|most) west|westernmost)\b", re.IGNORECASE), {"longitude", "lon", "lng"}, False),
    (re.compile(r"\b(?:(?:farthest|furthest|most) east|easternmost)\b", re.IGNORECASE), {"longitude", "lon", "lng"}, True),
    (re.compile(r"\b(?:(?:farthest|furthest|most) north|northernmost)\b", re.IGNORECASE), {"latitude", "lat"}, True),
    (re.compile(r"\b(?:(?:farthest|furthest|most) south|southernmost)\b", re.IGNORECASE), {"latitude", "lat"}, False),
    (re.compile(r"\boldest\b", re.IGNORECASE), {"age"}, True),
    (re.compile(r"\byoungest\b", re.IGNORECASE), {"age"}, False),
    (re.compile(r"\bheaviest\b", re.IGNORECASE), {"mass", "weight"}, True),
    (re.compile(r"\blightest\b", re.IGNORECASE), {"mass", "weight"}, False),
    (re.compile(r"\btallest\b", re.IGNORECASE), {"height"}, True),
    (re.compile(r"\bcheapest\b", re.IGNORECASE), {"price", "cost"}, False),
    (re.compile(r"\bmost expensive\b", re.IGNORECASE), {"price", "cost"}, True),
    (re.compile(r"\blongest\b", re.IGNORECASE), {"length"}, True),
    (re.compile(r"\bshortest\b", re.IGNORECASE), {"length"}, False),
]  # fmt: skip
_NO = re.compile(r"\b(?:no|without|zero)\s+((?:[a-z_]+\s*){1,3})", re.IGNORECASE)
HOW_MANY = re.compile(r"\bhow many\b", re.IGNORECASE)
_DIFFERENT = re.compile(r"\b(?:different|distinct|unique)\b", re.IGNORECASE)
_KEY_NUMBER = re.compile(r"(?<![\w.$-])(\d{3,}|[A-Z][A-Z0-9]{2,7})(?![\w.])")
_DIFFERENCE = re.compile(
    r"\b(?:(largest|biggest|greatest|highest|maximum|widest)|(smallest|lowest|minimum|narrowest)|(average|mean)"
    r"|(total))?\s*(?:daily\s+)?difference between (?:the )?([a-z_ ]+?) and (?:the )?([a-z_ ]+?)"
    r"(?= on\b| in\b| for\b| of\b| during\b| across\b| over\b|[?.,]|$)",
    re.IGNORECASE,
)


def _numeric(lake: Lake, sql: str) -> dict[str, str]:
    """The numeric columns (not keys) of the tables ``sql`` reads, with their types."""
    types = column_types(lake, sql)
    return {column: types[column] for column in measure_columns(types)}


# --- a direction -------------------------------------------------------------------------------


def _ordered(tree: exp.Select) -> exp.Expression:
    """What ``tree``'s one ORDER BY term orders by, an alias read as what it names."""
    ordered = tree.args["order"].expressions[0].this
    if isinstance(ordered, exp.Column) and not ordered.table:
        named = {s.alias.casefold(): s.this for s in tree.expressions if isinstance(s, exp.Alias)}
        return named.get(ordered.name.casefold(), ordered)
    return ordered


def direction(question: str, lake: Lake, sql: str) -> tuple[str, bool] | None:
    """The column and order (True: highest first) the direction ``question`` names asks for,
    when ``sql`` orders its top rows by another column or the other way; else None. Of
    several columns of the dimension ("shortest": bill_length_mm, flipper_length_mm), the one
    the question names."""
    tree = parse_select(sql)
    order = tree.args.get("order") if tree is not None else None
    if tree is None or order is None or tree.args.get("limit") is None or len(order.expressions) != 1:
        return None
    found = [(dimension, high) for pattern, dimension, high in _DIRECTIONS if pattern.search(question)]
    if len(found) != 1:
        return None
    dimension, high = found[0]
    numeric = _numeric(lake, sql)
    columns = [column for column in numeric if words(column) & dimension]
    if len(columns) > 1:
        columns = [column for column in columns if column == named_measure(question, numeric)]
    if len(columns) != 1:
        return None
    reads = {c.name.casefold() for c in _ordered(tree).find_all(exp.Column)}
    descending = bool(order.expressions[0].args.get("desc"))
    if reads == {columns[0].casefold()} and descending == high:
        return None
    return columns[0], high


def direction_fix(sql: str, question: str, lake: Lake) -> tuple[str, str] | None:
    """``sql`` ordered by ``direction``'s column that way (its aggregate kept for groups)."""
    found = direction(question, lake, sql)
    tree = parse_select(sql) if found else None
    if found is None or tree is None:
        return None
    column, high = found
    inner = _ordered(tree).copy()
    aggregate = inner if isinstance(inner, exp.AggFunc) and not isinstance(inner, exp.Count) else None
    if aggregate is None and tree.args.get("group"):
        return None  # a group ranked by its rows: which aggregate the question means is unsaid
    target: exp.Expression = exp.column(column, quoted=True)
    if aggregate is not None:
        aggregate.set("this", target)
        target = aggregate
    tree.set("order", exp.Order(expressions=[exp.Ordered(this=target, desc=high, nulls_first=False)]))
    way = "highest" if high else "lowest"
    return tree.sql("duckdb"), f"ordered by {column}, {way} first, as the question's direction says"


# --- a ranking by the group's own value ----------------------------------------------------------


def ranked_by_key(sql: str, question: str) -> bool:
    """Whether ``sql`` ranks its groups (or its one selected value) by that value itself
    (``ORDER BY year DESC LIMIT 1`` for "which year had the most ...")."""
    tree = parse_select(sql)
    order = tree.args.get("order") if tree is not None else None
    if tree is None or order is None or tree.args.get("limit") is None or superlative(question) is None:
        return False
    if len(order.expressions) != 1 or order.expressions[0].find(exp.AggFunc):
        return False
    ordered = order.expressions[0].this
    group = tree.args.get("group")
    keys = list(group.expressions) if group else [s.unalias() for s in tree.expressions]
    aliases = {s.alias.casefold() for s in tree.expressions if s.alias}
    if isinstance(ordered, exp.Column) and ordered.name.casefold() in aliases and not ordered.table:
        return len(tree.expressions) == 1 or bool(group)
    same = any(ordered == key for key in keys)
    return same and (bool(group) or (len(tree.expressions) == 1 and not tree.find(exp.AggFunc)))


def ranking_fix(sql: str, question: str) -> tuple[str, str] | None:
    """``sql`` grouped by what it selects and ranked by the rows of each group, as the
    question's superlative says."""
    tree = parse_select(sql) if ranked_by_key(sql, question) else None
    if tree is None:
        return None
    high = bool(superlative(question))
    if not tree.args.get("group"):
        tree.set("group", exp.Group(expressions=[tree.expressions[0].unalias().copy()]))
    tree.set(
        "order",
        exp.Order(expressions=[exp.Ordered(this=exp.Count(this=exp.Star()), desc=high, nulls_first=False)]),
    )
    return tree.sql("duckdb"), f"ranked the groups by their rows, the {'most' if high else 'fewest'} first"


# --- "no precipitation" -------------------------------------------------------------------------


def null_for_zero(sql: str, question: str, lake: Lake) -> str | None:
    """The numeric column ``sql`` tests ``IS NULL`` where ``question`` says "no <column>" and
    the column holds no missing value (so "no" means zero); else None."""
    said = [words(match.group(1)) for match in _NO.finditer(question)]
    tree = parse_select(sql)
    if not said or tree is None:
        return None
    numeric = _numeric(lake, sql)
    for test in tree.find_all(exp.Is):
        column = test.this
        if not isinstance(column, exp.Column) or not isinstance(test.expression, exp.Null):
            continue
        if isinstance(test.parent, exp.Not):
            continue
        name = next((c for c in numeric if c.casefold() == column.name.casefold()), None)
        if name is None or not any(says_column(phrase, name) for phrase in said):
            continue
        if _holds_no_nulls(lake, sql, name):
            return name
    return None


def _holds_no_nulls(lake: Lake, sql: str, column: str) -> bool:
    for table in tables_read(sql):
        if column.casefold() not in {c.casefold() for c in table_types(lake, table)}:
            continue
        try:
            rows = lake.query(
                f"SELECT count(*) FROM {quote(table)} WHERE {quote(column)} IS NULL", max_rows=1
            ).rows
        except AgentlakeError:
            return False
        return bool(rows) and rows[0][0] == 0
    return False


def zero_fix(sql: str, question: str, lake: Lake) -> tuple[str, str] | None:
    """``sql`` comparing ``null_for_zero``'s column with 0 in place of its null test."""
    column = null_for_zero(sql, question, lake)
    tree = parse_select(sql) if column else None
    if tree is None or column is None:
        return None
    for test in list(tree.find_all(exp.Is)):
        if isinstance(test.this, exp.Column) and test.this.name.casefold() == column.casefold():
            test.replace(exp.EQ(this=test.this.copy(), expression=exp.Literal.number(0)))
    return tree.sql(
        "duckdb"
    ), f"compared {column} with 0: it holds no missing value, so 'no {column}' is zero"


# --- rows counted ---------------------------------------------------------------------------------


def unsaid_distinct(sql: str, question: str) -> str | None:
    """The column whose different values ``sql`` counts for a "how many" question that asks
    for no different values and never names the column (``count(DISTINCT type)`` for "How many
    people younger than 20 died?"); else None."""
    if not HOW_MANY.search(question) or _DIFFERENT.search(question):
        return None
    tree = parse_select(sql)
    if tree is None:
        return None
    said = words(question)
    for count in tree.find_all(exp.Count):
        if not isinstance(count.this, exp.Distinct):
            continue
        columns = list(count.this.find_all(exp.Column))
        if len(columns) == 1 and not words(columns[0].name) & said and not count.this.find(exp.Func):
            return columns[0].name
    return None


def distinct_fix(sql: str, question: str) -> tuple[str, str] | None:
    """``sql`` counting rows where it counted ``unsaid_distinct``'s different values."""
    column = unsaid_distinct(sql, question)
    tree = parse_select(sql) if column else None
    if tree is None or column is None:
        return None
    for count in list(tree.find_all(exp.Count)):
        if isinstance(count.this, exp.Distinct):
            count.set("this", exp.Star())
    return tree.sql("duckdb"), f"counted the rows: the question does not ask for different {column} values"


# --- a key the question states ------------------------------------------------------------------


def uncompared_key(sql: str, question: str, lake: Lake) -> tuple[str, str, str] | None:
    """``(table, key, number)``: a number or code ``question`` states ("order 100250", "the
    code SEA") that is a value of the key of a table ``sql`` reads, which ``sql`` does not
    compare that key with; else None."""
    numbers = _KEY_NUMBER.findall(question)
    if not numbers:
        return None
    read = {t.casefold() for t in tables_read(sql)}
    compared = {(c.column.casefold(), c.value) for c in comparisons(sql)}
    for info in lake.datasets():
        if info.name.casefold() not in read or not info.key:
            continue
        for number in numbers:
            if (info.key.casefold(), number) in compared or re.search(rf"(?<![\w.]){number}(?![\w.])", sql):
                continue
            try:
                held = lake.query(
                    f"SELECT 1 FROM {quote(info.name)} WHERE CAST({quote(info.key)} AS VARCHAR) = ? LIMIT 1",
                    params=[number],
                    max_rows=1,
                ).rows
            except AgentlakeError:
                continue
            if held:
                return info.name, info.key, number
    return None


def key_fix(sql: str, question: str, lake: Lake) -> tuple[str, str] | None:
    """``sql`` with ``uncompared_key``'s key compared with the number the question states."""
    found = uncompared_key(sql, question, lake)
    if found is None:
        return None
    table, key, number = found
    kind = table_types(lake, table).get(key, "")
    value = number if NUMERIC_TYPE.search(kind) else f"'{number}'"
    fixed = add_filters(sql, [f"{qualified(sql, table, key)} = {value}"])
    return (fixed, f"compared {table}.{key} with {number}, the key the question states") if fixed else None


# --- the difference of two columns ----------------------------------------------------------------


def difference(question: str, lake: Lake, sql: str) -> tuple[str, str, str] | None:
    """``(function, first, second)`` for "the <largest|average|...> difference between the <first>
    and the <second>" naming two numeric columns of the tables ``sql`` reads, when ``sql`` does
    not subtract them in one row; else None. A noun after the second ("the maximum and the
    minimum temperature") belongs to both."""
    match = _DIFFERENCE.search(question)
    if match is None or re.search(r"\b(?:which|what (?:day|date|year|month))\b", question, re.IGNORECASE):
        return None
    high, low, mean, total, first, second = match.groups()
    function = "max" if high else "min" if low else "avg" if mean else "sum" if total else None
    if function is None:
        return None
    numeric = _numeric(lake, sql)
    tail = second.split()[-1:]
    found = []
    for phrase in (f"{first} {' '.join(tail)}", second):
        hits = [column for column in numeric if says_column(measure_words(phrase), column)]
        if len(hits) != 1:
            return None
        found.append(hits[0])
    if found[0] == found[1]:
        return None
    tree = parse_select(sql)
    if tree is None:
        return None
    for sub in tree.find_all(exp.Sub):
        sides = [
            {c.name.casefold() for c in side.find_all(exp.Column)} for side in (sub.this, sub.expression)
        ]
        if sides == [{found[0].casefold()}, {found[1].casefold()}] and not sub.find(exp.AggFunc):
            return None  # each row's difference is taken (and aggregated, or listed)
    return function, found[0], found[1]


def difference_fix(sql: str, question: str, lake: Lake) -> tuple[str, str] | None:
    """``sql`` answering ``difference``'s aggregate of the two columns' difference in a row
    over the rows it filters."""
    found = difference(question, lake, sql)
    tree = parse_select(sql) if found else None
    if tree is None or found is None:
        return None
    function, first, second = found
    subtracted = f"{function}({quote(first)} - {quote(second)})"
    tree.set("expressions", [exp.alias_(exp.maybe_parse(subtracted, dialect="duckdb"), "n")])
    for part in ("group", "having", "order", "limit"):
        tree.set(part, None)
    return tree.sql("duckdb"), f"took the {function} of {first} - {second} in each row, as the question asks"


# --- days between two dates of a row -------------------------------------------------------------

_DAYS = re.compile(
    r"\b(within|more than|over|longer than|less than|under|fewer than|at least|at most|exactly)\s+"
    r"(\d+|one|two|three|four|five|six|seven|eight|nine|ten)\s+days?\b",
    re.IGNORECASE,
)
_DAY_BOUNDS = {
    "within": "<=", "more than": ">", "over": ">", "longer than": ">", "less than": "<", "under": "<",
    "fewer than": "<", "at least": ">=", "at most": "<=", "exactly": "=",
}  # fmt: skip


def days_apart(sql: str, question: str, lake: Lake) -> str | None:
    """The filter on the days between the two date columns of the one table ``sql`` reads
    ("shipped within 3 days of being placed": ``date_diff('day', order_date, ship_date) <= 3``,
    the earlier first) when ``question`` bounds a number of days and ``sql`` takes no
    difference of dates; else None."""
    match = _DAYS.search(question)
    tree = parse_select(sql) if match else None
    read = tables_read(sql)
    if match is None or tree is None or len(read) != 1:
        return None
    if tree.find(exp.DateDiff, exp.DatetimeDiff, exp.TimestampDiff) or any(
        node.this.find(exp.Column) and node.expression.find(exp.Column) for node in tree.find_all(exp.Sub)
    ):
        return None  # a difference of two columns is taken
    dated = [c for c, kind in table_types(lake, read[0]).items() if is_date(kind)]
    if len(dated) != 2:
        return None
    first, second = dated
    try:
        rows = lake.query(
            f"SELECT avg(date_diff('day', {quote(first)}, {quote(second)})) FROM {quote(read[0])}", max_rows=1
        ).rows
    except AgentlakeError:
        return None
    if not rows or rows[0][0] is None:
        return None
    if rows[0][0] < 0:
        first, second = second, first
    days = digits(match.group(2))
    return (
        f"date_diff('day', {quote(first)}, {quote(second)}) {_DAY_BOUNDS[match.group(1).casefold()]} {days}"
    )


def days_fix(sql: str, question: str, lake: Lake) -> tuple[str, str] | None:
    """``sql`` with ``days_apart``'s filter."""
    condition = days_apart(sql, question, lake)
    fixed = add_filters(sql, [condition]) if condition else None
    return (
        (fixed, f"filtered {condition}: the question bounds the days between the two dates")
        if fixed
        else None
    )


# --- a share of the rows ------------------------------------------------------------------------------


def shared_filter(sql: str, question: str) -> str | None:
    """The filter ``sql`` puts on every row it reads that is also the condition of the share it
    computes (``100 * sum(CASE WHEN island = 'Dream' ...) / count(*) ... WHERE island = 'Dream'``:
    always 100), for a question asking a share; else None."""
    tree = parse_select(sql)
    where = tree.args.get("where") if tree is not None else None
    if not SHARE.search(question) or tree is None or where is None:
        return None
    conditions = {
        node.sql()
        for select in tree.expressions
        for node in select.find_all(exp.EQ)
        if node.find_ancestor(exp.If, exp.Case, exp.Filter)
    }
    return next((node.sql() for node in where.find_all(exp.EQ) if node.sql() in conditions), None)


def share_fix(sql: str, question: str) -> tuple[str, str] | None:
    """``sql`` without ``shared_filter``'s filter on the rows."""
    shared = shared_filter(sql, question)
    tree = parse_select(sql) if shared else None
    if tree is None or shared is None:
        return None
    for node in list(tree.args["where"].find_all(exp.EQ)):
        if node.sql() != shared:
            continue
        parent = node.parent
        if isinstance(parent, exp.And):
            parent.replace(parent.expression if parent.this is node else parent.this)
        elif isinstance(parent, exp.Where):
            tree.set("where", None)
    return tree.sql("duckdb"), f"dropped WHERE {shared}: the share is of all the rows"


def uncounted(sql: str, question: str) -> bool:
    """Whether ``sql`` answers "how many" with a value of its rows, no aggregate ("In how many
    months was the price between 20 and 30?": ``SELECT month(date) ... GROUP BY ... LIMIT 1``)."""
    tree = parse_select(sql)
    if (
        tree is None
        or not HOW_MANY.search(question)
        or re.search(r"\bhow many\b.*\b(?:per|each)\b", question, re.I)
    ):
        return False
    return not any(select.find(exp.AggFunc) for select in tree.expressions) and bool(
        tree.args.get("group") or tree.args.get("limit")
    )


def count_fix(sql: str, question: str) -> tuple[str, str] | None:
    """``sql`` counting the rows it filters, with no grouping, order or limit."""
    tree = parse_select(sql) if uncounted(sql, question) else None
    if tree is None:
        return None
    tree.set("expressions", [exp.alias_(exp.Count(this=exp.Star()), "n")])
    for part in ("group", "having", "order", "limit"):
        tree.set(part, None)
    return tree.sql("duckdb"), "counted the rows it filters: the question asks how many"


def held_group(sql: str) -> str | None:
    """The column ``sql`` groups by and ranks while holding it to one value in its filter
    (``WHERE type = 'Death' GROUP BY type ORDER BY count(*) DESC``: the ranking has one group);
    else None."""
    tree = parse_select(sql)
    group = tree.args.get("group") if tree is not None else None
    if tree is None or group is None or tree.args.get("order") is None:
        return None
    held = {c.column.casefold() for c in comparisons(sql) if c.op == "="}
    grouped = [key.name for key in group.expressions if isinstance(key, exp.Column)]
    return next((name for name in grouped if name.casefold() in held), None)


def held_group_fix(sql: str) -> tuple[str, str] | None:
    """``sql`` without ``held_group``'s filter on the column it ranks."""
    column = held_group(sql)
    if column is None:
        return None
    fixed = drop_filters(sql, lambda c: c.op == "=" and c.column.casefold() == column.casefold())
    return (fixed, f"dropped the filter on {column}: the question ranks every {column}") if fixed else None


_WHO = re.compile(r"\bwho\b|\bname\b", re.IGNORECASE)


def key_for_name(sql: str, question: str, lake: Lake) -> tuple[str, str] | None:
    """``(key, name column)`` when ``question`` asks who (or for a name) and ``sql`` selects a
    key (``customer_id``) first, of a table that has one column of names it does not select;
    else None."""
    tree = parse_select(sql)
    if tree is None or not _WHO.search(question) or not tree.expressions:
        return None
    picked = tree.expressions[0].unalias()
    if not isinstance(picked, exp.Column) or not KEYISH.search(picked.name):
        return None
    selected = {c.name.casefold() for e in tree.expressions for c in e.find_all(exp.Column)}
    for table in tables_read(sql):
        columns = list(table_types(lake, table))
        if picked.name.casefold() not in {c.casefold() for c in columns}:
            continue
        names = [c for c in columns if "name" in words(c)]
        if len(names) != 1 or names[0].casefold() in selected:
            return None
        return picked.name, names[0]
    return None


def name_fix(sql: str, question: str, lake: Lake) -> tuple[str, str] | None:
    """``sql`` selecting ``key_for_name``'s column of names in place of the key (grouped by it
    too, where it groups by the key)."""
    found = key_for_name(sql, question, lake)
    tree = parse_select(sql) if found else None
    if tree is None or found is None:
        return None
    key, name = found
    column = tree.expressions[0].unalias()
    named = exp.column(name, table=column.table or None, quoted=True)
    tree.set("expressions", [named, *tree.expressions[1:]])
    group = tree.args.get("group")
    if group is not None:
        group.set("expressions", [*group.expressions, named.copy()])
    return tree.sql("duckdb"), f"selected {name} for {key}: the question asks who"


WORD_KINDS = frozenset(
    "direction keyranked nullzero unsaiddistinct whole key difference days share uncounted heldgroup whoname".split()
)


def word_problems(
    sql: str, question: str, lake: Lake, rows: list[Any], named: list[tuple[str, str]]
) -> list[tuple[str, str]]:
    """This module's problems of ``sql`` (which returned ``rows``), as
    ``agents.fixes.find_problems`` lists them (``named``: the values the question names): each
    kind (one of ``WORD_KINDS``) and what to tell the model."""
    found = []
    if whole := other_than_whole(sql, question, lake, rows, named):
        found.append(("whole", f"does not give the value of {whole[0]}"))
    if key := uncompared_key(sql, question, lake):
        found.append(
            ("key", f"does not compare {key[0]}.{key[1]} with {key[2]}, the key the question states")
        )
    if way := direction(question, lake, sql):
        found.append(("direction", f"does not order by {way[0]}, {'highest' if way[1] else 'lowest'} first"))
    if ranked_by_key(sql, question):
        found.append(("keyranked", "ranks the groups by their own value, not by how many rows each has"))
    if zero := null_for_zero(sql, question, lake):
        found.append(("nullzero", f"tests {zero} IS NULL, but {zero} holds no missing value: 'no' is 0"))
    if distinct := unsaid_distinct(sql, question):
        found.append(
            ("unsaiddistinct", f"counts different {distinct} values, which the question does not ask")
        )
    if days := days_apart(sql, question, lake):
        found.append(("days", f"does not filter {days}, the days between the dates the question bounds"))
    if shared := shared_filter(sql, question):
        found.append(("share", f"filters every row on {shared}, the condition of the share it computes"))
    if diff := difference(question, lake, sql):
        found.append(("difference", f"does not take the {diff[0]} of {diff[1]} - {diff[2]} in each row"))
    if uncounted(sql, question):
        found.append(("uncounted", "returns a value of its rows, but the question asks how many"))
    if who := key_for_name(sql, question, lake):
        found.append(("whoname", f"selects {who[0]}, but the question asks who: {who[1]}"))
    if held := held_group(sql):
        found.append(("heldgroup", f"ranks the {held} values while holding {held} to one"))
    return found


def fix_worded(
    sql: str, kind: str, question: str, lake: Lake, rows: list[Any] | None, named: list[tuple[str, str]]
) -> tuple[str, str] | None:
    """``sql`` with the fix of its problem ``kind`` (one of ``WORD_KINDS``) and what was done,
    or None."""
    if kind == "whole":
        return other_than_whole(sql, question, lake, rows or [], named)
    if kind == "uncounted":
        return count_fix(sql, question)
    if kind == "heldgroup":
        return held_group_fix(sql)
    if kind == "whoname":
        return name_fix(sql, question, lake)
    if kind == "key":
        return key_fix(sql, question, lake)
    if kind == "direction":
        return direction_fix(sql, question, lake)
    if kind == "keyranked":
        return ranking_fix(sql, question)
    if kind == "nullzero":
        return zero_fix(sql, question, lake)
    if kind == "days":
        return days_fix(sql, question, lake)
    if kind == "share":
        return share_fix(sql, question)
    if kind == "unsaiddistinct":
        return distinct_fix(sql, question)
    return difference_fix(sql, question, lake) if kind == "difference" else None
