"""A stand-in local engine for the LLM tests (a module, not a conftest, so tests import it).

``CopyingModel`` is a deterministic model over a real tokenizer (the decoder's grammar needs a
real vocabulary): the ``local:`` decoder runs on it with no weights, so a test can count its
passes and engine calls, fail or slow its calls, and compare what it writes.
"""

from __future__ import annotations

import time

from agentlake.errors import RunError
from agentlake.llm.local import Decoder


class CopyingModel:
    """A deterministic stand-in for a model over the real tokenizer: at each place it favours the
    token that followed the latest earlier occurrence of the token before it (a model copying its
    prompt), over a fixed random preference. Its logits depend only on the tokens before them, as
    a real model's would in exact arithmetic, so neither a draft nor batching can change what it
    writes. Its decoder starts with ``slots`` KV-cache slots; ``pause`` seconds per engine call
    let concurrent replies gather; a prompt holding ``poison`` (its first token) fails its passes.
    ``calls`` holds the passes of each engine call."""

    name = "copying"
    verifies_drafts = True

    def __init__(self, tokenizer, *, slots: int = 1, pause: float = 0.0, poison: str | None = None) -> None:
        import torch

        self.tokenizer = tokenizer
        self.vocab_size = len(tokenizer)
        self.bias = torch.randn(self.vocab_size, generator=torch.Generator().manual_seed(0))
        self.histories: dict[int, list[int]] = {}
        self.pause = pause
        self.poison = tokenizer(poison, add_special_tokens=False)["input_ids"][0] if poison else None
        self.calls: list[int] = []
        self.slots = slots
        self.decoder = Decoder(self, slots)

    def tokenize(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _logits(self, history: list[int]):
        logits = self.bias.clone()
        last = history[-1]
        for place in range(len(history) - 2, -1, -1):
            if history[place] == last:
                logits[history[place + 1]] += 10.0
                break
        return logits

    def _one(self, slot: int, keep: int, tokens, rows: int = 1):
        import torch

        if self.poison is not None and self.poison in tokens:
            raise RunError("the stand-in model cannot read this prompt")
        history = self.histories.get(slot, [])[:keep] + list(tokens)
        self.histories[slot] = history
        each = [self._logits(history[: len(history) - back]) for back in range(rows - 1, -1, -1)]
        return each[0] if rows == 1 else torch.stack(each)

    def evaluate(self, slot: int, keep: int, tokens, rows: int = 1):
        time.sleep(self.pause)
        self.calls.append(1)
        return self._one(slot, keep, tokens, rows)

    def evaluate_batch(self, passes):
        time.sleep(self.pause)
        self.calls.append(len(passes))
        return [self._one(*one) for one in passes]

    def add_slot(self) -> int:
        self.slots += 1
        return self.slots - 1

    def copy_prefix(self, source: int, target: int, length: int) -> bool:
        self.histories[target] = self.histories.get(source, [])[:length]
        return True
