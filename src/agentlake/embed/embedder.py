"""The embedder contract and its registry: the one door every embedding backend goes through.

Owns the :class:`Embedder` protocol, the scheme registry (``local``, ``ollama``, ``openai``
and any third party's) and :func:`get_embedder`, which turns a spec such as
``local:all-MiniLM-L6-v2`` into an embedder. It does not own batching, progress or the
content-hash cache (``agentlake.embed.cache``), nor any backend's client (``local``, ``http``).

A third party adds a backend the way the built-ins do: call :func:`register_embedder` with a
scheme and a factory, or declare an entry point in the ``agentlake.embedders`` group whose
object is such a factory (it is registered under the entry point's name). The registry is
``agentlake.registry.Registry``, the shape every extension point shares.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from agentlake.errors import RunError, UserError
from agentlake.registry import Registry

if TYPE_CHECKING:
    from agentlake.settings import Settings

ENTRY_POINT_GROUP = "agentlake.embedders"
OPENAI_PUBLIC_URL = "https://api.openai.com/v1"


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit vectors.

    ``name`` identifies the model *and* its vector space (``local:all-MiniLM-L6-v2``): the
    cache and the index key their vectors by it, so two embedders with the same name must
    produce interchangeable vectors. ``dimension`` is the length of every vector.
    ``embed`` returns float32 of shape ``(len(texts), dimension)``, each row L2-normalised,
    in the order of ``texts``; it raises ``RunError`` when the backend fails and
    ``UserError`` when it is misconfigured. Batching and caching happen outside.
    """

    name: str

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


EmbedderFactory = Callable[[str, "Settings"], Embedder]
"""``factory(model, settings) -> Embedder``; ``model`` is the part of the spec after ``scheme:``."""

embedders: Registry[EmbedderFactory] = Registry("embedder scheme", ENTRY_POINT_GROUP)


def register_embedder(scheme: str, factory: EmbedderFactory, *, replace: bool = False) -> None:
    """Make ``scheme:MODEL`` specs resolve through ``factory`` (``agentlake.registry.Registry``).

    Raises ``UserError`` if the scheme is taken and ``replace`` is false, so two plugins
    cannot silently shadow each other.
    """
    embedders.register(scheme, factory, replace=replace)


def embedder_schemes() -> list[str]:
    """The registered schemes, sorted (built-ins plus any plugins)."""
    return embedders.names()


def get_embedder(spec: str | None = None, settings: Settings | None = None) -> Embedder:
    """The embedder for ``spec`` (default: ``settings.embed_model``), e.g. ``ollama:nomic-embed-text``.

    The spec is ``SCHEME:MODEL``; only the first ``:`` separates them, so Ollama tags such as
    ``ollama:qwen3-embedding:0.6b`` work. Raises ``UserError`` for a malformed spec or an
    unknown scheme (naming the known ones).
    """
    # Lazy (start-up time): settings (pydantic-settings) load on first use.
    from agentlake.settings import load_settings

    settings = settings or load_settings()
    spec = (spec or settings.embed_model).strip()
    scheme, sep, model = spec.partition(":")
    if not sep or not scheme or not model:
        raise UserError(
            f"invalid embedder {spec!r}: write SCHEME:MODEL, e.g. local:all-MiniLM-L6-v2, "
            "ollama:nomic-embed-text or openai:text-embedding-3-small (setting embed_model, AGENTLAKE_EMBED_MODEL)"
        )
    factory = embedders.find(scheme)
    if factory is None:
        raise UserError(
            f"unknown embedder scheme {scheme!r} in {spec!r}; known: {', '.join(embedder_schemes())}"
        )
    return factory(model, settings)


def normalise_rows(vectors: np.ndarray, *, source: str) -> np.ndarray:
    """Return ``vectors`` as C-contiguous float32 with unit rows; ``RunError`` on NaN or zero rows.

    Backends call this on what a model returned, so a server that answers garbage fails
    loudly here instead of poisoning the index with NaNs.
    """
    array = np.ascontiguousarray(vectors, dtype=np.float32)
    if array.ndim != 2:
        raise RunError(f"{source} returned an array of shape {array.shape}; expected (texts, dimension)")
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    if not np.all(np.isfinite(norms)) or np.any(norms == 0):
        raise RunError(f"{source} returned a zero or non-finite vector; check the model server")
    array /= norms
    return array


def _local_factory(model: str, settings: Settings) -> Embedder:
    # Lazy (start-up time): embedders (torch) load on first use.
    from agentlake.embed.local import LocalEmbedder

    return LocalEmbedder(model, backend=settings.embed_backend, cache_dir=settings.model_cache_path)


def _ollama_factory(model: str, settings: Settings) -> Embedder:
    # Lazy (start-up time): embedders (torch) load on first use.
    from agentlake.embed.http import OllamaEmbedder

    return OllamaEmbedder(
        model,
        host=settings.ollama_host,
        timeout_s=settings.llm_timeout_s,
        max_retries=settings.llm_max_retries,
    )


def _openai_factory(model: str, settings: Settings) -> Embedder:
    # Lazy (start-up time): embedders (torch) load on first use.
    from agentlake.embed.http import OpenAIEmbedder

    key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
    base_url = settings.openai_base_url or (OPENAI_PUBLIC_URL if key else None)
    if not base_url:
        raise UserError(
            f"openai:{model} needs a server: set OPENAI_BASE_URL (e.g. http://127.0.0.1:8000/v1 for a local "
            "OpenAI-compatible server) or OPENAI_API_KEY for api.openai.com"
        )
    return OpenAIEmbedder(
        model,
        base_url=base_url,
        api_key=key,
        timeout_s=settings.llm_timeout_s,
        max_retries=settings.llm_max_retries,
    )


# The built-ins take the same door as a plugin; their heavy imports wait until first use.
register_embedder("local", _local_factory)
register_embedder("ollama", _ollama_factory)
register_embedder("openai", _openai_factory)
