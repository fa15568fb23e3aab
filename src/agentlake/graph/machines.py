"""State machines a conversation builds through tool calls, moved by ``go:`` buttons locally.

Owns the machine (named states, transitions, the current state and the path taken), the four
operations the thinker's tools perform (create, extend, reset, destroy), the limits that keep a
session's workspace small, and resolving a ``go:MACHINE:STATE`` action: a pure, local step that
never needs a model. It does not render buttons (``nodes.ui_v1``) nor decide when to build a
machine (the thinker's model does).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from agentlake.errors import NotFoundError, UserError

MAX_MACHINES = 8
MAX_STATES = 24
MAX_PATH = 50
NAME_PATTERN = r"^[a-z][a-z0-9_-]{0,31}$"
STATE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9 _-]{0,39}$"


class Transition(BaseModel):
    """An allowed move from ``source`` to ``target``; ``label`` is the button's text."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    source: str = Field(..., alias="from", pattern=STATE_PATTERN)
    target: str = Field(..., alias="to", pattern=STATE_PATTERN)
    label: str | None = Field(None, max_length=40)


class StateMachine(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(..., pattern=NAME_PATTERN)
    states: list[str] = Field(..., min_length=1, max_length=MAX_STATES)
    transitions: list[Transition] = Field(default_factory=list)
    initial: str
    current: str = ""
    path: list[str] = Field(default_factory=list, description="States visited, oldest first (capped).")

    @model_validator(mode="after")
    def _consistent(self) -> StateMachine:
        known = set(self.states)
        if len(known) != len(self.states):
            raise ValueError("states must be unique")
        if self.initial not in known:
            raise ValueError(f"initial state {self.initial!r} is not one of the states")
        for t in self.transitions:
            for end in (t.source, t.target):
                if end not in known:
                    raise ValueError(f"transition {t.source} -> {t.target}: {end!r} is not one of the states")
        if not self.current:
            self.current = self.initial
        if not self.path:
            self.path = [self.current]
        return self

    def moves(self) -> list[Transition]:
        """Transitions out of the current state, in declaration order."""
        return [t for t in self.transitions if t.source == self.current]

    def go(self, target: str) -> Transition:
        """Move to ``target``; ``UserError`` when no transition leads there from the current state."""
        for t in self.moves():
            if t.target == target:
                self.current = target
                self.path = [*self.path, target][-MAX_PATH:]
                return t
        allowed = ", ".join(t.target for t in self.moves()) or "none"
        raise UserError(
            f"machine {self.name!r} cannot go from {self.current!r} to {target!r} (allowed: {allowed})"
        )


def _validated(data: dict) -> StateMachine:
    try:
        return StateMachine.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "machine"
        raise UserError(f"bad state machine: {field}: {err['msg']}") from None


def create(machines: dict[str, StateMachine], spec: dict) -> StateMachine:
    """Add a machine from ``{name, states, transitions, initial}``; replaces one of the same name."""
    machine = _validated(
        {key: spec.get(key) for key in ("name", "states", "transitions", "initial") if key in spec}
    )
    if machine.name not in machines and len(machines) >= MAX_MACHINES:
        raise UserError(f"at most {MAX_MACHINES} state machines per session; destroy one first")
    machines[machine.name] = machine
    return machine


def _get(machines: dict[str, StateMachine], name: str) -> StateMachine:
    if name not in machines:
        raise NotFoundError(f"no state machine named {name!r} (machines: {', '.join(machines) or 'none'})")
    return machines[name]


def extend(
    machines: dict[str, StateMachine], name: str, states: list[str], transitions: list[dict]
) -> StateMachine:
    """Add states and transitions to a machine, keeping its current state."""
    machine = _get(machines, name)
    merged = machine.model_dump(by_alias=True)
    merged["states"] = list(dict.fromkeys([*machine.states, *states]))
    merged["transitions"] = [*merged["transitions"], *transitions]
    updated = _validated(merged)
    machines[name] = updated
    return updated


def reset(machines: dict[str, StateMachine], name: str) -> StateMachine:
    """Back to the initial state, path cleared."""
    machine = _get(machines, name)
    machine.current = machine.initial
    machine.path = [machine.initial]
    return machine


def destroy(machines: dict[str, StateMachine], name: str) -> None:
    """Remove the machine (``NotFoundError`` if there is none of that name)."""
    _get(machines, name)
    del machines[name]


def parse_go(action: str) -> tuple[str, str]:
    """``"go:order:shipped"`` -> ``("order", "shipped")``; ``UserError`` for anything else."""
    prefix, _, rest = action.partition(":")
    name, sep, target = rest.partition(":")
    if prefix != "go" or not sep or not name or not target:
        raise UserError(f"not a go: action: {action!r} (expected go:MACHINE:STATE)")
    return name, target


def go(machines: dict[str, StateMachine], action: str) -> tuple[StateMachine, Transition, str]:
    """Resolve a ``go:`` action locally: ``(machine, transition taken, previous state)``."""
    name, target = parse_go(action)
    machine = _get(machines, name)
    previous = machine.current
    transition = machine.go(target)
    return machine, transition, previous
