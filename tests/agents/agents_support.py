"""Helpers shared by the agents tests (a module, not a conftest, so tests can import it)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from agentlake.observe import AppendResult, ObservedOp


class MemorySink:
    """An ``OpSink`` keeping ops in a list, so tests read exactly what was recorded."""

    local = False

    def __init__(self) -> None:
        self.ops: list[ObservedOp] = []

    def append(
        self, ops: Sequence[ObservedOp], *, timeout: float | None = None, wait_for_space: float = 0.0
    ) -> list[AppendResult]:
        self.ops.extend(ops)
        return [AppendResult(id=op.id) for op in ops]

    def query(self, **filters: Any) -> list[ObservedOp]:
        return list(self.ops)

    def recent(self, n: int = 100) -> list[ObservedOp]:
        return self.ops[-n:]

    def stats(self) -> Any:
        from agentlake.observe import Stats

        return Stats(total=len(self.ops))

    def close(self) -> None:
        pass

    def endpoint(self, name: str) -> list[ObservedOp]:
        return [op for op in self.ops if op.endpoint == name]


def action(kind: str, **fields: Any) -> str:
    """One scripted model reply: an action as JSON text."""
    return json.dumps({"kind": kind, **fields})
