"""What a scenario run leaves behind: one ``EventResult`` per judged event, in a run directory.

Owns the result record, the run directory's layout and reading/writing it:

    runs/<run_id>/plan.json          what was asked (scenarios, staffers, batches, backend)
    runs/<run_id>/results.jsonl      one EventResult per line, appended as days finish
    runs/<run_id>/proposals.jsonl    the overseer's lesson deltas of each finished day (if any)
    runs/<run_id>/learning.jsonl     what each learning arm learned after each batch
    runs/<run_id>/leaderboard.json   metrics per staffer and per batch (``metrics``)
    runs/<run_id>/report.html        the offline report (``report``)
    runs/<run_id>/lessons/<arm>.duckdb   each learning arm's own lesson store (arm_name); with
                                         database_url set, its schema in PostgreSQL (arm_schema);
                                         ``arm_lessons`` finds it to read (`agentlake lessons --run`)

Every JSON file and every JSON line a run writes carries ``format_version`` (``FORMAT_VERSION``,
the run directory's format; the report says it in a ``<meta>``). A file or line without it is
from before versions (0) and is read the same way; one newer than this code knows is refused
with the upgrade to make, never half-read.

It does not compute metrics nor run days.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError

from agentlake.agents.outcome import TaskEffort
from agentlake.errors import NotFoundError, UserError
from agentlake.learn.store import PgSchema
from agentlake.scenarios.judge import ClientRejection
from agentlake.settings import Settings

RESULTS_FILE = "results.jsonl"
PLAN_FILE = "plan.json"
LEADERBOARD_FILE = "leaderboard.json"
REPORT_FILE = "report.html"
LESSONS_DIR = "lessons"
# Written as each day lands or each arm learns, so an interrupted run can be resumed exactly.
PROPOSALS_FILE = "proposals.jsonl"
LEARNING_FILE = "learning.jsonl"
# Raise it when a file of the run directory changes meaning; adding a key does not.
FORMAT_VERSION = 1
VERSION_KEY = "format_version"


def arm_name(staffer: str, feedback: str = "explicit") -> str:
    """A staffer under a feedback mode: ``rules-learning`` (explicit) or ``rules-learning@silent``.

    Each arm has its own lesson store and its own rows on the leaderboard.
    """
    return staffer if feedback == "explicit" else f"{staffer}@{feedback}"


def arm_schema(run_id: str, arm: str) -> str:
    """The PostgreSQL schema of one arm's lesson store (``database_url`` set): a valid
    identifier of at most 63 characters, the run and arm readable in it, unique by a hash."""
    readable = re.sub(r"[^a-z0-9_]+", "_", f"{run_id}_{arm}".lower())[:44]
    digest = hashlib.sha256(f"{run_id}\0{arm}".encode()).hexdigest()[:10]
    return f"run_{readable}_{digest}"


def arm_lessons_file(run_dir: Path, arm: str) -> Path:
    """The DuckDB file of one learning arm's lesson store in a run directory."""
    return run_dir / LESSONS_DIR / f"{arm}.duckdb"


def arm_lessons(run_dir: Path, arm: str | None, settings: Settings) -> Path | PgSchema:
    """Where a learning arm of a run keeps its lessons, to read them: its file
    (:func:`arm_lessons_file`) or, with ``database_url`` set and no file, its schema
    (:func:`arm_schema`). ``arm`` may be left out when the run has one learning arm.

    ``UserError`` naming the run's learning arms when ``arm`` is none of them (or is needed),
    and when the arm has no store yet."""
    plan = read_plan(run_dir)
    learners = {p.get("staffer") for p in plan.get("staffers", []) if p.get("learning")}
    arms = [a["arm"] for a in plan.get("arms", []) if a.get("staffer") in learners]
    if not arms:
        raise UserError(
            f"run {run_dir.name} has no learning staffer: its staffers read the project's lessons "
            "(`agentlake lessons list` without --run)"
        )
    if arm is None and len(arms) > 1:
        raise UserError(
            f"run {run_dir.name} has {len(arms)} learning staffers: name one with --staffer ({', '.join(arms)})"
        )
    arm = arms[0] if arm is None else arm
    if arm not in arms:
        raise UserError(
            f"{arm!r} is not a learning staffer of run {run_dir.name}; its learning staffers: {', '.join(arms)}"
        )
    path = arm_lessons_file(run_dir, arm)
    if path.is_file():
        return path
    if settings.database_url is not None:
        return PgSchema(name=arm_schema(run_dir.name, arm))
    raise UserError(
        f"{arm} has no lesson store in run {run_dir.name} yet ({path}): it learns after its first batch"
    )


def batch_run_prefix(run_id: str, arm: str, batch: int) -> str:
    """What every event run id of one arm's batch starts with (see ``event_run_key``)."""
    return f"{run_id}:{arm}:b{batch}:"


def event_run_key(run_id: str, arm: str, batch: int, scenario: str, repetition: int, event_id: str) -> str:
    """One event's run id (lesson citations and outcomes are keyed by it)."""
    return f"{batch_run_prefix(run_id, arm, batch)}{scenario}:r{repetition}:{event_id}"


class EventResult(TaskEffort):
    """One event of one day, staffed by one staffer, judged by the client; what the staffer's
    task took (turns, tokens, cost, latency, lessons, rescue) is the agents' ``TaskEffort``."""

    run_id: str
    staffer: str
    feedback: str = Field("explicit", description="What the client said: explicit, vague or silent.")
    batch: int = Field(..., ge=1)
    scenario: str
    client_id: str
    repetition: int = Field(..., ge=1)
    event_id: str
    kind: str
    at: str
    role: str
    city: str
    state: str
    requested: int
    filled: int
    success: bool
    proposed: list[int] = Field(default_factory=list)
    accepted: list[int] = Field(default_factory=list)
    rejections: list[ClientRejection] = Field(default_factory=list)
    agent_success: bool = False
    failure_reason: str | None = None
    error: str | None = Field(
        None, description="The policy raised instead of answering (counted as unfilled)."
    )
    buffer: int = Field(0, description="Verified spare candidates the staffer kept beyond the count.")
    double_bookings_caught: int = Field(
        0, description="Double-bookings the staffer's own checks caught before submitting."
    )
    double_bookings_submitted: int = Field(0, description="Double-booked workers the client had to refuse.")
    concerns: list[str] = Field(default_factory=list, description="The overseer's concerns about this event.")
    shift_start: datetime | None = None
    shift_end: datetime | None = None
    op_id: str | None = None
    sig_hash: str | None = None
    tiers: list[str] = Field(
        default_factory=list, description="The overseer tiers the staffer ran (T3, T4, T5)."
    )

    @property
    def arm(self) -> str:
        """The staffer under its feedback mode (``arm_name``): what metrics group by."""
        return arm_name(self.staffer, self.feedback)

    @property
    def event_run_id(self) -> str:
        """The run id this event's policy call, citations and outcome were keyed by."""
        return event_run_key(self.run_id, self.arm, self.batch, self.scenario, self.repetition, self.event_id)

    @property
    def day_key(self) -> tuple[str, int, str, int]:
        return (self.arm, self.batch, self.scenario, self.repetition)


def stamped(payload: dict[str, Any]) -> dict[str, Any]:
    """``payload`` with the run directory's ``format_version`` first."""
    return {VERSION_KEY: FORMAT_VERSION, **{k: v for k, v in payload.items() if k != VERSION_KEY}}


def unstamped(payload: Any, where: str) -> Any:
    """``payload`` (a JSON object read from a run file) without its ``format_version``.

    No version: written before versions existed, read as it is. ``UserError`` naming ``where``
    for a version newer than ``FORMAT_VERSION`` or one that is not a number.
    """
    if not isinstance(payload, dict) or VERSION_KEY not in payload:
        return payload
    version = payload[VERSION_KEY]
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise UserError(f"{where}: format_version {version!r} is not a version number")
    if version > FORMAT_VERSION:
        raise UserError(
            f"{where}: written by a newer agentlake (run format {version}; this one reads up to "
            f"{FORMAT_VERSION}); upgrade agentlake to read it"
        )
    return {k: v for k, v in payload.items() if k != VERSION_KEY}


def append_results(run_dir: Path, results: Iterable[EventResult]) -> None:
    """Append results to ``results.jsonl``, each line stamped with ``format_version`` (the
    parent process is its only writer)."""
    with (run_dir / RESULTS_FILE).open("a", encoding="utf-8") as handle:
        for result in results:
            line = json.dumps(stamped(result.model_dump(mode="json")), ensure_ascii=False)
            handle.write(line + "\n")


def append_lines(path: Path, payloads: Iterable[Any]) -> None:
    """Append JSON lines to ``path``, objects stamped with ``format_version`` (the run's side
    files; the parent process is their only writer)."""
    with path.open("a", encoding="utf-8") as handle:
        for payload in payloads:
            if isinstance(payload, dict):
                payload = stamped(payload)
            handle.write(json.dumps(payload, ensure_ascii=False, default=str) + "\n")


def read_lines(path: Path) -> list[Any]:
    """The JSON lines of a side file written by ``append_lines``, without their
    ``format_version``; ``[]`` when it is missing. ``UserError`` for a newer format."""
    if not path.is_file():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    return [
        unstamped(json.loads(line), f"{path}: line {number}")
        for number, line in enumerate(lines, start=1)
        if line.strip()
    ]


def resolve_run_dir(spec: str | Path, runs_dir: Path | None = None) -> Path:
    """A run directory from a path or a run id under ``runs_dir``; ``NotFoundError`` otherwise."""
    path = Path(spec)
    if (
        not (path / RESULTS_FILE).is_file()
        and runs_dir is not None
        and (runs_dir / str(spec) / RESULTS_FILE).is_file()
    ):
        path = runs_dir / str(spec)
    if not (path / RESULTS_FILE).is_file():
        raise NotFoundError(
            f"{path}: not a run directory (no {RESULTS_FILE}); run `agentlake run` first or pass runs/<run_id>"
        )
    return path


def read_results(run_dir: Path | str) -> list[EventResult]:
    """Every result of a run, in the order written, with or without ``format_version`` (older
    runs have none). ``UserError`` names a corrupt line or one of a newer format."""
    path = Path(run_dir) / RESULTS_FILE
    if not path.is_file():
        raise NotFoundError(f"{run_dir}: no {RESULTS_FILE}; is this a run directory?")
    out = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            where = f"{path}: line {number}"
            try:
                out.append(EventResult.model_validate(unstamped(json.loads(line), where)))
            except ValueError as exc:  # JSON and pydantic's ValidationError alike
                message = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
                raise UserError(f"{where}: not an event result ({message})") from None
    return out


def write_json(path: Path, payload: dict[str, Any]) -> None:
    """Write a JSON object stamped with ``format_version``, atomically (temp file + rename) so
    a reader never sees half a file."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    text = json.dumps(stamped(payload), indent=2, ensure_ascii=False, default=str)
    tmp.write_text(text + "\n", encoding="utf-8")
    tmp.replace(path)


def read_json(path: Path) -> dict[str, Any]:
    """A JSON object written by ``write_json``, without its ``format_version``; ``{}`` when
    the file is missing. ``UserError`` for a newer format."""
    if not path.is_file():
        return {}
    return unstamped(json.loads(path.read_text(encoding="utf-8")), str(path))


def read_plan(run_dir: Path) -> dict[str, Any]:
    return read_json(run_dir / PLAN_FILE)


def resumed_header(before: dict[str, Any], now: dict[str, Any], run_dir: Path) -> dict[str, Any]:
    """The run's recorded plan, after checking the resumed one asks for the same days; how
    they run (backend, workers) may change. ``UserError`` names what differs."""
    same = ("scenarios", "staffers", "batches", "repeat", "feedback", "semantic_lessons")
    for key in same:
        if what_runs(key, json.loads(json.dumps(now[key], default=str))) != what_runs(key, before.get(key)):
            raise UserError(
                f"{run_dir.name} was started with other {key.replace('_', ' ')}: "
                "resume it with the options it was started with"
            )
    return {**before, "resumed_at": [*before.get("resumed_at", []), now["created_at"]]}


def what_runs(key: str, value: Any) -> Any:
    """A plan entry without what does not change the days (a staffer's colour in reports)."""
    if key == "staffers" and isinstance(value, list):
        return [{k: v for k, v in p.items() if k != "colour"} if isinstance(p, dict) else p for p in value]
    return value
