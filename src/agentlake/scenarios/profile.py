"""Staffer profiles: who staffs a scenario day, with which policy, models and switches.

Owns the profile YAML shape (``StafferProfile``), loading built-ins by name or files by path
(errors name the file, path and problem), and deciding whether an LLM staffer's models are
reachable. It does not build policies (``day``) nor run anything (``runner``).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from agentlake.errors import UserError
from agentlake.scenarios.scenario import format_problems, read_yaml, validation_problems
from agentlake.settings import Settings

STAFFERS_DIR = Path(__file__).parent / "staffers"


class TierModels(BaseModel):
    """Model per tier. ``None`` falls back to the settings (executor_model, reviewer_model, ...)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    executor: str | None = None
    reviewer: str | None = None
    overseer: str | None = None
    escalation: str | None = None
    t3: str | None = Field(None, description="T3's model (reviews each judged event); empty: the overseer's.")
    t4: str | None = Field(None, description="T4's model (synthesises across days); empty: the overseer's.")
    t5: str | None = Field(
        None,
        description="T5's model (predicts what a lesson in words leaves out); empty: the profile's overseer "
        "model, else none (lessons in words wait).",
    )


# The overseer's model tiers: allowed on any policy (they watch and propose; they do not staff).
TIER_KEYS = ("t3", "t4", "t5")


class StafferProfile(BaseModel):
    """One staffer configuration; ``staffer`` is its name on the leaderboard."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # Dots allowed for model sizes (qwen-1.5b-learning); never a path separator or an arm mark (@).
    staffer: str = Field(..., pattern=r"^[a-z0-9][a-z0-9.-]*$", max_length=60)
    description: str = ""
    policy: Literal["rules", "llm", "oracle"] = Field(
        ...,
        description="rules (no LLM), llm (executor + reviewer) or oracle (reads the hidden rules: the ceiling).",
    )
    models: TierModels = Field(default_factory=TierModels)
    turn_budget: int | None = Field(None, gt=0, le=100)
    think: bool | None = Field(
        False,
        description="Reasoning on executor and reviewer turns of models that can think (off: a turn is one "
        "small action); null leaves the model's default. The overseer's model keeps its own.",
    )
    review_every: int = Field(
        0,
        ge=0,
        le=100,
        description="0: the reviewer sees verified proposals only; N: it also reviews the executor's "
        "course every N executor turns and may say drift (each review costs a turn of the budget).",
    )
    overseer: bool = False
    t3_review: bool = Field(
        False,
        description="T3: a model (thinking on) reviews each judged event beside the overseer's code checks "
        "and proposes lessons to the learner (models.t3, else the overseer's model).",
    )
    t4_synthesis: bool = Field(
        False,
        description="T4: between batches a model (thinking on) reads the days so far and proposes cross-day "
        "lessons to the learner (models.t4, else the overseer's model).",
    )
    t5_gate: bool = Field(
        False,
        description="T5, the gatekeeper: no lesson activates before a replay of recent judged events; one that "
        "would have left out workers the client accepted is retired with the reason (machine actions by "
        "code, lessons in words by models.t5 when set, else they wait).",
    )
    rescue: bool = False
    lessons: bool = Field(True, description="Retrieve lessons for each task.")
    learning: bool = Field(
        True, description="Learn new lessons from the staffer's own outcomes between batches."
    )
    learn_within_day: bool = Field(
        False,
        description="Also learn after every judged event, so later events of the same day use what "
        "the morning taught (needs learning).",
    )
    colour: str | None = Field(
        None,
        pattern=r"^#[0-9A-Fa-f]{6}$",
        description="Its colour in reports (#RRGGBB); empty: one chosen by a hash of its name, the "
        "same in every report.",
    )

    @field_validator("description")
    @classmethod
    def _one_line(cls, value: str) -> str:
        return " ".join(value.split())

    @model_validator(mode="after")
    def _coherent(self) -> StafferProfile:
        if self.learning and not self.lessons:
            raise ValueError("learning: true needs lessons: true (learned lessons would never be used)")
        if self.learn_within_day and not self.learning:
            raise ValueError("learn_within_day: true needs learning: true")
        staffing = {k: v for k, v in self.models.model_dump().items() if k not in TIER_KEYS}
        if self.policy != "llm" and any(staffing.values()):
            raise ValueError(
                f"a {self.policy} staffer uses no models but its overseer tiers' (t3, t4, t5); "
                "remove the others or use policy: llm"
            )
        for switch in ("t3_review", "t4_synthesis", "t5_gate"):
            if getattr(self, switch) and not self.learning:
                raise ValueError(f"{switch}: true needs learning: true (the tiers propose to the learner)")
        return self

    def tiers(self) -> list[str]:
        """The overseer tiers this staffer runs, e.g. ['T3', 'T5'] (the leaderboard shows them)."""
        switches = (("T3", self.t3_review), ("T4", self.t4_synthesis), ("T5", self.t5_gate))
        return [name for name, on in switches if on]

    def resolved_models(self, settings: Settings) -> TierModels:
        """Models per tier after falling back to the settings table."""
        executor = self.models.executor or settings.executor_model
        above = self.models.overseer or settings.overseer_model
        return TierModels(
            executor=executor,
            reviewer=self.models.reviewer or settings.reviewer_model or None,
            overseer=above if self.overseer else None,
            escalation=self.models.escalation,
            t3=(self.models.t3 or above or None) if self.t3_review else None,
            t4=(self.models.t4 or above or None) if self.t4_synthesis else None,
            t5=(self.models.t5 or self.models.overseer or None) if self.t5_gate else None,
        )

    def model_list(self, settings: Settings) -> list[str]:
        """Every model this staffer would call, deduplicated, in tier order (a rules staffer's:
        its overseer tiers' only)."""
        resolved = self.resolved_models(settings).model_dump()
        if self.policy != "llm":
            resolved = {k: v for k, v in resolved.items() if k in TIER_KEYS}
        return list(dict.fromkeys(model for model in resolved.values() if model))


def builtin_staffers() -> list[str]:
    """Names of the built-in profiles, sorted."""
    return sorted(path.stem for path in STAFFERS_DIR.glob("*.yaml"))


def parse_profile(data: Any, source: str = "<profile>") -> StafferProfile:
    """Validate one profile document; ``UserError`` lists every problem as 'file: path: problem'."""
    if not isinstance(data, dict):
        raise UserError(f"{source}: (top level): expected a mapping with keys staffer, policy, ...")
    try:
        return StafferProfile.model_validate(data)
    except ValidationError as exc:
        raise UserError(format_problems(source, validation_problems(exc))) from None


def load_profile(spec: str | Path) -> StafferProfile:
    """A built-in profile by name (``rules-learning``) or a profile YAML file by path."""
    text = str(spec)
    path = Path(text)
    if text.endswith((".yaml", ".yml")) or path.is_file():
        if not path.is_file():
            raise UserError(f"{path}: no such staffer profile file")
        return parse_profile(read_yaml(path), str(path))
    builtin = STAFFERS_DIR / f"{text}.yaml"
    if not builtin.is_file():
        raise UserError(
            f"unknown staffer {text!r}; built-ins are {', '.join(builtin_staffers())}, or give a YAML file path"
        )
    return parse_profile(read_yaml(builtin), f"builtin:{text}")


def load_profiles(specs: Iterable[str | Path] | str) -> list[StafferProfile]:
    """Load every profile (comma-separated names allowed), all validated before anything runs."""
    if isinstance(specs, str):
        specs = [specs]
    names = [part.strip() for spec in specs for part in str(spec).split(",") if part.strip()]
    if not names:
        raise UserError("no staffers given; try --staffers rules-learning,rules-static")
    profiles: list[StafferProfile] = []
    errors: list[str] = []
    for name in names:
        try:
            profile = load_profile(name)
        except UserError as exc:
            errors.append(exc.message)
            continue
        if any(p.staffer == profile.staffer for p in profiles):
            errors.append(f"{name}: staffer: {profile.staffer!r} is given twice")
            continue
        profiles.append(profile)
    if errors:
        raise UserError("invalid staffer profiles:\n" + "\n".join(errors))
    return profiles


def unreachable_models(profile: StafferProfile, settings: Settings, *, timeout_s: float = 1.5) -> list[str]:
    """The models of ``profile`` that cannot be called right now, each with the reason.

    Ollama models need the server at ``settings.ollama_host`` to list the model; ``openai:``
    models need ``openai_base_url`` to answer ``/models``; ``llamacpp:`` needs the optional
    local-llm install; ``scripted:``/``function:`` models need a registered fake. Empty list:
    the staffer can run. A rules staffer is always reachable.
    """
    problems = []
    for model in profile.model_list(settings):
        reason = _model_problem(model, settings, timeout_s)
        if reason:
            problems.append(f"{model}: {reason}")
    if profile.policy == "llm" and not profile.resolved_models(settings).executor:
        problems.append("no executor model: set models.executor in the profile or AGENTLAKE_EXECUTOR_MODEL")
    resolved = profile.resolved_models(settings)
    for switch, tier in (("t3_review", resolved.t3), ("t4_synthesis", resolved.t4)):
        if getattr(profile, switch) and not tier:
            problems.append(
                f"{switch}: no model: set models.{switch[:2]} (or models.overseer) in the profile, or AGENTLAKE_OVERSEER_MODEL"
            )
    return problems


def _model_problem(model: str, settings: Settings, timeout_s: float) -> str | None:
    import httpx

    prefix, _, name = model.partition(":")
    if prefix == "ollama":
        try:
            reply = httpx.get(f"{settings.ollama_host.rstrip('/')}/api/tags", timeout=timeout_s)
            reply.raise_for_status()
            tags = {item.get("name") for item in reply.json().get("models", [])}
        except (httpx.HTTPError, ValueError) as exc:
            return f"Ollama is not answering at {settings.ollama_host} ({type(exc).__name__}); start it with `ollama serve`"
        if name not in tags and f"{name}:latest" not in tags:
            return f"Ollama has no model {name!r}; pull it with `ollama pull {name}`"
        return None
    if prefix == "openai":
        if not settings.openai_base_url:
            return "no OpenAI-compatible server configured; set OPENAI_BASE_URL"
        headers = {}
        if settings.openai_api_key:
            headers["Authorization"] = f"Bearer {settings.openai_api_key.get_secret_value()}"
        try:
            reply = httpx.get(
                f"{settings.openai_base_url.rstrip('/')}/models", headers=headers, timeout=timeout_s
            )
            reply.raise_for_status()
        except httpx.HTTPError as exc:
            return f"{settings.openai_base_url} is not answering ({type(exc).__name__})"
        return None
    # scripted:, function:, llamacpp: and third-party prefixes: the LLM layer knows best.
    try:
        # Lazy (start-up time): the LLM layer loads on the first model call.
        from agentlake.llm import get_provider

        get_provider(model, settings)
        if prefix == "llamacpp":  # the model file can exist without the runtime that loads it
            from agentlake.llm.llama_cpp import import_llama_cpp

            import_llama_cpp()
    except UserError as exc:
        return exc.message
    except Exception as exc:  # a provider factory failing is "not reachable", never a crash here
        return f"{type(exc).__name__}: {exc}"
    return None
