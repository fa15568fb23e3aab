"""``generate_tree_split``: one task over an input too big for the context window.

Map-reduce with a running scratchpad digest: each shard is read with the digest so far and
the model returns the updated digest; the final call answers the task from the digest. A
shard that does not fit is halved (recursively, on a line or word boundary); a digest that
grows past a quarter of the window is condensed, itself split in halves when even that does
not fit. Every call is budget-checked (``generate_continuable``); when the input already fits
in one call, one call is made.

This module does not choose shards: callers pass them (rows, documents, pages).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from agentlake.errors import RunError, UserError
from agentlake.llm.accounting import Tally, accounting_scope
from agentlake.llm.budget import assert_context_budget, estimate_budget, text_tokens
from agentlake.llm.generate import ContinuableResult, _continuable, _prepare
from agentlake.llm.provider import Completion, GenerateOptions, Message, Provider, Usage

if TYPE_CHECKING:
    from agentlake.settings import Settings

MAP_SYSTEM = (
    "You are working through a long input in parts, keeping a running digest (scratchpad) of everything "
    "needed for this task:\n{instruction}"
)
MAP_USER = (
    "Scratchpad so far:\n<<<\n{scratchpad}\n>>>\n\nPart {label} of {total}:\n<<<\n{piece}\n>>>\n\n"
    "Return the updated scratchpad only: what the task needs from the scratchpad and this part, concise, "
    "no commentary."
)
CONDENSE_USER = (
    "Condense this scratchpad to at most about {words} words, keeping every fact the task needs:\n<<<\n{text}\n>>>\n"
    "Return the condensed scratchpad only."
)
REDUCE_USER = (
    "Digest of the whole input, part by part:\n<<<\n{scratchpad}\n>>>\n\nNow do the task:\n{instruction}"
)
DIRECT_USER = "Input:\n<<<\n{text}\n>>>\n\nTask:\n{instruction}"
SCRATCHPAD_SHARE = 4  # the digest may use up to 1/4 of the window
MIN_SPLIT_CHARS = 64
MAX_DEPTH = 12


def halve(text: str) -> tuple[str, str]:
    """Split near the middle, preferring a line break, then a space."""
    middle = len(text) // 2
    for separator in ("\n", " "):
        left, right = text.rfind(separator, 0, middle), text.find(separator, middle)
        candidates = [i for i in (left, right) if i > 0]
        if candidates:
            cut = min(candidates, key=lambda i: abs(i - middle)) + 1
            if 0 < cut < len(text):
                return text[:cut], text[cut:]
    return text[:middle], text[middle:]


class _TreeSplit:
    def __init__(
        self, provider: Provider, opts: GenerateOptions, settings: Settings, tally: Tally, instruction: str
    ) -> None:
        self.provider, self.settings, self.tally, self.instruction = provider, settings, tally, instruction
        self.map_opts = opts.model_copy(
            update={"schema_": None}
        )  # the digest is prose; the schema is for the answer
        self.final_opts = opts
        self.window = provider.capabilities.context_window
        self.key = f"{provider.name}:{provider.model}"
        self.scratch_limit = max(32, self.window // SCRATCHPAD_SHARE)
        self.results: list[ContinuableResult] = []
        self.scratchpad = ""

    def _call(self, messages: list[Message], opts: GenerateOptions, expect_json: bool) -> ContinuableResult:
        outcome = _continuable(
            self.provider,
            messages,
            opts,
            self.settings,
            self.tally,
            expect_json,
            self.settings.llm_max_continuations,
            self.settings.llm_max_tokens_cap,
        )
        self.results.append(outcome)
        return outcome

    def _fits(self, messages: list[Message], opts: GenerateOptions) -> bool:
        return estimate_budget(self.provider, messages, opts.max_tokens).fits

    def _system(self) -> Message:
        return Message(role="system", content=MAP_SYSTEM.format(instruction=self.instruction))

    def absorb(self, piece: str, label: str, total: int, depth: int = 0) -> None:
        messages = [
            self._system(),
            Message(
                role="user",
                content=MAP_USER.format(
                    scratchpad=self.scratchpad or "(empty)", label=label, total=total, piece=piece
                ),
            ),
        ]
        if not self._fits(messages, self.map_opts):
            if self.scratchpad and text_tokens(self.scratchpad, self.key) > self.scratch_limit // 2:
                self.scratchpad = self.condense(self.scratchpad, depth)
                return self.absorb(piece, label, total, depth + 1)
            if len(piece) >= MIN_SPLIT_CHARS and depth < MAX_DEPTH:
                first, second = halve(piece)
                self.absorb(first, f"{label}a", total, depth + 1)
                self.absorb(second, f"{label}b", total, depth + 1)
                return None
            assert_context_budget(
                self.provider, messages, self.map_opts.max_tokens
            )  # raises, with the numbers
        self.scratchpad = self._call(messages, self.map_opts, False).text.strip()
        if text_tokens(self.scratchpad, self.key) > self.scratch_limit:
            self.scratchpad = self.condense(self.scratchpad, depth)
        return None

    def condense(self, text: str, depth: int) -> str:
        words = max(20, int(self.scratch_limit * 0.5))
        messages = [
            self._system(),
            Message(role="user", content=CONDENSE_USER.format(words=words, text=text)),
        ]
        if self._fits(messages, self.map_opts):
            condensed = self._call(messages, self.map_opts, False).text.strip()
        elif depth < MAX_DEPTH and len(text) >= MIN_SPLIT_CHARS:
            first, second = halve(text)
            condensed = f"{self.condense(first, depth + 1)}\n{self.condense(second, depth + 1)}".strip()
        else:
            assert_context_budget(self.provider, messages, self.map_opts.max_tokens)
            condensed = text
        if text_tokens(condensed, self.key) > self.scratch_limit and len(condensed) >= len(text):
            raise RunError(
                f"{self.key}: the scratchpad does not shrink when condensed ({text_tokens(condensed, self.key)} tokens, "
                f"limit {self.scratch_limit}); use a model with a larger window or ask for less"
            )
        return condensed

    def answer(self, messages: list[Message]) -> ContinuableResult:
        return self._call(messages, self.final_opts, self.final_opts.schema_ is not None)

    def combined(self, final: ContinuableResult) -> ContinuableResult:
        usage = Usage()
        cost: float | None = 0.0
        for outcome in self.results:
            usage = usage + outcome.usage
            cost = None if cost is None or outcome.cost_usd is None else cost + outcome.cost_usd
        return ContinuableResult(
            completion=Completion(
                **{
                    **final.completion.model_dump(),
                    "usage": usage.model_dump(),
                    "latency_ms": sum(o.completion.latency_ms for o in self.results),
                }
            ),
            attempts=sum(o.attempts for o in self.results),
            continuations=sum(o.continuations for o in self.results),
            budget_retries=sum(o.budget_retries for o in self.results),
            repaired=final.repaired,
            complete=final.complete,
            cost_usd=cost,
            calls=[call for o in self.results for call in o.calls],
        )


def generate_tree_split(
    model: str | Provider,
    shards: Sequence[str],
    instruction: str,
    *,
    settings: Settings | None = None,
    options: GenerateOptions | None = None,
    **option_values: object,
) -> ContinuableResult:
    """Do ``instruction`` over ``shards`` that may not fit one context window together.

    ``max_tokens`` bounds each call's output (digest updates and the answer); a ``schema``
    applies to the final answer only. Returns a :class:`ContinuableResult` whose text is the
    answer and whose usage, attempts and calls sum every call made. Raises ``UserError`` when
    even the instruction alone does not fit, ``RunError`` when the digest cannot be condensed,
    plus what ``generate_continuable`` raises.
    """
    if isinstance(shards, str) or not all(isinstance(shard, str) for shard in shards):
        raise UserError("shards must be a list of strings (one per document, page or batch of rows)")
    if not instruction.strip():
        raise UserError("generate_tree_split needs an instruction saying what to do with the input")
    with accounting_scope("generate_tree_split") as tally:
        provider, _, opts, settings = _prepare(model, instruction, settings, options, option_values)
        tally.provider, tally.model = provider.name, provider.model
        tree = _TreeSplit(provider, opts, settings, tally, instruction)
        pieces = [shard for shard in shards if shard.strip()]
        direct = [
            Message(
                role="user", content=DIRECT_USER.format(text="\n\n".join(pieces), instruction=instruction)
            )
        ]
        if pieces and tree._fits(direct, opts):
            return tree.combined(tree.answer(direct))
        for index, piece in enumerate(pieces, start=1):
            tree.absorb(piece, str(index), len(pieces))
        final = [
            Message(
                role="user",
                content=REDUCE_USER.format(scratchpad=tree.scratchpad or "(empty)", instruction=instruction),
            )
        ]
        while not tree._fits(final, opts) and tree.scratchpad:
            before = tree.scratchpad
            tree.scratchpad = tree.condense(tree.scratchpad, 0)
            if len(tree.scratchpad) >= len(before):
                break
            final = [
                Message(
                    role="user",
                    content=REDUCE_USER.format(scratchpad=tree.scratchpad, instruction=instruction),
                )
            ]
        return tree.combined(tree.answer(final))
