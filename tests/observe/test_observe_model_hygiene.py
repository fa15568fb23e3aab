"""Secret scrubbing of ops: the gated fast path never changes the result of running every rule,
and no secret of the corpus survives an op built in code or parsed by ingest."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st
from secret_corpus import CLEAN, CORPUS

from agentlake.observe.ingest import parse_events
from agentlake.observe.model import ObservedOp
from agentlake.observe.scrub import scrub, scrub_ungated

_PIECES = st.sampled_from(
    [
        "Bearer abcdefgh12345678",
        "postgres://bob:s3cret@db/x",
        "sk-abcdefghijklmnop",
        "AKIAABCDEFGHIJKLMNOP",
        "api_key=zzzz9999",
        "PASSWORD: hunter22",
        "token='qwerty12'",
        "Authorization: Basic dXNlcjpw",
        "welder",
        "Cleveland, OH",
        " ",
        "=",
        ":",
        "'",
        "KEY",
        "ghp_abcdefghijklmnopqrstu",
        *(text for _, text, _ in CORPUS),
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_PIECES, st.text(max_size=12)), max_size=8).map("".join))
def test_scrub_fast_path_agrees_with_the_full_scrub(text: str) -> None:
    assert scrub(text) == scrub_ungated(text)


def test_secrets_never_reach_an_op() -> None:
    op = ObservedOp(
        endpoint="tool.http",
        input_summary="GET https://admin:pa55word@example.test/x with Bearer abcdefghijklmnop",
        error="401 for api_key=sk-live-0123456789abcdef",
        attributes={"headers": {"Authorization": "Bearer zyxwvutsrqponm"}},
    )
    text = op.model_dump_json()
    for secret in ("pa55word", "abcdefghijklmnop", "sk-live-0123456789abcdef", "zyxwvutsrqponm"):
        assert secret not in text
    assert "admin:[REDACTED]@" in op.input_summary


def _event(n: int, text: str) -> dict:
    """An op carrying ``text`` in every text field a client can send."""
    return {
        "id": f"corpus-{n}",
        "endpoint": f"tool.check {text}"[:250],
        "agent_id": text[:120],
        "input_summary": text,
        "output_summary": text,
        "error": text,
        "success": False,
        "provenance": {"run_id": text, "staffer_id": text, "role": text, "city": text, "sig_hash": text},
        "usage": {"model": text, "finish_reason": text},
        "attributes": {"note": text, "nested": [{"header": text}], "password": text},
    }


def test_no_secret_of_the_corpus_survives_the_library_paths() -> None:
    """Every row through an op built in code and through the ingest parser (one batch, one gate)."""
    events = [_event(n, text) for n, (_, text, _) in enumerate(CORPUS)]
    built = "\n".join(ObservedOp(**event).model_dump_json() for event in events)
    parsed = "\n".join(op.model_dump_json() for op in parse_events(json.dumps(events).encode()))
    for stored in (built, parsed):
        found = [name for name, _, secret in CORPUS if secret in stored or json.dumps(secret)[1:-1] in stored]
        assert found == []


def test_ordinary_values_are_stored_as_sent() -> None:
    events = [{**_event(n, text), "attributes": {"note": text}} for n, text in enumerate(CLEAN)]
    for op in parse_events(json.dumps(events).encode()):
        text = CLEAN[int(op.id.split("-")[1])]
        assert op.input_summary == text
        assert op.run_id == text
        assert op.attributes == {"note": text}
