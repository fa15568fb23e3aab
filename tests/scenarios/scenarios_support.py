"""A scripted LLM staffer for the scenarios tests (a module, not a conftest, so tests import it).

``lesson_follower`` stands for a small model that does what its prompt says: it runs the order's
search (``find_workers`` with the arguments the prompt gives, the lessons' filters included),
then proposes the ids the orchestrator says are ready, citing the lessons it was given. It never
sees the clients' hidden rules; without lessons it proposes the most reliable candidates, like a
naive model. ``approver`` is the reviewer: it approves a proposal whose checks passed.
"""

from __future__ import annotations

import json
import re
from typing import Any

_SEARCH = re.compile(r"^Search for this order: find_workers (\{.*\})$", re.MULTILINE)
_LESSON = re.compile(r"^- \[(L-[\w-]+)\] ", re.MULTILINE)
_READY = re.compile(r"propose_done with worker_ids \[([\d, ]*)\](?: and spares \[([\d, ]*)\])?")
_PASSED = re.compile(r"^- (\d+): .*\[passes verification\]$", re.MULTILINE)


def _content(message: Any) -> str:
    return message.content if hasattr(message, "content") else message["content"]


def _ids(text: str | None) -> list[int]:
    return [int(x) for x in (text or "").split(",") if x.strip()]


def lesson_follower(messages: list[Any], options: Any) -> str:
    user = _content(messages[-1])
    cited = _LESSON.findall(user)
    ready = _READY.search(user)
    if ready is None and "Candidates found so far: none." in user:
        search = _SEARCH.search(user)
        assert search is not None, user[:300]
        return json.dumps(
            {
                "kind": "tool_call",
                "tool": "find_workers",
                "args": json.loads(search.group(1)),
                "reason": "the order's search, with the lessons' filters",
            }
        )
    chosen, spares = (_ids(ready.group(1)), _ids(ready.group(2))) if ready else (_PASSED.findall(user), [])
    return json.dumps(
        {
            "kind": "propose_done",
            "worker_ids": [int(w) for w in chosen],
            "spares": spares,
            "rationale": "the verified candidates the search found",
            "cited_lessons": cited,
        }
    )


def approver(messages: list[Any], options: Any) -> str:
    user = _content(messages[-1])
    verified = "no double booking): passed" in user and "do NOT fit" not in user
    return json.dumps(
        {"kind": "critique", "approve": verified, "notes": "" if verified else "fix the rejections"}
    )
