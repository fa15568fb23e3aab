"""The OpenAPI document against the app itself: schemathesis generates requests from it (a bounded
number per operation) and checks that nothing answers 5xx and every response matches its schema."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from agentlake.gateway.security import OPEN_PATHS
from agentlake.llm import FunctionProvider, GenerateOptions, Message, register_scripted
from agentlake.llm.fakes import unregister_scripted
from agentlake.observe import Observer, OpStore, create_app
from agentlake.settings import load_settings

ADMIN = {"X-API-Key": "ak-0123456789"}
EXAMPLES = 12  # per operation: bounded so the run stays well under a minute
# What the issue asks: no 5xx, and every response (errors included) matches what the schema
# documents. Schema-valid input may still be refused (a string is not always valid SQL), so
# schemathesis' positive-data acceptance check does not apply.
SCHEMA_CHECKS = [status_code_conformance, content_type_conformance, response_schema_conformance]


def _reply(messages: list[Message], options: GenerateOptions) -> str:
    if options.schema_ is not None:
        return json.dumps({"route": "sql", "sql": "SELECT count(*) AS n FROM workers"})
    return "There are 600 workers [SQL]."


@pytest.fixture
def asker() -> Iterator[None]:
    register_scripted("openapi-asker", FunctionProvider(_reply, "openapi-asker"))
    yield
    unregister_scripted("openapi-asker")


def test_every_operation_documents_its_errors(make_gateway: Any) -> None:
    client, _ = make_gateway()
    spec = client.get("/openapi.json", headers=ADMIN).json()
    assert {"APIKeyHeader", "HTTPBearer"} <= set(spec["components"]["securitySchemes"])
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            codes = set(operation["responses"])
            assert "500" in codes, (method, path)
            if path in OPEN_PATHS:  # /health, the dashboard's sign-in
                assert operation["x-required-scope"] == "none", (method, path)
            else:
                assert {"401", "403", "413", "422"} <= codes, (method, path)
                assert operation.get("security"), (method, path)
            error = operation["responses"]["500"]["content"]["application/problem+json"]
            assert error["schema"]["$ref"].endswith("/ProblemDetails"), (method, path)


@pytest.mark.slow
def test_api_conforms_to_its_own_schema(make_gateway: Any, asker: None) -> None:
    # schemathesis' pytest plugin does not run under pytest 9 yet, so drive its strategies directly.
    _, app = make_gateway(executor_model="function:openapi-asker")
    schema = schemathesis.openapi.from_asgi("/openapi.json", app, headers=ADMIN)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 15

    def call(case: Any) -> None:
        if case.path == "/ask":
            # A model named in the request may be down: that is the documented 503, not a bug.
            response = case.call_and_validate(headers=ADMIN, checks=SCHEMA_CHECKS)
            assert response.status_code != 500, response.text
        else:
            case.call_and_validate(headers=ADMIN, checks=[not_a_server_error, *SCHEMA_CHECKS])

    _each_conforms(operations, call)


def _each_conforms(operations: list[Any], call: Any) -> None:
    """Run ``call(case)`` on a bounded, derandomized set of generated cases per operation."""
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            database=None,
            derandomize=True,
            suppress_health_check=list(HealthCheck),
        )
        def conforms(case: Any) -> None:
            call(case)

        conforms()


@pytest.mark.slow
def test_the_observer_api_conforms_to_its_own_schema(tmp_path: Any) -> None:
    # The observer's own OpenAPI (the gateway mounts it under /observer): every operation but
    # the endless SSE stream, with a write key.
    with Observer(OpStore(tmp_path / "o.duckdb")) as observer:
        app = create_app(observer, load_settings(api_keys="w-key:write"))
        headers = {"X-API-Key": "w-key"}
        schema = schemathesis.openapi.from_asgi("/openapi.json", app, headers=headers)
        operations = [result.ok() for result in schema.get_all_operations()]
        operations = [op for op in operations if op.path != "/ops/stream"]
        assert len(operations) >= 6
        _each_conforms(
            operations,
            lambda case: case.call_and_validate(headers=headers, checks=[not_a_server_error, *SCHEMA_CHECKS]),
        )


def test_each_operation_names_its_scope(make_gateway: Any) -> None:
    client, _ = make_gateway()
    paths = client.get("/openapi.json", headers=ADMIN).json()["paths"]
    assert paths["/health"]["get"]["x-required-scope"] == "none"
    assert paths["/worker/{worker_id}"]["get"]["x-required-scope"] == "read"
    assert paths["/log"]["post"]["x-required-scope"] == "write"
    assert paths["/lessons/{lesson_id}/retire"]["post"]["x-required-scope"] == "admin"


def test_http_api_docs_are_generated_from_the_code() -> None:
    from pathlib import Path

    from typer.testing import CliRunner

    from agentlake.cli.main import app

    result = CliRunner().invoke(app, ["openapi", "--markdown"])
    assert result.exit_code == 0, result.output
    docs = Path(__file__).resolve().parents[2] / "docs" / "http-api.md"
    assert docs.read_text() == result.output, (
        "docs/http-api.md is stale: agentlake openapi --markdown > docs/http-api.md"
    )
    spec = json.loads(CliRunner().invoke(app, ["openapi"]).output)
    assert spec["paths"]["/sql"]["post"]["x-required-scope"] == "read"
