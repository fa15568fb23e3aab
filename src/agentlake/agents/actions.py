"""The actions an agent may take: one typed action per turn.

Owns the discriminated union ``plan | tool_call | propose_done | critique`` and the two
per-role views of it the orchestrator asks the model for (the executor plans, calls tools and
proposes; the reviewer critiques), the reviewer's ``course`` review of the executor's turns so
far (with ``review_every``), and what they accept: the replies small models really give
are taken, not refused (a missing or misspelt ``kind``, a verdict given as the kind, a tool
name given as the kind, ids as strings, one id or requirement where a list belongs, stray
keys); over-long free text is cut to ``TEXT_CAP`` characters. It also owns the one per-tool call branch
(``call_branch``) the graph thinker's steps are built from too. It does not own how actions are
obtained (``turn``) or applied (``orchestrator``).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel, field_validator, model_validator

TEXT_CAP = 300
LIST_CAP = 8


def _cut(value: Any) -> Any:
    """Free text cut to ``TEXT_CAP`` characters; a list of texts to ``LIST_CAP`` items."""
    if isinstance(value, str):
        return value if len(value) <= TEXT_CAP else value[: TEXT_CAP - 3] + "..."
    if isinstance(value, list):
        return [_cut(item) for item in value[:LIST_CAP]]
    return value


def _listed(value: Any) -> Any:
    """One item where a list belongs becomes a list of it."""
    return [value] if isinstance(value, (str, int)) and not isinstance(value, bool) else value


class ActionBase(BaseModel):
    """What every action has: the lessons it cites."""

    # Models add stray keys ("thought", "confidence"); ignoring them keeps a usable action usable.
    model_config = ConfigDict(extra="ignore")

    cited_lessons: list[str] = Field(
        default_factory=list, description="Ids of the lessons this action relies on, e.g. ['L-abc123']."
    )

    @field_validator("cited_lessons", mode="before")
    @classmethod
    def _citations(cls, value: Any) -> Any:
        return [] if value is None else _listed(value)


class PlanAction(ActionBase):
    """State the steps you intend to take. Costs a turn; use it once, at the start."""

    kind: Literal["plan"] = "plan"
    steps: list[str] = Field(default_factory=list, description="Short ordered steps.")

    @field_validator("steps", mode="before")
    @classmethod
    def _steps(cls, value: Any) -> Any:
        return _cut(_listed(value))


class ToolCallAction(ActionBase):
    """Call one tool from the catalog with its arguments."""

    kind: Literal["tool_call"] = "tool_call"
    tool: str = Field(..., description="Tool name from the catalog.")
    args: dict[str, Any] = Field(default_factory=dict, description="Arguments, as the tool's schema says.")
    reason: str = Field("", description="Why this call, in one line.")

    @field_validator("reason", mode="before")
    @classmethod
    def _reason(cls, value: Any) -> Any:
        return "" if value is None else _cut(value)

    @field_validator("args", mode="before")
    @classmethod
    def _args(cls, value: Any) -> Any:
        return {} if value is None else value


class ProposeDoneAction(ActionBase):
    """Propose the final fill: exactly the order's count of worker ids, plus optional spares."""

    kind: Literal["propose_done"] = "propose_done"
    worker_ids: list[int] = Field(..., description="The workers to book, exactly `count` of them.")
    spares: list[int] = Field(default_factory=list, description="Further qualified workers kept as buffer.")
    rationale: str = Field("", description="Why these workers, in one or two lines.")

    @field_validator("rationale", mode="before")
    @classmethod
    def _rationale(cls, value: Any) -> Any:
        return "" if value is None else _cut(value)

    @field_validator("worker_ids", "spares", mode="before")
    @classmethod
    def _ids(cls, value: Any) -> Any:
        # Small models write ids as strings or as "W-123"; accept the digits, reject anything else.
        value = [] if value is None else _listed(value)
        if isinstance(value, list):
            out = []
            for item in value:
                if isinstance(item, str):
                    digits = "".join(ch for ch in item if ch.isdigit())
                    out.append(int(digits) if digits else item)
                else:
                    out.append(item)
            return out
        return value


class CritiqueAction(ActionBase):
    """The reviewer's verdict on the executor's latest step."""

    kind: Literal["critique"] = "critique"
    approve: bool = Field(..., description="True only when the proposal fully satisfies the order.")
    notes: str = Field("", description="What is wrong or what to do next.")
    drift: list[str] = Field(
        default_factory=list,
        description="Ways the executor strayed from the order (wrong city, role, count...).",
    )

    @model_validator(mode="before")
    @classmethod
    def _verdict_as_kind(cls, data: Any) -> Any:
        # {"kind": "approve"} / {"kind": "reject", ...}: the verdict where the kind belongs.
        if isinstance(data, dict) and "approve" not in data:
            verdict = _VERDICTS.get(str(data.get("kind", data.get("verdict", ""))).strip().lower())
            if verdict is not None:
                return {**data, "kind": "critique", "approve": verdict}
        return data

    @field_validator("notes", mode="before")
    @classmethod
    def _notes(cls, value: Any) -> Any:
        return "" if value is None else _cut(value)

    @field_validator("drift", mode="before")
    @classmethod
    def _drift(cls, value: Any) -> Any:
        return [] if value is None else _cut(_listed(value))


class CourseAction(ActionBase):
    """The reviewer's look at the executor's course so far (no proposal to judge yet)."""

    kind: Literal["course"] = "course"
    drift: list[str] = Field(
        default_factory=list,
        description="Ways the executor strays from the order (wrong city, role, count, a lesson ignored, "
        "repeating itself); empty when it is on course.",
    )
    notes: str = Field("", description="What the executor should do next, if anything.")

    @field_validator("notes", mode="before")
    @classmethod
    def _notes(cls, value: Any) -> Any:
        return "" if value is None else _cut(value)

    @field_validator("drift", mode="before")
    @classmethod
    def _drift(cls, value: Any) -> Any:
        return [] if value is None else _cut(_listed(value))


_VERDICTS = {"approve": True, "approved": True, "accept": True, "accepted": True, "ok": True, "yes": True,
             "reject": False, "rejected": False, "deny": False, "denied": False, "no": False}  # fmt: skip


Action = Annotated[
    PlanAction | ToolCallAction | ProposeDoneAction | CritiqueAction, Field(discriminator="kind")
]


class AgentAction(RootModel[Action]):
    """Any action; ``.root`` is the concrete one."""

    @model_validator(mode="before")
    @classmethod
    def _infer_kind(cls, data: Any) -> Any:
        return _with_kind(data)


class ExecutorAction(
    RootModel[Annotated[PlanAction | ToolCallAction | ProposeDoneAction, Field(discriminator="kind")]]
):
    """What the executor may answer with: plan, tool_call or propose_done."""

    @model_validator(mode="before")
    @classmethod
    def _infer_kind(cls, data: Any) -> Any:
        return _with_kind(data)


# The reviewer has one action; a one-member union would only add noise to the schema.
ReviewerAction = CritiqueAction


def _with_kind(data: Any) -> Any:
    """Tolerate replies that drop ``kind``, misspell it (``propose``, ``tool``), give a tool's name
    as the kind (``{"kind": "find_workers", "args": {...}}``) or wrap the action as
    ``{"tool_call": {...}}``."""
    if not isinstance(data, dict):
        return data
    if "kind" not in data and len(data) == 1:
        ((key, inner),) = data.items()
        if key in _KINDS and isinstance(inner, dict):
            return {**inner, "kind": key}
    kind = data.get("kind")
    if isinstance(kind, str) and kind not in _KINDS:
        alias = _KIND_ALIASES.get(kind.strip().lower().replace("-", "_").replace(" ", "_"))
        if alias is not None:
            return {**data, "kind": alias}
        if "args" in data and "tool" not in data:
            return {**data, "kind": "tool_call", "tool": kind}
    if "kind" not in data:
        for field, kind in (
            ("worker_ids", "propose_done"),
            ("tool", "tool_call"),
            ("steps", "plan"),
            ("approve", "critique"),
        ):
            if field in data:
                return {**data, "kind": kind}
    return data


_KINDS = ("plan", "tool_call", "propose_done", "critique")
_KIND_ALIASES = {"propose": "propose_done", "proposal": "propose_done", "done": "propose_done", "propose_fill": "propose_done",
                 "tool": "tool_call", "call": "tool_call", "toolcall": "tool_call", "call_tool": "tool_call",
                 "review": "critique"}  # fmt: skip


@lru_cache(maxsize=64)
def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``model.model_json_schema()``, computed once per model: building it costs milliseconds and
    the loop asks for it every turn. Callers must not mutate the returned dict."""
    return model.model_json_schema()


def executor_schema(
    tools: Sequence[str] | Mapping[str, dict[str, Any]],
    candidates: Sequence[int],
    count: int,
    *,
    propose_from: Sequence[int] = (),
    lessons: Sequence[str] | None = None,
    search: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The executor's action schema for one turn, narrowed to what it can do now: a tool named
    in the catalog; before any tool returned a worker, only a tool call; after, a tool call or a
    proposal of at most ``count`` ids (and ``LIST_CAP`` spares) among ``candidates``, the workers
    tools returned. With ``propose_from`` (verified workers, at least ``count`` of them) only a
    proposal of exactly ``count`` of them: the loop asks for it once the executor was told it
    has enough and did something else. Under constrained decoding a small model then cannot
    propose before it searched, invent an id, call a tool that does not exist or keep searching
    past a fill it already has; validation (``ExecutorAction``) stays as wide as before, so a
    provider without native schema support is judged by verification.

    ``tools`` maps each tool's name to its parameters' JSON schema (``ToolRegistry.schemas``):
    then each tool is a branch of its own whose ``args`` are exactly that tool's, required ones
    required, so a model cannot call ``find_workers()`` with nothing or write arguments no tool
    takes (a free-form object, under a grammar, is where a small model ran to the token limit).
    Names alone keep ``args`` free-form. An argument that names workers (``worker_id``,
    ``worker_ids``) takes only ``candidates``, and a tool that needs one is left out before a
    tool returned anyone: a small model looked up worker 1 three times before it searched.
    ``lessons``, the ids of the lessons in the prompt, narrows ``cited_lessons`` to them (none
    given: an empty list). ``search`` (``find_workers`` arguments) leaves one tool call: that
    search, exactly; the loop asks for it once, for a model stuck repeating a call."""
    schema = copy.deepcopy(json_schema(ExecutorAction))
    defs = schema["$defs"]
    if lessons is not None:
        for name in ("ToolCallAction", "ProposeDoneAction"):
            _cite_only(defs[name]["properties"]["cited_lessons"], lessons)
    if search is not None and isinstance(tools, Mapping) and "find_workers" in tools:
        tools = {"find_workers": _exactly(search)}
    _tool_branches(defs, tools, candidates)
    allowed = ["ToolCallAction"]
    if candidates or propose_from:
        proposal = defs["ProposeDoneAction"]["properties"]
        if propose_from:
            ids = sorted(set(propose_from))
            proposal["worker_ids"].update(items={"type": "integer", "enum": ids}, minItems=count)
            allowed = []
        else:
            ids = sorted(set(candidates))
            proposal["worker_ids"].update(items={"type": "integer", "enum": ids}, minItems=1)
        proposal["worker_ids"]["maxItems"] = count
        proposal["spares"].update(items={"type": "integer", "enum": ids}, maxItems=LIST_CAP)
        allowed.append("ProposeDoneAction")
    schema["oneOf"] = [{"$ref": f"#/$defs/{name}"} for name in allowed]
    kinds = {"ToolCallAction": "tool_call", "ProposeDoneAction": "propose_done"}
    schema["discriminator"]["mapping"] = {kinds[name]: f"#/$defs/{name}" for name in allowed}
    del defs["PlanAction"]
    return schema


def _cite_only(cited: dict[str, Any], lessons: Sequence[str]) -> None:
    ids = list(dict.fromkeys(lessons))
    if ids:
        cited.update(items={"type": "string", "enum": ids}, maxItems=len(ids))
    else:
        cited.update(maxItems=0)


def _exactly(args: Mapping[str, Any]) -> dict[str, Any]:
    """A parameters schema that takes exactly ``args``."""
    return {
        "type": "object",
        "properties": {name: {"const": value} for name, value in args.items()},
        "required": list(args),
        "additionalProperties": False,
    }


def _tool_branches(
    defs: dict[str, Any], tools: Sequence[str] | Mapping[str, dict[str, Any]], candidates: Sequence[int]
) -> None:
    """``ToolCallAction`` in ``defs`` as one branch per tool (``ToolCall_<name>``, its ``args``
    that tool's parameters, worker ids among ``candidates``) when ``tools`` carries parameters,
    else its ``tool`` as an enum."""
    call = defs["ToolCallAction"]
    if not isinstance(tools, Mapping):
        call["properties"]["tool"]["enum"] = list(dict.fromkeys(tools))
        return
    branches = []
    ids = sorted(set(candidates))
    for name, parameters in tools.items():
        branch = call_branch(name, parameters, defs, shape=call)
        if not _among(branch["properties"]["args"], ids):
            continue
        defs[branch["title"]] = branch
        branches.append({"$ref": f"#/$defs/{branch['title']}"})
    if not branches:  # no tool can be called as its schema says: leave the call free-form
        call["properties"]["tool"]["enum"] = list(tools)
        return
    defs["ToolCallAction"] = {"anyOf": branches, "title": "ToolCallAction"}


# A call and nothing else: the graph thinker's ``ToolCall`` as a branch's shape.
CALL_SHAPE: dict[str, Any] = {
    "type": "object",
    "properties": {"tool": {"type": "string"}, "args": {"type": "object"}},
    "required": ["tool", "args"],
    "additionalProperties": False,
}


def call_branch(
    name: str, parameters: Mapping[str, Any], defs: dict[str, Any], *, shape: Mapping[str, Any] = CALL_SHAPE
) -> dict[str, Any]:
    """One tool's branch in a schema of calls (the executor's actions, the graph thinker's
    steps): ``shape`` (the call's object schema, with any fields of its own beside ``tool`` and
    ``args``) with ``tool`` exactly ``name`` and ``args`` exactly that tool's ``parameters``
    (``call_arguments``; ``args``' description kept), both required when the tool requires an
    argument. A titled shape's branch is titled ``ToolCall_<name>``, its name under ``$defs``.
    Under constrained decoding a model cannot misspell a tool or invent an argument."""
    branch = copy.deepcopy(dict(shape))
    described = shape["properties"].get("args", {}).get("description")
    args = call_arguments(parameters, defs)
    if described is not None:
        args["description"] = described
    branch["properties"]["tool"] = {"type": "string", "const": name}
    branch["properties"]["args"] = args
    if args.get("required"):
        branch["required"] = list(dict.fromkeys([*branch.get("required", []), "tool", "args"]))
    if "title" in branch:
        branch["title"] = f"ToolCall_{name}"
    return branch


def call_arguments(parameters: Mapping[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """A tool's parameters schema as the ``args`` of its branch in a schema of calls
    (``call_branch``): a copy without its title, its ``$defs`` moved into ``defs``, the root's,
    where its refs (``#/$defs/...``) resolve beside every other tool's."""
    args = {key: value for key, value in copy.deepcopy(dict(parameters)).items() if key != "title"}
    defs.update(args.pop("$defs", {}))
    return args


def _among(args: dict[str, Any], ids: list[int]) -> bool:
    """Narrow ``args``' worker-id parameters to ``ids``; False when one is required and there
    are none (the tool cannot be called yet)."""
    properties = args.get("properties", {})
    for name, kind in (("worker_id", "integer"), ("worker_ids", "array")):
        if properties.get(name, {}).get("type") != kind:
            continue
        if not ids:
            if name in args.get("required", []):
                return False
            properties.pop(name)
            continue
        target = properties[name] if kind == "integer" else properties[name].setdefault("items", {})
        target.update(type="integer", enum=ids)
    return True
