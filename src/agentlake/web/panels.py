"""What the dashboard's side panels read that no other door serves yet: the latest scenario run.

Owns finding the newest run under ``runs_dir`` that has a ``leaderboard.json`` (run ids start
with their UTC start time, so the newest sorts last; a run still being written has no
leaderboard yet and is skipped) and shaping it for the page: the ranking, the batches, the
learning curve (the page draws it). Lessons and ops have their own routes (``/lessons``, ``/observer/``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentlake.errors import NotFoundError, RunError
from agentlake.scenarios.results import LEADERBOARD_FILE, read_json


def latest_run_dir(runs_dir: Path) -> Path:
    """The newest run directory with a leaderboard; ``NotFoundError`` says how to make one."""
    runs_dir = Path(runs_dir)
    candidates = (
        sorted(p for p in runs_dir.glob(f"*/{LEADERBOARD_FILE}") if p.is_file()) if runs_dir.is_dir() else []
    )
    if not candidates:
        raise NotFoundError(
            f"no scenario run with a leaderboard under {runs_dir}; run `agentlake run` or `agentlake demo`"
        )
    return candidates[-1].parent


def latest_scenario_run(runs_dir: Path) -> dict[str, Any]:
    """``{run_id, batches, leaderboard, learning_curve}`` of the newest run."""
    run_dir = latest_run_dir(runs_dir)
    try:
        # Any run's format: older files have no format_version; a newer one is refused, named.
        document = read_json(run_dir / LEADERBOARD_FILE)
    except (OSError, ValueError) as exc:
        raise RunError(f"cannot read {run_dir / LEADERBOARD_FILE}: {exc}") from None
    curve = {
        str(k): [float(v) for v in values] for k, values in (document.get("learning_curve") or {}).items()
    }
    batches = [int(b) for b in document.get("batches") or []]
    columns = (
        "rank",
        "staffer",
        "score",
        "fill_rate",
        "pass_k",
        "precision",
        "gain_points",
        "events",
        "cost_usd",
    )
    rows = [{key: row.get(key) for key in columns} for row in document.get("leaderboard") or []]
    return {
        "run_id": document.get("run_id") or run_dir.name,
        "batches": batches,
        "leaderboard": rows,
        "learning_curve": curve,
    }
