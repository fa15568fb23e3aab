"""A playbook's query adapted to a question of its shape: the same query with the question's values.

A playbook is a question whose query a person confirmed (marked right, or corrected to the
value they expected). A later question often has the playbook's shape with other values: "How
many Gentoo penguins were measured on Biscoe island?" after "How many Adelie penguins were
measured on Torgersen island?". ``adapt`` lines the two questions up word by word and writes
the playbook's query with each difference carried over, where every difference is one code can
carry:

- a value the question names in a column's listed values (Adelie -> Gentoo, Apple -> AAPL
  through its code): the compared literal;
- a date (a year, a month, a day): the year, month and day literals and ISO dates;
- a number: its literal;
- the other end of a superlative or a comparison (most/least, highest/lowest, above/below):
  the sort order, ``max``/``min`` and the comparison turned round;
- a column named by other words (flipper length -> bill depth): the column renamed.

Words that carry nothing (articles, auxiliaries) may differ. Any other difference, or one that
does not reach the query, leaves the question unadapted (None): the plan then goes to the
model as before. The adapted query still runs through code's checks (``agents.ask``).
"""

from __future__ import annotations

import calendar
import difflib
import re
from typing import TYPE_CHECKING

import sqlglot
from sqlglot import exp

from agentlake.agents.fix_dates import NamedDate, named_dates
from agentlake.agents.linking import abbreviates, lake_columns, named_values, words
from agentlake.lake.repair import column_types, rename_identifier
from agentlake.lake.rewrite import DIALECT, parse_select, replace_strings

if TYPE_CHECKING:
    from agentlake.lake import Lake

# A number (with its sign), else a word or an id as written ("C0071" is one token).
_TOKEN = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?!\w)|[A-Za-z0-9]+")
_NUMBER = re.compile(r"^-?\d+(?:\.\d+)?$")
# Words whose change carries no meaning for the query.
_IDLE = frozenset(
    "a an the of in on at to for by with from is are was were be been did do does has have had "
    "there their which what who how its it than as".split()
)
_OPPOSITES = [
    set("most highest largest maximum max heaviest longest oldest latest biggest greatest".split()),
    set("least fewest lowest smallest minimum min lightest shortest youngest earliest".split()),
]
_ABOVE = set("more greater above over higher larger north east after".split())
_BELOW = set("less fewer below under lower smaller south west before".split())
_MONTHS = {name.casefold() for name in (*calendar.month_name, *calendar.month_abbr) if name} | {"sept"}
_ENDS = _OPPOSITES[0] | _OPPOSITES[1] | _ABOVE | _BELOW
_TURNED: dict[type[exp.Expression], type[exp.Expression]] = {
    exp.GT: exp.LT,
    exp.LT: exp.GT,
    exp.GTE: exp.LTE,
    exp.LTE: exp.GTE,
}


def adapted(
    examples: list[tuple[str, str, str]], question: str, lake: Lake, listed: dict[tuple[str, str], list[str]]
) -> list[tuple[str, str]]:
    """Each worked example's query (``examples``: question, query, lesson id; most alike first)
    adapted to ``question``, with its lesson's id; those that do not adapt left out."""
    found = []
    for example_question, example_sql, lesson_id in examples:
        sql = adapt(example_question, example_sql, question, lake, listed)
        if sql is not None:
            found.append((sql, lesson_id))
    return found


def adapt(
    example_question: str,
    example_sql: str,
    question: str,
    lake: Lake,
    listed: dict[tuple[str, str], list[str]],
) -> str | None:
    """``example_sql`` (the query that answered ``example_question``) written for ``question``,
    or None when a difference between the two questions cannot be carried into it."""
    tree = parse_select(example_sql)
    if tree is None:
        return None
    old_tokens, new_tokens = _TOKEN.findall(example_question), _TOKEN.findall(question)
    matcher = difflib.SequenceMatcher(
        None, [t.casefold() for t in old_tokens], [t.casefold() for t in new_tokens]
    )
    changes = [
        (old_tokens[i1:i2], new_tokens[j1:j2])
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    ]
    if not changes:
        return tree.sql(DIALECT)
    columns = lake_columns(lake)
    old_values = dict(named_values(example_question, listed, columns))
    new_values = dict(named_values(question, listed, columns))
    swapped = {
        column: (old_values[column], new_values[column])
        for column in old_values.keys() & new_values.keys()
        if old_values[column] != new_values[column]
    }
    old_dates, new_dates = named_dates(example_question), named_dates(question)
    sql = tree.sql(DIALECT)
    for old, new in changes:
        carried = _carry(sql, old, new, swapped, (old_dates, new_dates), lake)
        if carried is None:
            return None
        sql = carried
    return sql


def _carry(
    sql: str,
    old: list[str],
    new: list[str],
    swapped: dict[str, tuple[str, str]],
    dates: tuple[list[NamedDate], list[NamedDate]],
    lake: Lake,
) -> str | None:
    """``sql`` with one difference (``old`` words -> ``new`` words) carried, or None when a word
    of it is carried by nothing."""
    old_words = [w for w in old if w.casefold() not in _IDLE]
    new_words = [w for w in new if w.casefold() not in _IDLE]
    if not old_words and not new_words:
        return sql
    if (
        old_words
        and new_words
        and all(w.casefold() in _MONTHS or _NUMBER.match(w) for w in old_words + new_words)
    ):
        dated = _carry_dates(sql, *dates)
        if dated is not None:
            return dated
    old_numbers = [w for w in old_words if _NUMBER.match(w)]
    new_numbers = [w for w in new_words if _NUMBER.match(w)]
    if len(old_numbers) != len(new_numbers) or len(old_numbers) > 1:
        return None
    if old_numbers:
        replaced = _replace_number(sql, old_numbers[0], new_numbers[0])
        if replaced is None:
            return None
        sql = replaced
    old_rest = [w for w in old_words if not _NUMBER.match(w)]
    new_rest = [w for w in new_words if not _NUMBER.match(w)]
    for column, (before, after) in swapped.items():
        old_naming, new_naming = _naming(old_rest, before), _naming(new_rest, after)
        replaced = _replace_text(sql, column, before, after) if old_naming and new_naming else None
        if replaced is not None:  # a value of a column the query compares ("male" is also gender's)
            sql = replaced
            old_rest = [w for w in old_rest if w not in old_naming]
            new_rest = [w for w in new_rest if w not in new_naming]
    # "highest maximum temperature" -> "lowest minimum ...": highest turns the query round,
    # maximum names temp_max (renamed below).
    columns = list(column_types(lake, sql))
    old_ends = [w for w in old_rest if w.casefold() in _ENDS and not any(_named_by(c, [w]) for c in columns)]
    new_ends = [w for w in new_rest if w.casefold() in _ENDS and not any(_named_by(c, [w]) for c in columns)]
    if old_ends or new_ends:
        turned = _turn(sql, [w.casefold() for w in old_ends], [w.casefold() for w in new_ends])
        if turned is None:
            return None
        sql = turned
        old_rest = [w for w in old_rest if w not in old_ends]
        new_rest = [w for w in new_rest if w not in new_ends]
    if len(old_rest) == len(new_rest) == 1:
        literal = _replace_literal(sql, old_rest[0], new_rest[0])
        if literal is not None:
            return literal
    if old_rest or new_rest:
        return _rename_column(sql, old_rest, new_rest, lake)
    return sql


def _replace_literal(sql: str, before: str, after: str) -> str | None:
    """``sql`` with the text literal that is the word ``before`` (an id, a city: a value too
    rare to be listed) written as ``after``, or None where it has no such literal."""
    return replace_strings(
        sql, lambda literal: after if literal.this.casefold() == before.casefold() else None
    )


def _naming(tokens: list[str], value: str) -> list[str]:
    """The words of ``tokens`` that name ``value``: its own words, a word it starts ("foggy":
    fog, "euros": EUR), or a capitalised word its code abbreviates (Apple: AAPL, Texas: TX)."""
    own, folded = words(value), value.casefold()
    return [
        t
        for t in tokens
        if words(t) & own
        or (len(folded) >= 3 and t.casefold().startswith(folded))
        or (t[:1].isupper() and value.isupper() and t[:1] == value[:1] and abbreviates(value, t))
    ]


def _replace_text(sql: str, column: str, before: str, after: str) -> str | None:
    """``sql`` with the text ``before`` compared with ``column`` written ``after`` (lower-cased
    where the query compares it lower-cased), or None where it compares no such text."""

    def written(literal: exp.Literal) -> str | None:
        if literal.this.casefold() != before.casefold() or not _compared_with(literal, column):
            return None
        return after.casefold() if literal.this == before.casefold() != before else after

    return replace_strings(sql, written)


def _compared_with(literal: exp.Expression, column: str) -> bool:
    parent = literal.parent
    while isinstance(parent, (exp.Tuple, exp.Paren)):
        parent = parent.parent
    return parent is not None and any(
        c.name.casefold() == column.casefold() for c in parent.find_all(exp.Column)
    )


def _replace_number(sql: str, before: str, after: str) -> str | None:
    tree = sqlglot.parse_one(sql, read=DIALECT)
    hits = [lit for lit in tree.find_all(exp.Literal) if not lit.is_string and _same(lit.this, before)]
    for literal in hits:
        literal.replace(exp.Literal.number(after))
    return tree.sql(DIALECT) if len(hits) == 1 else None


def _same(a: str, b: str) -> bool:
    try:
        return float(a) == float(b)
    except ValueError:
        return False


def _carry_dates(sql: str, before: list[NamedDate], after: list[NamedDate]) -> str | None:
    """``sql`` with the one date the example question names written as the question's."""
    if len(before) != 1 or len(after) != 1:
        return None
    old, new = before[0], after[0]
    if (old.month is None) != (new.month is None) or (old.day is None) != (new.day is None):
        return None
    tree = sqlglot.parse_one(sql, read=DIALECT)
    changed = False
    parts = {exp.Year: (old.year, new.year), exp.Month: (old.month, new.month), exp.Day: (old.day, new.day)}
    for literal in list(tree.find_all(exp.Literal)):
        if literal.is_string:
            text = _iso_swap(literal.this, old, new)
            if text != literal.this:
                literal.replace(exp.Literal.string(text))
                changed = True
            continue
        compared = literal.parent
        other = None
        if isinstance(compared, (exp.EQ, exp.GT, exp.GTE, exp.LT, exp.LTE)):
            other = compared.this if compared.expression is literal else compared.expression
        for kind, (was, now) in parts.items():
            if isinstance(other, kind) and was is not None and _same(literal.this, str(was)):
                literal.replace(exp.Literal.number(now))
                changed = True
    return tree.sql(DIALECT) if changed else None


def _iso_swap(text: str, old: NamedDate, new: NamedDate) -> str:
    """An ISO date (or its year-month, or year) of ``old`` in ``text`` written as ``new``'s."""
    for fmt in ("{y:04d}-{m:02d}-{d:02d}", "{y:04d}-{m:02d}", "{y:04d}"):
        try:
            was = fmt.format(y=old.year, m=old.month or 1, d=old.day or 1)
            now = fmt.format(y=new.year, m=new.month or 1, d=new.day or 1)
        except (TypeError, ValueError):
            continue
        if was in text:
            return text.replace(was, now)
    return text


def _turn(sql: str, old: list[str], new: list[str]) -> str | None:
    """``sql`` turned round where the question says the other end (most -> least, above ->
    below): its sort order, ``max``/``min`` and comparisons; None when the words are not
    opposites."""
    side = [{0 if w in _OPPOSITES[0] or w in _ABOVE else 1 for w in words_} for words_ in (old, new)]
    if len(side[0]) != 1 or len(side[1]) != 1 or side[0] == side[1]:
        return None
    tree = sqlglot.parse_one(sql, read=DIALECT)
    changed = False
    for ordered in tree.find_all(exp.Ordered):
        ordered.set("desc", not ordered.args.get("desc"))
        changed = True
    for node in list(tree.find_all(exp.Max, exp.Min)):
        node.replace((exp.Min if isinstance(node, exp.Max) else exp.Max)(this=node.this))
        changed = True
    for compared in list(tree.find_all(*_TURNED)):
        compared.replace(_TURNED[type(compared)](this=compared.this, expression=compared.expression))
        changed = True
    return tree.sql(DIALECT) if changed else None


def _rename_column(sql: str, old: list[str], new: list[str], lake: Lake) -> str | None:
    """``sql`` reading the column ``new`` names in place of the one ``old`` names (of the tables
    it reads: the one column a word of ``old`` names and none of ``new``, and the one a word of
    ``new`` names and none of ``old``; "maximum" names temp_max), or None."""
    types = column_types(lake, sql)
    before = [c for c in types if _named_by(c, old) and not _named_by(c, new)]
    after = [c for c in types if _named_by(c, new) and not _named_by(c, old)]
    if len(before) != 1 or len(after) != 1:
        return None
    renamed = rename_identifier(sql, before[0], after[0])
    return renamed if renamed != sql else None


def _named_by(column: str, said: list[str]) -> bool:
    """A word of ``said`` is a word of ``column``'s name or starts with one ("maximum": max)."""
    said_words = words(" ".join(said))
    return any(
        w == part or (len(part) >= 3 and w.startswith(part)) for part in words(column) for w in said_words
    )
