"""Model calls of graph nodes: through the LLM layer, tagged with the node, observed as ops.

Owns resolving the graph's model (``settings.graph_model``, else ``default_model``: the
embedded model when installed, else the shipped demo model ``function:graph-demo``, registered
on first use, with a note saying so), :class:`NodeModels` (what a node uses to ask for a typed
reply), and
:func:`record_turn_calls`, which records the model calls of one turn as ``llm.*`` ops (agent
``graph.<node>``, the turn's trace id) by subscribing to the LLM layer's accounting and keeping
only the calls tagged with that turn. So each call is recorded once, by the same mapping every
other part of agentlake uses (``observe.llm_calls.op_from_call``), and concurrent turns or
other model users in the process are not mixed in. Prompts belong to the nodes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from agentlake.observe import event, observe_context

if TYPE_CHECKING:
    from agentlake.llm import CallRecord
    from agentlake.observe import Observer
    from agentlake.settings import Settings

log = logging.getLogger(__name__)

M = TypeVar("M", bound=BaseModel)


def graph_model_choice(settings: Settings) -> tuple[str, str | None]:
    """``(model, note)``: the model the graph's nodes call (``graph_model``, else
    ``default_model``: the embedded model when one is installed), else the scripted demo
    ``function:graph-demo`` with a note saying so and what would give it a real model."""
    # Lazy (start-up time): the graph runtime loads on first use.
    from agentlake.graph.demo import DEMO_MODEL
    from agentlake.llm import default_model

    model = default_model(settings, "graph_model")
    if model:
        return model, None
    return DEMO_MODEL, (
        f"no model configured or installed: the scripted demo ({DEMO_MODEL}) answers; install an embedded "
        "model (`agentlake models install 0.5b`) or set AGENTLAKE_GRAPH_MODEL (e.g. ollama:qwen3:4b)"
    )


def graph_model(settings: Settings) -> str:
    """The model string the graph's nodes call (``graph_model_choice``), with the demo model
    registered if it is that."""
    # Lazy (start-up time): the graph runtime loads on first use.
    from agentlake.graph.demo import DEMO_MODEL, ensure_demo_model

    model, _ = graph_model_choice(settings)
    if model == DEMO_MODEL:
        ensure_demo_model()
    return model


def record_turn_calls(observer: Observer, turn_tag: str) -> Callable[[], None]:
    """Record every model call tagged ``graph_turn=turn_tag`` into ``observer`` until the
    returned function is called. Recording failures are logged, never raised."""
    # Lazy (start-up time): the LLM layer loads on the first model call.
    from agentlake.llm import add_recorder
    from agentlake.observe.llm_calls import op_from_call

    def record(call: CallRecord) -> None:
        if call.tags.get("graph_turn") == turn_tag:
            event(observer=observer, **op_from_call(call))  # never raises into the conversation

    return add_recorder(record)


class NodeModels:
    """Typed model calls on behalf of one node in one turn."""

    def __init__(self, settings: Settings, node_id: str, turn_tag: str, trace_id: str) -> None:
        self.settings = settings
        self.node_id = node_id
        self.turn_tag = turn_tag
        self.trace_id = trace_id
        self.calls = 0

    @property
    def model(self) -> str:
        return graph_model(self.settings)

    @contextmanager
    def on_behalf(self) -> Iterator[None]:
        """Inside, model calls that library code makes for this node (the order reader the
        chat's fill asks) are tagged and recorded as this node's, as :meth:`structured`'s are."""
        # Lazy (start-up time): the LLM layer loads on the first model call.
        from agentlake.llm import call_tags

        self.calls += 1
        with (
            observe_context(agent_id=f"graph.{self.node_id}", trace_id=self.trace_id),
            call_tags(graph_turn=self.turn_tag, graph_node=self.node_id),
        ):
            yield

    def structured(
        self,
        messages: list[Any],
        output_type: type[M],
        *,
        max_tokens: int = 1024,
        schema: dict[str, Any] | None = None,
        example: str | None = None,
    ) -> M:
        """An ``output_type`` from the graph's model (schema retries, continuations, breaker);
        raises what the LLM layer raises. ``schema``: a narrower JSON schema to decode with
        (the reply is still validated as ``output_type``); ``example``: the reply's shape, shown
        instead of a schema to a model without native schema support. With either, the call is
        one typed-action turn (``agents.turn``, as the staffing agents' and ``ask``'s are)."""
        # Lazy (start-up time): the LLM layer and the agents load on the first model call.
        from agentlake.agents.turn import Turn, take
        from agentlake.llm import call_tags, generate_structured

        self.calls += 1
        agent_id, tags = f"graph.{self.node_id}", {"graph_turn": self.turn_tag, "graph_node": self.node_id}
        if schema is not None or example is not None:
            turn = Turn.of(
                self.model,
                output_type,
                **({"schema": schema} if schema is not None else {}),
                example=example,
                max_tokens=max_tokens,
                think=False,
                tags=tags,
                agent_id=agent_id,
                trace_id=self.trace_id,
            )
            return take(turn, messages, self.settings).value
        with observe_context(agent_id=agent_id, trace_id=self.trace_id), call_tags(**tags):
            return generate_structured(
                self.model, messages, output_type, settings=self.settings, max_tokens=max_tokens, think=False
            )
