"""The graph's demo model: a deterministic stand-in for an LLM, so the dashboard works with none.

``function:graph-demo`` (named as ``graph_model``, or used when no model is configured or
installed, with a note saying so) is a ``FunctionProvider`` that reads the
node's prompt and answers in the JSON the node asks for, with rules instead of a model:

* director: a short plan naming the tool the request needs;
* thinker: counts ("how many welders are in OH?") become one read-only ``sql`` call, descriptive
  searches ("find forklift drivers with OSHA") a ``hybrid_search``, workflows ("set up an order
  workflow") a state machine (create, extend with a return step, reset, destroy), anything else
  suggestion buttons; once tool results are back it summarises them;
* order reader (a staffing order in the chat): nothing written down, so the order is what code
  reads in its words for certain.

It is honest about what it is (it says so when it cannot help) and is what the browser tests
drive end to end. Configure a real model with ``AGENTLAKE_GRAPH_MODEL``.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

from agentlake.errors import UserError
from agentlake.lake.rewrite import sql_literal
from agentlake.llm.fence import DATA_CLOSE, DATA_OPEN
from agentlake.workforce.roles import role_in_text

DEMO_MODEL = "function:graph-demo"
DEMO_NAME = "graph-demo"

STATES = set(
    "AL AK AZ AR CA CO CT DE FL GA HI ID IL IN IA KS KY LA ME MD MA MI MN MS MO MT NE NV NH NJ NM NY NC ND OH OK "
    "OR PA RI SC SD TN TX UT VT VA WA WV WI WY DC".split()
)
ORDER_MACHINE = {
    "name": "order",
    "states": ["new", "packed", "shipped", "delivered"],
    "transitions": [
        {"from": "new", "to": "packed", "label": "pack"},
        {"from": "packed", "to": "shipped", "label": "ship"},
        {"from": "shipped", "to": "delivered", "label": "deliver"},
    ],
    "initial": "new",
}
SUGGESTIONS = [
    {
        "kind": "button",
        "label": "Forklift operators in CA",
        "action": "say:how many forklift operators are in CA?",
    },
    {"kind": "button", "label": "Workers per state", "action": "say:how many workers are there per state?"},
    {"kind": "button", "label": "Order workflow", "action": "say:set up an order workflow"},
]
# A count and a switch the page changes by itself (no model call per click).
COUNTER = [
    {"kind": "button", "label": "+1", "action": "inc:visitors"},
    {"kind": "button", "label": "-1", "action": "dec:visitors"},
    {"kind": "button", "label": "Lights", "action": "toggle:lights"},
]
HELP = (
    "I am the built-in demo model (no LLM is configured), so I only know a few requests: counts over "
    "the lake, searches of worker profiles, and an order workflow with buttons. Try one of the buttons."
)


def find_role(text: str) -> str | None:
    """The catalogue role named in ``text`` (by name or synonym, singular or plural)."""
    role = role_in_text(text)
    return role.name if role is not None else None


def find_state(text: str) -> str | None:
    for token in re.findall(r"\b[A-Z]{2}\b", text):
        if token in STATES:
            return token
    return None


def count_sql(text: str) -> str:
    role, state = find_role(text), find_state(text)
    where = [f"role = {sql_literal(role)}"] if role else []
    if state:
        where.append(f"state = {sql_literal(state)}")
    clause = f" WHERE {' AND '.join(where)}" if where else ""
    if role and state:
        return f"SELECT count(*) AS workers FROM workers{clause}"
    group = "state" if role or "state" in text.lower() else "role"
    return f"SELECT {group}, count(*) AS workers FROM workers{clause} GROUP BY {group} ORDER BY workers DESC LIMIT 10"


def _intent(text: str) -> str:
    low = text.lower()
    if re.search(r"\b(counter|tally|switch)\b", low):
        return "counter"
    if re.search(r"\b(workflow|state machine|machine|process|pipeline)\b", low):
        if re.search(r"\b(reset|restart|start over)\b", low):
            return "machine_reset"
        if re.search(r"\b(delete|destroy|remove|drop)\b", low):
            return "machine_destroy"
        if re.search(r"\b(add|extend|return)\b", low):
            return "machine_extend"
        return "machine_create"
    if re.search(r"\b(how many|count|number of|per state|per role)\b", low):
        return "count"
    if re.search(r"\b(find|search|who|looking for|experience|with)\b", low):
        return "search"
    if re.search(r"\b(list|show|top|best)\b", low):
        return "list"
    return "help"


def _calls(text: str) -> list[dict[str, Any]]:
    intent = _intent(text)
    if intent == "machine_create":
        return [{"tool": "machine_create", "args": ORDER_MACHINE}]
    if intent == "machine_extend":
        return [
            {
                "tool": "machine_extend",
                "args": {
                    "name": "order",
                    "states": ["returned"],
                    "transitions": [
                        {"from": "delivered", "to": "returned", "label": "return"},
                        {"from": "returned", "to": "new", "label": "reopen"},
                    ],
                },
            }
        ]
    if intent == "counter":
        return [{"tool": "show_controls", "args": {"controls": COUNTER}}]
    if intent in ("machine_reset", "machine_destroy"):
        return [{"tool": intent, "args": {"name": "order"}}]
    if intent == "count":
        return [{"tool": "sql", "args": {"query": count_sql(text)}}]
    if intent == "search":
        role, state = find_role(text), find_state(text)
        where = " AND ".join(
            f"{col} = {sql_literal(val)}" for col, val in (("role", role), ("state", state)) if val
        )
        return [{"tool": "hybrid_search", "args": {"question": text, "where": where or None, "k": 5}}]
    if intent == "list":
        role = find_role(text)
        clause = f" WHERE role = {sql_literal(role)}" if role else ""
        return [
            {
                "tool": "sql",
                "args": {
                    "query": "SELECT worker_id, name, role, city, state, reliability FROM workers"
                    f"{clause} ORDER BY reliability DESC LIMIT 10"
                },
            }
        ]
    return [{"tool": "show_controls", "args": {"controls": SUGGESTIONS}}]


def _rows(result_text: str) -> list[dict[str, str]]:
    # Tool results reach a model fenced as data (agentlake.llm.fence): the rows are inside.
    rows = []
    for line in result_text.removeprefix(DATA_OPEN).removesuffix(DATA_CLOSE).splitlines():
        one = re.fullmatch(r"one value: (\w+) = (\S+)", line)
        if one:  # a count, said as one value
            rows.append({one[1]: one[2]})
        elif line.startswith("- "):
            rows.append(dict(pair.split("=", 1) for pair in re.findall(r"(\w+=\S+)", line)))
    return rows


def _summary(text: str, results: list[dict[str, Any]]) -> str:
    parts = []
    for result in results:
        tool = result.get("tool")
        if not result.get("ok"):
            parts.append(f"The {tool} tool failed: {result.get('error')}")
        elif tool == "sql":
            rows = _rows(result.get("result", ""))
            role, state = find_role(text), find_state(text)
            if len(rows) == 1 and list(rows[0]) == ["workers"]:
                count = rows[0]["workers"]
                who = f"{role} {'worker' if count == '1' else 'workers'}" if role else "workers"
                where = f" in {state}" if state else ""
                verb = "is" if count == "1" else "are"
                parts.append(f"There {verb} {count} {who}{where} in the lake (one read-only SQL query).")
            else:
                parts.append(
                    f"The query returned {result.get('rows', len(rows))} rows; they are in the table."
                )
        elif tool == "hybrid_search":
            parts.append(
                f"I found {result.get('rows', 0)} matching worker profiles, best first, in the table."
            )
        elif tool == "machine_create":
            parts.append(
                "I set up the order workflow (new, packed, shipped, delivered). Use its buttons to move "
                "it along: they work right in the page, without asking me."
            )
        elif tool == "machine_extend":
            parts.append(
                "I added a return step to the order workflow: delivered orders can be returned and reopened."
            )
        elif tool == "machine_reset":
            parts.append("The order workflow is back at its first state.")
        elif tool == "machine_destroy":
            parts.append("I removed the order workflow.")
        elif tool == "show_controls" and _intent(text) == "counter":
            parts.append(
                "I set up a visitors counter and a lights switch. Their buttons work right in the page, without asking me."
            )
        elif tool == "show_controls":
            parts.append(HELP)
    return " ".join(parts) or HELP


def _last_request(messages: list[Any]) -> int:
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role == "user" and not message.content.startswith(
            ("AUDIT:", "That was the last tool round")
        ):
            return index
    return len(messages) - 1


def demo_reply(messages: list[Any], options: Any) -> str:
    """The demo model's reply to one node's prompt, as the JSON that node asks for."""
    # Lazy (start-up time): the agents load on first use.
    from agentlake.agents.order_reader import READ_PROMPT

    system = messages[0].content if messages and messages[0].role == "system" else ""
    if system.startswith(READ_PROMPT):
        # An order in words: the demo writes none of its parts down, so what the words say for
        # certain (read by code) is the order, or the question back.
        return "{}"
    index = _last_request(messages)
    text = messages[index].content if messages else ""
    if system.startswith("ROLE: director"):
        calls = _calls(text)
        tool = calls[0]["tool"]
        return json.dumps(
            {
                "goal": f"answer: {text[:120]}",
                "steps": [f"call {tool}", "answer from its result"],
                "tools": [tool],
            }
        )
    results = [json.loads(m.content) for m in messages[index + 1 :] if m.role == "tool"]
    if results:
        return json.dumps({"say": _summary(text, results), "tool_calls": []})
    return json.dumps({"say": "", "tool_calls": _calls(text)})


class DemoProvider:
    """The demo as a provider (the ``Provider`` shape). Unlike the test fakes it keeps no
    history: it serves a long-running dashboard."""

    name = "function"
    model = DEMO_NAME
    cacheable = False
    breaker_key = DEMO_MODEL

    @property
    def capabilities(self) -> Any:
        # Lazy (start-up time): the LLM layer loads on the first model call.
        from agentlake.llm import Capabilities

        return Capabilities(supports_schema=True, supports_thinking=False, context_window=32768)

    def complete(self, messages: list[Any], options: Any) -> Any:
        # Lazy (start-up time): the LLM layer loads on the first model call.
        from agentlake.llm import Completion, Usage

        started = time.perf_counter()
        text = demo_reply(messages, options)
        usage = Usage(
            input_tokens=sum(len(m.content) // 4 + 4 for m in messages), output_tokens=max(1, len(text) // 4)
        )
        return Completion(
            text=text,
            usage=usage,
            latency_ms=(time.perf_counter() - started) * 1000,
            provider=self.name,
            model=self.model,
        )


def ensure_demo_model() -> None:
    """Register the demo under ``function:graph-demo`` unless it is (tests reset the registry)."""
    # Lazy (start-up time): the LLM layer loads on the first model call.
    from agentlake.llm import get_provider, register_scripted

    try:
        get_provider(DEMO_MODEL)
    except UserError:
        register_scripted(DEMO_NAME, DemoProvider())
