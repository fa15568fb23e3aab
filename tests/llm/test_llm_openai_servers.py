"""OpenAI-compatible servers without a models file: what the server says about a model decides
its window and whether it gets ``response_format``; a reply schema goes out in the form strict
servers take. Against real HTTP servers on 127.0.0.1 speaking as vLLM, llama.cpp's server, LM
Studio and OpenRouter do."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field

from agentlake.llm import ScriptedProvider, generate_structured, get_provider
from agentlake.llm.fakeserver import serve_fake_openai
from agentlake.llm.openai_wire import strict_schema


class Search(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["search"]
    query: str


class Propose(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["propose"]
    worker_ids: list[int]


class Action(BaseModel):
    """A discriminated union at the root, the shape of the executor's action."""

    action: Annotated[Search | Propose, Field(discriminator="kind")]


Step = Annotated[Search | Propose, Field(discriminator="kind")]


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """``server(**serve_fake_openai options) -> ScriptedProvider`` serving ``openai:m``, with
    OPENAI_BASE_URL pointing at it."""
    with ExitStack() as stack:

        def start(**options: Any) -> ScriptedProvider:
            provider = ScriptedProvider("m")
            monkeypatch.setenv("OPENAI_BASE_URL", stack.enter_context(serve_fake_openai(provider, **options)))
            return provider

        yield start


def test_a_vllm_model_gets_the_window_the_server_runs_it_with(server: Any) -> None:
    server(cards={"m": {"max_model_len": 32768}})
    info = get_provider("openai:m").model_info
    assert info.context_window == 32768
    assert info.source == "server"


def test_a_llamacpp_model_gets_the_context_its_server_was_started_with(server: Any) -> None:
    server(
        cards={"m": {"owned_by": "llamacpp", "meta": {"n_ctx_train": 32768}}},
        metadata={"/props": {"default_generation_settings": {"n_ctx": 8192}}},
    )
    assert get_provider("openai:m").capabilities.context_window == 8192


def test_an_lm_studio_model_gets_its_loaded_context(server: Any) -> None:
    server(
        metadata={
            "/api/v0/models/m": {"id": "m", "max_context_length": 131072, "loaded_context_length": 16384}
        }
    )
    assert get_provider("openai:m").capabilities.context_window == 16384


def test_a_server_that_says_nothing_leaves_the_defaults(server: Any) -> None:
    server()
    info = get_provider("openai:m").model_info
    assert info.context_window == 4096
    assert info.source == "default"


def test_an_unreachable_server_leaves_the_defaults_without_raising(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    assert get_provider("openai:m").capabilities.context_window == 4096


def test_an_unknown_model_gets_a_json_schema_response_format(server: Any) -> None:
    provider = server()
    provider.enqueue('{"action": {"kind": "search", "query": "welders in OH"}}')
    reply = generate_structured("openai:m", "find welders", Action)
    assert reply.action == Search(kind="search", query="welders in OH")
    assert provider.raw_requests[0]["response_format"]["type"] == "json_schema"


def test_a_union_at_the_root_goes_out_with_root_type_object(server: Any) -> None:
    from pydantic import TypeAdapter

    from agentlake.llm import generate_json

    provider = server()
    provider.enqueue('{"kind": "propose", "worker_ids": [4, 9]}')
    adapter = TypeAdapter(Step)
    generate_json("openai:m", "propose", adapter.json_schema(), validate=adapter.validate_python)
    sent = provider.raw_requests[0]["response_format"]["json_schema"]
    assert sent["schema"]["type"] == "object"
    assert "oneOf" not in str(sent["schema"])
    assert "discriminator" not in sent["schema"]
    assert sent["strict"] is False  # a root anyOf is outside OpenAI's strict subset


def test_a_closed_object_with_every_field_required_is_sent_strict() -> None:
    schema, strict = strict_schema(Search.model_json_schema())
    assert schema["type"] == "object"
    assert strict is True


def test_an_object_with_optional_fields_is_not_sent_strict() -> None:
    class Query(BaseModel):
        model_config = ConfigDict(extra="forbid")
        text: str
        k: int = 10

    assert strict_schema(Query.model_json_schema())[1] is False


def test_strict_schema_leaves_its_input_alone() -> None:
    schema = Action.model_json_schema()
    before = str(schema)
    strict_schema(schema)
    assert str(schema) == before


def test_a_server_that_says_a_model_takes_no_response_format_gets_prompted_json(server: Any) -> None:
    provider = server(cards={"m": {"context_length": 65536, "supported_parameters": ["temperature", "stop"]}})
    provider.enqueue('{"kind": "search", "query": "welders"}')
    assert generate_structured("openai:m", "find welders", Search).query == "welders"
    assert "response_format" not in provider.raw_requests[0]


def test_the_models_file_wins_over_what_the_server_says(
    server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    models = tmp_path / "models.toml"
    models.write_text('[models."openai:m"]\ncontext_window = 2048\nschema = false\n')
    monkeypatch.setenv("AGENTLAKE_LLM_MODELS_FILE", str(models))
    server(cards={"m": {"max_model_len": 32768}})
    info = get_provider("openai:m").model_info
    assert info.context_window == 2048
    assert info.supports_schema is False


def test_the_readme_models_file_example_is_a_valid_models_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import re

    from agentlake.llm.models import lookup_model
    from agentlake.settings import load_settings

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    (example,) = re.findall(r"```toml\n(.*?)```", readme, re.S)
    models = tmp_path / "agentlake-models.toml"
    models.write_text(example)
    monkeypatch.setenv("AGENTLAKE_LLM_MODELS_FILE", str(models))
    settings = load_settings()
    assert lookup_model("openai", "Qwen/Qwen2.5-7B-Instruct", settings).context_window == 32768
    assert lookup_model("openai", "anything-else", settings).context_window == 8192
