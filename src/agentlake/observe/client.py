"""``ObserverClient``: sends ops to an observer service and never loses one.

Owns the HTTP client side of the service (``POST /events``; ``GET /ops``, ``/stats``,
``/health``, ``/ops/stream``), the spool and ``RemoteSink`` (the ``OpSink`` for processes that
must not open the DuckDB file: ``observer_sink = "http"``).

The spool: when the service cannot be reached (connection error, timeout) or answers 503 or
another 5xx, ops are appended to a local JSONL file and fsynced before ``send`` returns. On the
next ``send`` (after a short back-off), on ``flush``, and by itself in the background (a
thread that retries after each back-off until the spool is empty) the spool is replayed IN
ORDER before anything new; op ids make a replay idempotent, so a crash between "sent" and
"spool cleared" yields no duplicate. A spool nobody holds (``observer-*.jsonl`` in the same
directory, not locked: its process died, or its client was closed with ops still in it) is
adopted and replayed too; closing a client with a non-empty spool wakes the other clients of
the process on that directory so one of them takes it over. Ops the service rejects as
invalid (400) are never spooled (they would block it forever); during a replay they go to
``<spool>.rejected``.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import threading
import time
import uuid
import weakref
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx

from agentlake.errors import RunError, UnavailableError, UserError
from agentlake.http.client import error_text
from agentlake.observe.append import AppendResult
from agentlake.observe.filters import OpFilter
from agentlake.observe.model import ObservedOp
from agentlake.observe.store import Stats
from agentlake.settings import load_settings

log = logging.getLogger(__name__)

DEFAULT_BACKOFF_S = 1.0
# The live clients of this process: closing one with ops still spooled wakes the others.
_LIVE: weakref.WeakSet[ObserverClient] = weakref.WeakSet()


class _Down(Exception):
    """The service cannot take ops right now (connection error, timeout, 5xx)."""

    def __init__(self, reason: str, retry_after: float = DEFAULT_BACKOFF_S) -> None:
        super().__init__(reason)
        self.retry_after = retry_after


class _Spool:
    """An append-only JSONL file of ops, fsynced on every append, locked (flock) by its owner."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None
        self.pending = 0
        if path.exists() and path.stat().st_size:
            self._open()
            self.pending = len(self.read())

    def _open(self) -> int:
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise UserError(
                    f"the spool {self.path} is in use by another ObserverClient; give each its own spool_path"
                ) from None
            self._fd = fd
        return self._fd

    def append(self, lines: Sequence[bytes]) -> None:
        fd = self._open()
        data = b"".join(line + b"\n" for line in lines)
        written = 0
        while written < len(data):
            written += os.write(fd, data[written:])
        os.fsync(fd)
        self.pending += len(lines)

    def read(self) -> list[bytes]:
        if not self.path.exists():
            return []
        return [line for line in self.path.read_bytes().split(b"\n") if line.strip()]

    def replace(self, lines: Sequence[bytes]) -> None:
        """Keep only ``lines`` (the unsent tail), atomically: a crash leaves old or new, never less."""
        if not lines:
            if self._fd is not None:
                os.ftruncate(self._fd, 0)
                os.fsync(self._fd)
            self.pending = 0
            return
        tmp = self.path.with_suffix(self.path.suffix + ".tmp")
        with open(tmp, "wb") as handle:
            handle.write(b"".join(line + b"\n" for line in lines))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, self.path)
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self._open()
        self.pending = len(lines)

    def close(self) -> None:
        if self._fd is not None:
            empty = os.fstat(self._fd).st_size == 0
            if empty:
                self.path.unlink(missing_ok=True)
            os.close(self._fd)
            self._fd = None


class ObserverClient:
    """Sends ops to the observer service at ``url`` (default ``settings.observer_url``).

    ``send``/``send_many`` return once each op is durable: committed by the service, or
    fsynced into the spool while the service is down. ``flush`` replays the spool now and
    returns how many ops were replayed. Thread-safe.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        api_key: str | None = None,
        spool_path: Path | None = None,
        timeout: float = 2.0,
        batch_size: int = 1000,
    ) -> None:
        if url is None or spool_path is None or api_key is None:
            settings = load_settings()
            url = url or settings.observer_url
            if api_key is None and settings.observer_api_key is not None:
                api_key = settings.observer_api_key.get_secret_value()
            if spool_path is None:
                spool_path = (
                    settings.data_dir / "spool" / f"observer-{os.getpid()}-{uuid.uuid4().hex[:8]}.jsonl"
                )
        self.url = url.rstrip("/")
        self.batch_size = batch_size
        headers = {"X-API-Key": api_key} if api_key else {}
        self._http = httpx.Client(base_url=self.url, timeout=timeout, headers=headers)
        self._lock = threading.RLock()
        self._spool = _Spool(Path(spool_path))
        self._down_until = 0.0
        self.spooled_total = 0
        self.replayed_total = 0
        self._closed = False
        self._wake = threading.Event()
        self._replayer: threading.Thread | None = None
        _LIVE.add(self)
        if self._spool.pending or self._orphan_paths():
            self.replay_in_background()

    @property
    def spool_path(self) -> Path:
        return self._spool.path

    @property
    def pending(self) -> int:
        """Ops in this client's spool, waiting for the service."""
        return self._spool.pending

    # --- sending ------------------------------------------------------------------------

    def send(self, op: ObservedOp) -> None:
        """Deliver one op (see the class docstring). Raises ``UserError`` if the service rejects
        it as invalid or the key as insufficient: those are never spooled."""
        self.append([op])

    def send_many(self, ops: Sequence[ObservedOp]) -> None:
        """Deliver ops in order, in batches of ``batch_size``."""
        self.append(ops)

    def append(self, ops: Sequence[ObservedOp]) -> list[AppendResult]:
        """Deliver ops; one result per op: ``stored``, ``duplicate`` or ``spooled``."""
        lines = [op.model_dump_json().encode() for op in ops]
        if not lines:
            return []
        if not self._spool.pending and time.monotonic() >= self._down_until:
            try:
                return self._post(lines)
            except _Down as down:
                with self._lock:
                    self._mark_down(down)
                    return self._to_spool(lines)
        with self._lock:
            if self._spool.pending and time.monotonic() >= self._down_until:
                self._replay_quietly()
            if self._spool.pending or time.monotonic() < self._down_until:
                return self._to_spool(lines)  # behind older spooled ops: order is kept
            try:
                return self._post(lines)
            except _Down as down:
                self._mark_down(down)
                return self._to_spool(lines)

    def flush(self) -> int:
        """Replay the spool (and any spool a dead process left in the same directory) now.
        Returns how many ops were delivered; stops early, keeping the rest, if the service is
        still down (see :attr:`pending`)."""
        with self._lock:
            return self._replay_quietly()

    def _mark_down(self, down: _Down, *, quiet: bool = False) -> None:
        if not quiet:
            log.warning("observer at %s unavailable (%s); spooling to %s", self.url, down, self._spool.path)
        self._down_until = time.monotonic() + down.retry_after

    def _to_spool(self, lines: list[bytes]) -> list[AppendResult]:
        self._spool.append(lines)
        self.spooled_total += len(lines)
        self.replay_in_background()
        return [AppendResult(json.loads(line)["id"], "spooled") for line in lines]

    def replay_in_background(self) -> None:
        """Start (or wake) the thread that replays the spool, and any spool nobody holds in its
        directory, as soon as the service answers again; it ends once nothing is left."""
        with self._lock:
            if self._closed:
                return
            self._wake.set()
            if self._replayer is None or not self._replayer.is_alive():
                self._replayer = threading.Thread(
                    target=self._replay_loop, name="observer-spool-replay", daemon=True
                )
                self._replayer.start()

    def _replay_loop(self) -> None:
        while not self._closed:
            self._wake.wait(max(0.05, self._down_until - time.monotonic()))
            self._wake.clear()
            if self._closed:
                return
            with self._lock:
                if time.monotonic() >= self._down_until:
                    self._replay_quietly(quiet=True)
                if not self._spool.pending and not self._orphan_paths():
                    self._replayer = None
                    return

    def _replay_quietly(self, *, quiet: bool = False) -> int:
        delivered = [0]
        try:
            self._replay(self._spool, delivered)
            for orphan in self._orphans():
                try:
                    self._replay(orphan, delivered)
                finally:
                    orphan.close()
            self._down_until = 0.0
        except _Down as down:
            self._mark_down(down, quiet=quiet)
        return delivered[0]

    def _replay(self, spool: _Spool, delivered: list[int]) -> None:
        """Send ``spool`` in order, batch by batch; whatever is unsent stays in it."""
        lines = spool.read()
        sent = 0
        rejected: list[bytes] = []
        try:
            while sent < len(lines):
                chunk = lines[sent : sent + self.batch_size]
                bad: list[bytes] = []
                try:
                    self._post(chunk)
                except UserError as exc:
                    if exc.http_status != 400:
                        raise
                    bad = self._bisect_rejects(chunk)
                    rejected.extend(bad)
                sent += len(chunk)
                delivered[0] += len(chunk) - len(bad)
                self.replayed_total += len(chunk) - len(bad)
        finally:
            if rejected:
                dead = spool.path.with_name(spool.path.name + ".rejected")
                with open(dead, "ab") as handle:
                    handle.write(b"".join(line + b"\n" for line in rejected))
                    handle.flush()
                    os.fsync(handle.fileno())
                log.warning("%d spooled ops were rejected by the observer; kept in %s", len(rejected), dead)
            spool.replace(lines[sent:])

    def _bisect_rejects(self, chunk: list[bytes]) -> list[bytes]:
        """Send what the service accepts, one by one, and return the lines it rejects."""
        bad = []
        for line in chunk:
            try:
                self._post([line])
            except UserError as exc:
                if exc.http_status != 400:
                    raise
                bad.append(line)
        return bad

    def _orphan_paths(self) -> list[Path]:
        """Non-empty spools in this client's directory other than its own (held or not)."""
        directory = self._spool.path.parent
        if not directory.is_dir():
            return []
        return [
            path
            for path in sorted(directory.glob("observer-*.jsonl"))
            if path != self._spool.path and path.stat().st_size
        ]

    def _orphans(self) -> Iterator[_Spool]:
        """The spools nobody holds: whoever owns one keeps it locked (flock) while it has ops,
        and the lock goes with its process or its ``close``."""
        for path in self._orphan_paths():
            try:
                spool = _Spool(path)
                spool._open()
            except (UserError, OSError):
                continue  # held by a live client, or someone else is adopting it
            yield spool

    def _post(self, lines: list[bytes]) -> list[AppendResult]:
        results: list[AppendResult] = []
        for start in range(0, len(lines), self.batch_size):
            results.extend(self._post_batch(lines[start : start + self.batch_size]))
        return results

    def _post_batch(self, lines: list[bytes]) -> list[AppendResult]:
        body = b"[" + b",".join(lines) + b"]"
        try:
            response = self._http.post("/events", content=body, headers={"Content-Type": "application/json"})
        except httpx.TransportError as exc:
            raise _Down(f"{type(exc).__name__}: {exc}") from None
        if response.status_code == 413 and len(lines) > 1:
            half = len(lines) // 2
            return self._post_batch(lines[:half]) + self._post_batch(lines[half:])
        if response.status_code >= 500:
            retry_after = _retry_after(response.headers.get("retry-after"))
            raise _Down(f"HTTP {response.status_code}", retry_after)
        if response.status_code >= 400:
            raise UserError(
                f"observer refused the events: {error_text(response)}", http_status=response.status_code
            )
        return [AppendResult(item["id"], item.get("status", "stored")) for item in response.json()["results"]]

    # --- reading ------------------------------------------------------------------------

    def _get(self, path: str, params: dict[str, Any] | list[tuple[str, str]] | None = None) -> Any:
        query: Any = (
            params
            if isinstance(params, list)
            else [(k, v) for k, v in (params or {}).items() if v is not None]
        )
        try:
            response = self._http.get(path, params=query)
        except httpx.TransportError as exc:
            raise UnavailableError(
                f"the observer at {self.url} is not reachable ({type(exc).__name__}); start it with `agentlake observer serve`"
            ) from None
        if response.status_code >= 500:
            raise RunError(
                f"observer {path} failed: {error_text(response)}", http_status=response.status_code
            )
        if response.status_code >= 400:
            raise UserError(f"observer {path}: {error_text(response)}", http_status=response.status_code)
        return response.json()

    def health(self) -> dict[str, Any]:
        """``GET /health``."""
        return self._get("/health")

    def stats(self) -> Stats:
        """``GET /stats``."""
        return Stats.model_validate(self._get("/stats"))

    def query(self, wanted: OpFilter | None = None, /, **filters: Any) -> list[ObservedOp]:
        """``GET /ops`` with ``wanted`` (an ``OpFilter``, or its fields as keywords).
        ``UserError`` for a bad filter."""
        return [
            ObservedOp.model_validate(item)
            for item in self._get("/ops", OpFilter.of(wanted, **filters).params())["ops"]
        ]

    def stream(self, *, source: str | None = None, backlog: int = 0) -> Iterator[ObservedOp]:
        """Ops as the service stores them (``GET /ops/stream``), until the caller stops iterating."""
        params = {key: value for key, value in (("source", source), ("backlog", backlog)) if value}
        try:
            with self._http.stream(
                "GET",
                "/ops/stream",
                params=params,
                timeout=httpx.Timeout(self._http.timeout.connect, read=None),
            ) as response:
                if response.status_code >= 400:
                    response.read()
                    raise UserError(
                        f"observer /ops/stream: {error_text(response)}", http_status=response.status_code
                    )
                event = None
                for line in response.iter_lines():
                    if line.startswith("event:"):
                        event = line[6:].strip()
                    elif line.startswith("data:") and event == "op":
                        yield ObservedOp.model_validate_json(line[5:].strip())
                    elif not line:
                        event = None
        except httpx.TransportError as exc:
            raise UnavailableError(
                f"the observer at {self.url} is not reachable ({type(exc).__name__})"
            ) from None

    def close(self) -> None:
        """Close the HTTP client and the spool (an empty spool file is removed). Ops still
        spooled stay in the file, and another client of this process on the same directory
        is woken to replay them."""
        with self._lock:
            self._closed = True
            self._wake.set()
            left = self._spool.pending
            self._http.close()
            self._spool.close()
        _LIVE.discard(self)
        if left:
            for other in list(_LIVE):
                if other._spool.path.parent == self._spool.path.parent:
                    other.replay_in_background()
                    break

    def __enter__(self) -> ObserverClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _retry_after(value: str | None) -> float:
    try:
        return min(30.0, max(0.1, float(value))) if value else DEFAULT_BACKOFF_S
    except ValueError:
        return DEFAULT_BACKOFF_S


class RemoteSink:
    """The ``OpSink`` of a process that sends its ops to a running observer service."""

    local = False

    def __init__(self, client: ObserverClient) -> None:
        self.client = client

    def append(
        self, ops: Sequence[ObservedOp], *, timeout: float | None = None, wait_for_space: float = 0.0
    ) -> list[AppendResult]:
        return self.client.append(ops)

    def query(self, wanted: OpFilter | None = None, /, **filters: Any) -> list[ObservedOp]:
        return self.client.query(wanted, **filters)

    def recent(self, n: int = 100) -> list[ObservedOp]:
        return list(reversed(self.client.query(limit=n)))

    def stats(self) -> Stats:
        return self.client.stats()

    def close(self) -> None:
        self.client.close()
