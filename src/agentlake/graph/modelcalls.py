"""Model calls of graph nodes: through the LLM layer, tagged with the node, observed as ops.

Owns resolving the graph's model (``settings.graph_model``, else ``default_model``: the
embedded model; the shipped demo model ``function:graph-demo`` is registered on first use), :class:`NodeModels` (what a node uses to ask for a typed reply), and
:func:`record_turn_calls`, which records the model calls of one turn as ``llm.*`` ops (agent
``graph.<node>``, the turn's trace id) by subscribing to the LLM layer's accounting and keeping
only the calls tagged with that turn. So each call is recorded once, by the same mapping every
other part of agentlake uses (``observe.llm_calls.op_from_call``), and concurrent turns or
other model users in the process are not mixed in. Prompts belong to the nodes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from agentlake.observe import event, observe_context

if TYPE_CHECKING:
    from agentlake.observe import Observer
    from agentlake.settings import Settings

log = logging.getLogger(__name__)

M = TypeVar("M", bound=BaseModel)


def graph_model(settings: Settings) -> str:
    """The model string the graph's nodes call (``graph_model``, else ``default_model``), with
    the demo model registered if it is that. ``UnavailableError`` when there is none."""
    # Lazy (start-up time): the graph runtime loads on first use.
    from agentlake.errors import UnavailableError
    from agentlake.graph.demo import DEMO_MODEL, ensure_demo_model
    from agentlake.llm import default_model

    model = default_model(settings, "graph_model")
    if not model:
        raise UnavailableError(
            "the graph has no model: install the embedded models (`make models`), set AGENTLAKE_GRAPH_MODEL "
            f"(e.g. ollama:qwen3:4b), or use the scripted demo ({DEMO_MODEL})"
        )
    if model == DEMO_MODEL:
        ensure_demo_model()
    return model


def record_turn_calls(observer: Observer, turn_tag: str) -> Callable[[], None]:
    """Record every model call tagged ``graph_turn=turn_tag`` into ``observer`` until the
    returned function is called. Recording failures are logged, never raised."""
    # Lazy (start-up time): the LLM layer loads on the first model call.
    from agentlake.llm import add_recorder
    from agentlake.observe.llm_calls import op_from_call

    def record(call: Any) -> None:
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

    def structured(self, messages: list[Any], output_type: type[M], *, max_tokens: int = 1024) -> M:
        """An ``output_type`` from the graph's model (``generate_structured``: schema retries,
        continuations, breaker); raises what the LLM layer raises."""
        # Lazy (start-up time): the LLM layer loads on the first model call.
        from agentlake.llm import call_tags, generate_structured

        self.calls += 1
        with (
            observe_context(agent_id=f"graph.{self.node_id}", trace_id=self.trace_id),
            call_tags(graph_turn=self.turn_tag, graph_node=self.node_id),
        ):
            return generate_structured(
                self.model, messages, output_type, settings=self.settings, max_tokens=max_tokens
            )
