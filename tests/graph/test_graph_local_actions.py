"""``inc:``, ``dec:`` and ``toggle:``: counts and switches the session keeps, changed by the ui node
with no model call, shown as labels and given to the thinker as context."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from graph_support import of_type, step

from agentlake.errors import UserError
from agentlake.graph import GraphRuntime
from agentlake.graph.controls import MAX_VALUES, apply_local, validate_controls
from agentlake.llm import ScriptedProvider

COUNTER = [
    {"kind": "button", "label": "+1", "action": "inc:visitors"},
    {"kind": "button", "label": "-1", "action": "dec:visitors"},
    {"kind": "button", "label": "Lights", "action": "toggle:lights"},
]


def test_counts_start_at_zero_and_switches_off() -> None:
    values: dict[str, int | bool] = {}
    assert apply_local(values, "inc:visitors") == ("visitors", None, 1)
    assert apply_local(values, "dec:visitors") == ("visitors", 1, 0)
    assert apply_local(values, "dec:visitors") == ("visitors", 0, -1)
    assert apply_local(values, "toggle:lights") == ("lights", None, True)
    assert apply_local(values, "toggle:lights") == ("lights", True, False)
    assert values == {"visitors": -1, "lights": False}


@pytest.mark.parametrize(
    ("values", "action", "problem"),
    [
        ({"lights": True}, "inc:lights", "lights is a switch: its button is toggle:lights"),
        ({"visitors": 2}, "toggle:visitors", "visitors is a count: its buttons are inc:visitors"),
        ({}, "inc:Bad Name", "is not a local action"),
        ({f"v{i}": 0 for i in range(MAX_VALUES)}, "inc:one_more", f"at most {MAX_VALUES} counts"),
    ],
)
def test_bad_local_actions_are_refused(values: dict[str, Any], action: str, problem: str) -> None:
    with pytest.raises(UserError, match=problem):
        apply_local(values, action)


def test_a_model_may_ask_for_local_buttons_but_not_unknown_actions() -> None:
    assert [c["action"] for c in validate_controls(COUNTER)] == [
        "inc:visitors",
        "dec:visitors",
        "toggle:lights",
    ]
    with pytest.raises(UserError, match="inc:NAME, dec:NAME, toggle:NAME"):
        validate_controls([{"kind": "button", "label": "x", "action": "mul:visitors"}])


def test_local_clicks_change_the_session_without_a_model_call_and_the_thinker_sees_them(
    make_runtime: Callable[..., GraphRuntime], tmp_path: Path, model: ScriptedProvider
) -> None:
    runtime = make_runtime(graph="minimal")
    model.enqueue(step("", ("show_controls", {"controls": COUNTER})))
    model.enqueue(step("Your counter is ready."))
    session, _ = runtime.chat("set up a counter")
    calls = model.calls

    clicked: list[dict[str, Any]] = []
    for action in ("inc:visitors", "inc:visitors", "toggle:lights"):
        runtime.handle(session, {"type": "action", "action": action}, clicked.append)

    assert model.calls == calls  # no model round trip
    assert of_type(clicked, "value")[-1] == {
        "type": "value",
        "name": "lights",
        "from": None,
        "to": True,
        "text": "lights: on",
    }
    labels = [c["text"] for c in of_type(clicked, "controls")[-1]["controls"] if c["kind"] == "label"]
    assert labels == ["visitors: 2", "lights: on"]
    assert session.values == {"visitors": 2, "lights": True}

    model.enqueue(step("There were 2 visitors."))
    runtime.chat("how many visitors so far?", session)
    assert "Counts and switches in the workspace: visitors: 2; lights: on" in "\n".join(
        message.content for message in model.last_messages
    )


def test_a_switch_counted_is_answered_with_an_error_and_changes_nothing(
    make_runtime: Callable[..., GraphRuntime],
) -> None:
    runtime = make_runtime(graph="minimal")
    session = runtime.session()
    sent: list[dict[str, Any]] = []
    runtime.handle(session, {"type": "action", "action": "toggle:lights"}, sent.append)
    runtime.handle(session, {"type": "action", "action": "inc:lights"}, sent.append)

    assert of_type(sent, "error") == [
        {"type": "error", "message": "lights is a switch: its button is toggle:lights"}
    ]
    assert session.values == {"lights": True}
