"""One typed-action turn: what every agent loop asks a model for in one step.

Owns the one way the agent loops (the executor/reviewer ``orchestrator``, ``ask``'s plan, the
graph's thinker step through ``graph.modelcalls.NodeModels``, the ``order_reader``) ask a model
for a typed reply: the schema of this turn (narrowed by the caller to what it may do now), the
call with its think switch, temperature and token budget, the tolerant parser and the schema
retries (the LLM layer's ``generate_json``, which also holds the structured-output breaker),
recording (the call's tags and the observer's context, so the ``llm.chat`` op names the role and
the trace), and what came of it: the value with its accounting (:class:`TurnReply`), or, for a
loop that goes on without it, a :class:`TurnFailure` saying whether the model answered no valid
action or the call itself failed. A task's turns are summed by a :class:`UsageMeter`.

It does not own prompts, what a loop does with an action, or the schema's narrowing (the
executor's in ``actions``, the thinker's steps in ``graph/nodes/thinker_v1.py``).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentlake.errors import RunError, UserError
from agentlake.observe import observe_context

if TYPE_CHECKING:
    from pydantic import BaseModel

    from agentlake.llm import CallRecord, Provider
    from agentlake.settings import Settings


@dataclass(frozen=True)
class Turn:
    """What one turn asks for: ``schema`` to decode under, ``validate`` to accept the reply
    with (raises to send the errors back), ``label`` naming it in errors, ``example`` shown
    instead of the schema to a model without native schema support. ``tags`` go on the call's
    accounting record (``call_tags``); ``agent_id``/``trace_id`` into the observer's context,
    so the model call's op names them. ``temperature``/``think`` ``None``: the model's default."""

    model: str | Provider
    schema: dict[str, Any]
    validate: Callable[[Any], Any]
    label: str
    example: str | None = None
    max_tokens: int = 1024
    temperature: float | None = None
    think: bool | None = False
    retries: int = 2
    tags: Mapping[str, str] = field(default_factory=dict)
    agent_id: str | None = None
    trace_id: str | None = None

    @classmethod
    def of(cls, model: str | Provider, output_type: type[BaseModel], **fields: Any) -> Turn:
        """A turn for a reply of ``output_type`` (its schema, unless ``schema`` narrows it)."""
        # Lazy: the actions' schema cache is the one every loop reads.
        from agentlake.agents.actions import json_schema

        fields.setdefault("schema", json_schema(output_type))
        fields.setdefault("label", output_type.__name__)
        return cls(model=model, validate=output_type.model_validate, **fields)


@dataclass(frozen=True)
class TurnReply:
    """A valid reply and what it cost: ``schema_retries`` repair requests before it was valid."""

    value: Any
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    latency_ms: float = 0.0
    schema_retries: int = 0


@dataclass(frozen=True)
class TurnFailure:
    """A turn without a valid reply. ``invalid``: the model answered, but no valid action
    within its retries (``errors``, the last reply ``raw``); else the call failed (``message``:
    the error's, e.g. a server down or a breaker open)."""

    invalid: bool
    message: str
    errors: tuple[str, ...] = ()
    attempts: int = 0
    raw: str = ""
    latency_ms: float = 0.0


def take(turn: Turn, messages: list[Any], settings: Settings | None = None) -> TurnReply:
    """The reply to ``messages`` under ``turn``. Raises what ``generate_json`` raises:
    ``StructuredOutputError`` (no valid reply within the retries), ``CircuitOpenError``,
    ``UserError`` (configuration), other ``RunError``s (the call failed)."""
    # Lazy (start-up time): the LLM layer loads on the first model call.
    from agentlake.llm import call_tags, generate_json

    started = time.perf_counter()
    with call_tags(**turn.tags), observe_context(agent_id=turn.agent_id, trace_id=turn.trace_id):
        result = generate_json(
            turn.model,
            messages,
            turn.schema,
            validate=turn.validate,
            retries=turn.retries,
            label=turn.label,
            example=turn.example,
            settings=settings,
            max_tokens=turn.max_tokens,
            temperature=turn.temperature,
            think=turn.think,
        )
    usage = result.completion.usage
    return TurnReply(
        value=result.value,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cost_usd=result.cost_usd or 0.0,
        latency_ms=_ms(started),
        schema_retries=result.schema_retries,
    )


def attempt(turn: Turn, messages: list[Any], settings: Settings | None = None) -> TurnReply | TurnFailure:
    """:func:`take` for a loop that goes on without a reply: a model that gave no valid reply,
    or a call that failed, is a :class:`TurnFailure`. ``UserError`` (configuration) is raised."""
    # Lazy (start-up time): the LLM layer loads on the first model call.
    from agentlake.llm import StructuredOutputError

    started = time.perf_counter()
    try:
        return take(turn, messages, settings)
    except StructuredOutputError as exc:
        return TurnFailure(
            invalid=True,
            message=exc.message,
            errors=tuple(exc.errors),
            attempts=exc.attempts,
            raw=exc.raw_text or "",
            latency_ms=_ms(started),
        )
    except UserError:
        raise
    except RunError as exc:
        return TurnFailure(invalid=False, message=exc.message, latency_ms=_ms(started))


_METER_TAG = "agentlake_task"


class UsageMeter:
    """Sums the tokens and cost of every model call made for one task, failed calls included.

    Listens to the LLM layer's accounting hook and keeps only the records tagged with its own
    token (:meth:`tags`, on each of the task's turns), so concurrent tasks in other threads are
    not counted.
    """

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.token = uuid.uuid4().hex
        self.input_tokens = 0
        self.output_tokens = 0
        self.cost_usd = 0.0
        self.calls = 0
        self._unsubscribe: Callable[[], None] | None = None

    def tags(self) -> dict[str, str]:
        """The call tags that make a turn's calls this meter's."""
        return {_METER_TAG: self.token}

    def _record(self, record: CallRecord) -> None:
        if record.tags.get(_METER_TAG) == self.token:
            self.calls += 1
            self.input_tokens += record.input_tokens
            self.output_tokens += record.output_tokens
            self.cost_usd += record.cost_usd or 0.0

    def __enter__(self) -> UsageMeter:
        # Lazy (start-up time): the LLM layer loads on the first model call.
        from agentlake.llm import add_recorder

        self._unsubscribe = add_recorder(self._record)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)
