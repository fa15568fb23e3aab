"""What an engine of ``local:`` models is, and what every engine uses while it loads.

Owns the ``Engine`` contract (one loaded model: tokenize, evaluate tokens into a KV-cache slot
and return logits, evaluate the passes of several sequences at once (``Pass``), add a slot),
the memory check made before loading (``check_memory``, the KV cache's
size per token), the model's tokenizer converted from the GGUF once and kept in the model cache
(``load_tokenizer``), the engines' thread count and the progress line of a long load. It does
not own an engine (``engines/``), which engine runs a model (``engines``) nor decoding
(``decoder``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from agentlake.checksum import file_sha256
from agentlake.errors import UserError
from agentlake.llm.packaged import (
    GGUFInfo,
    PackagedModel,
    cache_dir,
    remember_verified,
    verify_file,
)

if TYPE_CHECKING:
    from pathlib import Path

    from agentlake.llm.local.decoder import Decoder
    from agentlake.settings import Settings

GIB = 1024**3


class Pass(NamedTuple):
    """One forward pass of one sequence: ``tokens`` appended to KV-cache slot ``slot`` after
    cutting it to ``keep`` tokens, the logits of the last ``rows`` of them wanted."""

    slot: int
    keep: int
    tokens: Sequence[int]
    rows: int = 1


class Engine(Protocol):
    """One loaded model. Slots are independent KV caches; ``evaluate`` appends ``tokens`` to
    slot ``slot`` after cutting it to ``keep`` tokens, and returns the logits of the last one
    (a 1-D float32 torch tensor over the vocabulary), or of the last ``rows`` ones (a
    ``[rows, vocabulary]`` tensor) where the engine ``verifies_drafts``. ``evaluate_batch``
    does the passes of several sequences, each into its own slot, and returns what
    ``evaluate`` would for each (an engine that cannot batch runs them one after another);
    ``add_slot`` makes one more empty slot and returns its index (each sequence decoding at
    the same time needs its own); ``copy_prefix`` makes slot ``target`` hold the first
    ``length`` tokens of slot ``source`` and returns True, or False where it cannot (then the
    tokens are evaluated again)."""

    name: str
    vocab_size: int
    tokenizer: Any  # a transformers tokenizer: the grammar needs its vocabulary
    decoder: Decoder  # the decoding loop over this engine, made by the engine on load
    verifies_drafts: bool  # whether ``evaluate`` gives logits for more than the last token

    def tokenize(self, text: str) -> list[int]: ...

    def evaluate(self, slot: int, keep: int, tokens: Sequence[int], rows: int = 1) -> Any: ...

    def evaluate_batch(self, passes: Sequence[Pass]) -> list[Any]: ...

    def add_slot(self) -> int: ...

    def copy_prefix(self, source: int, target: int, length: int) -> bool: ...


# --- memory --------------------------------------------------------------------------------------


def available_memory() -> int | None:
    """Bytes the system can give a new allocation without swapping (Linux ``MemAvailable``)."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def check_memory(what: str, needed: int) -> None:
    """``UserError`` before loading when the machine has less free memory than ``needed``."""
    free = available_memory()
    if free is not None and free < needed:
        raise UserError(
            f"not enough memory for {what}: it needs about {needed / GIB:.1f} GiB, {free / GIB:.1f} GiB is available; "
            "close other programs, use local:qwen2.5-coder-0.5b, or lower local_context_window (AGENTLAKE_LOCAL_CONTEXT_WINDOW)"
        )


def kv_bytes_per_token(info: GGUFInfo, element_bytes: int) -> int:
    head_dim = info.embedding_length // max(1, info.head_count)
    return 2 * info.block_count * info.head_count_kv * head_dim * element_bytes


# --- the tokenizer, converted from the GGUF once ------------------------------------------------------

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")


def load_tokenizer(packaged: PackagedModel, gguf: Path, settings: Settings) -> Any:
    """The model's tokenizer as a transformers tokenizer (the grammar and the decoding loop
    need its vocabulary), converted from the GGUF's once and kept in the model cache under
    verified hashes; a cache that changed is converted again."""
    import transformers

    directory = cache_dir(settings) / f"{packaged.name}-tokenizer"
    manifest_path = directory / "manifest.json"
    try:
        manifest = json.loads(manifest_path.read_text("utf-8"))
        if manifest.get("gguf_sha256") != packaged.sha256:
            raise ValueError("made from another GGUF")
        for name in TOKENIZER_FILES:
            size, sha256 = manifest["files"][name]
            verify_file(
                directory / name, int(size), str(sha256), what="tokenizer cache", fix="converted again"
            )
        return transformers.AutoTokenizer.from_pretrained(str(directory))
    except (OSError, ValueError, KeyError, TypeError, UserError):
        pass
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    directory.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(str(directory))
    files = {
        name: (os.path.getsize(directory / name), file_sha256(directory / name)) for name in TOKENIZER_FILES
    }
    manifest_path.write_text(json.dumps({"gguf_sha256": packaged.sha256, "files": files}), "utf-8")
    for name, (_, sha256) in files.items():
        remember_verified(directory / name, sha256)
    return tokenizer


# --- loading ------------------------------------------------------------------------------------------


def threads(settings: Settings) -> int:
    """Threads for the engines: ``local_threads``, or every core."""
    return settings.local_threads or os.cpu_count() or 1


def progress_printer(what: str) -> Callable[[str], None]:
    """A one-line-per-step progress report on stderr for long loads."""
    import sys

    def show(step: str) -> None:
        print(f"{what}: {step}", file=sys.stderr, flush=True)

    return show
