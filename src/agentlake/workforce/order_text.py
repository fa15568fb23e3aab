"""What an order's text says for certain, read by code: the words half of an order in words.

Owns :func:`words_say` and what it gives (:class:`WordsRead`: the numbers that can be a count,
the known cities and the state beside each, the days, clock times (:class:`Clock`) and parts of
the day, distances, clients, the catalogue's roles and certifications as spelled, soft wishes),
the word lists and patterns it reads with, :func:`grounded` (whether a phrase is in the words),
and whether a chat message reads as an order (:func:`reads_as_order`) or as a question about
data (:func:`asks_about_data`). It calls no model and checks no reading: settling a reader's
reading against these words is ``order_words``'; where places are is ``geo``'s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from typing import TYPE_CHECKING, Any, Literal

from agentlake.workforce.catalogue import Role
from agentlake.workforce.roles import (
    CERTIFICATION_WORDS,
    certification_of_role,
    certification_spans,
    known_certification,
    plain_text,
    role_spans,
)

if TYPE_CHECKING:
    from agentlake.workforce.geo import Gazetteer, Mention


PartOfDay = Literal["morning", "afternoon", "evening", "night"]

_UNITS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen"
).split()

_TENS = {
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
}

NUMBER_WORDS: dict[str, int] = {word: value for value, word in enumerate(_UNITS) if value} | _TENS

# Counts said in words other than a number.
_PHRASE_COUNTS = (
    (r"half a dozen|half dozen", 6),
    (r"(?:a )?dozen", 12),
    (r"(?:a )?couple(?: of)?", 2),
    (r"(?:a )?pair of", 2),
    (r"(?:a )?trio of", 3),
)

# A count only vaguely said: never read as a number.
_VAGUE = r"a few|few|several|some|a handful of|handful of|a bunch of|bunch of|multiple|a number of|a couple more|more"

# Words that name people, not a role ('reliable folks', 'need people').
NO_ROLE = frozenset(
    "people person folks folk guys guy gals workers worker staff staffers hands help helpers temps temp "
    "bodies someone somebody anyone employees employee crew team candidates candidate".split()
)

STOP_WORDS = frozenset(
    "a an the of in on at to for by with from and or is are be who that this these those our we us i "
    "need needs needed want wants please must should can could would will have has had some any".split()
)

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")

WEEKDAY_RE = r"(mon|tues?|wed(?:nes)?|thu(?:rs?)?|fri|sat(?:ur)?|sun)(?:day)?"

_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")

_MONTH_RE = r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"

_AMPM = r"(?P<ap>a\.?\s?m\b\.?|p\.?\s?m\b\.?)"

_PARTS: tuple[tuple[str, PartOfDay], ...] = (
    (r"early morning|morning|mornings|day shift|first shift|1st shift|am shift", "morning"),
    (r"afternoon|afternoons|second shift|2nd shift|swing shift|pm shift", "afternoon"),
    (r"evening|evenings", "evening"),
    (r"tonight|overnight|overnights|night|nights|night shift|third shift|3rd shift|graveyard", "night"),
)

SOFT = re.compile(
    r"\b(?:a plus|plus|preferred|prefer|ideally|ideal|nice to have|bonus|if possible|helpful|welcome|optional)\b"
)

_LICENCE = re.compile(r" (?:license|licence|cert|certified|certification|card|endorsement)\b")

# Words that end the job's name after a count ('2 welders near ...', '3 cooks for ...').
_ROLE_WORDS_END = frozenset(
    "in near around for at to by from on with who that which tomorrow today tonight asap please needed "
    "wanted required starting next this and or outside within".split()
)

# A certification's name next to these words names experience of it, which is a wish.
_SKILL_AFTER = re.compile(
    r"\W*(?:experience|exp\b|experienced|background|skills?|knowledge|familiarity|know-how)"
)

_SKILL_BEFORE = re.compile(
    r"\b(?:experience|experienced|familiar|skilled|comfortable)\s+(?:with|in|on|using)\s+(?:a\s+|an\s+|the\s+)?\W*$"
)

_NEGATED = re.compile(r"\b(?:no|not|without|don'?t|doesn'?t|needn'?t)\b")

_CONNECTOR = r"\s*(?:-|–|to|until|till|til|thru|through)\s*"


@dataclass(frozen=True)
class Clock:
    """A time of day the text names; ``exact`` when am/pm or a 24-hour form settles it ('7pm',
    '19:00'), else a bare hour ('at 7') that only says the hour on a 12-hour dial."""

    at: time
    exact: bool
    start: int


@dataclass
class WordsRead:
    """What the words of an order say for certain, read by code (:func:`words_say`). Each list
    holds every value of its kind the text names; ``count``, ``day``, ``start``, ``end``,
    ``part``, ``radius`` and ``place`` are set only when the text names exactly one."""

    counts: list[int] = field(default_factory=list)
    count: int | None = None
    vague: str | None = None
    one_role: bool = False  # 'a welder', 'an electrician'
    role_words: str = ""  # the words after the count ('crane operators')
    days: list[date] = field(default_factory=list)
    clocks: list[Clock] = field(default_factory=list)
    start: time | None = None
    end: time | None = None
    parts: list[PartOfDay] = field(default_factory=list)
    radii: list[float] = field(default_factory=list)
    places: list[Mention] = field(default_factory=list)
    roles: list[Role] = field(default_factory=list)
    certifications: dict[str, bool] = field(default_factory=dict)  # name -> said softly ('a plus')
    certification_words: dict[str, str] = field(default_factory=dict)  # name -> as written
    clients: list[str] = field(default_factory=list)  # 'for Acme Builders': a name after 'for'
    plain: str = ""
    words: frozenset[str] = frozenset()

    @property
    def day(self) -> date | None:
        return self.days[0] if len(self.days) == 1 else None

    @property
    def part(self) -> PartOfDay | None:
        return self.parts[0] if len(self.parts) == 1 else None

    @property
    def radius(self) -> float | None:
        return self.radii[0] if len(self.radii) == 1 else None

    @property
    def place(self) -> Mention | None:
        """The one city named, with the one state written beside it anywhere ('Springfield
        tomorrow; Springfield, MO' is Springfield, MO); ``None`` for none, two cities or two states."""
        cities = {m.city for m in self.places}
        states = {m.state for m in self.places if m.state}
        if len(cities) != 1 or len(states) > 1:
            return None
        return next((m for m in self.places if m.state), self.places[0])


# A message that starts so asks about the data or the workspace ('how many welders are in OH?',
# 'find workers with forklift experience', 'set up an order workflow'): never an order.
_ASKS = re.compile(
    r"^\W*(?:how|what|what's|which|who|whom|whose|where|why|when|is|are|was|were|does|do|did|list|show|"
    r"find|search|count|compare|tell|explain|describe|set up|setup|make|build|create|add|extend|reset|"
    r"remove|delete|drop|select|with|top|best|worst|average|avg|sum|total|number)\b"
)

_REQUEST = re.compile(
    r"\b(?:need|needs|needed|needing|want|wants|wanted|looking for|look for|get me|send|book|hire|hiring|"
    r"staff|fill|require|requires|required|request|requesting|order|ordering|cover|supply|provide|"
    r"short|asap)\b"
)

_WHEN = re.compile(
    rf"\b(?:today|tonight|tomorrow|tmrw|{WEEKDAY_RE}|morning|afternoon|evening|overnight|shift|"
    r"\d{1,2}(?::\d\d)?\s*[ap]\.?m\b)"
)


def asks_about_data(text: str) -> bool:
    """Whether ``text`` starts as a question, a search or a command ('how many ...', 'show me
    ...', 'set up ...'): what :func:`reads_as_order` never takes for an order."""
    return bool(_ASKS.match(" ".join(text.lower().split())))


def reads_as_order(text: str) -> bool:
    """Whether a chat message is a staffing order ('need two welders near Cleveland OH tomorrow',
    '3 x Welder in Cleveland, OH', 'we need help asap') rather than a question about the data
    ('how many welders are in OH?', 'show me the welders') or the workspace ('set up an order
    workflow'): it names a catalogue role or people, does not start as a question, a search or a
    command, and asks for workers (a request word, a count before the role, or a day or time).
    Code, no model: it routes a message, the reader then reads it."""
    lowered = " ".join(text.lower().split())
    if not lowered or asks_about_data(lowered):
        return False
    if re.match(r"^\s*(?:fill\s+)?\d+\s*(?:x|×|\*)\s+\w", lowered):
        return True  # the grammar's form
    request = _REQUEST.search(lowered)
    if lowered.endswith("?") and not request:
        return False  # '2 welders in OH?' asks
    plain, _ = plain_text(text)
    numbers = "|".join([r"\d{1,4}", *NUMBER_WORDS, "a couple", "couple", "dozen", "a few", "few", "several"])
    if re.match(rf"^(?:{numbers})\s+(?:[a-z-]+\s+){{0,2}}[a-z-]+s\b", plain) and _WHEN.search(lowered):
        return True  # '2 crane operators in Houston TX thursday': a job the catalogue may lack
    roles = role_spans(plain)
    people = [m for m in re.finditer(r"[a-z]+", plain) if m[0] in NO_ROLE]
    if not roles and not people:
        return False
    named = [start for start, _, _ in roles] + [m.start() for m in people]
    counted = any(
        re.search(rf"(?<![a-z0-9])(?:{numbers})(?:\s+[a-z-]+){{0,3}}\s*$", plain[:start]) for start in named
    )
    return bool(request or counted or _WHEN.search(lowered))


def words_say(text: str, *, now: datetime, places: Gazetteer) -> WordsRead:
    """Read what ``text`` says for certain (see :class:`WordsRead`); ``now`` dates 'tomorrow'
    and weekdays, ``places`` knows the cities."""
    lowered = text.lower()
    taken = [False] * len(text)  # characters read as something other than a count

    def take(start: int, end: int) -> None:
        taken[start:end] = [True] * (end - start)

    read = WordsRead()
    plain, where = plain_text(text)
    read.plain = plain
    read.words = frozenset(word_stem(w) for w in plain.split())
    read.days = _days(lowered, now, take)
    read.clocks = _clocks(lowered, take)
    read.start, read.end = _start_end(lowered, read.clocks)
    read.parts = list(
        dict.fromkeys(part for pattern, part in _PARTS if re.search(rf"\b(?:{pattern})\b", lowered))
    )
    for match in re.finditer(r"(?<![\w.])(\d{1,3}(?:\.\d+)?)\s*-?\s*(?:miles?|mi)\b", lowered):
        read.radii.append(float(match[1]))
        take(*match.span())
    read.radii = list(dict.fromkeys(read.radii))
    read.places = places.mentions(text)
    for mention in read.places:
        take(mention.start, mention.end)
    role_at: list[tuple[int, int, Role]] = []
    for start, end, role in role_spans(plain):
        begin, finish = where[start], where[end - 1] + 1
        if any(m.start < finish and begin < m.end for m in read.places):
            continue  # 'MA' in 'Boston, MA' is the state, not a medical assistant
        if _LICENCE.match(plain, end):
            continue  # 'journeyman plumber license' names a licence, not the role
        role_at.append((begin, finish, role))
    read.roles = list(dict.fromkeys(role for _, _, role in role_at))
    for start, end, name in certification_spans(plain):
        begin, finish = where[start], where[end - 1] + 1
        take(begin, finish)
        if any(b <= begin and finish <= f for b, f, _ in role_at):
            continue  # 'forklift' inside 'forklift drivers' names the role
        clause = clause_around(lowered, begin, finish)
        if _NEGATED.search(clause):
            continue
        # 'forklift experience', 'experienced with forklifts': a skill, not the certificate
        skill = _SKILL_AFTER.match(lowered, finish) or _SKILL_BEFORE.search(lowered, 0, begin)
        soft = bool(SOFT.search(clause) or skill)
        read.certifications[name] = read.certifications.get(name, True) and soft
        read.certification_words.setdefault(name, text[begin:finish])
    if len(read.roles) == 1:
        # 'journeyman license required' of an electrician, 'state certification' of a CNA: a
        # clause of certificate words that names the one role's certification loosely.
        for match in re.finditer(r"[^,;.()]+", lowered):
            clause = match[0].strip()
            if not CERTIFICATION_WORDS & set(plain_text(clause)[0].split()) or _NEGATED.search(clause):
                continue
            if certification_spans(plain_text(clause)[0]):
                continue  # 'CPR certified' names its certificate
            loosely = certification_of_role(clause, read.roles[0].name)
            if loosely is not None and loosely not in read.certifications:
                read.certifications[loosely] = bool(SOFT.search(clause))
                read.certification_words[loosely] = text[match.start() : match.end()].strip()
    read.clients = _clients(text, read, role_at)
    _counts(lowered, taken, role_at, read)
    return read


# A company's name after 'for': capitalised words ('for Acme Builders', 'for Riverfront Steel').
_CLIENT_NAME = re.compile(
    r"\bfor\s+((?:[A-Z][\w&'.-]*)(?:\s+(?:[A-Z0-9][\w&'.-]*|&|of|and)(?=\s|$|[,.;!?)]))*)"
)

# Capitalised words after 'for' that name no company.
_NO_CLIENT = re.compile(
    rf"^(?:{WEEKDAY_RE}|{_MONTH_RE}|today|tonight|tomorrow|next|this|the|a|an|my|our|us|me|asap|"
    r"first|second|third|night|day|morning|afternoon|evening|overnight|weekend|shift)\b"
)


def _clients(text: str, read: WordsRead, role_at: list[tuple[int, int, Role]]) -> list[str]:
    """The company names written after 'for' that are no place, role, day or certification."""
    found: list[str] = []
    for match in _CLIENT_NAME.finditer(text):
        begin, end = match.span(1)
        name = re.sub(r"\s+(?:&|of|and)$", "", match[1]).rstrip(".'-")
        if any(m.start < end and begin < m.end for m in read.places):
            continue  # 'for Indianapolis IN' is the place
        if any(b < end and begin < f for b, f, _ in role_at):
            continue
        if _NO_CLIENT.match(name.lower()) or known_certification(name) is not None:
            continue
        if name.upper() == name and len(name) <= 3:
            continue  # 'for OH', 'for ASAP'
        found.append(name)
    return list(dict.fromkeys(found))


def _days(lowered: str, now: datetime, take: Any) -> list[date]:
    today = now.date()
    found: list[tuple[int, date]] = []

    def add(match: re.Match[str], day: date | None) -> None:
        if day is not None:
            found.append((match.start(), day))
        take(*match.span())

    for match in re.finditer(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b", lowered):
        add(match, _date(int(match[1]), int(match[2]), int(match[3])))
    for match in re.finditer(r"(?<![\d/])(\d{1,2})/(\d{1,2})(?:/(\d{4}|\d{2}))?(?![\d/])", lowered):
        year = int(match[3]) + (2000 if match[3] and len(match[3]) == 2 else 0) if match[3] else None
        add(match, _next_date(today, int(match[1]), int(match[2]), year))
    for match in re.finditer(
        rf"\b{_MONTH_RE}\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s*(\d{{4}}))?", lowered
    ):
        year = int(match[3]) if match[3] else None
        add(match, _next_date(today, _MONTHS.index(match[1][:3]) + 1, int(match[2]), year))
    for match in re.finditer(
        rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH_RE}\b(?:,?\s*(\d{{4}}))?", lowered
    ):
        year = int(match[3]) if match[3] else None
        add(match, _next_date(today, _MONTHS.index(match[2][:3]) + 1, int(match[1]), year))
    for match in re.finditer(r"\bday after (?:tomorrow|tmrw)\b", lowered):
        add(match, today + timedelta(days=2))
    for match in re.finditer(r"\b(?<!after )(?:tomorrow|tmrw|tmr|tomorow|tommorow|tommorrow)\b", lowered):
        add(match, today + timedelta(days=1))
    for match in re.finditer(r"\b(?:today|tonight|this (?:morning|afternoon|evening))\b", lowered):
        add(match, today)
    for match in re.finditer(rf"\b(?:(?:next|this|coming|on)\s+)?{WEEKDAY_RE}\b", lowered):
        if match[1] in ("sun", "sat", "wed", "mon") and not match.group(0).endswith("day"):
            if not re.match(r"(?:next|this|coming|on)\s", match.group(0)):
                continue  # 'sat' and 'sun' alone are words
        add(match, weekday_after(today, weekday_of(match[1])))
    return list(dict.fromkeys(day for _, day in sorted(found)))


def weekday_of(abbrev: str) -> int:
    return next(i for i, name in enumerate(WEEKDAYS) if name.startswith(abbrev[:3]))


def weekday_after(today: date, weekday: int) -> date:
    """The next ``weekday`` (0 = Monday) after ``today``: 'Monday' said on a Monday is the next one."""
    ahead = (weekday - today.weekday()) % 7 or 7
    return today + timedelta(days=ahead)


def _date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _next_date(today: date, month: int, day: int, year: int | None) -> date | None:
    """A date written without its year is the next one from ``today`` on."""
    if year is not None:
        return _date(year, month, day)
    found = _date(today.year, month, day)
    if found is not None and found < today:
        found = _date(today.year + 1, month, day)
    return found


def _clocks(lowered: str, take: Any) -> list[Clock]:
    clocks: list[Clock] = []
    for match in re.finditer(rf"(?<![\d:.])(?P<h>1[0-2]|0?[1-9])(?::(?P<m>[0-5]\d))?\s*{_AMPM}", lowered):
        hour = int(match["h"]) % 12 + (12 if match["ap"].startswith("p") else 0)
        clocks.append(Clock(time(hour, int(match["m"] or 0)), True, match.start()))
        take(*match.span())
    for match in re.finditer(r"(?<![\d:.])(?P<h>[01]?\d|2[0-3])(?::|h)(?P<m>[0-5]\d)(?![\d:])", lowered):
        if not any(c.start == match.start() for c in clocks):
            clocks.append(
                Clock(
                    time(int(match["h"]), int(match["m"])),
                    int(match["h"]) > 12 or match["h"].startswith("0") or int(match["h"]) == 0,
                    match.start(),
                )
            )
            take(*match.span())
    for match in re.finditer(r"\b(noon|midday|midnight)\b", lowered):
        clocks.append(Clock(time(12 if match[1] != "midnight" else 0, 0), True, match.start()))
        take(*match.span())
    for match in re.finditer(
        rf"\b(?:at|by|from|starting|start|starts|until|till|til|to)\s+(?P<h>1[0-2]|0?[1-9])(?![\d:.]|\s*(?:x\b|{_AMPM}))",
        lowered,
    ):
        if not re.match(r"\s*(?:miles?|mi|workers?|people|folks|of)\b", lowered[match.end() :]):
            clocks.append(Clock(time(int(match["h"]), 0), False, match.start("h")))
            take(match.start("h"), match.end())
    # A bare start before an exact end ('7-3pm', '7 to 3:30pm'): the end's half of the day
    # unless the start's hour is past the end's ('7-3pm' starts in the morning).
    for match in re.finditer(
        rf"(?<![\d:.])(?P<h>1[0-2]|0?[1-9])(?::(?P<m>[0-5]\d))?{_CONNECTOR}(?P<h2>1[0-2]|0?[1-9])(?::[0-5]\d)?\s*{_AMPM}",
        lowered,
    ):
        if any(c.start == match.start() and c.exact for c in clocks):
            continue
        start_hour, end_hour = int(match["h"]) % 12, int(match["h2"]) % 12
        pm = match["ap"].startswith("p")
        if start_hour > end_hour:
            pm = not pm
        clocks = [c for c in clocks if c.start != match.start()]
        clocks.append(Clock(time(start_hour + (12 if pm else 0), int(match["m"] or 0)), True, match.start()))
        take(match.start(), match.start("h2"))
    return sorted(clocks, key=lambda c: c.start)


def _start_end(lowered: str, clocks: list[Clock]) -> tuple[time | None, time | None]:
    """The shift's start and end when the text names one time or one range of two."""
    exact = [c for c in clocks if c.exact]
    if len(exact) == 1 and len(clocks) == 1:
        return exact[0].at, None
    if len(clocks) == 2 and all(c.exact for c in clocks):
        first, second = clocks
        between = lowered[first.start : second.start]
        if re.search(rf"\d(?::\d\d)?\s*(?:[ap]\.?\s?m\b\.?)?{_CONNECTOR}$", between):
            return first.at, second.at
    return None, None


def clause_around(lowered: str, start: int, end: int) -> str:
    """The clause around ``lowered[start:end]``: up to the nearest , ; . ( ) or 'but' either side."""
    left = max((m.end() for m in re.finditer(r"[,;.()]|\bbut\b", lowered[:start])), default=0)
    right = re.search(r"[,;.()]|\bbut\b", lowered[end:])
    return lowered[left : end + right.start() if right else len(lowered)]


def _counts(lowered: str, taken: list[bool], role_at: list[tuple[int, int, Role]], read: WordsRead) -> None:
    """The numbers that can be the count: digits, number words and 'a couple', not those read
    as something else (dates, times, distances, certifications, hours, money, ordinals)."""

    def free(match: re.Match[str]) -> bool:
        return not any(taken[match.start() : match.end()])

    for pattern in (
        r"\$\s*\d[\d,]*(?:\.\d+)?",
        r"\b\d+(?:st|nd|rd|th)\b",
        r"\b\d+(?:\.\d+)?\s*-?\s*(?:hours?|hrs?|hr|h|years?|yrs?|yr|days?|weeks?|wks?|months?|mos?|%|percent|"
        r"dollars?|bucks|lbs?|pounds?|ft|feet|minutes?|mins?)\b",
        r"\b\d+\s*(?:/\s*(?:hr|hour|h)|an hour|per hour|a day|per day)\b",
        r"\b(?:level|lvl|section|sec|class|grade|tier|step|phase|building|bldg|dock|door|gate|line|unit|suite|ste|no|#)\s*\.?\s*#?\d+\b",
        r"\b\d{5}\b",
        r"\b24\s*/\s*7\b",
    ):
        for match in re.finditer(pattern, lowered):
            taken[match.start() : match.end()] = [True] * (match.end() - match.start())
    found: list[tuple[int, int, int]] = []  # (start, end, count)
    vague: list[str] = []
    for match in re.finditer(r"(?<![\w.:/$-])(\d{1,4})\s*-\s*(\d{1,4})(?![\w.:/%])", lowered):
        if free(match):
            vague.append(match.group(0))
            taken[match.start() : match.end()] = [True] * (match.end() - match.start())
    for match in re.finditer(r"(?<![\w.:/$])(?:x\s*)?(\d{1,4})(?:\s*x\b)?(?![\w.:/%])", lowered):
        if free(match):
            found.append((match.start(), match.end(), int(match[1])))
    units = "|".join(NUMBER_WORDS)
    for match in re.finditer(rf"\b({units})(?:[\s-]({'|'.join(_UNITS[1:10])}))?\b", lowered):
        if free(match) and not re.search(r"\b(?:no|any|some|every)\s*$", lowered[: match.start()]):
            value = NUMBER_WORDS[match[1]] + (NUMBER_WORDS[match[2]] if match[2] and match[1] in _TENS else 0)
            found.append((match.start(), match.end(), value))
    for pattern, value in _PHRASE_COUNTS:
        for match in re.finditer(rf"\b(?:{pattern})\b", lowered):
            if free(match):
                found.append((match.start(), match.end(), value))
                taken[match.start() : match.end()] = [True] * (match.end() - match.start())
    for match in re.finditer(rf"\b(?:{_VAGUE})\b", lowered):
        if free(match):
            vague.append(match.group(0))
    read.counts = list(dict.fromkeys(count for _, _, count in sorted(found)))
    if len(read.counts) == 1:
        read.count = read.counts[0]
    elif len(read.counts) > 1:
        # Several numbers: the one right before a role ('2 welders for 3 days' is 2).
        near = {
            count
            for at, _, count in found
            for start, _, _ in role_at
            if at < start and len(lowered[at:start].split()) <= 4
        }
        if len(near) == 1:
            read.count = near.pop()
    if vague and read.count is None:
        read.vague = vague[0]
    # The job as written after the count ('2 crane operators in ...'), to offer the nearest
    # roles when the catalogue has none of it.
    after = [end for _, end, count in sorted(found) if count == read.count]
    if after:
        job = re.match(r"\s*(?:x\s+)?((?:[a-z][a-z'/-]*\s?){1,4})", lowered[after[0] :])
        if job:
            words = []
            for word in job[1].split():
                if word in _ROLE_WORDS_END:
                    break
                words.append(word)
            read.role_words = " ".join(words)
    read.one_role = any(
        re.search(r"\b(?:a|an|one|single)\s+(?:[a-z-]+\s+){0,2}$", lowered[max(0, start - 40) : start])
        for start, _, _ in role_at
    )


def word_stem(word: str) -> str:
    word = word.lower()
    return word[:5] if len(word) > 5 else word


def grounded(phrase: str, read: WordsRead) -> bool:
    """Whether every word of ``phrase`` that carries meaning is in the order (compared by its
    first five letters: 'drive' grounds 'driver', 'welders' grounds 'welding')."""
    words = [w for w in plain_text(phrase)[0].split() if w not in STOP_WORDS]
    return bool(words) and all(word_stem(w) in read.words for w in words)
