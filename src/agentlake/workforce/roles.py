"""Every rule for matching the role catalogue and the certification vocabulary.

Owns :func:`normalize_certification`, which maps any spelling real records use back to the
canonical certification, and the one role finder (:func:`find_role`; :func:`role_in_text` scans
a sentence with the same spellings), with what is built on them (a role's certification named
loosely, the spans of roles and certifications in a text, the same role under its synonyms,
held and missing certifications). Search, verification, the order parser, the client's judge
and the graph's demo model all match roles and certifications through here, so they agree. The
catalogue itself, as data, is ``catalogue``'s. It does not read the lake.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

from agentlake.workforce.catalogue import CERTIFICATIONS, ROLES, Role

_CERT_NAMES = frozenset(CERTIFICATIONS)


def role_catalogue() -> dict[str, Role]:
    """Role name -> :class:`Role` (skills, certifications, synonyms, sector)."""
    return dict(ROLES)


def _normalize(text: str) -> str:
    text = text.lower().replace("&", " and ")
    return re.sub(r"\s+", " ", re.sub(r"[^a-z0-9]+", " ", text)).strip()


@lru_cache(maxsize=1)
def _compiled() -> list[tuple[str, re.Pattern[str]]]:
    return [(cert.name, re.compile(pattern)) for cert in CERTIFICATIONS.values() for pattern in cert.patterns]


def normalize_certification(text: str) -> str:
    """Map a certification as written ('OSHA-10 Hour', 'osha10', 'CDL-A') to its canonical
    name ('OSHA 10', 'CDL Class A'). Unknown text comes back trimmed, with its spacing
    collapsed, so callers can still compare it."""
    normalized = _normalize(text)
    for name, pattern in _compiled():
        if pattern.search(normalized):
            return name
    return re.sub(r"\s+", " ", text).strip()


def known_certification(text: str) -> str | None:
    """The catalogue's name for a certification as written ('osha-10' -> 'OSHA 10'), or
    ``None`` when no catalogue certification matches it."""
    name = normalize_certification(text)
    return name if name in _CERT_NAMES else None


def closest_certifications(text: str, n: int = 3) -> list[str]:
    """Catalogue certifications whose names or spellings look most like ``text``, best first."""
    wanted = _normalize(text)
    spellings = {
        _normalize(v): cert.name for cert in CERTIFICATIONS.values() for v in (cert.name, *cert.variants)
    }
    close = difflib.get_close_matches(wanted, list(spellings), n=n * 3, cutoff=0.4)
    return list(dict.fromkeys(spellings[c] for c in close))[:n]


# Words that say "a certification" (and are no other generic word).
CERTIFICATION_WORDS = frozenset(
    "license licence licensed cert certs certified certificate certification credential".split()
)
# Words that say "a certification" without saying which.
_GENERIC_CERT_WORDS = frozenset(
    "license licence licensed cert certs certified certificate certification card credential training "
    "trained required must have with their a an the and of valid current active state".split()
)


def certification_of_role(text: str, role: str | None) -> str | None:
    """The one certification of ``role`` that ``text`` names loosely ('journeyman license' for
    an Electrician, 'their CDL' for a CDL-A Truck Driver): every word of ``text`` that says
    which is a word of that certification's names, and of no other of the role's; a text that
    says none ('state certification required') names the role's own certification, the one
    named after the role ('CNA Certification' of a Certified Nursing Assistant), if it has one.
    ``None`` otherwise (and for a role outside the catalogue)."""
    found = find_role(role) if role else None
    if found is None:
        return None
    names = role_names(found.name)
    # The role's own name names the role, not a certificate ('quality inspector' is no ASQ CQI).
    own_words = {w for name in names for w in name.split()} | {
        f"{w}s" for name in names for w in name.split()
    }
    words = _normalize(text).split()
    wanted = {w for w in words if w not in _GENERIC_CERT_WORDS and w not in own_words}
    if not wanted:
        if not any(w in CERTIFICATION_WORDS for w in words):
            return None  # 'must have', 'required': no certification said at all
        own = [
            name
            for name, _ in found.certifications
            if any(re.search(rf"\b{re.escape(n)}\b", name.lower()) for n in names)
        ]
        return own[0] if len(own) == 1 else None
    matches = [
        name
        for name, _ in found.certifications
        if wanted
        <= {w for spelling in (name, *CERTIFICATIONS[name].variants) for w in _normalize(spelling).split()}
    ]
    return matches[0] if len(matches) == 1 else None


def split_certifications(value: str | None) -> list[str]:
    """The canonical certifications in a workers.certifications value (', '-separated)."""
    if not value:
        return []
    return [normalize_certification(part) for part in value.split(",") if part.strip()]


# --- finding roles ------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _spellings() -> dict[str, Role]:
    """Every normalised spelling (name or synonym) -> its role; the first role listed wins a
    spelling two roles share."""
    index: dict[str, Role] = {}
    for role in ROLES.values():
        for spelling in (role.name, *role.synonyms):
            index.setdefault(_normalize(spelling), role)
    return index


@lru_cache(maxsize=1024)
def find_role(text: str) -> Role | None:
    """The one role finder: the catalogue role whose name or a synonym is ``text``.

    Case, punctuation and spacing do not matter, and a plural finds its singular ('Welders',
    'forklift drivers' -> Forklift Operator). ``None`` for a role the catalogue does not know.
    """
    wanted = _normalize(text)
    index = _spellings()
    found = index.get(wanted)
    if found is None and wanted.endswith("s"):
        found = index.get(wanted[:-1])
    if found is None and wanted.endswith("es"):
        found = index.get(wanted[:-2])
    return found


def closest_roles(text: str, n: int = 3) -> list[str]:
    """Catalogue roles whose names or synonyms look most like ``text``, best first."""
    close = difflib.get_close_matches(_normalize(text), list(_spellings()), n=n * 3, cutoff=0.4)
    return list(dict.fromkeys(_spellings()[c].name for c in close))[:n]


@lru_cache(maxsize=1)
def _longest_first() -> list[tuple[str, Role]]:
    # Stable: between spellings of one length, the catalogue's order decides.
    return sorted(_spellings().items(), key=lambda item: -len(item[0]))


def role_in_text(text: str) -> Role | None:
    """The catalogue role a sentence mentions ('how many forklift drivers are in CA?'), by the
    longest spelling found in it, singular or plural; ``None`` when it names none."""
    plain = f" {_normalize(text)} "
    for spelling, role in _longest_first():
        if f" {spelling} " in plain or f" {spelling}s " in plain or f" {spelling}es " in plain:
            return role
    return None


def plain_text(text: str) -> tuple[str, list[int]]:
    """``text`` as the finders compare it (lower case, '&' as 'and', each run of other
    characters one space, trimmed) and, for each character of it, its index in ``text`` (plus
    one entry for the end), so a span found in the plain form maps back to the words written."""
    chars: list[str] = []
    where: list[int] = []
    for index, char in enumerate(text):
        if char == "&":
            pieces = " and "
        elif char.isascii() and char.isalnum():
            pieces = char.lower()
        else:
            pieces = " "
        for piece in pieces:
            if piece == " " and (not chars or chars[-1] == " "):
                continue
            chars.append(piece)
            where.append(index)
    while chars and chars[-1] == " ":
        chars.pop()
        where.pop()
    where.append(len(text))
    return "".join(chars), where


def role_spans(plain: str) -> list[tuple[int, int, Role]]:
    """Every catalogue role spelled in ``plain`` (the first of :func:`plain_text`), singular or
    plural, as (start, end, role) in ``plain``, left to right; where spellings overlap the
    longest wins."""
    found: list[tuple[int, int, Role]] = []
    taken = [False] * len(plain)
    for spelling, role in _longest_first():
        for match in re.finditer(rf"(?<![a-z0-9]){re.escape(spelling)}(?:s|es)?(?![a-z0-9])", plain):
            start, end = match.span()
            if not any(taken[start:end]):
                taken[start:end] = [True] * (end - start)
                found.append((start, end, role))
    return sorted(found, key=lambda span: span[0])


def certification_spans(plain: str) -> list[tuple[int, int, str]]:
    """Every catalogue certification spelled in ``plain`` (the first of :func:`plain_text`), as (start,
    end, canonical name), left to right, by the same patterns as :func:`normalize_certification`."""
    found: list[tuple[int, int, str]] = []
    for name, pattern in _compiled():
        for match in pattern.finditer(plain):
            if not any(s < match.end() and match.start() < e for s, e, _ in found):
                found.append((match.start(), match.end(), name))
    return sorted(found, key=lambda span: span[0])


@lru_cache(maxsize=512)
def role_names(role: str) -> frozenset[str]:
    """Lower-case role names accepted for ``role``: the catalogue role and its synonyms.

    'Welders', 'welding' and 'Welder' all give the Welder set; a role outside the catalogue
    matches only itself.
    """
    text = " ".join(role.split())
    found = find_role(text)
    if found is None:
        return frozenset({text.casefold()})
    return frozenset({found.name.casefold(), *(s.casefold() for s in found.synonyms)})


def canonical_role(role: str) -> str:
    """The catalogue's name for ``role`` ('forklift driver' -> 'Forklift Operator'), else ``role``."""
    text = " ".join(role.split())
    found = find_role(text)
    return found.name if found is not None else text


def same_role(worker_role: str | None, order_role: str) -> bool:
    """True when a worker's role satisfies the ordered role (synonyms both ways)."""
    if not worker_role:
        return False
    wanted = role_names(order_role)
    return worker_role.casefold() in wanted or bool(role_names(worker_role) & wanted)


# --- holding certifications ----------------------------------------------------------------------


def certification_key(name: str) -> str:
    """The canonical, case-folded name of a certification as written anywhere."""
    return normalize_certification(name).casefold()


def held_certifications(value: Any) -> set[str]:
    """Canonical keys of the certifications in a workers.certifications value."""
    if value is None:
        return set()
    parts: Iterable[Any] = value if isinstance(value, (list, tuple)) else re.split(r"[,;|]", str(value))
    return {certification_key(str(part)) for part in parts if str(part).strip()}


def missing_certifications(value: Any, required: Sequence[str]) -> list[str]:
    """The required certifications (as written in ``required``) a worker does not hold."""
    held = held_certifications(value)
    return [req for req in required if certification_key(req) not in held]
