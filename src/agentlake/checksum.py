"""The sha256 of a file, read a few MiB at a time.

How agentlake checks a file against a pinned or recorded digest: a packaged model's chunks and
GGUF (``llm.packaged``), an exported embedding model and the weights it was made from
(``embed.openvino``), a question pack's datasets (``questions.pack``). It owns no pin and does
not decide what a mismatch means; its callers do.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

# Large enough that hashing runs at hashlib's speed, small enough to hold for any file.
CHUNK = 4 * 1024 * 1024


def file_sha256(path: Path) -> str:
    """The hex sha256 of the file at ``path``; ``OSError`` where it cannot be read."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()
