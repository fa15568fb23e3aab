"""Checks and fixes, for a query that ran, of the numbers a question compares a column with.

Owns the column a question names as its measure and three kinds of failure around numbers:

- a threshold the question puts on the measure ("customers with more than 4000 loyalty
  points", "days the wind speed was above 7", "latitude between 40 and 50") that the query
  does not write, writes on another column ("temp_max > 7" for the wind) or with another
  comparison: fixed by comparing the measure as the question says, in place of the wrong
  comparisons;
- a column compared with a number the question never states (``wind = 0``, ``nonfarm = 1``),
  which a small model writes as a filter of its own: dropped when the question does not name
  the column, or when the query found nothing with it;
- a column compared with the name of another column as a text value (``weather = 'wind'`` for
  "the wind speed"), a value it does not hold: dropped;
- groups ranked by their number of rows where the question ranks them by an amount ("In which
  year did Iowa generate the most electricity?": ``ORDER BY count(*)``): ranked by the sum of
  the measure (the column the question names, else the one numeric column the table has);
- a date filter where the question names no date at all ("In how many months was Amazon's
  price below 50?" filtered on 2008), or a filter ``col IN (SELECT ...)`` reading only tables
  the question does not name: dropped.

Numbers in words ("exactly one item", "no precipitation") count as stated. Like
``agents.fixes``, it reads and writes filters as trees (``lake.rewrite``) and neither runs
queries nor decides when to fix (``agents.ask``).
"""

from __future__ import annotations

import calendar
import re
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from agentlake.agents.fix_dates import is_date, quote
from agentlake.agents.linking import KEYISH, words
from agentlake.lake.repair import NUMERIC_TYPE, column_types
from agentlake.lake.rewrite import (
    add_filters,
    comparisons,
    conjuncts_of,
    drop_filters,
    parse_select,
    replace_conjuncts,
    tables_read,
)

if TYPE_CHECKING:
    from agentlake.lake import Lake

_WORDS = "zero one two three four five six seven eight nine ten eleven twelve".split()
_NUMBER = rf"(-?\d+(?:\.\d+)?|{'|'.join(_WORDS)})"
# The words that put a bound on a number, and the comparison each means.
_BOUNDS = {
    ">": r"more than|greater than|larger than|higher than|over|above|exceeding|north of|east of",
    ">=": r"at least|no less than|no fewer than",
    "<": r"less than|fewer than|lower than|smaller than|under|below|south of|west of",
    "<=": r"at most|no more than",
    "=": r"exactly",
}
_BOUND = [
    # "west of longitude -150": the column's name may stand between the words and the number.
    # "more than 50 per item" bounds a ratio, not a column: no bound.
    (
        op,
        re.compile(
            rf"\b(?:{phrases})\s+(?:[a-z_]+\s+)?\$?{_NUMBER}(?![\d.])(?!\s+(?:per|a|an|each)\s)",
            re.IGNORECASE,
        ),
    )
    for op, phrases in _BOUNDS.items()
]
_OVER_YEAR = re.compile(r"(?:over|during)\s+(?:1[89]\d\d|20\d\d)$", re.IGNORECASE)
_BETWEEN = re.compile(rf"\bbetween\s+\$?{_NUMBER}\s+and\s+\$?{_NUMBER}(?![\d.])", re.IGNORECASE)
_NUMBER_WORDS = {
    word: index
    for index, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
        "sixteen seventeen eighteen nineteen twenty".split()
    )
}
_NO = re.compile(r"\b(?:no|none|without|never)\b", re.IGNORECASE)
_STATED = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\d])")


# Units a column's name may end with, by the word a question uses for them ("grams": body_mass_g).
UNITS = {
    "g": "gram", "kg": "kilogram", "mg": "milligram", "mm": "millimeter", "cm": "centimeter",
    "km": "kilometer", "usd": "dollar", "pct": "percent", "mph": "mile", "kwh": "kilowatt",
}  # fmt: skip
# Words that say a measure without its column's name ("weighed": mass; "oldest": age).
_IMPLIED = {
    "weigh": {"mass", "weight"}, "weighed": {"mass", "weight"}, "weighing": {"mass", "weight"},
    "heavy": {"mass", "weight"}, "heavier": {"mass", "weight"}, "heaviest": {"mass", "weight"},
    "light": {"mass", "weight"}, "lighter": {"mass", "weight"}, "lightest": {"mass", "weight"},
    "old": {"age"}, "older": {"age"}, "oldest": {"age"}, "young": {"age"}, "younger": {"age"},
    "youngest": {"age"}, "aged": {"age"},
    "long": {"length"}, "longer": {"length"}, "longest": {"length"},
    "short": {"length"}, "shorter": {"length"}, "shortest": {"length"},
    "tall": {"height"}, "taller": {"height"}, "tallest": {"height"},
    "deep": {"depth"}, "deeper": {"depth"}, "deepest": {"depth"},
    "wide": {"width"}, "wider": {"width"}, "widest": {"width"},
    "wettest": {"precipitation"}, "rainiest": {"precipitation"},
    "generate": {"generation"}, "generated": {"generation"}, "generating": {"generation"},
    "produce": {"production"}, "produced": {"production"}, "earn": {"earnings"}, "earned": {"earnings"},
    "cost": {"price"}, "costly": {"price"}, "expensive": {"price"}, "cheap": {"price"}, "cheapest": {"price"},
}  # fmt: skip
_UNIT_WORDS = {word: unit for unit, word in UNITS.items()}


def measure_words(text: str) -> set[str]:
    """The words ``text`` says a measure with: its own (``linking.words``), those its words
    imply ("weighed": mass, weight) and the unit names it says as a column writes them
    ("grams": g)."""
    said = words(text)
    out = set(said)
    for word in said:
        out |= _IMPLIED.get(word, set())
        if word in _UNIT_WORDS:
            out.add(_UNIT_WORDS[word])
    return out


def says_column(said: set[str], column: str) -> bool:
    """Whether ``said`` (``measure_words``) names ``column``: each of its name's words but a
    unit said, or abbreviating a word said ("temp" for temperature, "max" for maximum)."""
    own = [word for word in words(column) if word not in UNITS]
    return bool(own) and all(
        word in said or (len(word) >= 3 and any(s.startswith(word) for s in said)) for word in own
    )


def measure_columns(types: dict[str, str]) -> list[str]:
    """The columns of ``types`` a measure may be: numeric, and not a key."""
    return [
        column for column, kind in types.items() if NUMERIC_TYPE.search(kind) and not KEYISH.search(column)
    ]


def named_measure(question: str, types: dict[str, str]) -> str | None:
    """The one numeric column (not a key) all of whose name's words ``question`` says
    ("the average number of manufacturing jobs": manufacturing; "body mass": body_mass_g; "the
    maximum temperature": temp_max; "shortest flippers": flipper_length_mm); of several, the
    one whose words hold every other's ("the change in nonfarm jobs": nonfarm_change, not
    nonfarm); else the one column whose words or unit the question's words imply ("weighed
    at least 4000 grams": body_mass_g); None when it names none or several apart."""
    said = measure_words(question)
    numeric = measure_columns(types)
    named = [column for column in numeric if says_column(said, column)]
    widest = [column for column in named if all(words(other) <= words(column) for other in named)]
    if len(widest) == 1:
        return widest[0]
    if named:
        return None
    implied = said - words(question)
    hinted = [column for column in numeric if words(column) & implied]
    return hinted[0] if len(hinted) == 1 else None


def bound(question: str) -> tuple[str, str] | None:
    """The one bound ``question`` puts on a number: ``(">", "4000")`` for "more than 4000",
    ``("BETWEEN", "20 AND 30")`` for "between 20 and 30"; None for none or several."""
    spans = [(m.span(), "BETWEEN", f"{m.group(1)} AND {m.group(2)}") for m in _BETWEEN.finditer(question)]
    spans += [
        (m.span(), op, digits(m.group(1)))
        for op, pattern in _BOUND
        for m in pattern.finditer(question)
        if not _OVER_YEAR.match(m.group(0))  # "the change over 2010" is a time, not a bound
    ]
    # "no more than 5" is read once, as at most, not also as more than.
    found = [
        (op, number)
        for (start, end), op, number in spans
        if not any(s <= start and end <= e and (s, e) != (start, end) for (s, e), _, _ in spans)
    ]
    return found[0] if len(found) == 1 else None


def digits(number: str) -> str:
    """``number`` in digits: "four" -> "4"; a number in digits as it is."""
    return str(_WORDS.index(number.casefold())) if number.casefold() in _WORDS else number


def _number(node: exp.Expression | None) -> str | None:
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        return "-" + str(node.this.this)
    if isinstance(node, exp.Literal) and not node.is_string:
        return str(node.this)
    return None


def _compared_column(node: exp.Expression) -> exp.Column | None:
    """The plain column a conjunct compares (through a CAST or TRY_CAST too), or None."""
    target = node.this if isinstance(node, (exp.Cast, exp.TryCast)) else node
    return target if isinstance(target, exp.Column) else None


_OPS: dict[type[exp.Expression], str] = {
    exp.GT: ">",
    exp.GTE: ">=",
    exp.LT: "<",
    exp.LTE: "<=",
    exp.EQ: "=",
}
_FLIPPED = {">": "<", ">=": "<=", "<": ">", "<=": ">=", "=": "="}


def numeric_filters(sql: str) -> list[tuple[exp.Expression, str, str, str]]:
    """The conjuncts of ``sql``'s WHERE that compare a plain column with a number: each as the
    conjunct, the column's name, the comparison (``>``, ``BETWEEN``, ...) and the number(s)."""
    found: list[tuple[exp.Expression, str, str, str]] = []
    for node in conjuncts_of(sql):
        if isinstance(node, exp.Between):
            column, low, high = (
                _compared_column(node.this),
                _number(node.args.get("low")),
                _number(node.args.get("high")),
            )
            if column is not None and low is not None and high is not None:
                found.append((node, column.name, "BETWEEN", f"{low} AND {high}"))
            continue
        op = _OPS.get(type(node))
        if op is None:
            continue
        column, number = _compared_column(node.this), _number(node.expression)
        if column is None:
            column, number, op = _compared_column(node.expression), _number(node.this), _FLIPPED[op]
        if column is not None and number is not None:
            found.append((node, column.name, op, number))
    return found


def _same(a: str, b: str) -> bool:
    try:
        return all(float(x) == float(y) for x, y in zip(a.split(" AND "), b.split(" AND "), strict=True))
    except ValueError:
        return False


def uncompared(sql: str, question: str, lake: Lake) -> tuple[str, str, str] | None:
    """The measure ``question`` bounds, the comparison and the number(s), when ``sql`` does not
    compare that measure so ("more than 4000 loyalty points" without ``loyalty_points > 4000``);
    else None."""
    said = bound(question)
    if said is None:
        return None
    types = column_types(lake, sql)
    measure = named_measure(question, types)
    if measure is None:
        return None
    op, number = said
    filters = numeric_filters(sql)
    written = [(op_, n) for _, column, op_, n in filters if column.casefold() == measure.casefold()]
    if any(o == op and _same(n, number) for o, n in written):
        return None
    # The number compared as said on a column the question half names ("nonfarm jobs grow by
    # more than 300": nonfarm_change) is the model's reading, not a slip.
    said_words = words(question)
    if any(o == op and _same(n, number) and words(column) & said_words for _, column, o, n in filters):
        return None
    return measure, op, number


def compare_fix(sql: str, question: str, lake: Lake) -> tuple[str, str] | None:
    """``sql`` comparing the measure as the question bounds it, in place of its comparisons of
    that measure and of the bound's number on other columns; with what was done."""
    found = uncompared(sql, question, lake)
    if found is None or len(tables_read(sql)) != 1:
        return None
    measure, op, number = found
    condition = f"{quote(measure)} {op} {number}"
    wrong = {
        node.sql("duckdb")
        for node, column, _, n in numeric_filters(sql)
        if column.casefold() == measure.casefold() or _same(n, number)
    }
    fixed = (
        replace_conjuncts(sql, lambda node: node.sql("duckdb") in wrong, [condition])
        if wrong
        else add_filters(sql, [condition])
    )
    return (fixed, f"compared {condition}, as the question says") if fixed else None


def stated(question: str) -> set[float]:
    """The numbers ``question`` states, in digits or in words ("one", "no": 0)."""
    numbers = {float(match) for match in _STATED.findall(question)}
    numbers |= {
        float(_NUMBER_WORDS[w]) for w in re.findall(r"[a-z]+", question.casefold()) if w in _NUMBER_WORDS
    }
    if _NO.search(question):
        numbers.add(0.0)
    return numbers


def unstated_numbers(sql: str, question: str, rows: list[object]) -> list[str]:
    """The conjuncts of ``sql`` that hold a column equal to a number the question never
    states (``wind = 0``), where the question does not name that column or nothing was found."""
    numbers = stated(question)
    said = words(question)
    empty = not rows or all(value is None for row in rows for value in row)  # type: ignore[attr-defined]
    return [
        node.sql("duckdb")
        for node, column, op, number in numeric_filters(sql)
        if op == "=" and float(number) not in numbers and (empty or not words(column) <= said)
    ]


def unstated_fix(sql: str, question: str, rows: list[object]) -> tuple[str, str] | None:
    """``sql`` without the filters ``unstated_numbers`` finds; with what was done."""
    dropped = unstated_numbers(sql, question, rows)
    if not dropped:
        return None
    fixed = replace_conjuncts(sql, lambda node: node.sql("duckdb") in dropped, [])
    return (fixed, f"dropped {', '.join(dropped)}: the question states no such number") if fixed else None


def column_values(sql: str, lake: Lake, listed: dict[tuple[str, str], list[str]]) -> list[str]:
    """The text comparisons of ``sql`` whose value is the name of another column of a table it
    reads and not a value the compared column holds (``weather = 'wind'``)."""
    names = {frozenset(words(column)): column for column in column_types(lake, sql)}
    read = {table.casefold() for table in tables_read(sql)}
    held = {
        column.casefold(): values for (table, column), values in listed.items() if table.casefold() in read
    }
    found = []
    for comparison in comparisons(sql):
        values = held.get(comparison.column.casefold())
        if values is None or comparison.value in values or not words(comparison.value):
            continue
        other = names.get(frozenset(words(comparison.value)))
        if other is not None and other.casefold() != comparison.column.casefold():
            found.append(comparison.sql)
    return found


def column_value_fix(
    sql: str, lake: Lake, listed: dict[tuple[str, str], list[str]]
) -> tuple[str, str] | None:
    """``sql`` without the comparisons ``column_values`` finds; with what was done."""
    found = column_values(sql, lake, listed)
    fixed = drop_filters(sql, lambda c: c.sql in found) if found else None
    return (fixed, f"dropped {', '.join(found)}: that value is the name of a column") if fixed else None


# What a question says of a time: a year, a month or weekday name, or a relative time.
_SAYS_TIME = re.compile(
    r"\b(?:1[89]\d\d|20\d\d|today|yesterday|tomorrow|ago|recent\w*|last|this|since|before|after|current"
    r"|latest|earliest|first|during|"
    + "|".join(
        name.casefold() for name in (*calendar.month_name, *calendar.month_abbr, *calendar.day_name) if name
    )
    + r")\b",
    re.IGNORECASE,
)


def unsaid_filters(sql: str, question: str, lake: Lake) -> list[str]:
    """The conjuncts of ``sql``'s WHERE the question gives no ground for: a filter on a date
    column where the question says no time at all, and ``col IN (SELECT ...)`` over tables none
    of whose names the question says."""
    types = {name.casefold(): kind for name, kind in column_types(lake, sql).items()}
    said = words(question)
    timeless = _SAYS_TIME.search(question) is None
    found = []
    for node in conjuncts_of(sql):
        query = node.args.get("query") if isinstance(node, exp.In) else None
        if query is not None:
            tables = [table.name for table in query.find_all(exp.Table)]
            if tables and not any(words(table) & said for table in tables):
                found.append(node.sql("duckdb"))
            continue
        # One date column against a date or a number ("date BETWEEN '2008-01-01' AND ...",
        # "year(date) = 2008"): not a missing date (IS NULL), nor days between two dates.
        columns = {column.name.casefold() for column in node.find_all(exp.Column)}
        dated = [column for column in columns if is_date(types.get(column, ""))]
        timed = any(re.search(r"\d", str(literal.this)) for literal in node.find_all(exp.Literal))
        if timeless and len(dated) == 1 and len(columns) == 1 and timed:
            found.append(node.sql("duckdb"))
    return found


def unsaid_filter_fix(sql: str, question: str, lake: Lake) -> tuple[str, str] | None:
    """``sql`` without the conjuncts ``unsaid_filters`` finds; with what was done."""
    dropped = unsaid_filters(sql, question, lake)
    if not dropped:
        return None
    fixed = replace_conjuncts(sql, lambda node: node.sql("duckdb") in dropped, [])
    return (fixed, f"dropped {', '.join(dropped)}: the question says nothing of it") if fixed else None


_RANKED = re.compile(
    r"\b(?:most|least|fewest|highest|lowest|largest|smallest)\s+((?:[a-z]+\s*){1,3})", re.IGNORECASE
)
# What is ranked by its number of rows: "the most common weather", "the most rows".
_COUNTED = frozenset(
    w
    for word in "common frequent frequently often popular times rows records entries number".split()
    for w in words(word)
)


def counted_amount(sql: str, question: str, lake: Lake) -> str | None:
    """The measure ``question`` ranks groups by when ``sql`` ranks them by their number of rows
    instead (``ORDER BY count(*)`` for "the most electricity"), else None: not when the ranked
    noun is what the rows are (a table's name: "the most airports") or a frequency ("most
    common")."""
    match = _RANKED.search(question)
    tree = parse_select(sql)
    if match is None or tree is None or not tree.args.get("order"):
        return None
    # "the most wholesale customers": the phrase's words, any of which may be the rows' name.
    phrase = [words(word) for word in match.group(1).split()]
    tables = [words(info.name) for info in lake.datasets()]
    if any(said & _COUNTED or said in tables for said in phrase):
        return None
    if not any(isinstance(count.this, exp.Star) for count in tree.find_all(exp.Count)):
        return None
    # Not what the groups are ("In which year": year).
    grouped = {
        column.name.casefold() for group in tree.find_all(exp.Group) for column in group.find_all(exp.Column)
    }
    types = {
        column: kind for column, kind in column_types(lake, sql).items() if column.casefold() not in grouped
    }
    measure = named_measure(question, types)
    if measure is None:
        numeric = measure_columns(types)
        measure = numeric[0] if len(numeric) == 1 else None
    return measure


def amount_fix(sql: str, question: str, lake: Lake) -> tuple[str, str] | None:
    """``sql`` ranking by the sum of the measure ``counted_amount`` finds in place of the number
    of rows; with what was done."""
    measure = counted_amount(sql, question, lake)
    tree = parse_select(sql)
    if measure is None or tree is None:
        return None
    for count in list(tree.find_all(exp.Count)):
        if isinstance(count.this, exp.Star):
            count.replace(exp.Sum(this=exp.column(measure, quoted=True)))
    return tree.sql("duckdb"), f"ranked by the sum of {measure}, the amount the question ranks by"


# "On average, how many days did it take": an average of days, not a count of them.
_AVERAGE = re.compile(r"\b(?:average|mean|median|typical)\b", re.IGNORECASE)
_HOW_MANY_PERIODS = re.compile(
    r"\bhow many (?:different )?(days|weeks|months|years|times|rows|records)\b", re.IGNORECASE
)


def summed_count(sql: str, question: str, lake: Lake) -> str | None:
    """The periods (or rows) "how many days/months/..." counts when ``sql`` sums or averages a
    column instead ("In how many months was the price between 20 and 30?": ``sum(price)``), and
    the tables have no column of that name; else None."""
    match = None if _AVERAGE.search(question) else _HOW_MANY_PERIODS.search(question)
    tree = parse_select(sql)
    if match is None or tree is None or any(isinstance(c.this, exp.Star) for c in tree.find_all(exp.Count)):
        return None
    said = words(match.group(1))
    if any(words(column) & said for column in column_types(lake, sql)):
        return None
    return match.group(1) if list(tree.find_all(exp.Sum, exp.Avg)) else None


def count_fix(sql: str, question: str, lake: Lake) -> tuple[str, str] | None:
    """``sql`` counting rows where it summed or averaged, for "how many <periods>"."""
    periods = summed_count(sql, question, lake)
    tree = parse_select(sql)
    if periods is None or tree is None:
        return None
    for node in list(tree.find_all(exp.Sum, exp.Avg)):
        node.replace(exp.Count(this=exp.Star()))
    return tree.sql("duckdb"), f"counted the rows: the question asks how many {periods}"


COMPARE_KINDS = frozenset({"unsaidfilter", "bound", "unstated", "columnvalue", "amount", "periodcount"})


def compare_problems(
    sql: str, question: str, lake: Lake, rows: list[Any], listed: dict[tuple[str, str], list[str]]
) -> list[tuple[str, str]]:
    """This module's problems of ``sql`` (which returned ``rows``), as ``agents.fixes.find_problems``
    lists them: each kind (one of ``COMPARE_KINDS``) and what to tell the model."""
    found = []
    if unsaid := unsaid_filters(sql, question, lake):
        found.append(("unsaidfilter", f"filters {', '.join(unsaid)}, which the question says nothing of"))
    if bounded := uncompared(sql, question, lake):
        found.append(("bound", f"does not compare {' '.join(bounded)}, as the question says"))
    if unstated := unstated_numbers(sql, question, rows):
        found.append(("unstated", f"filters {', '.join(unstated)}, a number the question does not state"))
    if as_values := column_values(sql, lake, listed):
        found.append(("columnvalue", f"compares {', '.join(as_values)}, the name of a column, as a value"))
    if periods := summed_count(sql, question, lake):
        found.append(("periodcount", f"sums or averages, but the question asks how many {periods}"))
    if amount := counted_amount(sql, question, lake):
        found.append(("amount", f"ranks by the number of rows, but the question ranks by {amount}"))
    return found


def fix_compared(
    sql: str,
    kind: str,
    question: str,
    lake: Lake,
    rows: list[Any] | None,
    listed: dict[tuple[str, str], list[str]],
) -> tuple[str, str] | None:
    """``sql`` with the fix of its problem ``kind`` (one of ``COMPARE_KINDS``) and what was
    done, or None. ``rows``: what it returned, when known (unknown: taken as found)."""
    if kind == "unsaidfilter":
        return unsaid_filter_fix(sql, question, lake)
    if kind == "bound":
        return compare_fix(sql, question, lake)
    if kind == "unstated":
        return unstated_fix(sql, question, rows or [(1,)])
    if kind == "amount":
        return amount_fix(sql, question, lake)
    if kind == "periodcount":
        return count_fix(sql, question, lake)
    return column_value_fix(sql, lake, listed) if kind == "columnvalue" else None
