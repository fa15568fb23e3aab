"""Judging a written answer against a question's known truth: the code decides what is right.

A **number** answer is right when it states at least one number and every number it states is
within the tolerance of the truth: ``|stated - truth| <= max(abs, rel * |truth|)``. One value is
expected, so an answer that states several different numbers is wrong, whichever comes first:
a model that forgot a filter lists every group ("Adelie 3700, Chinstrap 3733, Gentoo 5076"),
and a judge that took any match would call that right. Before reading the numbers, what is not
a stated value is set aside: citation ids in square brackets (``[SQL]``, ``[W-7995]``), dates
(``2012-01-01``, ``2015/03/07``, ``3/9/2015``, ``07.03.2015``, ``Mar 1 2009``), ordinals
(``3rd``) and every number the question itself names (the year in "rain days in 2012", the 30
in "above 30 degrees"). A number is written with or without thousands commas, decimals, a sign
and a unit ("5,076", "5076.0", "-3.5", "about 5076 grams"); one followed by thousand, million
or billion is right as written or scaled ("134,060 thousand", "3.2 million"). Numbers written
in words ("three") are not read.

A **text** answer is right when it contains the truth as a whole word (or words),
case-insensitively: "dream" and "Dream Island" for ``Dream``, not "Dreamland". An answer that
names several candidates is right if the truth is among them.

It owns no truth (``pack`` computes those) and no model.
"""

from __future__ import annotations

import math
import re

from pydantic import BaseModel, ConfigDict, Field

_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
_NOT_VALUES = re.compile(
    "|".join(
        [
            r"\[[^\]\n]*\]",  # citations
            r"\b\d{4}[-/.]\d{1,2}[-/.]\d{1,2}\b",  # 2012-01-01, 2015/03/07
            r"\b\d{1,2}[-/.]\d{1,2}[-/.]\d{4}\b",  # 3/9/2015, 07.03.2015
            rf"\b{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}\b",  # Mar 1 2009, March 1st, 2009
            rf"\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}\s+\d{{4}}\b",  # 1 March 2009
            r"\b\d+(?:st|nd|rd|th)\b",  # ordinals
        ]
    ),
    re.IGNORECASE,
)
_NUMBER = re.compile(
    r"(?<![\w.])(?P<sign>[-\u2212])?(?P<digits>\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?P<fraction>\.\d+)?"
    r"(?:\s*(?P<scale>thousand|million|billion)\b)?",
    re.IGNORECASE,
)
_SCALES = {"thousand": 1e3, "million": 1e6, "billion": 1e9}
# Float noise: 5076.4 - 5075.9 must not fail an abs tolerance of 0.5.
_EPSILON = 1e-9


class Tolerance(BaseModel):
    """How far a stated number may be from the truth: ``max(abs, rel * |truth|)``."""

    model_config = ConfigDict(extra="forbid")

    abs: float = Field(0.0, ge=0, description="Absolute difference allowed, in the truth's unit.")
    rel: float = Field(0.0, ge=0, description="Difference allowed as a fraction of the truth.")

    def allows(self, stated: float, truth: float) -> bool:
        """``stated`` is within this tolerance of ``truth``."""
        allowed = max(self.abs, self.rel * abs(truth))
        return abs(stated - truth) <= allowed + _EPSILON * max(1.0, abs(truth))


class Judgement(BaseModel):
    """Whether an answer is right, what it stated and why it was judged so."""

    right: bool
    stated: list[str] = Field(default_factory=list, description="The values read from the answer.")
    reason: str


class StatedNumber(BaseModel):
    """A number as an answer writes it; ``values`` holds it as written and, after a scale
    word, scaled (either may be the one meant)."""

    text: str
    values: list[float]


def stated_numbers(answer: str, question: str = "") -> list[StatedNumber]:
    """The numbers ``answer`` states as values, in order: citations, dates, ordinals and every
    number ``question`` names are set aside (see the module's rules)."""
    named = {value for number in _numbers(_NOT_VALUES.sub(" ", question)) for value in number.values}
    return [number for number in _numbers(_NOT_VALUES.sub(" ", answer)) if number.values[0] not in named]


def _numbers(text: str) -> list[StatedNumber]:
    found = []
    for match in _NUMBER.finditer(text):
        written = float(match["digits"].replace(",", "") + (match["fraction"] or ""))
        if match["sign"]:
            written = -written
        values = [written]
        if match["scale"]:
            values.append(written * _SCALES[match["scale"].lower()])
        if all(math.isfinite(value) for value in values):
            found.append(StatedNumber(text=match.group(0).strip(), values=values))
    return found


def judge_number(answer: str, truth: float, tolerance: Tolerance, question: str = "") -> Judgement:
    """Judge ``answer`` to ``question`` against the number ``truth`` (rules: the module's)."""
    numbers = stated_numbers(answer, question)
    stated = [number.text for number in numbers]
    if not numbers:
        return Judgement(right=False, stated=[], reason=f"states no number (expected {truth:g})")
    off = [
        number.text
        for number in numbers
        if not any(tolerance.allows(value, truth) for value in number.values)
    ]
    if off:
        return Judgement(
            right=False,
            stated=stated,
            reason=f"states {', '.join(off)}, not {truth:g} within {_describe(tolerance)}",
        )
    return Judgement(right=True, stated=stated, reason=f"states {truth:g} within {_describe(tolerance)}")


def judge_text(answer: str, truth: str) -> Judgement:
    """Judge ``answer`` against the text ``truth``: a case-insensitive whole-word match."""
    words = r"\s+".join(re.escape(word) for word in truth.split())
    if words and re.search(rf"(?<!\w){words}(?!\w)", answer, re.IGNORECASE):
        return Judgement(right=True, stated=[truth], reason=f"names {truth!r}")
    return Judgement(right=False, stated=[], reason=f"does not name {truth!r}")


def _describe(tolerance: Tolerance) -> str:
    parts = [f"±{tolerance.abs:g}"] if tolerance.abs or not tolerance.rel else []
    if tolerance.rel:
        parts.append(f"±{tolerance.rel:.2%}")
    return " or ".join(parts)
