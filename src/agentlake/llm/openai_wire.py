"""The OpenAI chat-completions wire format (``/v1/chat/completions``), as spoken by OpenAI and
OpenAI-compatible servers (vLLM, llama.cpp server, LM Studio, OpenRouter...). No HTTP here;
``openai_compat.py`` owns the client.

Thinking comes back as ``reasoning_content`` (vLLM, llama.cpp, DeepSeek), ``reasoning``
(OpenRouter, newer vLLM) or inline ``<think>`` tags; all three are read.

A reply schema goes out as ``response_format`` json_schema in the form strict servers take
(:func:`strict_schema`: root ``type: object``, ``anyOf`` for ``oneOf``, no ``discriminator``),
with ``strict: true`` only when it meets OpenAI's strict subset. What a server says about a
model (its ``/models`` entry, llama.cpp's ``/props``, LM Studio's ``/api/v0/models/ID``) is read
by :func:`model_facts`.
"""

from __future__ import annotations

from typing import Any

from agentlake.llm.provider import GenerateOptions, Message, Usage, estimate_thinking_tokens, split_think_tags


def chat_request(
    model: str,
    messages: list[Message],
    options: GenerateOptions,
    *,
    native_schema: bool,
    thinking_model: bool,
    official: bool,
) -> dict[str, Any]:
    """The ``POST /chat/completions`` body.

    ``official``: api.openai.com, which wants ``max_completion_tokens`` and
    ``reasoning_effort`` and rejects unknown fields; other servers get ``max_tokens`` and, for
    ``think``, ``chat_template_kwargs.enable_thinking`` (honoured by Qwen3-style templates).
    """
    body: dict[str, Any] = {
        "model": model,
        "messages": [{"role": m.role, "content": m.content} for m in messages],
        "stream": False,
    }
    body["max_completion_tokens" if official else "max_tokens"] = options.max_tokens
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if options.stop:
        body["stop"] = list(options.stop)
    if options.schema_ is not None and native_schema:
        schema, strict = strict_schema(options.schema_)
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "reply", "schema": schema, "strict": strict},
        }
    if options.think is not None:
        if official:
            if thinking_model and options.think is False:
                body["reasoning_effort"] = "low"
        else:
            body["chat_template_kwargs"] = {"enable_thinking": options.think}
    return body


def chat_response(body: dict[str, Any]) -> tuple[str, str, str, Usage]:
    """``(text, thinking, finish_reason, usage)`` from a chat-completions reply.

    Raises ``ValueError`` when the body has no choice.
    """
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ValueError("no 'choices' in the reply")
    choice = choices[0]
    message = choice.get("message") or {}
    text = message.get("content") or ""
    thinking = message.get("reasoning_content") or message.get("reasoning") or ""
    if not thinking:
        text, thinking = split_think_tags(text)
    finish = choice.get("finish_reason") or "unknown"
    usage_body = body.get("usage") or {}
    output_tokens = int(usage_body.get("completion_tokens") or 0)
    details = usage_body.get("completion_tokens_details") or {}
    reasoning = details.get("reasoning_tokens") if isinstance(details, dict) else None
    usage = Usage(
        input_tokens=int(usage_body.get("prompt_tokens") or 0),
        output_tokens=output_tokens,
        thinking_tokens=int(reasoning)
        if reasoning is not None
        else estimate_thinking_tokens(output_tokens, text, thinking),
    )
    return text, thinking, str(finish), usage


# --- reply schemas as strict structured-output servers take them ------------------------------

_SCHEMA_LISTS = ("anyOf", "allOf", "prefixItems")
_SCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties")
_SCHEMA_ONE = ("items", "additionalProperties", "not", "if", "then", "else", "contains")
# Keywords outside OpenAI's strict subset: a schema using one is sent with strict: false.
_NOT_STRICT = frozenset(
    {
        "minLength",
        "maxLength",
        "patternProperties",
        "unevaluatedProperties",
        "propertyNames",
        "minProperties",
        "maxProperties",
        "uniqueItems",
        "contains",
        "not",
        "if",
        "then",
        "else",
        "dependentRequired",
        "dependentSchemas",
    }
)


def strict_schema(schema: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """``(schema, strict)``: ``schema`` in the form strict structured-output servers accept, and
    whether it meets OpenAI's strict subset (then ``strict: true`` may be sent).

    ``oneOf`` becomes ``anyOf`` (what they support; a reply matching one alternative matches
    the same one), OpenAPI's ``discriminator`` is dropped (not JSON Schema), and a root that is a
    union of objects (pydantic's discriminated union: ``oneOf`` of ``$ref`` with ``$defs``)
    gets ``type: object``. The input is not changed.
    """
    tidy = _tidy(schema)
    if (
        "type" not in tidy
        and tidy.get("anyOf")
        and all(_is_object(alternative, tidy) for alternative in tidy["anyOf"])
    ):
        tidy = {"type": "object", **tidy}
    strict = tidy.get("type") == "object" and "anyOf" not in tidy and _strict_node(tidy)
    return tidy, strict


def _tidy(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "discriminator":
            continue
        if key == "oneOf" and isinstance(value, list):
            alternatives = [_tidy(item) for item in value]
            if "anyOf" in node:  # both: the oneOf becomes one more constraint beside them
                out.setdefault("allOf", []).append({"anyOf": alternatives})
            else:
                out["anyOf"] = alternatives
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out.setdefault(key, []).extend(_tidy(item) for item in value)
        elif key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: _tidy(item) for name, item in value.items()}
        elif key in _SCHEMA_ONE and isinstance(value, dict):
            out[key] = _tidy(value)
        else:
            out[key] = value
    return out


def _is_object(node: Any, root: dict[str, Any], depth: int = 0) -> bool:
    """Whether ``node`` (inline or a local ``$ref``) is an object schema, or a union of them."""
    if not isinstance(node, dict) or depth > 8:
        return False
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part) if isinstance(target, dict) else None
        return _is_object(target, root, depth + 1)
    alternatives = node.get("anyOf") or node.get("oneOf")
    if "type" not in node and isinstance(alternatives, list) and alternatives:
        return all(_is_object(alternative, root, depth + 1) for alternative in alternatives)
    return node.get("type") == "object"


def _strict_node(node: Any) -> bool:
    """OpenAI's strict subset: every object closed (``additionalProperties: false``) with every
    property required, and no keyword it refuses."""
    if not isinstance(node, dict):
        return True
    if _NOT_STRICT & node.keys():
        return False
    if node.get("type") == "object" or "properties" in node:
        properties = node.get("properties") or {}
        if node.get("additionalProperties") is not False or set(node.get("required") or ()) != set(
            properties
        ):
            return False
    children: list[Any] = []
    for key in _SCHEMA_LISTS:
        children += node.get(key) or []
    for key in _SCHEMA_MAPS:
        children += list((node.get(key) or {}).values())
    for key in _SCHEMA_ONE:
        if isinstance(node.get(key), dict):
            children.append(node[key])
    return all(_strict_node(child) for child in children)


# --- what a server says about a model ------------------------------------------------------

# Context lengths a model entry may carry, most telling first: LM Studio's loaded context, vLLM's
# max_model_len (what the server was started with), OpenRouter's context_length, Groq's
# context_window, LM Studio's max_context_length.
_WINDOW_KEYS = (
    "loaded_context_length",
    "max_model_len",
    "context_length",
    "context_window",
    "max_context_length",
)


def is_llamacpp(card: dict[str, Any]) -> bool:
    """Whether a ``/models`` entry comes from llama.cpp's server (it has ``/props``)."""
    return isinstance(card.get("meta"), dict) or card.get("owned_by") == "llamacpp"


def model_facts(card: dict[str, Any], extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """What a server says about one model: ``context_window`` (tokens) and ``schema`` (whether
    it takes ``response_format``), each only when the server says it.

    ``card``: the model's ``/models`` entry; ``extra``: llama.cpp's ``/props`` or LM Studio's
    ``/api/v0/models/ID`` body, when there is one.
    """
    facts: dict[str, Any] = {}
    extra = extra or {}
    settings = extra.get("default_generation_settings")
    candidates = [
        settings.get("n_ctx") if isinstance(settings, dict) else None,  # llama.cpp: what it runs with
        extra.get("n_ctx"),
        *(extra.get(key) for key in _WINDOW_KEYS),
        *(card.get(key) for key in _WINDOW_KEYS),
        (card.get("meta") or {}).get("n_ctx_train") if isinstance(card.get("meta"), dict) else None,
    ]
    for value in candidates:
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            facts["context_window"] = value
            break
    parameters = card.get("supported_parameters")
    if isinstance(parameters, list):  # OpenRouter says which parameters a model takes
        facts["schema"] = "response_format" in parameters or "structured_outputs" in parameters
    return facts
