"""The data-questions domain's side of learning: what a lesson about a user's tables says.

Owns ``DataAction`` (what code applies or shows for a data lesson: a verified query for a
question of that shape, a name that is wrong and the right one, what a value in words is in a
column, a text column to read as numbers or dates, or a note in words) and ``DATA`` (the
``learn.Domain`` that tells the learning machinery a data question's task key: its dataset;
merging and conflicts of actions; its extractor, ``questions.lessons.DataQuestionRules``). It
registers through the ``agentlake.domains`` entry point. It does not own the learning loop,
storage or curation (``agentlake.learn``) nor answering (``agentlake.agents.ask``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

if TYPE_CHECKING:
    from agentlake.learn import Lesson, TaskKey
    from agentlake.learn.extractor import Extractor
    from agentlake.settings import Settings

DOMAIN = "data"
TASK_KIND = "ask"
MAX_SQL_CHARS = 2000
MAX_NAME_CHARS = 128
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]{0,127}$")


def _words(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.casefold()))


class DataAction(BaseModel):
    """What a data lesson makes code do (``kind``):

    - ``playbook``: ``sql`` answered ``question`` (checked: it ran, and a person said it was
      right or it gave the value they expected); shown as a worked example to similar questions;
    - ``rename``: the name ``wrong`` does not exist, ``right`` does; code writes it in queries;
    - ``value``: a question's ``said`` is ``value`` in ``column`` ("Texas" is 'TX');
    - ``cast``: ``column`` is text holding ``cast`` values (DOUBLE, BIGINT, DATE);
    - ``note``: words only (what went wrong with a question of this shape).
    """

    model_config = ConfigDict(extra="forbid")

    kind: Literal["playbook", "rename", "value", "cast", "note"]
    question: str | None = Field(None, max_length=500)
    sql: str | None = Field(None, max_length=MAX_SQL_CHARS)
    wrong: str | None = Field(None, max_length=MAX_NAME_CHARS)
    right: str | None = Field(None, max_length=MAX_NAME_CHARS)
    column: str | None = Field(None, max_length=MAX_NAME_CHARS)
    said: str | None = Field(None, max_length=200)
    value: str | None = Field(None, max_length=200)
    cast: Literal["DOUBLE", "BIGINT", "DATE", "TIMESTAMP"] | None = None

    @model_validator(mode="after")
    def _shape(self) -> DataAction:
        needed = {
            "playbook": ("question", "sql"),
            "rename": ("wrong", "right"),
            "value": ("column", "said", "value"),
            "cast": ("column", "cast"),
            "note": (),
        }[self.kind]
        missing = [name for name in needed if not getattr(self, name)]
        if missing:
            raise ValueError(f"a {self.kind} action needs {', '.join(missing)}")
        for name in ("wrong", "right", "column"):
            value = getattr(self, name)
            if value is not None and not _NAME.match(value):
                raise ValueError(f"{name} {value!r} is not a table or column name")
        return self

    def identity(self) -> Any:
        """What makes two actions the same lesson."""
        if self.kind == "playbook":
            return [self.kind, _words(self.question or ""), _words(self.sql or "")]
        if self.kind == "rename":
            return [self.kind, (self.wrong or "").casefold()]
        if self.kind == "value":
            return [self.kind, (self.column or "").casefold(), (self.said or "").casefold()]
        if self.kind == "cast":
            return [self.kind, (self.column or "").casefold()]
        return [self.kind]

    def describe(self) -> str:
        if self.kind == "playbook":
            return f"for questions like {self.question!r}: {self.sql}"
        if self.kind == "rename":
            return f"write {self.right}, not {self.wrong} (which does not exist)"
        if self.kind == "value":
            return f"{self.said!r} is {self.column} = '{self.value}'"
        if self.kind == "cast":
            return f"{self.column} is text holding {self.cast} values: use TRY_CAST({self.column} AS {self.cast})"
        return "note"


def action_of(lesson: Lesson) -> DataAction | None:
    """``lesson``'s machine action as a ``DataAction``, or ``None`` when it has none or is
    not a data lesson."""
    if lesson.machine is None or lesson.domain != DOMAIN:
        return None
    return DataAction.model_validate(lesson.machine)


class DataDomain:
    """The data-questions domain for ``agentlake.learn`` (see the module docstring)."""

    name = DOMAIN
    key_fields = ("dataset",)
    # A lesson about one table is never given to a question about another.
    hard_fields = ("dataset",)
    partition_field = "dataset"
    # An answer is judged on its own (feedback): a lesson given to an answer it made worse than
    # the same table's answers without it is retired at once; a right answer teaches it again.
    min_runs_for_retire = 1

    def describe_task(self, task: TaskKey) -> str:
        dataset = task.fields.get("dataset")
        return f"a question about {dataset}" if dataset else "a question about the data"

    def validate_action(self, action: Mapping[str, Any]) -> dict[str, Any]:
        return DataAction.model_validate(dict(action)).model_dump(exclude_none=True)

    def action_is_empty(self, action: Mapping[str, Any]) -> bool:
        return False

    def action_identity(self, action: Mapping[str, Any]) -> Any:
        return DataAction.model_validate(dict(action)).identity()

    def merge_actions(self, a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
        # The same lesson learned again: the newer statement of it stands.
        return DataAction.model_validate(dict(b)).model_dump(exclude_none=True)

    def action_conflict(self, a: Mapping[str, Any], b: Mapping[str, Any]) -> str | None:
        first, second = DataAction.model_validate(dict(a)), DataAction.model_validate(dict(b))
        if first.identity() != second.identity() or first.kind in ("playbook", "note"):
            return None
        for name in ("right", "value", "cast"):
            if getattr(first, name) != getattr(second, name):
                return f"{first.kind} {getattr(first, name)!r} vs {getattr(second, name)!r}"
        return None

    def describe_action(self, action: Mapping[str, Any]) -> str:
        return DataAction.model_validate(dict(action)).describe()

    def tool_advice(self, tool: str, signature: str, example: str) -> tuple[str, str] | None:
        return None

    def rules(self, settings: Settings) -> Sequence[Extractor]:
        # Lazy (start-up time): the extractor loads with the first learning cycle.
        from agentlake.questions.lessons import DataQuestionRules

        return [DataQuestionRules(settings)]

    def inducers(self, settings: Settings) -> Sequence[Extractor]:
        return []


DATA = DataDomain()
