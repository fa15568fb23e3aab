"""Rule induction: a judge's unwritten rules read off what it accepted and refused (silent feedback)."""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agentlake.learn import InductionExtractor, Lesson, LessonStore, get_extractor, learn_cycle
from agentlake.learn.extractor import PoolCheck
from agentlake.observe.model import ObservedOp
from agentlake.workforce.induction import hypergeometric_tail
from agentlake.workforce.learning import StaffingAction, action_of

T0 = datetime(2026, 11, 21, 8, 0, tzinfo=UTC)
SCOPE = "harbor-foods"
SCORES = ("reliability", "responsiveness", "engagement", "communications", "compliance", "availability")
FEATURES = {
    **{name: {"filter": f"min_scores.{name}", "words": name} for name in SCORES},
    "distance_miles": {"filter": "max_distance_miles", "words": "far commute close"},
    "certifications": {"filter": "require_certifications", "words": "card paperwork trained"},
    "prior_no_show": {"filter": "exclude_prior_no_show_at_client", "words": "burned before"},
    "role": {"filter": "accept_roles", "words": "role job"},
}
CERTS = ("OSHA 10", "First Aid/CPR", "Forklift Certification", "HACCP")


def worker(rng: random.Random, worker_id: int) -> dict[str, Any]:
    """A worker with random features (no feature decides anything by itself)."""
    values: dict[str, Any] = {name: round(rng.uniform(0.4, 1.0), 3) for name in SCORES}
    values["distance_miles"] = round(rng.uniform(1, 30), 1)
    values["certifications"] = sorted(c for c in CERTS if rng.random() < 0.5)
    values["prior_no_show"] = rng.random() < 0.15
    return {"id": worker_id, "values": values}


def judged_op(
    op_id: str,
    items: list[dict[str, Any]],
    *,
    said: dict[int, str] | None = None,
    shape: str = "Packer in Omaha, NE (+25 mi)",
    at: int = 0,
) -> ObservedOp:
    attributes: dict[str, Any] = {
        "client_id": SCOPE,
        "accepted": [i["id"] for i in items if i["accepted"]],
        "refused": [i["id"] for i in items if not i["accepted"]],
        "judged": {"scope": SCOPE, "shape": shape, "features": FEATURES, "items": items},
    }
    if said is not None:
        attributes["rejections"] = [{"worker_id": w, "said": text} for w, text in said.items()]
    return ObservedOp(
        id=op_id,
        ts=T0 + timedelta(seconds=at),
        endpoint="fill.judged",
        source="scenario",
        success=not attributes["refused"],
        attributes=attributes,
    )


def silent_batch(
    rule: Callable[[dict[str, Any]], bool], *, n: int = 40, seed: int = 3, first_id: int = 1
) -> list[ObservedOp]:
    """``n`` random workers judged by ``rule``, four to an op."""
    rng = random.Random(seed)
    items = []
    for k in range(n):
        item = worker(rng, first_id + k)
        item["accepted"] = rule(item["values"])
        items.append(item)
    return [judged_op(f"op-{seed}-{i}", items[i : i + 4], at=i) for i in range(0, n, 4)]


def induced(store: LessonStore) -> list[Lesson]:
    return [
        lesson
        for lesson in store.list(source="induction", status=["active", "pending"])
        if lesson.machine and not action_of(lesson).exclude_ids
    ]


RULES: dict[str, tuple[Callable[[dict[str, Any]], bool], Callable[[StaffingAction], bool]]] = {
    "certification": (
        lambda v: "OSHA 10" in v["certifications"],
        lambda m: m.require_certifications == ["OSHA 10"],
    ),
    "score": (lambda v: v["compliance"] >= 0.7, lambda m: set(m.min_scores) == {"compliance"}),
    "distance": (lambda v: v["distance_miles"] <= 18, lambda m: m.max_distance_miles is not None),
    "no-show": (lambda v: not v["prior_no_show"], lambda m: m.exclude_prior_no_show_at_client),
}


@pytest.mark.parametrize("family", sorted(RULES))
def test_each_rule_family_is_induced_from_silent_feedback(store: LessonStore, family: str) -> None:
    rule, expected = RULES[family]
    n = 80 if family == "no-show" else 40  # no-shows are rare: more workers for a few refusals
    report = learn_cycle(store, silent_batch(rule, n=n), extractor="induction", measure=False)
    (lesson,) = induced(store)
    assert expected(action_of(lesson))
    assert lesson.status == "active"
    assert lesson.source == "induction"
    assert lesson.match.get("client_id") == SCOPE
    assert report.notes["induction"][SCOPE]["rules"] == [lesson.describe_action()]


def test_a_threshold_sits_just_inside_the_refusals(store: LessonStore) -> None:
    ops = silent_batch(lambda v: v["compliance"] >= 0.7)
    learn_cycle(store, ops, extractor="induction", measure=False)
    (lesson,) = induced(store)
    items = [i for op in ops for i in op.attributes["judged"]["items"]]
    lowest_accepted = min(i["values"]["compliance"] for i in items if i["accepted"])
    highest_refused = max(i["values"]["compliance"] for i in items if not i["accepted"])
    floor = action_of(lesson).min_scores["compliance"]
    assert highest_refused < floor <= lowest_accepted
    assert floor == pytest.approx(highest_refused + 0.001)
    assert "Only propose workers with compliance >= " in lesson.action


def certified_near_judge() -> list[ObservedOp]:
    """A client taking forklift-certified workers within 18 miles, judged in silence: the ones
    it took live within 10 miles and hold the card; it refused two nearby workers without it
    and five certified ones from 20 miles out."""
    card = ["Forklift Certification"]

    def item(worker_id: int, miles: float, certifications: list[str], accepted: bool) -> dict[str, Any]:
        values: dict[str, Any] = dict.fromkeys(SCORES, 0.9)
        values.update(distance_miles=miles, certifications=certifications, prior_no_show=False)
        return {"id": worker_id, "accepted": accepted, "values": values}

    taken = [item(k, miles, card, True) for k, miles in enumerate((3.0, 4.6, 6.7, 8.3, 10.1, 10.7), 1)]
    uncertified = [item(20, 12.4, [], False), item(21, 13.8, [], False)]
    far = [item(30 + k, miles, card, False) for k, miles in enumerate((20.0, 20.4, 22.9, 24.8, 29.2))]
    items = taken + uncertified + far
    return [judged_op(f"op-{i}", items[i : i + 3], at=i) for i in range(0, len(items), 3)]


def test_a_limit_is_not_placed_by_refusals_another_reason_explains(store: LessonStore) -> None:
    # The two nearby refusals lack the card every accepted worker holds: they say nothing about
    # the distance, and a limit at 12.3 miles would leave out for good certified workers from
    # 12.4 to 18 miles whom the client takes.
    learn_cycle(store, certified_near_judge(), extractor="induction", measure=False)
    (lesson,) = induced(store)
    assert action_of(lesson).max_distance_miles == 19.9


def test_refusals_inside_a_looser_limit_are_left_out_by_id(store: LessonStore) -> None:
    learn_cycle(store, certified_near_judge(), extractor="induction", measure=False)
    (exclusion,) = [lesson for lesson in store.list(source="induction") if action_of(lesson).exclude_ids]
    assert action_of(exclusion).exclude_ids == [20, 21]


def test_confidence_grows_with_the_evidence(open_store, tmp_path) -> None:
    rule = RULES["certification"][0]
    small, large = open_store(path=tmp_path / "a.duckdb"), open_store(path=tmp_path / "b.duckdb")
    learn_cycle(small, silent_batch(rule, n=16), extractor="induction", measure=False)
    learn_cycle(large, silent_batch(rule, n=40), extractor="induction", measure=False)
    (weak,), (strong,) = induced(small), induced(large)
    assert weak.confidence < strong.confidence


def test_new_evidence_revises_a_lesson_instead_of_stacking_another(store: LessonStore) -> None:
    first = silent_batch(lambda v: v["compliance"] >= 0.7)
    learn_cycle(store, first, extractor="induction", measure=False)
    (before,) = induced(store)
    floor = action_of(before).min_scores["compliance"]
    # A worker refused just below the true floor but above the lesson's: the lesson was too loose.
    rng = random.Random(99)
    newcomer = worker(rng, 500)
    newcomer["values"].update(compliance=round((0.7 + floor) / 2, 3), prior_no_show=False)
    newcomer["values"]["certifications"] = list(CERTS)
    newcomer["values"]["distance_miles"] = 2.0
    newcomer["accepted"] = False
    learn_cycle(store, [judged_op("late", [newcomer], at=100)], extractor="induction", measure=False)
    (after,) = induced(store)
    assert after.id == before.id
    assert floor < action_of(after).min_scores["compliance"] < 0.7
    assert after.version == before.version + 1
    (revision,) = [e for e in store.history(after.id) if e.kind == "edit"]
    assert "revised by new evidence" in revision.reason


def test_a_lesson_the_evidence_stops_supporting_is_retired(store: LessonStore) -> None:
    learn_cycle(store, silent_batch(RULES["certification"][0]), extractor="induction", measure=False)
    (lesson,) = induced(store)
    # Accepted workers without OSHA 10: the client does not require it after all.
    rng = random.Random(5)
    outsiders = []
    for k in range(3):
        item = worker(rng, 700 + k)
        item["values"]["certifications"] = ["HACCP"]
        item["accepted"] = True
        outsiders.append(item)
    learn_cycle(store, [judged_op("outsiders", outsiders, at=200)], extractor="induction", measure=False)
    assert store.get(lesson.id).status == "retired"
    assert "no longer supports" in store.history(lesson.id)[-1].reason


def test_contradictory_evidence_gives_no_lesson_and_says_why(store: LessonStore) -> None:
    rng = random.Random(11)
    same = worker(rng, 42)
    accepted = {**same, "accepted": True}
    refused = {**same, "accepted": False}
    ops = [judged_op("yes", [accepted], at=1), judged_op("no", [refused], at=2)]
    report = learn_cycle(store, ops, extractor="induction", measure=False)
    assert store.list(source="induction") == []
    (note,) = report.notes["induction_notes"]
    assert "worker 42 was accepted and refused" in note
    assert "contradictory evidence, no lesson from it" in note


def test_a_judge_that_never_refuses_teaches_nothing(store: LessonStore) -> None:
    report = learn_cycle(store, silent_batch(lambda v: True), extractor="induction", measure=False)
    assert store.list() == []
    assert report.notes["induction"][SCOPE]["refused"] == 0


def test_a_rule_that_would_empty_the_pool_is_withheld(store: LessonStore) -> None:
    def pool_check(scope: str, action: StaffingAction) -> PoolCheck:
        emptied = ("Packer in Omaha, NE (+25 mi)",) if action.require_certifications else ()
        return PoolCheck(before=100, after=0 if emptied else 60, emptied=emptied)

    report = learn_cycle(
        store,
        silent_batch(RULES["certification"][0]),
        extractor="induction",
        measure=False,
        pool_check=pool_check,
    )
    assert induced(store) == []
    assert any(
        "require OSHA 10 withheld: it would leave no candidate for Packer in Omaha" in note
        for note in report.notes["induction_notes"]
    )


def test_refused_workers_no_rule_explains_are_left_out_by_id(store: LessonStore) -> None:
    rng = random.Random(2)
    items = [{**worker(rng, k), "accepted": k != 3} for k in range(1, 5)]
    learn_cycle(store, [judged_op("one", items)], extractor="induction", measure=False)
    (exclusion,) = [lesson for lesson in store.list(source="induction") if action_of(lesson).exclude_ids]
    assert action_of(exclusion).exclude_ids == [3]
    assert "#3" in exclusion.action


def test_the_clients_words_name_a_rule_that_silence_cannot_yet_support(open_store, tmp_path) -> None:
    near = {"id": 1, "accepted": True, "values": {"distance_miles": 4.0, "certifications": []}}
    far = {"id": 2, "accepted": False, "values": {"distance_miles": 22.0, "certifications": []}}
    silent, vague = open_store(path=tmp_path / "s.duckdb"), open_store(path=tmp_path / "v.duckdb")
    learn_cycle(silent, [judged_op("s", [near, far])], extractor="induction", measure=False)
    learn_cycle(
        vague,
        [judged_op("v", [near, far], said={2: "that's too far for this site"})],
        extractor="induction",
        measure=False,
    )
    assert induced(silent) == []
    (lesson,) = induced(vague)
    assert action_of(lesson).max_distance_miles == 21.9


def test_stated_rules_are_the_heuristics_alone(store: LessonStore) -> None:
    op = judged_op("explicit", [{"id": 7, "accepted": False, "values": {"reliability": 0.5}}])
    op.attributes["rejections"] = [
        {"worker_id": 7, "reason": "reliability 0.50 below 0.70", "rule": "min_reliability", "value": 0.7}
    ]
    learn_cycle(store, [op], extractor="induction", measure=False)
    (lesson,) = store.list()
    assert lesson.source == "heuristic"
    assert action_of(lesson).min_scores == {"reliability": 0.7}


def test_strength_is_the_chance_that_only_refused_items_fail_by_accident() -> None:
    assert hypergeometric_tail(refused=1, accepted=1, covered=1) == 0.5
    assert hypergeometric_tail(refused=6, accepted=4, covered=6) == pytest.approx(1 / 210)
    assert isinstance(get_extractor("induction"), InductionExtractor)


def test_a_role_synonym_is_induced_from_silent_feedback(store: LessonStore) -> None:
    # The client took a Warehouse Associate for a Material Handler order: it counts one as the
    # other. Nothing was said (silent feedback); the acceptance is the evidence.
    rng = random.Random(8)
    items = [{**worker(rng, k), "accepted": True} for k in range(1, 4)]
    items[1]["values"].update(role="Warehouse Associate", ordered_role="Material Handler")
    learn_cycle(
        store,
        [judged_op("one", items, shape="Material Handler in Irving, TX")],
        extractor="induction",
        measure=False,
    )
    (lesson,) = induced(store)
    assert action_of(lesson).accept_roles == ["Warehouse Associate"]
    assert lesson.match.get("role") == "Material Handler"
    assert lesson.match.get("client_id") == SCOPE
    assert lesson.status == "active"
    assert "also takes Warehouse Associate" in lesson.action


def test_a_synonym_lesson_grows_with_each_role_taken_instead_of_stacking(store: LessonStore) -> None:
    rng = random.Random(9)
    first, second = ({**worker(rng, k), "accepted": True} for k in (1, 2))
    first["values"].update(role="Warehouse Associate", ordered_role="Material Handler")
    second["values"].update(role="Picker Packer", ordered_role="Material Handler")
    learn_cycle(store, [judged_op("a", [first])], extractor="induction", measure=False)
    (before,) = induced(store)
    learn_cycle(store, [judged_op("b", [second], at=5)], extractor="induction", measure=False)
    (after,) = induced(store)
    assert after.id == before.id
    assert action_of(after).accept_roles == ["Picker Packer", "Warehouse Associate"]
