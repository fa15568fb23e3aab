"""Secrets masked out of every text agentlake stores: the one scrubber, with what it catches and what not.

Owns :func:`scrub` (a text), :func:`scrub_value` (JSON-like values), the gate in front of them
(:func:`may_hold_secret`, :func:`any_secret`) and the rules, in two layers:

1. **Formats: gitleaks' maintained rule set** (``observe.gitleaks``: the vendored
   ``gitleaks.toml``, 217 of its 222 rules translated from Go to Python; the 5 left out apply
   only to files by path). Each rule runs when one of its keywords is in the text, with its
   entropy threshold and allowlists, and masks the secret it captures (``xoxb-...``,
   ``ghp_...``, ``SG.x.y``, ``AKIA...``, ``sk-ant-api03-...``, Stripe, Twilio, GCP API keys, JWTs,
   private keys and some two hundred more; ``generic-api-key`` masks high-entropy values assigned
   to names with ``key``, ``token``, ``secret``, ``auth``, ``api``, ``password``, ...).
2. **Structure, kept here** (:data:`RULES`), for what a format cannot know: the value after a
   name that says it is a secret (:func:`names_secret`: ``password``, ``passwd``, ``secret``,
   ``token``, ``credential(s)``, ``api_key``, ``client_secret``, ``private_key``,
   ``private_key_id``, ``access_key_id``, ``*_key`` with a qualifier such as api/secret/private/
   access, ``auth``, ``cookie``) in ``k=v`` and ``k: v`` text, JSON, YAML and query strings,
   whatever the value looks like; ``Authorization:`` headers of any scheme and bare
   ``Bearer``/``Basic`` credentials; cookies; passwords in URLs (``redis://:pw@host``); PEM
   private-key blocks whole (also cut off, or with escaped newlines); PuTTY keys; AWS secret
   keys with no name beside them; payment card numbers of every issuer range (Visa, Mastercard
   with its 2-series, Amex 15 digits, Discover, Diners, JCB, UnionPay), by issuer, length and
   Luhn; US social security numbers; and a few token formats gitleaks matches only before a
   quote, space or line end (its rules end with that terminator), which text often breaks.

The secret is replaced by ``[REDACTED]``; what names it (``password=``, ``Authorization:
Bearer``, the URL's user, a gitleaks rule's ``name =``) is kept so the text still reads, and a
quoted JSON value keeps its quotes so JSON stays JSON.

**Not caught** (``tests/observe/test_observe_scrub.py`` shows each): a secret split across two
fields, or across two texts of one field, is not recognised in either half, unless a half is
a secret on its own (a named value, a whole format); a base64- (or otherwise) encoded secret is
not decoded (gitleaks can decode; we do not, as every long base64 run would have to be
decoded), though an encoded value under a secret name or high-entropy after ``key=``/``token:``
is still masked; hex-only ids (lower-case: op, trace and span ids, ``ObservedOp.texts``) are not
scanned, and no rule matches one; a secret under a name that says nothing (``"x": "..."``) in
a format no rule knows.

Cost: the gate. Most texts hold none of a short list of names (``_NAMES``: ours and the
keywords of the gitleaks rules whose secrets may be short), no word of 20 or more token
characters and no card- or SSN-shaped digits, and cost one lower-casing, two translations and
three searches in C (about 1 us for the usual op), where running the rules costs tens of
microseconds. ``tests/observe/test_observe_scrub.py`` proves the gate sound for every gitleaks
rule (a rule either needs a word of 20+ characters or has its keywords among the names), and a
property test holds :func:`scrub` equal to :func:`scrub_ungated` (every rule, no gate).

It does not decide what is stored (``model``, ``learn.store``); it cleans what they store.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any

from agentlake.observe import gitleaks

MASK = "[REDACTED]"


@dataclass(frozen=True)
class Rule:
    """One kind of secret. ``keywords`` (lower-case) gate the pattern: it is tried only when one
    occurs in the lower-cased text; ``None`` means the ``gate`` pattern decides instead.
    ``keep`` names the group kept before the mask (e.g. the header name); ``check`` may veto a
    match (a name that only looks like a secret's: False) or say that only its first characters
    are the secret (a card number followed by more digits: their count)."""

    name: str
    pattern: re.Pattern[str]
    keywords: tuple[str, ...] | None
    keep: str | None = None
    gate: re.Pattern[str] | None = None
    check: Callable[[re.Match[str]], bool | int] | None = None


# --- names that say their value is a secret ---------------------------------------------------

# The last word of a name (``db_password``, ``clientSecret``, ``X-Auth-Token``) that makes it one.
_SECRET_WORDS = frozenset(
    {
        "secret",
        "secrets",
        "token",
        "password",
        "passwd",
        "pwd",
        "passphrase",
        "credential",
        "credentials",
        "auth",
        "authorization",
        "cookie",
        "apikey",
        "secretkey",
        "privatekey",
        "accesskey",
        "accesstoken",
        "authtoken",
        "sessionid",
        "sessiontoken",
        "clientsecret",
    }
)
# ``*_key`` is a secret's name only with one of these before ``key``: a bare ``key`` is a search
# hit's id or a sort key in our own ops (``{"key": 7995}``), and ``public_key``, ``primary_key``
# or ``cache_key`` are not secrets. (gitleaks' generic rule still masks a high-entropy value
# under any ``*key`` name.)
_KEY_QUALIFIERS = frozenset(
    {
        "api",
        "x",
        "secret",
        "private",
        "access",
        "client",
        "signing",
        "sign",
        "encryption",
        "encrypt",
        "decryption",
        "master",
        "auth",
        "app",
        "account",
        "storage",
        "shared",
        "service",
        "session",
        "license",
        "licence",
        "deploy",
        "ssh",
        "hmac",
        "webhook",
        "admin",
        "bot",
        "consumer",
        "subscription",
        "integration",
        "root",
        "live",
        "test",
        "prod",
        "pgp",
        "gpg",
    }
)
_KEY_ID_QUALIFIERS = frozenset({"private", "access", "secret", "signing"})
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def names_secret(name: str) -> bool:
    """Whether a mapping key or an assigned name says its value is a secret: its last word
    (``snake_case``, ``kebab-case``, ``camelCase`` and dotted names split alike) is ``password``,
    ``secret``, ``token``, ``credentials``, ``auth``, ``cookie``, ...; or ``key`` after a
    qualifier such as ``api``, ``secret``, ``private``, ``access``, ``client``; or ``key id``
    after ``private``/``access``/``secret``; or ``session id``."""
    words = [word.lower() for word in _WORDS.findall(name)]
    if not words:
        return False
    last = words[-1]
    before = words[-2] if len(words) > 1 else ""
    if last in _SECRET_WORDS:
        return True
    if last == "key":
        return before in _KEY_QUALIFIERS
    if last == "id":
        return before == "session" or (before == "key" and len(words) > 2 and words[-3] in _KEY_ID_QUALIFIERS)
    return False


def _named(match: re.Match[str]) -> bool:
    return names_secret(match.group("name"))


# --- payment cards ----------------------------------------------------------------------------


def _luhn(digits: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(digits)):
        digit = ord(char) - 48
        if index % 2:
            digit *= 2
            if digit > 9:
                digit -= 9
        total += digit
    return total % 10 == 0


def card_issuer(digits: str) -> str | None:
    """The issuer whose range and length ``digits`` (digits only) fall in, or ``None``."""
    size, two, three, four, six = (
        len(digits),
        int(digits[:2]),
        int(digits[:3]),
        int(digits[:4]),
        int(digits[:6]),
    )
    if digits[0] == "4" and size in (13, 16, 19):
        return "Visa"
    if (51 <= two <= 55 or 2221 <= four <= 2720) and size == 16:
        return "Mastercard"
    if two in (34, 37) and size == 15:
        return "American Express"
    if (four == 6011 or 644 <= three <= 649 or two == 65 or 622126 <= six <= 622925) and 16 <= size <= 19:
        return "Discover"
    if (300 <= three <= 305 or four == 3095 or two in (36, 38, 39)) and 14 <= size <= 19:
        return "Diners Club"
    if 3528 <= four <= 3589 and 16 <= size <= 19:
        return "JCB"
    if two == 62 and 16 <= size <= 19:
        return "UnionPay"
    return None


def _card(match: re.Match[str]) -> int:
    """How many characters from the match's start are a card number (0: none). A number may be
    followed by more digits ("4111 1111 1111 1111 12/29"): the longest run of its groups that is
    a valid number counts."""
    text = match.group(0)
    ends = [at for at in range(13, len(text) + 1) if at == len(text) or text[at] in " -"]
    for end in reversed(ends):
        digits = text[:end].replace(" ", "").replace("-", "")
        if 13 <= len(digits) <= 19 and card_issuer(digits) is not None and _luhn(digits):
            return end
    return 0


def _r(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, flags)


_I = re.IGNORECASE
_QUOTE = re.compile(r"""\\*["']""")
# A value after "key=" or "key: ": a string quoted with the same quote (escaped any number of
# times: JSON inside JSON); else, after a colon (YAML, headers, "password: two words"), words
# to the end of the line, a comma or a closing bracket (so JSON text stays JSON); after "=",
# everything up to whitespace ("k=v k2=v2", query strings), a quote or a backslash.
_NAMED_VALUE = (
    r"""(?:(?P<q>\\*["'])(?:(?!(?P=q))[^\n])*(?P=q)"""
    r"""|(?(colon)[^\s"'<>\\,}\]]+(?:[ \t]+[^\s"'<>\\,}\]]+)*|[^\s"'<>\\]+))"""
)
# A name (identifier, dotted or dashed) that ends in a secret word, checked by names_secret.
_ENDS_LIKE_SECRET = "|".join(
    f"(?<={word})"
    for word in ("secret", "secrets", "token", "password", "passwd", "pwd", "passphrase", "credential")
    + ("credentials", "auth", "key", "id")
)  # not "authorization" or "cookie": their own rules mask the value and keep the scheme

RULES: tuple[Rule, ...] = (
    Rule("private key (PEM, OpenSSH, PGP)",
         _r(r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----[^\"]*?(?:-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|(?=\")|\Z)"),
         ("-----begin",)),
    Rule("PuTTY private key", _r(r"PuTTY-User-Key-File-\d+:[^\"]*?(?:Private-MAC:\s*[0-9a-fA-F]+|(?=\")|\Z)"), ("putty-user-key",)),
    Rule("password in a URL",
         _r(r"(?P<keep>\b[a-z][a-z0-9+.-]*://[^/\s:@\"']*:)[^\s/\"'\\]*(?=@[^\s/@\"']+(?:[/\s\"']|\Z))", _I), ("://",), keep="keep"),
    Rule("Authorization header",
         _r(r"(?P<keep>\b(?:proxy-)?authorization\b\\*[\"']?\s*[:=]\s*\\*[\"']?\s*(?:[A-Za-z][A-Za-z0-9-]*\s+(?=\S))?)"
            r"(?:[A-Za-z][A-Za-z0-9-]*=(?:(?P<q1>\\*\")(?:(?!(?P=q1))[^\r\n])*(?P=q1)|[^\s,\"'\\]*)|[^\s\"'\\]+)"
            r"(?:,?[ \t]*[A-Za-z][A-Za-z0-9-]*=(?:(?P<q2>\\*\")(?:(?!(?P=q2))[^\r\n])*(?P=q2)|[^\s,\"'\\]+))*", _I),
         ("authorization",), keep="keep"),
    Rule("bearer or basic credentials",
         _r(r"(?P<keep>\b(?:bearer|basic|token)\s+)(?:(?=[A-Za-z0-9._~+/=-]*[0-9._~+/=-])[A-Za-z0-9._~+/-]{8,}|[A-Za-z]{16,})=*", _I),
         ("bearer", "basic", "token"), keep="keep"),
    Rule("cookie header",
         _r(r"(?P<keep>\b(?:set-)?cookie\b\\*[\"']?\s*[:=]\s*)(?:(?P<q>\\*[\"'])(?:(?!(?P=q))[^\n])*(?P=q)|[^\r\n\"\\]+)", _I),
         ("cookie",), keep="keep"),
    Rule("named secret (password=..., \"api_key\": ..., private_key_id: ..., ?token=...)",
         _r(rf"(?P<keep>(?<![A-Za-z0-9_.-])(?P<name>[A-Za-z0-9_.-]{{1,64}})(?:{_ENDS_LIKE_SECRET})\\*[\"']?[ \t]*(?:(?P<colon>:)(?!=)|:=|=>|=)[ \t]*)(?!\[REDACTED\]){_NAMED_VALUE}", _I),
         ("secret", "token", "passw", "pwd", "passphrase", "credential", "auth", "cookie", "key", "sessionid", "session_id"),
         keep="keep", check=_named),
    # Token formats gitleaks has, matched here where its rules' terminators (a quote, a space
    # or the line's end after the token) do not hold in free text: 'token=ghp_x,', '(sk-...)'.
    Rule("GitHub token", _r(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b"),
         ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_")),
    Rule("Slack token", _r(r"\b(?:xox[abposre]-[A-Za-z0-9-]{10,}|xapp-\d-[A-Za-z0-9-]{10,})"), ("xox", "xapp-")),
    Rule("Stripe key", _r(r"\b(?:sk|rk|pk)_(?:live|test|prod)_[A-Za-z0-9]{10,}|\bwhsec_[A-Za-z0-9]{20,}"), ("_live_", "_test_", "_prod_", "whsec_")),
    Rule("sk-/pk-/rk- key (OpenAI, Anthropic, ...)", _r(r"\b(?:sk|pk|rk)-[A-Za-z0-9_-]{12,}"), ("sk-", "pk-", "rk-")),
    Rule("JWT", _r(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"), ("eyj",)),
    Rule("SendGrid key", _r(r"\bSG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{16,64}"), ("sg.",)),
    Rule("Google API key or OAuth secret", _r(r"\bAIza[0-9A-Za-z_-]{35}|\bGOCSPX-[0-9A-Za-z_-]{20,}|\bya29\.[0-9A-Za-z_-]{20,}"),
         ("aiza", "gocspx-", "ya29.")),
    Rule("Slack or Discord webhook",
         _r(r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_+-]+|https://(?:\w+\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_-]+", _I),
         ("hooks.slack", "discord")),
    # Formats gitleaks finds only beside the vendor's name ("mailgun", "telegram", "discord").
    Rule("Mailgun or Mailchimp key", _r(r"\bkey-[0-9a-f]{32}\b|\b[0-9a-f]{32}-us\d{1,2}\b"), ("key-", "-us")),
    Rule("Telegram bot token", _r(r"(?<!\d)\d{8,10}:AA[0-9A-Za-z_-]{33}\b"), (":aa",)),
    Rule("Discord bot token", _r(r"\b[MN][A-Za-z\d]{23,25}\.[\w-]{6}\.[\w-]{27,38}\b"), None,
         gate=_r(r"[MN][A-Za-z\d]{23,25}\.")),
    Rule("Azure storage key or SAS signature",
         _r(r"(?P<keep>\b(?:AccountKey|SharedAccessKey|SharedAccessSignature|sig)=)[A-Za-z0-9+/%]{16,}={0,2}", _I),
         ("accountkey=", "sharedaccess", "sig="), keep="keep"),
    Rule("AWS secret access key (bare)",
         _r(r"(?<![A-Za-z0-9/+=])(?=[A-Za-z0-9/+]{0,39}[A-Z])(?=[A-Za-z0-9/+]{0,39}[a-z])(?=[A-Za-z0-9/+]{0,39}[0-9])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"),
         None, gate=_r(r"[A-Za-z0-9/+]{40}")),
    # A run of 13 to 19 digits, in groups split by single spaces or dashes, that is not the
    # fraction of a number ("-0.4111111111111111") nor part of a longer one: checked by
    # issuer and Luhn. A comma may stand either side ("ann,4111...,12/29").
    Rule("payment card number", _r(r"(?<![\w.+])\d(?:[ -]?\d){12,18}(?!\w|[.-]\d)"), None,
         gate=_r(r"\d{4}[ -]?\d{4}|\d{4}[ -]\d{6}"), check=_card),
    Rule("US social security number",
         _r(r"(?<![\d-])(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![\d-])|(?P<keep>\b(?:ssn|social security(?: number)?)\b\s*[:#]?\s*)\d{9}\b", _I),
         None, gate=_r(r"\d{3}-\d{2}-\d{4}|(?i:ssn|social security)"), keep="keep"),
)  # fmt: skip

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")

# The gate: no rule can match a text that has none of these names, no word of _TOKEN_MIN or
# more token characters and no card- or SSN-shaped digits. Checked with str.lower,
# str.translate and three searches (all in C, about 1 us for the usual op), where running the
# rules costs tens of microseconds. The names are our
# rules' and the keywords of every gitleaks rule whose match may hold no word of _TOKEN_MIN
# characters (a test derives those from the rule set and fails when one is missing here).
_NAMES = (
    # our rules
    "://",
    "-----",
    "putty",
    "key",
    "secret",
    "token",
    "pass",
    "pwd",
    "credential",
    "session",
    "cookie",
    "auth",
    "bearer",
    "basic",
    "sig=",
    "ssn",
    "social",
    "k-",
    "k_",
    "sg.",
    # gitleaks rules with short secrets (generic-api-key, curl, linkedin, sumo, ...)
    "access",
    "airtable",
    "api",
    "asana",
    "confluent",
    "creds",
    "curl",
    "discord",
    "dropbox",
    "contribsys",
    "linked",
    "q~",
    "sumo",
    "xapp",
    "xox",
    "zxlk",
)
# One translation shows the rest: digits become "9", other token characters "a" ("-" stays),
# every other ASCII character a space (and any other character stays itself, which no rule
# counts in a token). Every prefixed token and bare key is then a word of _TOKEN_MIN or more
# characters, and card numbers and SSNs show as digit groups.
_SHAPES = str.maketrans(
    {
        chr(c): "9"
        if chr(c).isdigit()
        else "a"
        if chr(c).isalpha() or chr(c) in "_.+/="
        else "-"
        if chr(c) == "-"
        else " "
        for c in range(128)
    }
)
_TOKEN_MIN = 20
# The three signals, each one pass in C: the names as one trie (a search tries one character at
# a time where one substring scan per name went over the text 36 times), a run of _TOKEN_MIN
# word characters as one substring of the shapes flattened, the digit shapes as one pattern.
_NAMES_FOUND = re.compile(gitleaks.alternation(_NAMES))
_FLAT = str.maketrans("9-", "aa")
_RUN = "a" * _TOKEN_MIN
_DIGIT_SHAPES = re.compile(r"9999[ -]?9999|999-99-9999|9999[ -]999999")
# Rules that only the long-token or the digit signal can open run whenever that signal is there.
_BY_SIGNAL = {
    "token": ("Discord bot token", "AWS secret access key (bare)"),
    "digits": ("payment card number", "US social security number"),
}


def _signals(text: str, lowered: str) -> tuple[bool, bool, bool]:
    """(a name, a word of 20+ token characters, a card- or SSN-shaped digit group)."""
    shaped = text.translate(_SHAPES)
    return (
        _NAMES_FOUND.search(lowered) is not None,
        _RUN in shaped.translate(_FLAT),
        _DIGIT_SHAPES.search(shaped) is not None,
    )


def _replace(rule: Rule) -> Callable[[re.Match[str]], str]:
    def replace(match: re.Match[str]) -> str:
        whole = match.group(0)
        verdict = True if rule.check is None else rule.check(match)
        if not verdict:
            # Not this rule's secret ("app_id": ...), but the rest of what it spans may hold
            # one ("app_id": "x api_key=..."): look again past the vetoed start.
            head = (match.group(rule.keep) if rule.keep else "") or whole[:1]
            return head + rule.pattern.sub(replace, whole[len(head) :])
        if verdict is not True and verdict < len(whole):  # the secret is the match's head
            return MASK + whole[verdict:]
        kept = match.group(rule.keep) if rule.keep and match.group(rule.keep) else ""
        value = whole[len(kept) :]
        # A quoted value keeps its (escaped) quotes, so JSON text stays JSON.
        quote = _QUOTE.match(value)
        if quote and len(value) >= 2 * len(quote.group(0)) and value.endswith(quote.group(0)):
            return f"{kept}{quote.group(0)}{MASK}{quote.group(0)}"
        return kept + MASK

    return replace


_REPLACERS = {rule.name: _replace(rule) for rule in RULES}


# Our own values that gitleaks' generic rule would take for secrets: an API key's fingerprint
# (``http.keys.fingerprint``), which the gateway records as ``"key": "key-0123456789"``.
_OWN_IDS = re.compile(r"key-[0-9a-f]{10}")


@dataclass(frozen=True)
class _Formats:
    """gitleaks' rules, indexed by keyword: one pass of a trie over the text finds the keywords."""

    rules: tuple[gitleaks.GitleaksRule, ...]
    keywords: re.Pattern[str]  # matches, at every position, the longest keyword starting there
    implied: dict[str, frozenset[str]]  # a keyword found -> every keyword inside it


@cache
def _formats() -> _Formats:
    # Loaded on the first text that passes the gate (about 80 ms, once per process).
    rules = gitleaks.load_rules().rules
    words = {keyword for rule in rules for keyword in rule.keywords}
    implied = {word: frozenset(other for other in words if other in word) for word in words}
    return _Formats(rules, re.compile(f"(?=({gitleaks.alternation(words)}))"), implied)


def _mask_formats(text: str) -> str:
    """``text`` with every secret a gitleaks rule finds masked (rules whose keywords occur)."""
    formats = _formats()
    present: set[str] = set()
    for found in formats.keywords.findall(text.lower()):
        present |= formats.implied[found]
    if not present:
        return text
    spans = sorted(
        (start, end)
        for rule in formats.rules
        if not present.isdisjoint(rule.keywords)
        for start, end in rule.secret_spans(text)
        if not _OWN_IDS.fullmatch(text, start, end)
    )
    if not spans:
        return text
    merged: list[list[int]] = []  # two rules' overlapping or touching secrets: one mask
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    parts: list[str] = []
    last = 0
    for start, end in merged:
        parts += (text[last:start], MASK)
        last = end
    parts.append(text[last:])
    return "".join(parts)


def may_hold_secret(text: str) -> bool:
    """Whether any rule could match ``text``: False means :func:`scrub` returns it as it is."""
    return any(_signals(text, text.lower()))


# Short texts already found clean: an op's endpoint, agent, run and labels repeat from op to
# op, and a dictionary lookup costs a tenth of the gate. Bounded; emptied when full.
_KNOWN_CLEAN: dict[str, None] = {}
_KNOWN_CLEAN_MAX = 20_000
_KNOWN_CLEAN_LEN = 80


def any_secret(texts: Iterable[str | None]) -> bool:
    """Whether any of ``texts`` may hold a secret (one gate over all of them), so that a record
    of many short fields pays the gate once, and nothing for fields seen clean before."""
    fresh = [text for text in texts if text and text not in _KNOWN_CLEAN]
    if not fresh:
        return False
    if may_hold_secret("\n".join(fresh)):
        return True
    if len(_KNOWN_CLEAN) > _KNOWN_CLEAN_MAX:
        _KNOWN_CLEAN.clear()
    for text in fresh:
        if len(text) <= _KNOWN_CLEAN_LEN:
            _KNOWN_CLEAN[text] = None
    return False


def scrub(text: str) -> str:
    """``text`` with every secret the rules know replaced by ``[REDACTED]`` (what names it
    kept), and any lone surrogate (which no store can encode) replaced by U+FFFD."""
    if not text:
        return text
    if not text.isascii():
        text = _LONE_SURROGATE.sub("\ufffd", text)
    lowered = text.lower()
    named, token, digits = _signals(text, lowered)
    if not (named or token or digits):
        return text
    for rule in RULES:
        if rule.keywords is not None:
            if not any(keyword in lowered for keyword in rule.keywords):
                continue
        elif not (
            (token and rule.name in _BY_SIGNAL["token"])
            or (digits and rule.name in _BY_SIGNAL["digits"])
            or (rule.gate is not None and named and rule.gate.search(text))
        ):
            continue
        scrubbed = rule.pattern.sub(_REPLACERS[rule.name], text)
        if scrubbed != text:
            text = scrubbed
            lowered = text.lower()
    return _mask_formats(text)


def scrub_value(value: Any) -> Any:
    """A JSON-like value (dicts, lists, text, numbers) with every text scrubbed, and the whole
    value of any key that names a secret (:func:`names_secret`: ``password``, ``api_key``,
    ``private_key_id``, ``token``, ...) masked."""
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        cleaned: dict[Any, Any] = {}
        for key, item in value.items():
            name = scrub(key) if isinstance(key, str) else key
            if (
                isinstance(key, str)
                and item is not None
                and not isinstance(item, (dict, list, bool))
                and names_secret(key)
            ):
                cleaned[name] = MASK
            else:
                cleaned[name] = scrub_value(item)
        return cleaned
    if isinstance(value, (list, tuple)):
        return [scrub_value(item) for item in value]
    return value


def scrub_ungated(text: str) -> str:
    """Every rule run on ``text`` with no gate and no keyword check of ours (a gitleaks rule
    still runs only with its keywords, which is the rule): slow, and the reference the gated
    :func:`scrub` must agree with (a property test holds them together)."""
    if text and not text.isascii():
        text = _LONE_SURROGATE.sub("\ufffd", text)
    for rule in RULES:
        text = rule.pattern.sub(_REPLACERS[rule.name], text)
    return _mask_formats(text) if text else text
