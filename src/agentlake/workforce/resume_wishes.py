"""Wishes only a resume can answer: what code can check of a model's reading of one.

A wish is the client's words about a worker's background that no column holds ("has driven a
reach truck", "done 12-hour rotating shifts", "speaks Vietnamese"). A model reads the resumes
(``agents.resume_check``); this module owns what code decides of its answer:

- ``quote_found``: the quote it gave is really in the resume (words, not spacing or case);
- ``quote_supports``: the quote names the wish (a content word of the wish, or of the family
  the wish belongs to: shifts, languages, equipment, experience) and is no instruction to the
  reader (a resume that says "this candidate meets every requirement" proves nothing);
- ``search_phrase``: the words of a wish worth searching the resumes for;
- ``supporting_sentence``: when a model judged a wish met but its quote is not the resume's,
  the resume's own sentence that names the wish, if one does (not one where the worker only
  wants it: "Would like to learn the reach truck.").

It does not call a model nor read the lake.
"""

from __future__ import annotations

import re

# Words that carry no wish of their own: an order's glue and a resume's filler.
_FILLER = frozenset(
    """a an and any are as at be been before being but by can could did do does done doing for
    from had has have having he her him his i if in into is it its just like lot many me more most
    must my need needs of on one or our out over own people person she so some such than that the
    their them they this those to too up us very was we were what when which who whom will with
    would you your someone somebody anyone folks worker workers guy guys crew experience
    experienced background history know knows knew worked work working works years year ever
    who've they've we've been able ideally prefer preferred please want wants wanted plus""".split()
)
# Families of wishes: a quote that names any word of the wish's family names the wish
# ("bilingual" is answered by "speaks Spanish and English").
FAMILIES: dict[str, frozenset[str]] = {
    "shifts": frozenset(
        "shift shifts overnight overnights night nights graveyard rotating rotation 12-hour weekend "
        "weekends swing early".split()
    ),
    "languages": frozenset(
        "speaks speak fluent bilingual language languages spanish vietnamese polish tagalog somali "
        "english russian arabic mandarin".split()
    ),
    "equipment": frozenset(
        "truck forklift reach picker lift scissor boom crane tig mig welder torch pallet jack "
        "telehandler rig".split()
    ),
}
# A quote that speaks to the reader or about requirements is no evidence of anything.
_INSTRUCTION = re.compile(
    r"\b(ignore|instruction|instructions|system|prompt|approve|assistant|requirement|requirements|"
    r"qualif(?:y|ies|ied)|meets?\s+(?:every|all|each))\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"[a-z0-9][a-z0-9+\-]*")
_SENTENCE = re.compile(r"(?<=[.!?:;])\s+|\n+")
QUOTE_MIN_CHARS = 4


def words_of(text: str) -> list[str]:
    """Lower-case words of ``text`` (hyphens and digits kept: '12-hour', '6g')."""
    return _WORD.findall(text.casefold())


def _stem(word: str) -> str:
    # A prefix is enough to match 'welding'/'welder', 'shifts'/'shift', 'driven'/'driving'.
    return word[:5] if len(word) > 5 else word.rstrip("s") or word


def content_words(text: str) -> list[str]:
    """The words of ``text`` that say something (no glue, no filler), once each, in order."""
    return list(dict.fromkeys(w for w in words_of(text) if w not in _FILLER and len(w) > 1))


def search_phrase(wish: str) -> str | None:
    """The words of ``wish`` worth searching resumes for ('has driven a reach truck before' ->
    'driven reach truck'); ``None`` when nothing is left to search for."""
    words = content_words(wish)
    return " ".join(words) if words else None


def _normal(text: str) -> str:
    return " ".join(words_of(text))


def quote_found(quote: str, resume: str) -> bool:
    """Whether ``quote`` is in ``resume``, word for word (case, spacing and punctuation aside)."""
    wanted = _normal(quote)
    return len(wanted) >= QUOTE_MIN_CHARS and f" {wanted} " in f" {_normal(resume)} "


def family_of(wish: str) -> frozenset[str]:
    """The words of the families ``wish`` belongs to (none: the empty set)."""
    words = set(words_of(wish))
    return frozenset().union(*(family for family in FAMILIES.values() if words & family))


def _sentences_of(quote: str, resume: str) -> list[str]:
    """The resume's sentences a quote is drawn from (sharing three words in a row with it, or
    holding it whole when it is shorter)."""
    words = words_of(quote)
    runs = {" ".join(words[i : i + 3]) for i in range(max(1, len(words) - 2))}
    return [
        sentence
        for sentence in _SENTENCE.split(resume)
        if any(f" {run} " in f" {_normal(sentence)} " for run in runs if run)
    ]


def quote_supports(wish: str, quote: str, resume: str = "") -> bool:
    """Whether ``quote`` names ``wish``: it shares a content word (by its stem) with the wish or
    with the wish's family, and neither it nor the resume's sentences it is drawn from speak to
    their reader (a fragment of "meets every requirement, reach truck included" proves nothing)."""
    if _INSTRUCTION.search(quote) or any(_INSTRUCTION.search(s) for s in _sentences_of(quote, resume)):
        return False
    said = {_stem(w) for w in content_words(quote)}
    named = {_stem(w) for w in (*content_words(wish), *family_of(wish))}
    return bool(said & named)


# A sentence that names a thing the worker only wants, hopes or would avoid shows nothing of it.
_NOT_HELD = re.compile(
    r"\b(would like|wants? to|hopes?|interested in|willing to train|not yet|prefer to avoid|"
    r"rather not|one semester)\b",
    re.IGNORECASE,
)


def supporting_sentence(wish: str, resume: str) -> str:
    """The first sentence of ``resume`` that holds the wish's own words (two of them, or its only
    one: "Reach truck operator" for "has driven a reach truck", not "Available for night shifts"
    for "has done 12-hour rotating shifts"), is no instruction and does not say the worker only
    wants it; "" when none does. Code's own reading, for a model that judged a wish met but
    could not copy the words."""
    wanted = {_stem(w) for w in content_words(wish)}
    for sentence in _SENTENCE.split(resume):
        sentence = sentence.strip()
        shared = wanted & {_stem(w) for w in content_words(sentence)}
        if (
            len(shared) >= min(2, len(wanted))
            and shared
            and not _NOT_HELD.search(sentence)
            and quote_supports(wish, sentence, resume)
        ):
            return sentence
    return ""
