"""Resume summaries for generated workers: sentence templates and a vectorised filler.

Owns the wording (several templates per sentence slot, some per archetype) and
:func:`fill_templates`, which fills ``{field}`` templates column-wise with pyarrow compute
(no per-row Python), so 500k summaries take about a second. It does not decide who the
workers are (``generator``); it receives their fields as Arrow arrays.
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

OPENINGS = (
    "{Role} with {years} of experience in {sector}.",
    "Dependable {role} based in {city}, {state}.",
    "Experienced {role} from the {city} area with {years} on the job.",
    "{Role} who has spent {years} working in {sector}.",
    "Hands-on {role} looking for steady work in {city}, {state}.",
    "I am {a_role} with {years} of {sector} experience.",
    "Seasoned {role} with {years} across {sector} sites around {city}.",
)
ENTRY_OPENINGS = (
    "Entry-level {role} eager to learn and grow in {sector}.",
    "Recently finished training to work as {a_role} and ready to start in {city}, {state}.",
    "New to {sector}, with {years} of hands-on work as {a_role}.",
    "Motivated {role} in {city}, {state} looking for a first steady assignment.",
)
SKILLS = (
    "Skilled in {skill1}, {skill2} and {skill3}.",
    "Comfortable with {skill1} and {skill2}.",
    "Strengths include {skill1}, {skill2}, and {skill3}.",
    "Day-to-day work has included {skill1} and {skill2}.",
    "Background covers {skill1}, {skill2} and some {skill3}.",
    "Most experience is in {skill1}, with working knowledge of {skill2}.",
)
CERTS = (
    "Holds {cert}.",
    "Certifications: {certs}.",
    "Current {cert} on file.",
    "Certified: {certs}.",
    "Has kept {cert} up to date.",
)
# Work-style sentences by archetype code (see generator.ARCHETYPES order).
STYLE = (
    (  # reliable veteran
        "Often trusted to train new hires and lead small crews.",
        "Has returned to the same clients season after season.",
        "Brings a strong safety record and near-perfect attendance.",
    ),
    (  # steady regular
        "Shows up on time and works well with supervisors.",
        "Prefers {shift} shifts but can flex when needed.",
        "Has completed a string of agency assignments without issues.",
    ),
    (  # rising star
        "Picks up new equipment quickly and asks for more responsibility.",
        "Recently stepped up to lead a {shift} shift.",
        "Supervisors note fast learning and a positive attitude.",
    ),
    (  # new entrant
        "Looking for a first long-term assignment.",
        "Completed a short safety orientation and is ready to start.",
        "Willing to learn any task on the floor.",
    ),
    (  # part-timer
        "Available for {shift} shifts only, a few days a week.",
        "Balances school with part-time work and is best on weekends.",
        "Prefers short assignments close to home.",
    ),
    (  # flaky
        "Open to any shift, starting right away.",
        "Looking to get back into {sector} work after a break.",
        "Has had some gaps between assignments.",
    ),
)
CLOSERS = (
    "Has reliable transportation and can commute across the {city} metro.",
    "Available for {shift} shifts.",
    "Bilingual in English and Spanish.",
    "Prefers long-term assignments but open to temp-to-hire.",
    "Able to stand for long shifts and lift up to 50 lbs.",
)


def fill_templates(templates: Sequence[str], choice: np.ndarray, fields: Mapping[str, pa.Array]) -> pa.Array:
    """Row i gets ``templates[choice[i]]`` with its ``{field}`` slots filled from
    ``fields[field][i]``; rows with ``choice < 0`` get null. Returns a string array."""
    n = len(choice)
    pieces: list[pa.Array] = []
    positions: list[np.ndarray] = []
    for index, template in enumerate(templates):
        rows = np.flatnonzero(choice == index)
        if rows.size == 0:
            continue
        taken = pa.array(rows)
        parts: list[pa.Array | str] = []
        for literal, field, _, _ in string.Formatter().parse(template):
            if literal:
                parts.append(literal)
            if field:
                parts.append(fields[field].take(taken))
        if any(isinstance(part, pa.Array) for part in parts):
            pieces.append(pc.binary_join_element_wise(*parts, ""))
        else:
            pieces.append(pa.array([template] * rows.size, pa.string()))
        positions.append(rows)
    pieces.append(pa.nulls(1, pa.string()))
    combined = pa.concat_arrays([piece.cast(pa.string()) for piece in pieces])
    gather = np.full(n, len(combined) - 1, dtype=np.int64)
    if positions:
        order = np.concatenate(positions)
        gather[order] = np.arange(order.size)
    return combined.take(pa.array(gather))


def join_present(columns: Sequence[pa.Array], sep: str) -> pa.Array:
    """Row-wise join of the non-null values of ``columns``; null where all are null.

    Built on a list array because ``binary_join_element_wise(null_handling="skip")`` in
    pyarrow 26 drops rows whose inputs are all null, shortening the result.
    """
    n = len(columns[0])
    present = np.column_stack([pc.is_valid(column).to_numpy(zero_copy_only=False) for column in columns])
    rows, slots = np.nonzero(present)  # row-major: each row's values stay in column order
    values = pa.concat_arrays([column.cast(pa.string()) for column in columns]).take(
        pa.array(slots * n + rows)
    )
    offsets = np.concatenate([[0], np.cumsum(present.sum(axis=1))]).astype(np.int32)
    joined = pc.binary_join(pa.ListArray.from_arrays(pa.array(offsets), values), sep)
    return pc.if_else(pa.array(present.any(axis=1)), joined, pa.nulls(n, pa.string()))


def build_resumes(
    rng: np.random.Generator,
    archetype: np.ndarray,
    entry_level: np.ndarray,
    has_cert: np.ndarray,
    fields: Mapping[str, pa.Array],
) -> pa.Array:
    """2-4 sentences per worker: an opening and skills always, then up to two of a
    certification line (only for holders), a work-style line and a closer."""
    n = len(archetype)
    opening = np.where(
        entry_level,
        len(OPENINGS) + rng.integers(0, len(ENTRY_OPENINGS), n),
        rng.integers(0, len(OPENINGS), n),
    )
    first = fill_templates(OPENINGS + ENTRY_OPENINGS, opening, fields)
    skills = fill_templates(SKILLS, rng.integers(0, len(SKILLS), n), fields)
    want_cert = has_cert & (rng.random(n) < 0.6)
    want_style = rng.random(n) < 0.5
    want_closer = (rng.random(n) < 0.4) & ~(want_cert & want_style)
    cert = fill_templates(CERTS, np.where(want_cert, rng.integers(0, len(CERTS), n), -1), fields)
    style_templates = [t for group in STYLE for t in group]
    offsets = np.cumsum([0] + [len(group) for group in STYLE])[:-1]
    sizes = np.array([len(group) for group in STYLE])
    style_choice = offsets[archetype] + (rng.random(n) * sizes[archetype]).astype(np.int64)
    style = fill_templates(style_templates, np.where(want_style, style_choice, -1), fields)
    closer = fill_templates(CLOSERS, np.where(want_closer, rng.integers(0, len(CLOSERS), n), -1), fields)
    return join_present([first, skills, cert, style, closer], " ")
