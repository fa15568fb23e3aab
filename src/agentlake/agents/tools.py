"""Audited tools over the lakehouse: the ``Tool`` contract, the registry and the built-ins.

Owns the extension point (a ``Tool`` has a name, a description, a pydantic ``args_model``
and ``run(args, ctx) -> ToolOutput``), the ``ToolRegistry`` that validates arguments, records
every call as an op (endpoint ``tool.<name>``, source ``agent``, agent id, arguments, duration,
outcome, attribute ``rows``) and writes the tool catalog for prompts from the tools' own JSON
schemas and the datasets' real columns, and the default tools: ``find_workers``,
``hybrid_search``, ``sql``, ``get_worker``, ``worker_schedule``, ``schedule_conflicts``,
``nearby_cities``. The tools are thin: the domain (``agentlake.workforce``) owns the SQL,
the dataset names and the geography; ``agentlake.lake.search`` owns search.

A tool that fails because of its input or the data (bad SQL, unknown worker, timeout) does not
raise: ``call`` returns a ``ToolResult`` with ``ok=False`` and the error, so an agent can read
it and try again. Bugs (any other exception) propagate.
"""

from __future__ import annotations

import json
import time
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from agentlake.agents import render
from agentlake.agents.actions import json_schema
from agentlake.agents.lessons import PLAYBOOK_WEIGHT, mark_playbook
from agentlake.errors import AgentlakeError, UserError
from agentlake.lake.versioned import PerLakeCache, dataset_versions
from agentlake.observe import observe
from agentlake.workforce.candidates import CandidateQuery, explain_empty, find_candidates
from agentlake.workforce.catalogue import CERTIFICATIONS
from agentlake.workforce.geo import gazetteer
from agentlake.workforce.tables import SCORE_COLUMNS, SEARCH_DATASET, TABLES, fetch_workers, resolve_client

if TYPE_CHECKING:
    from agentlake.agents.policy import RunContext
    from agentlake.lake import Lake

# The datasets the tool catalog describes to the model: the domain's tables.
CATALOG_DATASETS = TABLES
# What a search result shows the model: enough to choose, not the whole record (get_worker has that).
CANDIDATE_COLUMNS = (
    "worker_id",
    "name",
    "role",
    "city",
    "state",
    "distance_miles",
    "reliability",
    "availability",
    "certifications",
)


class ToolOutput(BaseModel):
    """What a tool's ``run`` returns: data, its compact text, the workers it surfaced."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    data: Any = None
    text: str = Field(..., description="The substance for the prompt (see ``render``).")
    rows: int = 0
    worker_ids: list[int] = Field(
        default_factory=list, description="Workers surfaced, for the candidate ledger."
    )
    truncated: bool = False


class ToolResult(BaseModel):
    """One recorded tool call."""

    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    ok: bool
    text: str
    data: Any = None
    rows: int = 0
    worker_ids: list[int] = Field(default_factory=list)
    truncated: bool = False
    error: str | None = None
    duration_ms: float = 0.0
    op_id: str | None = None


@runtime_checkable
class Tool(Protocol):
    """One tool. ``run`` raises ``UserError``/``RunError`` for failures the agent should see."""

    name: str
    description: str

    @property
    def args_model(self) -> type[BaseModel]: ...

    def run(self, args: Any, ctx: RunContext) -> ToolOutput: ...


class ToolRegistry:
    """Named tools; ``call`` validates, runs and records."""

    def __init__(self, tools: list[Tool] | None = None) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools or []:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        """Add ``tool``; ``UserError`` if the name is taken or the object is not a ``Tool``."""
        if not isinstance(tool, Tool):
            raise UserError(
                f"{tool!r} is not a Tool: it needs name, description, args_model and run(args, ctx)"
            )
        if tool.name in self._tools:
            raise UserError(f"a tool named {tool.name!r} is already registered")
        self._tools[tool.name] = tool

    def get(self, name: str) -> Tool:
        """The tool called ``name``; ``UserError`` listing the known tools."""
        if name not in self._tools:
            raise UserError(f"unknown tool {name!r}; known tools: {', '.join(self.names())}")
        return self._tools[name]

    def names(self) -> list[str]:
        return list(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def schemas(self) -> list[dict[str, Any]]:
        """Each tool as ``{"name", "description", "parameters": JSON schema}`` (function-calling form)."""
        return [
            {
                "name": tool.name,
                "description": tool.description,
                "parameters": json_schema(tool.args_model),
            }
            for tool in self._tools.values()
        ]

    def catalog_text(self, lake: Lake | None = None) -> str:
        """The tool catalog for prompts: each tool's signature from its schema, then the real
        columns of the workforce datasets present in ``lake``."""
        lines = ["Tools (call one per turn with a tool_call action):"]
        for schema in self.schemas():
            lines.append(f"- {schema['name']}({_signature(schema['parameters'])}): {schema['description']}")
        if lake is not None:
            lines += datasets_text(lake)
        return "\n".join(lines)

    def call(self, name: str, args: dict[str, Any] | None, *, ctx: RunContext) -> ToolResult:
        """Validate ``args``, run the tool, record the call as an op, return the result.

        Unknown tools, invalid arguments and ``UserError``/``RunError`` from the tool give a
        result with ``ok=False`` (recorded as a failed op); other exceptions propagate.
        """
        args = dict(args or {})
        endpoint = f"tool.{name}" if name in self._tools else "tool.unknown"
        started = time.perf_counter()
        with observe(
            endpoint,
            source="agent",
            agent_id=ctx.agent_id,
            input=args if name in self._tools else {"tool": name, "args": args},
            run_id=ctx.run_id,
            labels=ctx.op_labels(),
            observer=ctx.observer,
        ) as op:
            try:
                tool = self.get(name)
                parsed, ignored = _parse_args(tool, args)
                output = tool.run(parsed, ctx)
                if ignored:
                    output.text = f"(ignored unknown arguments: {', '.join(ignored)}) {output.text}"
            except AgentlakeError as exc:
                op.fail(exc.message)
                op.attributes["rows"] = 0
                return ToolResult(
                    tool=name,
                    args=args,
                    ok=False,
                    text=f"error: {exc.message}",
                    error=exc.message,
                    duration_ms=_ms(started),
                    op_id=op.id,
                )
            op.attributes["rows"] = output.rows
            if output.truncated:
                op.attributes["truncated"] = True
            op.set_output(output.text)
        return ToolResult(
            tool=name,
            args=args,
            ok=True,
            text=output.text,
            data=output.data,
            rows=output.rows,
            worker_ids=output.worker_ids,
            truncated=output.truncated,
            duration_ms=_ms(started),
            op_id=op.id,
        )


_catalogs: PerLakeCache[list[str]] = PerLakeCache()
# A text column with at most this many distinct values can list them (``values=True``): a small
# model writes `role = 'Welder'` when it sees the values, and guesses another column otherwise.
FEW_VALUES = 60


def datasets_text(
    lake: Lake,
    names: tuple[str, ...] | None = CATALOG_DATASETS,
    *,
    values: bool = False,
    max_values: int | None = None,
    sample: bool = False,
) -> list[str]:
    """Lines naming datasets of ``lake`` (``names``, in that order; ``None``: every dataset)
    with their row counts and real columns; with ``values``, a text column with at most
    ``FEW_VALUES`` distinct values lists them (at most ``max_values`` of them, the count of the
    rest said); with ``sample``, a line with one of the dataset's rows follows (a model reads
    the formats of dates, codes and numbers off it).

    Cached per lake file, catalog version and arguments: ``Lake.datasets()`` counts rows and
    reads the ingest history, too slow to repeat on every task.
    """
    versions = dataset_versions(lake)
    version = (
        names,
        values,
        max_values,
        sample,
        tuple(sorted((n, str(v)) for n, v in versions.items() if names is None or n in names)),
    )

    def build() -> list[str]:
        known = {info.name: info for info in lake.datasets() if names is None or info.name in names}
        listed = listed_values(lake) if values else {}
        lines = ["Datasets (SQL tables) and their columns:"] if known else []
        for name in names if names is not None else sorted(known):
            if name in known:
                columns = []
                for column, kind in known[name].columns:
                    text = f"{column} {kind.lower()}"
                    few = listed.get((name, column), [])
                    if max_values is not None and len(few) > max_values:
                        few = [*few[:max_values], f"... {len(few) - max_values} more"]
                    columns.append(text + (f" (values: {', '.join(few)})" if few else ""))
                lines.append(f"- {name} ({known[name].row_count} rows): {', '.join(columns)}")
                if sample:
                    row = _sample_row(lake, name)
                    if row:
                        lines.append(f"  one row of {name}: {row}")
        return lines

    key = f"{lake.path}|{names}|{values}|{max_values}|{sample}"
    return list(_catalogs.get(key, version, build))


def _sample_row(lake: Lake, dataset: str) -> str:
    """One row of ``dataset`` as ``column=value`` pairs (the first with the fewest empty values
    among a few), or empty when it has none."""
    table = '"' + dataset.replace('"', '""') + '"'
    try:
        rows = lake.query(f"SELECT * FROM {table} LIMIT 20", max_rows=20).to_dicts()
    except AgentlakeError:
        return ""
    if not rows:
        return ""
    row = min(rows, key=lambda item: sum(value is None for value in item.values()))
    return ", ".join(f"{key}={render.value_text(value)}" for key, value in row.items())


_listed: PerLakeCache[dict[tuple[str, str], list[str]]] = PerLakeCache()


def listed_values(lake: Lake) -> dict[tuple[str, str], list[str]]:
    """``(dataset, column) -> values`` for every text column with at most ``FEW_VALUES``
    distinct values: the values ``datasets_text(values=True)`` lists (cached the same way)."""
    versions = dataset_versions(lake)
    version = tuple(sorted((n, str(v)) for n, v in versions.items()))

    def build() -> dict[tuple[str, str], list[str]]:
        found = {}
        for info in lake.datasets():
            for column, kind in info.columns:
                few = _few_values(lake, info.name, column) if kind.upper() == "VARCHAR" else []
                if few:
                    found[(info.name, column)] = few
        return found

    return dict(_listed.get(f"{lake.path}|listed", version, build))


def _few_values(lake: Lake, dataset: str, column: str) -> list[str]:
    quoted, table = '"' + column.replace('"', '""') + '"', '"' + dataset.replace('"', '""') + '"'
    try:
        result = lake.query(
            f"SELECT DISTINCT {quoted} FROM {table} WHERE {quoted} IS NOT NULL ORDER BY 1 LIMIT {FEW_VALUES + 1}",
            max_rows=FEW_VALUES + 1,
        )
    except AgentlakeError:  # a column the guard will not read is simply not listed
        return []
    found = [str(row[0]) for row in result.rows]
    return found if len(found) <= FEW_VALUES and all(len(v) <= 40 for v in found) else []


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)


def _parse_args(tool: Tool, args: dict[str, Any]) -> tuple[Any, list[str]]:
    """``tool``'s validated arguments and the unknown keys dropped to get them.

    Small models add keys a tool does not take ("count", "reason"); dropping them keeps a usable
    call usable, and the result says which were ignored. Any other problem is a ``UserError``
    naming it and the expected signature.
    """
    try:
        return tool.args_model.model_validate(args), []
    except ValidationError as exc:
        problem = exc
    errors = problem.errors()
    extra = [str(e["loc"][0]) for e in errors if e["type"] == "extra_forbidden" and len(e["loc"]) == 1]
    if extra and len(extra) == len(errors):
        try:
            kept = {key: value for key, value in args.items() if key not in extra}
            return tool.args_model.model_validate(kept), extra
        except ValidationError as exc:
            problem = exc
    raise UserError(
        f"bad arguments for {tool.name}: {_validation_text(problem)}; expected ({_signature(json_schema(tool.args_model))})"
    )


def _validation_text(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'args'}: {e['msg']}" for e in exc.errors()[:5])


def _type_text(prop: dict[str, Any]) -> str:
    if "anyOf" in prop:
        return " | ".join(_type_text(p) for p in prop["anyOf"])
    kind = prop.get("type", "any")
    if kind == "array":
        return f"list[{_type_text(prop.get('items', {}))}]"
    if prop.get("format") == "date-time":
        return "datetime"
    return {"integer": "int", "number": "float", "string": "str", "boolean": "bool", "null": "null"}.get(
        kind, str(kind)
    )


def _signature(schema: dict[str, Any]) -> str:
    required = set(schema.get("required", []))
    parts = []
    for name, prop in schema.get("properties", {}).items():
        text = f"{name}: {_type_text(prop)}"
        if name not in required and "default" in prop:
            text += f" = {json.dumps(prop['default'])}"
        if prop.get("description"):
            text += f" ({prop['description']})"
        parts.append(text)
    return ", ".join(parts)


# --- the built-in tools ----------------------------------------------------------------------


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


# The longest role, city or client id a tool takes. With the bounds below (two-letter states,
# scores by name) no argument under a grammar can run an action to the token limit.
NAME_CAP = 80
# min_scores as the object it is: the known scores by name, each 0-1 (not keys of a model's choosing).
_SCORES_SCHEMA: dict[str, Any] = {
    "properties": {name: {"type": "number", "minimum": 0, "maximum": 1} for name in SCORE_COLUMNS},
    "additionalProperties": False,
}


class FindWorkersArgs(_Args):
    role: str = Field(..., min_length=1, max_length=NAME_CAP)
    city: str = Field(..., min_length=1, max_length=NAME_CAP)
    state: str = Field(..., min_length=2, max_length=2, description="2 letters")
    radius_miles: float = Field(25.0, gt=0, le=500)
    # Each item one of the catalogue's certifications in the schema (so under a grammar): the
    # search finds no one for any other, and the 0.5B wrote '.NET' and lesson ids there, then
    # repeated the empty search. Validation still reads any spelling ('OSHA-10 Hour').
    requirements: list[
        Annotated[str, Field(min_length=1, json_schema_extra={"enum": list(CERTIFICATIONS)})]
    ] = Field(default_factory=list, description="certifications")
    min_reliability: float | None = Field(None, ge=0, le=1)
    min_scores: dict[str, float] = Field(
        default_factory=dict, description='e.g. {"reliability": 0.7}', json_schema_extra=_SCORES_SCHEMA
    )
    exclude_no_show_client: str | None = Field(
        None, max_length=NAME_CAP, description="client id: skip its past no-shows"
    )
    where: str | None = Field(None, description="SQL WHERE fragment")
    exclude_booked_from: datetime | None = Field(None, description="skip workers booked over this shift")
    exclude_booked_to: datetime | None = None
    limit: int = Field(10, ge=1, le=50)

    @field_validator("requirements", mode="before")
    @classmethod
    def _one_requirement(cls, value: Any) -> Any:
        # Small models write one requirement as a bare string, and an empty one for none.
        if isinstance(value, str):
            return [value] if value.strip() else []
        if isinstance(value, list):
            return [item for item in value if not (isinstance(item, str) and not item.strip())]
        return [] if value is None else value


class FindWorkers:
    """Qualified workers for a role near a city: the rules policy's search, for agents."""

    name = "find_workers"
    description = (
        "workers of a role living within radius_miles of a city with every listed certification, most "
        "reliable first; when it finds no one it says which filter left no one"
    )
    args_model = FindWorkersArgs

    def run(self, args: FindWorkersArgs, ctx: RunContext) -> ToolOutput:
        scores = dict(args.min_scores)
        if args.min_reliability is not None:
            scores["reliability"] = max(args.min_reliability, scores.get("reliability", 0.0))
        no_show = None
        if args.exclude_no_show_client:
            client = resolve_client(ctx.lake, args.exclude_no_show_client)
            if client is None:
                raise UserError(f"unknown client {args.exclude_no_show_client!r} in exclude_no_show_client")
            no_show = client[0]
        query = CandidateQuery(
            role=args.role,
            city=args.city,
            state=args.state,
            radius_miles=args.radius_miles,
            requirements=args.requirements,
            min_scores=scores,
            exclude_no_show_client=no_show,
            extra_where=args.where,
            min_availability=ctx.settings.agent_min_availability,
            limit=args.limit,
            prefer_ids=sorted(ctx.playbook),
        )
        rows = mark_playbook(find_candidates(ctx.lake, query), ctx.playbook)
        if not rows:
            return ToolOutput(data=[], text=f"0 rows. {explain_empty(ctx.lake, query)}", rows=0)
        if args.exclude_booked_from is not None:
            end = args.exclude_booked_to or args.exclude_booked_from
            found = len(rows)
            rows = [
                r for r in rows if not ctx.schedule.conflicts(r["worker_id"], args.exclude_booked_from, end)
            ]
            if not rows:
                return ToolOutput(
                    data=[],
                    rows=0,
                    text=(
                        f"0 rows: all {found} workers found are booked over the shift; raise limit or widen the search"
                    ),
                )
        return _rows_output(rows, truncated=len(rows) >= args.limit, columns=CANDIDATE_COLUMNS)


class SqlArgs(_Args):
    query: str = Field(..., description="one read-only SELECT")
    max_rows: int = Field(50, ge=1, le=1000)


class Sql:
    name = "sql"
    # The manual's rule, where the tool is chosen (gateway/manual.py): counts and filters are SQL's.
    description = (
        "structured question (a count, a sum, an exact filter): SQL first. One read-only SELECT over "
        "the datasets (capped rows, timeout)"
    )
    args_model = SqlArgs

    def run(self, args: SqlArgs, ctx: RunContext) -> ToolOutput:
        result = ctx.lake.query(args.query, max_rows=args.max_rows)
        rows = result.to_dicts()
        return _rows_output(rows, truncated=result.truncated)


class GetWorkerArgs(_Args):
    worker_id: int


class GetWorker:
    name = "get_worker"
    description = "one worker's full record and current bookings"
    args_model = GetWorkerArgs

    def run(self, args: GetWorkerArgs, ctx: RunContext) -> ToolOutput:
        found = fetch_workers(ctx.lake, [args.worker_id])
        if args.worker_id not in found:
            raise UserError(f"no worker with worker_id {args.worker_id}")
        row = found[args.worker_id]
        bookings = ctx.schedule.bookings_for(args.worker_id)
        text = render.row_text(row)
        if bookings:
            text += "\nbookings: " + "; ".join(b.describe() for b in bookings[:10])
        return ToolOutput(
            data={"worker": row, "bookings": [b.model_dump(mode="json") for b in bookings]},
            text=text,
            rows=1,
            worker_ids=[args.worker_id],
        )


class WorkerScheduleArgs(_Args):
    worker_id: int
    start: datetime | None = Field(None, description="from (default: all)")
    end: datetime | None = None


class WorkerSchedule:
    name = "worker_schedule"
    description = "a worker's bookings (lake placements plus bookings made today), optionally in a window"
    args_model = WorkerScheduleArgs

    def run(self, args: WorkerScheduleArgs, ctx: RunContext) -> ToolOutput:
        bookings = ctx.schedule.bookings_for(args.worker_id)
        if args.start is not None:
            bookings = [b for b in bookings if b.end > args.start]
        if args.end is not None:
            bookings = [b for b in bookings if b.start < args.end]
        if not bookings:
            return ToolOutput(data=[], text=f"worker {args.worker_id}: no bookings", rows=0)
        text = f"worker {args.worker_id}: " + "; ".join(b.describe() for b in bookings[:20])
        return ToolOutput(data=[b.model_dump(mode="json") for b in bookings], text=text, rows=len(bookings))


class ScheduleConflictsArgs(_Args):
    worker_ids: list[int] = Field(..., min_length=1, max_length=200)
    start: datetime
    end: datetime

    @field_validator("end")
    @classmethod
    def _after(cls, value: datetime, info: Any) -> datetime:
        start = info.data.get("start")
        if start is not None and value <= start:
            raise ValueError("end must be after start")
        return value


class ScheduleConflicts:
    name = "schedule_conflicts"
    description = "which of these workers are already booked over start-end"
    args_model = ScheduleConflictsArgs

    def run(self, args: ScheduleConflictsArgs, ctx: RunContext) -> ToolOutput:
        lines, data = [], {}
        ctx.schedule.prefetch(args.worker_ids)
        for worker_id in dict.fromkeys(args.worker_ids):
            clashes = ctx.schedule.conflicts(worker_id, args.start, args.end)
            if clashes:
                data[worker_id] = [c.model_dump(mode="json") for c in clashes]
                lines.append(f"- {worker_id}: booked " + "; ".join(c.describe() for c in clashes))
        free = [w for w in dict.fromkeys(args.worker_ids) if w not in data]
        head = (
            f"{len(data)} of {len(set(args.worker_ids))} booked over the shift; free: {render.ids_text(free)}"
        )
        return ToolOutput(
            data={"conflicts": data, "free": free},
            text="\n".join([head, *lines]),
            rows=len(data),
            worker_ids=free,
        )


class NearbyCitiesArgs(_Args):
    city: str = Field(..., min_length=1, max_length=NAME_CAP)
    state: str = Field(..., min_length=2, max_length=2, description="2-letter code")
    radius_miles: float = Field(25.0, gt=0, le=500)


class NearbyCities:
    name = "nearby_cities"
    description = "known cities within radius of a city, nearest first, with distances in miles"
    args_model = NearbyCitiesArgs

    def run(self, args: NearbyCitiesArgs, ctx: RunContext) -> ToolOutput:
        found = gazetteer(ctx.lake).nearby(args.city, args.state, args.radius_miles)
        text = f"{len(found)} cities: " + "; ".join(
            f"{n.city}, {n.state} {n.distance_miles:g} mi" for n in found[:30]
        )
        data = [{"city": n.city, "state": n.state, "distance_miles": n.distance_miles} for n in found]
        return ToolOutput(data=data, text=text, rows=len(found))


class HybridSearchArgs(_Args):
    question: str = Field(..., description="what you look for, in words")
    where: str | None = Field(None, description="optional SQL WHERE fragment over workers")
    k: int = Field(10, ge=1, le=50)


class DatasetSearchArgs(_Args):
    dataset: str | None = Field(
        None,
        min_length=1,
        max_length=64,
        description="a dataset with a search index (may be left out when the lake has only one)",
    )
    question: str = Field(..., min_length=1, max_length=300, description="what you look for, in words")
    where: str | None = Field(
        None, max_length=300, description="optional SQL WHERE fragment over its columns"
    )
    k: int = Field(10, ge=1, le=50)


class HybridSearch:
    """Semantic + keyword search over a dataset's indexed text, after an optional SQL filter.

    ``dataset`` fixed: the tool searches only it and takes no ``dataset`` argument (a domain's
    own registry: the staffing agents search the workers' profiles); ``None``: the caller names
    one of the lake's indexed datasets (``searchable``), as any lake's doors do."""

    name = "hybrid_search"

    def __init__(self, dataset: str | None = None, description: str | None = None) -> None:
        self.dataset = dataset
        self.args_model: type[_Args] = HybridSearchArgs if dataset else DatasetSearchArgs
        self.description = description or (
            "matching text: semantic + keyword search over an indexed dataset's text, filtered by an "
            "optional WHERE fragment"
        )

    def run(self, args: Any, ctx: RunContext) -> ToolOutput:
        try:
            from agentlake.lake.search import KeyBoost, hybrid_search
        except ImportError as exc:  # the search package is part of agentlake; a broken install says so
            raise UserError(f"hybrid_search is not available in this installation ({exc})") from None
        dataset = self.dataset or args.dataset
        if self.dataset is None:
            indexed = searchable(ctx.lake)
            if not indexed:
                raise UserError("no dataset in this lake has a search index; use sql")
            if dataset is None and len(indexed) == 1:
                dataset = indexed[0]
            elif dataset is None:
                raise UserError(f"name the dataset to search: {', '.join(indexed)}")
            if dataset not in indexed:
                raise UserError(
                    f"dataset {dataset!r} has no search index; searchable: {', '.join(indexed) or 'none (use sql)'}"
                )
        # Over the staffing agents' own dataset, the task's playbook ranks the workers the client
        # accepted first (each hit says its boost and the lessons behind it).
        boost = (
            KeyBoost(dict.fromkeys(ctx.playbook, PLAYBOOK_WEIGHT), ctx.playbook)
            if self.dataset is not None and ctx.playbook
            else None
        )
        sources = hybrid_search(
            ctx.lake, dataset, args.question, where=args.where, k=args.k, embedder=ctx.embedder, boost=boost
        )
        key = "worker_id" if self.dataset is not None else "key"
        ids = (
            [int(s.key) for s in sources if str(s.key).lstrip("-").isdigit()]
            if self.dataset is not None
            else []
        )
        lines = [f"{len(sources)} results:"] + [
            f"- {key}={s.key} score={s.score:.3f}{'' if s.sql_verified else ' (unverified)'}: {render.value_text(s.chunk_text)}"
            for s in sources
        ]
        data = [s.model_dump(mode="json") if hasattr(s, "model_dump") else dict(vars(s)) for s in sources]
        return ToolOutput(data=data, text="\n".join(lines), rows=len(sources), worker_ids=ids)


def searchable(lake: Lake) -> list[str]:
    """The datasets of ``lake`` with a vector index: the only ones a search may use."""
    # Lazy (start-up time): the index module loads numpy and the vector files.
    from agentlake.lake.index import list_indexes

    try:
        return [info.dataset for info in list_indexes(lake)]
    except AgentlakeError:
        return []


def _rows_output(
    rows: list[dict[str, Any]], *, truncated: bool, columns: tuple[str, ...] | None = None
) -> ToolOutput:
    ids = [int(r["worker_id"]) for r in rows if isinstance(r.get("worker_id"), int)]
    text = render.rows_text(rows, truncated=truncated, columns=columns)
    return ToolOutput(data=rows, text=text, rows=len(rows), worker_ids=ids, truncated=truncated)


def default_tools() -> ToolRegistry:
    """A fresh registry with the staffing agents' tools (the executor's catalogue)."""
    return ToolRegistry(
        [
            FindWorkers(),
            HybridSearch(
                SEARCH_DATASET,
                "matching text: semantic + keyword search over worker profiles, filtered by an optional "
                "WHERE fragment",
            ),
            Sql(),
            GetWorker(),
            WorkerSchedule(),
            ScheduleConflicts(),
            NearbyCities(),
        ]
    )


def lake_tools() -> ToolRegistry:
    """A fresh registry with the tools that work over any lake: read-only SQL and a search over
    a dataset the caller names (one with a vector index). The graph's thinker uses these."""
    return ToolRegistry([Sql(), HybridSearch()])


def tools_for(lake: Lake | None) -> ToolRegistry:
    """The tools a door offers over ``lake``: the staffing agents' (``default_tools``) when the
    lake holds the staffing domain's tables, else the ones that work over any lake (also
    without a lake yet)."""
    try:
        known = {info.name for info in lake.datasets()} if lake is not None else set()
    except AgentlakeError:
        known = set()
    return default_tools() if set(TABLES) <= known else lake_tools()
