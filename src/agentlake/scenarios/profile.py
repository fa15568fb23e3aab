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
        if self.policy != "llm" and any(self.models.model_dump().values()):
            raise ValueError(f"a {self.policy} staffer uses no models; remove 'models' or use policy: llm")
        return self

    def resolved_models(self, settings: Settings) -> TierModels:
        """Models per tier after falling back to the settings table."""
        executor = self.models.executor or settings.executor_model
        return TierModels(
            executor=executor,
            reviewer=self.models.reviewer or settings.reviewer_model or None,
            overseer=(self.models.overseer or settings.overseer_model) if self.overseer else None,
            escalation=self.models.escalation,
        )

    def model_list(self, settings: Settings) -> list[str]:
        """Every model this staffer would call, deduplicated, in tier order."""
        if self.policy != "llm":
            return []
        tiers = self.resolved_models(settings).model_dump().values()
        return list(dict.fromkeys(model for model in tiers if model))


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
    if profile.policy == "llm" and not profile.model_list(settings):
        problems.append("no executor model: set models.executor in the profile or AGENTLAKE_EXECUTOR_MODEL")
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
