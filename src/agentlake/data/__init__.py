"""The realistic workforce dataset: reference data, role catalogue and the generator.

``roles`` (ROLES, CERTIFICATIONS, normalize_certification) is the vocabulary agents and
scenarios reuse; ``workforce`` generates and loads ``workers``, ``clients`` and
``placements``; ``cities`` ships the real US city and ZIP table; ``resumes`` words the
summaries. Nothing here reads or writes the lake except ``workforce.load_workforce``.
"""

from agentlake.data.roles import (
    CERTIFICATIONS,
    ROLES,
    SECTORS,
    Certification,
    Role,
    find_role,
    normalize_certification,
    role_catalogue,
    split_certifications,
)
from agentlake.data.workforce import Workforce, generate_workforce, load_workforce, write_workforce_files

__all__ = [
    "CERTIFICATIONS",
    "ROLES",
    "SECTORS",
    "Certification",
    "Role",
    "Workforce",
    "find_role",
    "generate_workforce",
    "load_workforce",
    "normalize_certification",
    "role_catalogue",
    "split_certifications",
    "write_workforce_files",
]
