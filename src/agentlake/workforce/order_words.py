"""Orders in words: what a coordinator's text says, and a reader's reading of it checked by code.

"need two welders near Cleveland OH tomorrow morning, reliable folks with structural experience"
is read in three steps. A reader (a model: ``agents.order_reader``) writes down the order's
parts as :class:`OrderParts`, in the order's own words. :func:`words_say` reads, by code, what
the text says for certain: the numbers that can be a count, the known cities and the state
beside each, the days, clock times and parts of the day, distances, the catalogue's roles and
certifications as spelled. :func:`settle` then checks each part the reader wrote against those
words and the catalogue and gives a :class:`ReadOrder`: a ``FillOrder`` (roles and
certifications only the catalogue's, cities only the reference data's, dates worked out from a
given "now", soft wishes kept as words), or a question back when something an order needs
(role, count, place) is missing, vague or unknown. Nothing the text does not say survives: a
part the reader wrote that the words do not hold is left out, and where the words say one thing
and the reader another, the words are taken and the disagreement is listed in the reading (it
is shown, never resolved out of sight).

This module owns that check, the reply shape a reader fills, the day-part start times and
:class:`OrderQuestion`; what the words say is read by ``order_text``. It calls no model (``agents.order_reader`` does) and does not own the
grammar form ``3 x Welder in Cleveland, OH`` (``order``) nor where places are (``geo``).
"""

from __future__ import annotations

import re
from datetime import date, datetime, time, timedelta
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentlake.errors import UserError
from agentlake.workforce.cities import US_STATES
from agentlake.workforce.order import MAX_ORDER_COUNT, FillOrder, slugify
from agentlake.workforce.order_text import (
    NO_ROLE,
    SOFT,
    STOP_WORDS,
    WEEKDAY_RE,
    WEEKDAYS,
    PartOfDay,
    WordsRead,
    clause_around,
    grounded,
    weekday_after,
    weekday_of,
    word_stem,
    words_say,
)
from agentlake.workforce.roles import (
    certification_of_role,
    certification_spans,
    closest_roles,
    find_role,
    known_certification,
    plain_text,
    role_in_text,
    role_names,
)

if TYPE_CHECKING:
    from agentlake.workforce.geo import Gazetteer


# When a shift starts if the order names only the part of the day ('tomorrow morning'), or
# only the day ('tomorrow': the day shift). A convention, stated in every reading that uses it.
DAY_PART_START: dict[str, time] = {
    "morning": time(8, 0),
    "afternoon": time(14, 0),
    "evening": time(18, 0),
    "night": time(22, 0),
}
DAY_SHIFT_START = DAY_PART_START["morning"]
MAX_WISHES = 6
NEEDED = ("role", "count", "place")

_CODES = frozenset(US_STATES.values())
# Words of the order's day and time: a wish made of them only repeats the shift.
_OTHER_PARTS = (
    "today tonight tomorrow morning mornings afternoon evening night nights overnight shift shifts start "
    "starting starts am pm early late next this coming day days week near around within miles mile mi asap "
    "urgent urgently half dozen couple pair trio plus preferred prefer ideally bonus optional".split()
) + list(WEEKDAYS)
# A word that is a number, a clock time or a date ('3', 'three', '11pm', '6:30am', '5/3').
_NUMBERISH = re.compile(
    r"\d+(?:st|nd|rd|th|am|pm|a|p)?|"
    + "|".join(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
        "sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety".split()
    )
)


StateCode = Literal[
    "AL", "AK", "AZ", "AR", "CA", "CO", "CT", "DE", "DC", "FL", "GA", "HI", "ID", "IL", "IN", "IA", "KS",
    "KY", "LA", "ME", "MD", "MA", "MI", "MN", "MS", "MO", "MT", "NE", "NV", "NH", "NJ", "NM", "NY", "NC",
    "ND", "OH", "OK", "OR", "PA", "RI", "SC", "SD", "TN", "TX", "UT", "VT", "VA", "WA", "WV", "WI", "WY",
    "PR", "GU", "AS", "VI",
]  # fmt: skip
DayWord = Literal["today", "tomorrow", *WEEKDAYS]  # type: ignore[valid-type]
_CLOCK_PATTERN = r"^([01][0-9]|2[0-3]):[0-5][0-9]$"
_DATE_PATTERN = r"^20[0-9]{2}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$"


class OrderParts(BaseModel):
    """The parts of an order as a reader writes them down: each in the order's own words or
    a plain form of them, ``None`` (a list: empty) when the order does not say it. Where a
    part has a fixed form (a state code, a clock time, a day) the schema holds it, so a
    reader under a grammar cannot write anything else there."""

    model_config = ConfigDict(extra="forbid")

    role: str | None = Field(None, max_length=80, description="The job, in the order's words.")
    count: int | None = Field(None, ge=1, le=MAX_ORDER_COUNT, description="How many workers.")
    city: str | None = Field(None, max_length=60)
    state: StateCode | None = Field(None, description="Two-letter state code.")
    day: DayWord | Annotated[str, Field(pattern=_DATE_PATTERN)] | None = Field(
        None, description="today, tomorrow, a weekday or a date as YYYY-MM-DD."
    )
    part_of_day: PartOfDay | None = None
    start: Annotated[str, Field(pattern=_CLOCK_PATTERN)] | None = Field(
        None, description="Start time, HH:MM, 24-hour clock."
    )
    end: Annotated[str, Field(pattern=_CLOCK_PATTERN)] | None = Field(
        None, description="End time, HH:MM, 24-hour clock."
    )
    radius_miles: int | None = Field(None, ge=1, le=500)
    certifications: list[str] = Field(default_factory=list, max_length=8)
    wishes: list[str] = Field(default_factory=list, max_length=MAX_WISHES)
    client: str | None = Field(None, max_length=80)


class Disagreement(BaseModel):
    """A part the reader read otherwise than the words say; ``taken`` is what the order uses."""

    part: str
    reader: str | None
    words: str | None
    taken: str | None

    def line(self) -> str:
        said = f"read {self.part} {self.reader}" if self.reader is not None else f"read no {self.part}"
        words = f"the words say {self.words}" if self.words is not None else "the order does not say it"
        kept = f"took {self.taken}" if self.taken is not None else "left it out"
        return f"the reader {said}, {words}: {kept}"


class ReadOrder(BaseModel):
    """What an order in words was read as: the order, or the question back, and how it was read.

    ``source``: ``grammar`` (the text was the grammar's form: no reader asked) or the reader's
    model. ``missing``: the needed parts (role, count, place) the order lacks or leaves vague.
    ``roles_offered``: the nearest catalogue roles when the order names one the catalogue
    lacks. ``disagreements``: where the reader and the words differ, and what was taken.
    ``notes``: conventions used (a default start time, a state taken from the city table).
    """

    text: str
    source: str
    order: FillOrder | None = None
    question: str | None = None
    missing: list[str] = Field(default_factory=list)
    roles_offered: list[str] = Field(default_factory=list)
    disagreements: list[Disagreement] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    understood: str = Field("", description="One line: what was understood (and asked).")


class OrderQuestion(UserError):
    """An order in words that cannot be filled as written: the message is the question back
    (exit 2 in the CLI, a 400 problem over HTTP whose details carry the reading)."""

    def __init__(self, reading: ReadOrder) -> None:
        super().__init__(reading.understood, reading=reading.model_dump(mode="json", exclude={"order"}))
        self.reading = reading


# --- whether a message is an order -------------------------------------------------------------------


# --- what the words say ------------------------------------------------------------------------------


# --- settling a reading ------------------------------------------------------------------------------


def settle(
    parts: OrderParts,
    text: str,
    *,
    now: datetime,
    places: Gazetteer,
    source: str,
    notes: list[str] | None = None,
) -> ReadOrder:
    """Check the reader's ``parts`` of ``text`` against what its words say and the catalogue,
    and give the order (or the question back). ``source`` names the reader (its model);
    ``notes`` are said first in the reading (how the reader fared)."""
    read = words_say(text, now=now, places=places)
    settling = _Settling(_cleaned(parts), read, now, places)
    settling.notes += notes or []
    return settling.finish(text, source)


class _Settling:
    """One settling: the parts taken so far, the disagreements and notes, what is missing."""

    def __init__(self, parts: OrderParts, read: WordsRead, now: datetime, places: Gazetteer) -> None:
        self.parts, self.read, self.now, self.places = parts, read, now, places
        self.disagreements: list[Disagreement] = []
        self.notes: list[str] = []
        self.asks: list[str] = []
        self.missing: list[str] = []
        self.offered: list[str] = []
        self.role_name: str | None = None

    def differ(self, part: str, reader: object, words: object, taken: object) -> None:
        def shown(value: object) -> str | None:
            return None if value is None else _shown(value)

        self.disagreements.append(
            Disagreement(part=part, reader=shown(reader), words=shown(words), taken=shown(taken))
        )

    def pick(self, part: str, reader: Any, heard: bool, certain: Any) -> Any:
        """What the words say for certain, else the reader's value if the words hold it; a
        reader's value that differs is listed, never taken silently."""
        if certain is not None:
            if reader != certain:
                self.differ(part, reader, certain, certain)
            return certain
        if reader is not None and not heard:
            self.differ(part, reader, None, None)
            return None
        return reader

    # -- the parts -------------------------------------------------------------------------------

    def role(self) -> str | None:
        """The catalogue role: the one the text spells when it spells one alone, else the
        reader's when its words are the order's; a job the catalogue lacks is offered the
        nearest known roles, never guessed."""
        read = self.read
        words = " ".join((self.parts.role or "").split())
        named = [w for w in plain_text(words)[0].split() if w not in NO_ROLE and w not in STOP_WORDS]
        found = (find_role(words) or role_in_text(words)) if named else None
        said = bool(named) and grounded(words, read)
        certain = read.roles[0] if len(read.roles) == 1 else None
        if certain is not None:
            if found != certain:
                self.differ("role", words or None, certain.name, certain.name)
            return certain.name
        if found is not None and (said or found in read.roles):
            return found.name
        if words and not (said and found is None and not read.roles):
            self.differ("role", words, None, None)
        if not said and not read.roles and plain_text(read.role_words)[0] not in ("", *NO_ROLE):
            words, said = read.role_words, True  # the job as written after the count
        if read.roles:
            self.asks.append(
                f"Which role: {' or '.join(r.name for r in read.roles)}? Write one order per role."
            )
        elif said:
            # A job the order names that the catalogue lacks: offer, never guess.
            self.offered = closest_roles(words)
            offer = ", ".join(self.offered) if self.offered else "none close"
            self.asks.append(
                f"The catalogue has no role {words!r}; the nearest known roles: {offer}. Which one?"
            )
        else:
            self.asks.append("Which role? The order names none (e.g. '2 x Welder').")
        self.missing.append("role")
        return None

    def count(self) -> int | None:
        reader, read = self.parts.count, self.read
        alone = read.one_role and not read.counts and not read.vague  # 'need a welder'
        heard = reader is not None and (reader in read.counts or (reader == 1 and alone))
        certain = read.count if read.count is not None else (1 if alone else None)
        count = self.pick("count", reader, heard, certain)
        if count is None:
            if read.vague:
                self.asks.append(f"How many workers exactly? The order says {read.vague!r}.")
            elif len(read.counts) > 1:
                self.asks.append(f"How many workers: {' or '.join(map(str, read.counts))}?")
            else:
                self.asks.append("How many workers? The order names no number.")
            self.missing.append("count")
        return count

    def place(self) -> tuple[str, str] | None:
        read, parts = self.read, self.parts
        city = " ".join((parts.city or "").split()) or None
        state = (parts.state or "").strip().upper() or None
        if state is not None and plain_text(state)[0] in US_STATES:
            state = US_STATES[plain_text(state)[0]]
        mentioned = [m for m in read.places if city is not None and _names(city, m.city)]
        if city is not None and plain_text(city)[0] in US_STATES or (city or "").upper() in _CODES:
            state, city = state or city, None  # a state written where the city goes
        if city is not None and not mentioned:
            if grounded(city, read) and read.place is None:
                # A city the order names that the reference data does not know.
                self.asks.append(self._unknown_city(city, state))
                self.missing.append("place")
                return None
            certain = read.place
            self.differ("city", city, certain.city if certain else None, certain.city if certain else None)
            mentioned = [certain] if certain else []
        elif city is None and read.place is not None:
            self.differ("city", None, read.place.city, read.place.city)
            mentioned = [read.place]
        if not mentioned:
            cities = list(dict.fromkeys(m.city for m in read.places))
            self.asks.append(
                f"Where: {' or '.join(cities)}?"
                if len(cities) > 1
                else "Where is the work? The order names no city (e.g. 'in Cleveland, OH')."
            )
            self.missing.append("place")
            return None
        city = mentioned[0].city
        written = {m.state for m in mentioned if m.state}
        known = self.places.states_of(city)
        if len(written) == 1:
            said = written.pop()
            if state is not None and state != said:
                self.differ("state", state, said, said)
            state = said
        elif state is None or not self._state_said(state):
            choice = known[0] if len(known) == 1 else None
            if state is not None and state != choice:
                self.differ("state", state, None, choice)
            if choice is not None:
                self.notes.append(f"{city} is in {choice} (the only {city} in the city table)")
            state = choice
        if state is None:
            self.asks.append(f"Which {city}: {' or '.join(f'{city}, {s}' for s in known)}?")
            self.missing.append("place")
            return None
        if state not in known:
            self.asks.append(self._unknown_city(city, state))
            self.missing.append("place")
            return None
        return city, state

    def _state_said(self, state: str) -> bool:
        """Whether the order writes ``state`` (its code or name) outside a city's name ('Kansas
        City' names no Kansas)."""
        text = self._text
        for mention in self.read.places:
            if mention.state is None:
                text = text[: mention.start] + " " * (mention.end - mention.start) + text[mention.end :]
        names = [name for name, code in US_STATES.items() if code == state]
        plain = plain_text(text)[0]
        return bool(re.search(rf"(?<![A-Za-z]){state}(?![A-Za-z])", text)) or any(
            re.search(rf"\b{name}\b", plain) for name in names
        )

    def _unknown_city(self, city: str, state: str | None) -> str:
        try:
            self.places.resolve(city, state or "")
        except UserError as exc:
            return f"{exc.message[0].upper()}{exc.message[1:]}."
        return f"Where exactly is {city}?"

    def shift(self) -> tuple[datetime | None, datetime | None]:
        parts, read = self.parts, self.read
        day_reader = _reader_day(parts.day, self.now)
        day = self.pick("day", day_reader, day_reader in read.days, read.day)
        start = self._clock("start", parts.start, read.start)
        end = self._clock("end", parts.end, read.end)
        part = parts.part_of_day if parts.part_of_day in read.parts else None
        if start is None:
            part = self.pick("part of the day", parts.part_of_day, part is not None, read.part)
        if start is None and part is not None:
            start = DAY_PART_START[part]
            self.notes.append(f"'{part}' starts at {start:%H:%M}")
        elif (
            start is not None and part in ("evening", "night") and start.hour < 12 and not self._exact(start)
        ):
            start = time(start.hour + 12, start.minute)  # 'at 10 tonight'
        if start is None and day is None:
            return None, None
        if start is None:
            start = DAY_SHIFT_START
            self.notes.append(f"no start time named: the day shift, {start:%H:%M}")
        if day is None:
            begins = datetime.combine(self.now.date(), start)
            if begins <= self.now:
                begins += timedelta(days=1)
        else:
            begins = datetime.combine(day, start)
        if end is not None and end == start:
            # The one time the order names read as its end too ('tomorrow at 3pm', end 15:00)
            self.differ("end", end, None, None)
            end = None
        if end is None:
            return begins, None
        ends = datetime.combine(begins.date(), end)
        return begins, ends if ends > begins else ends + timedelta(days=1)

    def _exact(self, at: time) -> bool:
        return any(c.exact and c.at == at for c in self.read.clocks)

    def _clock(self, part: str, written: str | None, certain: time | None) -> time | None:
        reader = _reader_time(written)
        heard = reader is not None and any(
            c.at == reader
            if c.exact
            else (c.at.hour % 12 == reader.hour % 12 and c.at.minute == reader.minute)
            for c in self.read.clocks
        )
        return self.pick(part, reader, heard, certain)

    def radius(self) -> float | None:
        reader = self.parts.radius_miles
        return self.pick("radius", reader, reader in self.read.radii, self.read.radius)

    def requirements(self) -> tuple[list[str], list[str]]:
        """The catalogue certifications the order asks for, and the reader's wishes that hold."""
        read = self.read
        required: list[str] = []
        wishes: list[str] = []
        for written in self.parts.certifications:
            name = known_certification(written)
            loose = self._loose(written) if name is None else None
            if loose is not None and grounded(written, read):
                # 'journeyman license' for an electrician: the role's one certification so named
                if SOFT.search(self._clause_of(written)):
                    wishes.append(written)
                elif loose not in required:
                    required.append(loose)
            elif name is not None and name in read.certifications:
                if read.certifications[name]:
                    wishes.append(written)  # 'OSHA 10 a plus' is a wish
                elif name not in required:
                    required.append(name)
            elif name is None and grounded(written, read):
                wishes.append(written)  # a skill no certification names: kept as words
            else:
                self.differ("requirement", written, None, None)
        for written in self.parts.wishes:
            name = known_certification(written)
            if name is not None and name in read.certifications and not read.certifications[name]:
                if name not in required:
                    required.append(name)
                continue
            loose = self._loose(written) if name is None else None
            if loose is not None and grounded(written, read) and not SOFT.search(self._clause_of(written)):
                # 'journeyman license required' written as a wish: the role's certification
                if loose not in required:
                    required.append(loose)
                continue
            if not grounded(written, read):
                self.differ("wish", written, None, None)
            elif self._worth(written):
                wishes.append(" ".join(written.split()))
        for name, soft in read.certifications.items():
            if not soft and name not in required:
                # The words require it (whatever the reader made of it: 'EPA' as a wish).
                self.differ("requirement", None, name, name)
                required.append(name)
        named = {w: {known_certification(w), certification_of_role(w, self.role_name)} for w in wishes}
        wishes = [w for w in wishes if not named[w] & set(required)]
        said_softly = set().union(*named.values()) if named else set()
        for name, soft in read.certifications.items():
            if soft and name not in said_softly:  # 'HACCP a plus' the reader missed: a wish
                written = read.certification_words.get(name, name)
                self.differ("wish", None, written, written)
                wishes.append(written)
        return required, _distinct(wishes)[:MAX_WISHES]

    def _loose(self, written: str) -> str | None:
        """The role's certification ``written`` names loosely (``roles.certification_of_role``),
        unless its clause in the order names a certificate outright ('CPR certified': the
        'certified' there is CPR's)."""
        clause = self._clause_of(written)
        if clause and certification_spans(plain_text(clause)[0]):
            return None
        return certification_of_role(written, self.role_name)

    def _clause_of(self, phrase: str) -> str:
        """The clause of the order around ``phrase``'s first word ('' when it is not there)."""
        words = plain_text(phrase)[0].split()
        lowered = self._text.lower()
        match = re.search(rf"\b{re.escape(words[0])}", lowered) if words else None
        return clause_around(lowered, match.start(), match.end()) if match else ""

    def client(self) -> str | None:
        written = " ".join((self.parts.client or "").split())
        certain = self.read.clients[0] if len(self.read.clients) == 1 else None
        if certain is not None:
            if not written or slugify(written) != slugify(certain):
                self.differ("client", written or None, certain, slugify(certain))
            return slugify(certain)
        if not written:
            return None
        if grounded(written, self.read) and self._worth(written):
            return slugify(written)
        self.differ("client", written, None, None)
        return None

    def _worth(self, phrase: str) -> bool:
        """Whether ``phrase`` says more than the order's other parts (a wish 'tomorrow morning'
        or 'welders in Cleveland' repeats them)."""
        other = {word_stem(w) for w in _OTHER_PARTS}
        names = [self.parts.role or "", *self.read.clients, self.parts.client or ""]
        names += [name for role in self.read.roles for name in role_names(role.name)]
        names += [f"{mention.city} {mention.state or ''}" for mention in self.read.places]
        for name in names:
            other |= {word_stem(w) for w in plain_text(name)[0].split()}
        words = [w for w in plain_text(phrase)[0].split() if w not in STOP_WORDS and w not in NO_ROLE]
        return any(
            word_stem(w) not in other
            and word_stem(w.removesuffix("s")) not in other
            and not _NUMBERISH.fullmatch(w)
            for w in words
        )

    # -- the reading -----------------------------------------------------------------------------

    def finish(self, text: str, source: str) -> ReadOrder:
        self._text = text
        role = self.role_name = self.role()
        count = self.count()
        place = self.place()
        start, end = self.shift()
        radius = self.radius()
        required, wishes = self.requirements()
        client = self.client()
        reading = ReadOrder(text=text, source=source, disagreements=self.disagreements, notes=self.notes)
        reading.missing = [need for need in NEEDED if need in self.missing]
        reading.roles_offered = self.offered
        if self.asks:
            reading.question = " ".join(self.asks)
        else:
            fields: dict[str, Any] = {"role": role, "count": count, "city": place[0], "state": place[1]}  # type: ignore[index]
            fields |= {"shift_start": start, "shift_end": end, "requirements": required, "wishes": wishes}
            if radius is not None:
                fields["radius_miles"] = radius
            if client is not None:
                fields["client_id"] = client
            try:
                reading.order = FillOrder(**fields)
            except ValidationError as exc:
                reading.question = "The order does not hold together: " + "; ".join(
                    f"{'.'.join(map(str, e['loc'])) or 'order'}: {e['msg']}" for e in exc.errors()
                )
        reading.understood = understood(reading, so_far=self._so_far(role, count, place))
        return reading

    def _so_far(self, role: str | None, count: int | None, place: tuple[str, str] | None) -> str:
        shown = [
            f"role {role}" if role else "role ?",
            f"count {count}" if count else "count ?",
            f"place {place[0]}, {place[1]}" if place else "place ?",
        ]
        return ", ".join(shown)


def understood(reading: ReadOrder, *, so_far: str = "") -> str:
    """The one line a person reads: the order in the grammar's form with its wishes, or the
    question with what was understood so far; then the disagreements and notes."""
    if reading.order is not None:
        line = f"understood: {reading.order.as_text()}"
        if reading.order.wishes:
            line += "; wishes: " + "; ".join(reading.order.wishes)
    else:
        line = f"{reading.question} (understood so far: {so_far})" if so_far else reading.question or ""
    unread = [d.part for d in reading.disagreements if d.reader is None]
    extra = [d.line() for d in reading.disagreements if d.reader is not None]
    if unread:
        extra.append(f"the reader missed {', '.join(dict.fromkeys(unread))}: taken from the words")
    extra += reading.notes
    if extra:
        line += " [" + "; ".join(extra) + "]"
    return line


def grammar_reading(order: FillOrder, text: str) -> ReadOrder:
    """The reading of text in the grammar's form (no reader asked); a role the catalogue lacks
    is a question offering the nearest known roles."""
    reading = ReadOrder(text=text, source="grammar")
    if find_role(order.role) is None:
        reading.roles_offered = closest_roles(order.role)
        offer = ", ".join(reading.roles_offered) if reading.roles_offered else "none close"
        reading.question = (
            f"The catalogue has no role {order.role!r}; the nearest known roles: {offer}. Which one?"
        )
        reading.missing = ["role"]
        reading.understood = understood(
            reading, so_far=f"role ?, count {order.count}, place {order.city}, {order.state}"
        )
        return reading
    reading.order = order
    reading.understood = understood(reading)
    return reading


def _reader_day(written: str | None, now: datetime) -> date | None:
    """The day a reader wrote ('tomorrow', 'friday', '2026-04-23') as a date from ``now``."""
    if not written:
        return None
    word = written.strip().lower()
    today = now.date()
    if word in ("today", "tonight"):
        return today
    if word in ("tomorrow", "tmrw"):
        return today + timedelta(days=1)
    if word == "day after tomorrow":
        return today + timedelta(days=2)
    match = re.fullmatch(rf"(?:next |this |coming )?{WEEKDAY_RE}", word)
    if match:
        return weekday_after(today, weekday_of(match[1]))
    try:
        return date.fromisoformat(word)
    except ValueError:
        return None


def _reader_time(written: str | None) -> time | None:
    if not written:
        return None
    match = re.fullmatch(r"\s*(\d{1,2})(?::(\d{2}))?\s*([ap]\.?m\.?)?\s*", written.lower())
    if not match:
        return None
    hour, minute = int(match[1]), int(match[2] or 0)
    if match[3]:
        hour = hour % 12 + (12 if match[3].startswith("p") else 0)
    if hour > 23 or minute > 59:
        return None
    return time(hour, minute)


def _cleaned(parts: OrderParts) -> OrderParts:
    """``parts`` with blank strings as ``None`` and blank list items dropped (a small model
    writes "" for a part it did not find)."""
    values = parts.model_dump()
    for name, value in values.items():
        if isinstance(value, str) and not value.strip():
            values[name] = None
        elif isinstance(value, list):
            values[name] = [item for item in value if item.strip()]
    return OrderParts.model_validate(values)


def _names(written: str, city: str) -> bool:
    """Whether the city a reader wrote ('Cleveland', 'cleveland oh', 'New York City') names ``city``."""
    said, known = plain_text(written)[0], plain_text(city)[0]
    return said == known or said.startswith(known + " ")


def _shown(value: object) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, time):
        return f"{value:%H:%M}"
    return str(value)


def _distinct(items: list[str]) -> list[str]:
    """``items`` without repeats, nor one whose words another item holds ('structural
    experience' beside 'reliable folks with structural experience')."""
    keys = [f" {plain_text(item)[0]} " for item in items]
    kept = []
    for index, (item, key) in enumerate(zip(items, keys, strict=True)):
        if key.strip() and not any(
            key in other and (key != other or other_index < index)
            for other_index, other in enumerate(keys)
            if other_index != index
        ):
            kept.append(item)
    return kept
