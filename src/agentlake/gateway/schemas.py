"""Typed request and response bodies of the gateway (and the MCP tools that mirror it).

Owns the wire shapes only; each model converts from the library's own types where they
differ. Field descriptions end up in the OpenAPI document, so they are written for API users.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, field_validator

from agentlake.learn import Lesson, LessonDraft, LessonEvent, TaskKey
from agentlake.learn.loop import CycleStatus
from agentlake.llm.inventory import ModelHost, ModelStatus


class Health(BaseModel):
    """The gateway is up; it says nothing about the model servers (see ``/models``)."""

    status: str = Field("ok", description="Always 'ok' when the process answers.")
    version: str = Field(..., description="agentlake version.")
    uptime_s: float = Field(..., ge=0, description="Seconds since the app was created.")
    auth: bool = Field(..., description="True when API keys are configured (every other endpoint needs one).")


# --- lake -------------------------------------------------------------------------------

Scalar = str | int | float | bool | None


class SQLRequest(BaseModel):
    """One read-only query: a single SELECT or WITH statement, checked by the lake's guard."""

    model_config = ConfigDict(extra="forbid")

    sql: str = Field(
        ...,
        min_length=1,
        max_length=100_000,
        description="One SELECT/WITH statement; `?` for parameters.",
        examples=["SELECT role, count(*) AS n FROM workers GROUP BY role ORDER BY n DESC"],
    )
    params: list[Scalar] = Field(
        default_factory=list, max_length=100, description="Values bound to the `?` placeholders."
    )
    max_rows: int | None = Field(
        None,
        ge=1,
        le=100_000,
        description="Return at most this many rows (never more than the server's sql_max_rows).",
    )


class SQLResponse(BaseModel):
    """The rows of a query, capped; ``truncated`` says more rows existed."""

    columns: list[str]
    rows: list[list[Any]] = Field(
        ..., description="Row values in column order; dates and times as ISO 8601 strings."
    )
    row_count: int = Field(..., ge=0)
    truncated: bool = Field(
        ...,
        description="True when the result was cut at the row cap (sql_max_rows) or the byte cap (sql_max_result_bytes).",
    )
    elapsed_ms: float = Field(..., ge=0)

    @classmethod
    def from_result(cls, result: Any) -> SQLResponse:
        return cls(
            columns=result.columns,
            rows=result.rows,
            row_count=len(result.rows),
            truncated=result.truncated,
            elapsed_ms=result.elapsed_ms,
        )


# DuckDB's INTEGER: an id outside it cannot exist, so it is a validation error, not a failed lookup.
WORKER_ID_MAX = 2**31 - 1


class WorkerRef(BaseModel):
    """One worker, by key (GET /profile/{worker_id} and the MCP tool worker_profile)."""

    model_config = ConfigDict(extra="forbid")

    worker_id: int = Field(..., ge=0, le=WORKER_ID_MAX, description="The worker's integer key (worker_id).")


# --- learn ------------------------------------------------------------------------------

LESSON_ID_PATTERN = r"^L-[A-Za-z0-9_-]{1,64}$"
LessonStatus = Literal["pending", "active", "conflict-hold", "retired"]


class LessonQuery(BaseModel):
    """Which lessons to list: the filters, defaults and bounds of GET /lessons and of the MCP
    tool lessons (one definition, so the two cannot drift)."""

    status: list[LessonStatus] = Field(
        default_factory=list, description="Any of these statuses (repeat the parameter); default: all."
    )
    domain: str | None = Field(
        None, max_length=64, description="Only lessons of this domain (staffing, data, tools, playbook, ...)."
    )
    scope: Literal["project", "global"] | None = Field(
        None, description="Only project lessons, or only global ones (learned in several projects)."
    )
    task_kind: str | None = Field(None, max_length=64, description="Only lessons for this kind of task.")
    role: str | None = Field(None, max_length=128, description="Only lessons for this role.")
    client_id: str | None = Field(None, max_length=128, description="Only lessons for this client.")
    city: str | None = Field(None, max_length=128, description="Only lessons for this city.")
    state: str | None = Field(None, max_length=32, description="Only lessons for this state.")
    tool: str | None = Field(None, max_length=128, description="Only lessons about this tool.")
    dataset: str | None = Field(None, max_length=128, description="Only data lessons about this dataset.")
    limit: int = Field(100, ge=1, le=1000, description="Page size.")
    offset: int = Field(0, ge=0, le=1_000_000, description="Lessons to skip.")


class LessonRef(BaseModel):
    """One lesson, by id (GET /lessons/{lesson_id} and the MCP tool lesson)."""

    model_config = ConfigDict(extra="forbid")

    lesson_id: str = Field(..., pattern=LESSON_ID_PATTERN, description="A lesson id, e.g. L-3fa2b1c9d0.")


class LessonList(BaseModel):
    """Lessons matching the filters, highest confidence first."""

    lessons: list[Lesson]
    total: int = Field(..., ge=0, description="Lessons matching the filters before limit/offset.")


class LessonDetail(BaseModel):
    """One lesson as it stands, and every change that made it so (oldest first)."""

    lesson: Lesson
    history: list[LessonEvent]


class RetireRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: str = Field(
        ..., min_length=1, max_length=500, description="Why the lesson is retired (kept in its history)."
    )


class RollbackRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int = Field(..., ge=1, description="The version whose content becomes the new current version.")
    reason: str = Field("", max_length=500, description="Why (kept in the lesson's history).")


class LearnStatus(BaseModel):
    """The scheduled learner of this server: whether it runs and what its last cycles did."""

    running: bool = Field(..., description="Whether the learner's thread runs (learn_schedule).")
    interval_s: float | None = Field(None, description="Seconds between cycles.")
    cursor: int | None = Field(None, description="The op log's commit sequence read up to.")
    cycles: int = Field(0, description="Cycles run since the server started.")
    errors: int = Field(0, description="Cycles that failed (each is retried next interval).")
    ops_read: int = Field(0, description="Ops read since the server started.")
    last_error: str | None = None
    history: list[CycleStatus] = Field(default_factory=list, description="The last cycles, newest last.")


class LogOutcome(BaseModel):
    """How a run ended, so the lessons given to it can be measured."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["outcome"] = Field("outcome", description="Always 'outcome' for this request.")
    run_id: str = Field(..., min_length=1, max_length=128, description="The run the lessons were given to.")
    task: TaskKey = Field(..., description="The task the run did, as lessons are matched against it.")
    success: bool = Field(..., description="Whether the run did what it was asked.")
    score: float | None = Field(
        None, ge=-1e9, le=1e9, allow_inf_nan=False, description="Optional graded result."
    )
    lessons_given: list[str] = Field(
        default_factory=list, max_length=100, description="The lessons the run was given (their ids)."
    )
    lessons_cited: list[str] = Field(
        default_factory=list, max_length=100, description="The given lessons the run says it followed."
    )


class LogLesson(BaseModel):
    """A lesson proposal; curation decides whether it is added, merged or confirms an old one."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["lesson"] = Field("lesson", description="Always 'lesson' for this request.")
    lesson: LessonDraft = Field(..., description="The lesson proposed; curation decides its id and status.")
    reason: str = Field("", max_length=500, description="Why it is proposed (kept in its history).")


class LogNote(BaseModel):
    """A free-text note of how an operation went (the body the system agentlake grew from sent
    to /log): recorded as one op (``note.outcome``, source ``external``), shown with the other
    ops; not learned from unless ``learn_sources`` names ``external``."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["note"] = Field("note", description="'note' (optional: a body with `operation` is a note).")
    operation: str = Field(..., min_length=1, max_length=500, description="What was done, in words.")
    approach: str = Field("", max_length=2000, description="How it was done.")
    result: str = Field("", max_length=2000, description="What came of it.")
    context: str = Field("", max_length=2000, description="Anything else worth knowing.")


def _log_kind(body: Any) -> str | None:
    """The kind of a /log body: its ``kind``, else ``note`` when it names an ``operation``."""
    if isinstance(body, dict):
        return body.get("kind") or ("note" if "operation" in body else None)
    return getattr(body, "kind", None)


LogRequest = Annotated[
    Annotated[LogOutcome, Tag("outcome")]
    | Annotated[LogLesson, Tag("lesson")]
    | Annotated[LogNote, Tag("note")],
    Discriminator(
        _log_kind,
        custom_error_type="log_kind",
        custom_error_message="a /log body is an outcome (kind: outcome), a lesson (kind: lesson) "
        "or a note (operation, approach, result, context)",
    ),
]


class LogResponse(BaseModel):
    """What was recorded. For a lesson: what curation did with it."""

    kind: Literal["outcome", "lesson", "note"]
    op_id: str | None = Field(None, description="Notes: the op the note was recorded as.")
    run_id: str | None = None
    outcome: str | None = Field(
        None, description="Lessons: added, confirmed, merged, edited, contradiction, unchanged."
    )
    lesson_id: str | None = None
    version: int | None = None
    reason: str = ""


class Worker(BaseModel):
    """A row of the ``workers`` dataset. Columns added to the dataset later appear as extra fields."""

    model_config = ConfigDict(extra="allow")

    worker_id: int
    name: str | None = None
    role: str | None = None
    email: str | None = None
    phone: str | None = None
    city: str | None = None
    state: str | None = None
    zip: str | None = None
    lat: float | None = None
    lon: float | None = None
    skills: str | None = None
    certifications: str | None = None
    archetype: str | None = None
    reliability: float | None = None
    responsiveness: float | None = None
    engagement: float | None = None
    communications: float | None = None
    compliance: float | None = None
    availability: float | None = None
    resume_text: str | None = None


class SearchRequest(BaseModel):
    """Semantic search over one dataset's indexed text, optionally filtered first."""

    model_config = ConfigDict(extra="forbid")

    question: str = Field(
        ...,
        min_length=1,
        max_length=2000,
        description="What to look for, in words; rows are ranked by similarity to it.",
        examples=["certified welder with pipe experience"],
    )
    dataset: str = Field(
        "workers",
        pattern=r"^[a-z_][a-z0-9_]*$",
        max_length=63,
        description="A dataset with a built index (`agentlake index build`).",
    )
    where: str | None = Field(
        None,
        max_length=2000,
        description="Optional SQL WHERE fragment (no 'WHERE'), checked by the guard; empty or blank: no filter.",
    )
    k: int = Field(10, ge=1, le=100, description="How many results.")

    @field_validator("where")
    @classmethod
    def _no_filter(cls, value: str | None) -> str | None:
        return value if value is not None and value.strip() else None


class MatchRequest(BaseModel):
    """Hybrid fill search over workers: the SQL filter narrows, the question ranks."""

    model_config = ConfigDict(extra="forbid")

    where: str = Field(
        ...,
        min_length=1,
        max_length=2000,
        description="SQL WHERE fragment over workers (no 'WHERE').",
        examples=["role = 'Welder' AND state = 'OH' AND reliability >= 0.7"],
    )
    question: str = Field(
        ...,
        min_length=1,
        max_length=2000,
        description="What the job needs, in words; the eligible workers are ranked by similarity to it.",
        examples=["MIG and TIG welding, structural steel"],
    )
    k: int = Field(10, ge=1, le=100, description="How many workers to return.")


class SearchHit(BaseModel):
    """One ranked result."""

    doc_id: str = Field(..., description="Citable id, e.g. W-7995 for worker 7995.")
    key: int = Field(..., description="The row's integer key (worker_id for workers).")
    chunk_text: str = Field(..., description="The indexed text of the row.")
    score: float = Field(
        ..., description="Ranking score: cosine similarity to the question, after a boost if one was given."
    )
    similarity: float = Field(..., description="Cosine similarity to the question, before any boost.")
    sql_verified: bool = Field(..., description="The row was confirmed against DuckDB by the filter.")

    @classmethod
    def from_source(cls, source: Any) -> SearchHit:
        return cls(
            doc_id=str(source.doc_id),
            key=int(source.key),
            chunk_text=str(source.chunk_text),
            score=float(source.score),
            similarity=float(source.similarity),
            sql_verified=bool(source.sql_verified),
        )


class SearchResponse(BaseModel):
    hits: list[SearchHit]


# --- llm, ask, tools ----------------------------------------------------------------------


class ProviderSummary(BaseModel):
    """One provider prefix among the configured models."""

    name: str = Field(..., description="ollama, openai, scripted, function, llamacpp, ...")
    models: int = Field(..., ge=0, description="Configured or offered models of this provider.")
    reachable: bool = Field(..., description="At least one of its models answered the probe.")
    loaded: list[str] = Field(..., description="Models currently loaded in memory (Ollama's /api/ps).")


class ModelsResponse(BaseModel):
    """Providers, their reachability, and every configured model's status (replaces /vram)."""

    providers: list[ProviderSummary]
    models: list[ModelStatus]

    @classmethod
    def from_statuses(cls, rows: list[ModelStatus]) -> ModelsResponse:
        by_prefix: dict[str, list[ModelStatus]] = {}
        for row in rows:
            by_prefix.setdefault(row.model.partition(":")[0], []).append(row)
        providers = [
            ProviderSummary(
                name=name,
                models=len(group),
                reachable=any(r.reachable for r in group),
                loaded=[r.model for r in group if r.loaded],
            )
            for name, group in sorted(by_prefix.items())
        ]
        return cls(providers=providers, models=rows)


class VramResponse(BaseModel):
    """What the model hosts report about loaded models and memory (for clients of the system
    agentlake grew from; GET /models is the documented route)."""

    hosts: list[ModelHost]


class AskRequest(BaseModel):
    """A question for the lake, answered by a model with cited sources."""

    model_config = ConfigDict(extra="forbid")

    question: str = Field(
        ...,
        min_length=1,
        max_length=2000,
        description="A question about the data, in words.",
        examples=["How many welders live in Ohio?"],
    )
    model: str | None = Field(
        None, max_length=300, description="e.g. ollama:qwen3:4b; default: the server's executor_model."
    )
    dataset: str | None = Field(
        None,
        pattern=r"^[a-z_][a-z0-9_]*$",
        max_length=63,
        description="Pin the dataset searched when the answer needs search.",
    )
    k: int = Field(8, ge=1, le=50, description="Search results given to the model as evidence.")
    lessons: bool = Field(
        True, description="Give the answer the data lessons learned so far (false: the learning-off twin)."
    )


class FillRequest(BaseModel):
    """One staffing order to fill against the lake (``agentlake fill`` beside a running server)."""

    model_config = ConfigDict(extra="forbid")

    order: str = Field(
        ...,
        min_length=1,
        max_length=500,
        description="The order: in the grammar's form ('3 x Welder in Cleveland, OH at 08:00 on "
        "2026-04-22') or in words, read by the server's model; the outcome's reading says what was "
        "understood, and an order without a role, count or place is a 400 whose detail is the "
        "question back. Fields below override what it says.",
        examples=[
            "3 x Welder in Cleveland, OH for Riverfront Steel at 08:00 on 2026-04-22",
            "need two welders near Cleveland OH tomorrow morning, reliable folks with structural experience",
        ],
    )
    now: datetime | None = Field(
        None,
        description="When 'tomorrow' and weekdays in the order count from (default: the server's clock).",
    )
    client_id: str | None = Field(None, max_length=128, description="Client id; overrides 'for ...'.")
    policy: Literal["rules", "llm"] = Field(
        "rules", description="rules (no LLM) or llm (executor + reviewer)."
    )
    executor_model: str | None = Field(None, max_length=300, description="Executor model for policy llm.")
    reviewer_model: str | None = Field(None, max_length=300, description="Reviewer model for policy llm.")
    turn_budget: int | None = Field(None, ge=2, le=64, description="Model turns for policy llm.")
    shift_start: datetime | None = Field(None, description="Shift start, ISO 8601.")
    shift_end: datetime | None = Field(None, description="Shift end, ISO 8601 (default: start + 8 h).")
    requirements: list[Annotated[str, Field(max_length=128)]] = Field(
        default_factory=list, max_length=20, description="Required certifications (any spelling)."
    )
    radius_miles: float | None = Field(None, gt=0, le=500, description="Miles around the city (default 25).")
    rescue: bool = Field(True, description="One rescue attempt after a failed fill.")
    overseer: bool = Field(False, description="Let the overseer review the fill for concerns.")


class ToolInfo(BaseModel):
    name: str
    description: str
    parameters: dict[str, Any] = Field(..., description="JSON schema of the tool's arguments.")


class ToolList(BaseModel):
    """The agents' tools, callable with POST /tools/{name}/call (and over MCP)."""

    tools: list[ToolInfo]


class ToolCall(BaseModel):
    model_config = ConfigDict(extra="forbid")

    arguments: dict[str, Any] = Field(
        default_factory=dict, description="Arguments matching the tool's JSON schema."
    )


class ToolCallResult(BaseModel):
    """What the tool did. A failure of the input or the data (bad SQL, unknown worker) is
    ``ok: false`` with the error, as an agent sees it, not an HTTP error."""

    tool: str
    ok: bool
    text: str = Field(..., description="The compact text an agent reads.")
    data: Any = Field(None, description="The structured result.")
    rows: int = 0
    worker_ids: list[int] = Field(default_factory=list)
    truncated: bool = False
    error: str | None = None
    duration_ms: float = 0.0
    op_id: str | None = Field(None, description="The observed op of this call.")


class SourceAdd(BaseModel):
    """An external read-only source to register: a ``postgresql://`` URL or a SQLite file's path
    on the server. The target is never echoed back with its password."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(
        ..., min_length=1, max_length=31, description="Its tables read as NAME.table.", examples=["crm"]
    )
    target: str = Field(
        ...,
        min_length=1,
        max_length=2000,
        description="A postgresql:// URL (a read-only role) or a SQLite file's path on the server.",
        examples=["postgresql://reader@db.internal/crm"],
    )


class SourceInfo(BaseModel):
    """A registered source; ``target`` shows a URL's password as ``***``."""

    name: str
    kind: str = Field(..., description="postgresql or sqlite.")
    target: str = Field(..., description="The URL (password as ***) or the file's path.")
    added_at: str = Field(..., description="When it was registered (UTC, ISO 8601).")
    tables: list[str] | None = Field(None, description="Its tables as NAME.table, when just listed.")


class SourceList(BaseModel):
    sources: list[SourceInfo]
