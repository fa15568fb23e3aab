"""gitleaks' rule set, in Python: the vendored file, its pin, and the Go to Python translation.

Owns loading ``gitleaks.toml`` (gitleaks' default rules, vendored unchanged at
:data:`GITLEAKS_VERSION` under its MIT licence: ``gitleaks.toml.LEGAL.txt``; the file's sha256
is checked on load), translating each rule's Go (RE2) regular expression into Python's ``re``
(:func:`translate`), and applying a rule the way gitleaks does (:meth:`GitleaksRule.secret_spans`):
the rule runs only when one of its keywords occurs in the lower-cased text; its secret is its
``secretGroup``, else the first non-empty group, else the whole match; a secret at or below the
rule's Shannon entropy, or allowed by the global or the rule's allowlists (regexes on the
secret, the match or the line; stopwords), is not one. What does not apply here is counted and
named in :attr:`RuleSet.skipped`: rules gitleaks runs only on files by path (we scan texts, not
files) and any regex that does not translate.

It masks nothing itself (``observe.scrub`` does), and it does not decide which fields are
scanned.
"""

from __future__ import annotations

import hashlib
import math
import re
import tomllib
import warnings
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from re import _constants as sre  # type: ignore[attr-defined]  # stable since 3.11
from re import _parser as sre_parse  # type: ignore[attr-defined]

GITLEAKS_VERSION = "v8.30.1"
GITLEAKS_COMMIT = "83d9cd684c87d95d656c1458ef04895a7f1cbd8e"
GITLEAKS_SHA256 = "e163e53b9e7e8a8511e77271e2b323ed057759542a6d988258afe3a1fa329caf"
RULES_FILE = Path(__file__).with_name("gitleaks.toml")


class Untranslatable(ValueError):
    """A Go regular expression that has no faithful Python equivalent; the message says why."""


# POSIX classes inside a bracket expression, as RE2 defines them (ASCII).
_POSIX = {
    "alnum": "0-9A-Za-z",
    "alpha": "A-Za-z",
    "ascii": r"\x00-\x7f",
    "blank": r"\t ",
    "cntrl": r"\x00-\x1f\x7f",
    "digit": "0-9",
    "graph": "!-~",
    "lower": "a-z",
    "print": " -~",
    "punct": r"!-/:-@\[-`{-~",
    "space": r"\t\n\v\f\r ",
    "upper": "A-Z",
    "word": "0-9A-Za-z_",
    "xdigit": "0-9A-Fa-f",
}
_FLAGS = re.compile(r"\(\?([imsU]*(?:-[imsU]*)?)([:)])")
_REPEAT = re.compile(r"\{(\d+)(?:,(\d*))?\}")
# Escapes RE2 has and Python's re lacks (Unicode classes, quoting, any byte).
_NO_EQUIVALENT = frozenset("pPQEC")


def _bracket(go: str, start: int) -> tuple[str, int]:
    """The bracket expression at ``go[start] == '['`` in Python syntax, and the index after it."""
    out = ["["]
    i = start + 1
    if go.startswith("^", i):
        out.append("^")
        i += 1
    if go.startswith("]", i):  # a ']' first is a literal, in both dialects; spelled out
        out.append(r"\]")
        i += 1
    while i < len(go) and go[i] != "]":
        char = go[i]
        if char == "\\":
            escaped = go[i + 1 : i + 2]
            if not escaped or escaped in _NO_EQUIVALENT:
                raise Untranslatable(f"\\{escaped} in a bracket expression")
            out.append(go[i : i + 2])
            i += 2
        elif go.startswith("[:", i):
            end = go.find(":]", i)
            name = go[i + 2 : end] if end > 0 else ""
            if name not in _POSIX:
                raise Untranslatable(f"the class [:{name}:]")
            out.append(_POSIX[name])
            i = end + 2
        else:
            # Python reads '[', '&&', '~~' and '||' in a class as future set syntax (and warns).
            out.append("\\" + char if char in "[&~|" else char)
            i += 1
    if i >= len(go):
        raise Untranslatable("an unterminated bracket expression")
    out.append("]")
    return "".join(out), i + 1


def translate(go: str) -> str:
    """The Python ``re`` pattern (to compile with ``re.ASCII``, RE2's ``\\w \\d \\s \\b``) that
    matches what the Go pattern ``go`` matches. Raises :class:`Untranslatable`.

    The differences handled: a flag group ``(?i)`` inside the pattern (Python allows global
    flags only at the start) becomes a scoped group to the end of its enclosing group, reopened
    after each ``|`` (RE2 keeps the flags across alternatives); POSIX classes (``[[:alnum:]]``);
    ``\\z``; ``\\x{...}``; a ``{`` that is not a repetition (a literal in RE2, a repetition or an
    error in Python); characters Python would read as nested-set syntax. ``(?U)`` and Unicode
    classes (``\\p``) have no equivalent.
    """
    out: list[str] = []
    scopes: list[list[str]] = [[]]  # per open group: the flag groups opened inside it
    i = 0
    while i < len(go):
        char = go[i]
        if char == "\\":
            escaped = go[i + 1 : i + 2]
            if not escaped or escaped in _NO_EQUIVALENT:
                raise Untranslatable(f"the escape \\{escaped}")
            if escaped == "z":
                out.append(r"\Z")
            elif escaped == "x" and go.startswith("{", i + 2):
                end = go.index("}", i)
                out.append(f"\\U{int(go[i + 3 : end], 16):08x}")
                i = end + 1
                continue
            else:
                out.append(go[i : i + 2])
            i += 2
        elif char == "[":
            bracket, i = _bracket(go, i)
            out.append(bracket)
        elif char == "(":
            flags = _FLAGS.match(go, i)
            if flags:
                if "U" in flags.group(1):
                    raise Untranslatable("the ungreedy flag (?U)")
                out.append(f"(?{flags.group(1)}:")
                if flags.group(2) == ")":  # (?i): to the end of the enclosing group
                    scopes[-1].append(flags.group(1))
                else:
                    scopes.append([])
                i = flags.end()
            elif go.startswith(("(?P<", "(?<"), i):
                out.append("(?P<")
                scopes.append([])
                i += 4 if go.startswith("(?P<", i) else 3
            elif go.startswith("(?:", i):
                out.append("(?:")
                scopes.append([])
                i += 3
            elif go.startswith("(?", i):
                raise Untranslatable(f"the group syntax {go[i : i + 4]}")
            else:
                out.append("(")
                scopes.append([])
                i += 1
        elif char == ")":
            if len(scopes) == 1:
                raise Untranslatable("an unbalanced ')'")
            out.append(")" * len(scopes.pop()) + ")")
            i += 1
        elif char == "|":
            opened = scopes[-1]
            out.append(")" * len(opened) + "|" + "".join(f"(?{flags}:" for flags in opened))
            i += 1
        elif char == "{":
            repeat = _REPEAT.match(go, i)
            if repeat and out and (not repeat.group(2) or int(repeat.group(2)) >= int(repeat.group(1))):
                out.append(repeat.group(0))
                i = repeat.end()
            else:
                out.append(r"\{")
                i += 1
        else:
            out.append(char)
            i += 1
    if len(scopes) != 1:
        raise Untranslatable("an unbalanced '('")
    out.append(")" * len(scopes[0]))
    python = "".join(out)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            re.compile(python, re.ASCII)
        except (re.error, Warning) as exc:
            raise Untranslatable(str(exc)) from None
    return python


def shannon_entropy(text: str) -> float:
    """Bits per character of ``text`` (gitleaks' ``shannonEntropy``)."""
    if not text:
        return 0.0
    size = len(text)
    return -sum(count / size * math.log2(count / size) for count in Counter(text).values())


def alternation(words: Iterable[str]) -> str:
    """One pattern matching any of ``words``, as a trie (``sk(?:_live|_test)?``): ``re`` tries a
    flat alternation's branches one by one at every position, a trie's one character at a time.
    At a position it matches the longest word that starts there."""
    trie: dict[str, dict] = {}
    for word in words:
        node = trie
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}

    def emit(node: dict[str, dict]) -> str:
        branches = [re.escape(char) + emit(child) for char, child in sorted(node.items()) if char]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        if "" in node:
            return f"(?:{body})?"
        return body

    return emit(trie)


@dataclass(frozen=True)
class Allowlist:
    """One gitleaks allowlist: a finding it allows is not a secret. ``target`` is what the
    regexes see (the secret, the whole match or its line); stopwords are looked for in the
    lower-cased secret. ``require_all`` is gitleaks' ``condition = "AND"``; an allowlist that
    also needs a path or a commit can never allow here (a text has neither)."""

    regexes: tuple[re.Pattern[str], ...] = ()
    target: str = "secret"
    stopwords: re.Pattern[str] | None = None
    require_all: bool = False
    needs_path_or_commit: bool = False

    def allows(self, secret: str, match: str, line: str) -> bool:
        subject = {"match": match, "line": line}.get(self.target, secret)
        by_regex = bool(subject) and any(regex.search(subject) for regex in self.regexes)
        by_stopword = self.stopwords is not None and bool(self.stopwords.search(secret.lower()))
        if not self.require_all:
            return by_regex or by_stopword
        checks = [False] if self.needs_path_or_commit else []
        if self.regexes:
            checks.append(by_regex)
        if self.stopwords is not None:
            checks.append(by_stopword)
        return bool(checks) and all(checks)


def _allowlist(raw: dict) -> Allowlist:
    stopwords = [word.lower() for word in raw.get("stopwords", [])]
    return Allowlist(
        regexes=tuple(re.compile(translate(regex), re.ASCII) for regex in raw.get("regexes", [])),
        target=raw.get("regexTarget", "secret"),
        stopwords=re.compile(alternation(stopwords)) if stopwords else None,
        require_all=raw.get("condition", "OR").upper() == "AND",
        needs_path_or_commit=bool(raw.get("paths") or raw.get("commits")),
    )


@dataclass(frozen=True)
class GitleaksRule:
    """One rule of the set, translated; :meth:`secret_spans` applies it as gitleaks does."""

    id: str
    pattern: re.Pattern[str]
    keywords: tuple[str, ...]
    entropy: float = 0.0
    secret_group: int = 0
    allowlists: tuple[Allowlist, ...] = ()
    shared: tuple[Allowlist, ...] = field(default=(), repr=False)  # the global allowlist

    def secret_spans(self, text: str) -> list[tuple[int, int]]:
        """(start, end) of every secret this rule finds in ``text``; the caller has checked
        that one of :attr:`keywords` occurs in it (gitleaks runs a rule only then)."""
        spans = []
        for match in self.pattern.finditer(text):
            start, end = match.span()
            if self.secret_group and match.lastindex and self.secret_group <= match.lastindex:
                start, end = match.span(self.secret_group)
            else:
                for group in range(1, (match.lastindex or 0) + 1):
                    if match.group(group):
                        start, end = match.span(group)
                        break
            secret = text[start:end]
            if not secret or (self.entropy and shannon_entropy(secret) <= self.entropy):
                continue
            if self.shared or self.allowlists:
                whole = match.group(0)
                line = text[text.rfind("\n", 0, match.start()) + 1 : _line_end(text, match.end())]
                if any(
                    allowlist.allows(secret, whole, line) for allowlist in (*self.shared, *self.allowlists)
                ):
                    continue
            spans.append((start, end))
        return spans


def _line_end(text: str, index: int) -> int:
    end = text.find("\n", index)
    return len(text) if end < 0 else end


@dataclass(frozen=True)
class RuleSet:
    """The translated rules and what was left out: ``skipped`` maps a rule id to the reason."""

    rules: tuple[GitleaksRule, ...]
    skipped: dict[str, str]
    version: str = GITLEAKS_VERSION


def rules_text() -> bytes:
    """The vendored file's bytes, after checking its sha256 against the pin."""
    data = RULES_FILE.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != GITLEAKS_SHA256:
        raise RuntimeError(
            f"{RULES_FILE} has sha256 {digest}, not the pinned {GITLEAKS_SHA256} of gitleaks "
            f"{GITLEAKS_VERSION}: update GITLEAKS_VERSION, GITLEAKS_COMMIT and GITLEAKS_SHA256 with the file"
        )
    return data


# Most rules end a secret with a quote, a space, ';', an escaped newline or the end of the line.
# gitleaks reads files; we read texts that are often JSON inside JSON, where a secret ends in an
# escaped quote ('\\"'): any backslash ends one here.
_TERMINATOR = "|\\\\[nr]|"
_TERMINATOR_HERE = "|\\\\|"


@cache
def load_rules() -> RuleSet:
    """The vendored rule set, translated once per process (a secret may also end before any
    backslash, see ``_TERMINATOR``)."""
    config = tomllib.loads(rules_text().decode("utf-8"))
    shared = _allowlist(config.get("allowlist", {}))
    rules: list[GitleaksRule] = []
    skipped: dict[str, str] = {}
    for raw in config["rules"]:
        if raw.get("path") or not raw.get("regex"):
            skipped[raw["id"]] = "applies to files by path"
            continue
        try:
            pattern = re.compile(translate(raw["regex"].replace(_TERMINATOR, _TERMINATOR_HERE)), re.ASCII)
            allowlists = tuple(_allowlist(allowlist) for allowlist in raw.get("allowlists", []))
        except Untranslatable as exc:
            skipped[raw["id"]] = f"does not translate: {exc}"
            continue
        rules.append(
            GitleaksRule(
                id=raw["id"],
                pattern=pattern,
                keywords=tuple(keyword.lower() for keyword in raw.get("keywords", [])),
                entropy=float(raw.get("entropy", 0.0)),
                secret_group=int(raw.get("secretGroup", 0)),
                allowlists=allowlists,
                shared=(shared,),
            )
        )
    return RuleSet(rules=tuple(rules), skipped=skipped)


# --- What a match must contain: the scrubber's gate is sound only if it knows ----------------

# The characters the scrubber's gate counts as one word (``scrub._SHAPES`` keeps them together,
# and any other character ends a word).
WORD_CHARACTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.+/=-")


def _in_word(code: int) -> bool:
    return code < 128 and chr(code) in WORD_CHARACTERS


def _set_in_word(items: list) -> bool:
    for op, arg in items:
        if op is sre.LITERAL:
            if not _in_word(arg):
                return False
        elif op is sre.RANGE:
            low, high = arg
            if high > 127 or not all(_in_word(code) for code in range(low, high + 1)):
                return False
        elif op is sre.CATEGORY:
            if arg not in (sre.CATEGORY_DIGIT, sre.CATEGORY_WORD):
                return False
        else:  # NEGATE and anything unknown: assume it can match a separator
            return False
    return True


def _shape(sequence: list) -> tuple[int, bool, int]:
    """(minimum width, whether every character it matches is a word character, the longest run
    of word characters every match contains) of a parsed pattern; conservative."""
    width, all_in_word, longest, run = 0, True, 0, 0
    for op, arg in sequence:
        if op in (sre.AT, sre.ASSERT, sre.ASSERT_NOT):
            continue  # zero width: the characters either side are still adjacent
        if op is sre.LITERAL:
            item = (1, _in_word(arg), 0)
        elif op is sre.IN:
            item = (1, _set_in_word(arg), 0)
        elif op is sre.SUBPATTERN:
            item = _shape(arg[-1])
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
            low, _, inner = arg
            inner_width, inner_in_word, inner_run = _shape(inner)
            item = (low * inner_width, inner_in_word, inner_run if low else 0)
        elif op is sre.BRANCH:
            branches = [_shape(branch) for branch in arg[1]]
            item = (
                min(branch[0] for branch in branches),
                all(branch[1] for branch in branches),
                min(max(branch[2], branch[0] if branch[1] else 0) for branch in branches),
            )
        else:  # ANY, NOT_LITERAL, group references, ...: may match a separator
            item = (1 if op in (sre.ANY, sre.NOT_LITERAL) else 0, False, 0)
        item_width, item_in_word, item_run = item
        width += item_width
        if item_in_word:
            run += item_width
        else:
            all_in_word = False
            run = 0
        longest = max(longest, run, item_run)
    return width, all_in_word, longest


def guaranteed_word(pattern: re.Pattern[str]) -> int:
    """The length of the longest run of :data:`WORD_CHARACTERS` that every match of ``pattern``
    contains (a lower bound; 0 when nothing is sure)."""
    return _shape(sre_parse.parse(pattern.pattern, pattern.flags))[2]
