"""Running `agentlake serve` as users do, for the tests that need a real server process: a free
loopback port, a clean environment for one data dir, and the server started and stopped."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

AGENTLAKE = str(Path(sys.executable).with_name("agentlake"))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def clean_env(data_dir: Path, **extra: str) -> dict[str, str]:
    """This environment without AGENTLAKE_* settings, pointed at ``data_dir``, offline."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTLAKE_")}
    return (
        env
        | {
            "AGENTLAKE_DATA_DIR": str(data_dir),
            "HF_HUB_OFFLINE": "1",
            "OLLAMA_HOST": "http://127.0.0.1:9",
            "AGENTLAKE_OTLP_GRPC_PORT": "0",
        }
        | extra
    )


@contextmanager
def running_server(
    data_dir: Path, log_path: Path, *args: str, **env: str
) -> Iterator[tuple[str, subprocess.Popen]]:
    """`agentlake serve` on a free loopback port until the block ends; yields (url, process)."""
    port = free_port()
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [AGENTLAKE, "serve", "--port", str(port), "--log-level", "warning", *args],
            env=clean_env(data_dir, **env),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if process.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"the server did not start:\n{log_path.read_text()}")
                time.sleep(0.2)
            yield url, process
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
