"""Embeddings: the :class:`Embedder` contract, its registry and batched, cached embedding.

``get_embedder("local:all-MiniLM-L6-v2")`` (the default, offline), ``ollama:MODEL`` or
``openai:MODEL`` returns an embedder; :func:`embed_texts` runs it in batches with a progress
bar and a content-hash cache in the lake. Vector indexes and search live in
``agentlake.lake.index`` and ``agentlake.lake.search``, not here.
"""

from agentlake.embed.cache import EmbedStats, embed_texts, text_hash
from agentlake.embed.embedder import (
    Embedder,
    EmbedderFactory,
    embedder_schemes,
    get_embedder,
    register_embedder,
)

__all__ = [
    "EmbedStats",
    "Embedder",
    "EmbedderFactory",
    "embed_texts",
    "embedder_schemes",
    "get_embedder",
    "register_embedder",
    "text_hash",
]
