"""Secrets masked out of every text agentlake stores: one tested rule table, whole secrets masked.

Owns :data:`RULES` (one row per kind of secret: its pattern, the keywords that must appear
before the pattern is tried, and how much of the match is kept) and :func:`scrub`. The table
covers the formats of the maintained secret scanners' rule sets (gitleaks, detect-secrets)
that a staffing platform's ops, lessons and traces can carry: private keys (PEM, OpenSSH,
PuTTY, age), JWTs, cloud keys (AWS access key ids and secret keys, Google, Azure storage,
DigitalOcean), SaaS tokens (GitHub, GitLab, Slack tokens and webhooks, Stripe, SendGrid,
Twilio, npm, PyPI, Hugging Face, Shopify, Mailgun, Mailchimp, Discord, Telegram, Square,
Databricks, Postman, OpenAI/Anthropic-style ``sk-`` keys), credentials in URLs
(``redis://:pw@host``), ``Authorization`` headers of any scheme, cookies, ``password=...``
style pairs (the value runs to the end of the quoted string or the next whitespace, so
``Tr0ub4dor&3xyz`` is masked whole) and personal data: payment card numbers (Luhn-checked)
and US social security numbers. ``tests/observe/test_observe_scrub.py`` holds a corpus of
every format, and a test that none of them is stored verbatim anywhere.

The whole secret is replaced by ``[REDACTED]``; what names it (``password=``,
``Authorization: Bearer``, the URL's user) is kept so the text still reads. Cost: the usual
text has none of the keywords and costs one lower-casing and a substring scan per keyword;
a rule's regular expression runs only when one of its keywords is present.

It does not decide what is stored (``model``, ``learn.store``); it cleans what they store.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

MASK = "[REDACTED]"


@dataclass(frozen=True)
class Rule:
    """One kind of secret. ``keywords`` (lower-case) gate the pattern: it is tried only when one
    occurs in the lower-cased text; ``None`` means the ``gate`` pattern decides instead.
    ``keep`` names the group kept before the mask (e.g. the header name); ``check`` may veto a
    match (the Luhn test of card numbers)."""

    name: str
    pattern: re.Pattern[str]
    keywords: tuple[str, ...] | None
    keep: str | None = None
    gate: re.Pattern[str] | None = None
    check: Callable[[str], bool] | None = None


def _luhn(text: str) -> bool:
    digits = [int(ch) for ch in text if ch.isdigit()]
    if not 13 <= len(digits) <= 19:
        return False
    total = 0
    for index, digit in enumerate(reversed(digits)):
        if index % 2:
            digit *= 2
            if digit > 9:
                digit -= 9
        total += digit
    return total % 10 == 0


def _r(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, flags)


_I = re.IGNORECASE
_QUOTE = re.compile(r"""\\*["']""")
# A value after "key=" or "key: ": a string quoted with the same quote (escaped any number of
# times: JSON inside JSON), or everything up to whitespace, a quote or a backslash.
_VALUE = r"""(?:(?P<q>\\*["'])(?:(?!(?P=q))[^\n])*(?P=q)|[^\s"'<>\\]+)"""
_SECRET_NAMES = (
    r"api[_-]?key|apikey|x-api-key|access[_-]?key(?:[_-]?id)?|secret[_-]?access[_-]?key|access[_-]?token|"
    r"auth[_-]?token|refresh[_-]?token|id[_-]?token|client[_-]?secret|app[_-]?secret|secret[_-]?key|"
    r"private[_-]?key|signing[_-]?key|encryption[_-]?key|secret|token|password|passwd|passphrase|pwd|"
    r"credentials?|session[_-]?(?:id|token|key)|sessionid|aws_secret_access_key|twilio[_-]?auth[_-]?token"
)
# A mapping key that names a secret: its whole value is masked (see scrub_value).
SECRET_KEY = re.compile(rf"(?:{_SECRET_NAMES}|(?:proxy-)?authorization|(?:set-)?cookie)", re.IGNORECASE)

RULES: tuple[Rule, ...] = (
    Rule("private key (PEM, OpenSSH, PGP)",
         _r(r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----[^\"]*?(?:-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|(?=\")|\Z)"),
         ("-----begin",)),
    Rule("PuTTY private key", _r(r"PuTTY-User-Key-File-\d+:[^\"]*?(?:Private-MAC:\s*[0-9a-fA-F]+|(?=\")|\Z)"), ("putty-user-key",)),
    Rule("age secret key", _r(r"AGE-SECRET-KEY-1[0-9A-Z]{58}"), ("age-secret-key",)),
    Rule("JWT", _r(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"), ("eyj",)),
    Rule("password in a URL",
         _r(r"(?P<keep>\b[a-z][a-z0-9+.-]*://[^/\s:@\"']*:)[^\s/\"'\\]*(?=@[^\s/@\"']+(?:[/\s\"']|\Z))", _I), ("://",), keep="keep"),
    Rule("Slack webhook", _r(r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_+-]+", _I), ("hooks.slack",)),
    Rule("Discord webhook", _r(r"https://(?:\w+\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_-]+", _I), ("discord",)),
    Rule("Authorization header",
         _r(r"(?P<keep>\b(?:proxy-)?authorization\b\\*[\"']?\s*[:=]\s*\\*[\"']?\s*(?:(?:basic|bearer|token|digest|negotiate|ntlm|apikey|aws4-hmac-sha256|sharedkey)\s+)?)[^\s\"'\\]+(?:[ ,][A-Za-z]+=[^\s,\"']+)*", _I),
         ("authorization",), keep="keep"),
    Rule("bearer or basic credentials",
         _r(r"(?P<keep>\b(?:bearer|basic|token)\s+)(?:(?=[A-Za-z0-9._~+/=-]*[0-9._~+/=-])[A-Za-z0-9._~+/-]{8,}|[A-Za-z]{16,})=*", _I),
         ("bearer", "basic", "token"), keep="keep"),
    Rule("cookie header",
         _r(r"(?P<keep>\b(?:set-)?cookie\b\\*[\"']?\s*[:=]\s*)(?:(?P<q>\\*[\"'])(?:(?!(?P=q))[^\n])*(?P=q)|[^\r\n\"\\]+)", _I),
         ("cookie",), keep="keep"),
    Rule("AWS access key id", _r(r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA|ASCA)[A-Z0-9]{16}\b"),
         ("akia", "asia", "abia", "acca", "agpa", "aida", "aipa", "anpa", "anva", "aroa", "apka", "asca")),
    Rule("GitHub token", _r(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b"),
         ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_")),
    Rule("GitLab token", _r(r"\bgl(?:pat|dt|rt|cbt|ptt|ft|soat)-[A-Za-z0-9_-]{20,}"), ("glpat-", "gldt-", "glrt-", "glcbt-", "glptt-", "glft-", "glsoat-")),
    Rule("Slack token", _r(r"\b(?:xox[abposre]-[A-Za-z0-9-]{10,}|xapp-\d-[A-Za-z0-9-]{10,})"), ("xox", "xapp-")),
    Rule("Stripe key", _r(r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{10,}|\bwhsec_[A-Za-z0-9]{20,}"), ("_live_", "_test_", "whsec_")),
    Rule("sk-/pk-/rk- key (OpenAI, Anthropic, ...)", _r(r"\b(?:sk|pk|rk)-[A-Za-z0-9_-]{12,}"), ("sk-", "pk-", "rk-")),
    Rule("Google API key or OAuth secret", _r(r"\bAIza[0-9A-Za-z_-]{35}|\bGOCSPX-[0-9A-Za-z_-]{20,}|\bya29\.[0-9A-Za-z_-]{20,}"),
         ("aiza", "gocspx-", "ya29.")),
    Rule("npm token", _r(r"\bnpm_[A-Za-z0-9]{36}\b"), ("npm_",)),
    Rule("PyPI token", _r(r"\bpypi-AgE[A-Za-z0-9_-]{50,}"), ("pypi-age",)),
    Rule("SendGrid key", _r(r"\bSG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{16,64}"), ("sg.",)),
    Rule("Azure storage key or SAS signature",
         _r(r"(?P<keep>\b(?:AccountKey|SharedAccessKey|SharedAccessSignature|sig)=)[A-Za-z0-9+/%]{16,}={0,2}", _I),
         ("accountkey=", "sharedaccess", "sig="), keep="keep"),
    Rule("Twilio API key", _r(r"\bSK[0-9a-fA-F]{32}\b"), ("sk",)),
    Rule("Hugging Face token", _r(r"\bhf_[A-Za-z]{30,40}\b"), ("hf_",)),
    Rule("Shopify token", _r(r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b"), ("shpat_", "shpca_", "shppa_", "shpss_")),
    Rule("DigitalOcean token", _r(r"\bdo[por]_v1_[a-f0-9]{64}\b"), ("_v1_",)),
    Rule("Mailgun or Mailchimp key", _r(r"\bkey-[0-9a-f]{32}\b|\b[0-9a-f]{32}-us\d{1,2}\b"), ("key-", "-us")),
    Rule("Telegram bot token", _r(r"(?<!\d)\d{8,10}:AA[0-9A-Za-z_-]{33}\b"), (":aa",)),
    Rule("Discord bot token", _r(r"\b[MN][A-Za-z\d]{23,25}\.[\w-]{6}\.[\w-]{27,38}\b"), None,
         gate=_r(r"[MN][A-Za-z\d]{23,25}\.")),
    Rule("Square token", _r(r"\bsq0(?:atp|csp)-[0-9A-Za-z_-]{22,60}|\bEAAA[A-Za-z0-9_-]{60}"), ("sq0", "eaaa")),
    Rule("Databricks token", _r(r"\bdapi[a-f0-9]{32}(?:-\d)?\b"), ("dapi",)),
    Rule("Postman key", _r(r"\bPMAK-[a-f0-9]{24}-[a-f0-9]{34}\b"), ("pmak-",)),
    Rule("named secret (password=..., api_key: ...)",
         _r(rf"(?P<keep>(?<![A-Za-z0-9])(?:{_SECRET_NAMES})\\*[\"']?\s*(?:[:=]|=>)\s*)(?!\[REDACTED\]){_VALUE}", _I),
         ("key", "secret", "token", "passw", "passphrase", "pwd", "credential", "session"), keep="keep"),
    Rule("AWS secret access key (bare)",
         _r(r"(?<![A-Za-z0-9/+=])(?=[A-Za-z0-9/+]{0,39}[A-Z])(?=[A-Za-z0-9/+]{0,39}[a-z])(?=[A-Za-z0-9/+]{0,39}[0-9])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"),
         None, gate=_r(r"[A-Za-z0-9/+]{40}")),
    Rule("payment card number", _r(r"(?<![\d-])(?:[3456]\d{3}|2[2-7]\d{2})(?:[ -]?\d){9,15}(?![\d-])"), None,
         gate=_r(r"\d{4}[ -]?\d{4}|\d{4}[ -]\d{6}"), check=_luhn),
    Rule("US social security number",
         _r(r"(?<![\d-])(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![\d-])|(?P<keep>\b(?:ssn|social security(?: number)?)\b\s*[:#]?\s*)\d{9}\b", _I),
         None, gate=_r(r"\d{3}-\d{2}-\d{4}|(?i:ssn|social security)"), keep="keep"),
)  # fmt: skip

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")

# The gate: no rule can match a text that has none of these. Checked with str.lower, str.translate
# and substring search (all in C, about 1.5 us for the usual op), where running even one
# regular expression over the text costs about 30 ns per character.
_NAMES = (
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
)
# One translation shows the rest: digits become "9", other token characters "a" ("-" stays),
# everything else a space. Every prefixed token and bare key of the table is then a word of 20
# or more characters, and card numbers and SSNs show as digit groups.
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
_DIGIT_SHAPES = ("999-99-9999", "9999 9999", "9999-9999", "99999999", "9999 999999", "9999-999999")
# Rules that only the long-token or the digit signal can open run whenever that signal is there.
_BY_SIGNAL = {
    "token": ("Discord bot token", "AWS secret access key (bare)"),
    "digits": ("payment card number", "US social security number"),
}


def _signals(text: str, lowered: str) -> tuple[bool, bool, bool]:
    """(a name keyword, a word of 20+ token characters, a card- or SSN-shaped digit group).

    ``map`` over the bound ``__contains__`` keeps the loops in C: a Python loop over the
    keywords cost more than the searches themselves.
    """
    named = any(map(lowered.__contains__, _NAMES))
    shaped = text.translate(_SHAPES)
    token = max(map(len, shaped.split()), default=0) >= _TOKEN_MIN
    digits = any(map(shaped.__contains__, _DIGIT_SHAPES))
    return named, token, digits


def _replace(rule: Rule) -> Callable[[re.Match[str]], str]:
    def replace(match: re.Match[str]) -> str:
        whole = match.group(0)
        if rule.check is not None and not rule.check(whole):
            return whole
        kept = match.group(rule.keep) if rule.keep and match.group(rule.keep) else ""
        value = whole[len(kept) :]
        # A quoted value keeps its (escaped) quotes, so JSON text stays JSON.
        quote = _QUOTE.match(value)
        if quote and len(value) >= 2 * len(quote.group(0)) and value.endswith(quote.group(0)):
            return f"{kept}{quote.group(0)}{MASK}{quote.group(0)}"
        return kept + MASK

    return replace


_REPLACERS = {rule.name: _replace(rule) for rule in RULES}


def may_hold_secret(text: str) -> bool:
    """Whether any rule could match ``text``: False means :func:`scrub` returns it as it is."""
    return any(_signals(text, text.lower()))


# Short texts already found clean: an op's endpoint, agent, run, role and city repeat from op to
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
    """``text`` with every secret the rule table knows replaced by ``[REDACTED]`` (what names
    it kept), and any lone surrogate (which no store can encode) replaced by U+FFFD."""
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
    return text


def scrub_value(value: Any) -> Any:
    """A JSON-like value (dicts, lists, text, numbers) with every text scrubbed, and the whole
    value of any key that names a secret (``password``, ``api_key``, ``token``, ...) masked."""
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        cleaned: dict[Any, Any] = {}
        for key, item in value.items():
            name = scrub(key) if isinstance(key, str) else key
            if (
                isinstance(key, str)
                and SECRET_KEY.fullmatch(key)
                and item is not None
                and not isinstance(item, (dict, list, bool))
            ):
                cleaned[name] = MASK
            else:
                cleaned[name] = scrub_value(item)
        return cleaned
    if isinstance(value, (list, tuple)):
        return [scrub_value(item) for item in value]
    return value


def scrub_ungated(text: str) -> str:
    """Every rule run on ``text`` with no gate and no keyword check: slow, and the reference the
    gated :func:`scrub` must agree with (a property test holds them together)."""
    if text and not text.isascii():
        text = _LONE_SURROGATE.sub("\ufffd", text)
    for rule in RULES:
        text = rule.pattern.sub(_REPLACERS[rule.name], text)
    return text
