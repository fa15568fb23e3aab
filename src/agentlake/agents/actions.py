"""The actions an agent may take: one typed action per turn.

Owns the discriminated union ``plan | tool_call | propose_done | critique`` and the two
per-role views of it the orchestrator asks the model for (the executor plans, calls tools and
proposes; the reviewer critiques). It does not own how actions are obtained (the LLM layer's
``generate_structured``) or applied (``orchestrator``).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel, field_validator, model_validator


class _ActionBase(BaseModel):
    # Models add stray keys ("thought", "confidence"); ignoring them keeps a usable action usable.
    model_config = ConfigDict(extra="ignore")

    cited_lessons: list[str] = Field(
        default_factory=list, description="Ids of the lessons this action relies on, e.g. ['L-abc123']."
    )


class PlanAction(_ActionBase):
    """State the steps you intend to take. Costs a turn; use it once, at the start."""

    kind: Literal["plan"] = "plan"
    steps: list[str] = Field(default_factory=list, description="Short ordered steps.")


class ToolCallAction(_ActionBase):
    """Call one tool from the catalog with its arguments."""

    kind: Literal["tool_call"] = "tool_call"
    tool: str = Field(..., description="Tool name from the catalog.")
    args: dict[str, Any] = Field(default_factory=dict, description="Arguments, as the tool's schema says.")
    reason: str = Field("", description="Why this call, in one line.")


class ProposeDoneAction(_ActionBase):
    """Propose the final fill: exactly the order's count of worker ids, plus optional spares."""

    kind: Literal["propose_done"] = "propose_done"
    worker_ids: list[int] = Field(..., description="The workers to book, exactly `count` of them.")
    spares: list[int] = Field(default_factory=list, description="Further qualified workers kept as buffer.")
    rationale: str = Field("", description="Why these workers, in one or two lines.")

    @field_validator("worker_ids", "spares", mode="before")
    @classmethod
    def _ids(cls, value: Any) -> Any:
        # Small models write ids as strings or as "W-123"; accept the digits, reject anything else.
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


class CritiqueAction(_ActionBase):
    """The reviewer's verdict on the executor's latest step."""

    kind: Literal["critique"] = "critique"
    approve: bool = Field(..., description="True only when the proposal fully satisfies the order.")
    notes: str = Field("", description="What is wrong or what to do next.")
    drift: list[str] = Field(
        default_factory=list,
        description="Ways the executor strayed from the order (wrong city, role, count...).",
    )


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
    """Tolerate replies that drop ``kind`` or wrap the action as ``{"tool_call": {...}}``."""
    if not isinstance(data, dict):
        return data
    if "kind" not in data and len(data) == 1:
        ((key, inner),) = data.items()
        if key in _KINDS and isinstance(inner, dict):
            return {**inner, "kind": key}
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


@lru_cache(maxsize=64)
def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``model.model_json_schema()``, computed once per model: building it costs milliseconds and
    the loop asks for it every turn. Callers must not mutate the returned dict."""
    return model.model_json_schema()


def action_kinds(output_type: type[RootModel]) -> list[str]:
    """The ``kind`` values an action type accepts, for prompts."""
    schema = json_schema(output_type)
    kinds = []
    for definition in schema.get("$defs", {}).values():
        kind = definition.get("properties", {}).get("kind", {})
        if "const" in kind:
            kinds.append(kind["const"])
        elif "default" in kind:
            kinds.append(kind["default"])
    return sorted(kinds)
