"""Where scenario days execute: inline, on a process pool, or on Ray.

Owns the ``Backend`` contract (``map`` day tasks to day results, yielding each as it
finishes) and its three implementations. Every backend runs the same ``day.run_day``; a
worker opens the lake READ-ONLY (DuckDB allows one read-write process per file, any number of
readers) and sends its ops back with its results, so the parent stays the only writer of the
observer's store, the lesson stores and the run directory. The inline backend runs
``concurrency`` days at once in threads of this process (``scenarios/concurrency``), handing
them back in the order asked, so what is written does not depend on how many ran at once.
It does not own batching or learning (``runner``).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from agentlake.errors import RunError, UserError, require_extra
from agentlake.scenarios.day import DayResult, DayTask, run_day

if TYPE_CHECKING:
    from agentlake.lake import Lake
    from agentlake.scenarios.judge import Matching

BACKENDS: tuple[str, ...] = ("inline", "process", "ray")


class Backend(Protocol):
    """Runs day tasks; the one extension point for where scenario work happens."""

    name: str

    def map(self, tasks: Sequence[DayTask]) -> Iterator[DayResult]:
        """Run every task; yield each result as it finishes (any order). Raises ``RunError``."""
        ...

    def close(self) -> None: ...


class InlineBackend:
    """Runs days in this process (reusing an open lake if given): one after another, or
    ``concurrency`` at once in threads, yielded in the order of ``tasks`` all the same.

    A day that raises in a thread stops no other: every other day runs and is yielded, then
    the first error is raised (its own ``UserError``/``RunError``, else a ``RunError`` naming
    the day), so a resumed run reruns the days that failed only. No day starts after the
    consumer stops asking (the days under way finish first).
    """

    name = "inline"

    def __init__(
        self, *, lake: Lake | None = None, matching: Matching | None = None, concurrency: int = 1
    ) -> None:
        self._lake = lake
        self._matching = matching
        self.concurrency = max(1, concurrency)

    def map(self, tasks: Sequence[DayTask]) -> Iterator[DayResult]:
        if self.concurrency == 1 or len(tasks) < 2:
            for task in tasks:
                yield run_day(task, lake=self._lake, matching=self._matching)
            return
        yield from self._at_once(tasks)

    def _at_once(self, tasks: Sequence[DayTask]) -> Iterator[DayResult]:
        from concurrent.futures import ThreadPoolExecutor

        stop = threading.Event()

        def day(task: DayTask) -> DayResult | None:
            if stop.is_set():
                return None  # the consumer stopped asking: days not started yet do not start
            return run_day(task, lake=self._lake, matching=self._matching)

        failed: BaseException | None = None
        with ThreadPoolExecutor(self.concurrency, thread_name_prefix="scenario-day") as pool:
            futures = [pool.submit(day, task) for task in tasks]
            try:
                for task, future in zip(tasks, futures, strict=True):
                    try:
                        result = future.result()
                    except (UserError, RunError) as exc:
                        failed = failed or exc
                        continue
                    except Exception as exc:
                        if failed is None:
                            failed = RunError(
                                f"scenario day {task.scenario.scenario} r{task.repetition} of {task.arm} "
                                f"(batch {task.batch}) failed: {type(exc).__name__}: {exc}"
                            )
                            failed.__cause__ = exc
                        continue
                    if result is not None:
                        yield result
            finally:
                stop.set()  # those under way finish (the pool waits for them)
        if failed is not None:
            raise failed

    def close(self) -> None:
        pass


def _run_day_in_worker(task: DayTask) -> DayResult:
    """Entry point in a worker process: the lake is opened read-only from the task's path."""
    return run_day(task)


class ProcessBackend:
    """A ``concurrent.futures.ProcessPoolExecutor`` (spawned workers, so no inherited DuckDB
    handles or threads). Each worker opens the lake read-only."""

    name = "process"

    def __init__(self, workers: int | None = None) -> None:
        self.workers = workers or max(1, os.cpu_count() or 1)
        self._pool: Any = None

    def _executor(self) -> Any:
        if self._pool is None:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            self._pool = ProcessPoolExecutor(
                max_workers=self.workers, mp_context=multiprocessing.get_context("spawn")
            )
        return self._pool

    def map(self, tasks: Sequence[DayTask]) -> Iterator[DayResult]:
        from concurrent.futures import as_completed
        from concurrent.futures.process import BrokenProcessPool

        pool = self._executor()
        futures = {pool.submit(_run_day_in_worker, task): task for task in tasks}
        try:
            for future in as_completed(futures):
                yield future.result()
        except BrokenProcessPool as exc:
            raise RunError(
                f"a scenario worker process died ({exc}); rerun with --backend inline to see why"
            ) from None
        finally:
            for future in futures:
                future.cancel()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


def _import_ray() -> Any:
    require_extra("ray", "the ray backend", "ray")
    import ray

    return ray


class RayBackend:
    """Ray tasks, one per day, on the cluster at ``address`` (or a local instance).

    With no address and no Ray already initialised in this process, a local Ray is started
    (and shut down on ``close``). Workers must see the same lake path (same machine or a shared
    filesystem) and the same agentlake installation.
    """

    name = "ray"

    def __init__(self, address: str | None = None, *, workers: int | None = None) -> None:
        self.address = address
        self.workers = workers
        self._started = False
        self._remote: Any = None
        ray = _import_ray()
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
            if address:
                kwargs["address"] = address
            elif workers:
                kwargs["num_cpus"] = workers
            try:
                ray.init(**kwargs)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise RunError(
                    f"cannot connect to Ray at {address or 'a new local instance'}: {exc}"
                ) from None
            self._started = True
        self._remote = ray.remote(max_retries=0)(_run_day_in_worker)

    def map(self, tasks: Sequence[DayTask]) -> Iterator[DayResult]:
        ray = _import_ray()
        pending = [self._remote.remote(task) for task in tasks]
        try:
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                try:
                    yield ray.get(done[0])
                except ray.exceptions.RayTaskError as exc:
                    cause = exc.cause if getattr(exc, "cause", None) is not None else exc
                    if isinstance(cause, (UserError, RunError)):
                        raise cause from None
                    raise RunError(f"a Ray scenario task failed: {type(cause).__name__}: {cause}") from None
        finally:
            for ref in pending:
                ray.cancel(ref, force=True)

    def close(self) -> None:
        if self._started:
            _import_ray().shutdown()
            self._started = False


def make_backend(
    name: str,
    *,
    workers: int | None = None,
    ray_address: str | None = None,
    lake: Lake | None = None,
    matching: Matching | None = None,
    concurrency: int = 1,
) -> Backend:
    """A backend by name (``concurrency``: days at once, inline only); ``UserError`` for an
    unknown one or a missing Ray."""
    if name == "inline":
        return InlineBackend(lake=lake, matching=matching, concurrency=concurrency)
    if name == "process":
        return ProcessBackend(workers)
    if name == "ray":
        return RayBackend(ray_address, workers=workers)
    raise UserError(f"unknown backend {name!r}; choose one of: {', '.join(BACKENDS)}")
