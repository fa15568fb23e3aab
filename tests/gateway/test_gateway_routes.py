"""The gateway's routes over a small real lake, in-process: what a caller gets back, and what is observed."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from agentlake.llm import FunctionProvider, GenerateOptions, Message, ScriptedProvider, register_scripted
from agentlake.llm.fakes import unregister_scripted

H = dict[str, dict[str, str]]


def test_sql_returns_capped_rows(gateway: Any, keys: H) -> None:
    body = gateway.post(
        "/sql",
        json={"sql": "SELECT worker_id FROM workers ORDER BY worker_id", "max_rows": 5},
        headers=keys["read"],
    ).json()
    assert body["columns"] == ["worker_id"]
    assert body["rows"] == [[1], [2], [3], [4], [5]]
    assert body["row_count"] == 5
    assert body["truncated"] is True
    params = gateway.post(
        "/sql",
        json={"sql": "SELECT count(*) AS n FROM workers WHERE worker_id <= ?", "params": [10]},
        headers=keys["read"],
    ).json()
    assert params["rows"] == [[10]]
    assert params["truncated"] is False


def test_sql_never_returns_more_than_the_server_cap(make_gateway: Any, keys: H) -> None:
    client, _ = make_gateway(sql_max_rows=3)
    body = client.post(
        "/sql", json={"sql": "SELECT * FROM workers", "max_rows": 100}, headers=keys["read"]
    ).json()
    assert body["row_count"] == 3
    assert body["truncated"] is True


def test_worker_and_profile(gateway: Any, keys: H) -> None:
    sql = (
        "SELECT worker_id, count(*) AS n FROM placements GROUP BY worker_id HAVING count(*) >= 3 "
        "ORDER BY worker_id LIMIT 1"
    )
    worker_id, placements = gateway.post("/sql", json={"sql": sql}, headers=keys["read"]).json()["rows"][0]
    worker = gateway.get(f"/worker/{worker_id}", headers=keys["read"]).json()
    assert worker["worker_id"] == worker_id
    assert worker["name"]
    assert worker["role"]
    assert 0 <= worker["reliability"] <= 1

    profile = gateway.get(f"/profile/{worker_id}", headers=keys["read"]).json()
    assert profile["worker"] == worker
    starts = [p["shift_start"] for p in profile["placements"]]
    assert len(starts) == placements
    assert starts == sorted(starts, reverse=True)
    assert sum(profile["by_status"].values()) == placements
    assert all(p["client_name"] for p in profile["placements"])


def test_profile_lists_the_clients_where_a_worker_did_not_show(gateway: Any, keys: H) -> None:
    sql = (
        "SELECT p.worker_id, c.name FROM placements p JOIN clients c ON c.id = p.client_id "
        "WHERE p.status = 'no_show' ORDER BY p.worker_id LIMIT 1"
    )
    worker_id, client_name = gateway.post("/sql", json={"sql": sql}, headers=keys["read"]).json()["rows"][0]
    profile = gateway.get(f"/profile/{worker_id}", headers=keys["read"]).json()
    assert client_name in profile["no_show_clients"]
    assert profile["by_status"]["no_show"] >= 1


def test_search_ranks_by_meaning(gateway: Any, keys: H) -> None:
    hits = gateway.post(
        "/search", json={"question": "certified welder, MIG and TIG welding", "k": 5}, headers=keys["read"]
    ).json()["hits"]
    assert len(hits) == 5
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    roles = [gateway.get(f"/worker/{h['key']}", headers=keys["read"]).json()["role"] for h in hits]
    assert roles[0] == "Welder"
    assert roles.count("Welder") >= 3
    assert all(h["doc_id"] == f"W-{h['key']}" for h in hits)


def test_match_keeps_only_rows_the_filter_allows(gateway: Any, keys: H) -> None:
    where = "state = 'OH' AND reliability >= 0.5"
    body = gateway.post(
        "/match",
        json={"where": where, "question": "forklift and warehouse experience", "k": 20},
        headers=keys["read"],
    ).json()
    allowed = gateway.post(
        "/sql",
        json={"sql": f"SELECT worker_id FROM workers WHERE {where}", "max_rows": 1000},
        headers=keys["read"],
    ).json()["rows"]
    allowed_ids = {row[0] for row in allowed}
    assert body["hits"]
    assert len(body["hits"]) == min(20, len(allowed_ids))
    assert {h["key"] for h in body["hits"]} <= allowed_ids
    assert all(h["sql_verified"] for h in body["hits"])


@pytest.mark.parametrize("where", ["1=1; DROP TABLE workers", "worker_id IN (SELECT 1 FROM read_csv('x'))"])
def test_match_refuses_a_dangerous_filter(gateway: Any, keys: H, where: str) -> None:
    response = gateway.post("/match", json={"where": where, "question": "welder"}, headers=keys["read"])
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "bad_request"
    assert (
        gateway.post("/sql", json={"sql": "SELECT count(*) FROM workers"}, headers=keys["read"]).json()[
            "rows"
        ][0][0]
        > 0
    )


def test_search_on_a_dataset_without_index_says_how_to_build_one(gateway: Any, keys: H) -> None:
    response = gateway.post("/search", json={"question": "steel", "dataset": "clients"}, headers=keys["read"])
    assert response.status_code == 404
    assert "index" in response.json()["error"]["message"]


def test_tools_list_and_call(gateway: Any, keys: H) -> None:
    tools = {t["name"]: t for t in gateway.get("/tools", headers=keys["read"]).json()["tools"]}
    assert {"sql", "get_worker", "hybrid_search", "find_workers"} <= set(tools)
    assert tools["get_worker"]["parameters"]["required"] == ["worker_id"]

    result = gateway.post(
        "/tools/get_worker/call", json={"arguments": {"worker_id": 4}}, headers=keys["read"]
    ).json()
    assert result["ok"] is True
    assert result["worker_ids"] == [4]
    assert "worker_id=4" in result["text"]
    bad = gateway.post(
        "/tools/sql/call", json={"arguments": {"query": "DELETE FROM workers"}}, headers=keys["read"]
    )
    assert bad.status_code == 200
    assert bad.json()["ok"] is False
    assert "DELETE" in bad.json()["error"]


def test_lessons_filters_and_history(gateway: Any, keys: H) -> None:
    drafts = [
        {
            "trigger": "Welder fills for riverfront-steel",
            "action": "require OSHA 30",
            "match": {"client_id": "riverfront-steel", "role": "Welder"},
            "machine": {"require_certifications": ["OSHA 30"]},
            "source": "human",
        },
        {
            "trigger": "Nurse fills in Ohio",
            "action": "prefer reliability above 0.8",
            "match": {"role": "Registered Nurse", "state": "OH"},
            "machine": {"min_scores": {"reliability": 0.8}},
        },
    ]
    ids = [
        gateway.post("/log", json={"kind": "lesson", "lesson": d}, headers=keys["write"]).json()["lesson_id"]
        for d in drafts
    ]
    all_lessons = gateway.get("/lessons", headers=keys["read"]).json()
    assert all_lessons["total"] == 2
    welders = gateway.get("/lessons", params={"role": "welder"}, headers=keys["read"]).json()
    assert [lesson["id"] for lesson in welders["lessons"]] == [ids[0]]
    assert gateway.get("/lessons", params={"status": "active"}, headers=keys["read"]).json()["total"] == 0
    page = gateway.get("/lessons", params={"limit": 1, "offset": 1}, headers=keys["read"]).json()
    assert page["total"] == 2
    assert len(page["lessons"]) == 1

    gateway.post(f"/lessons/{ids[0]}/retire", json={"reason": "rule dropped"}, headers=keys["admin"])
    restored = gateway.post(f"/lessons/{ids[0]}/rollback", json={"version": 1}, headers=keys["admin"]).json()
    assert restored["status"] == "pending"
    assert restored["version"] == 3
    detail = gateway.get(f"/lessons/{ids[0]}", headers=keys["read"]).json()
    assert [event["kind"] for event in detail["history"]] == ["add", "retire", "rollback"]


def test_log_rejects_a_lesson_whose_filter_the_guard_refuses(gateway: Any, keys: H) -> None:
    draft = {"trigger": "x", "action": "y", "machine": {"extra_where": "1=1; DROP TABLE workers"}}
    response = gateway.post("/log", json={"kind": "lesson", "lesson": draft}, headers=keys["write"])
    assert response.status_code == 422
    assert gateway.get("/lessons", headers=keys["read"]).json()["total"] == 0


def _a_lesson(gateway: Any, keys: H) -> str:
    draft = {"trigger": "Welder fills", "action": "require OSHA 30", "match": {"role": "Welder"}}
    return gateway.post("/log", json={"kind": "lesson", "lesson": draft}, headers=keys["write"]).json()[
        "lesson_id"
    ]


def test_playbooks_still_lists_what_lessons_lists(gateway: Any, keys: H) -> None:
    _a_lesson(gateway, keys)
    alias = gateway.get("/playbooks", headers=keys["read"]).json()
    assert alias == gateway.get("/lessons", headers=keys["read"]).json()


def test_a_lesson_retired_through_the_alias_is_retired(gateway: Any, keys: H) -> None:
    lesson_id = _a_lesson(gateway, keys)
    gateway.post(f"/playbooks/{lesson_id}/retire", json={"reason": "old client"}, headers=keys["admin"])
    assert gateway.get(f"/lessons/{lesson_id}", headers=keys["read"]).json()["lesson"]["status"] == "retired"


def test_openapi_marks_every_playbooks_path_deprecated(gateway: Any, keys: H) -> None:
    paths = gateway.get("/openapi.json", headers=keys["read"]).json()["paths"]
    aliases = [op for path, ops in paths.items() if path.startswith("/playbooks") for op in ops.values()]
    assert [op.get("deprecated") for op in aliases] == [True] * 4


def test_openapi_marks_no_lessons_path_deprecated(gateway: Any, keys: H) -> None:
    paths = gateway.get("/openapi.json", headers=keys["read"]).json()["paths"]
    lessons = [op for path, ops in paths.items() if path.startswith("/lessons") for op in ops.values()]
    assert [op.get("deprecated", False) for op in lessons] == [False] * 4


def test_each_lessons_path_has_its_alias(gateway: Any, keys: H) -> None:
    paths = gateway.get("/openapi.json", headers=keys["read"]).json()["paths"]
    lessons = {path.removeprefix("/lessons") for path in paths if path.startswith("/lessons")}
    assert lessons == {path.removeprefix("/playbooks") for path in paths if path.startswith("/playbooks")}


def test_models_reports_providers_reachability_and_loaded(
    make_gateway: Any, keys: H, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentlake.llm import generate
    from agentlake.llm.fakeserver import serve_fake_ollama

    provider = ScriptedProvider("qwen-test")
    provider.enqueue("hello")
    with serve_fake_ollama(provider, models=["qwen-test"]) as url:
        monkeypatch.setenv("OLLAMA_HOST", url)
        client, _ = make_gateway(executor_model="ollama:qwen-test", reviewer_model="ollama:missing-model")
        generate("ollama:qwen-test", "hi", settings=client.app.state.settings)  # now "loaded" (/api/ps)
        body = client.get("/models", headers=keys["read"]).json()
    models = {m["model"]: m for m in body["models"]}
    assert models["ollama:qwen-test"]["reachable"] is True
    assert models["ollama:qwen-test"]["loaded"] is True
    assert models["ollama:qwen-test"]["roles"] == ["executor"]
    assert models["ollama:missing-model"]["reachable"] is False
    assert body["providers"] == [
        {"name": "ollama", "models": 2, "reachable": True, "loaded": ["ollama:qwen-test"]}
    ]


def test_models_with_no_server_says_unreachable(make_gateway: Any, keys: H) -> None:
    client, _ = make_gateway(executor_model="ollama:qwen3:4b")
    body = client.get("/models", headers=keys["read"]).json()
    assert body["providers"][0]["reachable"] is False
    assert body["models"][0]["detail"]


@pytest.fixture
def asker() -> Iterator[ScriptedProvider]:
    provider = ScriptedProvider("asker")
    register_scripted("asker", provider)
    yield provider
    unregister_scripted("asker")


def test_ask_answers_structured_questions_with_sql_and_cites_it(
    gateway: Any, keys: H, asker: ScriptedProvider
) -> None:
    count = gateway.post(
        "/sql", json={"sql": "SELECT count(*) FROM workers WHERE state = 'OH'"}, headers=keys["read"]
    ).json()["rows"][0][0]
    asker.enqueue(json.dumps({"route": "sql", "sql": "SELECT count(*) AS n FROM workers WHERE state = 'OH'"}))
    asker.enqueue(f"There are {count} workers in Ohio [SQL].")
    answer = gateway.post(
        "/ask",
        json={"question": "How many workers live in Ohio?", "model": "scripted:asker"},
        headers=keys["read"],
    ).json()
    assert answer["route"] == "sql"
    assert answer["cited"] == ["SQL"]
    assert answer["answer"] == f"There are {count} workers in Ohio [SQL]."
    assert answer["sources"][0]["text"] == f"one value: n = {count}"
    # The model saw the real columns when planning, and the query result when answering.
    plan_prompt = asker.history[0][0][0].content
    assert "workers (600 rows): worker_id integer" in plan_prompt
    assert str(count) in asker.history[1][0][-1].content


def test_ask_uses_search_for_fuzzy_questions_and_cites_documents(
    gateway: Any, keys: H, asker: ScriptedProvider
) -> None:
    asker.enqueue(
        json.dumps(
            {
                "route": "search",
                "search_text": "welder with structural steel experience",
                "where": "state = 'OH'",
            }
        )
    )

    asker.enqueue("The best fit is the first one.")  # cites nothing: the sources get appended
    answer = gateway.post(
        "/ask",
        json={"question": "Who in Ohio could weld structural steel?", "model": "scripted:asker", "k": 3},
        headers=keys["read"],
    ).json()
    assert answer["route"] == "search"
    assert answer["where"] == "state = 'OH'"
    assert len(answer["sources"]) == 3
    assert all(s["id"].startswith("W-") for s in answer["sources"])
    assert answer["answer"].startswith("The best fit is the first one.\n\nSources: [W-")
    assert answer["cited"] == [s["id"] for s in answer["sources"]]
    for source in answer["sources"]:
        assert gateway.get(f"/worker/{source['key']}", headers=keys["read"]).json()["state"] == "OH"


def test_ask_says_it_could_not_answer_when_every_planned_query_is_refused(
    gateway: Any, keys: H, asker: ScriptedProvider
) -> None:
    asker.enqueue(json.dumps({"route": "sql", "sql": "DELETE FROM workers"}))
    asker.enqueue(json.dumps({"route": "sql", "sql": "DROP TABLE workers"}))  # told why, it insists
    answer = gateway.post(
        "/ask", json={"question": "remove everyone", "model": "scripted:asker"}, headers=keys["read"]
    ).json()
    assert answer["route"] == "none"
    assert answer["answer"].startswith("I could not answer this from the data.")
    assert "DELETE" in answer["revision"]
    assert "Your plan did not run:" in asker.history[1][0][-1].content
    assert gateway.post("/sql", json={"sql": "SELECT count(*) FROM workers"}, headers=keys["read"]).json()[
        "rows"
    ] == [[600]]


def test_ask_without_a_model_is_503(gateway: Any, keys: H) -> None:
    response = gateway.post("/ask", json={"question": "How many welders?"}, headers=keys["read"])
    assert response.status_code == 503
    assert "AGENTLAKE_EXECUTOR_MODEL" in response.json()["error"]["message"]


def test_ask_with_an_unreachable_model_server_is_503(make_gateway: Any, keys: H) -> None:
    client, _ = make_gateway(executor_model="ollama:qwen3:4b", llm_max_retries=0)  # OLLAMA_HOST: 127.0.0.1:9
    response = client.post("/ask", json={"question": "How many welders?"}, headers=keys["read"])
    assert response.status_code == 503
    assert response.json()["error"]["type"] == "unavailable"
    assert "OLLAMA_HOST" in response.json()["error"]["message"]


def test_ask_over_a_real_http_model_server(
    make_gateway: Any, keys: H, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentlake.llm.fakeserver import serve_fake_ollama

    def reply(messages: list[Message], options: GenerateOptions) -> str:
        if options.schema_ is not None:  # the planning call asks for the plan's JSON schema
            return json.dumps({"route": "sql", "sql": "SELECT max(worker_id) AS top FROM workers"})
        return "The highest worker id is 600 [SQL]."

    with serve_fake_ollama(FunctionProvider(reply, "planner"), models=["planner"]) as url:
        monkeypatch.setenv("OLLAMA_HOST", url)
        client, _ = make_gateway()
        answer = client.post(
            "/ask", json={"question": "highest worker id?", "model": "ollama:planner"}, headers=keys["read"]
        ).json()
    assert answer["sources"][0]["text"].endswith("600")
    assert answer["cited"] == ["SQL"]


def test_every_call_is_observed_with_its_route_and_outcome(make_gateway: Any, keys: H) -> None:
    client, app = make_gateway()
    client.get("/worker/3", headers=keys["read"])
    client.get("/worker/99999", headers=keys["read"])
    client.get("/worker/3")  # no key
    client.post("/tools/sql/call", json={"arguments": {"query": "SELECT 1 AS x"}}, headers=keys["read"])
    observer = app.state.services.observer
    deadline = time.monotonic() + 10  # an op is committed just after its response went out
    while sum(op.source == "gateway" for op in observer.recent(20)) < 4 and time.monotonic() < deadline:
        time.sleep(0.02)
    ops = observer.recent(20)
    # Ordered by start: commits of consecutive requests may land in either order.
    gateway_ops = sorted((op for op in ops if op.source == "gateway"), key=lambda op: op.ts)
    assert [(op.endpoint, op.success) for op in gateway_ops] == [
        ("GET /worker/{worker_id}", True),
        ("GET /worker/{worker_id}", False),
        ("GET /worker/{worker_id}", False),
        ("POST /tools/{name}/call", True),
    ]
    assert "404" in gateway_ops[1].error
    assert "no worker with worker_id 99999" in gateway_ops[1].error
    assert "401" in gateway_ops[2].error
    assert '"key": "key-' in gateway_ops[0].input_summary
    assert "rk-0123456789" not in gateway_ops[0].input_summary
    tool_op = next(op for op in ops if op.endpoint == "tool.sql")
    assert tool_op.parent_span_id == gateway_ops[3].span_id
    assert tool_op.trace_id == gateway_ops[3].trace_id
    assert tool_op.agent_id == "gateway"


def test_a_broken_recorder_fails_the_request_instead_of_hanging(
    make_gateway: Any, keys: H, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken_wrap_tool(fn: Any, **kwargs: Any) -> Any:
        async def call(*args: Any, **kw: Any) -> Any:
            raise RuntimeError("recorder broke before the app ran")

        return call

    client, _ = make_gateway()
    monkeypatch.setattr("agentlake.observe.wrap_tool", broken_wrap_tool)
    with pytest.raises(RuntimeError, match="recorder broke"):
        client.get("/health")
