"""Fake secrets of every format the scrubber must mask (issues 17.8 and 30), and ordinary values
it must leave alone: each secret is shaped like the real thing (prefix, length, alphabet,
checksum) and none is a live credential.

``CORPUS`` rows: (format name, text as it would be written, the exact secret that must never be
stored). ``CLEAN``: texts of our own data that hold no secret and must be stored as they are.
Strings are assembled from pieces (seeded random), so no file in the repository holds a token a
secret scanner would flag.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import uuid

_rng = random.Random(17)
_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
_HEX = "0123456789abcdef"
_UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_LOWER_ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789"
_DIGITS = "0123456789"


def _pick(alphabet: str, n: int) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


def _card(prefix: str, length: int) -> str:
    """A number of ``length`` digits starting with ``prefix`` whose last digit passes Luhn."""
    body = prefix + _pick(_DIGITS, length - len(prefix) - 1)
    total = 0
    for index, char in enumerate(reversed(body)):
        digit = int(char) * (2 if index % 2 == 0 else 1)
        total += digit - 9 if digit > 9 else digit
    return body + str((10 - total % 10) % 10)


def _grouped(number: str, sizes: tuple[int, ...], sep: str = " ") -> str:
    parts, at = [], 0
    for size in sizes:
        parts.append(number[at : at + size])
        at += size
    return sep.join(parts)


def _b64(n: int) -> str:
    return base64.b64encode(bytes(_rng.randrange(256) for _ in range(n))).decode()


_JWT = ".".join(
    [
        base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("="),
        base64.urlsafe_b64encode(b'{"sub":"1234567890","name":"Pat Doe","iat":1516239022}')
        .decode()
        .rstrip("="),
        _pick(_ALNUM + "-_", 43),
    ]
)
_PEM_BODY = "\n".join(_b64(48) for _ in range(6))
_OPENSSH_BODY = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ" + _pick(_ALNUM, 30) + "\n" + _b64(48)
_AWS_SECRET = _pick(_ALNUM, 12) + "/" + _pick(_ALNUM, 13) + "+" + _pick(_ALNUM, 13)
_BEGIN, _END = "-----BEGIN ", "-----END "


def _row(name: str, template: str, secret: str) -> tuple[str, str, str]:
    return name, template.replace("{}", secret), secret


_BASIC = base64.b64encode(b"admin:hunter2-x").decode()

# (format, text as written, the exact secret that must never be stored)
CORPUS: list[tuple[str, str, str]] = [
    _row("JWT", "session token {} expired", _JWT),
    _row("PEM RSA private key", _BEGIN + "RSA PRIVATE KEY-----\n{}\n" + _END + "RSA PRIVATE KEY-----", _PEM_BODY),
    _row("PKCS8 private key", "key: " + _BEGIN + "PRIVATE KEY-----\n{}\n" + _END + "PRIVATE KEY-----", _PEM_BODY[:200]),
    _row("OpenSSH private key", _BEGIN + "OPENSSH PRIVATE KEY-----\n{}\n" + _END + "OPENSSH PRIVATE KEY-----", _OPENSSH_BODY),
    _row("PuTTY private key", "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nPrivate-Lines: 1\n{}\nPrivate-MAC: "
         + _pick(_HEX, 64), _b64(32)),
    _row("age secret key", "{}", "AGE-SECRET-KEY-1" + _pick("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58)),
    _row("Slack app token", "{}", "xapp-1-A0" + _pick("0123456789", 9) + "-" + _pick("0123456789", 13) + "-" + _pick(_HEX, 64)),
    _row("Slack bot token", "slack {}", "xoxb-" + _pick("0123456789", 12) + "-" + _pick("0123456789", 13) + "-" + _pick(_ALNUM, 24)),
    _row("Slack webhook", "POST {} ok", "https://hooks.slack.com/services/T" + _pick("0123456789ABCDEF", 8) + "/B"
         + _pick("0123456789ABCDEF", 8) + "/" + _pick(_ALNUM, 24)),
    _row("Stripe live key", "stripe key {}", "sk_" + "live_" + _pick(_ALNUM, 48)),
    _row("Stripe webhook secret", "{}", "whsec_" + _pick(_ALNUM, 32)),
    _row("Google API key", "maps key {}", "AIza" + _pick(_ALNUM + "_-", 35)),
    _row("Google OAuth token", "{}", "ya29." + _pick(_ALNUM + "_-", 60)),
    _row("npm token", "//registry.npmjs.org/:_authToken={}", "npm_" + _pick(_ALNUM, 36)),
    _row("SendGrid key", "{}", "SG." + _pick(_ALNUM + "_-", 22) + "." + _pick(_ALNUM + "_-", 43)),
    _row("Azure storage account key", "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={};EndpointSuffix=core.windows.net", _b64(64)),
    _row("Azure SAS signature", "https://acme.blob.core.windows.net/c/b?sv=2022-11-02&sig={}", _b64(32).replace("=", "%3D")),
    _row("Twilio API key", "twilio {}", "SK" + _pick(_HEX, 32)),
    _row("Twilio auth token", "twilio_auth_token={}", _pick(_HEX, 32)),
    _row("GitHub user-to-server token", "{}", "ghu_" + _pick(_ALNUM, 36)),
    _row("GitHub refresh token", "{}", "ghr_" + _pick(_ALNUM, 36)),
    _row("GitHub personal token", "gh {}", "ghp_" + _pick(_ALNUM, 36)),
    _row("GitHub fine-grained token", "{}", "github_pat_" + _pick(_ALNUM, 22) + "_" + _pick(_ALNUM, 59)),
    _row("GitLab token", "{}", "glpat-" + _pick(_ALNUM, 20)),
    _row("AWS access key id", "id {}", "AKIA" + _pick("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)),
    _row("AWS temporary key id", "{}", "ASIA" + _pick("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)),
    _row("AWS secret key, bare", "aws creds {} in env", _AWS_SECRET),
    _row("AWS secret key, named", "aws_secret_access_key = {}", _AWS_SECRET[::-1]),
    _row("Visa card", "card {} exp 12/29", "4111 1111 1111 1111"),
    _row("Mastercard", "paid with {}", "5555555555554444"),
    _row("Amex", "amex {}", "3782-822463-10005"),
    _row("US SSN", "SSN {} on file", "078-05-1120"),
    _row("US SSN, no dashes", "ssn: {}", "078051120"),
    _row("Redis URL with a password only", "redis://:{}@cache.internal:6379/0", "Sup3r-s3cret!"),
    _row("Postgres URL", "postgresql://app:{}@db.internal/app", "Pa55@w0rd#x"),
    _row("Authorization Basic", "Authorization: Basic {}", _BASIC),
    _row("Authorization Bearer", "authorization: Bearer {}", _pick(_ALNUM, 40)),
    _row("Bearer token alone", "curl -H 'Bearer {}'", "abc.def-" + _pick(_ALNUM, 20)),
    _row("password with special characters", "password={}", "Tr0ub4dor&3xyz"),
    _row("password in JSON", '{"user": "ann", "password": "{}"}', "p@ss w0rd;&x"),
    _row("password quoted", "PASSWORD='{}' host=db", "c0rrect horse"),
    _row("API key header", "X-API-Key: {}", "ak-" + _pick(_ALNUM, 24)),
    _row("api_key assignment", "api_key: {}", _pick(_HEX, 32)),
    _row("client secret", "client_secret={}", _pick(_ALNUM, 30)),
    _row("OpenAI key", "OPENAI_API_KEY={}", "sk-proj-" + _pick(_ALNUM + "_-", 48)),
    _row("Anthropic key", "{}", "sk-ant-api03-" + _pick(_ALNUM + "_-", 93)),
    _row("Hugging Face token", "{}", "hf_" + _pick("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", 34)),
    _row("PyPI token", "{}", "pypi-AgEIcHlwaS5vcmc" + _pick(_ALNUM + "_-", 70)),
    _row("Telegram bot token", "bot{}", _pick("0123456789", 9) + ":AA" + _pick(_ALNUM + "_-", 33)),
    _row("Mailgun key", "{}", "key-" + _pick(_HEX, 32)),
    _row("Mailchimp key", "{}", _pick(_HEX, 32) + "-us14"),
    _row("Shopify token", "{}", "shpat_" + _pick(_HEX, 32)),
    _row("DigitalOcean token", "{}", "dop_v1_" + _pick(_HEX, 64)),
    _row("Discord webhook", "{}", "https://discord.com/api/webhooks/" + _pick("0123456789", 18) + "/" + _pick(_ALNUM, 68)),
    _row("Square token", "{}", "sq0atp-" + _pick(_ALNUM + "_-", 22)),
    _row("Databricks token", "{}", "dapi" + _pick(_HEX, 32)),
    _row("Postman key", "{}", "PMAK-" + _pick(_HEX, 24) + "-" + _pick(_HEX, 34)),
    _row("Cookie header", "Cookie: {}", "sessionid=" + _pick(_ALNUM, 32) + "; csrftoken=" + _pick(_ALNUM, 32)),
]  # fmt: skip

# --- issue 30: the held-out shapes, every card issuer, names in structures, gitleaks' formats ---

_GCP_KEY_ID = _pick(_HEX, 40)
_GCP_PEM = _BEGIN + "PRIVATE KEY-----\n" + _PEM_BODY + "\n" + _END + "PRIVATE KEY-----\n"


def _service_account(key_id: str, pem: str) -> str:
    return json.dumps(
        {
            "type": "service_account",
            "project_id": "acme-staffing-prod",
            "private_key_id": key_id,
            "private_key": pem,
            "client_email": "ingest@acme-staffing-prod.iam.gserviceaccount.com",
            "client_id": _pick(_DIGITS, 21),
            "token_uri": "https://oauth2.googleapis.com/token",
        }
    )


_HEX32 = _pick(_HEX, 32)
_SENDGRID = "SG." + _pick(_ALNUM + "_-", 22) + "." + _pick(_ALNUM + "_-", 43)

CORPUS += [
    # the four shapes that were stored verbatim before issue 30
    _row("GCP service account: private_key_id", _service_account("{}", "-"), _GCP_KEY_ID),
    _row("GCP service account: private_key", _service_account(_pick(_HEX, 40), "{}"), _GCP_PEM.strip()),
    _row("Authorization Bearer, 32 hex", "Authorization: Bearer {}", _HEX32),
    _row("Authorization Bearer, 32 hex, in a header dump", "GET /v1/x HTTP/1.1\r\nHost: api.test\r\nauthorization:Bearer {}\r\n", _pick(_HEX, 32)),
    _row("Authorization Bearer, 32 hex, as JSON headers", '{"headers": {"Authorization": "Bearer {}"}, "status": 401}', _pick(_HEX, 32)),
    _row("Amex, 15 digits together", "amex {} exp 04/28", _card("37", 15)),
    _row("Amex 34, grouped 4-6-5", "card on file: {}", _grouped(_card("34", 15), (4, 6, 5))),
    _row("SendGrid key alone", "{}", _SENDGRID),
    _row("SendGrid key assigned", "SENDGRID_API_KEY={}", "SG." + _pick(_ALNUM + "_-", 22) + "." + _pick(_ALNUM + "_-", 43)),
    _row("SendGrid key in a sentence", "mail failed with key {}, retrying", "SG." + _pick(_ALNUM, 22) + "." + _pick(_ALNUM, 43)),
    # card numbers of every issuer range
    _row("Visa 13", "visa {}", _card("4", 13)),
    _row("Visa 16, dashes", "paid {}", _grouped(_card("4", 16), (4, 4, 4, 4), "-")),
    _row("Visa 19", "card {} ok", _card("4", 19)),
    _row("Mastercard 51-55", "mc {}", _card("53", 16)),
    _row("Mastercard 2-series", "card {} declined", _grouped(_card("2720", 16), (4, 4, 4, 4))),
    _row("Mastercard 2221", "{}", _card("2221", 16)),
    _row("Discover 6011", "discover {}", _card("6011", 16)),
    _row("Discover 65", "{}", _grouped(_card("65", 16), (4, 4, 4, 4))),
    _row("Discover 644-649", "card={}", _card("645", 16)),
    _row("Diners Club 14", "diners {}", _grouped(_card("305", 14), (4, 6, 4))),
    _row("Diners Club 36", "{}", _card("36", 14)),
    _row("JCB", "jcb {}", _card("3530", 16)),
    _row("UnionPay", "unionpay {}", _card("62", 16)),
    _row("UnionPay 19", "{}", _card("621", 19)),
    # values under names that say they are secrets, in every structure
    _row("password in YAML", "database:\n  host: db.internal\n  password: {}\n  pool: 5", "pl4in-yaml-pw"),
    _row("private_key_id in YAML", "credentials:\n  private_key_id: {}\n", _pick(_HEX, 40)),
    _row("access token in a query string", "GET /oauth/cb?state=xyz&access_token={}&expires=3600", _pick(_ALNUM, 28)),
    _row("api_key in a query string", "https://api.example.test/v2/jobs?api_key={}&page=2", _pick(_ALNUM, 24)),
    _row("secret in k=v text", "boot ok: mode=prod db_secret={} region=us-east-2", _pick(_ALNUM, 18)),
    _row("camelCase clientSecret in JSON", '{"clientId": "app-7", "clientSecret": "{}"}', _pick(_ALNUM, 26)),
    _row("apiKey in JSON inside JSON", json.dumps({"body": '{"apiKey": "{}"}'}), _pick(_ALNUM, 30)),
    _row("credentials in YAML, quoted", "service:\n  credentials: '{}'\n", "c:" + _pick(_ALNUM, 20)),
    _row("passphrase of words, YAML style", "ssh-add:\n  passphrase: {}\n  agent: on", "purple monkey dishwasher"),
    _row("passwd in a URL-encoded form", "user=ann&passwd={}&remember=1", "h%40rd-" + _pick(_ALNUM, 8)),
    _row("export of a secret access key", "export AWS_SECRET_ACCESS_KEY={}", _pick(_ALNUM + "/+", 40)),
    _row("token in Python repr", "{'user': 'ann', 'token': '{}'}", _pick(_ALNUM, 20)),
    _row("x-auth-token header", "X-Auth-Token: {}", _pick(_ALNUM, 32)),
    _row("Authorization Token scheme", "Authorization: Token {}", _pick(_HEX, 40)),
    _row("Authorization of another scheme", "Authorization: SSWS {}", "00" + _pick(_ALNUM, 40)),
    _row("Authorization Digest response", 'Authorization: Digest username="ann", realm="api", nonce="x1", response="{}"', _pick(_HEX, 32)),
    # formats of gitleaks' rule set
    _row("Anthropic admin key", "{}", "sk-ant-admin01-" + _pick(_ALNUM + "_-", 93) + "AA"),
    _row("OpenAI project key", "{}", "sk-proj-" + _pick(_ALNUM, 58) + "T3Blb" + "kFJ" + _pick(_ALNUM, 58)),
    _row("Artifactory API key", "{}", "AKCp" + _pick(_ALNUM, 69)),
    _row("Atlassian API token", "{}", "ATATT3" + _pick(_ALNUM + "_-", 186)),
    _row("Azure AD client secret", "secret {}", _pick(_ALNUM, 3) + "8Q~" + _pick(_ALNUM + "_~.-", 34)),
    _row("Doppler token", "{}", "dp.pt." + _pick(_ALNUM, 43)),
    _row("Dynatrace token", "{}", "dt0c01." + _pick(_UPPER + _DIGITS, 24) + "." + _pick(_UPPER + _DIGITS, 64)),
    _row("EasyPost key", "{}", "EZAK" + _pick(_ALNUM, 54)),
    _row("Flutterwave secret", "{}", "FLWSECK_TEST-" + _pick("abcdefgh0123456789", 32) + "-X"),
    _row("Frame.io token", "{}", "fio-u-" + _pick(_ALNUM + "_-", 64)),
    _row("Grafana service account token", "{}", "glsa_" + _pick(_ALNUM, 32) + "_" + _pick(_HEX, 8)),
    _row("HashiCorp Terraform token", "{}", _pick(_LOWER_ALNUM, 14) + ".atlasv1." + _pick(_ALNUM + "_-", 64)),
    _row("Heroku key", "{}", "HRKU-AA" + _pick(_ALNUM + "_-", 58)),
    _row("Linear key", "{}", "lin_api_" + _pick(_ALNUM, 40)),
    _row("PlanetScale token", "{}", "pscale_tkn_" + _pick(_ALNUM, 43)),
    _row("Pulumi token", "{}", "pul-" + _pick(_HEX, 40)),
    _row("RubyGems key", "{}", "rubygems_" + _pick(_HEX, 48)),
    _row("Sentry user token", "{}", "sntryu_" + _pick(_HEX, 64)),
    _row("Shippo token", "{}", "shippo_live_" + _pick(_HEX, 40)),
    _row("Vault service token", "{}", "hvs." + _pick(_ALNUM + "_-", 96)),
    _row("Fly.io token", "{}", "fo1_" + _pick(_ALNUM + "_-", 43)),
    _row("Prefect key", "{}", "pnu_" + _pick(_ALNUM, 36)),
    _row("Readme key", "{}", "rdme_" + _pick(_LOWER_ALNUM, 70)),
    _row("Alibaba access key id", "{}", "LTAI" + _pick(_ALNUM, 20)),
    _row("Duffel token", "{}", "duffel_test_" + _pick(_ALNUM + "_-", 43)),
    _row("Notion token", "{}", "ntn_" + _pick(_DIGITS, 11) + _pick(_ALNUM, 35)),
    _row("Infracost key", "{}", "ico-" + _pick(_ALNUM, 32)),
    _row("Perplexity key", "{}", "pplx-" + _pick(_ALNUM, 48)),
    _row("Clojars token", "{}", "CLOJARS_" + _pick(_LOWER_ALNUM, 60)),
    _row("1Password secret key", "{}", "A3-" + _pick(_UPPER + _DIGITS, 6) + "-" + _pick(_UPPER + _DIGITS, 11) + "-"
         + "-".join(_pick(_UPPER + _DIGITS, 5) for _ in range(3))),
    _row("MaxMind license key", "{}", _pick(_ALNUM, 6) + "_" + _pick(_ALNUM, 29) + "_mmk"),
    _row("Cloudflare key, named", "cloudflare_api_key = {}", _pick(_LOWER_ALNUM, 40)),
    _row("Datadog token, named", "DATADOG_ACCESS_TOKEN: {}", _pick(_LOWER_ALNUM, 40)),
    _row("Okta token, named", "okta_token={}", "00" + _pick(_ALNUM, 40)),
    _row("Twitch token, named", "twitch client token: {}", _pick(_LOWER_ALNUM, 30)),
    _row("Yandex key, named", "yandex_key={}", "AQVN" + _pick(_ALNUM + "_-", 36)),
]  # fmt: skip


# --- ordinary values of our own data: nothing of these is a secret, nothing may be masked ------

_vectors = [round(_rng.uniform(-1, 1), 16) for _ in range(48)]
_seeded_uuid = uuid.UUID(int=_rng.getrandbits(128), version=4)

CLEAN: list[str] = [
    "W-7995",
    "worker W-7995 placed at C-0042 (Cleveland, OH)",
    '{"hits": [{"key": 7995, "doc_id": "W-7995", "score": 0.83}, {"key": 12, "doc_id": "W-12", "score": 0.79}]}',
    "2026-04-22",
    "2026-11-21T08:00:00Z",
    "2026-11-21T08:00:00.123456+00:00",
    "shift 2026-04-22 08:00-16:30 at 44113",
    "1763712000000",
    "1763712000000000000",
    "-0.0780511200428009",
    json.dumps(_vectors),
    str(_vectors),
    "embedding[0:4] = " + ", ".join(str(value) for value in _vectors[:4]),
    hashlib.sha256(b"agentlake lesson 17").hexdigest(),
    hashlib.sha1(b"agentlake run 5").hexdigest(),
    f'{{"sig_hash": "{hashlib.sha256(b"sig").hexdigest()}", "content_sha1": "{hashlib.sha1(b"c").hexdigest()}"}}',
    f"digest={hashlib.sha256(b'digest').hexdigest()}",
    str(_seeded_uuid),
    f"trace {_seeded_uuid.hex} span {_pick(_HEX, 16)}",
    f"{1763712000000:013x}{_pick(_HEX, 19)}",
    f"op {1763712000123:013x}{_pick(_HEX, 19)} parent {1763712000045:013x}{_pick(_HEX, 19)}",
    "tour:rules-learning:b2:cleveland-welders:r0:evt-0001",
    "run_id=tour:rules-learning:b2:cleveland-welders:r0:evt-0001 arm=rules-learning batch=2",
    "run_tour_rules_learning_0123abcd45",
    "$1,234.56",
    "USD 18.75/h; bill rate 27.50; margin 31.8%",
    "ZIP 44113",
    "44113-1234",
    "zip codes 44113, 44114, 44115 and 10001",
    "1234567",
    "count 25000 of 1250000 rows in 12.5 ms",
    "41.4993, -81.6944",
    "version v8.30.1, duckdb 2.0.0, python 3.11.7",
    '{"tokens": 512, "input_tokens": 384, "output_tokens": 128, "max_tokens": 4096, "token_budget": 400}',
    '{"request": {"path": "/sql", "method": "POST", "key": "key-1a2b3c4d5e"}, "status": 200}',
    "key_id=key-1a2b3c4d5e scope=read",
    '{"sort_key": "score", "primary_key": "worker_id", "public_key_path": "/etc/ssh/host.pub"}',
    "3 x Welder in Cleveland, OH at 08:00 on 2026-04-22",
    "certified welder, forklift; OSHA-10; reliability 0.91 since 2019-03-04",
    "GET /api/graphs 200 in 3.2 ms",
    "POST /api/session 204",
    "the client said: no one with a no-show in the last 90 days; passed verification",
    "Basic Operations course; bearer of good news; token economy",
    "tokens in 512 out 128; key results passed verification",
    "phone-free numbers: 4000 2500 1200 8800",
]
