"""The decoding loop of ``local:`` models, the same over both engines.

Owns one reply to a rendered prompt (``Decoder.generate``): the KV caches of recent prompts,
one per recurring prefix (a staffer's executor, its reviewer), the longest common token prefix
reused and only the new tokens evaluated (``choose_slot``); JSON-schema-constrained decoding
with xgrammar, the schema first bounded by ``structured.cap_schema`` (every free-text string at
most ``STRING_CAP`` characters) so no reply runs to the token limit; what the grammar forces
evaluated in the pass of the token before it (jump-forward); and, on engines that verify
drafts (transformers), prompt-lookup decoding (``lookup_draft``): a pass also evaluates the
tokens that followed the reply's last words where those occur earlier, and keeps those the
model picks itself (``local_draft_tokens``, shared among the replies decoding together;
agents copy much of their prompt). Concurrent calls decode together (``batch``), each in a
KV-cache slot of its own, a prompt another reply is evaluating waited for and its keys and
values copied (``copy_prefix``). Usage and timings are in the ``Generation``. It does not
own loading (``engines``), the prompt's template (``provider``), the schedule of concurrent
replies (``batch``) or the forward pass (an ``engine.Engine``).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentlake.errors import RunError, UserError
from agentlake.llm.local.batch import Batch
from agentlake.llm.local.engine import Pass
from agentlake.llm.structured import STRING_CAP, cap_schema

if TYPE_CHECKING:
    from agentlake.llm.local.engine import Engine

# Characters a forced (jump-forward) text does not end on: they may continue into the model's word.
_WORD = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-."
# Nor on these: the tokenizer merges them with what follows (' "', ' null', '["', '[{'), so a
# model handed them alone writes from a place it was never trained at (the 0.5B, handed `": `
# and `[`, wrote "kS" for "KS" and `[""]` for a list it wrote whole without the grammar).
_JOINS_NEXT = " \t\n[{"
# Prefix caches kept per loaded model: an executor, its reviewer and one more prompt family.
CACHE_SLOTS = 3
# A cached prefix shorter than this is not worth evicting another prompt's cache for.
MIN_REUSE_TOKENS = 32

__all__ = ["CACHE_SLOTS", "STRING_CAP", "Decoder", "Generation", "Slot", "choose_slot", "lookup_draft"]


# --- the prefix-cache slots -------------------------------------------------------------------------


@dataclass
class Slot:
    tokens: list[int] = field(default_factory=list)
    last_used: float = 0.0


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def choose_slot(slots: list[Slot], tokens: Sequence[int]) -> tuple[int, int]:
    """``(slot index, tokens of it to keep)`` for a prompt: the slot sharing the longest prefix
    with ``tokens`` when that is worth it, else the least recently used slot, emptied. At least
    one token is always left to evaluate (its logits start the reply)."""
    shared = [common_prefix(slot.tokens, tokens) for slot in slots]
    best = max(range(len(slots)), key=lambda i: (shared[i], slots[i].last_used))
    if shared[best] >= min(MIN_REUSE_TOKENS, len(tokens) - 1):
        return best, min(shared[best], len(tokens) - 1)
    oldest = min(range(len(slots)), key=lambda i: slots[i].last_used)
    return oldest, 0


# --- the decoding loop ------------------------------------------------------------------------------


@dataclass
class Generation:
    """What one decoding run produced, with its counts and timings."""

    text: str
    finish_reason: str
    prompt_tokens: int
    cached_tokens: int
    output_tokens: int
    prompt_ms: float
    generation_ms: float
    # Of output_tokens, those the grammar forced (evaluated without a step of their own).
    forced_tokens: int = 0
    # Of output_tokens, those taken from a draft the model confirmed (``lookup_draft``): each
    # was evaluated in the pass of the token before it.
    drafted_tokens: int = 0


class Decoder:
    """The decoding loop over one loaded engine: prefix-cache slots, grammar, stop handling.

    Concurrent calls decode together, each in a slot of its own (``Batch``); calls for other
    models run beside them."""

    def __init__(self, engine: Engine, slots: int = CACHE_SLOTS) -> None:
        self.engine = engine
        self.slots = [Slot() for _ in range(slots)]
        self._busy: set[int] = set()
        self._filling: dict[int, Sequence[int]] = {}  # slot -> the prompt its first pass evaluates
        self.lock = threading.Lock()
        self.batch = Batch(engine)
        self._grammars: dict[str, Any] = {}
        self._compiler: Any = None
        eos = {engine.tokenizer.eos_token_id, *self._special_ids("<|im_end|>", "<|endoftext|>")}
        self.stop_ids = {i for i in eos if i is not None}

    def _special_ids(self, *names: str) -> list[int | None]:
        vocab = self.engine.tokenizer.get_vocab()
        return [vocab.get(name) for name in names]

    def _compiled(self, schema: dict) -> Any:
        import xgrammar

        key = json.dumps(schema)  # not sorted: the grammar keeps the schema's property order
        compiled = self._grammars.get(key)
        if compiled is None:
            if self._compiler is None:
                info = xgrammar.TokenizerInfo.from_huggingface(
                    self.engine.tokenizer,
                    vocab_size=self.engine.vocab_size,
                    stop_token_ids=sorted(self.stop_ids),
                )
                self._compiler = xgrammar.GrammarCompiler(info, max_threads=1)
            try:
                compiled = self._compiler.compile_json_schema(key, any_whitespace=False, strict_mode=True)
            except (RuntimeError, ValueError) as exc:
                raise UserError(f"cannot turn the JSON schema into a grammar: {exc}") from None
            if len(self._grammars) > 64:
                self._grammars.clear()
            self._grammars[key] = compiled
        return compiled

    def generate(
        self,
        prompt: str,
        *,
        schema: dict | None,
        max_tokens: int,
        temperature: float | None,
        stop: list[str] | None,
        window: int,
        draft: int = 0,
        timeout: float | None = None,
    ) -> Generation:
        """One reply to ``prompt``. ``draft`` > 0 turns on prompt-lookup decoding where the
        engine verifies drafts and the reply is greedy (no ``temperature``): each pass also
        evaluates up to ``draft`` tokens that followed the reply's last words where those occur
        earlier in the prompt or the reply (``lookup_draft``), and the reply keeps those the
        model picks itself at their places, with what the grammar forces after them written as
        after a sampled token: the same greedy reply in fewer passes. (Same in exact arithmetic:
        int8 layers quantise a pass's activations with one scale, so a near tie between two
        tokens can go the other way, as it can with or without a cached prefix.)

        Calls from several threads decode together (``Batch``): their passes run as one
        engine call, each reply the one it would be alone. ``timeout`` (seconds) fails this
        call alone with ``ProviderTimeoutError`` at the first pass boundary after it."""
        import xgrammar

        tokens = self.engine.tokenize(prompt)
        if len(tokens) + 1 > window:
            raise UserError(
                f"prompt of {len(tokens):,} tokens does not fit the context window of {window:,} tokens "
                "(local_context_window): shorten the prompt or raise the window"
            )
        matcher: Any = None
        if schema is not None:
            with self.lock:  # the grammar cache and compiler are shared by the calling threads
                compiled = self._compiled(cap_schema(schema, STRING_CAP))
            matcher = xgrammar.GrammarMatcher(compiled)
        steps = self._steps(
            tokens,
            matcher,
            max_tokens=min(max_tokens, window - len(tokens)),
            temperature=temperature,
            stop=stop,
            draft=draft if self.engine.verifies_drafts and not temperature else 0,
        )
        return self.batch.run(steps, timeout)

    def _claim_slot(self, tokens: Sequence[int]) -> tuple[int, int]:
        """``(slot, tokens of it to keep)``: ``choose_slot`` among the slots no other reply is
        decoding in, a new slot when every one is (each sequence decoding at the same time
        keeps its own KV cache)."""
        free = [i for i in range(len(self.slots)) if i not in self._busy]
        if free:
            chosen, keep = choose_slot([self.slots[i] for i in free], tokens)
            index = free[chosen]
        else:
            index, keep = self.engine.add_slot(), 0
            self.slots.append(Slot())
        # What the slot's cache holds for sure until this reply's first pass is done.
        self.slots[index].tokens = list(tokens[:keep])
        self._busy.add(index)
        return index, keep

    def _awaited(self, tokens: Sequence[int], keep: int) -> bool:
        """Whether another reply is evaluating a prompt that shares at least
        ``MIN_REUSE_TOKENS`` more of ``tokens`` than the ``keep`` this reply has: it waits for
        that prompt's pass and copies the shared part (replies to one agent's prompt arriving
        together evaluate it once)."""
        limit = len(tokens) - 1
        return any(
            min(common_prefix(other, tokens), limit) >= keep + MIN_REUSE_TOKENS
            for other in self._filling.values()
        )

    def _copy_shared(self, index: int, tokens: Sequence[int], keep: int) -> int:
        """The tokens slot ``index`` keeps of ``tokens``: ``keep``, or more where another slot
        (one in use included) shares a longer prefix by ``MIN_REUSE_TOKENS`` and the engine
        copies its keys and values into this one (megabytes, where evaluating is seconds)."""
        limit = len(tokens) - 1
        shared = {i: min(common_prefix(slot.tokens, tokens), limit) for i, slot in enumerate(self.slots)}
        source = max((i for i in shared if i != index), key=shared.__getitem__, default=None)
        if (
            source is not None
            and shared[source] >= keep + MIN_REUSE_TOKENS
            and self.engine.copy_prefix(source, index, shared[source])
        ):
            keep = shared[source]
            self.slots[index].tokens = list(tokens[:keep])
        return keep

    def _steps(
        self,
        tokens: list[int],
        matcher: Any,
        *,
        max_tokens: int,
        temperature: float | None,
        stop: list[str] | None,
        draft: int,
    ) -> Generator[Pass | None, Any, Generation]:
        """One reply as a sequence of forward passes: yields each ``Pass`` it needs and is sent
        that pass's logits (None: it waits a round); returns the ``Generation``. Runs in whichever thread drives the
        batch, so it touches nothing another reply does but under the batch's turn."""
        import torch
        import xgrammar

        bitmask: Any = None
        if matcher is not None:
            bitmask = xgrammar.allocate_token_bitmask(1, self.engine.vocab_size)
        generator = None
        if temperature:
            generator = torch.Generator().manual_seed(0)

        def choose(logits: Any) -> int:
            if matcher is not None:
                matcher.fill_next_token_bitmask(bitmask)
                xgrammar.apply_token_bitmask_inplace(logits.view(1, -1), bitmask)
            return _pick(logits, temperature, generator)

        def ended() -> bool:
            return matcher is not None and (matcher.is_terminated() or self._only_stop_left(matcher, bitmask))

        def take(token: int) -> list[int]:
            """``token`` and what the grammar forces after it (jump-forward), both accepted."""
            if matcher is None:
                return [token]
            if not matcher.accept_token(token):
                raise RunError(f"the grammar refused token {token} it had allowed")
            if matcher.is_terminated():
                return [token]
            return [token, *self._forced(matcher, max_tokens - len(out) - 1)]

        started = time.perf_counter()
        index, keep = self._claim_slot(tokens)
        slot = self.slots[index]
        finished = False
        try:
            while self._awaited(tokens, keep):
                yield None  # no pass this round: another reply is evaluating our prefix
            keep = self._copy_shared(index, tokens, keep)
            self._filling[index] = tokens
            logits = yield Pass(index, keep, tokens[keep:])
            del self._filling[index]
            slot.tokens = list(tokens)
            prompt_done = time.perf_counter()
            out: list[int] = []
            finish = "length"
            text = None  # set where a stop string cuts the reply
            forced = drafted = 0
            while len(out) < max_tokens:
                token = choose(logits)
                if token in self.stop_ids:
                    finish = "stop"
                    break
                step = take(token)
                forced += len(step) - 1
                out.extend(step)
                # Evaluate the step (with a draft after it), then the model's own pick at each
                # drafted place: the draft is kept up to the first place it differs, and what
                # the grammar forces after a kept token is written as it is after a sampled
                # one (a forced text the draft does not hold is the next step to evaluate).
                while step and finish != "stop" and len(out) < max_tokens:
                    if ended():
                        finish = "stop"
                        break
                    # Drafts share one budget per pass among the replies under way: a batch of
                    # eight 17-token passes is compute, no longer one read of the weights.
                    budget = draft // self.batch.under_way()
                    guess = self._draft(tokens, out, matcher, min(budget, max_tokens - len(out)))
                    rows = yield Pass(index, len(slot.tokens), step + guess, len(guess) + 1)
                    slot.tokens.extend(step)
                    step = []
                    if not guess:
                        logits = rows
                        break
                    place = 0
                    while place < len(guess):
                        if choose(rows[place]) != guess[place]:
                            break
                        kept, *forced_text = take(guess[place])
                        out.append(kept)
                        slot.tokens.append(kept)
                        drafted += 1
                        place += 1
                        forced += len(forced_text)
                        out.extend(forced_text)
                        if forced_text and guess[place : place + len(forced_text)] == forced_text:
                            slot.tokens.extend(forced_text)  # the draft's own next tokens: evaluated
                            place += len(forced_text)
                        elif forced_text:
                            step = forced_text
                            break
                        if ended():
                            finish = "stop"
                            break
                    logits = rows[place]
                if finish == "stop":
                    break
                if stop and (cut := _stop_cut(self.engine.tokenizer, out, stop)) is not None:
                    text, finish = cut, "stop"
                    break
            finished = True
        finally:
            if not finished:
                slot.tokens = []  # a pass may have failed half done: the cache is not trusted
            slot.last_used = time.perf_counter()
            self._filling.pop(index, None)
            self._busy.discard(index)
        if text is None:
            text = self.engine.tokenizer.decode(out, skip_special_tokens=True)
        return Generation(
            text=text,
            finish_reason=finish,
            prompt_tokens=len(tokens),
            cached_tokens=keep,
            output_tokens=len(out),
            prompt_ms=(prompt_done - started) * 1000,
            generation_ms=(slot.last_used - prompt_done) * 1000,
            forced_tokens=forced,
            drafted_tokens=drafted,
        )

    def _draft(self, prompt: Sequence[int], reply: list[int], matcher: Any, limit: int) -> list[int]:
        """Up to ``limit`` draft tokens after ``prompt`` + ``reply`` (``lookup_draft``), cut
        before a stop token and, under a grammar, before the first token it would refuse (the
        matcher is rolled back: the draft is only a guess)."""
        if limit <= 0:
            return []
        guess = lookup_draft([*prompt, *reply], limit)
        for place, token in enumerate(guess):
            if token in self.stop_ids:
                guess = guess[:place]
                break
        if matcher is not None and guess:
            taken = 0
            for token in guess:
                if matcher.is_terminated() or not matcher.accept_token(token):
                    break
                taken += 1
            if taken:
                matcher.rollback(taken)
            guess = guess[:taken]
        return guess

    def _only_stop_left(self, matcher: Any, bitmask: Any) -> bool:
        """Whether the grammar is complete and allows nothing but a stop token next (a JSON
        object's closing brace): then the reply ends without the forward pass that would only
        pick the stop token."""
        import numpy as np

        if not matcher.is_completed():
            return False
        matcher.fill_next_token_bitmask(bitmask)
        words = bitmask[0].numpy().view(np.uint32).copy()
        for token in self.stop_ids:
            words[token // 32] &= np.uint32(~(1 << (token % 32)) & 0xFFFFFFFF)
        return not words.any()

    def _forced(self, matcher: Any, room: int) -> list[int]:
        """The tokens the grammar allows no alternative to from here (a key, ``", "``, the rest
        of the only enum value left), accepted into ``matcher``: they are evaluated in one
        forward pass with the token before them instead of one pass each (jump-forward
        decoding). At most ``room`` tokens; a tokenisation the grammar does not take stops the
        jump where it stops (what was accepted is kept; the model writes the rest)."""
        if room <= 0:
            return []
        text = matcher.find_jump_forward_string()
        # Not into a word: where two values share a beginning (route "sql" | "search") the
        # grammar forces the "s", and a model handed `"s` instead of its own token `sql` chose
        # the other route. The forced text stops before a word it would end inside, and before
        # a space or an opening bracket the model's next token would begin with.
        text = text.rstrip(_WORD).rstrip(_JOINS_NEXT)
        if not text:
            return []
        taken = []
        for token in self.engine.tokenize(text)[:room]:
            if token in self.stop_ids or not matcher.accept_token(token):
                break
            taken.append(token)
        return taken


def lookup_draft(history: Sequence[int], limit: int, longest: int = 4, shortest: int = 3) -> list[int]:
    """Prompt-lookup drafting: the (at most ``limit``) tokens that followed the latest earlier
    occurrence of ``history``'s last ``n`` tokens, for the longest ``n`` from ``longest`` down
    to ``shortest`` that occurs; none when no such run recurs. An agent's reply copies much of
    its prompt (the order's role and city, worker ids from a tool result), which is what makes
    these guesses good. Runs shorter than three tokens guess too often wrong: on the 1.5B's
    recorded staffer calls a two-token run cost as much decoding time as its hits saved
    (docs/benchmarks.md)."""
    import numpy as np

    size = len(history)
    if limit <= 0 or size <= shortest:
        return []
    seq = np.asarray(history, dtype=np.int64)
    # The earlier places where the last token occurs, and how many tokens, ending there, equal
    # the history's last ones (counted up to ``longest``).
    ends = np.flatnonzero(seq[:-1] == seq[-1])
    matched = np.ones(len(ends), dtype=np.int64)
    for back in range(1, longest):
        before = ends - back
        same = (before >= 0) & (seq[np.maximum(before, 0)] == seq[size - 1 - back]) & (matched == back)
        matched[same] += 1
    for n in range(longest, shortest - 1, -1):
        found = ends[matched >= n]
        if len(found):
            end = int(found[-1])  # the latest
            return [int(t) for t in seq[end + 1 : end + 1 + limit]]
    return []


def _stop_cut(tokenizer: Any, out: list[int], stop: list[str]) -> str | None:
    """The reply's text up to the first ``stop`` string in it, or None when there is none."""
    text = tokenizer.decode(out, skip_special_tokens=True)
    cut = min((text.find(s) for s in stop if s in text), default=-1)
    return None if cut == -1 else text[:cut]


def _pick(logits: Any, temperature: float | None, generator: Any) -> int:
    import torch

    if not temperature:
        return int(torch.argmax(logits))
    probs = torch.softmax(logits.float() / temperature, dim=-1)
    return int(torch.multinomial(probs, 1, generator=generator))
