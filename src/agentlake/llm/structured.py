"""Typed structured output: ``generate_structured`` (a Pydantic model) and ``generate_json``
(any JSON schema, with a validator of your own).

Native schema-constrained decoding where the provider supports it (``capabilities
.supports_schema``), else the tolerant parser and, in the prompt, the caller's short example of
the reply when it gives one (small models answer a raw schema with the schema itself), the
schema otherwise. Each reply goes through ``generate_continuable`` (so truncated JSON is
continued first); a parse or validation error goes back to the model, with the errors, for a
bounded number of retries. Gives up with :class:`StructuredOutputError` carrying the raw text.
A model that keeps giving no valid reply opens a breaker of its own (``<provider:model>
(structured output)``, the ``llm_breaker_*`` settings): while it is open, structured calls to
that model fail at once with ``CircuitOpenError`` instead of spending minutes on replies that
will not parse. This module does not define what agents ask for: callers bring the model or
schema.

It also owns ``cap_schema``, what a schema becomes before a grammar constrains decoding to it
(the ``local:`` decoder's xgrammar, the ``llamacpp:`` provider's llama.cpp grammar): every
string, list, free key, number and date or time bounded, so no reply runs to the token limit.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from agentlake.errors import RunError
from agentlake.llm.accounting import Tally, accounting_scope
from agentlake.llm.generate import _continuable, _prepare
from agentlake.llm.jsonparse import JSONParseError, parse_json_tolerant
from agentlake.llm.provider import Completion, GenerateOptions, Message, Provider, Usage

if TYPE_CHECKING:
    from agentlake.settings import Settings

M = TypeVar("M", bound=BaseModel)
MAX_ERRORS_SHOWN = 6

NATIVE_INSTRUCTION = "Reply with one JSON value matching the required JSON schema: no prose, no code fences."
PROMPTED_INSTRUCTION = "Reply with one JSON value and nothing else (no prose, no code fences), matching this JSON schema:\n{schema}"
EXAMPLE_INSTRUCTION = (
    "Reply with one JSON value and nothing else (no prose, no code fences), shaped like:\n{example}"
)
FEEDBACK = (
    "Your reply did not match the required JSON schema:\n{errors}\n"
    "Reply again with only the corrected JSON value."
)


class StructuredOutputError(RunError):
    """The model gave no valid structured reply within its retries. ``raw_text`` holds the last
    reply, ``errors`` the last parse/validation errors."""

    def __init__(self, message: str, *, raw_text: str, errors: list[str], attempts: int) -> None:
        super().__init__(message, raw_text=raw_text, errors=errors, attempts=attempts)
        self.raw_text = raw_text
        self.errors = errors
        self.attempts = attempts


class StructuredResult(BaseModel):
    """A validated reply with its accounting. ``value``: what the validator returned."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    value: Any
    text: str
    completion: Completion
    attempts: int
    continuations: int
    schema_retries: int
    cost_usd: float | None
    native_schema: bool


def with_instruction(messages: list[Message], instruction: str) -> list[Message]:
    """``messages`` with ``instruction`` appended to the system message (or a new one first)."""
    if messages and messages[0].role == "system":
        first = Message(role="system", content=f"{messages[0].content}\n\n{instruction}")
        return [first, *messages[1:]]
    return [Message(role="system", content=instruction), *messages]


def _pydantic_errors(exc: ValidationError) -> list[str]:
    return [f"{'.'.join(str(part) for part in err['loc']) or '(root)'}: {err['msg']}" for err in exc.errors()]


def _structured(
    provider: Provider,
    msgs: list[Message],
    opts: GenerateOptions,
    schema: dict,
    validate: Callable[[Any], Any],
    retries: int,
    settings: Settings,
    tally: Tally,
    label: str,
    example: str | None = None,
) -> StructuredResult:
    from agentlake.llm.resilience import breaker_for

    breaker = breaker_for(
        f"{getattr(provider, 'breaker_key', None) or f'{provider.name}:{provider.model}'} (structured output)",
        failures=settings.llm_breaker_failures,
        cooldown_s=settings.llm_breaker_cooldown_s,
    )
    breaker.before_call()
    try:
        result = _structured_attempts(
            provider, msgs, opts, schema, validate, retries, settings, tally, label, example
        )
    except StructuredOutputError:
        breaker.on_failure()
        raise
    except BaseException:
        breaker.on_neutral()  # the model call itself failed: its own breaker counts that
        raise
    breaker.on_success()
    return result


def _structured_attempts(
    provider: Provider,
    msgs: list[Message],
    opts: GenerateOptions,
    schema: dict,
    validate: Callable[[Any], Any],
    retries: int,
    settings: Settings,
    tally: Tally,
    label: str,
    example: str | None,
) -> StructuredResult:
    native = provider.capabilities.supports_schema
    if native:
        conversation = with_instruction(msgs, NATIVE_INSTRUCTION)
        opts = opts.model_copy(update={"schema_": schema})
    else:
        instruction = (
            EXAMPLE_INSTRUCTION.format(example=example)
            if example
            else PROMPTED_INSTRUCTION.format(schema=json.dumps(schema, separators=(",", ":")))
        )
        conversation = with_instruction(msgs, instruction)
        opts = opts.model_copy(update={"schema_": None})
    started = time.perf_counter()
    attempts_before, continuations_before = tally.attempts, tally.continuations
    total = Usage()
    cost: float | None = 0.0
    errors: list[str] = []
    text = ""
    for attempt in range(retries + 1):
        outcome = _continuable(
            provider,
            conversation,
            opts,
            settings,
            tally,
            True,
            settings.llm_max_continuations,
            settings.llm_max_tokens_cap,
        )
        total = total + outcome.usage
        cost = None if cost is None or outcome.cost_usd is None else cost + outcome.cost_usd
        text = outcome.text
        if outcome.repaired:
            raise StructuredOutputError(
                f"{provider.name}:{provider.model} reply for {label} stayed truncated after {outcome.continuations} "
                "continuations; the repaired JSON is not trusted as complete: raise max_tokens or ask for less",
                raw_text=text,
                errors=["truncated"],
                attempts=tally.attempts - attempts_before,
            )
        try:
            value = validate(parse_json_tolerant(text))
        except JSONParseError as exc:
            errors = [exc.message]
        except ValidationError as exc:
            errors = _pydantic_errors(exc)
        except (ValueError, TypeError) as exc:  # a validator's own rejection
            errors = [str(exc)]
        else:
            return StructuredResult(
                value=value,
                text=text,
                completion=outcome.completion.model_copy(
                    update={"usage": total, "latency_ms": (time.perf_counter() - started) * 1000}
                ),
                attempts=tally.attempts - attempts_before,
                continuations=tally.continuations - continuations_before,
                schema_retries=attempt,
                cost_usd=cost,
                native_schema=native,
            )
        if attempt < retries:
            shown = "\n".join(f"- {error}" for error in errors[:MAX_ERRORS_SHOWN])
            conversation = [
                *conversation,
                Message(role="assistant", content=text),
                Message(role="user", content=FEEDBACK.format(errors=shown)),
            ]
    raise StructuredOutputError(
        f"{provider.name}:{provider.model} gave no valid {label} after {retries + 1} attempts: {'; '.join(errors[:3])}",
        raw_text=text,
        errors=errors,
        attempts=tally.attempts - attempts_before,
    )


def generate_json(
    model: str | Provider,
    messages: object,
    schema: dict,
    *,
    validate: Callable[[Any], Any] | None = None,
    retries: int = 2,
    label: str = "JSON",
    example: str | None = None,
    settings: Settings | None = None,
    options: GenerateOptions | None = None,
    **option_values: object,
) -> StructuredResult:
    """A JSON reply matching ``schema``, checked by ``validate(value) -> value`` (which raises
    ``ValueError``/``ValidationError`` to send the errors back to the model). ``example``: a short
    sample of the reply, shown instead of the schema to a model without native schema support.

    Returns a :class:`StructuredResult` with the value and the call's accounting. Raises
    :class:`StructuredOutputError` after ``retries`` failed retries, ``CircuitOpenError`` while
    the model's structured-output breaker is open, plus what ``generate`` raises.
    """
    with accounting_scope("generate_json") as tally:
        provider, msgs, opts, settings = _prepare(model, messages, settings, options, option_values)
        tally.provider, tally.model = provider.name, provider.model
        return _structured(
            provider,
            msgs,
            opts,
            schema,
            validate or (lambda value: value),
            retries,
            settings,
            tally,
            label,
            example,
        )


def generate_structured(
    model: str | Provider,
    messages: object,
    output_type: type[M],
    *,
    retries: int = 2,
    settings: Settings | None = None,
    options: GenerateOptions | None = None,
    **option_values: object,
) -> M:
    """An instance of ``output_type`` from the model.

    Uses the provider's native schema-constrained decoding when it has one, else prompted JSON
    and the tolerant parser; validation errors go back to the model up to ``retries`` times.
    Raises :class:`StructuredOutputError` (a ``RunError``; ``.raw_text`` is the last reply),
    plus what ``generate`` raises.
    """
    with accounting_scope("generate_structured") as tally:
        provider, msgs, opts, settings = _prepare(model, messages, settings, options, option_values)
        tally.provider, tally.model = provider.name, provider.model
        result = _structured(
            provider,
            msgs,
            opts,
            output_type.model_json_schema(),
            output_type.model_validate,
            retries,
            settings,
            tally,
            output_type.__name__,
        )
        return result.value


# --- a schema bounded for grammar-constrained decoding -------------------------------------------

# Characters of a free-text string a grammar-constrained reply may hold.
STRING_CAP = 200
# Items of any list a grammar-constrained reply may hold.
ARRAY_CAP = 16
KEY_CAP = 64
NUMBER_CAP = 10**15
# What a date or time string may be under a grammar, in place of its ``format``: xgrammar's own
# date-time needs seconds and a zone and takes endless fractional digits (the 0.5B wrote
# "08:00:20.000..." to the token limit three times); these take what pydantic reads, bounded.
_DATE = "[0-9]{4}-[0-9]{2}-[0-9]{2}"
_TIME = "[0-9]{2}:[0-9]{2}(:[0-9]{2}([.][0-9]{1,6})?)?"
_ZONE = "(Z|[+-][0-9]{2}:[0-9]{2})?"
FORMAT_PATTERNS = {
    "date-time": f"^{_DATE}[T ]{_TIME}{_ZONE}$",
    "date": f"^{_DATE}$",
    "time": f"^{_TIME}{_ZONE}$",
}


def _bound(node: dict) -> None:
    """``minimum``/``maximum`` within +-``NUMBER_CAP`` on a number schema (exclusive bounds count)."""
    low = node.get("minimum", node.get("exclusiveMinimum"))
    high = node.get("maximum", node.get("exclusiveMaximum"))
    if low is None:
        node["minimum"] = -NUMBER_CAP
    if high is None:
        node["maximum"] = NUMBER_CAP


def cap_schema(schema: dict, max_length: int = STRING_CAP, max_items: int = ARRAY_CAP) -> dict:
    """A copy of ``schema`` in which every string without an enum/const has ``maxLength`` at
    most ``max_length``, every array ``maxItems`` at most ``max_items``, every object with
    keys of its own choosing at most ``max_items`` keys of at most ``KEY_CAP`` characters, every
    number bounds (``NUMBER_CAP``, so at most 15 digits and 6 decimals under xgrammar), every
    date, time or date-time a bounded pattern instead of its format (``FORMAT_PATTERNS``), and an
    object of any values (``additionalProperties`` unconstrained, no properties) holds only
    scalars, capped lists of scalars and flat objects of scalars (``$defs`` and nested schemas
    included): so under a grammar no string, list, key, number or free-form argument can run to
    the token limit (a reply of 2,048 tokens took the 1.5B five minutes)."""
    capped = copy.deepcopy(schema)
    # Free-form arguments, bounded: scalars, capped lists (of scalars, lists of scalars or flat
    # objects) and flat objects (of scalars and capped lists); enough for tool arguments such as
    # transitions [{from, to}] or a table's rows [[...]], never an endless structure.
    scalar: list[dict[str, Any]] = [
        {"type": "string", "maxLength": max_length},
        {"type": "number", "minimum": -NUMBER_CAP, "maximum": NUMBER_CAP},
        {"type": "boolean"},
        {"type": "null"},
    ]
    short_list = {"type": "array", "items": {"anyOf": scalar}, "maxItems": max_items}
    nested_list = {"type": "array", "items": {"anyOf": [*scalar, short_list]}, "maxItems": max_items}
    keys = {"maxProperties": max_items, "propertyNames": {"maxLength": KEY_CAP}}
    flat_object = {"type": "object", "additionalProperties": {"anyOf": [*scalar, nested_list]}, **keys}
    bounded_value = {
        "anyOf": [
            *scalar,
            {"type": "array", "items": {"anyOf": [*scalar, short_list, flat_object]}, "maxItems": max_items},
            flat_object,
        ]
    }

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            kind = node.get("type")
            is_string = kind == "string" or (isinstance(kind, list) and "string" in kind)
            if is_string and node.get("format") in FORMAT_PATTERNS and "pattern" not in node:
                node["pattern"] = FORMAT_PATTERNS[node.pop("format")]
            if is_string and not {"enum", "const", "format", "pattern"} & node.keys():
                # A pattern or another format is its own grammar; xgrammar ignores a length beside it.
                node["maxLength"] = min(int(node.get("maxLength", max_length)), max_length)
                node["minLength"] = min(int(node.get("minLength", 0)), node["maxLength"])
            if kind == "array":
                node["maxItems"] = min(int(node.get("maxItems", max_items)), max_items)
                node["minItems"] = min(int(node.get("minItems", 0)), node["maxItems"])
            is_number = kind in ("number", "integer") or (
                isinstance(kind, list) and ("number" in kind or "integer" in kind)
            )
            if is_number and "enum" not in node and "const" not in node:
                _bound(node)
            if (
                kind == "object"
                and not node.get("properties")
                and node.get("additionalProperties", True) is not False
            ):
                node["maxProperties"] = min(int(node.get("maxProperties", max_items)), max_items)
                node["propertyNames"] = {"maxLength": KEY_CAP}
            if "oneOf" in node:
                # A grammar cannot enforce "exactly one"; the branches agentlake writes are told
                # apart by a const field anyway. Saying anyOf keeps xgrammar from warning on
                # every compile (and the warning out of the demo's output).
                node["anyOf"] = node.pop("oneOf")
                node.pop("discriminator", None)
            if (
                kind == "object"
                and not node.get("properties")
                and node.get("additionalProperties", True) is True
            ):
                node["additionalProperties"] = copy.deepcopy(bounded_value)
                return
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    visit(capped)
    return capped
