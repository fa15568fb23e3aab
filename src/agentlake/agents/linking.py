"""Which of a lake's datasets a question is about: schema linking by the words they share.

A small model given ten tables' columns writes ``FROM weather`` for ``seattle_weather`` and
``gender`` for ``sex``; given the two tables a question is about, with their values and one
row, it writes what they hold. Each dataset is scored by the question's words it shares: its
name (strongest), its columns' names, and the listed values of its columns the question names;
the best few are the question's datasets. Words are compared lower-case, split on anything but
letters and digits, with a plural's ``s`` dropped. It owns value linking too: which listed
values a question names (``named_values``), the hint that passes them on with it, and whether
a query compares each (``missing_values``, ``unnamed_values``). It does not own the prompts
(``ask``, the graph's thinker) or the catalog text (``tools.datasets_text``).
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agentlake.agents.tools import listed_values
from agentlake.lake.rewrite import sql_literal
from agentlake.workforce.cities import US_STATES

if TYPE_CHECKING:
    from agentlake.lake import Lake

KEEP = 3
NAME_WEIGHT = 3.0
COLUMN_WEIGHT = 1.0
VALUE_WEIGHT = 4.0
# A column of state codes: at least this many of its listed values are codes of US_STATES.
STATE_CODES_MIN = 5
# Currencies by name (ISO 4217 codes): a question says "euros" where a column holds "EUR".
CURRENCIES = {
    "us dollar": "USD", "dollar": "USD", "euro": "EUR", "british pound": "GBP", "pound sterling": "GBP",
    "pound": "GBP", "japanese yen": "JPY", "yen": "JPY", "swiss franc": "CHF", "canadian dollar": "CAD",
    "australian dollar": "AUD", "chinese yuan": "CNY", "yuan": "CNY", "renminbi": "CNY",
    "indian rupee": "INR", "rupee": "INR", "mexican peso": "MXN", "swedish krona": "SEK",
}  # fmt: skip
# A column of currency codes: at least this many of its listed values are codes of CURRENCIES.
CURRENCY_CODES_MIN = 2
_CALENDAR = frozenset(name.casefold() for name in (*calendar.month_name, *calendar.day_name) if name)
_STOP = frozenset(
    "a an the of in on at to for by with from and or is are was were be been what which who whom how many "
    "much did do does there their this that these those as it its per each any all than most least".split()
)


def words(text: str) -> set[str]:
    """The words of ``text`` as linking compares them (see the module docstring)."""
    out = set()
    for word in re.findall(r"[a-z0-9]+", text.casefold().replace("_", " ")):
        if word in _STOP or len(word) < 2:
            continue
        if len(word) > 3 and word.endswith("ies"):
            word = word[:-3] + "y"
        elif len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        out.add(word)
    return out


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


def lake_columns(lake: Lake) -> list[str]:
    """The names of every column of the lake's datasets."""
    return [column for info in lake.datasets() for column, _ in info.columns]


def link_datasets(question: str, lake: Lake, *, keep: int = KEEP) -> list[str]:
    """The datasets ``question`` is most likely about, best first (at most ``keep``); every
    dataset, by name, when no word of the question names any."""
    said = words(question)
    listed = listed_values(lake)
    named = set(named_values(question, listed, lake_columns(lake)))
    scores: dict[str, float] = {}
    for info in lake.datasets():
        score = NAME_WEIGHT * len(said & words(info.name))
        score += COLUMN_WEIGHT * len(said & _union(words(column) for column, _ in info.columns))
        for (table, column), values in listed.items():
            if table == info.name:
                score += VALUE_WEIGHT * sum(1 for value in values if (column, value) in named)
        scores[info.name] = score
    ranked = sorted(scores, key=lambda name: (-scores[name], name))
    found = [name for name in ranked if scores[name] > 0][:keep]
    return found or sorted(scores)


def _union(sets: Iterable[set[str]]) -> set[str]:
    out: set[str] = set()
    for item in sets:
        out |= item
    return out


def named_values(
    question: str, listed: dict[tuple[str, str], list[str]], columns: Iterable[str] = ()
) -> list[tuple[str, str]]:
    """``(column, value)`` for each listed column value the question names, in the question's
    order: "welders" names role 'Welder'; a short code names it only written as listed ("OH",
    not "in" for IN, not the C of "C0071"), and not where it is part of a table's name the
    question says ("LA riots" for la_riots) nor of a column's name of ``columns`` ("shipped" in
    "no shipped date" for shipped_date, "retail" in "retail trade jobs" for retail_trade); a US
    state's name names its code in a column of state codes ("Texas": 'TX'); a value inside a
    longer named one ("Truck Driver" in "CDL-A Truck Driver") is left out."""
    found: dict[tuple[str, str], int] = {}
    said = words(question)
    named_tables = {table for table, _ in listed if len(words(table)) > 1 and words(table) <= said}
    in_table_names = _union(words(table) for table in named_tables)
    for (_, column), values in listed.items():
        for value in values:
            if value.isupper() and len(value) <= 3:
                if value.casefold() in in_table_names:
                    continue
                match = re.search(rf"(?<![A-Za-z0-9]){re.escape(value)}(?![A-Za-z0-9])", question)
            else:
                # "welders" names 'Welder', "foggy" and "rainy" name 'fog' and 'rain'.
                match = re.search(rf"\b{re.escape(value)}(?:s|es|y|[a-z]y)?\b", question, re.IGNORECASE)
            if match and (column, value) not in found:
                found[(column, value)] = match.start()
        codes = set(values) & set(US_STATES.values())
        if state_codes(values):
            for name, code in US_STATES.items():
                if words(name) <= in_table_names:
                    continue  # "Iowa electricity" names the table iowa_electricity, not IA
                match = re.search(rf"\b{re.escape(name)}\b", question, re.IGNORECASE)
                if match and code in codes and (column, code) not in found:
                    found[(column, code)] = match.start()
        _name_codes(question, column, values, in_table_names, found)
        _name_genders(question, column, values, found)
    # A value written in several cases is named in all of them ("web": 'WEB', 'Web', 'web').
    for (_, column), values in listed.items():
        for value in values:
            twin = next(
                (at for (c, v), at in found.items() if c == column and v.casefold() == value.casefold()), None
            )
            if twin is not None and (column, value) not in found:
                found[(column, value)] = twin
    spans = _column_spans(question, columns)
    kept = [
        key
        for key in found
        if not any(
            key[0] == other[0] and len(other[1]) > len(key[1]) and key[1].casefold() in other[1].casefold()
            for other in found
        )
        and not any(start <= found[key] < end for start, end in spans)
    ]
    return sorted(kept, key=lambda key: (found[key], key[1]))


# The words that name a gender a column writes as Male/Female (or M/F).
_GENDERS = {
    "male": re.compile(r"\b(?:men|man|males?|boys?)\b", re.IGNORECASE),
    "female": re.compile(r"\b(?:women|woman|females?|girls?)\b", re.IGNORECASE),
}


def state_codes(values: list[str]) -> bool:
    """Whether a column's listed ``values`` are US states' codes (at least ``STATE_CODES_MIN``)."""
    return len(set(values) & set(US_STATES.values())) >= STATE_CODES_MIN


def _name_genders(question: str, column: str, values: list[str], found: dict[tuple[str, str], int]) -> None:
    """ "white men" names 'Male' of a column that holds Male and Female (or M and F)."""
    written = {value.casefold(): value for value in values}
    if not ({"male", "female"} <= set(written) or {"m", "f"} <= set(written)):
        return
    for gender, pattern in _GENDERS.items():
        value = written.get(gender) or written.get(gender[0])
        match = pattern.search(question)
        if match and value and (column, value) not in found:
            found[(column, value)] = match.start()


def outside_column_names(question: str, columns: Iterable[str]) -> str:
    """``question`` with the names of columns it says blanked out ("no shipped date" says no
    value 'shipped')."""
    for start, end in _column_spans(question, columns):
        question = question[:start] + " " * (end - start) + question[end:]
    return question


def _column_spans(question: str, columns: Iterable[str]) -> list[tuple[int, int]]:
    """Where ``question`` says the name of a column of two words or more ("shipped date")."""
    spans = []
    for name in set(columns):
        parts = [part for part in re.split(r"[\W_]+", name) if part]
        if len(parts) >= 2:
            pattern = r"\b" + r"[\s_-]+".join(re.escape(part) for part in parts) + r"\b"
            spans += [(m.start(), m.end()) for m in re.finditer(pattern, question, re.IGNORECASE)]
    return spans


def _name_codes(
    question: str, column: str, values: list[str], in_table_names: set[str], found: dict[tuple[str, str], int]
) -> None:
    """Into ``found``: the codes of a column of currency codes the question names by name
    ("euros": 'EUR', "US dollars": 'USD'), and in a column of short upper-case codes (not state
    codes) the one code a capitalised word abbreviates, its letters in order from the first
    ("Apple's": 'AAPL', "Microsoft": 'MSFT'); a word at the question's start, or the name of a
    month or a weekday, is no name."""
    codes = set(values)
    if len(codes & set(CURRENCIES.values())) >= CURRENCY_CODES_MIN:
        for name, code in sorted(CURRENCIES.items(), key=lambda item: -len(item[0])):
            match = re.search(rf"\b{re.escape(name)}s?\b", question, re.IGNORECASE)
            if match and code in codes and not any(c == column and v == code for c, v in found):
                found[(column, code)] = match.start()
        return
    if len(codes & set(US_STATES.values())) >= STATE_CODES_MIN:
        return
    if not values or not all(v.isalpha() and v.isupper() and 2 <= len(v) <= 5 for v in values):
        return
    for match in re.finditer(r"\b[A-Z][a-z]{2,}\b", question):
        word = match.group(0)
        if match.start() == 0 or word.casefold() in in_table_names or word.casefold() in _CALENDAR:
            continue  # "April" is a month, not AAPL
        hits = [
            code
            for code in values
            if code[0] == word[0] and len(word) > len(code) and abbreviates(code, word)
        ]
        if len(hits) == 1 and (column, hits[0]) not in found:
            found[(column, hits[0])] = match.start()


def abbreviates(code: str, word: str) -> bool:
    """``code``'s letters, a doubled one once ('AAPL': A, P, L), are ``word``'s in order."""
    letters = iter(word.upper())
    collapsed = [letter for i, letter in enumerate(code) if i == 0 or letter != code[i - 1]]
    return all(letter in letters for letter in collapsed)


def _cased(named: list[tuple[str, str]]) -> list[tuple[str, list[str]]]:
    """``named`` grouped by column and value ignoring case, in order: ``(column, [values])``."""
    groups: dict[tuple[str, str], list[str]] = {}
    for column, value in named:
        groups.setdefault((column, value.casefold()), []).append(value)
    return [(column, values) for (column, _), values in groups.items()]


def _filter_text(column: str, values: list[str]) -> str:
    """How a named value is filtered on: ``state = 'OH'``, or for a value written in several
    cases ``lower(channel) = 'web'``."""
    if len(values) == 1:
        return f"{column} = '{values[0]}'"
    return f"lower({column}) = '{values[0].casefold()}'"


def named_values_hint(
    named: list[tuple[str, str]], listed: dict[tuple[str, str], list[str]], question: str = ""
) -> str:
    """The line given to a model after a question that names ``named`` values (empty when it
    names none): each as a filter, and the tables in which all of them are column values (only
    those the ``question`` names, when it names some: "workers in CA" is not about clients in
    CA). Constant for a given question, so a worked example can show it too."""
    if not named:
        return ""
    values = "; ".join(_filter_text(column, cased) for column, cased in _cased(named))
    tables = [{table for (table, col), found in listed.items() if col == column and value in found}
              for column, value in named]  # fmt: skip
    common = sorted(set.intersection(*tables))
    asked = [table for table in common if re.search(rf"\b{re.escape(table.rstrip('s'))}s?\b", question, re.I)]
    common = asked or common
    where = f" (columns of {' and of '.join(common)})" if common else ""
    return f"\n\nValues the question names (filter on each, exactly as written): {values}{where}"


def unnamed_values(
    sql: str, question: str, named: list[tuple[str, str]], listed: dict[tuple[str, str], list[str]]
) -> str | None:
    """The listed values ``sql`` filters on that the question neither names nor contains
    (``"state = 'TX'"``: a small model copies a worked example's filter), or None."""
    text = question.lower()
    extra = {(column, value) for (_, column), values in listed.items() for value in values
             if (column, value) not in named and not _says(text, value.lower()) and compares(sql, column, value)}  # fmt: skip
    return " and ".join(f"{column} = '{value}'" for column, value in sorted(extra)) or None


def _says(text: str, value: str) -> bool:
    """Whether ``text`` holds ``value``: a value of one or two characters as a word of its own
    (the status 'S' is not in "shipped"), a longer one anywhere ("web" in "website")."""
    if len(value) > 2:
        return value in text
    return re.search(rf"(?<![a-z0-9]){re.escape(value)}(?![a-z0-9])", text) is not None


def missing_values(sql: str, named: list[tuple[str, str]]) -> str | None:
    """What ``sql`` leaves out of the values a question names (``"role = 'Welder'"``), or None
    when it compares every one."""
    missing = [
        (column, values)
        for column, values in _cased(named)
        if not (
            compares_folded(sql, column, values[0]) if len(values) > 1 else compares(sql, column, values[0])
        )
    ]
    return " and ".join(_filter_text(column, values) for column, values in missing) or None


def compares_folded(sql: str, column: str, value: str) -> bool:
    """``sql`` compares ``column`` with ``value`` ignoring case: ``lower(channel) = 'web'``,
    ``upper(channel) = 'WEB'``, ``channel ILIKE 'web'``."""
    for fold, text in (("lower", value.casefold()), ("upper", value.upper())):
        quoted = sql_literal(text)
        if re.search(rf"\b{fold}\s*\(\s*\"?{re.escape(column)}\"?\s*\)\s*=\s*{re.escape(quoted)}", sql, re.I):
            return True
    quoted = sql_literal(value)
    return re.search(rf"\b{re.escape(column)}\"?\s+ilike\s+{re.escape(quoted)}", sql, re.I) is not None


def compares(sql: str, column: str, value: str) -> bool:
    """``sql`` compares ``column`` with ``value``: ``state = 'OH'``, ``w."state" IN ('IN', 'OH')``,
    ``role LIKE 'Welder'`` (not ``city = 'OH'``)."""
    quoted = sql_literal(value)
    pattern = rf"\b{re.escape(column)}\"?\s*(?:=|==|i?like|in\s*\([^)]*?)\s*{re.escape(quoted)}"
    return re.search(pattern, sql, re.IGNORECASE) is not None


# Shared column names that join two tables (an id or a code), not any two columns alike.
KEYISH = re.compile(r"(?:^|_)(?:id|code|key|no|number)$", re.IGNORECASE)


@dataclass(frozen=True)
class Join:
    """How two tables join: ``left.left_column = right.right_column``; ``lookup``: ``right``
    is a lookup table that says what each code of ``left_column`` means."""

    left: str
    left_column: str
    right: str
    right_column: str
    lookup: bool = False

    def hint(self) -> str:
        text = f"{self.left}.{self.left_column} = {self.right}.{self.right_column}"
        return f"{text} ({self.right} says what each code means)" if self.lookup else text

    def joins(self, first: str, second: str) -> bool:
        return {self.left, self.right} == {first, second}

    def column_of(self, table: str) -> str:
        return self.left_column if table == self.left else self.right_column


def joins(lake: Lake, tables: list[str]) -> list[Join]:
    """How ``tables`` join: a key column two of them share by name (``orders.customer_id =
    customers.customer_id``), and a column whose values are the codes a lookup table explains
    (``orders.status = order_statuses.code``: every value of the one is a value of the other,
    and the other has one row per code); each once."""
    infos = {info.name: info for info in lake.datasets()}
    chosen = [name for name in tables if name in infos]
    found: list[Join] = []
    for i, first in enumerate(chosen):
        for second in chosen[i + 1 :]:
            shared = {c for c, _ in infos[first].columns} & {c for c, _ in infos[second].columns}
            found += [Join(first, c, second, c) for c in sorted(shared) if KEYISH.search(c)]
    listed = listed_values(lake)
    for (table, column), values in listed.items():
        if table not in chosen:
            continue
        for (lookup, code), codes in listed.items():
            lookup_rows = infos[lookup].row_count if lookup in infos else -1
            if lookup == table or lookup_rows != len(codes) or infos[table].row_count <= lookup_rows:
                continue
            if len(codes) >= 2 and set(values) <= set(codes):
                found.append(Join(table, column, lookup, code, lookup=True))
    return list(dict.fromkeys(found))


def join_hints(lake: Lake, tables: list[str]) -> list[str]:
    """``joins`` of ``tables`` as a model reads them (``orders.status = order_statuses.code
    (order_statuses says what each code means)``)."""
    return [join.hint() for join in joins(lake, tables)]
