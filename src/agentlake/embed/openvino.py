"""The local embedder's OpenVINO engine: a sentence-transformers model exported once to ONNX, run by OpenVINO.

Owns two things. Exporting: the model's transformer and its mean pooling, traced by torch into
one ONNX file under the model cache (``model_cache_dir``/embed), once per set of weights, beside
a manifest of the sha256 of the weights it was made from and of the file itself; every load
verifies both, and a file that changed, or was made from other weights, is exported again.
Running: the model's own tokenizer (``tokenizer.json``), texts grouped by length so batches pad
little, OpenVINO's CPU plugin in bfloat16 where the CPU has it natively (AMX, AVX512-BF16), else
float32. It does not choose the backend nor name the vectors (``agentlake.embed.local``), and it
never downloads anything: the weights are the installed package's (or the user's directory).

Only models made of a transformer, mean pooling and (optionally) normalisation are exported;
any other sentence-transformers model runs on torch.

The trap: ``import openvino`` imports its model converter (ovc), which sends a usage event to
Google Analytics on every import unless the user opted out. agentlake sends nothing anywhere, so
:func:`import_openvino` imports it without its telemetry package, as if it were not installed:
ovc then takes its own stub. ONNX is read by the runtime (``Core.read_model``), never by ovc.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import sys
import tempfile
import threading
import warnings
from collections import deque
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from agentlake.checksum import file_sha256
from agentlake.errors import RunError, UserError, require_extra

# The ``embed`` extra installs them: the runtime, and the ONNX package torch's exporter writes with.
OPENVINO_MODULES = ("openvino", "onnx", "tokenizers")
MANIFEST = "manifest.json"
ONNX_FILE = "model.onnx"
# Bumped when the exported graph changes, so caches made by older code are exported again.
EXPORT_FORMAT = 1
_SUPPORTED_MODULES = (
    "sentence_transformers.models.Transformer",
    "sentence_transformers.models.Pooling",
    "sentence_transformers.models.Normalize",
)
_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
_export_lock = threading.Lock()


def padded_batches(
    encodings: Sequence[Any], pad_id: int, batch_size: int
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """``(rows, input_ids, attention_mask)`` of tokenizer ``encodings``, a batch at a time,
    longest first and each batch padded to its longest (little padding); ``rows`` are the
    encodings' indexes, so a caller puts each batch's vectors back in order."""
    lengths = np.array([len(e.ids) for e in encodings])
    order = np.argsort(-lengths, kind="stable")
    for start in range(0, len(order), batch_size):
        rows = order[start : start + batch_size]
        width = int(lengths[rows[0]])
        ids = np.full((len(rows), width), pad_id, dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for i, row in enumerate(rows):
            ids[i, : lengths[row]] = encodings[row].ids
            mask[i, : lengths[row]] = 1
        yield rows, ids, mask


def _weights(source: Path) -> Path:
    for name in _WEIGHT_FILES:
        if (source / name).is_file():
            return source / name
    raise UserError(
        f"no weights ({' or '.join(_WEIGHT_FILES)}) in {source}: the openvino backend exports from them"
    )


def check_exportable(source: Path) -> None:
    """``UserError`` unless ``source`` is a transformer + mean pooling (+ normalise) model with a ``tokenizer.json``."""
    fix = "set embed_backend to torch (AGENTLAKE_EMBED_BACKEND=torch)"
    try:
        modules = json.loads((source / "modules.json").read_text("utf-8"))
        types = [module["type"] for module in modules]
        pooling_dir = next(m["path"] for m in modules if m["type"].endswith(".Pooling"))
        pooling = json.loads((source / pooling_dir / "config.json").read_text("utf-8"))
    except (OSError, ValueError, KeyError, StopIteration) as exc:
        raise UserError(f"cannot read the modules of {source} ({exc}); {fix}") from exc
    means_only = pooling.get("pooling_mode_mean_tokens") and not any(
        value
        for key, value in pooling.items()
        if key.startswith("pooling_mode_") and key != "pooling_mode_mean_tokens"
    )
    if (
        types[:2] != list(_SUPPORTED_MODULES[:2])
        or types[2:] not in ([], [_SUPPORTED_MODULES[2]])
        or not means_only
    ):
        raise UserError(
            f"the openvino backend runs models made of a transformer, mean pooling and normalisation; {source} is "
            f"{' + '.join(t.rsplit('.', 1)[-1] for t in types)}: {fix}"
        )
    if not (source / "tokenizer.json").is_file():
        raise UserError(f"{source} has no tokenizer.json, which the openvino backend reads: {fix}")


def verified_export(source: Path, cache: Path, label: str) -> Path:
    """The ONNX file of ``source``'s model, exported now unless the cache holds a verified one.

    Verified means: the manifest names the weights' sha256 and this code's export format, and
    the file's size and sha256 match it. Exporting loads the model with torch (seconds, once);
    ``RunError`` if it fails.
    """
    check_exportable(source)
    weights_sha = file_sha256(_weights(source))
    directory = cache / "embed" / f"{label}-{weights_sha[:16]}-onnx"
    with _export_lock:
        if _is_verified(directory, weights_sha):
            return directory / ONNX_FILE
        _export(source, directory, weights_sha)
    return directory / ONNX_FILE


def _is_verified(directory: Path, weights_sha: str) -> bool:
    try:
        manifest = json.loads((directory / MANIFEST).read_text("utf-8"))
        size, sha256 = manifest["files"][ONNX_FILE]
        path = directory / ONNX_FILE
        return (
            manifest.get("format") == EXPORT_FORMAT
            and manifest.get("weights_sha256") == weights_sha
            and path.stat().st_size == int(size)
            and file_sha256(path) == sha256
        )
    except (OSError, ValueError, KeyError, TypeError):
        return False


def _export(source: Path, directory: Path, weights_sha: str) -> None:
    """Export into a temporary directory beside ``directory``, then move it into place."""
    directory.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".export-", dir=directory.parent))
    try:
        _trace_to_onnx(source, staging / ONNX_FILE)
        path = staging / ONNX_FILE
        manifest = {
            "format": EXPORT_FORMAT,
            "source": str(source),
            "weights_sha256": weights_sha,
            "files": {ONNX_FILE: [path.stat().st_size, file_sha256(path)]},
        }
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=1), "utf-8")
        if directory.exists():
            shutil.rmtree(directory)
        os.replace(staging, directory)
    except OSError as exc:
        raise RunError(f"writing the ONNX export of {source} into {directory} failed: {exc}") from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _trace_to_onnx(source: Path, target: Path) -> None:
    import torch
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()

    class MeanPooled(torch.nn.Module):
        """The transformer's token vectors averaged over the real tokens (what Pooling does)."""

        def __init__(self, transformer: Any) -> None:
            super().__init__()
            self.transformer = transformer

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            tokens = self.transformer(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(tokens.dtype)
            return (tokens * mask).sum(1) / mask.sum(1).clamp(min=1e-9)

    try:
        model = SentenceTransformer(str(source), device="cpu", local_files_only=True)
        pooled = MeanPooled(model[0].auto_model).eval()
        # A padded sample: a mask of ones only could be traced as "no mask".
        ids = torch.ones((2, 8), dtype=torch.long)
        mask = torch.tensor([[1] * 8, [1] * 5 + [0] * 3], dtype=torch.long)
        axes = {"input_ids": {0: "batch", 1: "tokens"}, "attention_mask": {0: "batch", 1: "tokens"}}
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the tracer's warnings about shapes it keeps dynamic
            torch.onnx.export(
                pooled,
                (ids, mask),
                str(target),
                input_names=["input_ids", "attention_mask"],
                output_names=["sentence_embedding"],
                dynamic_axes={**axes, "sentence_embedding": {0: "batch"}},
                opset_version=17,
                dynamo=False,
            )
    except Exception as exc:  # torch's exporter fails in many types
        raise RunError(
            f"exporting the embedding model {source} to ONNX failed: {exc}; set embed_backend to torch "
            "(AGENTLAKE_EMBED_BACKEND=torch) to run it without the export"
        ) from exc


def import_openvino() -> Any:
    """``openvino``, imported without its usage telemetry (see the module's docstring)."""
    if "openvino" not in sys.modules and "openvino_telemetry" not in sys.modules:
        # None in sys.modules makes the import fail: ovc falls back to its telemetry stub.
        sys.modules["openvino_telemetry"] = None  # type: ignore[assignment]
    import openvino

    return openvino


@functools.cache
def bf16_supported() -> bool:
    """Whether OpenVINO's CPU plugin runs bfloat16 natively here (AMX or AVX512-BF16)."""
    ov = import_openvino()

    return "BF16" in ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")


class OpenVinoModel:
    """An exported model compiled for the CPU, one stream per core; :meth:`pooled` is thread-safe."""

    def __init__(self, onnx_path: Path, source: Path, *, precision: Literal["fp32", "bf16"]) -> None:
        from tokenizers import Tokenizer

        ov = import_openvino()
        config = json.loads((source / "sentence_bert_config.json").read_text("utf-8"))
        self.tokenizer = Tokenizer.from_file(str(source / "tokenizer.json"))
        padding = self.tokenizer.padding
        self.pad_id = int(padding["pad_id"]) if padding else 0
        # Batches are padded here, to their longest text, as sentence-transformers pads them.
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(int(config.get("max_seq_length", 512)))
        core = ov.Core()
        try:
            self.compiled = core.compile_model(
                core.read_model(str(onnx_path)),
                "CPU",
                {
                    "INFERENCE_PRECISION_HINT": "bf16" if precision == "bf16" else "f32",
                    # One stream per core, each a batch at a time: ~1.3x the docs/s of every core on
                    # one batch (LATENCY) on 2 cores (benchmarks/bench_embed.py).
                    "PERFORMANCE_HINT": "THROUGHPUT",
                },
            )
            self.streams = max(1, int(self.compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS")))
        except RuntimeError as exc:
            raise RunError(f"OpenVINO could not compile {onnx_path}: {exc}") from exc
        self.dimension = int(self.compiled.output(0).get_partial_shape()[1].get_length())
        self._idle: list[Any] = []
        self._lock = threading.Lock()

    def pooled(self, texts: Sequence[str], batch_size: int) -> np.ndarray:
        """Mean-pooled vectors of ``texts`` (float32, not normalised), in order.

        Batches go to the streams as they free up: one request per stream is in flight at a time.
        """
        encodings = self.tokenizer.encode_batch(list(texts), add_special_tokens=True)
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        free = self._take()
        in_flight: deque[tuple[Any, np.ndarray]] = deque()

        def land() -> None:
            request, rows = in_flight.popleft()
            try:
                request.wait()
                out[rows] = request.get_output_tensor(0).data
            finally:
                free.append(request)

        try:
            for rows, ids, mask in padded_batches(encodings, self.pad_id, batch_size):
                if not free:
                    land()
                request = free.pop()
                request.start_async({"input_ids": ids, "attention_mask": mask})
                in_flight.append((request, rows))
            while in_flight:
                land()
        finally:
            for request, _ in in_flight:  # after a failure: let the others finish before reuse
                with contextlib.suppress(RuntimeError):
                    request.wait()
                free.append(request)
            with self._lock:
                self._idle.extend(free)
        return out

    def _take(self) -> list[Any]:
        """One infer request per stream, reused across calls (each call holds its own)."""
        with self._lock:
            taken = self._idle[: self.streams]
            del self._idle[: self.streams]
        return taken + [self.compiled.create_infer_request() for _ in range(self.streams - len(taken))]


def load_openvino(source: Path, cache: Path, label: str, precision: Literal["fp32", "bf16"]) -> OpenVinoModel:
    """Export (once) and compile ``source``'s model; ``UserError`` when OpenVINO is not installed."""
    require_extra("embed", f"the openvino backend of local:{label}", *OPENVINO_MODULES)
    return OpenVinoModel(verified_export(source, cache, label), source, precision=precision)
