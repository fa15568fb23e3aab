"""The in-process ``local:`` provider on the real Qwen2.5-Coder-0.5B (``make test`` installs it).

Loaded once per engine for the session (transformers always; llama.cpp where llama-cpp-python
is installed). Each test makes one or two short constrained calls.
"""

from __future__ import annotations

import importlib.util
import json

import jsonschema
import pytest
from llm_support import CopyingModel

from agentlake.errors import UserError
from agentlake.llm import CallRecord, ContextOverflowError, Message, generate, generate_json
from agentlake.llm.local import STRING_CAP, LocalProvider, render_chat
from agentlake.llm.packaged import gguf_info, installed, packaged_model
from agentlake.settings import load_settings

MODEL = "qwen2.5-coder-0.5b"
ENGINES = [
    "transformers",
    pytest.param(
        "llamacpp",
        marks=pytest.mark.skipif(
            importlib.util.find_spec("llama_cpp") is None,
            reason="llama-cpp-python not built (make local-llm)",
        ),
    ),
]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not installed(packaged_model(MODEL)),
        reason="run `agentlake models install 0.5b` (make test installs it)",
    ),
]

SYSTEM = (
    "You are the executor of a staffing agency. You fill orders for shifts with qualified workers. "
    "Every reply is one JSON object: the action to take next and its arguments. "
    + " ".join(
        f"Rule {i}: check certifications, availability and distance before proposing anyone."
        for i in range(12)
    )
)
ORDER_SCHEMA = {
    "type": "object",
    "properties": {
        "role": {"type": "string", "enum": ["Welder", "Electrician", "Forklift Operator"]},
        "city": {"type": "string"},
        "state": {"type": "string"},
        "count": {"type": "integer", "minimum": 1},
        "notes": {"type": "string"},
    },
    "required": ["role", "city", "state", "count", "notes"],
    "additionalProperties": False,
}


@pytest.fixture(scope="module", params=ENGINES)
def provider(request: pytest.FixtureRequest) -> LocalProvider:
    settings = load_settings(local_engine=request.param)
    local = LocalProvider(MODEL, settings)
    local.decoder()  # load now, so test timings do not include the load
    return local


def _ask(provider: LocalProvider, order: str, system: str = SYSTEM):
    return generate_json(
        provider,
        [{"role": "system", "content": system}, {"role": "user", "content": f"Read this order: {order}"}],
        ORDER_SCHEMA,
        max_tokens=200,
        retries=0,
    )


def test_constrained_reply_is_valid_json_of_the_schema(provider: LocalProvider) -> None:
    result = _ask(provider, "fill 3 x Welder in Cleveland, OH for Riverfront Steel at 08:00")
    jsonschema.validate(result.value, ORDER_SCHEMA)
    assert result.value["role"] == "Welder"
    assert result.value["count"] == 3


def test_the_unchanged_prompt_prefix_is_not_evaluated_again(
    provider: LocalProvider, records: list[CallRecord]
) -> None:
    system = f"Agency {provider.engine}, second desk. {SYSTEM}"  # a system prompt no other call used
    first = _ask(provider, "fill 2 x Electrician in Akron, OH at 06:00", system)
    second = _ask(provider, "fill 1 x Forklift Operator in Toledo, OH at 14:00", system)
    evaluated_first = first.completion.usage.input_tokens - first.completion.usage.cached_input_tokens
    evaluated_second = second.completion.usage.input_tokens - second.completion.usage.cached_input_tokens
    assert first.completion.usage.cached_input_tokens < 10  # at most the template's first tokens
    assert second.completion.usage.cached_input_tokens > 200  # the system prompt's tokens
    assert evaluated_second < evaluated_first / 5
    assert records[-1].cached_input_tokens == second.completion.usage.cached_input_tokens


def _counted(provider: LocalProvider, monkeypatch: pytest.MonkeyPatch, content: str, draft: int = 0):
    """A greedy constrained reply to ``content``, with the engine's forward passes counted."""
    decoder = provider.decoder()
    passes: list[int] = []
    evaluate = decoder.engine.evaluate
    monkeypatch.setattr(decoder.engine, "evaluate", lambda *args: passes.append(1) or evaluate(*args))
    prompt = render_chat(gguf_info(provider.gguf_path).chat_template, [Message(role="user", content=content)])
    generation = decoder.generate(
        prompt, schema=ORDER_SCHEMA, max_tokens=120, temperature=None, stop=None, window=4096, draft=draft
    )
    return generation, passes


def test_what_the_grammar_forces_is_evaluated_without_a_step_of_its_own(
    provider: LocalProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    generation, passes = _counted(provider, monkeypatch, "Read this order: fill 3 x Welder in Cleveland, OH")
    jsonschema.validate(json.loads(generation.text), ORDER_SCHEMA)
    assert generation.forced_tokens >= 10  # the five keys and their punctuation, at least
    # The prompt's pass, then one per sampled token but the last (it closes the object: nothing
    # but the stop token may follow, and no pass is spent to pick it).
    assert len(passes) == generation.output_tokens - generation.forced_tokens


def test_drafts_change_the_passes_not_the_reply(provider: LocalProvider) -> None:
    model = CopyingModel(provider.decoder().engine.tokenizer)
    order = "fill 3 x Welder in Cleveland, OH; notes: AWS D1.1 certified, steel-toe boots, 8-hour shift"
    prompt = (
        f'Order: {order}. Reply: {{"role": "Welder", "notes": "AWS D1.1 certified"}}, {{"role": "Welder"}}'
    )
    # After a role the grammar forces only the closing quote (notes may follow, or not): the
    # step without a draft writes it as a token of its own, and so must the step after a draft.
    schema = {
        "type": "object",
        "properties": {"role": ORDER_SCHEMA["properties"]["role"], "notes": {"type": "string"}},
        "required": ["role"],
        "additionalProperties": False,
    }
    replies = {}
    for draft in (0, 8):
        model.calls.clear()
        generation = model.decoder.generate(
            prompt, schema=schema, max_tokens=80, temperature=None, stop=None, window=4096, draft=draft
        )
        replies[draft] = (generation, len(model.calls))
    (plain, plain_passes), (drafted, drafted_passes) = replies[0], replies[8]
    assert drafted.text == plain.text
    assert drafted.drafted_tokens > 0
    assert drafted_passes < plain_passes


def test_a_real_reply_copying_its_prompt_takes_fewer_passes_with_drafts(
    provider: LocalProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    order = "fill 3 x Welder in Cleveland, OH; notes: AWS D1.1 certified, steel-toe boots, 8-hour shift"
    content = f"Read this order and copy its notes word for word: {order}"
    generation, passes = _counted(provider, monkeypatch, content, draft=8)
    value = json.loads(generation.text)
    jsonschema.validate(value, ORDER_SCHEMA)
    assert value["role"] == "Welder"
    if provider.decoder().engine.verifies_drafts:
        assert generation.drafted_tokens > 0
        # Without drafts: the prompt's pass, then one per sampled token but the last.
        assert len(passes) < generation.output_tokens - generation.forced_tokens
    else:
        assert generation.drafted_tokens == 0


def test_a_forced_text_stops_before_a_word_two_values_begin_alike(provider: LocalProvider) -> None:
    import xgrammar

    from agentlake.llm.structured import cap_schema

    decoder = provider.decoder()
    schema = {"type": "object", "properties": {"route": {"enum": ["sql", "search"]}}, "required": ["route"]}
    matcher = xgrammar.GrammarMatcher(decoder._compiled(cap_schema(schema)))
    forced = decoder.engine.tokenizer.decode(decoder._forced(matcher, 20))
    assert forced == '{"route": "'  # not '{"route": "s': the model picks its own token for "sql"


@pytest.mark.parametrize(
    ("value", "forced"),
    [
        ({"anyOf": [{"type": "string"}, {"type": "null"}]}, '{"role":'),  # the model writes ' "' or ' null'
        ({"type": "array", "items": {"type": "string"}}, '{"role":'),  # the model writes ' ["'
    ],
)
def test_a_forced_text_stops_before_what_the_next_token_joins(
    provider: LocalProvider, value: dict, forced: str
) -> None:
    import xgrammar

    from agentlake.llm.structured import cap_schema

    decoder = provider.decoder()
    schema = {"type": "object", "properties": {"role": value}, "required": ["role"]}
    matcher = xgrammar.GrammarMatcher(decoder._compiled(cap_schema(schema)))
    assert decoder.engine.tokenizer.decode(decoder._forced(matcher, 20)) == forced


def test_a_free_text_field_is_capped_and_the_reply_ends(provider: LocalProvider) -> None:
    result = generate(
        provider,
        [
            {"role": "system", "content": "Answer with JSON."},
            {
                "role": "user",
                "content": "Write an essay of at least 2000 words about welding into the notes field.",
            },
        ],
        schema={"type": "object", "properties": {"notes": {"type": "string"}}, "required": ["notes"]},
        max_tokens=400,
    )
    notes = json.loads(result.text)["notes"]
    assert len(notes) <= STRING_CAP
    assert result.finish_reason == "stop"


def test_a_reply_ends_before_its_stop_string(provider: LocalProvider) -> None:
    result = generate(
        provider, "Write a Python function that adds two numbers.", max_tokens=120, stop=["return"]
    )
    assert result.finish_reason == "stop"
    assert "return" not in result.text
    assert "def " in result.text


def test_a_reply_ending_on_its_own_keeps_its_text_when_stop_strings_are_given(
    provider: LocalProvider,
) -> None:
    result = generate(provider, "Say the word: yes", max_tokens=20, stop=["@@@"])
    assert result.text.strip() != ""


def test_timings_and_usage_are_reported(provider: LocalProvider) -> None:
    result = generate(provider, "Name one welding process. One line.", max_tokens=16)
    assert result.usage.output_tokens > 0
    assert result.prompt_ms is not None
    assert result.generation_ms is not None
    assert result.prompt_ms + result.generation_ms <= result.latency_ms


def test_a_prompt_over_the_window_is_refused_before_the_model_runs() -> None:
    settings = load_settings(local_context_window=512)
    local = LocalProvider(MODEL, settings)
    assert local.capabilities.context_window == 512
    with pytest.raises(ContextOverflowError, match=r"context window 512"):
        generate(local, "word " * 2000, max_tokens=64)


def test_too_little_memory_is_refused_before_loading(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentlake.llm.local import engine

    monkeypatch.setattr(engine, "available_memory", lambda: 200 * 1024 * 1024)
    # A window no other test uses: a fresh engine, not one loaded already.
    settings = load_settings(local_context_window=1536, local_engine="transformers")
    with pytest.raises(
        UserError, match=r"not enough memory for local:qwen2.5-coder-0.5b.*0.2 GiB is available"
    ):
        LocalProvider(MODEL, settings).decoder()


def test_an_unknown_local_model_names_the_known_ones() -> None:
    from agentlake.llm import get_provider

    with pytest.raises(UserError, match=r"unknown local model 'gpt-9'.*local:qwen2.5-coder-0.5b"):
        get_provider("local:gpt-9")
