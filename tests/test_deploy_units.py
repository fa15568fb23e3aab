"""The systemd units in deploy/systemd/ are valid, hardened, bind 127.0.0.1 by default and name
only real settings.

``systemd-analyze verify`` also checks that ``ExecStart``'s program exists, so each unit is
verified as a copy whose ``/opt/agentlake/bin/agentlake`` (where the README installs it) is this
interpreter: every other line is checked as shipped.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agentlake.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
UNITS_DIR = ROOT / "deploy" / "systemd"
UNITS = sorted(path.name for path in UNITS_DIR.glob("*.service"))
INSTALLED = "/opt/agentlake/bin/agentlake"
# A unit scores its exposure 0 (locked down) to 10 (none of systemd's protections); x10 here.
MAX_EXPOSURE = 20
ECOSYSTEM = {"OLLAMA_HOST", "OLLAMA_API_KEY", "OLLAMA_CLOUD_KEY", "OPENAI_BASE_URL", "OPENAI_API_KEY"}

analyze = shutil.which("systemd-analyze")
needs_analyze = pytest.mark.skipif(
    analyze is None, reason="systemd-analyze is not installed (Debian: apt-get install systemd)"
)


def _as_here(unit: str, tmp_path: Path) -> Path:
    copy = tmp_path / unit
    copy.write_text((UNITS_DIR / unit).read_text().replace(INSTALLED, sys.executable))
    return copy


def _directives(unit: str) -> dict[str, str]:
    """``Key=value`` lines of ``unit`` (the last one wins, as in systemd)."""
    lines = (UNITS_DIR / unit).read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if re.match(r"^[A-Z]\w*=", line))


def test_there_is_a_unit_for_the_gateway_and_one_for_the_observer() -> None:
    assert UNITS == ["agentlake-gateway.service", "agentlake-observer.service"]


@needs_analyze
@pytest.mark.parametrize("unit", UNITS)
def test_systemd_analyze_verifies_the_unit(unit: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [analyze, "verify", "--man=no", str(_as_here(unit, tmp_path))],
        capture_output=True,
        text=True,
        timeout=60,
    )
    # A value systemd cannot parse is only a warning ("ignoring") with exit 0: both must be clean.
    complaints = [line for line in (done.stdout + done.stderr).splitlines() if unit in line]
    assert (done.returncode, complaints) == (0, [])


@needs_analyze
@pytest.mark.parametrize("unit", UNITS)
def test_the_unit_is_hardened(unit: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [analyze, "security", "--offline=yes", f"--threshold={MAX_EXPOSURE}", str(_as_here(unit, tmp_path))],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout.splitlines()[-1:]


@pytest.mark.parametrize("unit", UNITS)
def test_the_unit_runs_as_the_agentlake_user(unit: str) -> None:
    directives = _directives(unit)
    assert (directives["User"], directives["Group"]) == ("agentlake", "agentlake")


@pytest.mark.parametrize("unit", UNITS)
def test_the_unit_leaves_the_bind_address_to_the_settings(unit: str) -> None:
    assert "--host" not in _directives(unit)["ExecStart"]


@pytest.mark.parametrize(("name", "default"), [("gateway_host", "127.0.0.1"), ("observer_host", "127.0.0.1")])
def test_the_settings_bind_loopback_by_default(name: str, default: str) -> None:
    assert Settings.model_fields[name].default == default


def test_the_units_keep_separate_data_dirs() -> None:
    # One writer per DuckDB file: both units may run on one host.
    assert len({_directives(unit)["StateDirectory"] for unit in UNITS}) == len(UNITS)


@pytest.mark.parametrize("unit", UNITS)
def test_the_data_dir_is_the_units_state_directory(unit: str) -> None:
    environment = re.findall(r"^Environment=(\S+)$", (UNITS_DIR / unit).read_text(), flags=re.M)
    assert f"AGENTLAKE_DATA_DIR=/var/lib/{_directives(unit)['StateDirectory']}" in environment


@pytest.mark.parametrize("unit", UNITS)
def test_the_unit_reads_keys_from_the_environment_file(unit: str) -> None:
    assert _directives(unit)["EnvironmentFile"] == "-/etc/agentlake/agentlake.env"


def test_the_environment_example_names_only_real_settings() -> None:
    text = (UNITS_DIR / "agentlake.env.example").read_text()
    names = re.findall(r"^#?([A-Z][A-Z0-9_]*)=", text, flags=re.M)
    settings = {f"AGENTLAKE_{name.upper()}" for name in Settings.model_fields}
    assert [name for name in names if name not in settings | ECOSYSTEM] == []
