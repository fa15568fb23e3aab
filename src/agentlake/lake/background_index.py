"""Building a dataset's vector index in a background thread: cancellable, with progress.

Owns :class:`BackgroundIndex` and :class:`IndexProgress`. Embedding tens of thousands of texts
takes minutes on a CPU, so a caller (the main job) starts the build and keeps working while it
runs: the thread fills the lake's embedding cache chunk by chunk, so progress moves and a
cancelled build keeps every chunk it finished, then ``index.ensure_index`` builds the index
and finds every vector cached. It does not own embedding (``agentlake.embed``) or the index
itself (``index``).
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from agentlake.embed import embed_texts, get_embedder
from agentlake.errors import RunError
from agentlake.lake.catalog import quote_ident
from agentlake.lake.index import BuildResult, ensure_index

if TYPE_CHECKING:
    from agentlake.embed import Embedder
    from agentlake.lake import Lake


# Distinct texts per progress step: ~4 s of model time at 290 resumes/s, so progress moves
# often and a cancel waits at most that long.
EMBED_CHUNK = 1024
IndexPhase = Literal["starting", "embedding", "indexing", "done", "failed", "cancelled"]


class IndexProgress(BaseModel):
    """How far a :class:`BackgroundIndex` is: ``done`` of ``total`` distinct texts have vectors."""

    phase: IndexPhase
    total: int = Field(0, description="Distinct texts to embed (0 until they are counted).")
    done: int = Field(0, description="Distinct texts with a vector so far, cached or embedded.")
    embedded: int = Field(0, description="Texts the model embedded in this build.")
    seconds: float = Field(0.0, description="Since the build started.")
    embed_seconds: float = Field(0.0, description="Spent embedding (the rate's denominator).")

    @property
    def rate(self) -> float:
        """Texts embedded per second (0 before the first chunk)."""
        return self.embedded / self.embed_seconds if self.embed_seconds > 0 else 0.0

    @property
    def eta_s(self) -> float | None:
        """Seconds left at the current rate, or None when unknown."""
        return (self.total - self.done) / self.rate if self.rate > 0 else None


class BackgroundIndex:
    """Builds ``dataset``'s vector index over ``column`` in a daemon thread, with progress.

    It first fills the lake's embedding cache chunk by chunk (``embed_texts``), so progress is
    visible and a cancelled build keeps every chunk it finished; then ``ensure_index`` builds
    the index, finding every vector cached. It shares the caller's open read-write lake: its
    writes go through ``Lake.write`` (the one writer) and the caller may keep reading.
    :meth:`result` re-raises what the thread raised (``UserError``/``RunError``).
    """

    def __init__(
        self,
        lake: Lake,
        dataset: str,
        column: str,
        *,
        embedder: Embedder | None = None,
        chunk: int = EMBED_CHUNK,
    ) -> None:
        self.lake, self.dataset, self.column = lake, dataset, column
        self._embedder = embedder
        self._chunk = max(1, chunk)
        self._lock = threading.Lock()
        self._cancel = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"index-{dataset}", daemon=True)
        self._progress = IndexProgress(phase="starting")
        self._started = 0.0
        self._ended: float | None = None
        self._result: BuildResult | None = None
        self._error: BaseException | None = None

    def start(self) -> BackgroundIndex:
        self._started = time.perf_counter()
        self._thread.start()
        return self

    def progress(self) -> IndexProgress:
        """A snapshot of the build's progress (safe from any thread); once it has ended,
        ``seconds`` is how long it ran."""
        with self._lock:
            until = self._ended if self._ended is not None else time.perf_counter()
            return self._progress.model_copy(update={"seconds": round(until - self._started, 3)})

    @property
    def finished(self) -> bool:
        return self._started > 0 and not self._thread.is_alive()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds; True once the build has ended (any way)."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def cancel(self) -> None:
        """Stop after the current chunk and wait for the thread (no-op once it ended)."""
        self._cancel.set()
        if self._started:
            self._thread.join()

    def result(self) -> BuildResult | None:
        """The build (None when the index was already fresh); raises the thread's error."""
        if not self.finished:
            raise RunError("the background index build has not finished; wait() for it first")
        if self._error is not None:
            raise self._error
        if self._progress.phase == "cancelled":
            raise RunError(f"the {self.dataset} index build was cancelled; its finished chunks are cached")
        return self._result

    def _set(self, **fields: Any) -> None:
        with self._lock:
            self._progress = self._progress.model_copy(update=fields)

    def _run(self) -> None:
        try:
            embedder = self._embedder or get_embedder(None, self.lake.settings)
            # Load the model here, off the rate's clock; a fresh index needs it too: the example
            # search embeds its question, and then finds it loaded.
            _ = embedder.dimension
            rows = self.lake.read_arrow(
                f"SELECT {quote_ident(self.column)}::VARCHAR AS text FROM {quote_ident(self.dataset)}"
            )
            # ensure_index reads NULL as ""; the same texts here mean it finds all of them cached.
            unique = list(dict.fromkeys(text or "" for text in rows.column("text").to_pylist()))
            self._set(phase="embedding", total=len(unique))
            embedding = 0.0
            for start in range(0, len(unique), self._chunk):
                if self._cancel.is_set():
                    self._set(phase="cancelled")
                    return
                began = time.perf_counter()
                _, stats = embed_texts(embedder, unique[start : start + self._chunk], lake=self.lake)
                if stats.embedded:
                    embedding += time.perf_counter() - began
                with self._lock:
                    p = self._progress
                    self._progress = p.model_copy(
                        update={
                            "done": p.done + stats.unique,
                            "embedded": p.embedded + stats.embedded,
                            "embed_seconds": round(embedding, 3),
                        }
                    )
            self._set(phase="indexing")
            self._result = ensure_index(self.lake, self.dataset, self.column, embedder=embedder)
            self._set(phase="done")
        except BaseException as exc:  # handed to the waiting thread by result()
            self._error = exc
            self._set(phase="failed")
        finally:
            with self._lock:
                self._ended = time.perf_counter()
