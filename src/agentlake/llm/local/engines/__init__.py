"""Which engine runs a ``local:`` model, and the engines loaded in this process.

Owns the choice (``local_engine``: ``transformers``, ``llamacpp`` or ``auto``, which is
transformers), the context window a model runs with (the GGUF's, capped by
``local_context_window``) and the process-global cache of loaded engines: a model loads on first
use and stays loaded (one per model, engine, numerics and window), and what one more reply
decoding at the same time costs in memory (``reply_memory``). The engines themselves are
``torch`` (transformers, the ``local`` extra) and ``llamacpp`` (llama-cpp-python, optional),
each imported only when a model runs on it.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from agentlake.llm.local.decoder import CACHE_SLOTS
from agentlake.llm.packaged import PackagedModel, ensure_gguf, gguf_info

if TYPE_CHECKING:
    from agentlake.llm.local.engine import Engine
    from agentlake.settings import Settings

_engines: dict[tuple[str, str, int], Engine] = {}
_engines_lock = threading.Lock()


def engine_name(settings: Settings) -> str:
    """The engine ``local_engine`` names; ``auto`` is transformers (measured faster per turn
    than the optional llama.cpp build on a quiet machine, and installed with the ``local`` extra)."""
    choice = settings.local_engine
    return "transformers" if choice == "auto" else choice


def load_engine(packaged: PackagedModel, settings: Settings, *, engine: str | None = None) -> Engine:
    """The loaded engine for ``packaged`` (loaded on first use, then kept for the process)."""
    engine = engine or engine_name(settings)
    window = context_window(packaged, settings)
    key = _engine_key(packaged, settings, engine, window)
    with _engines_lock:
        loaded = _engines.get(key)
        if loaded is None:
            path = ensure_gguf(packaged, settings)
            info = gguf_info(path)
            if engine == "llamacpp":
                # Lazy (start-up time): the local engine loads only when a local model runs (optional extra).
                from agentlake.llm.local.engines.llamacpp import LlamaCppEngine

                loaded = LlamaCppEngine(packaged, path, info, settings, window=window, slots=CACHE_SLOTS)
            else:
                # Lazy (start-up time): the local engine loads only when a local model runs (optional extra).
                from agentlake.llm.local.engines.torch import TorchEngine

                loaded = TorchEngine(packaged, path, info, settings, window=window, slots=CACHE_SLOTS)
            _engines[key] = loaded
    return loaded


def _engine_key(
    packaged: PackagedModel, settings: Settings, engine: str, window: int
) -> tuple[str, str, int]:
    # The transformers engine's weights are int8 or bfloat16 (``local_torch_dtype``): two
    # numerics, two engines (a test runs both to catch a choice that depends on them).
    variant = f"{engine}:{settings.local_torch_dtype}" if engine == "transformers" else engine
    return (packaged.name, variant, window)


def reply_memory(packaged: PackagedModel, settings: Settings) -> tuple[int, int]:
    """``(weights, per reply)``: about how many bytes the model's weights take once loaded (0
    when this process has loaded it already) and the KV cache of one more reply decoding at
    the same time, at the full context window (each concurrent reply has a slot of its own),
    estimated from the GGUF header without loading anything."""
    from agentlake.llm.local.engine import kv_bytes_per_token

    engine = engine_name(settings)
    window = context_window(packaged, settings)
    path = ensure_gguf(packaged, settings)
    info = gguf_info(path)
    # transformers keeps the KV cache in float32 under int8 weights, bfloat16 otherwise; llama.cpp f16.
    element = 4 if engine == "transformers" and settings.local_torch_dtype == "int8" else 2
    with _engines_lock:
        loaded = _engine_key(packaged, settings, engine, window) in _engines
    weights = 0 if loaded else (path.stat().st_size if engine == "llamacpp" else 2 * info.parameters)
    return weights, window * kv_bytes_per_token(info, element)


def loaded_models() -> list[tuple[str, str, int]]:
    """The ``local:`` models loaded in this process: (name, engine, context window) each."""
    with _engines_lock:
        return sorted(_engines)


def unload_engines() -> None:
    """Drop every loaded model (the next call loads again)."""
    with _engines_lock:
        _engines.clear()


def context_window(packaged: PackagedModel, settings: Settings) -> int:
    """The GGUF's trained context length, capped by ``local_context_window``."""
    trained = gguf_info(ensure_gguf(packaged, settings)).context_length or settings.local_context_window
    return min(trained, settings.local_context_window)
