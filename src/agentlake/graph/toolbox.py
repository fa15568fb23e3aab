"""The thinker's tools: the lake's read-only SQL and hybrid search, and the workspace tools.

Owns the catalogue the thinker's prompt shows and dispatching one tool call. Lake tools are
the agents' audited tools (``agentlake.agents.tools``: guarded SQL, hybrid search), called
through their registry so each call is recorded as ``tool.<name>`` exactly as an agent's is.
Workspace tools change the session, not the lake: ``machine_create``, ``machine_extend``,
``machine_reset``, ``machine_destroy`` and ``show_controls``; each call is recorded as
``tool.<name>`` too. ``fill`` takes a staffing order in words, which the chat's code (not the
thinker's model) hands it: ``agents.order_reader`` reads it, ``agents.fill`` fills it by the
rules policy, recorded as ``tool.fill``. A failing call never raises: it returns ``ok=False``
with the error, which the thinker reads. It does not own the tools' SQL, search, machine rules
nor the reading of an order.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from agentlake.errors import AgentlakeError, UserError
from agentlake.graph import machines as machine_ops
from agentlake.graph.controls import validate_controls
from agentlake.llm.fence import data_block
from agentlake.observe import observe

if TYPE_CHECKING:
    from agentlake.graph.node import NodeResources
    from agentlake.graph.session import SessionState

MAX_RESULT_CHARS = 3000
MAX_DATA_ROWS = 50

WORKSPACE_TOOLS: dict[str, str] = {
    "machine_create": "machine_create(name, states: [str], transitions: [{from, to, label?}], initial): "
    "build a state machine; the browser shows a button per transition out of the current state, "
    "and clicking one moves it locally (no need to ask you)",
    "machine_extend": "machine_extend(name, states: [str], transitions: [{from, to, label?}]): add states and transitions",
    "machine_reset": "machine_reset(name): back to the initial state",
    "machine_destroy": "machine_destroy(name): remove the machine and its buttons",
    "show_controls": "show_controls(controls: [{kind: button, label, action: 'say:TEXT' | 'go:MACHINE:STATE' "
    "| 'inc:NAME' | 'dec:NAME' | 'toggle:NAME'} | {kind: label, text} | {kind: table, title, columns, rows}]): "
    "show these controls; inc/dec/toggle buttons change a count or a switch in the page, without asking you",
}


def _object(properties: dict[str, Any], required: tuple[str, ...]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


_NAME = {"type": "string", "maxLength": 32}
_STATES = {"type": "array", "items": {"type": "string", "maxLength": 40}, "minItems": 1, "maxItems": 12}
_TRANSITIONS = {
    "type": "array",
    "items": _object(
        {"from": {"type": "string", "maxLength": 40}, "to": {"type": "string", "maxLength": 40},
         "label": {"type": "string", "maxLength": 40}},
        ("from", "to", "label"),
    ),
    "maxItems": 16,
}  # fmt: skip
# The workspace tools' arguments as JSON schemas, for constrained decoding (the machines and
# controls modules validate what arrives; these only keep a model's call in shape).
WORKSPACE_ARGS: dict[str, dict[str, Any]] = {
    "machine_create": _object(
        {"name": _NAME, "states": _STATES, "transitions": _TRANSITIONS, "initial": {"type": "string", "maxLength": 40}},
        ("name", "states", "transitions", "initial"),
    ),
    "machine_extend": _object(
        {"name": _NAME, "states": _STATES, "transitions": _TRANSITIONS}, ("name", "states", "transitions")
    ),
    "machine_reset": _object({"name": _NAME}, ("name",)),
    "machine_destroy": _object({"name": _NAME}, ("name",)),
    "show_controls": _object(
        {"controls": {"type": "array", "maxItems": 6, "items": {"anyOf": [
            _object({"kind": {"const": "button"}, "label": {"type": "string", "maxLength": 40},
                     "action": {"type": "string", "maxLength": 120}}, ("kind", "label", "action")),
            _object({"kind": {"const": "label"}, "text": {"type": "string", "maxLength": 120}}, ("kind", "text")),
        ]}}},
        ("controls",),
    ),
}  # fmt: skip


@dataclass
class ToolOutcome:
    """One tool call as the thinker sees it."""

    tool: str
    args: dict[str, Any]
    ok: bool
    text: str
    data: Any = None
    rows: int = 0
    error: str | None = None
    changed_workspace: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    def for_model(self) -> str:
        """The tool message given back to the model: JSON, capped; the result fenced as data
        (``agentlake.llm.fence``). The error stays plain: it is ours, and says how to fix the call."""
        body: dict[str, Any] = {"tool": self.tool, "ok": self.ok, "rows": self.rows}
        if self.ok:
            body["result"] = data_block(self.text[:MAX_RESULT_CHARS])
        else:
            body["error"] = self.error
        return json.dumps(body, ensure_ascii=False, default=str)

    def summary(self) -> dict[str, Any]:
        """A compact, JSON-safe account for traces and the ui node."""
        data = self.data
        if isinstance(data, list):
            data = data[:MAX_DATA_ROWS]
        return {
            "tool": self.tool,
            "args": self.args,
            "ok": self.ok,
            "rows": self.rows,
            "error": self.error,
            "data": data,
            "changed_workspace": self.changed_workspace,
            **self.extra,
        }


def _listed_values(resources: NodeResources) -> dict[tuple[str, str], list[str]]:
    # Lazy (start-up time): the agents load on first use.
    from agentlake.agents.tools import listed_values

    try:
        return listed_values(resources.lake)
    except AgentlakeError:
        return {}


def question_values(resources: NodeResources, question: str) -> tuple[list[tuple[str, str]], str]:
    """The lake's listed column values ``question`` names, and the hint line that passes them
    to a model with the question (``agents.ask.named_values_hint``); none without a lake."""
    # Lazy (start-up time): the agents load on first use.
    from agentlake.agents.linking import lake_columns, named_values, named_values_hint

    listed = _listed_values(resources)
    try:
        columns = lake_columns(resources.lake) if listed else []
    except AgentlakeError:
        columns = []
    named = named_values(question, listed, columns)
    return named, named_values_hint(named, listed, question)


class ThinkerTools:
    """The tools one thinker may call: ``lake_tools`` from the agents' registry plus the workspace."""

    def __init__(
        self, resources: NodeResources, session: SessionState, *, lake_tools: tuple[str, ...], agent_id: str
    ) -> None:
        self.resources = resources
        self.session = session
        self.lake_tools = lake_tools
        self.agent_id = agent_id

    def names(self) -> list[str]:
        return [*self.lake_tools, *WORKSPACE_TOOLS]

    def call_schemas(self) -> dict[str, dict[str, Any]]:
        """Each tool's arguments as a JSON schema (the lake tools' own, the workspace's above):
        what a model's call of it may look like under constrained decoding."""
        schemas: dict[str, dict[str, Any]] = {}
        try:
            schemas = {
                schema["name"]: schema["parameters"]
                for schema in self.resources.tools.schemas()
                if schema["name"] in self.lake_tools
            }
        except AgentlakeError:
            pass
        dataset = schemas.get("hybrid_search", {}).get("properties", {}).get("dataset")
        if dataset is not None:
            # Search is offered over the datasets with an index only, named in the schema (under
            # a grammar a model cannot search a dataset the lake cannot search), or not at all.
            indexed = self._searchable()
            if indexed:
                schemas["hybrid_search"] = copy.deepcopy(schemas["hybrid_search"])
                schemas["hybrid_search"]["properties"]["dataset"]["enum"] = indexed
            else:
                del schemas["hybrid_search"]
        return {**schemas, **WORKSPACE_ARGS}

    def _searchable(self) -> list[str]:
        # Lazy (start-up time): the agents load on first use.
        from agentlake.agents.tools import searchable

        try:
            return searchable(self.resources.lake)
        except AgentlakeError:
            return []

    def named_values(self, question: str) -> tuple[list[tuple[str, str]], str]:
        """``question_values`` over this thinker's lake."""
        return question_values(self.resources, question)

    def query_problem(self, query: str, question: str, named: list[tuple[str, str]]) -> str | None:
        """What is wrong with a ``sql`` query for ``question`` before it runs: it leaves out a
        value the question names, or filters on a listed value the question does not name (a
        small model copies a worked example's); None when neither."""
        # Lazy (start-up time): the agents load on first use.
        from agentlake.agents.linking import missing_values, unnamed_values

        left = missing_values(query, named)
        if left:
            return f"the query leaves out {left}, which the question names"
        extra = unnamed_values(query, question, named, self._listed())
        return f"the query filters on {extra}, which the question does not name" if extra else None

    def _listed(self) -> dict[tuple[str, str], list[str]]:
        return _listed_values(self.resources)

    def catalog(self) -> str:
        """Tool signatures and the datasets' real columns, for the prompt."""
        lines = ["Tools:"]
        try:
            registry = self.resources.tools
            offered = self.call_schemas()
            for schema in registry.schemas():
                if schema["name"] in self.lake_tools and schema["name"] in offered:
                    params = ", ".join(schema["parameters"].get("properties", {}))
                    lines.append(f"- {schema['name']}({params}): {schema['description']}")
        except AgentlakeError:
            pass
        lines += [f"- {text}" for text in WORKSPACE_TOOLS.values()]
        try:
            # Lazy (start-up time): the agents load on first use.
            from agentlake.agents.tools import datasets_text

            lines += datasets_text(self.resources.lake, values=True)
        except AgentlakeError:
            lines.append("(no lake yet: the SQL tools will fail until data is loaded)")
        return "\n".join(lines)

    def call(self, tool: str, args: dict[str, Any]) -> ToolOutcome:
        """Run one tool call; failures come back as ``ok=False``."""
        args = dict(args or {})
        if tool in self.lake_tools:
            return self._lake(tool, args)
        if tool in WORKSPACE_TOOLS:
            return self._workspace(tool, args)
        return ToolOutcome(
            tool, args, False, "", error=f"unknown tool {tool!r}; tools: {', '.join(self.names())}"
        )

    def _lake(self, tool: str, args: dict[str, Any]) -> ToolOutcome:
        # Lazy (start-up time): the agents load on first use.
        from agentlake.agents.policy import RunContext

        try:
            ctx = RunContext(
                lake=self.resources.lake,
                observer=self.resources.observer,
                settings=self.resources.settings,
                tools=self.resources.tools,
                agent_id=self.agent_id,
            )
        except AgentlakeError as exc:
            return ToolOutcome(tool, args, False, "", error=exc.message)
        result = self.resources.tools.call(tool, args, ctx=ctx)
        extra: dict[str, Any] = {}
        text = result.text
        if tool == "sql":
            extra["query"] = args.get("query")
            # Lazy (start-up time): the agents load on first use.
            from agentlake.agents.render import one_value_text

            text = one_value_text(result.data) or text
        return ToolOutcome(
            tool,
            args,
            result.ok,
            text,
            data=result.data,
            rows=result.rows,
            error=result.error,
            extra=extra,
        )

    def fill(self, order: str, *, model: str | None, now: datetime | None = None) -> ToolOutcome:
        """Fill ``order`` (words or the grammar's form) against the lake by the rules policy,
        the words read by ``model`` (``agents.order_reader.read_order``; ``now``: when
        'tomorrow' counts from), recorded as ``tool.fill``. ``ok`` with the placed, spares and
        rejections as ``data`` when it was filled or tried; ``ok=False`` when the order lacks
        a role, count or place (``extra["question"]``: the question back, with what was
        understood) or could not be read (``error``)."""
        # Lazy (start-up time): the agents load on first use.
        from agentlake.agents import fill
        from agentlake.agents.order_reader import read_order

        args = {"order": order}
        resources = self.resources
        with observe(
            "tool.fill", source="agent", agent_id=self.agent_id, input=args, observer=resources.observer
        ) as op:
            try:
                reading = read_order(
                    order, model=model, settings=resources.settings, lake=resources.lake, now=now
                )
                if reading.order is None:
                    op.set_output(reading.understood)
                    extra = {"question": reading.understood, "missing": reading.missing}
                    return ToolOutcome("fill", args, False, "", error=reading.question, extra=extra)
                outcome = fill(
                    reading.order,
                    settings=resources.settings,
                    lake=resources.lake,
                    lessons=resources.lessons,
                    observer=resources.observer,
                    agent_id=self.agent_id,
                )
            except AgentlakeError as exc:
                op.fail(exc.message)
                return ToolOutcome("fill", args, False, "", error=exc.message)
            outcome.reading = reading
            text = _filled_text(outcome)
            op.set_output(text)
        data = [{"worker_id": w, "status": status, "reason": reason} for w, status, reason in outcome.rows()]
        facts = {"filled": outcome.filled, "count": outcome.order.count, "understood": reading.understood}
        return ToolOutcome("fill", args, True, text, data=data, rows=len(data), extra=facts)

    def _workspace(self, tool: str, args: dict[str, Any]) -> ToolOutcome:
        machines = self.session.machines
        with observe(
            f"tool.{tool}",
            source="agent",
            agent_id=self.agent_id,
            input=args,
            observer=self.resources.observer,
        ) as op:
            try:
                if tool == "machine_create":
                    machine = machine_ops.create(machines, args)
                    text = f"created {machine.name}: states {machine.states}, now at {machine.current}"
                elif tool == "machine_extend":
                    machine = machine_ops.extend(
                        machines,
                        str(args.get("name", "")),
                        list(args.get("states") or []),
                        list(args.get("transitions") or []),
                    )
                    text = f"extended {machine.name}: states {machine.states}, now at {machine.current}"
                elif tool == "machine_reset":
                    machine = machine_ops.reset(machines, str(args.get("name", "")))
                    text = f"reset {machine.name} to {machine.current}"
                elif tool == "machine_destroy":
                    machine_ops.destroy(machines, str(args.get("name", "")))
                    text = f"destroyed {args.get('name')}"
                else:
                    self.session.requested_controls = validate_controls(args.get("controls"))
                    text = f"showing {len(self.session.requested_controls)} controls"
            except UserError as exc:
                op.fail(exc.message)
                return ToolOutcome(tool, args, False, "", error=exc.message)
            except (TypeError, ValueError) as exc:  # arguments of the wrong shape from a model
                op.fail(str(exc))
                return ToolOutcome(tool, args, False, "", error=f"bad arguments for {tool}: {exc}")
            op.set_output(text)
        return ToolOutcome(tool, args, True, text, changed_workspace=True)


def _filled_text(outcome: Any) -> str:
    """What the chat says of a fill: what it understood (when words were read), how many were
    placed, who, and why not all."""
    lines = []
    reading = outcome.reading
    if reading is not None and reading.source != "grammar":
        lines.append(f"I {reading.understood} (read by {reading.source}).")
    order = outcome.order
    said = f"{outcome.filled}/{order.count} filled: {order.describe()}"
    if outcome.proposed and outcome.success:
        said += f"; placed workers {', '.join(map(str, outcome.proposed))}"
    if outcome.candidates:
        said += f"; spares {', '.join(map(str, outcome.candidates))}"
    lines.append(said + ".")
    if not outcome.success and outcome.failure_reason:
        lines.append(f"Not filled: {outcome.failure_reason}")
    return "\n".join(lines)
