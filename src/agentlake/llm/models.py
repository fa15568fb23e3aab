"""The model registry: what agentlake knows about a model before calling it.

Owns the built-in data file (``models.toml`` beside this module), its merge with the file
named by the ``llm_models_file`` setting, lookups (:func:`lookup_model`) and prices
(:func:`cost_usd`). The inventory behind ``agentlake models`` is ``inventory.py``.
Unknown models get the provider's conservative defaults and ``known=False``, which error
messages mention where it matters. It does not call models; for Ollama the provider replaces
the context window with what the server reports (``/api/show``).
"""

from __future__ import annotations

import json
import threading
import tomllib
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentlake.errors import UserError

if TYPE_CHECKING:
    from agentlake.settings import Settings

_FALLBACK_DEFAULTS = {"context_window": 4096, "thinking": False, "schema": False}
_FIELDS = {"context_window", "thinking", "schema", "input_usd_per_mtok", "output_usd_per_mtok"}


class ModelInfo(BaseModel):
    """Registry facts about one ``provider:model``. Prices are USD per million tokens;
    ``None`` means unknown (cost is then reported as unknown, never as 0)."""

    model_config = ConfigDict(extra="forbid")

    provider: str
    model: str
    context_window: int = Field(gt=0)
    supports_thinking: bool = False
    supports_schema: bool = False
    input_usd_per_mtok: float | None = None
    output_usd_per_mtok: float | None = None
    known: bool = False
    source: Literal["registry", "config", "default", "server"] = "default"


_cache_lock = threading.Lock()
_cache: dict[tuple[str | None, int | None], tuple[dict, dict, set[str]]] = {}


def _read_file(path: Path) -> dict[str, Any]:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise UserError(
            f"cannot read the model registry {path} (AGENTLAKE_LLM_MODELS_FILE): {exc.strerror}"
        ) from None
    try:
        if path.suffix.lower() == ".json":
            data = json.loads(raw)
        else:
            data = tomllib.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise UserError(
            f"the model registry {path} (AGENTLAKE_LLM_MODELS_FILE) is not valid TOML/JSON: {exc}"
        ) from None
    if not isinstance(data, dict):
        raise UserError(f"the model registry {path} must hold a table with 'models' and/or 'defaults'")
    return data


def _validate_section(data: dict, where: str) -> tuple[dict[str, dict], dict[str, dict]]:
    models, defaults = data.get("models", {}), data.get("defaults", {})
    for section_name, section in (("models", models), ("defaults", defaults)):
        if not isinstance(section, dict):
            raise UserError(f"{where}: [{section_name}] must be a table")
        for key, entry in section.items():
            if not isinstance(entry, dict):
                raise UserError(f"{where}: [{section_name}.{key!r}] must be a table")
            unknown = set(entry) - _FIELDS
            if unknown:
                raise UserError(
                    f"{where}: [{section_name}.{key!r}] has unknown fields {sorted(unknown)}; allowed: {sorted(_FIELDS)}"
                )
            if section_name == "models" and ":" not in key:
                raise UserError(f"{where}: model key {key!r} must be PROVIDER:MODEL, e.g. 'ollama:qwen3:4b'")
    return models, defaults


def _registry(settings: Settings | None) -> tuple[dict[str, dict], dict[str, dict], set[str]]:
    """(models, defaults, names from the config file), merged and cached per file version."""
    user_path = settings.llm_models_file if settings is not None else None
    mtime = None
    if user_path is not None:
        try:
            mtime = user_path.stat().st_mtime_ns
        except OSError:
            mtime = -1
    key = (str(user_path) if user_path else None, mtime)
    with _cache_lock:
        if key in _cache:
            return _cache[key]
    builtin = tomllib.loads(resources.files("agentlake.llm").joinpath("models.toml").read_text("utf-8"))
    models, defaults = _validate_section(builtin, "models.toml")
    models = {name: dict(entry) for name, entry in models.items()}
    defaults = {name: dict(entry) for name, entry in defaults.items()}
    from_config: set[str] = set()
    if user_path is not None:
        extra_models, extra_defaults = _validate_section(_read_file(user_path), str(user_path))
        for name, entry in extra_models.items():
            models.setdefault(name, {}).update(entry)
            from_config.add(name)
        for name, entry in extra_defaults.items():
            defaults.setdefault(name, {}).update(entry)
    result = (models, defaults, from_config)
    with _cache_lock:
        _cache[key] = result
    return result


def _candidates(provider: str, model: str) -> list[str]:
    names = [f"{provider}:{model}"]
    if provider == "ollama" and model.endswith(":latest"):
        names.append(f"ollama:{model[: -len(':latest')]}")
    if provider == "llamacpp":
        stem = Path(model).name.lower()
        if "gemma-3-270m" in stem or "gemma3-270m" in stem or model in ("", "default"):
            names.append("llamacpp:gemma3-270m")
    return names


def lookup_model(provider: str, model: str, settings: Settings | None = None) -> ModelInfo:
    """What the registry (built-in + ``llm_models_file``) says about ``provider:model``.

    Never raises for an unknown model: it gets ``defaults.PROVIDER`` and ``known=False``.
    Raises ``UserError`` when the configured registry file is unreadable or malformed.
    """
    models, defaults, from_config = _registry(settings)
    base = {**_FALLBACK_DEFAULTS, **defaults.get(provider, {})}
    for name in _candidates(provider, model):
        if name in models:
            merged = {**base, **models[name]}
            return _info(
                provider, model, merged, known=True, source="config" if name in from_config else "registry"
            )
    return _info(provider, model, base, known=False, source="default")


def _info(provider: str, model: str, data: dict, *, known: bool, source: str) -> ModelInfo:
    try:
        return ModelInfo(
            provider=provider,
            model=model,
            context_window=int(data["context_window"]),
            supports_thinking=bool(data.get("thinking", False)),
            supports_schema=bool(data.get("schema", False)),
            input_usd_per_mtok=data.get("input_usd_per_mtok"),
            output_usd_per_mtok=data.get("output_usd_per_mtok"),
            known=known,
            source=source,
        )
    except (ValidationError, ValueError, TypeError) as exc:
        raise UserError(f"model registry entry for {provider}:{model} is invalid: {exc}") from None


def configured_model_names(settings: Settings) -> list[str]:
    """``provider:model`` names listed in the ``llm_models_file`` setting's file."""
    return sorted(_registry(settings)[2])


def cost_usd(info: ModelInfo, input_tokens: int, output_tokens: int) -> float | None:
    """Price of a call in USD, or ``None`` when the model's price is unknown."""
    if info.input_usd_per_mtok is None or info.output_usd_per_mtok is None:
        return None
    return (input_tokens * info.input_usd_per_mtok + output_tokens * info.output_usd_per_mtok) / 1_000_000


def clear_registry_cache() -> None:
    with _cache_lock:
        _cache.clear()
