"""Process-level concerns of agentlake's long-running HTTP servers (the gateway and the observer).

Owns two things: how the garbage collector runs in a server process, and the server's
announcement for its data directory (which address serves it, which pid, which stores it
holds), so that a CLI command run beside it goes through the server instead of failing on a
held DuckDB file. It does not build apps or run uvicorn (``gateway.server``, ``observe.service``).

The announcement: ``data_dir/servers/<kind>.json`` (kind ``gateway`` or ``observer``), written
atomically when the server starts listening and removed when it stops. A file whose process is
gone (a SIGKILLed server) or whose pid now names another process (pid reuse: the process start
time is recorded and compared) is stale: ignored with a note on stderr, and removed.

Why: CPython's defaults (a young collection every 700 net allocations) promote the objects of
every request in flight to the older generations, so a full collection ran about once a second
under 50 concurrent clients. A full collection walks every tracked object, including the
~200k objects of the imported libraries and the observer's ring of recent ops, and it holds
the GIL: each one stalled every request for 130-200 ms (measured in a gateway at ~2,000 req/s),
which was the whole p99 of the gateway and the observer (benchmarks/bench_gateway.py).

The policy: freeze what exists at start-up (imported modules, the app) into the permanent
generation, which no collection walks, and collect the young generation every
``YOUNG_THRESHOLD`` allocations instead of 700, so request objects usually die before a
collection sees them and full collections become rare. Memory is still reclaimed at once by
reference counting; only cyclic garbage waits longer, and the request path makes none
(``observe.store`` drops its callbacks once called; tested).
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agentlake.settings import Settings

# Young generation: allocations between collections (CPython's default: 700). A young
# collection then walks up to this many objects (a few ms), a small share of the time saved.
YOUNG_THRESHOLD = 50_000
# Young collections per middle one, and middle ones per full one (defaults: 10 and 10).
MIDDLE_THRESHOLD = 20
OLD_THRESHOLD = 100


def tune_collector() -> None:
    """Freeze the start-up heap and space out collections; call once, just before serving.

    Process-wide and idempotent. Meant for server processes only: a short CLI command gains
    nothing from it.
    """
    gc.collect()  # what start-up left as garbage is freed, not frozen
    gc.freeze()
    gc.set_threshold(YOUNG_THRESHOLD, MIDDLE_THRESHOLD, OLD_THRESHOLD)


# --- the announcement -------------------------------------------------------------------------

SERVERS_DIR = "servers"


@dataclass(frozen=True)
class Announcement:
    """A running server of one data directory, as it announced itself.

    ``stores``: the store files it holds open (absolute paths; DuckDB allows one writing
    process per file). ``observer_url``: where its observer's HTTP API is (the gateway mounts
    it under ``/observer``).
    """

    kind: str
    url: str
    pid: int
    stores: list[str]
    observer_url: str | None = None
    started: str = ""
    process_start: int | None = None

    def holds(self, store: Path) -> bool:
        return str(Path(store).resolve()) in self.stores

    def describe(self) -> str:
        return f"the {self.kind} at {self.url} (pid {self.pid})"


def _process_start(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (Linux ``/proc``), else None: what
    tells a live server from another process that reused its pid."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Field 22; the command name (field 2) may hold spaces, so count from its closing ")".
    return int(stat.rsplit(")", 1)[1].split()[19])


def _alive(pid: int, process_start: int | None) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process: it exists
    return process_start is None or _process_start(pid) in (None, process_start)


def client_url(host: str, port: int) -> str:
    """The URL a client on this machine uses to reach a server bound to ``host:port``."""
    if host in ("0.0.0.0", ""):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


@contextlib.contextmanager
def announce(
    settings: Settings, *, kind: str, url: str, stores: list[Path], observer_url: str | None = None
) -> Iterator[Announcement]:
    """Announce this process as the ``kind`` server of ``settings.data_dir`` for the block.

    The file is replaced atomically (a reader never sees half of it) and removed on the way out
    only if it is still ours (a second server of the same kind may have replaced it)."""
    pid = os.getpid()
    directory = Path(settings.data_dir) / SERVERS_DIR
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{kind}.json"
    announcement = Announcement(
        kind=kind,
        url=url.rstrip("/"),
        pid=pid,
        stores=[str(Path(store).resolve()) for store in stores],
        observer_url=observer_url.rstrip("/") if observer_url else None,
        started=datetime.now(UTC).isoformat(timespec="seconds"),
        process_start=_process_start(pid),
    )
    partial = path.with_suffix(f".{pid}.tmp")
    partial.write_text(json.dumps(asdict(announcement), indent=2) + "\n")
    os.replace(partial, path)

    def withdraw() -> None:
        with contextlib.suppress(OSError, ValueError):
            if json.loads(path.read_text()).get("pid") == pid:
                path.unlink()

    # uvicorn ends a graceful SIGTERM shutdown by re-raising the signal under the handler it
    # found, which by default kills the process before any ``finally`` runs: withdraw first.
    previous = _on_sigterm(withdraw)
    try:
        yield announcement
    finally:
        withdraw()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _on_sigterm(withdraw: Callable[[], None]) -> Any:
    """Run ``withdraw`` on SIGTERM, then terminate as the handler before would have; returns
    that handler (None when signals cannot be handled here: not the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        return None
    previous = signal.getsignal(signal.SIGTERM)

    def handler(signum: int, frame: Any) -> None:
        withdraw()
        if callable(previous):
            previous(signum, frame)
            return
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    signal.signal(signal.SIGTERM, handler)
    return previous


def running_servers(data_dir: Path) -> list[Announcement]:
    """The live servers announced for ``data_dir`` (stale files noted and removed)."""
    directory = Path(data_dir) / SERVERS_DIR
    if not directory.is_dir():
        return []
    found = []
    for path in sorted(directory.glob("*.json")):
        try:
            body = json.loads(path.read_text())
            announcement = Announcement(**body)
        except (OSError, ValueError, TypeError):
            print(f"note: ignoring the unreadable server file {path}", file=sys.stderr)
            continue
        if not _alive(announcement.pid, announcement.process_start):
            print(
                f"note: ignoring the stale server file {path} (pid {announcement.pid} is not running)",
                file=sys.stderr,
            )
            with contextlib.suppress(OSError):
                path.unlink()
            continue
        found.append(announcement)
    return found


def server_holding(store: Path, data_dir: Path | None = None) -> Announcement | None:
    """The live server that announced holding ``store`` open, if any (looked up in
    ``data_dir``, by default the store's own directory)."""
    directory = Path(data_dir) if data_dir is not None else Path(store).resolve().parent
    # A server's own process opens its stores itself (after announcing them).
    own = os.getpid()
    return next(
        (server for server in running_servers(directory) if server.holds(store) and server.pid != own), None
    )


def held_by(store: Path, what: str) -> str | None:
    """One line for a command that cannot open ``store`` because a running server holds it:
    names the server and what to do; None when no announced server holds it."""
    server = server_holding(store)
    if server is None:
        return None
    return (
        f"{what} {store} is held by {server.describe()}: run this command with the server "
        f"stopped (Ctrl-C in its terminal, or kill {server.pid}), or use its API"
    )


def show_learning(level: str = "info") -> None:
    """Print the scheduled learner's status line per cycle on stderr (a server at ``level``
    info or debug): the ``agentlake.learn`` logger at INFO, beside uvicorn's own lines."""
    import logging
    import sys

    if level.lower() not in ("info", "debug"):
        return
    logger = logging.getLogger("agentlake.learn")
    logger.setLevel(logging.INFO)
    if not any(getattr(handler, "_agentlake", False) for handler in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
        handler._agentlake = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
