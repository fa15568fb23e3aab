"""The controls the browser draws: buttons, labels and tables, as sent in ``controls`` events.

Owns their shapes and limits, the actions a button may carry (``go:MACHINE:STATE``, a local
state-machine transition; ``inc:NAME``, ``dec:NAME`` and ``toggle:NAME``, a count or a switch
kept in the session and changed locally, :func:`apply_local`; ``say:TEXT``, sent back as if the
user had typed it) and the validation of controls a model asks for. It does not decide which
controls to show (``nodes.ui_v1``) nor move machines (``machines``).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator

from agentlake.errors import UserError
from agentlake.graph.machines import parse_go

MAX_CONTROLS = 12
MAX_TABLE_ROWS = 50
MAX_TABLE_COLUMNS = 12
MAX_CELL_CHARS = 160
# Counts and switches one session keeps (``inc:``, ``dec:``, ``toggle:``), and a count's bound.
MAX_VALUES = 16
MAX_COUNT = 1_000_000_000
LOCAL_ACTION = re.compile(r"^(inc|dec|toggle):([a-z][a-z0-9_-]{0,31})$")


def apply_local(values: dict[str, int | bool], action: str) -> tuple[str, int | bool | None, int | bool]:
    """Apply ``inc:NAME``, ``dec:NAME`` or ``toggle:NAME`` to ``values`` (a session's): a count
    starts at 0, a switch off. Returns ``(name, before, after)``; ``UserError`` for another
    action, a switch counted or a count toggled, a count past its bound, or one value too many."""
    found = LOCAL_ACTION.match(action)
    if found is None:
        raise UserError(f"{action!r} is not a local action: use inc:NAME, dec:NAME or toggle:NAME")
    verb, name = found.groups()
    before = values.get(name)
    if before is None and len(values) >= MAX_VALUES:
        raise UserError(f"at most {MAX_VALUES} counts and switches per conversation")
    if verb == "toggle":
        if before is not None and not isinstance(before, bool):
            raise UserError(f"{name} is a count: its buttons are inc:{name} and dec:{name}")
        after: int | bool = not before
    else:
        if isinstance(before, bool):
            raise UserError(f"{name} is a switch: its button is toggle:{name}")
        after = (before or 0) + (1 if verb == "inc" else -1)
        if abs(after) > MAX_COUNT:
            raise UserError(f"{name} is at its bound ({before})")
    values[name] = after
    return name, before, after


def value_text(name: str, value: int | bool) -> str:
    """How a count or a switch reads on the page and in the thinker's context."""
    return f"{name}: {('on' if value else 'off') if isinstance(value, bool) else value}"


class Button(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["button"] = "button"
    label: str = Field(..., min_length=1, max_length=40)
    action: str = Field(
        ...,
        min_length=4,
        max_length=300,
        description="go:MACHINE:STATE, inc:NAME, dec:NAME, toggle:NAME or say:TEXT",
    )

    @field_validator("action")
    @classmethod
    def _known_action(cls, value: str) -> str:
        if value.startswith("go:"):
            try:
                parse_go(value)
            except UserError as exc:
                raise ValueError(exc.message) from None
        elif not (LOCAL_ACTION.match(value) or (value.startswith("say:") and value[4:].strip())):
            raise ValueError(
                "a button's action is go:MACHINE:STATE, inc:NAME, dec:NAME, toggle:NAME or say:TEXT"
            )
        return value


class Label(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["label"] = "label"
    text: str = Field(..., min_length=1, max_length=200)


class Table(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["table"] = "table"
    title: str = Field("", max_length=120)
    columns: list[str] = Field(..., min_length=1, max_length=MAX_TABLE_COLUMNS)
    rows: list[list[Any]] = Field(default_factory=list)


Control = Annotated[Button | Label | Table, Field(discriminator="kind")]
_controls = TypeAdapter(list[Control])


def validate_controls(raw: Any) -> list[dict[str, Any]]:
    """Controls a model asked for, checked and trimmed; ``UserError`` says what is wrong."""
    if not isinstance(raw, list):
        raise UserError("controls must be a list of {kind: button|label|table, ...}")
    if len(raw) > MAX_CONTROLS:
        raise UserError(f"at most {MAX_CONTROLS} controls at once")
    try:
        parsed = _controls.validate_python(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise UserError(f"bad control at {'.'.join(str(p) for p in err['loc'])}: {err['msg']}") from None
    out = []
    for control in parsed:
        item = control.model_dump()
        if item["kind"] == "table":
            item = table(item["columns"], item["rows"], title=item["title"])
        out.append(item)
    return out


def cell(value: Any) -> Any:
    """A table cell the browser can show: numbers and booleans as they are, text capped."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    text = str(value)
    return text if len(text) <= MAX_CELL_CHARS else text[: MAX_CELL_CHARS - 1] + "…"


def table(columns: list[str], rows: list[list[Any]], *, title: str = "") -> dict[str, Any]:
    """A table control, rows and cells capped so one query cannot flood the page."""
    columns = [str(c) for c in columns[:MAX_TABLE_COLUMNS]]
    shown = [[cell(v) for v in list(row)[: len(columns)]] for row in rows[:MAX_TABLE_ROWS]]
    return {"kind": "table", "title": title[:120], "columns": columns, "rows": shown, "total_rows": len(rows)}
