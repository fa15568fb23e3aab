"""The staffing domain: everything that knows workers, clients, placements, roles and orders.

Layout: ``roles`` (the role catalogue, certification spellings and the one role finder),
``cities`` + ``resumes`` + ``generator`` (the reference data and the synthetic workforce),
``tables`` (the domain's tables in the lake and the trusted reads of them), ``geo`` (where
places are), ``order`` (``FillOrder``), ``order_words`` (an order in words, a reader's parts of
it checked against the text), ``schedule`` (who is booked when), ``candidates``
(the search for qualified workers), ``verify`` (whether a proposed fill is valid),
``profile`` (a worker and their history) and ``facts`` (what a client sees when it judges a
fill). Its side of learning is ``learning`` (the staffing ``learn.Domain``: its task key, its
machine action ``StaffingAction``, the rules clients state) and ``induction`` (the rules they
do not), with ``evidence`` (what a judged fill carries). It reads the lake and never writes
it, except ``generator.load_workforce``.

It imports ``lake`` and ``learn`` (the learning machinery it plugs into as a domain), never
``agents``, ``scenarios``, ``observe`` or a door: agents and scenarios are built on it, not
the reverse.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentlake.workforce.catalogue import CERTIFICATIONS, ROLES, SECTORS, Certification, Role
from agentlake.workforce.order import FillOrder, slugify
from agentlake.workforce.roles import (
    canonical_role,
    find_role,
    normalize_certification,
    role_catalogue,
    role_in_text,
    same_role,
    split_certifications,
)
from agentlake.workforce.schedule import Booking, ScheduleBook
from agentlake.workforce.tables import SEARCH_COLUMN, SEARCH_DATASET, TABLES
from agentlake.workforce.verify import Rejection, Verification, verify_fill

if TYPE_CHECKING:
    from agentlake.workforce.generator import (
        Workforce,
        generate_workforce,
        load_workforce,
        write_workforce_files,
    )

# The generator builds large NumPy/Arrow tables: it loads
# on first use (start-up time of every CLI command and server that never generates data).
_LAZY = {
    "Workforce": "agentlake.workforce.generator",
    "generate_workforce": "agentlake.workforce.generator",
    "load_workforce": "agentlake.workforce.generator",
    "write_workforce_files": "agentlake.workforce.generator",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'agentlake.workforce' has no attribute {name!r}")


__all__ = [
    "CERTIFICATIONS",
    "ROLES",
    "SEARCH_COLUMN",
    "SEARCH_DATASET",
    "SECTORS",
    "TABLES",
    "Booking",
    "Certification",
    "FillOrder",
    "Rejection",
    "Role",
    "ScheduleBook",
    "Verification",
    "Workforce",
    "canonical_role",
    "find_role",
    "generate_workforce",
    "load_workforce",
    "normalize_certification",
    "role_catalogue",
    "role_in_text",
    "same_role",
    "slugify",
    "split_certifications",
    "verify_fill",
    "write_workforce_files",
]
