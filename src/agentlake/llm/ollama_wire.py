"""Ollama's native wire format (``/api/chat``, ``/api/show``): our messages and options to
Ollama JSON and back. No HTTP here; ``ollama.py`` owns the client.

Always sends ``options.num_ctx`` (without it Ollama silently cuts prompts to its small default
context) and ``options.num_predict``; passes ``think`` (to a model that can think: a call site
states ``think`` whatever the model, and Ollama refuses it for a model without the capability)
and ``format`` (a JSON schema); reads ``message.thinking`` and ``done_reason``.
"""

from __future__ import annotations

from typing import Any

from agentlake.llm.provider import GenerateOptions, Message, Usage, estimate_thinking_tokens, split_think_tags


def chat_request(
    model: str,
    messages: list[Message],
    options: GenerateOptions,
    num_ctx: int,
    *,
    thinking_model: bool = True,
) -> dict[str, Any]:
    """The ``POST /api/chat`` body (non-streaming). ``thinking_model``: the server says the
    model can think (``/api/show`` capabilities); otherwise ``think`` is left out."""
    model_options: dict[str, Any] = {"num_ctx": num_ctx, "num_predict": options.max_tokens}
    if options.temperature is not None:
        model_options["temperature"] = options.temperature
    if options.stop:
        model_options["stop"] = list(options.stop)
    body: dict[str, Any] = {
        "model": model,
        "messages": [{"role": m.role, "content": m.content} for m in messages],
        "stream": False,
        "options": model_options,
    }
    if options.think is not None and thinking_model:
        body["think"] = options.think
    if options.schema_ is not None:
        body["format"] = options.schema_
    return body


def chat_response(body: dict[str, Any]) -> tuple[str, str, str, Usage]:
    """``(text, thinking, finish_reason, usage)`` from a ``/api/chat`` reply.

    Raises ``ValueError`` when the body is not an Ollama chat reply.
    """
    message = body.get("message")
    if not isinstance(message, dict):
        raise ValueError("no 'message' object in the reply")
    text = message.get("content") or ""
    thinking = message.get("thinking") or ""
    if not thinking:
        text, thinking = split_think_tags(text)
    finish = body.get("done_reason") or ("stop" if body.get("done") else "unknown")
    output_tokens = int(body.get("eval_count") or 0)
    usage = Usage(
        input_tokens=int(body.get("prompt_eval_count") or 0),
        output_tokens=output_tokens,
        thinking_tokens=estimate_thinking_tokens(output_tokens, text, thinking),
    )
    return text, thinking, str(finish), usage


def context_length(show: dict[str, Any]) -> int | None:
    """The model's trained context length from a ``/api/show`` reply, if it says."""
    info = show.get("model_info")
    if isinstance(info, dict):
        for key, value in info.items():
            if key.endswith(".context_length") and isinstance(value, int) and value > 0:
                return value
    return None


def capabilities(show: dict[str, Any]) -> list[str]:
    """Capability words of a ``/api/show`` reply (``completion``, ``thinking``, ``tools``...)."""
    words = show.get("capabilities")
    return [str(word) for word in words] if isinstance(words, list) else []
