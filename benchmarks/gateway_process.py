"""A gateway (``agentlake serve``) started by a benchmark in a child process on 127.0.0.1.

Owns what bench_rate_limit, bench_pg_writers and bench_pg_restart each did alike: the
``agentlake`` executable beside this Python, a free port, an environment without the caller's
``AGENTLAKE_*`` settings (a benchmark names its own), and the wait until ``GET /health``
answers. It does not own what a benchmark sends, nor stopping the process (the caller does, so
that a benchmark which kills its gateway on purpose keeps doing so).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def clean_env(settings: dict[str, str]) -> dict[str, str]:
    """This process's environment without any ``AGENTLAKE_*`` variable, plus ``settings``."""
    return {k: v for k, v in os.environ.items() if not k.startswith("AGENTLAKE_")} | settings


def store_env(data_dir: Path, database_url: str) -> dict[str, str]:
    """The environment of a gateway storing into ``database_url`` under ``data_dir``, with no
    rate limit (the store is measured, not the gateway's limits) and no OTLP port."""
    return clean_env(
        {
            "AGENTLAKE_DATA_DIR": str(data_dir),
            "AGENTLAKE_CONFIG": str(data_dir / "none.toml"),
            "AGENTLAKE_DATABASE_URL": database_url,
            "AGENTLAKE_OTLP_GRPC_PORT": "0",
            "AGENTLAKE_RATE_LIMIT_PER_MINUTE": "0",
            "AGENTLAKE_RATE_LIMIT_WRITE_PER_MINUTE": "0",
            "HF_HUB_OFFLINE": "1",
        }
    )


def start_gateway(env: dict[str, str], log: IO[str], wait_s: float = 90) -> tuple[str, subprocess.Popen]:
    """``agentlake serve`` on a free port with ``env``, its output into ``log``: the base URL and
    the process once ``GET /health`` answers 200; ``SystemExit`` naming the log if the process
    ends or ``wait_s`` passes first (the process is then terminated)."""
    exe = shutil.which("agentlake", path=str(Path(sys.executable).parent)) or "agentlake"
    port = free_port()
    process = subprocess.Popen(
        [exe, "serve", "--port", str(port), "--log-level", "warning"], env=env, stdout=log, stderr=log
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + wait_s
    while True:
        try:
            if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                return base, process
        except httpx.TransportError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            if process.poll() is None:
                process.terminate()
                process.wait(30)
            raise SystemExit(f"the gateway on {base} did not start; see {log.name}")
        time.sleep(0.2)
