"""The first and last names the workforce generator gives people, with how common each is.

Owns ``us_names.csv`` (kind, name, weight), shipped with the package: Faker's en_US name lists
(MIT, ``us_names.csv.LEGAL.txt``), first names female and male merged. Frozen, as the city
tables are, so that a seed produces the same people whatever version of Faker is installed,
and so that generating data does not need Faker; :func:`build_name_table` rebuilds the file
from Faker (the ``data`` extra). This module does not draw names (``generator``).
"""

from __future__ import annotations

import csv
from functools import lru_cache
from importlib import resources
from pathlib import Path

import numpy as np

from agentlake.errors import require_extra

NAMES_FILE = "us_names.csv"


def build_name_table(out_dir: Path) -> Path:
    """Rebuild ``us_names.csv`` from Faker's en_US lists; weights written exactly (``repr``)."""
    require_extra("data", "rebuilding the name table", "faker")
    from faker.providers.person.en_US import Provider

    first = dict(Provider.first_names_female)
    for name, weight in Provider.first_names_male.items():
        first[name] = first.get(name, 0.0) + weight
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / NAMES_FILE
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["kind", "name", "weight"])
        for name in sorted(first):
            writer.writerow(["first", name, repr(float(first[name]))])
        for name in sorted(Provider.last_names):
            writer.writerow(["last", name, repr(float(Provider.last_names[name]))])
    return path


@lru_cache(maxsize=1)
def load_names() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(first names, their weights, last names, their weights)``, each list sorted by name."""
    # A package's files are Paths here, whose open() takes newline (Traversable's type does not).
    with (resources.files("agentlake.workforce") / NAMES_FILE).open(newline="") as handle:  # type: ignore[call-overload]
        rows = list(csv.DictReader(handle))
    columns = []
    for kind in ("first", "last"):
        picked = [row for row in rows if row["kind"] == kind]
        columns += [
            np.array([row["name"] for row in picked]),
            np.array([float(row["weight"]) for row in picked]),
        ]
    first, first_weight, last, last_weight = columns
    return first, first_weight, last, last_weight


if __name__ == "__main__":  # regenerate the shipped file: python -m agentlake.workforce.names
    print(build_name_table(Path(__file__).parent))
