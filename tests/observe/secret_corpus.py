"""Fake secrets of every format the scrubber must mask (issue 17.8): each is shaped like the
real thing (prefix, length, alphabet, checksum) and none is a live credential.

``CORPUS`` rows: (format name, text as it would be written, the exact secret that must never be
stored). Strings are assembled from pieces (seeded random), so no file in the repository holds
a token a secret scanner would flag.
"""

from __future__ import annotations

import base64
import random

_rng = random.Random(17)
_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
_HEX = "0123456789abcdef"


def _pick(alphabet: str, n: int) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


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
