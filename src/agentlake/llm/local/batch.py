"""The batching of ``local:`` replies decoding at the same time over one loaded model.

Owns the schedule: each reply is a generator of forward passes (``Decoder._steps``: it yields
a ``Pass``, is sent its logits; it yields None to sit a round out, waiting for another
reply's prompt it will copy), and the threads asking for replies take turns driving every
reply under way: one round gathers the next pass of each (a new reply joins at the next
round, its prompt cut into ``PREFILL_CHUNK``-token pieces so it does not hold the others'
steps back for a whole prompt), runs them as one engine call (``Engine.evaluate_batch``: one
read of the weights for all, the point of it on a memory-bound CPU) and sends each its
logits. The thread whose reply is done hands the turn to one still waiting. A reply alone
runs its passes through ``Engine.evaluate`` as before batching. A reply that fails (its
grammar, its timeout) fails alone; an engine call that fails is run again one pass at a
time, so only the pass that fails by itself fails its reply. It does not own decoding
(``decoder``) nor the forward pass (``engines/``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from agentlake.llm.local.engine import Pass
from agentlake.llm.provider import ProviderTimeoutError

if TYPE_CHECKING:
    from agentlake.llm.local.engine import Engine

# Prompt tokens a new reply evaluates per round while others decode: their steps wait for
# the round, so a 2k-token prompt is cut rather than stall them for its whole prefill.
PREFILL_CHUNK = 256


class Reply:
    """One reply under way: its steps, its next pass, and how it ended."""

    def __init__(
        self, steps: Generator[Pass | None, Any, Any], deadline: float | None, timeout: float | None
    ):
        self.steps = steps
        self.deadline = deadline
        self.timeout = timeout
        self.pending: Pass | None = None
        self.result: Any = None
        self.error: BaseException | None = None
        self.done = False


class Batch:
    """The replies decoding over one engine, and the turn to drive them (module docstring)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._turn = threading.Condition()
        self._arrived: list[Reply] = []
        self._active: list[Reply] = []
        self._driving = False
        # The largest number of replies one engine call served (the benchmark reports it).
        self.widest = 0

    def under_way(self) -> int:
        """How many replies the rounds serve now (at least 1): read by a reply's steps, which
        run in the driving thread."""
        return max(1, len(self._active))

    def run(self, steps: Generator[Pass | None, Any, Any], timeout: float | None = None) -> Any:
        """What ``steps`` returns once every pass it yields has been evaluated, beside the
        replies other threads run; ``ProviderTimeoutError`` after ``timeout`` seconds (checked
        between passes), or what the steps raised."""
        deadline = time.monotonic() + timeout if timeout else None
        reply = Reply(steps, deadline, timeout)
        with self._turn:
            self._arrived.append(reply)
            while not reply.done and self._driving:
                self._turn.wait()
            drive = not reply.done
            if drive:
                self._driving = True
        if drive:
            try:
                self._drive(reply)
            finally:
                with self._turn:
                    self._driving = False
                    self._turn.notify_all()
        if reply.error is not None:
            raise reply.error
        return reply.result

    def _drive(self, own: Reply) -> None:
        """Rounds over every reply under way until ``own`` is done."""
        while not own.done:
            with self._turn:
                arrived, self._arrived = self._arrived, []
            for reply in arrived:
                self._advance(reply, None)
                if not reply.done:
                    self._active.append(reply)
            self._active = [reply for reply in self._active if not reply.done]
            if self._active:
                self._round(self._active)
            with self._turn:
                self._turn.notify_all()

    def _round(self, replies: list[Reply]) -> None:
        """One engine call for the next pass of each of ``replies``, and their logits sent on."""
        running = [reply for reply in replies if reply.pending is not None]
        waiting = [reply for reply in replies if reply.pending is None]
        passes: list[Pass] = []
        partial: list[Pass | None] = []  # what is left of a prompt cut for this round
        for reply in running:
            one = reply.pending
            assert one is not None
            rest = None
            if len(running) > 1 and len(one.tokens) - PREFILL_CHUNK >= one.rows:
                rest = Pass(one.slot, one.keep + PREFILL_CHUNK, one.tokens[PREFILL_CHUNK:], one.rows)
                one = Pass(one.slot, one.keep, one.tokens[:PREFILL_CHUNK])
            passes.append(one)
            partial.append(rest)
        results = self._evaluate(passes) if passes else []
        self.widest = max(self.widest, len(passes))
        for reply, result, rest in zip(running, results, partial, strict=True):
            if isinstance(result, BaseException):
                self._fail(reply, result)
            elif rest is not None:
                reply.pending = rest
                self._check_deadline(reply)
            else:
                self._advance(reply, result)
        for reply in waiting:
            self._advance(reply, None)  # it sat this round out

    def _evaluate(self, passes: list[Pass]) -> list[Any]:
        """The logits of each pass, or the exception its pass raised alone."""
        if len(passes) > 1:
            try:
                return self.engine.evaluate_batch(passes)
            except Exception:  # each pass is tried alone below; its own error is kept
                pass
        results: list[Any] = []
        for one in passes:
            try:
                results.append(self.engine.evaluate(*one))
            except Exception as exc:  # this reply fails, the others go on
                results.append(exc)
        return results

    def _advance(self, reply: Reply, logits: Any) -> None:
        """Send ``logits`` to ``reply`` (None starts it) and keep its next pass, or its end."""
        try:
            reply.pending = reply.steps.send(logits)
        except StopIteration as stop:
            reply.result, reply.done = stop.value, True
            return
        except Exception as exc:  # handed to the reply's own thread
            reply.error, reply.done = exc, True
            return
        self._check_deadline(reply)

    def _check_deadline(self, reply: Reply) -> None:
        if reply.deadline is not None and time.monotonic() > reply.deadline:
            self._fail(
                reply,
                ProviderTimeoutError(
                    f"the reply took longer than its timeout of {reply.timeout:g} s",
                    timeout_s=reply.timeout or 0.0,
                ),
            )

    def _fail(self, reply: Reply, error: BaseException) -> None:
        reply.steps.close()  # its slot is released (and emptied: its cache is not trusted)
        reply.error, reply.done = error, True
