"""The long-lived things one gateway process holds: one Lake, one lesson store, the tool registry,
the worker records cache, the per-key rate limits.

Owns their lifetime: each is opened lazily on first use (so ``agentlake serve`` starts fast and
a missing lake is created only when asked for), exactly once even under concurrent first
requests, and closed when the app shuts down. It does not own what they do: routes and MCP
tools call the library through them.

Thread safety: sync routes run in FastAPI's threadpool. The ``Lake`` serialises writes on its
one writer and gives each read its own cursor, so sharing one ``Lake`` across threads is the
intended use; the lock here only guards the lazy opening.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from agentlake.errors import AgentlakeError
from agentlake.gateway.limits import RateLimits
from agentlake.settings import Settings

if TYPE_CHECKING:
    from agentlake.agents.policy import RunContext
    from agentlake.agents.tools import ToolRegistry
    from agentlake.gateway.worker_cache import WorkerCache
    from agentlake.lake import Lake
    from agentlake.learn import LearningScheduler, LessonStore
    from agentlake.observe import Observer


class Services:
    """Lazily opened, process-wide handles for the gateway and the MCP server."""

    def __init__(
        self,
        settings: Settings,
        *,
        lake: Lake | None = None,
        lessons: LessonStore | None = None,
        tools: ToolRegistry | None = None,
        observer: Observer | None = None,
    ) -> None:
        self.settings = settings
        self.started = time.monotonic()
        self._lock = threading.Lock()
        self._lake = lake
        self._lessons = lessons
        self._tools = tools
        self._observer = observer
        self._workers: WorkerCache | None = None
        self.rate_limits = RateLimits.from_settings(settings)  # per process, shared by every door
        # The scheduled learner, once the app has started it (learn_schedule).
        self.learning: LearningScheduler | None = None
        # Only what we opened is ours to close; handles passed in belong to the caller.
        self._owned: list[Lake | LessonStore] = []

    @property
    def lake(self) -> Lake:
        """The process's one ``Lake`` (read-write: the gateway is its one writer)."""
        if self._lake is None:
            with self._lock:
                if self._lake is None:
                    # Lazy (start-up time): the lake (DuckDB) loads on first use.
                    from agentlake.lake import Lake

                    lake = Lake.open(self.settings)
                    self._owned.append(lake)
                    self._lake = lake
        return self._lake

    @property
    def workers(self) -> WorkerCache:
        """Rendered worker records for ``GET /worker/{id}``, kept until the lake changes."""
        if self._workers is None:
            with self._lock:
                if self._workers is None:
                    # Lazy (start-up time): the app is assembled when it is built.
                    from agentlake.gateway.worker_cache import WorkerCache

                    self._workers = WorkerCache(lambda: self.lake)
        return self._workers

    @property
    def lessons(self) -> LessonStore:
        """The lesson store (``agentlake.learn.LessonStore``)."""
        if self._lessons is None:
            with self._lock:
                if self._lessons is None:
                    # Lazy (start-up time): the learning layer loads on first use.
                    from agentlake.learn import LessonStore

                    store = LessonStore.open(self.settings)
                    self._owned.append(store)
                    self._lessons = store
        return self._lessons

    @property
    def tools(self) -> ToolRegistry:
        """The agents' tool registry for this lake (``agentlake.agents.tools.tools_for``)."""
        if self._tools is None:
            # The lake first, outside the lock (it takes the lock itself to open the lake).
            try:
                lake = self.lake
            except AgentlakeError:
                lake = None
            with self._lock:
                if self._tools is None:
                    # Lazy (start-up time): the agents load on first use.
                    from agentlake.agents.tools import tools_for

                    self._tools = tools_for(lake)
        return self._tools

    @property
    def observer(self) -> Observer:
        """The observer every call is recorded to (the process default unless one was given)."""
        if self._observer is None:
            with self._lock:
                if self._observer is None:
                    # Lazy (start-up time): the observer loads on the first op.
                    from agentlake.observe import get_observer

                    self._observer = get_observer(self.settings)
        return self._observer

    def run_context(self, *, agent_id: str) -> RunContext:
        """A fresh ``agents.RunContext`` for one tool call: this process's lake, observer and tools.

        Fresh per call because its schedule book caches bookings it has read; a long-lived one
        would serve stale placements after an ingest.
        """
        # Lazy (start-up time): the agents load on first use.
        from agentlake.agents.policy import RunContext

        return RunContext(
            lake=self.lake,
            observer=self.observer,
            settings=self.settings,
            tools=self.tools,
            agent_id=agent_id,
        )

    def uptime_s(self) -> float:
        return time.monotonic() - self.started

    def close(self) -> None:
        """Close what this object opened, newest first; safe to call twice."""
        with self._lock:
            owned, self._owned = self._owned[::-1], []
        for handle in owned:
            handle.close()
        if any(handle is self._lake for handle in owned):
            self._lake = None
        if any(handle is self._lessons for handle in owned):
            self._lessons = None
