"""Secret scrubbing: the gated fast path never changes the result of running every rule."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from secret_corpus import CORPUS

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
