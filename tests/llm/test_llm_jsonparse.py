"""The tolerant parser: what it fixes, what it refuses, and that it raises nothing but its own error."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentlake.errors import RunError
from agentlake.llm import JSONParseError, parse_json_tolerant
from agentlake.llm.jsonparse import scan_json

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ('Sure! Here it is:\n```json\n{"a": [1, 2]}\n```\nAnything else?', {"a": [1, 2]}),
        ('{"a": [1, 2,],}', {"a": [1, 2]}),
        ("{'name': 'Bo', 'ok': True, 'x': None}", {"name": "Bo", "ok": True, "x": None}),
        ('{name: "Bo", count: 3}', {"name": "Bo", "count": 3}),
        ('// the answer\n{"a": 1 /* one */}', {"a": 1}),
        ('<think>maybe {"a": 0}?</think>\n{"a": 2}', {"a": 2}),
        ('<think>one</think>\n<THINK>two</THINK> {"a": 3}', {"a": 3}),
        # The tag inside the answer is the answer's own (found by hypothesis).
        ('{"<THINK>": null}', {"<THINK>": None}),
        ('<think>x</think>{"note": "<think>"}', {"note": "<think>"}),
        ('Here: {"steps": ["<think>", "</think>"]}', {"steps": ["<think>", "</think>"]}),
        ('{"msg": "line one\nline two"}', {"msg": "line one\nline two"}),
        ('{"msg": "it\'s fine"}', {"msg": "it's fine"}),
        ('The result is {"a": 1} and nothing else.', {"a": 1}),
        ("[1, 2, 3]", [1, 2, 3]),
        # A small model's function-call habit: a stray ")" before the closing brace.
        (
            '{"kind": "tool_call", "args": {"role": "Welder"})}',
            {"kind": "tool_call", "args": {"role": "Welder"}},
        ),
        ('{"approve": true, "notes": "fine (really)")}', {"approve": True, "notes": "fine (really)"}),
    ],
)
def test_fixes_cheap_mistakes(text: str, expected: object) -> None:
    assert parse_json_tolerant(text) == expected


def test_a_reply_cut_off_while_thinking_has_no_json() -> None:
    with pytest.raises(JSONParseError, match="empty"):
        parse_json_tolerant('<think>the answer could be {"a": 1}, but')


def test_truncated_json_is_refused_as_incomplete_not_repaired() -> None:
    with pytest.raises(JSONParseError) as caught:
        parse_json_tolerant('{"sql": "SELECT * FROM t WHERE a = 1')
    assert caught.value.incomplete
    assert "truncated" in caught.value.message
    assert isinstance(caught.value, RunError)


@pytest.mark.parametrize(
    ("text", "message"),
    [("", "empty"), ("no json here", "no JSON"), ('{"a": 1 "b": 2}', "invalid")],
)
def test_refusals_say_why(text: str, message: str) -> None:
    with pytest.raises(JSONParseError, match=message) as caught:
        parse_json_tolerant(text)
    assert not caught.value.incomplete


def test_scan_classifies_replies() -> None:
    assert scan_json('{"a": 1}').state == "complete"
    assert scan_json('```json\n{"a": [1, {"b": "x').state == "incomplete"
    assert scan_json('{"a": 1 "b": 2}').state == "invalid"
    assert scan_json("just prose").state == "absent"


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200) | st.binary(max_size=100).map(lambda b: b.decode("latin-1")))
def test_raises_nothing_but_its_own_error(text: str) -> None:
    try:
        parse_json_tolerant(text)
    except JSONParseError:
        pass


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="{}[]\",:'\\ abtrue0123456789/*\n", max_size=120))
def test_raises_nothing_but_its_own_error_on_json_like_noise(text: str) -> None:
    try:
        parse_json_tolerant(text)
    except JSONParseError:
        pass


@settings(max_examples=200, deadline=None)
@given(
    json_values, st.sampled_from(["{}", "Here: {}", "```json\n{}\n```", "{}\nDone.", "<think>x</think>{}"])
)
def test_round_trips_valid_json_in_wrappers(value: object, wrapper: str) -> None:
    text = json.dumps(value)
    if not isinstance(value, (dict, list)) and wrapper != "{}":
        return  # a bare scalar inside prose is not something the parser promises to find
    assert parse_json_tolerant(wrapper.replace("{}", text)) == value


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.text(max_size=8), json_values, min_size=1, max_size=4), st.data())
def test_every_cut_of_an_object_is_incomplete(value: dict, data: st.DataObject) -> None:
    text = json.dumps(value)
    cut = data.draw(st.integers(1, len(text) - 1))
    assert scan_json(text[:cut]).state == "incomplete"
    with pytest.raises(JSONParseError) as caught:
        parse_json_tolerant(text[:cut])
    assert caught.value.incomplete
