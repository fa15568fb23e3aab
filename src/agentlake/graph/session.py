"""One conversation's state: what survives between turns and across a graph switch.

Owns the ``SessionState`` (recent messages, the context each node last received, state
machines, the controls last sent to the browser, activity and presence times, sensor notes,
the ids of its answers feedback may be given on, an order asked back about)
and ``Sessions``, a bounded map of them so a browser that reconnects with its session id finds
its conversation again. Nodes read and write it through their context; it holds no node logic.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from agentlake.graph.machines import StateMachine

MAX_HISTORY = 40
MAX_ANSWERS = 50  # the answers of a session feedback may still be given on
MAX_SESSIONS = 200


def new_session_id() -> str:
    return "s-" + secrets.token_hex(6)


@dataclass
class SessionState:
    """Everything one conversation keeps. Guarded by ``lock``: one turn at a time per session."""

    id: str = field(default_factory=new_session_id)
    # Who opened it: a trusted proxy's user, else the key's name, else its fingerprint (None on an
    # open gateway); the dashboard shows it.
    owner: str | None = None
    history: list[dict[str, str]] = field(default_factory=list)
    context: dict[str, dict[str, dict[str, Any]]] = field(
        default_factory=dict
    )  # node id -> source role -> payload
    machines: dict[str, StateMachine] = field(default_factory=dict)
    requested_controls: list[dict[str, Any]] = field(default_factory=list)  # asked for by the thinker
    table: dict[str, Any] | None = None  # the latest query result shown as a table
    values: dict[str, int | bool] = field(default_factory=dict)  # counts and switches (inc:, dec:, toggle:)
    controls_sent: list[dict[str, Any]] = field(default_factory=list)
    memory: dict[str, Any] = field(default_factory=dict)  # the memorizer's compact state
    turns: int = 0
    last_activity: float | None = None
    hidden_since: float | None = None
    notes: list[str] = field(default_factory=list)
    shown: list[str] = field(default_factory=list)  # what the browser last said it shows, one line each
    answers: list[str] = field(default_factory=list)  # ids of its answers (ask.answer ops), newest last
    # An order in words the chat asked back about ('How many workers?'): the next short message
    # is read with it, as its answer.
    pending_order: str | None = None
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def remember(self, role: str, content: str) -> None:
        self.history.append({"role": role, "content": content})
        del self.history[:-MAX_HISTORY]

    def answered(self, answer_id: str) -> None:
        """Keep ``answer_id`` as one of this session's answers (the newest ``MAX_ANSWERS``)."""
        self.answers.append(answer_id)
        del self.answers[:-MAX_ANSWERS]

    def controls_ids(self) -> list[str]:
        return [str(control["id"]) for control in self.controls_sent]


class Sessions:
    """Sessions by id, the least recently used dropped beyond ``limit``."""

    def __init__(self, limit: int = MAX_SESSIONS) -> None:
        self._limit = limit
        self._items: OrderedDict[str, SessionState] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, session_id: str | None = None, *, owner: str | None = None) -> SessionState:
        """The session ``session_id`` of ``owner`` (created if unknown or None).

        A session belongs to whoever opened it: asking for another owner's session id gives a
        new session with a fresh id, never theirs (nor a second session under their id).
        """
        with self._lock:
            if session_id and session_id in self._items:
                found = self._items[session_id]
                if found.owner == owner:
                    self._items.move_to_end(session_id)
                    return found
                session_id = None
            session = SessionState(id=session_id, owner=owner) if session_id else SessionState(owner=owner)
            self._items[session.id] = session
            while len(self._items) > self._limit:
                self._items.popitem(last=False)
            return session

    def __len__(self) -> int:
        return len(self._items)


def now() -> float:
    return time.time()
