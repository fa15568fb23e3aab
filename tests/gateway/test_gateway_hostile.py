"""The gateway under hostile and careless clients (issue 17): each case refused or capped."""

from __future__ import annotations

from typing import Any

import pytest

H = dict[str, dict[str, str]]

SLOW_FILTER_LESSON = {
    "trigger": "Forklift Operator fills in Ohio",
    "action": "check every pair of workers",
    "match": {"role": "Forklift Operator", "state": "OH"},
    "machine": {"extra_where": "(SELECT count(*) FROM workers a, workers b, workers c) > 0"},
    "confidence": 1.0,
    "source": "human",
}


# --- 17.1: a write key cannot make an active lesson ------------------------------------------


@pytest.mark.parametrize(("scope", "status"), [("write", "pending"), ("admin", "active")])
def test_lessons_from_the_api_start_pending_unless_an_admin_sends_them(
    gateway: Any, keys: H, scope: str, status: str
) -> None:
    sent = gateway.post("/log", json={"kind": "lesson", "lesson": SLOW_FILTER_LESSON}, headers=keys[scope])
    assert sent.status_code == 200, sent.text
    lesson = gateway.get(f"/playbooks/{sent.json()['lesson_id']}", headers=keys["read"]).json()["lesson"]
    assert lesson["status"] == status


def test_confirming_a_pending_api_lesson_does_not_activate_it(gateway: Any, keys: H) -> None:
    draft = {**SLOW_FILTER_LESSON, "confidence": 0.79}
    first = gateway.post("/log", json={"kind": "lesson", "lesson": draft}, headers=keys["write"]).json()
    again = gateway.post("/log", json={"kind": "lesson", "lesson": draft}, headers=keys["write"]).json()
    assert again["outcome"] == "confirmed"
    lesson = gateway.get(f"/playbooks/{first['lesson_id']}", headers=keys["read"]).json()["lesson"]
    assert lesson["status"] == "pending"
