"""The role catalogue and the certification vocabulary, as data: a table, not rules.

Owns :data:`SECTORS`, :data:`CERTIFICATIONS` (each canonical certification with the spellings
real records use and the patterns that match them) and :data:`ROLES` (40 roles across light
industrial, skilled trades, logistics and healthcare, each with skills, certifications and the
share of holders, synonyms and a share of the workforce). Matching text against them (the one
role finder, certification spellings) is ``roles``'; the generator samples from here.
"""

from __future__ import annotations

from dataclasses import dataclass

SECTORS = ("light industrial", "skilled trades", "logistics", "healthcare")
LI, ST, LG, HC = SECTORS


@dataclass(frozen=True)
class Certification:
    """A canonical certification, the spellings seen in records, and patterns that match them."""

    name: str
    variants: tuple[str, ...]
    patterns: tuple[str, ...]


@dataclass(frozen=True)
class Role:
    """A job role: sector, skills, certifications (canonical name, share of holders), synonyms."""

    name: str
    sector: str
    skills: tuple[str, ...]
    certifications: tuple[tuple[str, float], ...]
    synonyms: tuple[str, ...]
    weight: float  # relative share of the workforce

    @property
    def phrase(self) -> str:
        """The role inside a sentence: lower case except acronyms ('CDL-A truck driver')."""
        return " ".join(word if word[1:] != word[1:].lower() else word.lower() for word in self.name.split())


# Order matters where spellings overlap: BLS before First Aid/CPR ("CPR/BLS"), reach truck
# before forklift. Patterns run on normalized text: lower case, non-alphanumerics as spaces.
_CERTS: list[Certification] = [
    Certification(
        "OSHA 10",
        ("OSHA 10", "OSHA-10", "OSHA 10-Hour", "OSHA-10 Hour", "OSHA 10 Hr"),
        (r"\bosha ?10(?!\d)",),
    ),
    Certification(
        "OSHA 30",
        ("OSHA 30", "OSHA-30", "OSHA 30-Hour", "OSHA-30 Hour", "OSHA 30 Hr Construction"),
        (r"\bosha ?30(?!\d)",),
    ),
    Certification(
        "Reach Truck Certification",
        ("Reach Truck Certified", "Reach Truck Cert", "Reach Truck Operator Certification"),
        (r"\breach truck\b",),
    ),
    Certification(
        "Forklift Certification",
        (
            "Forklift Certification",
            "Forklift Certified",
            "Forklift Operator Cert",
            "PIT (Forklift) Certified",
            "Powered Industrial Truck",
        ),
        (r"\bfork ?lift\b", r"\bpowered industrial truck\b", r"\bpit\b"),
    ),
    Certification(
        "AWS D1.1",
        ("AWS D1.1", "AWS D1.1 Structural Steel", "AWS-D1.1", "AWS Certified Welder (D1.1)"),
        (r"\baws\b.*\bd ?1 1\b",),
    ),
    Certification(
        "ASME Section IX", ("ASME Section IX", "ASME IX", "ASME Sec. IX Pipe"), (r"\basme\b.*\b(ix|9)\b",)
    ),
    Certification(
        "CDL Class A",
        ("CDL Class A", "Class A CDL", "CDL-A", "CDL A License"),
        (r"\bcdl ?a\b", r"\bclass a\b.*\bcdl\b", r"\bcdl\b.*\bclass a\b"),
    ),
    Certification(
        "CDL Class B",
        ("CDL Class B", "Class B CDL", "CDL-B"),
        (r"\bcdl ?b\b", r"\bclass b\b.*\bcdl\b", r"\bcdl\b.*\bclass b\b"),
    ),
    Certification(
        "Hazmat Endorsement",
        ("Hazmat Endorsement", "HAZMAT (H) Endorsement", "H Endorsement"),
        (r"\bhazmat\b", r"\bh endorsement\b"),
    ),
    Certification(
        "DOT Medical Card",
        ("DOT Medical Card", "DOT Med Card", "DOT Physical"),
        (r"\bdot\b.*\b(med|medical|physical)\b",),
    ),
    Certification(
        "Journeyman Electrician License",
        ("Journeyman Electrician License", "Journeyman Electrician", "Journeyman Electrical License"),
        (r"\bjourneyman electric",),
    ),
    Certification(
        "Journeyman Plumber License",
        ("Journeyman Plumber License", "Journeyman Plumber", "Licensed Journeyman Plumber"),
        (r"\bjourneyman plumb",),
    ),
    Certification(
        "EPA 608",
        ("EPA 608 Universal", "EPA Section 608", "EPA-608", "EPA 608 Certified"),
        (r"\bepa\b.*\b608\b", r"^608\b"),
    ),
    Certification("NCCER Core", ("NCCER Core", "NCCER Core Curriculum", "NCCER"), (r"\bnccer\b",)),
    Certification(
        "NIMS Machining Level I",
        ("NIMS Machining Level I", "NIMS Level 1", "NIMS Certified Machinist"),
        (r"\bnims\b",),
    ),
    Certification(
        "Lockout/Tagout", ("Lockout/Tagout", "LOTO", "Lockout Tagout (LOTO)"), (r"\bloto\b", r"\block ?out\b")
    ),
    Certification(
        "Confined Space Entry",
        ("Confined Space Entry", "Confined Space", "Permit-Required Confined Space"),
        (r"\bconfined space\b",),
    ),
    Certification(
        "Aerial Lift Certification",
        ("Aerial Lift Certified", "MEWP Operator", "Scissor Lift / Aerial Lift"),
        (r"\baerial lift\b", r"\bmewp\b", r"\bscissor lift\b"),
    ),
    Certification(
        "Fall Protection", ("Fall Protection", "Fall Protection Competent Person"), (r"\bfall protection\b",)
    ),
    Certification(
        "BLS",
        ("BLS", "BLS (AHA)", "Basic Life Support", "AHA BLS Provider", "CPR/BLS"),
        (r"\bbls\b", r"\bbasic life support\b"),
    ),
    Certification(
        "ACLS",
        ("ACLS", "ACLS (AHA)", "Advanced Cardiac Life Support"),
        (r"\bacls\b", r"\badvanced cardiac life support\b"),
    ),
    Certification(
        "PALS",
        ("PALS", "Pediatric Advanced Life Support"),
        (r"\bpals\b", r"\bpediatric advanced life support\b"),
    ),
    Certification(
        "First Aid/CPR",
        ("First Aid/CPR", "CPR & First Aid", "First Aid CPR AED", "CPR/First Aid"),
        (r"\bfirst aid\b", r"\bcpr\b"),
    ),
    Certification(
        "RN License",
        ("RN License", "Registered Nurse (RN)", "RN - State License", "Licensed RN"),
        (r"\brn\b", r"\bregistered nurse\b"),
    ),
    Certification(
        "LPN License",
        ("LPN License", "LPN", "Licensed Practical Nurse (LPN)", "LVN/LPN"),
        (r"\blpn\b", r"\blvn\b", r"\blicensed practical nurse\b"),
    ),
    Certification(
        "CNA Certification",
        ("CNA", "Certified Nursing Assistant", "C.N.A.", "State CNA Certification"),
        (r"\bc ?n ?a\b", r"\bcertified nursing assistant\b"),
    ),
    Certification(
        "Certified Medical Assistant",
        ("CMA", "CCMA", "Certified Medical Assistant", "CMA (AAMA)"),
        (r"\bc?cma\b", r"\bcertified medical assistant\b"),
    ),
    Certification(
        "Phlebotomy Certification",
        ("CPT (NHA)", "Certified Phlebotomy Technician", "Phlebotomy Certified", "NCCT Phlebotomy"),
        (r"\bphlebotom", r"\bcpt\b"),
    ),
    Certification(
        "Patient Care Technician Certification",
        ("CPCT/A", "Certified Patient Care Technician", "PCT Certified"),
        (r"\bc?pct\b", r"\bpatient care tech"),
    ),
    Certification(
        "Home Health Aide Certification",
        ("HHA", "Home Health Aide Certificate", "Certified HHA"),
        (r"\bhha\b", r"\bhome health aide\b"),
    ),
    Certification(
        "Pharmacy Technician Certification",
        ("CPhT", "PTCB CPhT", "Certified Pharmacy Technician", "Pharmacy Tech (PTCB)"),
        (r"\bcpht\b", r"\bpharmacy tech"),
    ),
    Certification(
        "Certified Surgical Technologist",
        ("CST", "Certified Surgical Technologist", "NBSTSA CST"),
        (r"\bcst\b", r"\bsurgical technologist\b"),
    ),
    Certification(
        "EMT Certification",
        ("NREMT", "EMT-B", "EMT Basic (NREMT)", "State EMT Certification"),
        (r"\bn?remt\b", r"\bemt\b"),
    ),
    Certification(
        "Bloodborne Pathogens",
        ("Bloodborne Pathogens", "BBP Training", "Bloodborne Pathogens Training"),
        (r"\bbloodborne\b", r"\bbbp\b"),
    ),
    Certification("TWIC Card", ("TWIC", "TWIC Card", "TWIC Credential"), (r"\btwic\b",)),
    Certification(
        "ServSafe Food Handler",
        ("ServSafe Food Handler", "ServSafe", "Food Handler Card"),
        (r"\bservsafe\b", r"\bfood handler\b"),
    ),
    Certification("HACCP", ("HACCP", "HACCP Certified", "HACCP Training"), (r"\bhaccp\b",)),
    Certification(
        "Six Sigma Yellow Belt",
        ("Six Sigma Yellow Belt", "Lean Six Sigma Yellow Belt", "6 Sigma Yellow Belt"),
        (r"\b(six|6) sigma\b",),
    ),
    Certification(
        "ASQ CQI",
        ("ASQ CQI", "Certified Quality Inspector", "CQI (ASQ)"),
        (r"\bcqi\b", r"\bcertified quality inspector\b"),
    ),
]

CERTIFICATIONS: dict[str, Certification] = {cert.name: cert for cert in _CERTS}


def _role(name: str, sector: str, weight: float, skills: str, certs: dict[str, float], synonyms: str) -> Role:
    return Role(
        name=name,
        sector=sector,
        skills=tuple(s.strip() for s in skills.split(";")),
        certifications=tuple(certs.items()),
        synonyms=tuple(s.strip() for s in synonyms.split(";") if s.strip()),
        weight=weight,
    )


_ROLE_LIST: list[Role] = [
    # --- light industrial ---------------------------------------------------------------
    _role(
        "Warehouse Associate",
        LI,
        9.0,
        "pallet jack; RF scanning; order picking; packing and shipping; inventory counts; loading and unloading trucks; shrink wrapping; cycle counts",
        {"OSHA 10": 0.3, "Forklift Certification": 0.25, "First Aid/CPR": 0.1},
        "warehouse worker; warehouse clerk; warehouse team member",
    ),
    _role(
        "Picker Packer",
        LI,
        6.0,
        "order picking; packing and shipping; RF scanning; pallet jack; quality checks; labeling; pick-to-light systems",
        {"OSHA 10": 0.2, "Forklift Certification": 0.1},
        "picker; packer; pick and pack; order filler",
    ),
    _role(
        "Assembler",
        LI,
        5.0,
        "hand tools; power tools; reading work instructions; quality checks; small parts assembly; torque wrenches; line production",
        {"OSHA 10": 0.25, "Lockout/Tagout": 0.15},
        "assembly worker; production assembler; line assembler",
    ),
    _role(
        "Machine Operator",
        LI,
        5.0,
        "machine setup; press operation; reading work instructions; quality checks; calipers and micrometers; line production; changeovers",
        {"OSHA 10": 0.35, "Lockout/Tagout": 0.4, "Forklift Certification": 0.15},
        "machine tender; press operator; production operator",
    ),
    _role(
        "Production Worker",
        LI,
        7.0,
        "line production; packaging; quality checks; sanitation; hand tools; labeling; pallet jack",
        {"OSHA 10": 0.25, "ServSafe Food Handler": 0.15, "HACCP": 0.1},
        "production associate; line worker; factory worker; manufacturing associate",
    ),
    _role(
        "Quality Inspector",
        LI,
        2.0,
        "visual inspection; calipers and micrometers; blueprint reading; SPC charting; documentation; root cause analysis; first article inspection",
        {"ASQ CQI": 0.35, "Six Sigma Yellow Belt": 0.3, "OSHA 10": 0.2},
        "QC inspector; quality control inspector; QA inspector; quality technician",
    ),
    _role(
        "Packaging Operator",
        LI,
        3.0,
        "packaging lines; machine setup; labeling; quality checks; shrink wrapping; changeovers; line production",
        {"OSHA 10": 0.25, "Lockout/Tagout": 0.25, "HACCP": 0.1},
        "packaging machine operator; packager; packaging technician",
    ),
    _role(
        "Material Handler",
        LI,
        5.0,
        "pallet jack; loading and unloading trucks; line feeding; RF scanning; inventory counts; sit-down forklift",
        {"Forklift Certification": 0.55, "OSHA 10": 0.3},
        "material handling associate; line feeder; stock handler",
    ),
    _role(
        "Sanitation Technician",
        LI,
        2.0,
        "chemical handling; equipment washdown; sanitation; lockout/tagout procedures; GMP practices; pest control checks",
        {"Lockout/Tagout": 0.45, "HACCP": 0.3, "ServSafe Food Handler": 0.3},
        "sanitation worker; sanitor; industrial cleaner",
    ),
    _role(
        "General Laborer",
        LI,
        7.0,
        "loading and unloading trucks; hand tools; site cleanup; material moving; pallet jack; basic carpentry; landscaping",
        {"OSHA 10": 0.35, "First Aid/CPR": 0.1},
        "laborer; general labor; helper; day laborer",
    ),
    # --- skilled trades -----------------------------------------------------------------
    _role(
        "Welder",
        ST,
        3.0,
        "MIG welding; TIG welding; stick welding (SMAW); flux-core welding (FCAW); blueprint reading; structural steel; pipe welding; metal fabrication; grinding; plasma cutting",
        {"AWS D1.1": 0.75, "OSHA 10": 0.45, "OSHA 30": 0.12, "ASME Section IX": 0.15},
        "welding; welder fabricator; MIG welder; TIG welder; fabricator; structural welder",
    ),
    _role(
        "Electrician",
        ST,
        2.0,
        "conduit bending; wiring and terminations; troubleshooting; blueprint reading; motor controls; PLC basics; panel installation; NEC code",
        {
            "Journeyman Electrician License": 0.6,
            "OSHA 10": 0.4,
            "OSHA 30": 0.2,
            "Aerial Lift Certification": 0.2,
        },
        "industrial electrician; electrical technician; journeyman electrician; wireman",
    ),
    _role(
        "Plumber",
        ST,
        1.2,
        "pipe fitting; soldering and brazing; drain cleaning; fixture installation; PEX and copper piping; blueprint reading; backflow testing",
        {"Journeyman Plumber License": 0.6, "OSHA 10": 0.35},
        "plumbing technician; journeyman plumber; pipe layer",
    ),
    _role(
        "HVAC Technician",
        ST,
        1.5,
        "refrigerant handling; troubleshooting; ductwork; brazing; electrical diagnostics; preventive maintenance; rooftop units",
        {"EPA 608": 0.85, "OSHA 10": 0.35, "NCCER Core": 0.15},
        "HVAC tech; HVAC mechanic; refrigeration technician; heating and air technician",
    ),
    _role(
        "Carpenter",
        ST,
        1.5,
        "framing; finish carpentry; blueprint reading; power tools; concrete forms; drywall; measuring and layout",
        {"OSHA 10": 0.5, "OSHA 30": 0.1, "NCCER Core": 0.2, "Fall Protection": 0.25},
        "framer; finish carpenter; rough carpenter; carpentry",
    ),
    _role(
        "CNC Machinist",
        ST,
        1.5,
        "CNC setup; G-code editing; blueprint reading; GD&T; calipers and micrometers; lathe operation; mill operation; first article inspection",
        {"NIMS Machining Level I": 0.35, "OSHA 10": 0.3},
        "CNC operator; machinist; CNC programmer; CNC setup operator",
    ),
    _role(
        "Maintenance Technician",
        ST,
        2.5,
        "troubleshooting; preventive maintenance; hydraulics; pneumatics; electrical diagnostics; PLC basics; welding repairs; conveyor systems",
        {"OSHA 10": 0.45, "Lockout/Tagout": 0.55, "EPA 608": 0.15, "Aerial Lift Certification": 0.15},
        "maintenance mechanic; industrial maintenance; facilities technician; maintenance tech",
    ),
    _role(
        "Millwright",
        ST,
        0.8,
        "rigging; machine alignment; conveyor systems; precision measuring; bearing replacement; blueprint reading; welding repairs",
        {"OSHA 10": 0.5, "OSHA 30": 0.2, "NCCER Core": 0.3, "Confined Space Entry": 0.2},
        "industrial mechanic; millwright mechanic",
    ),
    _role(
        "Pipefitter",
        ST,
        0.8,
        "pipe fitting; pipe welding; blueprint reading; rigging; threading; hydrostatic testing; isometric drawings",
        {"ASME Section IX": 0.35, "OSHA 10": 0.45, "OSHA 30": 0.2, "Confined Space Entry": 0.2},
        "steamfitter; pipe fitter; process piping fitter",
    ),
    _role(
        "Industrial Painter",
        ST,
        0.8,
        "spray painting; surface preparation; sandblasting; powder coating; masking; color matching; respirator use",
        {"OSHA 10": 0.4, "Aerial Lift Certification": 0.2, "Confined Space Entry": 0.1},
        "spray painter; coatings applicator; paint line operator",
    ),
    _role(
        "Sheet Metal Worker",
        ST,
        0.8,
        "sheet metal fabrication; press brake; ductwork; blueprint reading; spot welding; shearing; measuring and layout",
        {"OSHA 10": 0.4, "NCCER Core": 0.2},
        "sheet metal mechanic; tinner; sheet metal fabricator",
    ),
    # --- logistics ----------------------------------------------------------------------
    _role(
        "Forklift Operator",
        LG,
        5.0,
        "sit-down forklift; stand-up forklift; pallet jack; loading and unloading trucks; RF scanning; inventory counts; stacking and racking; shipping and receiving",
        {"Forklift Certification": 0.92, "OSHA 10": 0.35, "Reach Truck Certification": 0.2},
        "forklift driver; lift truck operator; hi-lo driver; fork lift operator; forklift op",
    ),
    _role(
        "Reach Truck Operator",
        LG,
        1.5,
        "reach truck; high-bay racking; RF scanning; putaway; inventory counts; pallet jack",
        {"Reach Truck Certification": 0.85, "Forklift Certification": 0.6, "OSHA 10": 0.3},
        "reach driver; narrow aisle operator; reach lift operator",
    ),
    _role(
        "CDL-A Truck Driver",
        LG,
        3.0,
        "tractor-trailer driving; pre-trip inspections; ELD logs; route planning; backing and docking; load securement; DOT regulations",
        {"CDL Class A": 1.0, "DOT Medical Card": 0.85, "Hazmat Endorsement": 0.25, "TWIC Card": 0.15},
        "truck driver; OTR driver; class A driver; tractor trailer driver; regional driver; CDL-A driver",
    ),
    _role(
        "Delivery Driver",
        LG,
        3.0,
        "route planning; customer service; package handling; vehicle inspections; GPS navigation; proof-of-delivery scanning; box truck driving",
        {"CDL Class B": 0.3, "DOT Medical Card": 0.35},
        "courier; route driver; box truck driver; last-mile driver",
    ),
    _role(
        "Shipping and Receiving Clerk",
        LG,
        2.5,
        "bills of lading; receiving inspection; RF scanning; WMS data entry; inventory counts; carrier scheduling; pallet jack",
        {"Forklift Certification": 0.35, "OSHA 10": 0.2},
        "receiving clerk; shipping clerk; dock clerk; logistics clerk",
    ),
    _role(
        "Inventory Control Specialist",
        LG,
        1.2,
        "cycle counts; WMS data entry; Excel; reconciliation; RF scanning; root cause analysis",
        {"Forklift Certification": 0.3, "Six Sigma Yellow Belt": 0.1},
        "inventory clerk; inventory analyst; stock controller",
    ),
    _role(
        "Order Selector",
        LG,
        2.5,
        "voice picking; electric pallet jack; order picking; pallet building; RF scanning; cold storage work",
        {"Forklift Certification": 0.3, "OSHA 10": 0.15},
        "selector; grocery selector; warehouse selector; order puller",
    ),
    _role(
        "Dispatcher",
        LG,
        0.8,
        "dispatch software; route planning; driver communication; ELD logs; customer service; scheduling",
        {"TWIC Card": 0.05},
        "logistics dispatcher; fleet dispatcher; transportation coordinator",
    ),
    _role(
        "Yard Jockey",
        LG,
        0.8,
        "yard truck driving; trailer moves; backing and docking; pre-trip inspections; yard management systems",
        {"CDL Class A": 0.55, "DOT Medical Card": 0.4},
        "yard driver; hostler; yard spotter; spotter driver",
    ),
    # --- healthcare ---------------------------------------------------------------------
    _role(
        "Registered Nurse",
        HC,
        3.0,
        "patient assessment; medication administration; IV therapy; charting in Epic; care planning; wound care; telemetry",
        {"RN License": 1.0, "BLS": 0.9, "ACLS": 0.45, "PALS": 0.15},
        "RN; staff nurse; travel nurse; charge nurse",
    ),
    _role(
        "Licensed Practical Nurse",
        HC,
        1.8,
        "medication administration; vital signs; wound care; charting; patient care; long-term care",
        {"LPN License": 1.0, "BLS": 0.85},
        "LPN; LVN; licensed vocational nurse; practical nurse",
    ),
    _role(
        "Certified Nursing Assistant",
        HC,
        3.5,
        "activities of daily living; vital signs; patient transfers; feeding assistance; charting; infection control",
        {"CNA Certification": 0.95, "BLS": 0.6, "First Aid/CPR": 0.2},
        "CNA; nursing assistant; nurse aide; STNA",
    ),
    _role(
        "Medical Assistant",
        HC,
        2.0,
        "vital signs; rooming patients; EHR charting; injections; scheduling; specimen collection",
        {"Certified Medical Assistant": 0.7, "BLS": 0.7},
        "MA; clinical medical assistant; CMA",
    ),
    _role(
        "Phlebotomist",
        HC,
        1.2,
        "venipuncture; specimen handling; patient identification; lab requisitions; capillary collection",
        {"Phlebotomy Certification": 0.85, "BLS": 0.6, "Bloodborne Pathogens": 0.4},
        "phlebotomy technician; lab assistant; blood draw technician",
    ),
    _role(
        "Patient Care Technician",
        HC,
        1.5,
        "vital signs; EKG; phlebotomy; patient transfers; activities of daily living; charting",
        {"Patient Care Technician Certification": 0.75, "BLS": 0.8},
        "PCT; patient care tech; hospital technician",
    ),
    _role(
        "Home Health Aide",
        HC,
        2.2,
        "personal care; meal preparation; medication reminders; companionship; light housekeeping; patient transfers",
        {"Home Health Aide Certification": 0.8, "First Aid/CPR": 0.5},
        "HHA; caregiver; personal care aide; home care aide",
    ),
    _role(
        "Pharmacy Technician",
        HC,
        1.2,
        "prescription filling; inventory management; insurance billing; compounding; pharmacy software",
        {"Pharmacy Technician Certification": 0.8},
        "pharmacy tech; CPhT; pharmacy assistant",
    ),
    _role(
        "Surgical Technologist",
        HC,
        0.7,
        "sterile technique; instrument setup; surgical counts; OR turnover; patient positioning",
        {"Certified Surgical Technologist": 0.85, "BLS": 0.9},
        "surgical tech; scrub tech; OR technician",
    ),
    _role(
        "Emergency Medical Technician",
        HC,
        0.9,
        "patient assessment; BLS care; patient transport; vital signs; radio communication; documentation",
        {"EMT Certification": 1.0, "BLS": 0.95},
        "EMT; EMT-B; ambulance technician; emergency medical tech",
    ),
]

ROLES: dict[str, Role] = {role.name: role for role in _ROLE_LIST}
