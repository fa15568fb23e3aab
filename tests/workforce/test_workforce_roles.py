"""The role catalogue and certification spellings that agents and scenarios reuse."""

from __future__ import annotations

import pytest

from agentlake.workforce import (
    CERTIFICATIONS,
    ROLES,
    SECTORS,
    find_role,
    normalize_certification,
    split_certifications,
)


def test_forty_roles_across_the_four_sectors() -> None:
    assert len(ROLES) == 40
    assert {role.sector for role in ROLES.values()} == set(SECTORS)
    for role in ROLES.values():
        assert len(role.skills) >= 5, role.name
        assert all(cert in CERTIFICATIONS for cert, _ in role.certifications), role.name


def test_signature_certifications() -> None:
    assert dict(ROLES["Forklift Operator"].certifications)["Forklift Certification"] >= 0.9
    assert dict(ROLES["Welder"].certifications)["AWS D1.1"] >= 0.7
    assert dict(ROLES["Registered Nurse"].certifications)["RN License"] == 1.0
    assert dict(ROLES["CDL-A Truck Driver"].certifications)["CDL Class A"] == 1.0


@pytest.mark.parametrize("cert", sorted(CERTIFICATIONS))
def test_every_spelling_normalizes_to_its_canonical_name(cert: str) -> None:
    for variant in CERTIFICATIONS[cert].variants:
        assert normalize_certification(variant) == cert
        assert normalize_certification(f"  {variant.upper()}  ") == cert


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("OSHA 10", "OSHA 10"),
        ("OSHA-10 Hour", "OSHA 10"),
        ("osha10", "OSHA 10"),
        ("OSHA 30-Hour Construction", "OSHA 30"),
        ("Osha 30hr", "OSHA 30"),
        ("CPR/BLS", "BLS"),
        ("CPR & First Aid", "First Aid/CPR"),
        ("Class A CDL w/ Hazmat", "CDL Class A"),
        ("Crane Operator   NCCCO", "Crane Operator NCCCO"),
        ("OSHA 100", "OSHA 100"),
    ],
)
def test_normalize_certification(text: str, canonical: str) -> None:
    assert normalize_certification(text) == canonical


def test_split_and_find_role() -> None:
    assert split_certifications("OSHA-10 Hour, AWS D1.1 Structural Steel") == ["OSHA 10", "AWS D1.1"]
    assert split_certifications(None) == []
    assert find_role("forklift driver").name == "Forklift Operator"
    assert find_role("WELDER").name == "Welder"
    assert find_role("astronaut") is None
    assert ROLES["HVAC Technician"].phrase == "HVAC technician"
