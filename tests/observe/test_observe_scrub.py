"""The scrubber against the secret corpus (issues 17.8 and 30): every format masked whole,
ordinary values of our own data left alone, JSON kept JSON; gitleaks' vendored rule set pinned
and translated; the gate sound for every rule; and what is documented as not caught, shown."""

from __future__ import annotations

import base64
import hashlib
import importlib
import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from secret_corpus import CLEAN, CORPUS

from agentlake.observe import gitleaks
from agentlake.observe.scrub import MASK, card_issuer, names_secret, scrub, scrub_value

scrub_module = importlib.import_module("agentlake.observe.scrub")  # the package re-exports scrub()


def test_the_corpus_has_a_hundred_secrets_of_forty_kinds() -> None:
    assert len(CORPUS) >= 100
    assert len({name for name, _, _ in CORPUS}) >= 40
    assert len(CLEAN) >= 40


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


@pytest.mark.parametrize("text", CLEAN)
def test_ordinary_values_of_our_data_are_left_alone(text: str) -> None:
    assert scrub(text) == text
    assert scrub_value({"note": text, "items": [text]}) == {"note": text, "items": [text]}


def test_values_under_secret_keys_are_masked_in_structures() -> None:
    cleaned = scrub_value(
        {
            "password": "plain-words",
            "nested": [{"api_key": 12345, "privateKeyId": "abc", "X-Auth-Token": "t"}],
            "role": "Welder",
            "key": 7995,
            "sort_key": "score",
            "tokens": 512,
        }
    )
    assert cleaned == {
        "password": MASK,
        "nested": [{"api_key": MASK, "privateKeyId": MASK, "X-Auth-Token": MASK}],
        "role": "Welder",
        "key": 7995,
        "sort_key": "score",
        "tokens": 512,
    }


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("password", True),
        ("DB_PASSWORD", True),
        ("passwd", True),
        ("client_secret", True),
        ("clientSecret", True),
        ("api_key", True),
        ("apiKey", True),
        ("X-API-Key", True),
        ("private_key", True),
        ("private_key_id", True),
        ("privateKeyId", True),
        ("aws_secret_access_key", True),
        ("access_key_id", True),
        ("credentials", True),
        ("x-auth-token", True),
        ("session_id", True),
        ("set-cookie", True),
        ("key", False),
        ("key_id", False),
        ("sort_key", False),
        ("public_key", False),
        ("primary_key", False),
        ("tokens", False),
        ("input_tokens", False),
        ("token_budget", False),
        ("monkey", False),
        ("worker_id", False),
    ],
)
def test_names_that_say_their_value_is_a_secret(name: str, secret: bool) -> None:
    assert names_secret(name) is secret


@pytest.mark.parametrize(
    ("number", "issuer"),
    [
        ("4111111111111111", "Visa"),
        ("4222222222222", "Visa"),
        ("5555555555554444", "Mastercard"),
        ("2223003122003222", "Mastercard"),
        ("378282246310005", "American Express"),
        ("6011111111111117", "Discover"),
        ("6445644564456445", "Discover"),
        ("30569309025904", "Diners Club"),
        ("3530111333300000", "JCB"),
        ("6200000000000005", "UnionPay"),
        ("1763712000000000", None),  # a millisecond timestamp's length, not an issuer's range
        ("4111111111111", "Visa"),  # Luhn is checked apart: 13 digits of a Visa range
        ("37828224631000", None),  # Amex is 15 digits
    ],
)
def test_card_issuers_by_range_and_length(number: str, issuer: str | None) -> None:
    assert card_issuer(number) == issuer


def test_card_numbers_need_luhn_and_are_not_fractions() -> None:
    assert scrub("card 4111111111111111 ok") == f"card {MASK} ok"
    assert scrub("card 4111111111111112 ok") == "card 4111111111111112 ok"  # Luhn fails
    assert scrub("score 0.4111111111111111") == "score 0.4111111111111111"  # a float's digits
    assert scrub("[0.5, -0.4111111111111111]") == "[0.5, -0.4111111111111111]"


def test_a_card_beside_other_numbers_is_masked_alone() -> None:
    assert scrub("ann,4111111111111111,12/29") == f"ann,{MASK},12/29"
    assert scrub("4111 1111 1111 1111 12 29") == f"{MASK} 12 29"
    assert scrub("ref 41111111111111111111111") == "ref 41111111111111111111111"  # 23 digits


def test_lone_surrogates_become_replacement_characters() -> None:
    assert scrub("bad \ud800 text") == "bad \ufffd text"


def test_a_secret_key_fingerprint_is_ours_and_kept() -> None:
    """gitleaks' generic rule would take `"key": "key-0123456789"` for a secret; it is the API
    key's fingerprint the gateway records (``http.keys.fingerprint``)."""
    text = '{"request": {"path": "/sql", "key": "key-0a1b2c3d4e"}}'
    assert scrub(text) == text
    assert scrub('{"key": "k3y-0a1B2c3D4e5F6g"}') == f'{{"key": "{MASK}"}}'


# --- what is documented as not caught -----------------------------------------------------------


def test_a_secret_split_across_two_fields_is_not_recognised() -> None:
    """scrub.py: a secret split across two fields is caught in neither half unless a half is a
    secret on its own."""
    token = "ghp_" + "Kq7ZtR2mXv9LpA3sW8dN4bYc6HfJ1gUe5ToQ"
    first, second = token[:20], token[20:]
    assert scrub(first) == first  # 16 characters after ghp_: not yet a GitHub token
    assert scrub(second) == second  # 20 characters of nothing in particular
    assert scrub(first + second) == MASK  # together they are
    # A half that is a secret on its own is masked: a named value.
    assert scrub(f"password={second}") == f"password={MASK}"


def test_an_encoded_secret_is_not_decoded() -> None:
    """scrub.py: a base64-encoded secret is not decoded; under a secret's name it is masked."""
    secret = "password=Tr0ub4dor&3xyz"
    encoded = base64.b64encode(secret.encode()).decode()
    assert scrub(f"payload {encoded} sent") == f"payload {encoded} sent"
    assert scrub(f"token: {encoded}") == f"token: {MASK}"
    assert scrub_value({"credentials": encoded}) == {"credentials": MASK}


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from([16, 32, 36, 40, 64]).flatmap(
        lambda n: st.text("0123456789abcdef-", min_size=n, max_size=n)
    )
)
def test_lower_case_hex_ids_are_never_touched(value: str) -> None:
    """ObservedOp.texts() leaves lower-case hex ids out of the scrubber: no rule matches one."""
    if value.replace("-", "").isdigit():
        return  # digits alone are scrubbed (a card number could be an id)
    assert scrub(value) == value


# --- gitleaks' rule set: pinned, translated, and the gate sound for every rule ------------------


def test_the_vendored_rule_set_is_the_pinned_release() -> None:
    data = gitleaks.RULES_FILE.read_bytes()
    assert hashlib.sha256(data).hexdigest() == gitleaks.GITLEAKS_SHA256
    legal = gitleaks.RULES_FILE.with_name("gitleaks.toml.LEGAL.txt").read_text()
    assert "MIT License" in legal
    assert gitleaks.GITLEAKS_VERSION in legal
    assert gitleaks.GITLEAKS_SHA256 in legal


def test_every_rule_translates_but_the_path_only_ones() -> None:
    rules = gitleaks.load_rules()
    assert len(rules.rules) == 217
    assert rules.skipped == {
        rule: "applies to files by path"
        for rule in (
            "freemius-secret-key",
            "hashicorp-tf-password",
            "kubernetes-secret-yaml",
            "nuget-config-password",
            "pkcs12-file",
        )
    }


@pytest.mark.parametrize(
    ("go", "python"),
    [
        (r"\b(p8e-(?i)[a-z0-9]{32})", r"\b(p8e-(?i:[a-z0-9]{32}))"),
        (r"(?i)a|b", r"(?i:a)|(?i:b)"),
        (r"x(?i)y(?-i)z", r"x(?i:y(?-i:z))"),
        (r"\b(pat[[:alnum:]]{14})", r"\b(pat[0-9A-Za-z]{14})"),
        (r"a(?:[^\w]|\z)", r"a(?:[^\w]|\Z)"),
        (r"[\w[]{2}", r"[\w\[]{2}"),
        (r"a{,3}", r"a\{,3}"),
    ],
)
def test_go_patterns_translate(go: str, python: str) -> None:
    assert gitleaks.translate(go) == python


@pytest.mark.parametrize("go", [r"\pL+", r"(?U)a+", r"[[:nope:]]"])
def test_go_patterns_without_an_equivalent_are_refused(go: str) -> None:
    with pytest.raises(gitleaks.Untranslatable):
        gitleaks.translate(go)


def test_the_gate_lets_every_rule_through() -> None:
    """A text passes the gate if it holds one of _NAMES or a word of _TOKEN_MIN token
    characters: every gitleaks rule whose matches may hold no such word must have each of its
    keywords contain one of the names (a rule runs only with a keyword)."""
    names = scrub_module._NAMES
    minimum = scrub_module._TOKEN_MIN
    missing = {
        rule.id: [keyword for keyword in rule.keywords if not any(name in keyword for name in names)]
        for rule in gitleaks.load_rules().rules
        if gitleaks.guaranteed_word(rule.pattern) < minimum
    }
    assert {rule: keywords for rule, keywords in missing.items() if keywords} == {}


def test_the_gate_counts_words_as_the_analysis_does() -> None:
    shaped = "".join(chr(code) for code in range(128)).translate(scrub_module._SHAPES)
    in_word = {chr(code) for code in range(128) if shaped[code] != " "}
    assert in_word == set(gitleaks.WORD_CHARACTERS)


@pytest.mark.parametrize(
    ("pattern", "word"),
    [(r"ghp_[0-9a-zA-Z]{36}", 40), (r"a:[a-z]{30}", 30), (r"(?:x|[a-z]{5})y", 2), (r"[^ ]{40}", 0)],
)
def test_guaranteed_word(pattern: str, word: int) -> None:
    assert gitleaks.guaranteed_word(re.compile(pattern, re.ASCII)) == word
