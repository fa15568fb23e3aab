"""Every agentlake setting, declared once, as a table.

Each field below is one row: name, type, default and help (its ``description``). Values are
resolved in this order, first hit wins:

1. arguments (CLI options and keyword arguments to :func:`load_settings`);
2. environment variables ``AGENTLAKE_<NAME>`` (a few honour the ecosystem's own variables too:
   ``OLLAMA_HOST``, ``OLLAMA_CLOUD_KEY``/``OLLAMA_API_KEY``, ``OPENAI_BASE_URL``, ``OPENAI_API_KEY``);
3. the config file: ``agentlake.toml`` in the working directory, or the file named by
   ``AGENTLAKE_CONFIG``;
4. the default.

``docs/configuration.md`` is generated from this table (``agentlake config docs``) and a
test fails when the two drift apart.
"""

from __future__ import annotations

import os
import re
from functools import cached_property
from pathlib import Path
from typing import Any

from pydantic import AliasChoices, Field, SecretStr, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from agentlake.errors import UserError

CONFIG_ENV = "AGENTLAKE_CONFIG"
DEFAULT_CONFIG_FILE = "agentlake.toml"
SCOPES = ("read", "write", "admin")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def _env(name: str) -> AliasChoices:
    """Accept ``AGENTLAKE_<NAME>`` first, then the ecosystem's own variable."""
    return AliasChoices(f"AGENTLAKE_{name}", name, name.lower())


class Settings(BaseSettings):
    """The settings table. Add a row here, with a ``description``, and nowhere else."""

    model_config = SettingsConfigDict(
        env_prefix="AGENTLAKE_",
        extra="forbid",
        populate_by_name=True,
        validate_default=True,
    )

    # --- lake ---------------------------------------------------------------------------
    data_dir: Path = Field(
        Path(".agentlake"), description="Directory for the lake, observer store, indexes and caches."
    )
    lake_file: str = Field("lake.duckdb", description="DuckDB file of the lakehouse, relative to data_dir.")
    sql_timeout_s: float = Field(
        10.0, gt=0, description="Read-only SQL queries are interrupted after this many seconds."
    )
    sql_max_rows: int = Field(
        1000, gt=0, description="Read-only SQL results are capped at this many rows (flagged truncated)."
    )
    sql_max_result_bytes: int = Field(
        2_000_000,
        gt=0,
        description="Read-only SQL results are cut at about this many bytes (as JSON; flagged truncated); a single larger value keeps its head.",
    )
    duckdb_threads: int = Field(2, gt=0, description="Threads DuckDB may use.")
    database_url: SecretStr | None = Field(
        None,
        description="PostgreSQL URL (postgresql://user:password@host:port/dbname) holding the operation log and the lesson store instead of their DuckDB files, so that several processes and hosts write them at once. Unset: the DuckDB files in data_dir.",
    )
    duckdb_memory_limit: str = Field(
        "2GB",
        pattern=r"^\s*\d+(\.\d+)?\s*([KMGT]i?B)\s*$",
        description="DuckDB's memory limit for the lake (e.g. 2GB, 512MiB); a query that needs more fails instead of growing the process. DuckDB's own default is 80% of RAM.",
    )

    log_level: str = Field(
        "WARNING",
        description="Least severe log record printed on stderr: DEBUG, INFO, WARNING, ERROR or CRITICAL; the CLI's -v (INFO) and -vv (DEBUG) override it for one command.",
    )

    # --- embed --------------------------------------------------------------------------
    embed_model: str = Field(
        "local:all-MiniLM-L6-v2",
        description="Embedder: local:all-MiniLM-L6-v2 (offline, default), ollama:MODEL or openai:MODEL.",
    )
    embed_batch_size: int = Field(128, gt=0, description="Texts per embedding batch.")
    embed_backend: str = Field(
        "auto",
        pattern="^(auto|torch|openvino)$",
        description="Engine of the local: embedder: openvino (the model exported once to ONNX in model_cache_dir, run by OpenVINO; the embed extra installs it), torch (sentence-transformers) or auto (openvino when installed and the model is a transformer with mean pooling, else torch). Both run bf16 where the CPU has it and give vectors that share a name and a cache.",
    )

    # --- llm ----------------------------------------------------------------------------
    ollama_host: str = Field(
        "http://127.0.0.1:11434",
        validation_alias=_env("OLLAMA_HOST"),
        description="Ollama server of ollama:MODEL models (also OLLAMA_HOST).",
    )
    ollama_api_key: SecretStr | None = Field(
        None,
        description="Bearer key sent to ollama_host when it needs one (an Ollama behind an authenticating proxy). Unset and ollama_host is ollama_cloud_host: the cloud's key.",
    )
    ollama_cloud_host: str = Field(
        "https://ollama.com",
        description="Ollama Cloud (or another hosted Ollama) of ollama-cloud:MODEL models, beside the local ollama_host in the same process.",
    )
    ollama_cloud_api_key: SecretStr | None = Field(
        None,
        validation_alias=AliasChoices(
            "AGENTLAKE_OLLAMA_CLOUD_API_KEY",
            "OLLAMA_CLOUD_KEY",
            "ollama_cloud_key",
            "OLLAMA_API_KEY",
            "ollama_cloud_api_key",
        ),
        description="Bearer key of ollama_cloud_host, sent only there; also OLLAMA_CLOUD_KEY or OLLAMA_API_KEY.",
    )
    openai_base_url: str | None = Field(
        None,
        validation_alias=_env("OPENAI_BASE_URL"),
        description="OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1 (also OPENAI_BASE_URL).",
    )
    openai_api_key: SecretStr | None = Field(
        None,
        validation_alias=_env("OPENAI_API_KEY"),
        description="Key for the OpenAI-compatible server (also OPENAI_API_KEY).",
    )
    llm_timeout_s: float = Field(120.0, gt=0, description="Timeout for one model call, in seconds.")
    llm_max_retries: int = Field(
        3, ge=0, description="Retries on connection errors, 429 and 5xx (jittered backoff)."
    )
    llm_breaker_failures: int = Field(
        5, gt=0, description="Consecutive failures that open a provider+model circuit breaker."
    )
    llm_breaker_cooldown_s: float = Field(
        30.0, gt=0, description="Seconds an open breaker waits before a half-open probe."
    )
    llm_max_continuations: int = Field(
        3, ge=0, description="Continuations of a structurally incomplete reply before giving up."
    )
    llm_max_tokens_cap: int = Field(
        16384, gt=0, description="Upper bound when a reply's token budget is doubled on retry."
    )
    llm_models_file: Path | None = Field(
        None, description="Extra model registry (TOML or JSON) merged over the built-in one."
    )
    model_cache_dir: Path | None = Field(
        None,
        description="Where the packaged local: models are assembled and verified, with their converted weights. Empty: $XDG_CACHE_HOME/agentlake/models (~/.cache/agentlake/models): derived data, rebuilt from the installed packages, shared by every project on the machine.",
    )
    local_engine: str = Field(
        "auto",
        pattern="^(auto|transformers|llamacpp)$",
        description="Engine of local: models: transformers (the installed CPU torch, int8; measured faster per turn), llamacpp (llama-cpp-python, make local-llm; loads in seconds) or auto (transformers).",
    )
    local_context_window: int = Field(
        8192,
        ge=512,
        description="Context window (tokens) local: models are run with, at most what the model was trained on; each cached prompt costs KV memory in proportion.",
    )
    local_threads: int = Field(0, ge=0, description="CPU threads of the local: engines; 0: every core.")
    local_draft_tokens: int = Field(
        16,
        ge=0,
        le=32,
        description="Prompt-lookup decoding on the transformers engine: tokens guessed from the prompt and checked in the pass of the token before them (greedy replies only; the same reply, up to rounding); 0: off.",
    )
    default_model: str = Field(
        "auto",
        description="Model of every LLM door whose own setting is empty (fill --policy llm and ask: executor_model; the graph's thinker: graph_model; the llm lesson extractor: learn_model): auto = the largest packaged local: model installed (local:qwen2.5-coder-1.5b, else local:qwen2.5-coder-0.5b; `agentlake models install 1.5b`), none = no default, or a model string.",
    )
    local_torch_dtype: str = Field(
        "int8",
        pattern="^(int8|bfloat16)$",
        description="Weights of local: models on the transformers engine: int8 (linear layers quantised on load; faster decoding on CPU) or bfloat16 (faster prompt evaluation).",
    )

    # --- observe ------------------------------------------------------------------------
    observer_file: str = Field(
        "observe.duckdb", description="DuckDB file of the operation log, relative to data_dir."
    )
    observer_url: str = Field("http://127.0.0.1:3800", description="Where ObserverClient sends events.")
    observer_host: str = Field("127.0.0.1", description="Bind address of `agentlake observer serve`.")
    observer_port: int = Field(3800, gt=0, lt=65536, description="Port of `agentlake observer serve`.")
    observer_ring_size: int = Field(10000, gt=0, description="Recent ops kept in memory for live stats.")
    observer_queue_max: int = Field(100000, gt=0, description="Pending writes before ingest answers 503.")
    observer_checkpoint_mb: float = Field(
        64.0,
        gt=0,
        description="Write-ahead log size (MB) at which a background thread checkpoints the observer store, so that no commit stalls on one. Larger: fewer checkpoints and less rewriting, but a longer log replay after a crash.",
    )
    observer_sink: str = Field(
        "embedded",
        pattern="^(embedded|http)$",
        description="Where this process records ops: embedded (opens the observer DuckDB file; one process per file) or http (sends to observer_url, spooling to data_dir/spool while it is down; for worker processes).",
    )
    observer_flat_fields: str = Field(
        "staffer_id,sig_hash,event_kind,role,city,state,count,rescue_attempted,rescue_succeeded",
        description="Comma-separated fields that mark a flat POST /event body (the event of the seed system agentlake grew from: no endpoint, its fields at the top level); such a body is stored as an op of observer_flat_endpoint with those fields as labels.",
    )
    observer_flat_endpoint: str = Field(
        "scenario:fill",
        min_length=1,
        max_length=128,
        description="The endpoint a flat POST /event body (observer_flat_fields) is stored under.",
    )
    observer_api_key: SecretStr | None = Field(
        None,
        description="API key (write scope) that ObserverClient sends when the observer service requires keys.",
    )
    observe_dashboard_requests: bool = Field(
        False,
        description="Record the dashboard's own requests as gateway ops: its page and assets, its sign-in and the reads that draw it (GET /, /static/, /api/session, GET /api/graphs, /api/scenarios/latest). Off: the op log shows the work; the dashboard's chat turns, a graph switch and everything agents do are recorded either way.",
    )
    otlp_grpc_port: int = Field(
        4317,
        ge=0,
        lt=65536,
        description="Port of the OTLP/gRPC receiver that `agentlake serve` and `agentlake observer serve` start beside their HTTP routes, on the same host; 0: none. A port in use is logged and skipped.",
    )

    # --- security and gateway -----------------------------------------------------------
    api_keys: SecretStr | None = Field(
        None,
        description="Comma-separated KEY:SCOPE pairs (scopes: read, write, admin), or KEY:SCOPE:NAME to name who holds the key (the dashboard shows the name and a chat session belongs to it). Once set, every endpoint needs a key but /health and the dashboard's page, assets and sign-in (/, /static/, /api/session).",
    )
    api_key: SecretStr | None = Field(
        None,
        description="The API key the CLI sends to a running `agentlake serve` of its data_dir (commands beside a running server go through its HTTP API); needed once AGENTLAKE_API_KEYS is set there.",
    )
    playbook_boost: bool = Field(
        True,
        description="Rank first, in the agents' candidate searches (the rules policy's, find_workers, hybrid_search over workers), the workers a client accepted before, when the task was given lessons for that client: a playbook boost, each hit naming the lessons behind it. false: lessons act as filters only.",
    )
    trusted_user_header: str | None = Field(
        None,
        description="A request header naming the signed-in user, set by a trusted authenticating proxy in front of `agentlake serve` (e.g. X-Forwarded-User): a dashboard chat session then belongs to that user. Set it only when every request comes through that proxy, which must overwrite the header: anyone reaching the gateway directly could send it.",
    )
    max_body_bytes: int = Field(
        5 * 1024 * 1024, gt=0, description="Largest request body an HTTP endpoint accepts."
    )
    rate_limit_per_minute: int = Field(
        600,
        ge=0,
        description="Requests a minute one API key may make to `agentlake serve` (a dashboard session counts as its key; with no key configured or sent, one client address); past it the answer is 429 with Retry-After, and other keys are unaffected. Counted in each gateway process: N processes allow N times it. /health and the observer's ingest (POST /observer/..., which has its own 503 backpressure) are not counted. 0: no limit.",
    )
    rate_limit_write_per_minute: int = Field(
        120,
        ge=0,
        description="Of those, requests a minute one key may make to routes that need the write or admin scope (/log, lesson curation, switching the active graph, the MCP tools log_outcome and propose_lesson); per process, as rate_limit_per_minute. 0: no limit of their own.",
    )
    rate_limit_model_per_minute: int = Field(
        30,
        ge=0,
        description="Of those, requests a minute one key may make that call a model (POST /fill, POST /ask, each graph chat message on /ws, the MCP tool ask); per process, as rate_limit_per_minute. 0: no limit of their own.",
    )
    rate_limit_concurrent: int = Field(
        1,
        ge=0,
        description="Requests one API key (or, without keys, one client address) may have in progress at once in a gateway process, refused ones included; more wait their turn before they are charged, so one caller's burst cannot hold the event loop and the workers while other keys wait; and while a caller sending one request at a time has one in progress, a caller with requests waiting starts its next only when that ends (at most 0.1 s later). Model calls (POST /fill, POST /ask) and streams (WebSockets, server-sent events) take no turn. 0: no limit.",
    )
    gateway_host: str = Field("127.0.0.1", description="Bind address of `agentlake serve`.")
    gateway_port: int = Field(3700, gt=0, lt=65536, description="Port of `agentlake serve`.")
    gateway_access_log: bool = Field(
        False,
        description="Log one line per HTTP request (uvicorn's access log) from `agentlake serve`. Off by default: every request is already recorded as an op, and the log line costs CPU on the hot path.",
    )

    # --- learn --------------------------------------------------------------------------
    learn_file: str = Field(
        "lessons.duckdb",
        description="DuckDB file of the lesson store (lessons, history, citations, outcomes), relative to data_dir.",
    )
    learn_llm_timeout_s: float = Field(
        10.0,
        gt=0,
        description="Timeout of one llm lesson-extractor call; on expiry the heuristic extractor takes over.",
    )
    learn_extractor: str = Field(
        "induction",
        description="Lesson extractor backend: induction (the heuristic's lessons plus client rules induced "
        "from judged evidence), heuristic, llm, or an installed plugin's name (docs/plugins.md).",
    )
    learn_model: str | None = Field(
        None,
        description="Model for the llm lesson extractor, e.g. ollama:qwen3:4b; empty: default_model (the embedded model).",
    )
    learn_temperature: float | None = Field(
        0.0,
        ge=0,
        le=2,
        description="Sampling temperature of the llm lesson extractor's calls; empty: the server's default.",
    )
    learn_interval_s: float = Field(
        300.0, gt=0, description="Seconds between scheduled lesson extraction runs."
    )
    learn_schedule: bool = Field(
        True, description="Learn lessons from new ops every learn_interval_s inside `agentlake serve`."
    )
    learn_sources: str = Field(
        "scenario,agent,llm,gateway,mcp",
        description="Comma-separated op sources the learner learns lessons from (scenario, agent, llm, gateway, mcp, otlp, external). An op recorded inside a gateway or MCP request counts as that door's (its attributes.origin): every door teaches by default; outside traces (otlp) and events posted from outside (external) teach nothing unless listed here.",
    )
    learn_endpoints: str = Field(
        "fill.*,task.*,tool.*,llm.*,overseer.*,ask.*,POST /sql,mcp.sql",
        description="Comma-separated endpoints (a trailing * matches a prefix) whose ops the learner learns from: the ones that describe the agents' work, answers and their feedback, and SQL sent through the gateway and MCP.",
    )
    learn_dedup_threshold: float = Field(
        0.9, gt=0, le=1, description="Embedding similarity above which a new lesson merges into an old one."
    )
    learn_min_runs_for_retire: int = Field(
        5, gt=0, description="Runs with a lesson before a negative measured effect retires it."
    )
    lesson_token_budget: int = Field(400, gt=0, description="Token budget for lessons put into one prompt.")
    ask_lessons: bool = Field(
        True,
        description="Give ask (agentlake ask, POST /ask, the MCP ask tool) the data lessons learned so far: notes about the tables, worked examples, names to rewrite. Off: the learning-off twin (agentlake ask --no-lessons).",
    )

    # --- agents and scenarios -----------------------------------------------------------
    executor_model: str | None = Field(
        None,
        description="Model of the executor agent, of ask and of the order reader (an order in words given to fill, POST /fill or the MCP fill tool), e.g. ollama:qwen3:4b; empty: default_model (the embedded model). Staffer profiles do not fall back to default_model.",
    )
    reviewer_model: str | None = Field(
        None, description="Model of the reviewer agent (defaults to the executor's)."
    )
    overseer_model: str | None = Field(
        None,
        description="Model that also drafts the overseer tier's end-of-day lessons, e.g. local:qwen2.5-coder-1.5b; empty (default): the overseer is code only.",
    )
    executor_temperature: float | None = Field(
        None,
        ge=0,
        le=2,
        description="Sampling temperature of the executor's model calls (0: greedy); empty: the model server's default (Ollama 0.8, vLLM the model's own, local: greedy).",
    )
    reviewer_temperature: float | None = Field(
        None,
        ge=0,
        le=2,
        description="Sampling temperature of the reviewer's model calls; empty: the model server's default.",
    )
    overseer_temperature: float | None = Field(
        None,
        ge=0,
        le=2,
        description="Sampling temperature of the overseer model's calls; empty: the model server's default.",
    )
    agent_turn_budget: int = Field(
        12, gt=0, description="Executor+reviewer turns before a task ends as failed."
    )
    agent_min_availability: float = Field(
        0.3,
        ge=0,
        le=1,
        description="Verification rejects workers whose availability score is below this as unavailable.",
    )
    runs_dir: Path = Field(Path("runs"), description="Where scenario runs write their results.")

    # --- graph runtime and dashboard ----------------------------------------------------
    graph_model: str = Field(
        "",
        description="Model of the graph's thinker and director (and of the chat's order reader, for a staffing order in words), e.g. ollama:qwen3:4b; empty: default_model (the embedded model), else function:graph-demo, a scripted demo shipped in the package (no LLM needed; the dashboard and `graph chat` say so when it answers for want of a model).",
    )
    graph_sensor_tick_s: float = Field(
        5.0,
        ge=0,
        description="Seconds between the dashboard's checks of its own workspace: each tick it compares what it shows (controls, label values, table shapes) with what it last reported and reports a change, and says when the page has had no input for a minute; the graph's sensor compares the report with what was sent and notes idle returns. 0: reports after each render only.",
    )
    graph_trace_max_bytes: int = Field(
        5 * 1024 * 1024,
        gt=0,
        description="Size at which the graph's JSONL trace file (data_dir/graph-trace.jsonl) is rotated; 3 rotated files are kept.",
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml_file = os.environ.get(CONFIG_ENV, DEFAULT_CONFIG_FILE)
        return (init_settings, env_settings, TomlConfigSettingsSource(settings_cls, toml_file=toml_file))

    @field_validator("learn_extractor")
    @classmethod
    def _extractor_name(cls, value: str) -> str:
        # The registry knows which names exist (a plugin's too) and refuses others when used.
        if not value or value != value.strip() or ":" in value or " " in value:
            raise ValueError("must be an extractor's name: 'induction', 'heuristic', 'llm' or a plugin's")
        return value

    @field_validator("log_level")
    @classmethod
    def _log_level(cls, value: str) -> str:
        level = value.strip().upper()
        if level not in LOG_LEVELS:
            raise ValueError(f"must be one of {', '.join(LOG_LEVELS)}")
        return level

    @field_validator("api_keys")
    @classmethod
    def _parse_keys(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None:
            _parse_api_keys(value.get_secret_value())
        return value

    @property
    def model_cache_path(self) -> Path:
        """``model_cache_dir``, else :func:`default_model_cache_dir`."""
        return Path(self.model_cache_dir).expanduser() if self.model_cache_dir else default_model_cache_dir()

    @property
    def lake_path(self) -> Path:
        return self.data_dir / self.lake_file

    @property
    def observer_path(self) -> Path:
        return self.data_dir / self.observer_file

    @cached_property
    def api_key_scopes(self) -> dict[str, str]:
        """Map of configured API key -> scope; empty when no key is configured."""
        return (
            {key: scope for key, scope, _ in _parse_api_keys(self.api_keys.get_secret_value())}
            if self.api_keys
            else {}
        )

    @cached_property
    def api_key_names(self) -> dict[str, str]:
        """Map of configured API key -> the name of who holds it (``KEY:SCOPE:NAME``), for the
        keys that have one."""
        if not self.api_keys:
            return {}
        return {key: name for key, _, name in _parse_api_keys(self.api_keys.get_secret_value()) if name}


_KEY_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9._@-]{0,63}$")


def _parse_api_keys(raw: str) -> list[tuple[str, str, str | None]]:
    """``(key, scope, name or None)`` per entry: ``KEY:SCOPE`` or ``KEY:SCOPE:NAME`` (a name is
    never a scope word, so a key with a colon in it still reads as before)."""
    entries = []
    for item in filter(None, (part.strip() for part in raw.split(","))):
        head, sep, last = item.rpartition(":")
        name = None
        if sep and last not in SCOPES and _KEY_NAME.match(last):
            key, sep2, scope = head.rpartition(":")
            if sep2 and key and scope in SCOPES:
                head, last, name = key, scope, last
        if not sep or not head or last not in SCOPES:
            raise ValueError(
                f"each entry must be KEY:SCOPE or KEY:SCOPE:NAME with SCOPE one of {', '.join(SCOPES)}"
            )
        entries.append((head, last, name))
    return entries


def default_model_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/agentlake/models``, else ``~/.cache/agentlake/models``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "agentlake" / "models"


def load_settings(**overrides: Any) -> Settings:
    """Resolve the settings: ``overrides`` (arguments), env, config file, defaults.

    ``None`` overrides are ignored so CLI options can pass their unset values straight in.
    Raises ``UserError`` naming the setting, its variable and the problem.
    """
    from pydantic import ValidationError

    given = {key: value for key, value in overrides.items() if value is not None}
    try:
        return Settings(**given)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            name = ".".join(str(part) for part in err["loc"]) or "settings"
            problems.append(f"{name} (AGENTLAKE_{name.upper()}): {err['msg']}")
        raise UserError("invalid setting: " + "; ".join(problems)) from None
    except (OSError, ValueError) as exc:  # an unreadable or malformed agentlake.toml
        raise UserError(
            f"cannot read the config file {os.environ.get(CONFIG_ENV, DEFAULT_CONFIG_FILE)}: {exc}"
        ) from None


def settings_table() -> list[tuple[str, str, str, str]]:
    """Rows of (name, type, default, help) for docs and ``agentlake config docs``."""
    rows = []
    for name, field in Settings.model_fields.items():
        annotation = getattr(field.annotation, "__name__", None) or re.sub(
            r"\b(typing|pathlib|pydantic\.types)\.", "", str(field.annotation)
        )
        default = field.default
        shown = "" if default is None else str(default)
        rows.append((name, annotation, shown, field.description or ""))
    return rows


def configuration_markdown() -> str:
    """The text of ``docs/configuration.md``, generated from the table."""
    lines = [
        "# Configuration",
        "",
        "Generated by `agentlake config docs` from `src/agentlake/settings.py`; do not edit by hand.",
        "",
        "Each setting resolves from, first hit wins: command-line arguments, the environment variable",
        "`AGENTLAKE_<NAME>` (upper case), the config file (`agentlake.toml` in the working directory, or",
        "the file named by `AGENTLAKE_CONFIG`; keys are the lower-case names below), then the default.",
        "",
        "| name | variable | type | default | help |",
        "|---|---|---|---|---|",
    ]
    for name, annotation, default, help_text in settings_table():
        variable = f"AGENTLAKE_{name.upper()}"
        if name in ("ollama_host", "openai_base_url", "openai_api_key"):
            variable += f", {name.upper()}"
        elif name == "ollama_cloud_api_key":
            variable += ", OLLAMA_CLOUD_KEY, OLLAMA_API_KEY"
        cells = (f"`{name}`", f"`{variable}`", annotation, f"`{default}`", help_text)
        lines.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    # GitHub splits a table row at every unescaped "|", inside code spans too
    # ("SecretStr | None" made six cells under five columns).
    return text.replace("|", "\\|")
