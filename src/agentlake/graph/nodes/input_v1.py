"""``input_v1``: where every browser event enters the graph, and the reflex path.

Classifies a message without a model: small talk ("hi", "thanks", "bye") is answered at once
along the reflex edge to the output node, skipping the thinker; a staffing order ("need two
welders near Cleveland OH tomorrow", ``workforce.order_text.reads_as_order``), or a short
answer to the order the chat last asked back about, goes straight to the thinker as an order
(no plan: the thinker's code fills it); a complex or data request goes to the director for a
plan when the graph has one; anything else goes to the thinker. Button
actions: ``go:`` (a local transition) and ``inc:``, ``dec:``, ``toggle:`` (a count or a switch
the session keeps) go to the ui node over a control edge, with no model call; ``say:`` is
treated as typed text. Activity, presence and workspace reports go to the sensor over control
edges. It does not answer anything but small talk.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field

from agentlake.graph.controls import LOCAL_ACTION
from agentlake.graph.node import Emit, Node, NodeContext, NodeInfo, Packet, register_node

_SOCIAL = [
    (re.compile(r"^(hi|hello|hey|hiya|howdy|good (morning|afternoon|evening)|greetings)( there)?( agentlake)?$"),
     "Hello! Ask me about the workers in the lake (\"how many forklift operators are in CA?\"), "
     "or ask me to set up a workflow."),
    (re.compile(r"^(thanks|thank you|thx|ty|cheers|great|nice|cool|perfect)( a lot| so much)?( thanks)?$"),
     "You're welcome."),
    (re.compile(r"^(bye|goodbye|see you|see ya|later|good night)( later| soon)?$"), "Goodbye!"),
    (re.compile(r"^(ok|okay|k|got it|alright|sure|yes|no worries)$"), "Okay."),
    (re.compile(r"^how are you( doing)?( today)?$"), "All good, and ready to look things up for you."),
]  # fmt: skip
_DATA_WORDS = re.compile(
    r"\b(how many|count|number of|average|avg|sum|total|list|show|find|search|who|which|top|compare|"
    r"workers?|clients?|placements?|sql|query|table|rows?|dataset|welders?|operators?|drivers?|nurses?)\b"
)


# A message this short, after the chat asked back about an order, is read as its answer ('3',
# 'Springfield, MO', 'welders').
ANSWER_WORDS = 12


def normalize(text: str) -> str:
    """Lower case, punctuation and repeated spaces dropped: how small talk is compared."""
    return " ".join(re.sub(r"[^a-z0-9' ]+", " ", text.lower()).split())


def reflex_reply(text: str) -> str | None:
    """The canned reply to small talk, or None when the message needs thought."""
    plain = normalize(text)
    for pattern, reply in _SOCIAL:
        if pattern.match(plain):
            return reply
    return None


class InputConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    complex_words: int = Field(18, ge=1, description="Messages at least this long count as complex.")


@register_node
class InputV1(Node):
    info = NodeInfo(
        name="input_v1",
        role="input",
        version=1,
        description="Classifies each event: reflex, plan first, think, local control or sensor report.",
        accepts=("data",),
        emits=("data", "control"),
    )
    Config = InputConfig
    config: InputConfig  # the loader validates the graph's mapping into it

    def classify(self, text: str, *, pending_order: str | None = None) -> str:
        """``social``, ``order``, ``complex`` or ``simple``. With ``pending_order`` (an order
        asked back about), a short message that is no question about the data answers it."""
        # Lazy (start-up time): the staffing domain loads with the first message.
        from agentlake.workforce.order_text import asks_about_data, reads_as_order

        if reflex_reply(text) is not None:
            return "social"
        if reads_as_order(text):
            return "order"
        if pending_order and len(text.split()) <= ANSWER_WORDS and not asks_about_data(text):
            return "order"
        if _DATA_WORDS.search(text.lower()) or len(text.split()) >= self.config.complex_words:
            return "complex"
        return "simple"

    def run(self, packet: Packet, ctx: NodeContext) -> list[Emit]:
        payload = packet.payload
        if packet.kind in ("presence", "workspace"):
            return (
                [Emit(packet.kind, payload, edge="control", to="sensor")]
                if ctx.can_reach("sensor", "control")
                else []
            )
        if packet.kind == "action":
            action = str(payload["action"])
            if action.startswith("go:"):
                ctx.trace("route", path="local", action=action)
                return [Emit("go", {"action": action}, edge="control", to="ui")]
            if LOCAL_ACTION.match(action):
                ctx.trace("route", path="local", action=action)
                return [Emit("local", {"action": action}, edge="control", to="ui")]
            return self._message(action[len("say:") :].strip(), ctx)
        return self._message(str(payload["text"]), ctx)

    def _message(self, text: str, ctx: NodeContext) -> list[Emit]:
        emits: list[Emit] = []
        session = ctx.session
        if ctx.can_reach("sensor", "control"):
            # Before the message, so the sensor's note is in the thinker's context for this turn.
            emits.append(
                Emit(
                    "activity",
                    {"at": ctx.now, "previous": session.last_activity},
                    edge="control",
                    to="sensor",
                )
            )
        session.last_activity = ctx.now
        session.remember("user", text)
        kind = self.classify(text, pending_order=session.pending_order)
        reflex = reflex_reply(text) if kind == "social" else None
        answers = None
        if kind != "social":
            # An answer completes the order asked about; a new order or another request drops it.
            if kind == "order" and self.classify(text) != "order":
                answers = session.pending_order
            session.pending_order = None
        if reflex is not None and ctx.can_reach("output"):
            ctx.trace("route", path="reflex", kind=kind)
            emits.append(Emit("reply", {"text": reflex, "user": text, "path": "reflex"}, to="output"))
        elif kind == "order":
            ctx.trace("route", path="thinker", kind=kind, answers=answers is not None)
            emits.append(Emit("message", {"text": text, "kind": kind, "answers": answers}, to="thinker"))
        elif kind == "complex" and ctx.can_reach("director"):
            ctx.trace("route", path="director", kind=kind)
            emits.append(Emit("message", {"text": text, "kind": kind}, to="director"))
        else:
            ctx.trace("route", path="thinker", kind=kind)
            emits.append(Emit("message", {"text": text, "kind": kind}, to="thinker"))
        return emits
