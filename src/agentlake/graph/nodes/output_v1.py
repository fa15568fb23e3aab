"""``output_v1``: streams a reply to the browser as ``delta`` events, then ``done``.

The LLM layer returns a whole reply (its providers do not stream), so the output node is what
streams: it cuts the text into chunks at word boundaries and sends them as ``delta`` events, a
few milliseconds apart so the browser shows them arriving, then one ``done`` with the full text.
It then hands the finished exchange to the memorizer. It does not write the reply.
"""

from __future__ import annotations

import re
import time

from pydantic import BaseModel, ConfigDict, Field

from agentlake.graph.node import Emit, Node, NodeContext, NodeInfo, Packet, register_node


def chunks(text: str, size: int) -> list[str]:
    """``text`` in pieces of about ``size`` characters, cut after whitespace; joined they are ``text``."""
    pieces: list[str] = []
    current = ""
    for token in re.findall(r"\S+\s*|\s+", text):
        if current and len(current) + len(token) > size:
            pieces.append(current)
            current = ""
        current += token
    if current:
        pieces.append(current)
    return pieces


class OutputConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    chunk_chars: int = Field(24, ge=1, le=4000)
    delay_ms: float = Field(
        0.0, ge=0, le=1000, description="Pause between deltas (the dashboard's typing effect)."
    )


@register_node
class OutputV1(Node):
    info = NodeInfo(
        name="output_v1",
        role="output",
        version=1,
        description="Streams the reply as delta events, then done; passes the exchange to memory.",
        accepts=("data",),
        emits=("data",),
    )
    Config = OutputConfig
    config: OutputConfig  # the loader validates the graph's mapping into it

    def run(self, packet: Packet, ctx: NodeContext) -> list[Emit]:
        text = str(packet.payload["text"])
        pieces = chunks(text, self.config.chunk_chars)
        for number, piece in enumerate(pieces):
            if number and self.config.delay_ms:
                time.sleep(self.config.delay_ms / 1000)
            ctx.send({"type": "delta", "text": piece})
        path = packet.payload.get("path", "thinker")
        done = {"type": "done", "text": text, "path": path, "turn": ctx.session.turns}
        if packet.payload.get("answer_id"):
            # Feedback may be given on it: the buttons under the reply.
            done["answer_id"] = packet.payload["answer_id"]
            ctx.session.answered(done["answer_id"])
        ctx.send(done)
        ctx.session.remember("assistant", text)
        ctx.trace("streamed", deltas=len(pieces), chars=len(text), path=path)
        if not ctx.can_reach("memorizer"):
            return []
        return [
            Emit(
                "exchange",
                {
                    "user": packet.payload.get("user", ""),
                    "reply": text,
                    "path": path,
                    "facts": packet.payload.get("facts", []),
                },
                to="memorizer",
            )
        ]
