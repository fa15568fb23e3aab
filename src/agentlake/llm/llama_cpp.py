"""llama-cpp-python (the ``local-llm`` extra), as both things that run on it use it: the
``llamacpp:`` provider (``gguf_completion``) and the llama.cpp engine of ``local:`` models
(``local/engines/llamacpp.py``).

Owns importing it, with the one line that installs it when it is missing (``import_llama_cpp``;
never part of the default install, imported on first use), and silencing its loader's notices
(``quiet_stderr``). It owns no model, prompt or decoding.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

from agentlake.errors import UserError

INSTALL_HINT = (
    "run `make local-llm` (it builds llama-cpp-python with the CPU flags this project needs), "
    "or: pip install 'agentlake[local-llm]'"
)


def import_llama_cpp() -> Any:
    """The ``llama_cpp`` module; ``UserError`` with the install line when it is not installed."""
    try:
        import llama_cpp
    except ImportError:
        raise UserError(
            f"the llamacpp provider needs llama-cpp-python, which is not installed: {INSTALL_HINT}"
        ) from None
    return llama_cpp


@contextlib.contextmanager
def quiet_stderr() -> Iterator[None]:
    """Silence file descriptor 2 while llama.cpp loads a model: ggml prints notices there
    ("using full-size SWA cache") that ``verbose=False`` does not reach. The trap: it silences
    every thread's stderr for that second; a load failure still raises normally."""
    try:
        saved = os.dup(2)
    except OSError:  # no usable stderr to silence
        yield
        return
    try:
        with open(os.devnull, "wb") as devnull:
            os.dup2(devnull.fileno(), 2)
            try:
                yield
            finally:
                os.dup2(saved, 2)
    finally:
        os.close(saved)
