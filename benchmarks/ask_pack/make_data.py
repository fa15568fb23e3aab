"""Write the ask pack's own messy CSVs: a small shop's orders, its customers and its status codes.

The committed CSVs under ``data/`` are the truth (``pack.yaml`` pins their sha256); this script
is how they were made, seeded, so they can be made again or changed on purpose. What is messy
on purpose, as in a real shop's export:

- ``orders.csv``: ``status`` is a one-letter code ("S", "C", "R", "P", "H") that only
  ``order_statuses.csv`` explains; ``order_date`` is written ``2015/03/07``, ``shipped_date``
  ``3/9/2015`` (month first, no padding) and is empty for orders not shipped; ``amount`` has
  ``NA`` and empty cells, and its currency is in ``currency`` (USD, EUR, GBP); ``channel`` is
  written in several cases ("web", "Web", "WEB").
- ``customers.csv``: ``state`` is a two-letter code; ``segment`` in several cases;
  ``signup_date`` day first (``07.03.2015``); ``loyalty_points`` with ``NA`` and empty cells.

Usage: ``.venv/bin/python benchmarks/ask_pack/make_data.py [--out DIR]`` (default: ``data/``
beside this file); then update the sha256 lines of ``pack.yaml``
(``sha256sum benchmarks/ask_pack/data/*.csv``).
"""

from __future__ import annotations

import argparse
import csv
import random
from datetime import date, timedelta
from pathlib import Path

SEED = 29  # issue 29
CUSTOMERS = 320
ORDERS = 1800

STATUSES = [
    ("S", "shipped", "The order left the warehouse."),
    ("C", "cancelled", "The customer or the shop cancelled the order before it shipped."),
    ("R", "returned", "The order shipped and came back; the amount was refunded."),
    ("P", "pending", "Paid, waiting to be packed."),
    ("H", "on hold", "Held for a payment or address check."),
]
STATUS_WEIGHTS = [68, 10, 8, 9, 5]
STATES = ["TX", "CA", "NY", "FL", "OH", "IL", "WA", "GA", "PA", "MI", "NC", "AZ", "CO", "MA", "OR"]
STATE_WEIGHTS = [14, 16, 11, 10, 7, 7, 6, 5, 5, 4, 4, 3, 3, 3, 2]
SEGMENTS = ["Retail", "retail", "RETAIL", "Wholesale", "wholesale", "WHOLESALE"]
SEGMENT_WEIGHTS = [52, 10, 4, 24, 8, 2]
CHANNELS = ["web", "Web", "WEB", "phone", "Phone", "store", "Store", "STORE"]
CHANNEL_WEIGHTS = [34, 12, 5, 14, 5, 20, 8, 2]
CURRENCIES = ["USD", "EUR", "GBP"]
CURRENCY_WEIGHTS = [65, 22, 13]
FIRST = """Ava Ben Carla Dev Elena Farid Grace Hiro Ines Jamal Kira Liam Maya Noor Omar Priya Quinn
Rosa Sam Tara Umar Vera Wes Xena Yusuf Zoe Aaron Bianca Caleb Dana Emil Fatima Gus Hana Ivan Jade
Kofi Lena Marco Nadia""".split()
LAST = """Abbott Baker Chen Diaz Evans Fischer Garcia Haddad Ito Jensen Khan Lopez Moreau Nakamura
Okafor Patel Quist Rossi Silva Tanaka Ueda Varga Weber Xu Yilmaz Zimmer""".split()


def make_statuses() -> list[dict[str, str]]:
    return [{"code": code, "meaning": meaning, "description": text} for code, meaning, text in STATUSES]


def make_customers(rng: random.Random) -> list[dict[str, str]]:
    names = rng.sample([f"{first} {last}" for first in FIRST for last in LAST], CUSTOMERS)
    start, days = date(2014, 1, 1), (date(2017, 6, 30) - date(2014, 1, 1)).days
    customers = []
    for number, name in enumerate(names, start=1):
        signup = start + timedelta(days=rng.randrange(days + 1))
        draw = rng.random()
        state = rng.choices(STATES, STATE_WEIGHTS)[0]
        segment = rng.choices(SEGMENTS, SEGMENT_WEIGHTS)[0]
        points = "NA" if draw < 0.08 else "" if draw < 0.12 else str(rng.randrange(0, 5001))
        customers.append(
            {
                "customer_id": f"C{number:04d}",
                "name": name,
                "state": state,
                "segment": segment,
                "signup_date": signup.strftime("%d.%m.%Y"),
                "loyalty_points": points,
            }
        )
    return customers


def make_orders(rng: random.Random, customers: list[dict[str, str]]) -> list[dict[str, str]]:
    # A few customers buy a lot, most a little (as in any shop).
    weights = [rng.paretovariate(1.5) for _ in customers]
    start, days = date(2015, 1, 1), (date(2017, 12, 31) - date(2015, 1, 1)).days
    orders = []
    for number in range(ORDERS):
        ordered = start + timedelta(days=rng.randrange(days + 1))
        status = rng.choices([code for code, _, _ in STATUSES], STATUS_WEIGHTS)[0]
        shipped = ordered + timedelta(days=rng.randint(1, 9)) if status in ("S", "R") else None
        draw = rng.random()
        customer = rng.choices(customers, weights)[0]["customer_id"]
        channel = rng.choices(CHANNELS, CHANNEL_WEIGHTS)[0]
        items = rng.randint(1, 8)
        amount = (
            "NA"
            if draw < 0.04
            else ""
            if draw < 0.06
            else f"{min(900.0, max(5.0, rng.lognormvariate(4.3, 0.8))):.2f}"
        )
        orders.append(
            {
                "order_id": str(100001 + number),
                "customer_id": customer,
                "order_date": ordered.strftime("%Y/%m/%d"),
                "shipped_date": f"{shipped.month}/{shipped.day}/{shipped.year}" if shipped else "",
                "status": status,
                "channel": channel,
                "items": str(items),
                "amount": amount,
                "currency": rng.choices(CURRENCIES, CURRENCY_WEIGHTS)[0],
            }
        )
    return orders


def write_csv(path: Path, rows: list[dict[str, str]]) -> None:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "data")
    args = parser.parse_args()
    rng = random.Random(SEED)
    customers = make_customers(rng)
    args.out.mkdir(parents=True, exist_ok=True)
    write_csv(args.out / "order_statuses.csv", make_statuses())
    write_csv(args.out / "customers.csv", customers)
    write_csv(args.out / "orders.csv", make_orders(rng, customers))
    for name in ("order_statuses.csv", "customers.csv", "orders.csv"):
        print(f"wrote {args.out / name}")


if __name__ == "__main__":
    main()
