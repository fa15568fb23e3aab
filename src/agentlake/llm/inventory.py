"""The inventory behind ``agentlake models``: configured models, reachability, window, loaded.

Configured models are the ones the settings name (executor, reviewer, overseer, learn), the
ones in the ``llm_models_file`` registry, and what the configured servers offer (Ollama's
``/api/tags``, an OpenAI-compatible ``/v1/models``). Each server is asked once, with a short
timeout. This module only reads; it does not pull, load or call models.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from agentlake.errors import AgentlakeError
from agentlake.llm.models import configured_model_names, lookup_model
from agentlake.llm.provider import get_provider, split_model

if TYPE_CHECKING:
    from agentlake.settings import Settings

PROBE_TIMEOUT_S = 2.0
ROLES = ("executor_model", "reviewer_model", "overseer_model", "learn_model")


class ModelStatus(BaseModel):
    """One row of ``agentlake models``. ``reachable``/``loaded`` are ``None`` when not
    applicable (no server to ask, or a server that has no notion of loading)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    model: str
    roles: list[str] = Field(default_factory=list)
    reachable: bool | None = None
    loaded: bool | None = None
    context_window: int | None = None
    window_source: str = ""
    thinking: bool | None = None
    schema_: bool | None = Field(None, alias="schema")
    detail: str = ""


def _ollama_names(name: str) -> set[str]:
    return {name, name.removesuffix(":latest"), name if ":" in name else f"{name}:latest"}


def model_statuses(settings: Settings, *, include_server_models: bool = True) -> list[ModelStatus]:
    """Every configured model with its reachability, context window and loaded state.

    Never raises for an unreachable server: the row says so in ``detail``.
    """
    rows: dict[str, ModelStatus] = {}

    def row(model: str) -> ModelStatus:
        if model not in rows:
            rows[model] = ModelStatus(model=model)
        return rows[model]

    for field in ROLES:
        value = getattr(settings, field)
        if value:
            row(value).roles.append(field.removesuffix("_model"))
    for name in configured_model_names(settings):
        row(name).roles.append("models file")

    ollama = _probe_ollama(settings)
    openai = _probe_openai(settings)
    # The cloud is asked only about models configured for it (its catalogue is not listed).
    cloud = _probe_ollama(settings, cloud=True) if any(m.startswith("ollama-cloud:") for m in rows) else {}
    if include_server_models:
        for name in ollama.get("installed", []):
            if not any(key in rows for key in (f"ollama:{n}" for n in _ollama_names(name))):
                row(f"ollama:{name}").roles.append("on server")
        for name in openai.get("installed", []):
            if f"openai:{name}" not in rows:
                row(f"openai:{name}").roles.append("on server")

    for status in rows.values():
        try:
            prefix, rest = split_model(status.model)
        except AgentlakeError as exc:
            status.reachable, status.detail = False, exc.message
            continue
        if prefix == "ollama":
            _fill_ollama(status, rest, ollama, settings)
        elif prefix == "ollama-cloud":
            _fill_ollama(status, rest, cloud, settings, cloud=True)
        elif prefix == "openai":
            _fill_openai(status, rest, openai, settings)
        else:
            _fill_local(status, settings)
        if status.context_window is None and prefix in ("ollama", "ollama-cloud", "openai", "llamacpp"):
            info = lookup_model(prefix, rest, settings)
            status.context_window, status.window_source = info.context_window, info.source
            status.thinking, status.schema_ = info.supports_thinking, info.supports_schema
    return sorted(rows.values(), key=lambda s: (not s.roles or s.roles == ["on server"], s.model))


def _with_hint(exc: AgentlakeError) -> str:
    hint = getattr(exc, "hint", "")
    return f"{exc.message}; {hint}" if hint else exc.message


def _probe_ollama(settings: Settings, *, cloud: bool = False) -> dict:
    # Lazy (start-up time): the LLM layer loads on the first model call.
    from agentlake.llm.ollama import cloud_server_from_settings, server_from_settings

    try:
        server = cloud_server_from_settings(settings) if cloud else server_from_settings(settings)
    except AgentlakeError as exc:  # no key for the cloud
        return {"error": exc.message}
    try:
        return {
            "installed": server.tags(PROBE_TIMEOUT_S),
            "loaded": None if cloud else server.ps(PROBE_TIMEOUT_S),  # a hosted Ollama loads on demand
            "host": server.host,
        }
    except AgentlakeError as exc:
        return {"error": _with_hint(exc), "host": server.host}
    finally:
        server.close()


def _probe_openai(settings: Settings) -> dict:
    # Lazy (start-up time): the LLM layer loads on the first model call.
    from agentlake.llm.openai_compat import server_from_settings

    if not settings.openai_base_url and not settings.openai_api_key:
        return {"error": "not configured: set OPENAI_BASE_URL (and OPENAI_API_KEY if it needs one)"}
    try:
        server = server_from_settings(settings)
    except AgentlakeError as exc:
        return {"error": exc.message}
    try:
        return {"installed": server.models(PROBE_TIMEOUT_S), "host": server.base_url}
    except AgentlakeError as exc:
        return {"error": _with_hint(exc), "host": server.base_url}
    finally:
        server.close()


def _fill_ollama(
    status: ModelStatus, name: str, probe: dict, settings: Settings, *, cloud: bool = False
) -> None:
    if "error" in probe:
        status.reachable, status.detail = False, probe["error"]
        return
    installed = any(_ollama_names(name) & _ollama_names(other) for other in probe["installed"])
    status.reachable = installed
    if probe["loaded"] is not None:
        status.loaded = any(_ollama_names(name) & _ollama_names(other) for other in probe["loaded"])
    if not installed:
        status.detail = (
            f"not offered by {probe['host']}"
            if cloud
            else f"not installed on {probe['host']}: ollama pull {name}"
        )
        return
    # Lazy (start-up time): the LLM layer loads on the first model call.
    from agentlake.llm.ollama import OllamaCloudProvider, OllamaProvider

    provider = (OllamaCloudProvider if cloud else OllamaProvider)(name, settings)
    try:
        info = provider.model_info
        status.context_window, status.window_source = info.context_window, info.source
        status.thinking, status.schema_ = info.supports_thinking, info.supports_schema
    finally:
        provider.close()
    status.detail = f"on {probe['host']}"


def _fill_openai(status: ModelStatus, name: str, probe: dict, settings: Settings) -> None:
    if "error" in probe:
        status.reachable, status.detail = False, probe["error"]
        return
    status.reachable = name in probe["installed"]
    if not status.reachable:
        status.detail = f"{probe['host']} does not list it"
        return
    # Lazy (start-up time): the LLM layer loads on the first model call.
    from agentlake.llm.openai_compat import OpenAIProvider

    provider = OpenAIProvider(name, settings)
    try:
        info = provider.model_info  # what the server says about it, under the models file
        status.context_window, status.window_source = info.context_window, info.source
        status.thinking, status.schema_ = info.supports_thinking, info.supports_schema
    finally:
        provider.close()
    status.detail = f"on {probe['host']}"


def _fill_local(status: ModelStatus, settings: Settings) -> None:
    try:
        provider = get_provider(status.model, settings)
    except AgentlakeError as exc:
        status.reachable, status.detail = False, exc.message
        return
    if provider.name == "llamacpp":
        # Lazy (start-up time): llama.cpp is an optional extra.
        from agentlake.llm.llama_cpp import import_llama_cpp

        try:
            import_llama_cpp()
        except AgentlakeError as exc:
            status.reachable, status.detail = False, exc.message
            return
    capabilities = provider.capabilities
    status.reachable, status.detail = True, "in process"
    status.context_window, status.window_source = capabilities.context_window, "provider"
    status.thinking, status.schema_ = capabilities.supports_thinking, capabilities.supports_schema


# --- memory: what the model hosts report (GET /vram) ---------------------------------------


class LoadedModel(BaseModel):
    """A model loaded in memory now, as its host reports it. Sizes in bytes; ``None``: the host
    does not say."""

    model: str
    size_bytes: int | None = Field(None, description="Memory the loaded model takes (Ollama's size).")
    vram_bytes: int | None = Field(None, description="Of that, in GPU memory (Ollama's size_vram).")
    context_window: int | None = Field(None, description="The context it was loaded with.")
    expires_at: str | None = Field(None, description="When the host unloads it if unused (Ollama).")
    detail: str = ""


class ModelHost(BaseModel):
    """One place models run: an Ollama server, or this process (``local:`` models)."""

    host: str
    reachable: bool
    loaded: list[LoadedModel] = Field(default_factory=list)
    process_rss_bytes: int | None = Field(
        None, description="In process: the resident memory of the whole process, models included."
    )
    detail: str = ""


def memory_report(settings: Settings) -> list[ModelHost]:
    """What the model hosts report about loaded models and memory: the Ollama server
    (``/api/ps``) and this process's ``local:`` models. Never raises for an unreachable host."""
    return [_ollama_memory(settings), _local_memory()]


def _ollama_memory(settings: Settings) -> ModelHost:
    # Lazy (start-up time): the LLM layer loads on the first model call.
    from agentlake.llm.ollama import server_from_settings

    server = server_from_settings(settings)
    where = f"ollama {server.host}"
    try:
        running = server.running(PROBE_TIMEOUT_S)
    except AgentlakeError as exc:
        return ModelHost(host=where, reachable=False, detail=_with_hint(exc))
    finally:
        server.close()
    return ModelHost(
        host=where,
        reachable=True,
        loaded=[
            LoadedModel(
                model=f"ollama:{entry.get('name') or entry.get('model')}",
                size_bytes=_bytes(entry.get("size")),
                vram_bytes=_bytes(entry.get("size_vram")),
                context_window=_bytes(entry.get("context_length")),
                expires_at=str(entry["expires_at"]) if entry.get("expires_at") else None,
            )
            for entry in running
        ],
    )


def _local_memory() -> ModelHost:
    # Lazy (start-up time): the local engines load only when a local model runs.
    from agentlake.llm.local.engines import loaded_models
    from agentlake.llm.packaged import PACKAGED_MODELS

    loaded = []
    for name, engine, window in loaded_models():
        packaged = PACKAGED_MODELS.get(name)
        loaded.append(
            LoadedModel(
                model=f"local:{name}",
                context_window=window,
                detail=f"{engine} engine; GGUF {packaged.size} bytes" if packaged else f"{engine} engine",
            )
        )
    return ModelHost(host="in process", reachable=True, loaded=loaded, process_rss_bytes=_rss_bytes())


def _bytes(value: object) -> int | None:
    try:
        return int(value) if value is not None else None  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return None


def _rss_bytes() -> int | None:
    """Resident memory of this process (Linux ``/proc``; ``None`` elsewhere)."""
    try:
        with open("/proc/self/statm") as statm:
            pages = int(statm.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE")
