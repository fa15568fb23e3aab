"""Rewriting a query's filters: the parts of a WHERE clause code changes in a model's query.

Owns reading a DuckDB query's top-level WHERE as its conjuncts and writing one back with some
dropped, some added, or a compared literal replaced, through sqlglot's DuckDB dialect (parsed,
changed as a tree, printed), never by editing text. Every function returns ``None`` when the
query does not parse as one SELECT or the change does not apply; the caller runs what comes
back through the lake's guard like any query. It does not decide which filters are wrong
(``agents.ask``) nor run anything.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import sqlglot
from sqlglot import exp

DIALECT = "duckdb"


@dataclass(frozen=True)
class Comparison:
    """A conjunct ``column <op> 'literal'`` of a query's WHERE (``table``: its qualifier)."""

    column: str
    value: str
    table: str | None
    sql: str
    op: str = "="  # "=", "LIKE" or "ILIKE"


def sql_literal(value: str) -> str:
    """``value`` as a quoted SQL string literal."""
    return "'" + value.replace("'", "''") + "'"


def parse_select(sql: str) -> exp.Select | None:
    """``sql`` as a SELECT tree, or None where it does not parse or is not one SELECT."""
    try:
        tree = sqlglot.parse_one(sql, read=DIALECT)
    except sqlglot.errors.ParseError:
        return None
    return tree if isinstance(tree, exp.Select) else None


def _conjuncts(where: exp.Expression) -> list[exp.Expression]:
    node = where.this if isinstance(where, exp.Where) else where
    if isinstance(node, exp.Paren) and isinstance(node.this, exp.And):
        node = node.this
    if isinstance(node, exp.And):
        return _conjuncts(node.left) + _conjuncts(node.right)
    return [node]


def comparisons(sql: str) -> list[Comparison]:
    """The conjuncts of ``sql``'s WHERE that compare a column with a text literal (``=``,
    ``LIKE``, ``ILIKE``), in order; empty when it has none or does not parse."""
    tree = parse_select(sql)
    where = tree.args.get("where") if tree is not None else None
    if where is None:
        return []
    found = []
    for node in _conjuncts(where):
        if isinstance(node, (exp.EQ, exp.Like, exp.ILike)):
            column, literal = node.this, node.expression
            if isinstance(literal, exp.Column) and isinstance(column, exp.Literal):
                column, literal = literal, column
            if isinstance(column, exp.Column) and isinstance(literal, exp.Literal) and literal.is_string:
                op = "=" if isinstance(node, exp.EQ) else "LIKE" if isinstance(node, exp.Like) else "ILIKE"
                found.append(
                    Comparison(column.name, literal.this, column.table or None, node.sql(DIALECT), op)
                )
    return found


def drop_filters(sql: str, drop: Callable[[Comparison], bool]) -> str | None:
    """``sql`` without the WHERE conjuncts ``drop`` picks (of those ``comparisons`` returns);
    ``None`` when it drops none or the query does not parse."""
    tree = parse_select(sql)
    where = tree.args.get("where") if tree is not None else None
    if tree is None or where is None:
        return None
    picked = {c.sql for c in comparisons(sql) if drop(c)}
    if not picked:
        return None
    kept = [node for node in _conjuncts(where) if node.sql(DIALECT) not in picked]
    if kept:
        tree.set("where", exp.Where(this=exp.and_(*kept)))
    else:
        tree.set("where", None)
    return tree.sql(DIALECT)


def add_filters(sql: str, conditions: list[str]) -> str | None:
    """``sql`` with each of ``conditions`` (SQL boolean expressions) ANDed to its WHERE;
    ``None`` when there are none or the query does not parse."""
    tree = parse_select(sql)
    if tree is None or not conditions:
        return None
    try:
        added = [sqlglot.parse_one(condition, read=DIALECT) for condition in conditions]
    except sqlglot.errors.ParseError:
        return None
    where = tree.args.get("where")
    parts = ([where.this] if where is not None else []) + added
    tree.set("where", exp.Where(this=exp.and_(*parts)))
    return tree.sql(DIALECT)


def _rewrite(sql: str, change: Callable[[exp.Expression], bool]) -> str | None:
    """``sql`` after ``change`` ran on each conjunct of its WHERE (in place; it says whether it
    changed one); ``None`` when none changed or there is no WHERE."""
    tree = parse_select(sql)
    where = tree.args.get("where") if tree is not None else None
    if tree is None or where is None:
        return None
    changed = [change(node) for node in _conjuncts(where)]
    return tree.sql(DIALECT) if any(changed) else None


def replace_strings(sql: str, written: Callable[[exp.Literal], str | None]) -> str | None:
    """``sql`` with each text literal for which ``written`` gives a text written as that text
    (anywhere in the query: ``written`` decides which literal is meant); ``None`` when it gives
    none or ``sql`` is not one SELECT."""
    tree = parse_select(sql)
    if tree is None:
        return None
    hits = [
        (literal, text)
        for literal in tree.find_all(exp.Literal)
        if literal.is_string and (text := written(literal)) is not None
    ]
    for literal, text in hits:
        literal.replace(exp.Literal.string(text))
    return tree.sql(DIALECT) if hits else None


def replace_value(sql: str, column: str, old: str, new: str) -> str | None:
    """``sql`` with the literal ``old`` compared with ``column`` in its WHERE written ``new``;
    ``None`` when no such comparison is there."""

    def written(literal: exp.Literal) -> str | None:
        node = literal.parent
        if literal.this != old or not isinstance(node, (exp.EQ, exp.Like, exp.ILike)):
            return None
        other = node.this if literal is node.expression else node.expression
        if not (isinstance(other, exp.Column) and other.name.casefold() == column.casefold()):
            return None
        where = literal.root().args.get("where")
        # A conjunct of the query's own WHERE: not a subquery's, nor one side of an OR.
        return new if where is not None and any(node is conjunct for conjunct in _conjuncts(where)) else None

    return replace_strings(sql, written)


def fold_case(sql: str, column: str, value: str) -> str | None:
    """``sql`` with ``column = 'Value'`` in its WHERE written ``lower(column) = 'value'``."""

    def change(node: exp.Expression) -> bool:
        if not (
            isinstance(node, exp.EQ)
            and isinstance(node.this, exp.Column)
            and isinstance(node.expression, exp.Literal)
            and node.this.name.casefold() == column.casefold()
            and node.expression.this.casefold() == value.casefold()
        ):
            return False
        lowered = exp.EQ(
            this=exp.Lower(this=node.this.copy()), expression=exp.Literal.string(value.casefold())
        )
        node.replace(lowered)
        return True

    return _rewrite(sql, change)


def join_table(sql: str, table: str, on: tuple[str, str] | None, shared: set[str]) -> str | None:
    """``sql``, which reads one table (no join), reading ``table`` too: ``JOIN table ON
    table.a = read.b`` for ``on=(a, b)``, its unqualified columns named in ``shared`` (both
    tables have them) qualified with the table it read; with ``on`` None, ``table`` read in
    place of the one it read. ``None`` when ``sql`` does not read exactly one table."""
    tree = parse_select(sql)
    source = tree.args.get("from") if tree is not None else None
    if tree is None or source is None or tree.args.get("joins") or not isinstance(source.this, exp.Table):
        return None
    read = source.this
    if on is None:
        read.set("this", exp.to_identifier(table))
        return tree.sql(DIALECT)
    name = read.alias_or_name
    folded = {column.casefold() for column in shared}
    for column in tree.find_all(exp.Column):
        if not column.table and column.name.casefold() in folded:
            column.set("table", exp.to_identifier(name))
    condition = exp.EQ(this=exp.column(on[0], table), expression=exp.column(on[1], name))
    return tree.join(exp.to_table(table), on=condition).sql(DIALECT)


def count_distinct(sql: str, column: str) -> str | None:
    """``sql`` with its selected ``count(*)`` (``count(x)``, or ``count(DISTINCT other)``)
    written ``count(DISTINCT column)`` (``column`` may be qualified: ``customers.customer_id``);
    ``None`` when it selects no such count."""
    tree = parse_select(sql)
    if tree is None:
        return None
    table, _, name = column.rpartition(".")
    for selected in tree.expressions:
        for count in selected.find_all(exp.Count):
            if isinstance(count.this, exp.Distinct):
                counted = list(count.this.find_all(exp.Column))
                if len(counted) != 1 or counted[0].name.casefold() == name.casefold():
                    continue
            count.set("this", exp.Distinct(expressions=[exp.column(name, table or None)]))
            return tree.sql(DIALECT)
    return None


def count_rows(sql: str) -> str | None:
    """``SELECT count(*) AS n`` over the rows ``sql`` lists (its ORDER BY and LIMIT dropped);
    ``None`` when it aggregates or groups already, or does not parse."""
    tree = parse_select(sql)
    if (
        tree is None
        or tree.args.get("group")
        or any(selected.find(exp.AggFunc) for selected in tree.expressions)
    ):
        return None
    tree.set("order", None)
    tree.set("limit", None)
    return exp.select(exp.alias_(exp.Count(this=exp.Star()), "n")).from_(tree.subquery("listed")).sql(DIALECT)


def aggregated_columns(sql: str) -> list[str]:
    """The columns the selected aggregates other than ``count`` read (``avg(price)``: price),
    in order; empty when there are none or it does not parse."""
    tree = parse_select(sql)
    if tree is None:
        return []
    found = []
    for selected in tree.expressions:
        for function in selected.find_all(exp.AggFunc):
            if not isinstance(function, exp.Count):
                found += [column.name for column in function.find_all(exp.Column)]
    return list(dict.fromkeys(found))


def aggregate_instead(sql: str, column: str) -> str | None:
    """``sql`` with its selected aggregate of one other column (``avg(private)``) reading
    ``column``, or its selected ``count(*)`` written ``sum(column)`` with any ``column =
    number`` filter dropped; ``None`` when it has neither."""
    tree = parse_select(sql)
    if tree is None:
        return None
    for selected in tree.expressions:
        for function in selected.find_all(exp.AggFunc):
            if isinstance(function, exp.Count):
                if isinstance(function.this, exp.Star):
                    function.replace(exp.Sum(this=exp.column(column)))
                    where = tree.args.get("where")
                    if where is not None:
                        kept = [node for node in _conjuncts(where) if not _equals_number(node, column)]
                        tree.set("where", exp.Where(this=exp.and_(*kept)) if kept else None)
                    return tree.sql(DIALECT)
                continue
            read = list(function.find_all(exp.Column))
            if len(read) == 1 and read[0].name.casefold() != column.casefold():
                read[0].replace(exp.column(column, read[0].table or None))
                return tree.sql(DIALECT)
    return None


def _equals_number(node: exp.Expression, column: str) -> bool:
    return (
        isinstance(node, exp.EQ)
        and isinstance(node.this, exp.Column)
        and node.this.name.casefold() == column.casefold()
        and isinstance(node.expression, exp.Literal)
        and not node.expression.is_string
    )


def grouped_by(sql: str) -> list[str]:
    """The columns ``sql`` groups by, in order; empty when it does not group or parse."""
    tree = parse_select(sql)
    group = tree.args.get("group") if tree is not None else None
    if group is None:
        return []
    return [node.name for node in group.expressions if isinstance(node, exp.Column)]


def regroup(sql: str, old: str, new: str) -> str | None:
    """``sql`` grouping by ``new`` (a column's name or an expression: ``year("date")``) where
    it grouped by ``old``, and selecting and ordering by ``new`` where it did by ``old`` (outside
    aggregates); ``None`` when it does not group by ``old``."""
    tree = parse_select(sql)
    group = tree.args.get("group") if tree is not None else None
    if tree is None or group is None:
        return None
    changed = False
    order = tree.args.get("order")
    for node in [*group.expressions, *tree.expressions, *(order.expressions if order else [])]:
        for column in [node] if isinstance(node, exp.Column) else list(node.find_all(exp.Column)):
            if column.name.casefold() == old.casefold() and not column.find_ancestor(exp.AggFunc):
                column.replace(
                    exp.column(new, column.table or None)
                    if re.fullmatch(r"\w+", new)
                    else sqlglot.parse_one(new, read=DIALECT)
                )
                changed = True
    return tree.sql(DIALECT) if changed else None


def columns_named(sql: str) -> set[str]:
    """The column names ``sql`` says anywhere (lower-cased); empty when it does not parse."""
    try:
        tree = sqlglot.parse_one(sql, read=DIALECT)
    except sqlglot.errors.ParseError:
        return set()
    aliases = {alias.alias.casefold() for alias in tree.find_all(exp.Alias)}
    return {column.name.casefold() for column in tree.find_all(exp.Column)} - aliases


def replace_conjuncts(sql: str, pick: Callable[[exp.Expression], bool], conditions: list[str]) -> str | None:
    """``sql`` with the conjuncts of its WHERE that ``pick`` picks replaced by ``conditions``
    (SQL boolean expressions, ANDed); ``None`` when it picks none or anything fails to parse."""
    tree = parse_select(sql)
    where = tree.args.get("where") if tree is not None else None
    if tree is None or where is None:
        return None
    nodes = _conjuncts(where)
    kept = [node for node in nodes if not pick(node)]
    if len(kept) == len(nodes):
        return None
    try:
        added = [sqlglot.parse_one(condition, read=DIALECT) for condition in conditions]
    except sqlglot.errors.ParseError:
        return None
    parts = kept + added
    tree.set("where", exp.Where(this=exp.and_(*parts)) if parts else None)
    return tree.sql(DIALECT)


def conjuncts_of(sql: str) -> list[exp.Expression]:
    """The conjuncts of ``sql``'s top-level WHERE as trees; empty when none or no parse."""
    tree = parse_select(sql)
    where = tree.args.get("where") if tree is not None else None
    return _conjuncts(where) if where is not None else []


def unused_joins(sql: str, columns: dict[str, set[str]]) -> list[str]:
    """The tables ``sql`` inner-joins but reads nothing of outside the join's own condition
    (``columns``: each table's column names, lower-cased, to tell whose an unqualified column
    is); empty when none or it does not parse."""
    tree = parse_select(sql)
    if tree is None:
        return []
    found = []
    for join in tree.args.get("joins") or []:
        table = join.this
        if not isinstance(table, exp.Table) or join.side or join.kind not in ("", "INNER"):
            continue
        name, alias = table.name.casefold(), table.alias_or_name.casefold()
        others = set().union(*(cols for t, cols in columns.items() if t != name))
        condition = join.args.get("on")
        inside = {id(column) for column in condition.find_all(exp.Column)} if condition is not None else set()
        used = any(
            id(column) not in inside
            and (
                column.table.casefold() == alias
                if column.table
                else column.name.casefold() in columns.get(name, set())
                and column.name.casefold() not in others
            )
            for column in tree.find_all(exp.Column)
        )
        if not used and not any(isinstance(node, exp.Star) for node in tree.expressions):
            found.append(table.name)
    return found


def drop_join(sql: str, table: str) -> str | None:
    """``sql`` without its join of ``table``; ``None`` when it does not join it."""
    tree = parse_select(sql)
    if tree is None:
        return None
    joins = tree.args.get("joins") or []
    kept = [
        join
        for join in joins
        if not (isinstance(join.this, exp.Table) and join.this.name.casefold() == table.casefold())
    ]
    if len(kept) == len(joins):
        return None
    tree.set("joins", kept or None)
    return tree.sql(DIALECT)


def tables_read(sql: str) -> list[str]:
    """The tables ``sql`` reads (FROM and JOIN, CTE names aside), in order, once each."""
    try:
        tree = sqlglot.parse_one(sql, read=DIALECT)
    except sqlglot.errors.ParseError:
        return []
    ctes = {cte.alias_or_name for cte in tree.find_all(exp.CTE)}
    names = [table.name for table in tree.find_all(exp.Table) if table.name not in ctes]
    return list(dict.fromkeys(names))


def group_keys_selected(sql: str) -> bool | None:
    """Whether ``sql`` selects one of the keys it groups by outside an aggregate (``None``
    when it does not group or parse): a grouping whose keys are not selected answers for
    one group the result never names."""
    tree = parse_select(sql)
    group = tree.args.get("group") if tree is not None else None
    if tree is None or group is None:
        return None
    if group.args.get("all") or not group.expressions:  # GROUP BY ALL: every selected non-aggregate
        return any(selected.find(exp.AggFunc) is None for selected in tree.expressions)
    keys = {key.sql(DIALECT).casefold() for key in group.expressions}
    names = {key.name.casefold() for key in group.expressions if isinstance(key, exp.Column)}
    aliases = {selected.alias.casefold() for selected in tree.expressions if isinstance(selected, exp.Alias)}
    for selected in tree.expressions:
        inner = selected.this if isinstance(selected, exp.Alias) else selected
        if inner.sql(DIALECT).casefold() in keys or (
            isinstance(selected, exp.Alias) and selected.alias.casefold() in keys
        ):
            return True
        for column in inner.find_all(exp.Column):
            if column.name.casefold() in names and not column.find_ancestor(exp.AggFunc):
                return True
    return bool(keys & aliases)


def ungroup(sql: str, column: str | None = None) -> str | None:
    """``sql`` over all its rows: its GROUP BY, HAVING, ORDER BY and LIMIT dropped, and, with
    ``column``, the selected expressions that read ``column`` outside an aggregate; ``None``
    when it does not group, nothing would be left to select, or it does not parse."""
    tree = parse_select(sql)
    if tree is None or tree.args.get("group") is None:
        return None
    if column is not None:
        kept = [
            selected
            for selected in tree.expressions
            if not any(
                c.name.casefold() == column.casefold() and not c.find_ancestor(exp.AggFunc)
                for c in selected.find_all(exp.Column)
            )
        ]
        if not kept:
            return None
        tree.set("expressions", kept)
    for part in ("group", "having", "order", "limit"):
        tree.set(part, None)
    return tree.sql(DIALECT)


def requalify(sql: str, column: str, wrong: str, right: str) -> str | None:
    """``sql`` reading ``column`` through the table or alias ``right`` where it read it
    through ``wrong`` (``T2.name`` -> ``T1.name``); ``None`` when it never does."""
    tree = parse_select(sql)
    if tree is None:
        return None
    changed = False
    for node in tree.find_all(exp.Column):
        if node.name.casefold() == column.casefold() and node.table.casefold() == wrong.casefold():
            node.set("table", exp.to_identifier(right))
            changed = True
    return tree.sql(DIALECT) if changed else None


def aliases_read(sql: str) -> dict[str, str]:
    """The tables ``sql`` reads in its FROM and JOINs, by the name or alias it reads them
    through (lower-cased): ``{"t1": "customers", "t2": "orders"}``; empty when no parse."""
    tree = parse_select(sql)
    if tree is None:
        return {}
    tables = [tree.args["from"].this] if tree.args.get("from") else []
    tables += [join.this for join in tree.args.get("joins") or []]
    return {t.alias_or_name.casefold(): t.name for t in tables if isinstance(t, exp.Table)}


def aggregate_with(sql: str, column: str, function: str) -> str | None:
    """``sql`` with its aggregates of ``column`` other than ``function`` (``min(price)`` for
    ``avg``) written ``function(column)``, in the selection and the ordering alike; ``None``
    when it has none or does not parse."""
    tree = parse_select(sql)
    if tree is None:
        return None
    wanted = sqlglot.parse_one(f"{function}(x)", read=DIALECT)
    changed = False
    for node in list(tree.find_all(exp.AggFunc)):
        if isinstance(node, (exp.Count, type(wanted))):
            continue
        read = list(node.find_all(exp.Column))
        if len(read) == 1 and read[0].name.casefold() == column.casefold():
            node.replace(type(wanted)(this=read[0].copy()))
            changed = True
    return tree.sql(DIALECT) if changed else None


def order_by_aggregate(sql: str, descending: bool) -> str | None:
    """``sql``, which groups and does not order, ordered by its first selected aggregate
    (``DESC`` or ``ASC``) and limited to the top row; ``None`` when it does not group, orders
    already, selects no aggregate or does not parse."""
    tree = parse_select(sql)
    if tree is None or tree.args.get("group") is None or tree.args.get("order") is not None:
        return None
    for selected in tree.expressions:
        if selected.find(exp.AggFunc) is None:
            continue
        key = exp.column(selected.alias) if isinstance(selected, exp.Alias) else selected.copy()
        return tree.order_by(exp.Ordered(this=key, desc=descending)).limit(1).sql(DIALECT)
    return None


def count_distinct_of(sql: str, expression: str) -> str | None:
    """``sql`` with its selected count written ``count(DISTINCT expression)`` (an expression
    such as ``date_trunc('month', "date")``); ``None`` when it selects no count or anything
    fails to parse."""
    tree = parse_select(sql)
    if tree is None:
        return None
    try:
        counted = sqlglot.parse_one(expression, read=DIALECT)
    except sqlglot.errors.ParseError:
        return None
    for selected in tree.expressions:
        for count in selected.find_all(exp.Count):
            count.set("this", exp.Distinct(expressions=[counted]))
            return tree.sql(DIALECT)
    return None


def count_all(sql: str) -> str | None:
    """``sql`` with its selected ``count(DISTINCT ...)`` written ``count(*)``; ``None`` when
    it selects none or does not parse."""
    tree = parse_select(sql)
    if tree is None:
        return None
    for selected in tree.expressions:
        for count in selected.find_all(exp.Count):
            if isinstance(count.this, exp.Distinct):
                count.set("this", exp.Star())
                return tree.sql(DIALECT)
    return None


def counted_distinct(sql: str) -> list[str]:
    """The columns ``sql`` selects ``count(DISTINCT column)`` of, in order; empty when none."""
    tree = parse_select(sql)
    if tree is None:
        return []
    return [
        count.this.expressions[0].name
        for selected in tree.expressions
        for count in selected.find_all(exp.Count)
        if isinstance(count.this, exp.Distinct)
        and len(count.this.expressions) == 1
        and isinstance(count.this.expressions[0], exp.Column)
    ]


def settle_ungrouped(sql: str, column: str, function: str | None) -> str | None:
    """``sql``, whose ``column`` is read outside an aggregate and outside its GROUP BY, with that
    column aggregated by ``function`` (``avg``) wherever it is read so, or, with ``function``
    None, grouped by too; ``None`` when it does not group or parse, or never reads it so."""
    tree = parse_select(sql)
    group = tree.args.get("group") if tree is not None else None
    if tree is None or group is None:
        return None
    order = tree.args.get("order")
    bare = [
        node
        for part in [*tree.expressions, *(order.expressions if order else [])]
        for node in ([part] if isinstance(part, exp.Column) else list(part.find_all(exp.Column)))
        if node.name.casefold() == column.casefold() and not node.find_ancestor(exp.AggFunc)
    ]
    if not bare:
        return None
    if function is None:
        group.append("expressions", bare[0].copy())
        return tree.sql(DIALECT)
    wrapper = type(sqlglot.parse_one(f"{function}(x)", read=DIALECT))
    for node in bare:
        node.replace(wrapper(this=node.copy()))
    return tree.sql(DIALECT)
