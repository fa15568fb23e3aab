"""Batched embedding with the content-hash cache in the lake: unchanged texts cost nothing."""

from __future__ import annotations

import numpy as np
import pytest

from agentlake.embed import embed_texts, get_embedder
from agentlake.embed.cache import CACHE_TABLE
from agentlake.lake import Lake


class Counting:
    """Wraps the real embedder to count the texts that reach the model."""

    def __init__(self) -> None:
        self.inner = get_embedder()
        self.name = self.inner.name
        self.calls: list[int] = []

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls.append(len(texts))
        return self.inner.embed(texts)


@pytest.fixture
def lake() -> Lake:
    with Lake.open() as lake:
        yield lake


def test_second_call_embeds_nothing(lake: Lake) -> None:
    embedder = Counting()
    texts = [f"Warehouse associate number {i} with pallet jack experience." for i in range(40)]
    first, stats = embed_texts(embedder, texts, lake=lake, batch_size=16)
    assert stats.embedded == 40
    assert stats.cached == 0
    assert embedder.calls == [16, 16, 8]

    embedder.calls.clear()
    again, stats = embed_texts(embedder, texts, lake=lake, batch_size=16)
    assert stats.embedded == 0
    assert stats.cached == 40
    assert embedder.calls == []
    np.testing.assert_allclose(again, first, atol=1e-6)

    # One new text: only it reaches the model; the cache lives in the lake.
    _, stats = embed_texts(embedder, [*texts, "A brand new resume."], lake=lake)
    assert stats.embedded == 1
    assert embedder.calls == [1]
    assert lake.read_arrow(f"SELECT count(*) AS n FROM {CACHE_TABLE}").column("n")[0].as_py() == 41


def test_duplicates_are_embedded_once_and_order_kept(lake: Lake) -> None:
    embedder = Counting()
    texts = ["welder", "nurse", "welder", "", "nurse"]
    vectors, stats = embed_texts(embedder, texts, lake=lake)
    assert stats.unique == 3
    assert stats.embedded == 3
    assert sum(embedder.calls) == 3
    np.testing.assert_array_equal(vectors[0], vectors[2])
    np.testing.assert_array_equal(vectors[1], vectors[4])
    assert float(vectors[0] @ vectors[1]) < 0.99


def test_cache_is_per_model(lake: Lake) -> None:
    embedder = Counting()
    embed_texts(embedder, ["forklift"], lake=lake)
    other = Counting()
    other.name = "local:some-other-space"
    _, stats = embed_texts(other, ["forklift"], lake=lake)
    assert stats.embedded == 1


def test_without_a_lake_nothing_is_cached() -> None:
    embedder = Counting()
    vectors, stats = embed_texts(embedder, ["a", "b"], progress=True)
    assert vectors.shape == (2, 384)
    assert stats.embedded == 2
