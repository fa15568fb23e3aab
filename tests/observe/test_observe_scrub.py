"""The scrubber's rule table against the secret corpus (issue 17.8): every format masked whole,
ordinary text left alone, JSON kept JSON."""

from __future__ import annotations

import json

import pytest
from secret_corpus import CORPUS

from agentlake.observe.scrub import MASK, scrub, scrub_value


def test_the_corpus_has_at_least_thirty_formats() -> None:
    assert len({name for name, _, _ in CORPUS}) >= 30


@pytest.mark.parametrize(("name", "text", "secret"), CORPUS, ids=[row[0] for row in CORPUS])
def test_each_secret_is_masked_whole(name: str, text: str, secret: str) -> None:
    cleaned = scrub(text)
    assert secret not in cleaned
    assert MASK in cleaned


@pytest.mark.parametrize(("name", "text", "secret"), CORPUS, ids=[row[0] for row in CORPUS])
def test_no_piece_of_a_secret_survives(name: str, text: str, secret: str) -> None:
    cleaned = scrub(text)
    pieces = [piece for piece in secret.replace("\n", " ").split() if len(piece) >= 8]
    assert [piece for piece in pieces if piece in cleaned] == []


@pytest.mark.parametrize(("name", "text", "secret"), CORPUS, ids=[row[0] for row in CORPUS])
def test_secrets_inside_json_text_keep_it_json(name: str, text: str, secret: str) -> None:
    document = json.dumps({"input": text, "note": "kept"})
    cleaned = scrub(document)
    assert json.loads(cleaned)["note"] == "kept"
    assert secret not in cleaned


@pytest.mark.parametrize(
    "text",
    [
        "3 x Welder in Cleveland, OH at 08:00 on 2026-04-22",
        '{"query": "certified welder, forklift", "city": "Cleveland", "state": "OH", "k": 20}',
        "20 workers, top score 0.83; tokens in 512 out 128; key results passed verification",
        "worker_id=999993 reliability 0.91 phone 555-0142 zip 44113 since 2019-03-04",
        "op 0193f0c2a4b1e7f3a9d2c6b8e1f4a7d2 trace 4bf92f3577b34da6a3ce929d0e0e4736",
        "Basic Operations course; bearer of good news; token economy",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert scrub(text) == text


def test_values_under_secret_keys_are_masked_in_structures() -> None:
    cleaned = scrub_value({"password": "plain-words", "nested": [{"api_key": 12345}], "role": "Welder"})
    assert cleaned == {"password": MASK, "nested": [{"api_key": MASK}], "role": "Welder"}


def test_lone_surrogates_become_replacement_characters() -> None:
    assert scrub("bad \ud800 text") == "bad \ufffd text"
