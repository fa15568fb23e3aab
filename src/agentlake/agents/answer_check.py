"""Whether a written answer states the one value its query returned, and code's answer when not.

A small model writing the answer from a one-value result sometimes states another number than
the evidence's: "12 years old" for ``min(age) = 15``, "566,750" for 56675, a run of zeros for an
empty sum, "2010-01-01" for "in which year". Code reads the answer's numbers the way a reader
does (``questions.judge``: citations, dates, ordinals and the question's own numbers set
aside) and, when one of them is not the value as rounded, or a text value is not named, the
answer is written by code from the value itself.

A date answering "which year" (or "what year") is shown as its year, in the evidence and in
code's answer. It neither runs queries nor calls models (``agents.ask``).
"""

from __future__ import annotations

import datetime
import math
import re
from typing import Any

from agentlake.questions.judge import judge_text, stated_numbers

_WHICH_YEAR = re.compile(r"\b(?:which|what) year\b", re.IGNORECASE)
_DECIMALS = 4


def one_value(rows: list[Any]) -> Any | None:
    """The value of a result of one row of one column, or None (several, or empty)."""
    if len(rows) == 1 and len(rows[0]) == 1:
        return rows[0][0]
    return None


def shown(value: Any, question: str) -> str:
    """``value`` as an answer writes it: a date's year for "which year", a float to at most
    four decimals (float noise dropped), anything else as it is."""
    if isinstance(value, datetime.date) and _WHICH_YEAR.search(question):
        return str(value.year)
    if isinstance(value, float) and math.isfinite(value):
        text = f"{round(value, _DECIMALS):.{_DECIMALS}f}".rstrip("0").rstrip(".")
        return text if text not in ("-0", "") else "0"
    return str(value)


def _rounds_to(text: str, stated: float, value: float) -> bool:
    """``stated``, written as ``text``, is ``value`` rounded to the decimals ``text`` shows."""
    decimals = len(text.split(".", 1)[1]) if "." in text else 0
    return abs(stated - value) <= 0.5 * 10**-decimals + 1e-9 * max(1.0, abs(value))


def states(answer: str, value: Any, question: str) -> bool:
    """``answer`` states ``value`` and no other number: a number as written or rounded (a
    thousands comma, a scale word), a text as a whole word, a date as written or, for "which
    year", as its year."""
    if value is None:
        return True
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return judge_text(answer, shown(value, question)).right
    numbers = stated_numbers(answer, question)
    if not numbers:
        return False
    return all(
        any(
            _rounds_to(number.text.replace(",", "").split()[0], stated, float(value))
            for stated in number.values
        )
        for number in numbers
    )


def code_answer(value: Any, question: str, source: str) -> str:
    """Code's answer from the one value, citing ``source``."""
    return f"The answer is {shown(value, question)} [{source}]."
