"""A file's sha256, read in chunks, is the sha256 of its bytes."""

from __future__ import annotations

import hashlib
from pathlib import Path

from agentlake.checksum import CHUNK, file_sha256


def test_a_file_of_several_chunks_has_the_sha256_of_its_bytes(tmp_path: Path) -> None:
    data = bytes(range(256)) * (2 * CHUNK // 256 + 3)
    path = tmp_path / "blob"
    path.write_bytes(data)
    assert file_sha256(path) == hashlib.sha256(data).hexdigest()


def test_an_empty_file_has_the_sha256_of_nothing(tmp_path: Path) -> None:
    path = tmp_path / "empty"
    path.write_bytes(b"")
    assert file_sha256(path) == hashlib.sha256(b"").hexdigest()
