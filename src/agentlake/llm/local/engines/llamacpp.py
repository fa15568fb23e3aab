"""The llama.cpp engine of ``local:`` models (llama-cpp-python, the optional ``local-llm`` extra).

Runs the verified GGUF itself, its Q4_K_M blocks computed by llama.cpp's CPU kernels: the
faster engine on this project's machine (docs/benchmarks.md), but it needs llama-cpp-python,
which compiles for ~11 minutes (``make local-llm``). Each prefix-cache slot is one llama.cpp
context (the weights are memory-mapped, so contexts share their pages; each adds its KV cache).
This module owns loading and the forward pass through llama-cpp-python; the decoding loop,
grammar included, is ``decoder.Decoder`` (the same loop as the transformers engine's).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentlake.errors import RunError
from agentlake.llm.llama_cpp import import_llama_cpp, quiet_stderr
from agentlake.llm.local.decoder import Decoder
from agentlake.llm.local.engine import Pass, check_memory, kv_bytes_per_token, load_tokenizer, threads
from agentlake.llm.packaged import GGUFInfo, PackagedModel

if TYPE_CHECKING:
    from agentlake.settings import Settings

BATCH = 512


class LlamaCppEngine:
    """A packaged model on llama.cpp (see the module docstring)."""

    name = "llamacpp"
    verifies_drafts = False  # Llama.eval keeps the logits of the last token only (unless logits_all)

    def __init__(
        self,
        packaged: PackagedModel,
        gguf: Path,
        info: GGUFInfo,
        settings: Settings,
        *,
        window: int,
        slots: int,
    ) -> None:
        self._llama_cpp = import_llama_cpp()
        check_memory(
            f"local:{packaged.name} on llama.cpp",
            gguf.stat().st_size + slots * window * kv_bytes_per_token(info, 2),
        )
        self.path, self.window, self.threads = gguf, window, threads(settings)
        self.contexts: list[Any] = [None] * slots
        self.tokenizer = load_tokenizer(packaged, gguf, settings)
        self.vocab_size = int(self._context(0).n_vocab())
        self.decoder = Decoder(self, slots)

    def _context(self, slot: int) -> Any:
        if self.contexts[slot] is None:
            try:
                with quiet_stderr():
                    self.contexts[slot] = self._llama_cpp.Llama(
                        model_path=str(self.path),
                        n_ctx=self.window,
                        n_batch=BATCH,
                        n_threads=self.threads,
                        n_threads_batch=self.threads,
                        verbose=False,
                    )
            except (ValueError, RuntimeError, OSError) as exc:
                raise RunError(f"llama.cpp cannot load {self.path}: {exc}") from exc
        return self.contexts[slot]

    def tokenize(self, text: str) -> list[int]:
        return list(self._context(0).tokenize(text.encode("utf-8"), add_bos=False, special=True))

    def evaluate(self, slot: int, keep: int, tokens: Sequence[int], rows: int = 1) -> Any:
        import numpy as np
        import torch

        llama = self._context(slot)
        # Llama.eval drops the context's KV entries from n_tokens on, so lowering n_tokens is
        # how a cached prefix is cropped (what Llama.generate itself does for its prefix reuse).
        llama.n_tokens = min(keep, llama.n_tokens)
        try:
            llama.eval(list(tokens))
        except (ValueError, RuntimeError) as exc:
            raise RunError(
                f"llama.cpp failed evaluating {len(tokens)} tokens of {self.path.name}: {exc}"
            ) from exc
        logits = np.ctypeslib.as_array(llama._ctx.get_logits_ith(-1), shape=(self.vocab_size,))
        return torch.from_numpy(logits.copy())

    def evaluate_batch(self, passes: Sequence[Pass]) -> list[Any]:
        # One context per slot: llama-cpp-python's Llama evaluates one sequence, so the passes
        # of concurrent sequences run one after another (llama.cpp's own batching of several
        # sequences is its server's, not this binding's).
        return [self.evaluate(*one) for one in passes]

    def add_slot(self) -> int:
        self.contexts.append(None)  # made on first use
        return len(self.contexts) - 1

    def copy_prefix(self, source: int, target: int, length: int) -> bool:
        return False  # a KV cache is copied only between sequences of one llama.cpp context
