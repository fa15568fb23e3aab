"""Embedders served over HTTP: Ollama's ``/api/embed`` and OpenAI-compatible ``/embeddings``.

Each provider class owns its client: base URL, authentication, timeout and retries. The wire
format (request body, reading the vectors out of the reply) sits beside it in two small
functions per provider. Failures are converted here, at the edge: an unreachable server is an
``UnavailableError``, a refused model or key a ``UserError`` saying what to fix, anything else a
``RunError`` carrying the HTTP status. Nothing here batches for progress or caches.

They are the same servers the chat providers talk to, so server addresses (``OLLAMA_HOST`` as
``127.0.0.1:11434``) and error bodies are read the way ``agentlake.llm.transport`` reads them.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np

from agentlake.embed.embedder import normalise_rows
from agentlake.errors import RunError, UnavailableError, UserError
from agentlake.http.client import error_text, normalise_url
from agentlake.http.retry import retrying

# Most servers cap inputs per request (OpenAI: 2048); stay well under and split larger calls.
MAX_TEXTS_PER_REQUEST = 256
_RETRY_STATUSES = {429, 500, 502, 503, 504}


def ollama_request(model: str, texts: Sequence[str]) -> dict[str, Any]:
    return {"model": model, "input": list(texts), "truncate": True}


def ollama_vectors(payload: Any) -> list[list[float]]:
    vectors = payload.get("embeddings") if isinstance(payload, dict) else None
    if not isinstance(vectors, list):
        raise RunError("Ollama /api/embed replied without an 'embeddings' list")
    return vectors


def openai_request(model: str, texts: Sequence[str]) -> dict[str, Any]:
    return {"model": model, "input": list(texts), "encoding_format": "float"}


def openai_vectors(payload: Any) -> list[list[float]]:
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(data, list):
        raise RunError("the OpenAI-compatible /embeddings reply has no 'data' list")
    # The spec returns an index per item; order by it rather than trusting the list order.
    try:
        ordered = sorted(data, key=lambda item: item.get("index", 0))
        return [item["embedding"] for item in ordered]
    except (KeyError, TypeError, AttributeError):
        raise RunError("the OpenAI-compatible /embeddings reply has items without an 'embedding'") from None


class _Answered(Exception):
    """An error status from the server, inside the retry loop only (``retry_after``: the
    seconds its Retry-After asked for, which the policy honours)."""

    def __init__(self, response: httpx.Response) -> None:
        self.status = response.status_code
        self.text = error_text(response)
        try:
            self.retry_after: float | None = float(response.headers.get("retry-after", ""))
        except ValueError:
            self.retry_after = None
        super().__init__(f"HTTP {self.status}: {self.text}")


class _HttpEmbedder(abc.ABC):
    """Shared request loop: split into requests, retry 429/5xx and transport errors, check shapes.

    A subclass sets ``name``, ``_url`` and ``_label`` and implements the wire format
    (:meth:`_body`, :meth:`_vectors`); it may refine :meth:`_refused`.
    """

    name: str
    _url: str
    _label: str

    def __init__(self, *, timeout_s: float, max_retries: int, headers: dict[str, str] | None = None) -> None:
        self._client = httpx.Client(timeout=timeout_s, headers=headers or {})
        self._max_retries = max_retries
        self._dimension: int | None = None

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            # Servers do not advertise it; one tiny call finds out and is remembered.
            self.embed(["dimension probe"])
        assert self._dimension is not None
        return self._dimension

    @abc.abstractmethod
    def _body(self, texts: Sequence[str]) -> dict[str, Any]:
        """The JSON request body embedding ``texts``."""

    @abc.abstractmethod
    def _vectors(self, payload: Any) -> list[list[float]]:
        """The vectors of a decoded reply, in input order; ``RunError`` when it has none."""

    def _refused(self, response: httpx.Response) -> UserError | None:
        """A reply that retrying cannot fix and the user can (unknown model, bad key)."""
        if response.status_code in (401, 403):
            return UserError(
                f"{self._label} refused the credentials ({response.status_code}): check the API key"
            )
        if response.status_code in (400, 404, 422):
            return UserError(
                f"{self._label} refused {self.name} ({response.status_code}): {error_text(response)}",
                http_status=response.status_code,
            )
        return None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit float32 vectors of ``texts`` (see :class:`agentlake.embed.embedder.Embedder`)."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self._dimension or 0), dtype=np.float32)
        parts = [
            self._post(texts[start : start + MAX_TEXTS_PER_REQUEST])
            for start in range(0, len(texts), MAX_TEXTS_PER_REQUEST)
        ]
        vectors = normalise_rows(np.concatenate(parts), source=self.name)
        if self._dimension is not None and vectors.shape[1] != self._dimension:
            raise RunError(f"{self.name} changed dimension from {self._dimension} to {vectors.shape[1]}")
        self._dimension = int(vectors.shape[1])
        return vectors

    def _post(self, texts: list[str]) -> np.ndarray:
        """One request for ``texts``, retried by ``http.retry``'s policy (transport errors,
        429 and 5xx, honouring Retry-After); the last failure converted here."""
        attempts = 0

        def once() -> np.ndarray:
            nonlocal attempts
            attempts += 1
            response = self._client.post(self._url, json=self._body(texts))
            refused = self._refused(response)
            if refused is not None:
                raise refused
            if response.status_code != 200:
                raise _Answered(response)
            return self._parse(response, len(texts))

        policy = retrying(
            max_retries=self._max_retries,
            retryable=lambda e: (
                isinstance(e, httpx.TransportError)
                or (isinstance(e, _Answered) and e.status in _RETRY_STATUSES)
            ),
            what=f"{self._label} embedding request",
        )
        try:
            return policy(once)
        except httpx.TransportError as exc:
            raise UnavailableError(
                f"cannot reach {self._label} at {self._url} after {attempts} attempts: {exc}; "
                "start the server or point the setting at it"
            ) from exc
        except _Answered as exc:
            raise RunError(
                f"{self._label} {self._url} answered {exc.status} for {len(texts)} texts: {exc.text}",
                http_status=502,
                upstream_status=exc.status,
            ) from None

    def _parse(self, response: httpx.Response, expected: int) -> np.ndarray:
        try:
            payload = response.json()
        except ValueError:
            raise RunError(
                f"{self._label} replied with something that is not JSON: {response.text[:200]!r}"
            ) from None
        vectors = self._vectors(payload)
        if len(vectors) != expected:
            raise RunError(f"{self._label} returned {len(vectors)} vectors for {expected} texts")
        try:
            array = np.asarray(vectors, dtype=np.float32)
        except (TypeError, ValueError):
            raise RunError(
                f"{self._label} returned vectors that are not lists of numbers of one length"
            ) from None
        if array.ndim != 2 or array.shape[1] == 0:
            raise RunError(f"{self._label} returned vectors of shape {array.shape}")
        return array

    def close(self) -> None:
        self._client.close()


class OllamaEmbedder(_HttpEmbedder):
    """An Ollama model through ``POST {host}/api/embed`` (setting ``ollama_host`` / ``OLLAMA_HOST``)."""

    def __init__(self, model: str, *, host: str, timeout_s: float = 120.0, max_retries: int = 3) -> None:
        super().__init__(timeout_s=timeout_s, max_retries=max_retries)
        self.name = f"ollama:{model}"
        self.model = model
        self._url = normalise_url(host, 11434) + "/api/embed"
        self._label = "Ollama"

    def _body(self, texts: Sequence[str]) -> dict[str, Any]:
        return ollama_request(self.model, texts)

    def _vectors(self, payload: Any) -> list[list[float]]:
        return ollama_vectors(payload)

    def _refused(self, response: httpx.Response) -> UserError | None:
        if response.status_code == 404:
            return UserError(
                f"Ollama has no model {self.model!r}: run `ollama pull {self.model}`", http_status=404
            )
        return super()._refused(response)


class OpenAIEmbedder(_HttpEmbedder):
    """An OpenAI-compatible server through ``POST {base_url}/embeddings`` (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``)."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str,
        api_key: str | None = None,
        timeout_s: float = 120.0,
        max_retries: int = 3,
    ) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        super().__init__(timeout_s=timeout_s, max_retries=max_retries, headers=headers)
        self.name = f"openai:{model}"
        self.model = model
        self._url = normalise_url(base_url) + "/embeddings"
        self._label = "the OpenAI-compatible server"

    def _body(self, texts: Sequence[str]) -> dict[str, Any]:
        return openai_request(self.model, texts)

    def _vectors(self, payload: Any) -> list[list[float]]:
        return openai_vectors(payload)
