"""Parts of the in-process ``local:`` engine checked without a model: prompt-lookup drafts, the
grouped-query attention of several new tokens, and the KV cache that grows in place."""

from __future__ import annotations

import pytest

from agentlake.llm.local import lookup_draft

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from agentlake.llm.local.engines.torch import grouped_sdpa, growing_cache  # noqa: E402


def test_a_draft_is_what_followed_the_latest_earlier_run_of_the_last_tokens() -> None:
    assert lookup_draft([7, 1, 2, 3, 9, 1, 2, 3, 4, 5, 1, 2, 3], 3) == [4, 5, 1]


def test_a_longer_matching_run_wins_over_a_later_shorter_one() -> None:
    # "1 8 2 3" recurs early; only "8 2 3" recurs later.
    assert lookup_draft([1, 8, 2, 3, 40, 41, 0, 8, 2, 3, 50, 1, 8, 2, 3], 2) == [40, 41]


def test_no_draft_when_the_last_tokens_do_not_recur() -> None:
    assert lookup_draft([1, 2, 3, 4, 5, 6], 4) == []


def test_two_recurring_tokens_are_not_enough_for_a_draft() -> None:
    assert lookup_draft([5, 1, 2, 9, 6, 1, 2], 4) == []


def test_a_draft_is_at_most_the_limit() -> None:
    assert len(lookup_draft([*range(50), 10, 11, 12], 5)) == 5


def test_no_draft_under_a_limit_of_zero() -> None:
    assert lookup_draft([1, 2, 1, 2], 0) == []


class _Attention(torch.nn.Module):
    num_key_value_groups = 7
    is_causal = True


def _case(new: int, held: int = 40, heads: int = 14, kv_heads: int = 2, dim: int = 16):
    generator = torch.Generator().manual_seed(new)
    query = torch.randn(1, heads, new, dim, generator=generator)
    key = torch.randn(1, kv_heads, held + new, dim, generator=generator)
    value = torch.randn(1, kv_heads, held + new, dim, generator=generator)
    # transformers' sdpa mask for new tokens after a cache: each sees the cache and itself.
    mask = torch.arange(held + new)[None, :] <= (held + torch.arange(new))[:, None]
    return query, key, value, mask[None, None]


@pytest.mark.parametrize("new", [1, 9])
def test_grouped_attention_equals_transformers_sdpa(new: int) -> None:
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    query, key, value, mask = _case(new)
    ours, _ = grouped_sdpa(_Attention(), query, key, value, mask, scaling=0.25)
    theirs, _ = sdpa_attention_forward(_Attention(), query, key, value, mask, scaling=0.25)
    torch.testing.assert_close(ours, theirs)


def _layer_states(cache, layer: int = 0):
    return cache.layers[layer].keys, cache.layers[layer].values


def test_the_growing_cache_holds_what_the_dynamic_cache_holds() -> None:
    config = transformers.Qwen2Config(
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, hidden_size=32
    )
    ours = growing_cache(transformers, config)
    theirs = transformers.DynamicCache(config=config)
    generator = torch.Generator().manual_seed(1)
    for length, crop in ((300, 0), (5, -3), (1, 0), (260, -100), (2, 0)):
        keys = torch.randn(1, 2, length, 8, generator=generator)
        values = torch.randn(1, 2, length, 8, generator=generator)
        for cache in (ours, theirs):
            cache.update(keys, values, 0)
            if crop:
                cache.crop(crop)
    assert ours.get_seq_length() == theirs.get_seq_length()
    torch.testing.assert_close(_layer_states(ours), _layer_states(theirs))


def test_the_growing_cache_adds_a_token_without_a_new_buffer() -> None:
    config = transformers.Qwen2Config(
        num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2, hidden_size=32
    )
    cache = growing_cache(transformers, config)
    cache.update(torch.randn(1, 2, 100, 8), torch.randn(1, 2, 100, 8), 0)
    buffer = cache.layers[0].buffers[0]
    cache.update(torch.randn(1, 2, 1, 8), torch.randn(1, 2, 1, 8), 0)
    assert cache.layers[0].buffers[0] is buffer
