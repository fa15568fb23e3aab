"""generate_tree_split: a task over input far bigger than the window, every call within budget."""

from __future__ import annotations

import json
import re

import pytest

from agentlake.errors import UserError
from agentlake.llm import CallRecord, Completion, FunctionProvider, GenerateOptions, Message
from agentlake.llm.budget import estimate_budget
from agentlake.llm.treesplit import generate_tree_split, halve


def apple_counter(window: int) -> tuple[FunctionProvider, list[int]]:
    """A fake model that counts apples faithfully, and asserts no prompt exceeds its window."""
    sizes: list[int] = []

    def reply(messages: list[Message], options: GenerateOptions) -> str | Completion:
        budget = estimate_budget(provider, messages, options.max_tokens)
        assert budget.fits, f"a call exceeded the window: {budget}"
        sizes.append(budget.input_tokens)
        last = messages[-1].content
        if "Return the updated scratchpad" in last:
            pad = re.search(r"Scratchpad so far:\n<<<\n(.*?)\n>>>", last, re.S).group(1)
            so_far = int(pad.removeprefix("count=")) if pad.startswith("count=") else 0
            part = last.split("\n<<<\n", 2)[2]
            return f"count={so_far + part.count('apple')}"
        if "Condense this scratchpad" in last:
            return "count=" + str(sum(int(n) for n in re.findall(r"count=(\d+)", last)))
        if "Digest of the whole input" in last:
            return json.dumps({"apples": int(re.search(r"count=(\d+)", last).group(1))})
        return json.dumps(
            {"apples": re.search(r"Input:\n<<<\n(.*?)\n>>>", last, re.S).group(1).count("apple")}
        )

    provider = FunctionProvider(reply, "apple-counter", context_window=window)
    return provider, sizes


def test_map_reduce_over_shards_bigger_than_the_window(records: list[CallRecord]) -> None:
    provider, sizes = apple_counter(window=600)
    shards = [
        ("apple pear " * 40 + "\n") * 6,
        "banana apple\n" * 30,
        "kiwi",
    ]  # the first alone is ~2.5x the window
    expected = sum(shard.count("apple") for shard in shards)
    result = generate_tree_split(
        provider, shards, "Count the apples. Reply as JSON.", max_tokens=48, schema={"type": "object"}
    )
    assert json.loads(result.text) == {"apples": expected}
    assert result.complete
    assert result.attempts == provider.calls > len(shards) + 1  # the big shard was split recursively
    assert max(sizes) < 600
    labels = re.findall(r"Part (\S+) of 3", "\n".join(m[-1].content for m, _ in provider.history))
    assert "1a" in labels[0]
    assert labels[-1] == "3"
    assert "format" not in provider.history[0][1].model_dump()
    assert provider.history[0][1].schema_ is None
    assert provider.history[-1][1].schema_ == {"type": "object"}  # the schema is for the answer only
    assert len(records) == 1
    assert records[0].function == "generate_tree_split"
    assert records[0].attempts == result.attempts


def test_input_that_fits_takes_one_call() -> None:
    provider, _ = apple_counter(window=8192)
    result = generate_tree_split(provider, ["apple", "apple apple"], "Count the apples.", max_tokens=32)
    assert result.text == '{"apples": 3}'
    assert provider.calls == 1


def test_a_growing_scratchpad_is_condensed() -> None:
    notes: list[str] = []

    def reply(messages: list[Message], options: GenerateOptions) -> str:
        assert estimate_budget(provider, messages, options.max_tokens).fits
        last = messages[-1].content
        if "Condense this scratchpad" in last:
            notes.append("condensed")
            return "facts: " + str(len(re.findall(r"fact", last)))
        if "Return the updated scratchpad" in last:
            pad = re.search(r"Scratchpad so far:\n<<<\n(.*?)\n>>>", last, re.S).group(1)
            return (pad if pad != "(empty)" else "") + " fact" * 60  # a digest that keeps growing
        return "done"

    provider = FunctionProvider(reply, "verbose", context_window=700)
    shards = [f"shard {i} " + "x " * 200 for i in range(6)]  # together ~2.5x the window
    result = generate_tree_split(provider, shards, "Collect facts.", max_tokens=200)
    assert result.text == "done"
    assert notes


def test_an_instruction_that_cannot_fit_fails_with_the_numbers() -> None:
    provider, _ = apple_counter(window=300)
    with pytest.raises(UserError, match="prompt too long"):
        generate_tree_split(provider, ["apple"], "Count the apples. " * 200, max_tokens=32)


def test_halve_prefers_line_then_word_boundaries() -> None:
    assert halve("aaaa\nbbbb\ncccc\ndddd") == ("aaaa\nbbbb\n", "cccc\ndddd")
    assert halve("one two three four") in {("one two ", "three four"), ("one two three ", "four")}
    first, second = halve("x" * 10)
    assert first + second == "x" * 10
    assert first
    assert second
