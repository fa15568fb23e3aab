"""External sources over HTTP (issue 32 point 7's route): listing needs a write key, adding and
removing an admin key, against a real PostgreSQL source; the password is never echoed nor
recorded in the gateway's ops."""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import urlsplit

H = dict[str, dict[str, str]]
# tests/conftest.py's crm_url carries this password (its PASSWORD).
PASSWORD = "Src-Pw-7f3a91c2e5"


def _recorded(client: Any, endpoint: str) -> list[Any]:
    """The gateway's ops of ``endpoint`` (committed just after the response: waited for)."""
    observer = client.app.state.services.observer
    for _ in range(50):
        found = list(observer.query(endpoint=endpoint, limit=10))
        if found:
            return found
        time.sleep(0.1)
    return []


def test_sources_need_a_write_key_to_list_and_an_admin_key_to_add(gateway: Any, keys: H) -> None:
    assert gateway.get("/sources", headers=keys["read"]).status_code == 403
    assert gateway.get("/sources", headers=keys["write"]).json() == {"sources": []}
    body = {"name": "crm", "target": "postgresql://reader@127.0.0.1:1/crm"}
    assert gateway.post("/sources", json=body, headers=keys["write"]).status_code == 403
    assert gateway.delete("/sources/crm", headers=keys["write"]).status_code == 403


def test_an_admin_adds_a_postgresql_source_that_sql_reads_and_no_answer_shows_its_password(
    gateway: Any, keys: H, crm_url: str
) -> None:
    assert urlsplit(crm_url).password == PASSWORD
    added = gateway.post("/sources", json={"name": "crm", "target": crm_url}, headers=keys["admin"])
    assert added.status_code == 201, added.text
    assert PASSWORD not in added.text
    assert added.json()["target"] == crm_url.replace(PASSWORD, "***")
    assert "crm.orders" in added.json()["tables"]
    counted = gateway.post("/sql", json={"sql": "SELECT count(*) AS n FROM crm.orders"}, headers=keys["read"])
    assert counted.json()["rows"] == [[4]]
    listed = gateway.get("/sources", headers=keys["write"])
    assert [s["name"] for s in listed.json()["sources"]] == ["crm"]
    assert PASSWORD not in listed.text
    (op,) = _recorded(gateway, "POST /sources")
    assert PASSWORD not in op.model_dump_json()


def test_a_second_name_is_refused_and_a_removed_source_is_gone(gateway: Any, keys: H, crm_url: str) -> None:
    body = {"name": "crm", "target": crm_url}
    assert gateway.post("/sources", json=body, headers=keys["admin"]).status_code == 201
    again = gateway.post("/sources", json=body, headers=keys["admin"])
    assert again.status_code == 400
    assert PASSWORD not in again.text
    assert gateway.delete("/sources/crm", headers=keys["admin"]).json()["name"] == "crm"
    assert gateway.delete("/sources/crm", headers=keys["admin"]).status_code == 404
    assert gateway.get("/sources", headers=keys["write"]).json() == {"sources": []}


def test_an_unreachable_source_is_refused_without_its_password(gateway: Any, keys: H) -> None:
    target = f"postgresql://reader:{PASSWORD}@127.0.0.1:1/crm"
    refused = gateway.post("/sources", json={"name": "crm", "target": target}, headers=keys["admin"])
    assert refused.status_code == 503
    assert PASSWORD not in refused.text


def test_a_bad_name_says_the_rule(gateway: Any, keys: H) -> None:
    refused = gateway.post("/sources", json={"name": "Bad-Name", "target": "/nope.db"}, headers=keys["admin"])
    assert refused.status_code == 400
    assert "lower-case letters" in refused.json()["detail"]
