"""A run as asked and as it will run: what ``agentlake run`` is asked, loaded and checked.

Owns ``RunRequest`` (the run as given: scenario and staffer names or objects, batches,
repetitions, backend, concurrency, feedback modes), ``prepare_run``, which loads and checks
it before anything runs (scenarios, profiles, models reachable, the lake and every event's
place, how many days go at once: ``concurrency``) into a ``RunPlan``, and the plan's arms
(each staffer under each feedback mode). It runs nothing (``runner``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from agentlake.errors import UserError
from agentlake.lake import Lake
from agentlake.scenarios.backends import BACKENDS
from agentlake.scenarios.concurrency import choose_concurrency
from agentlake.scenarios.profile import StafferProfile, load_profiles, unreachable_models
from agentlake.scenarios.results import arm_name
from agentlake.scenarios.scenario import BUILTIN, FeedbackMode, Scenario, load_scenarios, parse_feedback
from agentlake.settings import Settings, load_settings
from agentlake.workforce.facts import site_of
from agentlake.workforce.tables import missing_tables

DEFAULT_STAFFERS = ("rules-learning", "rules-static")
_INLINE_ONLY_PREFIXES = ("scripted:", "function:")


def check_runnable(
    scenarios: Sequence[Scenario],
    profiles: Sequence[StafferProfile],
    settings: Settings,
    *,
    backend: str,
    lake: Lake,
) -> None:
    """Refuse, before anything runs, what would fail midway: raises ``UserError`` listing why."""
    problems: list[str] = []
    for profile in profiles:
        for problem in unreachable_models(profile, settings):
            problems.append(f"staffer {profile.staffer}: {problem}")
        if backend != "inline":
            for model in profile.model_list(settings):
                if model.startswith(_INLINE_ONLY_PREFIXES):
                    problems.append(
                        f"staffer {profile.staffer}: {model} lives in this process only; use --backend inline"
                    )
    missing = missing_tables(lake)
    if missing:
        problems.append(
            f"the lake has no {' or '.join(sorted(missing))} dataset; generate one with `agentlake data generate`"
        )
    else:
        for scenario in scenarios:
            places = {(scenario.client.city, scenario.client.state)}
            places |= {
                (e.city or scenario.client.city, e.state or scenario.client.state) for e in scenario.events
            }
            for city, state in sorted(places):
                try:
                    site_of(lake, city, state)
                except UserError as exc:
                    problems.append(f"scenario {scenario.scenario}: {exc.message}")
    if problems:
        raise UserError("cannot start the run:\n" + "\n".join(problems))


@dataclass(frozen=True)
class RunRequest:
    """What a run is asked to do, as given (``prepare_run`` loads and checks it into a
    ``RunPlan``): ``staffers`` x ``scenarios`` x ``repeat`` repetitions, ``batches`` times.

    ``scenarios``: files, directories or ``builtin`` (or already-loaded ``Scenario`` objects).
    ``staffers``: built-in names, profile files or ``StafferProfile`` objects. ``backend``: where
    days run (``inline``, ``processes``, ``ray`` at ``ray_address``, with ``workers``).
    ``concurrency``: days run at once in this process on the inline backend (``None``: chosen
    from the cores and the staffers' models, ``concurrency.choose_concurrency``).
    ``semantic_lessons``: retrieval with the embedding stage. ``feedback``: modes every scenario
    runs under (``explicit``, ``vague``, ``silent``; several make one arm per staffer and mode);
    ``None``: each scenario's own ``feedback`` key.
    """

    scenarios: Sequence[str | Path] | Sequence[Scenario] | str | Path = BUILTIN
    staffers: Sequence[str | StafferProfile] | str = DEFAULT_STAFFERS
    batches: int = 3
    repeat: int = 1
    backend: str = "inline"
    ray_address: str | None = None
    workers: int | None = None
    semantic_lessons: bool = False
    feedback: Sequence[str] | str | None = None
    concurrency: int | None = None


class RunPlan(BaseModel):
    """A validated run: what will run, before anything does."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    scenarios: list[Scenario]
    profiles: list[StafferProfile]
    batches: int
    repeat: int
    backend: str
    ray_address: str | None = None
    workers: int | None = None
    semantic_lessons: bool = False
    feedback: list[FeedbackMode] | None = Field(
        None, description="Feedback modes every scenario runs under; None: each scenario's own."
    )
    concurrency: int = Field(1, ge=1, description="Days run at once in this process (backend inline).")
    notes: list[str] = Field(
        default_factory=list, description="What the plan changed from what was asked (a capped concurrency)."
    )

    @property
    def arms(self) -> list[Arm]:
        """Each staffer under each feedback mode, with the scenarios it runs (see ``arm_name``)."""
        out = []
        for profile in self.profiles:
            for mode in self.feedback or list(dict.fromkeys(s.feedback for s in self.scenarios)):
                chosen = [s for s in self.scenarios if self.feedback is not None or s.feedback == mode]
                out.append(Arm(profile=profile, feedback=mode, scenarios=chosen))
        return out

    @property
    def days_per_batch(self) -> int:
        return self.repeat * sum(len(arm.scenarios) for arm in self.arms)

    @property
    def events_per_batch(self) -> int:
        return self.repeat * sum(len(s.events) for arm in self.arms for s in arm.scenarios)

    def describe(self) -> str:
        """One paragraph for ``agentlake run --check`` and logs."""
        staffers = ", ".join(
            f"{p.staffer} ({p.policy}, learning {'on' if p.learning else 'off'})" for p in self.profiles
        )
        modes = ", ".join(dict.fromkeys(arm.feedback for arm in self.arms))
        return (
            f"{len(self.scenarios)} scenarios ({sum(len(s.events) for s in self.scenarios)} events) x "
            f"{len(self.profiles)} staffers [{staffers}] x {self.repeat} repetition(s), {self.batches} batches, "
            f"feedback {modes}: {self.days_per_batch * self.batches} days, "
            f"{self.events_per_batch * self.batches} judged events, backend {self.backend}"
            + (f", {self.concurrency} days at once" if self.concurrency > 1 else "")
        )


class Arm(BaseModel):
    """One staffer under one feedback mode: its own leaderboard rows and lesson store."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    profile: StafferProfile
    feedback: FeedbackMode
    scenarios: list[Scenario]

    @property
    def name(self) -> str:
        return arm_name(self.profile.staffer, self.feedback)


def prepare_run(
    request: RunRequest,
    *,
    settings: Settings | None = None,
    lake: Lake | None = None,
) -> RunPlan:
    """Load and check everything ``request`` needs; ``UserError`` lists every problem. Runs
    nothing.

    Checks: scenario and profile files, batches/repeat, the backend, the feedback modes
    (``None``: each scenario's own ``feedback``), every LLM staffer's models reachable,
    in-process fakes only on the inline backend, the lake's workers and placements datasets,
    and every event's city/state known; then chooses the concurrency (a cap is a note in
    ``RunPlan.notes``).
    """
    settings = settings or load_settings()
    modes = parse_feedback(request.feedback)
    if request.batches < 1 or request.repeat < 1:
        raise UserError("--batches and --repeat must be at least 1")
    if request.backend not in BACKENDS:
        raise UserError(f"unknown backend {request.backend!r}; choose one of: {', '.join(BACKENDS)}")
    if request.workers is not None and request.workers < 1:
        raise UserError("--workers must be at least 1")
    if lake is not None and request.backend != "inline" and not lake.read_only:
        raise UserError(
            "workers open the lake read-only: close the read-write Lake first, or use backend inline"
        )
    scenarios = request.scenarios
    if isinstance(scenarios, (str, Path)) or not all(isinstance(s, Scenario) for s in scenarios):
        loaded = load_scenarios(scenarios)  # type: ignore[arg-type]
    else:
        loaded = list(scenarios)  # type: ignore[arg-type]
    profiles = _profiles(request.staffers)
    if lake is None:
        with Lake.open(settings, read_only=True) as own:
            check_runnable(loaded, profiles, settings, backend=request.backend, lake=own)
    else:
        check_runnable(loaded, profiles, settings, backend=request.backend, lake=lake)
    concurrency = choose_concurrency(request.concurrency, profiles, settings, backend=request.backend)
    return RunPlan(
        scenarios=loaded,
        profiles=profiles,
        batches=request.batches,
        repeat=request.repeat,
        backend=request.backend,
        ray_address=request.ray_address,
        workers=request.workers,
        semantic_lessons=request.semantic_lessons,
        feedback=modes,
        concurrency=concurrency.days,
        notes=[concurrency.note] if concurrency.note else [],
    )


def _profiles(staffers: Sequence[str | StafferProfile] | str) -> list[StafferProfile]:
    items = [staffers] if isinstance(staffers, str) else list(staffers)
    named = iter(
        load_profiles([str(s) for s in items if not isinstance(s, StafferProfile)])
        if any(not isinstance(s, StafferProfile) for s in items)
        else []
    )
    profiles = [s if isinstance(s, StafferProfile) else next(named) for s in items]
    if len({p.staffer for p in profiles}) != len(profiles):
        raise UserError("each staffer may appear once per run")
    return profiles
