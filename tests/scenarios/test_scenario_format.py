"""Scenario and staffer-profile files: what loads, and how a bad file is reported before any run."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentlake.errors import UserError
from agentlake.scenarios import load_profiles, load_scenarios
from agentlake.scenarios.profile import builtin_staffers
from agentlake.scenarios.scenario import BUILTIN

GOOD = """
scenario: riverfront-steel-day1
client:
  id: riverfront-steel
  name: Riverfront Steel
  city: Cleveland
  state: OH
  acceptance:
    required_certifications: ["OSHA 30"]
    min_reliability: 0.7
    max_distance_miles: 40
    exclude_prior_no_show: true
    role_synonyms: {"Forklift Operator": ["Forklift Driver"]}
date: 2026-04-21
events:
  - {id: e1, at: "08:00", kind: baseline_fill, role: Welder, count: 3, city: Cleveland, state: OH,
     shift: {start: "08:00", end: "16:00"}, requirements: ["AWS D1.1"]}
  - {id: e2, at: 10:30, kind: recurring, same_as: e1, count: 2, shift: {start: 12:00, end: 20:00}}
  - {id: e4, at: 14:00, kind: emergency, no_show_of: e1, count: 2}
  - {id: e5, at: "15:45", kind: misplacement, replace_from: e2, count: 1}
"""


def _write(tmp_path: Path, text: str, name: str = "day.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_issue_example_loads_with_unquoted_times(tmp_path: Path) -> None:
    [scenario] = load_scenarios(_write(tmp_path, GOOD))
    assert scenario.client.acceptance.min_reliability == 0.7
    # YAML 1.1 reads an unquoted 14:00 as the integer 840; the loader gives the time back.
    assert [e.at for e in scenario.events] == ["08:00", "10:30", "14:00", "15:45"]
    assert scenario.events[1].shift is not None
    assert scenario.events[1].shift.start == "12:00"
    assert scenario.events[2].ref == "e1"


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            "kind: emergency, no_show_of: e1",
            "kind: emergency, no_show_of: e9",
            "events[2].no_show_of: refers to 'e9', which is not an earlier event",
        ),
        (
            "kind: emergency, no_show_of: e1",
            "kind: emergncy, no_show_of: e1",
            "events[2].kind: Input should be 'baseline_fill'",
        ),
        (
            "min_reliability: 0.7",
            "min_reliability: 1.7",
            "client.acceptance.min_reliability: Input should be less than or equal to 1",
        ),
        ("min_reliability: 0.7", "min_relability: 0.7", "client.acceptance.min_relability: unknown key"),
        ("id: e4, at: 14:00", "id: e4, at: 25:00", "events[2].at: expected a time like '08:00'"),
        (
            "id: e4, at: 14:00",
            "id: e4, at: 09:00",
            "events[2].at: 09:00 is before the previous event's 10:30",
        ),
        ("id: e5,", "id: e4,", "events[3].id: duplicate event id 'e4'"),
        (
            "kind: baseline_fill, role: Welder, count: 3",
            "kind: baseline_fill, count: 3",
            "events[0]: a baseline_fill event needs a 'role'",
        ),
        (
            "kind: emergency, no_show_of: e1",
            "kind: emergency",
            "events[2]: an emergency event needs 'no_show_of",
        ),
        (
            "state: OH\n  acceptance",
            "state: Ohio\n  acceptance",
            "client.state: must be a two-letter state code",
        ),
        ("date: 2026-04-21", "date: 2026-13-21", "date:"),
    ],
)
def test_malformed_scenario_names_file_path_and_problem(
    tmp_path: Path, old: str, new: str, expected: str
) -> None:
    assert old in GOOD
    path = _write(tmp_path, GOOD.replace(old, new, 1))
    with pytest.raises(UserError) as info:
        load_scenarios(path)
    assert f"{path}: {expected}" in info.value.message


def test_invalid_yaml_reports_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "scenario: x\nclient: [unclosed\n")
    with pytest.raises(UserError, match=rf"{path}: line \d+, column \d+: invalid YAML"):
        load_scenarios(path)


def test_every_bad_file_is_reported_at_once(tmp_path: Path) -> None:
    _write(tmp_path, GOOD, "a.yaml")
    _write(tmp_path, GOOD.replace("count: 3", "count: 0"), "b.yaml")
    _write(tmp_path, GOOD.replace("scenario: riverfront-steel-day1", "scenario: Bad Name"), "c.yaml")
    _write(tmp_path, GOOD, "d.yaml")
    with pytest.raises(UserError) as info:
        load_scenarios(tmp_path)
    message = info.value.message
    assert "b.yaml: events[0].count: Input should be greater than or equal to 1" in message
    assert "c.yaml: scenario: must be lower-case" in message
    assert "d.yaml: scenario: name 'riverfront-steel-day1' is also used by" in message


def test_missing_path_and_empty_directory(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no such scenario file or directory"):
        load_scenarios(tmp_path / "nope.yaml")
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match="no \\*.yaml scenario files"):
        load_scenarios(tmp_path / "empty")


def test_builtin_pack_covers_the_traps() -> None:
    scenarios = load_scenarios(BUILTIN)
    clients = {s.client.id for s in scenarios}
    assert len(clients) >= 4
    assert len(scenarios) >= 8
    for client in clients:
        assert sum(s.client.id == client for s in scenarios) >= 2, f"{client} needs two days"
    kinds = {e.kind for s in scenarios for e in s.events}
    assert kinds == {"baseline_fill", "recurring", "expansion", "emergency", "misplacement"}
    acceptance = [s.client.acceptance for s in scenarios]
    assert any(a.required_certifications for a in acceptance)
    assert any(a.role_synonyms for a in acceptance)
    assert any(a.exclude_prior_no_show for a in acceptance)
    assert any(a.max_distance_miles for a in acceptance)
    # City ambiguity: an event in a city whose name also exists in another state (Columbus, GA).
    from agentlake.workforce.cities import load_cities

    table = load_cities()
    states_of: dict[str, set[str]] = {}
    for name, state in zip(table.name, table.state, strict=True):
        states_of.setdefault(str(name), set()).add(str(state))
    places = {
        (e.city or s.client.city, e.state or s.client.state)
        for s in scenarios
        for e in s.events
        if e.ref is None
    }
    assert any(len(states_of.get(city, set())) > 1 for city, _ in places)


def test_builtin_profiles_load() -> None:
    names = builtin_staffers()
    assert {"full", "basic", "minimal", "local", "rules-learning", "rules-static", "oracle"} <= set(names)
    profiles = {p.staffer: p for p in load_profiles(",".join(names))}
    assert profiles["rules-learning"].learning
    assert profiles["rules-learning"].policy == "rules"
    assert not profiles["rules-static"].learning
    assert not profiles["rules-static"].lessons
    assert profiles["full"].overseer
    assert profiles["full"].rescue
    assert profiles["full"].policy == "llm"
    assert not profiles["minimal"].lessons


def test_malformed_profile_is_refused(tmp_path: Path) -> None:
    bad = _write(tmp_path, "staffer: mine\npolicy: rules\nlearning: true\nlessons: false\n", "mine.yaml")
    with pytest.raises(UserError) as info:
        load_profiles(f"rules-learning,{bad}")
    assert f"{bad}: (top level): learning: true needs lessons: true" in info.value.message
    typo = _write(tmp_path, "staffer: mine\npolicy: llm\nmodels: {executer: ollama:x}\n", "typo.yaml")
    with pytest.raises(UserError, match=r"typo.yaml: models.executer: unknown key"):
        load_profiles(str(typo))
    with pytest.raises(UserError, match="unknown staffer 'nobody'; built-ins are"):
        load_profiles("nobody")


def test_a_profiles_review_every_reaches_its_policy(tmp_path: Path) -> None:
    from agentlake.scenarios.day import build_policy
    from agentlake.settings import load_settings

    path = _write(
        tmp_path, "staffer: watched\npolicy: llm\nreview_every: 3\nmodels: {executor: ollama:x}\n", "w.yaml"
    )
    (profile,) = load_profiles(str(path))
    assert build_policy(profile, load_settings()).review_every == 3


def test_a_negative_review_every_is_refused_naming_the_file(tmp_path: Path) -> None:
    path = _write(tmp_path, "staffer: watched\npolicy: llm\nreview_every: -1\n", "w.yaml")
    with pytest.raises(UserError, match=r"w.yaml: review_every: Input should be greater than or equal to 0"):
        load_profiles(str(path))
