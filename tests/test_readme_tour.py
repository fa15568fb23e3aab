"""The README's five-minute tour works exactly as written.

Every line of the ```bash tour block runs in a fresh directory set up the way `make demo`
leaves it (a generated workforce and its search index in ./.agentlake), with a smaller
dataset so the suite stays quick. A line whose comment says "exit 2" must be refused with
exit code 2 and a one-line error; every other line must succeed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def tour_lines() -> list[str]:
    text = (ROOT / "README.md").read_text()
    block = re.search(r"```bash tour\n(.*?)```", text, re.S)
    assert block, "README.md has no ```bash tour block"
    return [line for line in block.group(1).splitlines() if line.strip()]


def _run(line: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", line], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_readme_tour_runs_as_written(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTLAKE_")}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env["COLUMNS"] = "120"
    (tmp_path / ".venv").symlink_to(BIN.parent)  # so `source .venv/bin/activate` works as written
    # What `make demo` leaves behind, smaller: a seeded workforce and its resume index.
    for setup in (
        "agentlake data generate --workers 20000 --seed 7",
        "agentlake index build workers --column resume_text",
    ):
        done = _run(setup, tmp_path, env)
        assert done.returncode == 0, f"{setup}\n{done.stdout}\n{done.stderr}"

    lines = tour_lines()
    assert any(line.startswith("agentlake run") for line in lines)
    for line in lines:
        done = _run(line, tmp_path, env)
        expected = 2 if "exit 2" in line else 0
        assert done.returncode == expected, (
            f"{line}\nexit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        )
        if expected == 2:
            assert done.stderr.strip().startswith("error:")
            assert len(done.stderr.strip().splitlines()) <= 3
    assert (tmp_path / "runs" / "tour" / "report.html").is_file()
