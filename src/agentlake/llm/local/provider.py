"""The in-process chat provider ``local:NAME`` for the packaged chat models (``packaged.py``).

Owns the provider: resolving ``local:NAME`` (the packaged model, its extra, its context window
registered so the budget check refuses a prompt that would not fit), the prompt rendered with
the model's own chat template from the verified GGUF (in Jinja's sandbox: the template is
untrusted data), and the ``Completion`` of one call: usage (input, output and cached input
tokens) and timings. It runs the model through the engine ``engines`` loads and the one
decoding loop (``decoder``). ``think`` is ignored: these models do not reason.
"""

from __future__ import annotations

import json
import time
from functools import cache
from typing import TYPE_CHECKING, Any

from agentlake.errors import RunError, require_extra
from agentlake.llm.local.engines import context_window, engine_name, load_engine
from agentlake.llm.models import ModelInfo, lookup_model
from agentlake.llm.packaged import ensure_gguf, gguf_info, packaged_model
from agentlake.llm.provider import (
    Capabilities,
    Completion,
    GenerateOptions,
    Message,
    Usage,
    register_provider,
)

if TYPE_CHECKING:
    from pathlib import Path

    from agentlake.llm.local.decoder import Decoder
    from agentlake.settings import Settings

# What a local: model needs whichever engine runs it (the ``local`` extra): torch for the
# decoding loop, xgrammar for schemas, transformers for the tokenizer (and the transformers
# engine, which loads a GGUF only with accelerate), gguf for the header, jinja2 for the template.
LOCAL_MODULES = ("torch", "transformers", "accelerate", "xgrammar", "gguf", "jinja2")


# --- the prompt ----------------------------------------------------------------------------------


@cache
def _template(source: str) -> Any:
    from jinja2.exceptions import TemplateError
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message: str) -> None:
        raise TemplateError(message)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = raise_exception
    env.filters["tojson"] = lambda value, indent=None: json.dumps(value, ensure_ascii=False, indent=indent)
    return env.from_string(source)


def render_chat(template: str, messages: list[Message]) -> str:
    """The prompt text of ``messages`` under the model's chat template, ending where the
    assistant's reply starts. Raises ``RunError`` when the template cannot render them."""
    from jinja2.exceptions import TemplateError

    try:
        return _template(template).render(
            messages=[{"role": m.role, "content": m.content} for m in messages], add_generation_prompt=True
        )
    except TemplateError as exc:
        raise RunError(f"the model's chat template cannot render these messages: {exc}") from None


# --- the provider ------------------------------------------------------------------------------------


class LocalProvider:
    """``local:NAME``: a packaged chat model in this process (see the module docstring).

    Resolving it assembles and verifies the GGUF (once; later only size and mtime are checked)
    and reads its context length; the model itself loads on the first call. ``options.timeout``
    is checked between forward passes (a pass itself cannot be cut short); concurrent calls
    decode together over the one loaded model (``decoder.Decoder``).
    """

    name = "local"

    def __init__(self, model: str, settings: Settings) -> None:
        self.packaged = packaged_model(model)
        require_extra("local", f"local:{model}", *LOCAL_MODULES)
        self.model = model
        self.settings = settings
        window = context_window(self.packaged, settings)
        self.model_info: ModelInfo = lookup_model("local", model, settings).model_copy(
            update={"context_window": window, "known": True}
        )
        self._capabilities = Capabilities(
            supports_schema=True, supports_thinking=False, context_window=window
        )
        self.engine = engine_name(settings)

    @property
    def capabilities(self) -> Capabilities:
        return self._capabilities

    @property
    def gguf_path(self) -> Path:
        return ensure_gguf(self.packaged, self.settings)

    def decoder(self) -> Decoder:
        """The loaded model's decoder (loads the model on first use)."""
        return load_engine(self.packaged, self.settings, engine=self.engine).decoder

    def complete(self, messages: list[Message], options: GenerateOptions) -> Completion:
        decoder = self.decoder()
        prompt = render_chat(gguf_info(self.gguf_path).chat_template, messages)
        started = time.perf_counter()
        generation = decoder.generate(
            prompt,
            schema=options.schema_,
            max_tokens=options.max_tokens,
            temperature=options.temperature,
            stop=options.stop,
            window=self._capabilities.context_window,
            draft=self.settings.local_draft_tokens,
            timeout=options.timeout,
        )
        return Completion(
            text=generation.text,
            finish_reason=generation.finish_reason,
            usage=Usage(
                input_tokens=generation.prompt_tokens,
                output_tokens=generation.output_tokens,
                cached_input_tokens=generation.cached_tokens,
            ),
            latency_ms=(time.perf_counter() - started) * 1000,
            prompt_ms=generation.prompt_ms,
            generation_ms=generation.generation_ms,
            provider=self.name,
            model=self.model,
        )


register_provider("local", LocalProvider)
