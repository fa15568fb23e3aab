"""The OpenAI chat-completions wire format (``/v1/chat/completions``), as spoken by OpenAI and
OpenAI-compatible servers (vLLM, llama.cpp server, LM Studio, OpenRouter...). No HTTP here;
``openai_compat.py`` owns the client.

Thinking comes back as ``reasoning_content`` (vLLM, llama.cpp, DeepSeek), ``reasoning``
(OpenRouter, newer vLLM) or inline ``<think>`` tags; all three are read.
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
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "reply", "schema": options.schema_},
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
