"""The offline MiniLM embedder and the registry: real model, real vectors, plugin door."""

from __future__ import annotations

import numpy as np
import pytest

from agentlake.embed import Embedder, embedder_schemes, get_embedder, register_embedder
from agentlake.embed.local import LocalEmbedder
from agentlake.errors import UserError


@pytest.fixture(scope="session")
def minilm() -> Embedder:
    embedder = get_embedder()  # the default setting: local:all-MiniLM-L6-v2
    embedder.embed(["warm up"])  # loads the model once for the session
    return embedder


def test_default_is_the_offline_minilm(minilm: Embedder) -> None:
    assert isinstance(minilm, LocalEmbedder)
    assert minilm.name == "local:all-MiniLM-L6-v2"
    assert minilm.dimension == 384
    assert isinstance(minilm, Embedder)


def test_vectors_are_unit_float32_in_order(minilm: Embedder) -> None:
    texts = ["Certified welder, AWS D1.1, MIG and TIG.", "Registered nurse in the ICU.", ""]
    vectors = minilm.embed(texts)
    assert vectors.dtype == np.float32
    assert vectors.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    # Same text alone gives the same vector (order preserved, batching does not change it).
    np.testing.assert_allclose(minilm.embed([texts[1]])[0], vectors[1], atol=2e-3)
    assert minilm.embed([]).shape == (0, 384)


def test_similar_meaning_is_closer(minilm: Embedder) -> None:
    query, welder, nurse = minilm.embed(
        [
            "certified welder",
            "Experienced welder with AWS D1.1 certification, MIG and TIG on structural steel.",
            "Registered nurse with ten years of patient care in a hospital ICU.",
        ]
    )
    assert float(query @ welder) > float(query @ nurse) + 0.2


def test_bf16_stays_close_to_float32(minilm: LocalEmbedder) -> None:
    texts = ["Forklift operator with OSHA 10 and a clean safety record.", "CNA on night shifts."]
    fp32 = LocalEmbedder(precision="fp32").embed(texts)
    bf16 = LocalEmbedder(precision="bf16").embed(texts)
    assert np.min(np.sum(fp32 * bf16, axis=1)) > 0.999


def test_bad_specs_say_what_to_write() -> None:
    with pytest.raises(UserError, match="SCHEME:MODEL"):
        get_embedder("minilm")
    with pytest.raises(UserError, match="unknown embedder scheme 'hf'.*local.*ollama.*openai"):
        get_embedder("hf:all-MiniLM-L6-v2")
    with pytest.raises(UserError, match="unknown local model"):
        get_embedder("local:bge-large")


def test_spec_comes_from_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTLAKE_EMBED_MODEL", "ollama:nomic-embed-text")
    embedder = get_embedder()
    assert embedder.name == "ollama:nomic-embed-text"


def test_a_plugin_registers_through_the_same_door(minilm: Embedder) -> None:
    class Prefixed:
        """A third-party embedder: the packaged model, queries prefixed as some models want."""

        def __init__(self, model: str) -> None:
            self.name = f"prefixed:{model}"
            self._inner = LocalEmbedder()

        @property
        def dimension(self) -> int:
            return self._inner.dimension

        def embed(self, texts: list[str]) -> np.ndarray:
            return self._inner.embed([f"query: {t}" for t in texts])

    register_embedder("prefixed", lambda model, settings: Prefixed(model), replace=True)
    assert "prefixed" in embedder_schemes()
    embedder = get_embedder("prefixed:minilm")
    assert embedder.name == "prefixed:minilm"
    assert embedder.embed(["welder"]).shape == (1, 384)
    with pytest.raises(UserError, match="already registered"):
        register_embedder("local", lambda model, settings: Prefixed(model))
