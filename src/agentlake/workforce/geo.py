"""Where places are: resolving an order's city to coordinates, distances, nearby cities.

Owns the city gazetteer (the shipped city table, ``cities``, plus any city that appears in
the lake's ``workers`` table, placed at its workers' mean coordinates), the haversine
distance (in Python and as SQL) and ``nearby``. Ambiguous names resolve by state (Columbus,
OH is not Columbus, GA); an unknown city/state pair is a ``UserError`` naming close matches.
Search, verification and the client's judge all measure with it, so they agree at the limit.
It does not own which workers are near (``candidates``).
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from agentlake.errors import UserError
from agentlake.lake.versioned import PerLakeCache
from agentlake.workforce.cities import US_STATES, load_cities
from agentlake.workforce.tables import workers_table_version

if TYPE_CHECKING:
    from agentlake.lake import Lake

EARTH_RADIUS_MILES = 3958.7613
# State codes that are also English words: after a city, read as a state only in capitals.
_CODE_WORDS = frozenset({"al", "co", "de", "hi", "id", "in", "la", "ma", "me", "mo", "ok", "or", "pa"})
# Degrees of latitude per mile; the longitude degree shrinks with cos(latitude).
_DEG_PER_MILE = 1.0 / 69.0


@dataclass(frozen=True)
class Place:
    city: str
    state: str
    lat: float
    lon: float


@dataclass(frozen=True)
class Mention:
    """A known city named in a text: its span in the text (the state written beside it
    included), the city as the gazetteer spells it and that state, if any."""

    start: int
    end: int
    city: str
    state: str | None


@dataclass(frozen=True)
class Nearby:
    city: str
    state: str
    distance_miles: float


def haversine_miles(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    """Great-circle distance in miles."""
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * EARTH_RADIUS_MILES * math.asin(min(1.0, math.sqrt(a)))


def haversine_sql(lat_col: str, lon_col: str) -> str:
    """A DuckDB expression: miles from ``(lat_col, lon_col)`` to the parameters ``$lat, $lon``."""
    return (
        f"(2 * {EARTH_RADIUS_MILES} * asin(least(1.0, sqrt("
        f"pow(sin(radians({lat_col} - $lat) / 2), 2) + "
        f"cos(radians($lat)) * cos(radians({lat_col})) * pow(sin(radians({lon_col} - $lon) / 2), 2)))))"
    )


def bounding_box(lat: float, lon: float, radius_miles: float) -> tuple[float, float, float, float]:
    """(lat_min, lat_max, lon_min, lon_max) enclosing the circle: a cheap prefilter for SQL."""
    dlat = radius_miles * _DEG_PER_MILE
    dlon = radius_miles * _DEG_PER_MILE / max(0.01, math.cos(math.radians(lat)))
    return lat - dlat, lat + dlat, lon - dlon, lon + dlon


class Gazetteer:
    """Known places, keyed by (lower-case city, state)."""

    def __init__(self, places: list[Place]) -> None:
        self._by_key: dict[tuple[str, str], Place] = {}
        for place in places:
            self._by_key.setdefault((place.city.casefold(), place.state), place)
        ordered = list(self._by_key.values())
        self._names = [p.city for p in ordered]
        self._states = [p.state for p in ordered]
        self._lat = np.array([p.lat for p in ordered])
        self._lon = np.array([p.lon for p in ordered])
        self._pattern: re.Pattern[str] | None = None
        self._plain_names: dict[str, str] = {}

    def __len__(self) -> int:
        return len(self._by_key)

    def states_of(self, city: str) -> list[str]:
        """The states that have a place called ``city`` (any case), sorted; ``[]`` for none."""
        wanted = " ".join(city.split()).casefold()
        return sorted({state for name, state in self._by_key if name == wanted})

    def mentions(self, text: str) -> list[Mention]:
        """The known cities ``text`` names, left to right, each with the state written right
        after it ('Cleveland, OH', 'cleveland ohio') when there is one; where names overlap the
        longest wins. A lower-case code that is also an English word ('near Columbus in the
        morning') is not read as a state; in capitals ('Columbus IN') it is."""
        from agentlake.workforce.roles import plain_text

        plain, where = plain_text(text)
        found: list[Mention] = []
        for match in self._mention_pattern().finditer(plain):
            city = self._plain_names[match["city"]]
            state, end = None, match.end("city")
            if match["name"]:
                state, end = US_STATES[match["name"]], match.end()
            elif match["code"]:
                written = text[where[match.start("code")] : where[match.end("code") - 1] + 1]
                if written.isupper() or match["code"] not in _CODE_WORDS:
                    state, end = match["code"].upper(), match.end()
            found.append(Mention(where[match.start()], where[end - 1] + 1, city, state))
        return found

    def _mention_pattern(self) -> re.Pattern[str]:
        if self._pattern is None:
            from agentlake.workforce.roles import plain_text

            self._plain_names = {plain_text(p.city)[0]: p.city for p in self._by_key.values()}
            names = "|".join(re.escape(n) for n in sorted(self._plain_names, key=len, reverse=True))
            codes = "|".join(sorted({code.lower() for code in US_STATES.values()}))
            states = "|".join(re.escape(n) for n in sorted(US_STATES, key=len, reverse=True))
            self._pattern = re.compile(
                rf"(?<![a-z0-9])(?P<city>{names})(?:\s(?:(?P<code>{codes})|(?P<name>{states})))?(?![a-z0-9])"
            )
        return self._pattern

    def resolve(self, city: str, state: str) -> Place:
        """The place called ``city`` in ``state``; ``UserError`` with suggestions otherwise."""
        key = (" ".join(city.split()).casefold(), state.strip().upper())
        place = self._by_key.get(key)
        if place is not None:
            return place
        same_name = sorted({p.state for k, p in self._by_key.items() if k[0] == key[0]})
        if same_name:
            raise UserError(
                f"there is no {city} in {key[1]} in the lake's cities; {city} exists in {', '.join(same_name)}: "
                "pass that state"
            )
        in_state = [p.city for k, p in self._by_key.items() if k[1] == key[1]]
        close = difflib.get_close_matches(city, in_state, n=3, cutoff=0.6)
        hint = (
            f"did you mean {', '.join(f'{c}, {key[1]}' for c in close)}?"
            if close
            else "check the city and state"
        )
        raise UserError(f"unknown city {city}, {key[1]}: {hint}")

    def nearby(self, city: str, state: str, radius_miles: float) -> list[Nearby]:
        """Known cities within ``radius_miles`` of ``city, state``, nearest first (itself at 0)."""
        if not (radius_miles > 0 and math.isfinite(radius_miles)):
            raise UserError(f"radius_miles must be a positive number, got {radius_miles}")
        origin = self.resolve(city, state)
        lat1, lon1 = math.radians(origin.lat), math.radians(origin.lon)
        lat2, lon2 = np.radians(self._lat), np.radians(self._lon)
        a = np.sin((lat2 - lat1) / 2) ** 2 + math.cos(lat1) * np.cos(lat2) * np.sin((lon2 - lon1) / 2) ** 2
        miles = 2 * EARTH_RADIUS_MILES * np.arcsin(np.minimum(1.0, np.sqrt(a)))
        hits = np.nonzero(miles <= radius_miles)[0]
        found = [Nearby(self._names[i], self._states[i], round(float(miles[i]), 1)) for i in hits]
        return sorted(found, key=lambda n: (n.distance_miles, n.city))


_gazetteers: PerLakeCache[Gazetteer] = PerLakeCache()


def gazetteer(lake: Lake | None = None) -> Gazetteer:
    """The shipped cities, plus the distinct cities of the lake's ``workers`` (if any).

    Cached per lake file and ``workers`` version, so new data is picked up.
    """
    version: object = None
    if lake is not None:
        version = workers_table_version(lake)
    return _gazetteers.get(str(lake.path) if lake is not None else "", version, lambda: _build(lake, version))


def _build(lake: Lake | None, version: object) -> Gazetteer:
    table = load_cities()
    places = [
        Place(str(table.name[i]), str(table.state[i]), float(table.lat[i]), float(table.lon[i]))
        for i in range(len(table))
    ]
    if lake is not None and version is not None:
        places += worker_cities(lake)
    return Gazetteer(places)


def worker_cities(lake: Lake) -> list[Place]:
    """Each distinct (city, state) of ``workers`` at its workers' mean coordinates."""
    table = lake.read_arrow(
        "SELECT city, state, avg(lat) AS lat, avg(lon) AS lon FROM workers "
        "WHERE city IS NOT NULL AND state IS NOT NULL AND lat IS NOT NULL AND lon IS NOT NULL GROUP BY city, state"
    )
    return [
        Place(str(r["city"]), str(r["state"]).upper(), float(r["lat"]), float(r["lon"]))
        for r in table.to_pylist()
    ]
