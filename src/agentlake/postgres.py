"""PostgreSQL under the op store and the lesson store (the setting ``database_url``).

Owns what both stores share when they live in PostgreSQL instead of their DuckDB files:
connecting (a ``psycopg_pool`` pool per store; an unreachable server is one ``UserError`` line
naming the host and the setting, raised before anything is written), the bridge that lets a
store keep one text of its SQL for both backends (``?`` placeholders, DuckDB's calling shape:
``execute(...).fetchall()``), named add-only migrations recorded per store, and
:class:`LocalCluster`, a throwaway server in a temporary directory for tests and benchmarks.
It owns no schema: each store declares its own PostgreSQL migrations beside its DuckDB ones.

An outage (the server stopped, restarting, unreachable, out of disk or connections) is told
apart from a failed statement (:func:`outage`): a transaction that meets one raises
``UnavailableError`` (503, retry), any other failure ``RunError``. The pool hands out only
connections that answer, and reconnects on demand once the server is back.

psycopg and psycopg_pool load only when a URL is set (start-up time of every other command).
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentlake.errors import RunError, UnavailableError, UserError, require_extra

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

    from agentlake.migrations import Migration

SETTING = "database_url (AGENTLAKE_DATABASE_URL)"
CONNECT_TIMEOUT_S = 5
# How long a statement waits for a pooled connection before the database counts as unavailable.
POOL_WAIT_S = 5.0
# How long the pool keeps reconnecting in the background after losing a connection. psycopg_pool
# backs off 1, 2, 4 ... s up to this; past it the pool reconnects when a statement asks, so a
# server back after a long outage is used at once instead of at the next, far-off attempt.
RECONNECT_S = 5.0
# SQLSTATE classes of an outage: 08 connection exception, 53 insufficient resources (disk full,
# out of memory, too many connections), 57P0x the server shutting down or starting up.
_OUTAGE_STATES = ("08", "53", "57P01", "57P02", "57P03")


def where(url: str) -> str:
    """``host:port/dbname`` of ``url``, never its user or password (for messages)."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        parts = conninfo_to_dict(url)
    except Exception:  # a malformed URL: say nothing of its contents
        return "the configured database"
    host = parts.get("host") or parts.get("hostaddr") or "localhost"
    return f"{host}:{parts.get('port') or 5432}/{parts.get('dbname') or ''}"


@functools.lru_cache(maxsize=512)
def qmarks(sql: str) -> str:
    """``sql`` with DuckDB's ``?`` placeholders as psycopg's ``%s`` (a literal ``%`` doubled).

    The stores' SQL never holds a ``?`` inside a string literal: values travel as parameters.
    """
    return sql.replace("%", "%%").replace("?", "%s")


def _reason(exc: Exception) -> str:
    """The cause in a libpq connection error, without its hints: "Connection refused"."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()] or ["no answer"]
    return lines[0].rpartition("failed: ")[2] or lines[0]


def outage(exc: BaseException) -> str | None:
    """Why the server cannot take work right now (one line), when ``exc`` says so: the
    connection refused, lost or timed out, the server shutting down or starting up, its disk
    or connections exhausted. ``None`` for a failure of the statement itself (bad data, a
    constraint), which retrying would not cure."""
    import psycopg
    from psycopg_pool import PoolTimeout

    if isinstance(exc, PoolTimeout):
        return f"no connection within {POOL_WAIT_S:g} s"
    if not isinstance(exc, psycopg.OperationalError):
        return None
    state = getattr(exc, "sqlstate", None)
    if state is None or state.startswith(_OUTAGE_STATES):
        # No SQLSTATE: libpq's own failure (refused, reset, closed): the connection is gone.
        return _reason(exc)
    return None


class Rows:
    """Rows fetched by :meth:`Database.execute`, read the way a DuckDB result is."""

    def __init__(self, rows: list[tuple[Any, ...]]) -> None:
        self._rows = rows

    def fetchall(self) -> list[tuple[Any, ...]]:
        return self._rows

    def fetchone(self) -> tuple[Any, ...] | None:
        return self._rows[0] if self._rows else None


class Session:
    """One connection inside one transaction, with the ``?`` bridge (see :meth:`Database.transaction`)."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self.conn = conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Rows:
        cur = self.conn.execute(qmarks(sql), list(params) or None)
        return Rows(cur.fetchall() if cur.description is not None else [])


class Database:
    """A PostgreSQL database reached through a pool; ``name`` says whose it is in messages.

    Opening checks the server first (one connection, ``CONNECT_TIMEOUT_S``): an unreachable or
    refusing server raises ``UserError`` naming the host and the setting. Failures later (the
    server went away mid-run) raise ``RunError`` naming the statement's store.
    """

    def __init__(self, url: str, *, name: str, max_size: int = 4, schema: str | None = None) -> None:
        require_extra("postgres", "the PostgreSQL backend of database_url", "psycopg", "psycopg_pool")
        import psycopg
        from psycopg_pool import ConnectionPool

        self.url = url
        self.name = name
        self.where = where(url)
        # ``schema``: every connection's search_path, so a store's unqualified SQL (and its
        # migrations table) lives in that schema; the caller creates it and checks its name.
        extra = {"options": f"-c search_path={schema}"} if schema else {}
        try:
            with psycopg.connect(url, connect_timeout=CONNECT_TIMEOUT_S):
                pass
        except psycopg.Error as exc:
            raise UserError(
                f"cannot reach PostgreSQL at {self.where} for {name} ({_reason(exc)}); check {SETTING}"
            ) from None
        self._kwargs: dict[str, Any] = {"connect_timeout": CONNECT_TIMEOUT_S, **extra}
        self.pool: ConnectionPool = ConnectionPool(
            url,
            min_size=1,
            max_size=max_size,
            kwargs=self._kwargs,
            open=True,
            name=name,
            timeout=POOL_WAIT_S,
            reconnect_timeout=RECONNECT_S,
        )

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Rows:
        """Run one statement in its own transaction; rows it returns, if any."""
        with self.transaction() as session:
            return session.execute(sql, params)

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        """A pooled connection in one transaction: committed when the block ends, rolled back
        if it raises. An outage (:func:`outage`) becomes ``UnavailableError`` (503), any other
        psycopg error ``RunError``, each naming the store."""
        import psycopg

        try:
            with self.pool.connection() as conn, conn.transaction():
                yield Session(conn)
        except psycopg.Error as exc:
            reason = outage(exc)
            if reason is None:
                raise RunError(f"{self.name} at {self.where} failed: {exc}".strip()) from exc
            # The pool's other idle connections died with this one: drop them now, so the
            # statements after this one get connections that answer.
            self._check_idle()
            raise UnavailableError(self.unavailable(reason), retry_after=1.0) from exc

    def unavailable(self, reason: str) -> str:
        """The one line for an outage of this database."""
        return f"PostgreSQL at {self.where} is unavailable to {self.name} ({reason}); retry shortly"

    def _check_idle(self) -> None:
        try:
            self.pool.check()
        except Exception:  # the pool replaces what failed; this only hurries it
            logging.getLogger(__name__).debug("pool check failed", exc_info=True)

    def connect(self) -> psycopg.Connection:
        """A connection of its own, outside the pool (a writer that keeps one), with the pool's
        options. An outage raises ``UnavailableError``; the caller closes the connection."""
        import psycopg

        try:
            return psycopg.connect(self.url, **self._kwargs)
        except psycopg.Error as exc:
            raise UnavailableError(self.unavailable(outage(exc) or _reason(exc)), retry_after=1.0) from exc

    def close(self) -> None:
        self.pool.close()


def apply_pg_migrations(db: Database, store: str, migrations: Sequence[Migration]) -> list[str]:
    """Apply ``store``'s migrations not yet recorded in ``agentlake_migrations``, in order.

    All in one transaction under an advisory lock, so two processes starting at once migrate
    once. Returns the names applied now. A recorded name this code does not know means a newer
    agentlake wrote the schema: ``UserError`` (refused, nothing changed).
    """
    names = [migration.name for migration in migrations]
    if len(set(names)) != len(names):
        raise RunError(f"duplicate migration names in {names}")
    applied: list[str] = []
    with db.transaction() as session:
        session.execute("SELECT pg_advisory_xact_lock(hashtext('agentlake_migrations'))")
        session.execute(
            "CREATE TABLE IF NOT EXISTS agentlake_migrations (store VARCHAR NOT NULL, name VARCHAR NOT NULL, "
            "applied_at TIMESTAMPTZ NOT NULL DEFAULT now(), PRIMARY KEY (store, name))"
        )
        done = {
            row[0]
            for row in session.execute(
                "SELECT name FROM agentlake_migrations WHERE store = ?", [store]
            ).fetchall()
        }
        unknown = sorted(done - set(names))
        if unknown:
            raise UserError(
                f"the {store} schema in PostgreSQL at {db.where} has migrations {unknown} unknown to this "
                "agentlake version (a newer one wrote it); upgrade agentlake"
            )
        for migration in migrations:
            if migration.name in done:
                continue
            session.conn.execute(migration.sql)
            session.execute(
                "INSERT INTO agentlake_migrations (store, name) VALUES (?, ?)", [store, migration.name]
            )
            applied.append(migration.name)
    return applied


# --- a throwaway server (tests, benchmarks) ---------------------------------------------------


def server_binaries() -> Path | None:
    """The directory of Debian's PostgreSQL server programs (initdb, pg_ctl), or ``None``."""
    found = shutil.which("pg_ctl")
    if found and Path(found).resolve().with_name("initdb").exists():
        return Path(found).resolve().parent
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"), key=lambda p: p.parent.parent.name)
    return versions[-1].parent if versions else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class LocalCluster:
    """A PostgreSQL cluster initdb'd in a temporary directory, listening on 127.0.0.1 only.

    PostgreSQL refuses to run as root: as root the cluster runs as ``run_as`` (Debian's package
    creates ``postgres``), owning the directory. Authentication is ``trust`` on the loopback:
    for tests and benchmarks, never for data. ``fsync=False`` trades crash safety of the
    cluster itself (never tested here) for speed; commits are still acknowledged only after
    they are committed. Use as a context manager; :meth:`create_database` gives each test its own.
    """

    fsync: bool = True
    run_as: str = "postgres"

    def __enter__(self) -> LocalCluster:
        binaries = server_binaries()
        if binaries is None:
            raise UserError("PostgreSQL's server programs are not installed; run `make postgres`")
        self.bin = binaries
        self.dir = Path(tempfile.mkdtemp(prefix="agentlake-pg-"))
        self.port = _free_port()
        self._user = self.run_as if os.geteuid() == 0 else None
        if self._user is not None:
            shutil.chown(self.dir, self._user)
        self._run("initdb", "-D", str(self.dir / "data"), "-U", "agentlake", "--auth=trust", "-E", "UTF8",
                  "--no-sync")  # fmt: skip
        self.start()
        self.url = f"postgresql://agentlake@127.0.0.1:{self.port}/postgres"
        self._count = 0
        return self

    def start(self) -> None:
        """Start the server (again, after :meth:`stop`: same port, same data); returns once it
        accepts connections."""
        options = (
            f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.dir} -c fsync={'on' if self.fsync else 'off'} "
            "-c max_connections=200"
        )
        self._run("pg_ctl", "-D", str(self.dir / "data"), "-l", str(self.dir / "server.log"), "-o", options,
                  "-w", "-t", "60", "start")  # fmt: skip

    def stop(self, mode: str = "fast") -> None:
        """Stop the server as an operator would: ``fast`` ends every session (their transactions
        roll back) and shuts down cleanly; ``immediate`` ends at once, like a crash, and the
        next start recovers from the write-ahead log."""
        self._run("pg_ctl", "-D", str(self.dir / "data"), "-m", mode, "-w", "stop")

    def _run(self, program: str, *args: str) -> None:
        done = subprocess.run(
            [str(self.bin / program), *args],
            capture_output=True,
            text=True,
            timeout=120,
            user=self._user,
            cwd=self.dir,
        )
        if done.returncode != 0:
            log = self.dir / "server.log"
            tail = log.read_text()[-2000:] if log.exists() else ""
            raise RunError(f"{program} failed ({done.returncode}): {done.stderr.strip()}\n{tail}")

    def create_database(self, name: str | None = None) -> str:
        """A new empty database; returns its URL."""
        import psycopg

        self._count += 1
        name = name or f"db{self._count}"
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return f"postgresql://agentlake@127.0.0.1:{self.port}/{name}"

    def __exit__(self, *exc: object) -> None:
        try:
            if (self.dir / "data" / "postmaster.pid").exists():
                self.stop("immediate")
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)
