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


# --- 17.11: contract gaps ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "methods"),
    [
        ("/api/graphs/active", {"GET", "HEAD", "PUT", "OPTIONS"}),
        ("/api/session", {"GET", "HEAD", "POST", "DELETE", "OPTIONS"}),
    ],
)
def test_options_answers_with_the_allowed_methods(
    gateway: Any, keys: H, path: str, methods: set[str]
) -> None:
    answer = gateway.options(path, headers=keys["read"])
    assert answer.status_code == 204
    assert set(answer.headers["allow"].split(", ")) == methods


def test_head_works_wherever_get_does(gateway: Any, keys: H) -> None:
    health = gateway.head("/health")
    assert health.status_code == 200
    assert health.content == b""
    worker = gateway.head("/worker/2", headers=keys["read"])
    assert worker.status_code == 200


def test_an_empty_search_filter_means_no_filter(gateway: Any, keys: H) -> None:
    answer = gateway.post("/search", json={"question": "welder", "where": "", "k": 3}, headers=keys["read"])
    assert answer.status_code == 200, answer.text
    assert len(answer.json()["hits"]) == 3


def test_the_api_description_names_every_open_endpoint(gateway: Any, keys: H) -> None:
    description = gateway.get("/openapi.json", headers=keys["read"]).json()["info"]["description"]
    for named in ("`GET /health`", "`GET /`", "`GET /static/{name}`", "`GET|POST|DELETE /api/session`"):
        assert named in description
