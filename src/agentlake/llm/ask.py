"""``ask``: one prompt to one model with everything the CLI's ``agentlake llm ask`` shows.

Owns reading a ``--schema`` file (JSON, and a valid JSON schema, or ``UserError``) and checking
the reply against it (jsonschema; a mismatch after the schema retries is a ``RunError``). The
recovery itself is ``generate_continuable``/``generate_json``'s.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from agentlake.errors import RunError, UserError
from agentlake.llm.generate import generate_continuable
from agentlake.llm.provider import Usage
from agentlake.llm.structured import StructuredOutputError, generate_json

if TYPE_CHECKING:
    from agentlake.settings import Settings


class AskResult(BaseModel):
    """What ``agentlake llm ask --json`` prints. ``json`` is the parsed reply when a schema
    was given (then ``text`` is that value as compact JSON)."""

    model_config = ConfigDict(extra="forbid")

    model: str
    text: str
    thinking: str
    finish_reason: str
    usage: Usage
    attempts: int
    continuations: int
    latency_ms: float
    cost_usd: float | None
    complete: bool
    repaired: bool = False
    json_value: Any = None


def load_schema(path: Path) -> dict:
    """The JSON schema in ``path``; ``UserError`` naming ``--schema`` when the file is missing,
    not JSON, or not a JSON schema."""
    import jsonschema

    try:
        raw = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"--schema {path}: cannot read it ({exc})") from None
    try:
        schema = json.loads(raw)
    except ValueError as exc:
        raise UserError(f"--schema {path}: not JSON ({exc}); pass a JSON schema file") from None
    if not isinstance(schema, dict):
        raise UserError(f"--schema {path}: a JSON schema is an object, got {type(schema).__name__}")
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        where = "/".join(str(part) for part in exc.path) or "(root)"
        raise UserError(f"--schema {path}: not a valid JSON schema at {where}: {exc.message}") from None
    return schema


def schema_validator(schema: dict) -> Any:
    """A ``validate(value) -> value`` that raises ``ValueError`` listing the mismatches."""
    import jsonschema

    validator = jsonschema.validators.validator_for(schema)(schema)

    def validate(value: Any) -> Any:
        errors = sorted(validator.iter_errors(value), key=lambda e: list(e.path))
        if errors:
            raise ValueError(
                "; ".join(f"{'/'.join(str(p) for p in e.path) or '(root)'}: {e.message}" for e in errors[:6])
            )
        return value

    return validate


def ask(
    model: str,
    prompt: str,
    *,
    schema: dict | None = None,
    max_tokens: int = 1024,
    think: bool | None = None,
    system: str | None = None,
    timeout: float | None = None,
    settings: Settings | None = None,
) -> AskResult:
    """Send ``prompt`` (and ``system``) to ``model``; with ``schema``, the reply must validate
    against it (schema retries included) or ``RunError`` says why. Raises ``UserError`` for bad
    input (unknown provider, unreachable server, missing key, prompt over the window)."""
    if not prompt.strip():
        raise UserError("the prompt is empty: pass the text to send as PROMPT")
    messages = ([{"role": "system", "content": system}] if system else []) + [
        {"role": "user", "content": prompt}
    ]
    options: dict[str, Any] = {"max_tokens": max_tokens, "think": think, "timeout": timeout}
    if schema is not None:
        try:
            result = generate_json(
                model,
                messages,
                schema,
                validate=schema_validator(schema),
                label="reply",
                settings=settings,
                **options,
            )
        except StructuredOutputError as exc:
            raise RunError(
                f"the reply does not match the schema: {'; '.join(exc.errors[:3])}", raw_text=exc.raw_text
            ) from None
        completion = result.completion
        return AskResult(
            model=model,
            text=json.dumps(result.value, ensure_ascii=False),
            thinking=completion.thinking,
            finish_reason=completion.finish_reason,
            usage=completion.usage,
            attempts=result.attempts,
            continuations=result.continuations,
            latency_ms=completion.latency_ms,
            cost_usd=result.cost_usd,
            complete=True,
            json_value=result.value,
        )
    outcome = generate_continuable(model, messages, settings=settings, **options)
    return AskResult(
        model=model,
        text=outcome.text,
        thinking=outcome.thinking,
        finish_reason=outcome.finish_reason,
        usage=outcome.usage,
        attempts=outcome.attempts,
        continuations=outcome.continuations,
        latency_ms=outcome.completion.latency_ms,
        cost_usd=outcome.cost_usd,
        complete=outcome.complete,
        repaired=outcome.repaired,
    )
