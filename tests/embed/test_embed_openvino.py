"""The OpenVINO backend of the offline embedder: the export in the model cache, and its vectors."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from agentlake.embed import get_embedder
from agentlake.embed.local import LocalEmbedder, packaged_model_path
from agentlake.embed.openvino import MANIFEST, ONNX_FILE, check_exportable, verified_export
from agentlake.errors import UserError
from agentlake.settings import load_settings

# Not importorskip: importing openvino by hand would send its usage event (import_openvino does not).
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("openvino") is None, reason="openvino is not installed"
)

TEXTS = [
    "Certified welder, AWS D1.1, MIG and TIG on structural steel.",
    "Registered nurse with ten years in a hospital ICU.",
    "",
    "Forklift operator " * 120,  # past the model's 256 tokens: truncated alike
]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("model-cache")


@pytest.fixture(scope="module")
def openvino(cache: Path) -> LocalEmbedder:
    embedder = LocalEmbedder(backend="openvino", cache_dir=cache)
    # Exported into this module's cache (the process may have compiled the model from another).
    verified_export(embedder.path, cache, embedder.label)
    embedder.embed(["warm up"])
    return embedder


def test_openvino_vectors_share_the_torch_vectors_name(openvino: LocalEmbedder) -> None:
    torch_vectors = LocalEmbedder(backend="torch", precision="fp32").embed(TEXTS)
    cosines = np.sum(openvino.embed(TEXTS) * torch_vectors, axis=1)
    # Close enough to share a name and a cache (agentlake.embed.cache): bf16 autocast is as close.
    assert float(cosines.min()) > 0.999
    assert openvino.name == "local:all-MiniLM-L6-v2"


def test_a_vector_does_not_depend_on_its_batch(openvino: LocalEmbedder) -> None:
    together = openvino.embed(TEXTS)
    alone = openvino.embed([TEXTS[1]])
    np.testing.assert_allclose(alone[0], together[1], atol=2e-3)


def test_vectors_are_unit_float32_in_order(openvino: LocalEmbedder) -> None:
    vectors = openvino.embed(TEXTS)
    assert vectors.dtype == np.float32
    assert vectors.shape == (len(TEXTS), 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_the_export_is_kept_with_a_manifest_of_hashes(openvino: LocalEmbedder, cache: Path) -> None:
    (directory,) = (cache / "embed").iterdir()
    manifest = json.loads((directory / MANIFEST).read_text())
    assert manifest["files"][ONNX_FILE][0] == (directory / ONNX_FILE).stat().st_size


def test_a_changed_export_is_made_again(openvino: LocalEmbedder, cache: Path) -> None:
    path = verified_export(packaged_model_path(), cache, openvino.label)
    with path.open("r+b") as handle:  # same size, other bytes
        handle.seek(-16, 2)
        handle.write(b"\0" * 16)
    tampered = path.read_bytes()[-16:]
    again = verified_export(packaged_model_path(), cache, openvino.label)
    assert again.read_bytes()[-16:] != tampered


def test_the_default_backend_is_openvino_when_installed() -> None:
    assert LocalEmbedder().backend == "openvino"


def test_the_setting_chooses_the_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTLAKE_EMBED_BACKEND", "torch")
    embedder = get_embedder(None, load_settings())
    assert isinstance(embedder, LocalEmbedder)
    assert embedder.backend == "torch"


def test_an_unknown_backend_names_the_known_ones() -> None:
    with pytest.raises(UserError, match="auto, torch, openvino"):
        LocalEmbedder(backend="onnx")


@pytest.fixture
def cls_pooled(tmp_path: Path) -> Path:
    """A model directory whose pooling takes the CLS token (only its module files)."""
    (tmp_path / "1_Pooling").mkdir()
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    ]
    (tmp_path / "modules.json").write_text(json.dumps(modules))
    (tmp_path / "1_Pooling" / "config.json").write_text(
        json.dumps({"pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False})
    )
    return tmp_path


def test_a_model_openvino_cannot_run_says_to_use_torch(cls_pooled: Path) -> None:
    with pytest.raises(UserError, match="AGENTLAKE_EMBED_BACKEND=torch"):
        check_exportable(cls_pooled)


def test_auto_runs_such_a_model_on_torch(cls_pooled: Path) -> None:
    assert LocalEmbedder(str(cls_pooled)).backend == "torch"


def test_openvino_is_imported_without_its_usage_telemetry() -> None:
    code = (
        "from agentlake.embed.openvino import import_openvino; import_openvino(); "
        "import openvino.tools.ovc.telemetry_utils as t; print(t.tm.__name__)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "openvino.tools.ovc.telemetry_stub", done.stderr[-2000:]
