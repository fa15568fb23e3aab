"""``OpFilter``: the one list of filters over stored ops.

The store (``OpStore.query``/``count``), the in-memory sink, the ``OpSink.query`` contract, the
observer service's ``GET /ops`` and its HTTP client all take an ``OpFilter`` (or its fields as
keywords) and mean the same by each, so they cannot drift apart; the service's query
parameters are ``OpFilterFields`` with the HTTP edge's bounds. Owns the filters' shape,
validation and their text form in a URL (``label=key=value``); it does not own SQL (``store``)
or HTTP (``service``, ``client``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from agentlake.errors import UserError
from agentlake.observe.model import INT64_MAX, LABEL_KEY

Order = Literal["desc", "asc"]


class OpFilterFields(BaseModel):
    """Every filter but the labels: the fields ``OpFilter`` and the service's query parameters
    (where labels are repeated ``label=key=value`` items) share."""

    id: str | None = Field(None, description="One op, by its id.")
    source: str | None = Field(None, description="gateway, mcp, scenario, agent, llm, otlp or external.")
    endpoint: str | None = Field(None, description="Exact endpoint, or a prefix ending in * (tool.*).")
    success: bool | None = Field(None, description="true: successes only; false: failures only.")
    since: datetime | None = Field(None, description="ISO 8601 time, inclusive (UTC if no offset).")
    until: datetime | None = Field(None, description="ISO 8601 time, exclusive (UTC if no offset).")
    run_id: str | None = Field(None, description="Run id, or a prefix ending in * (run-7:*).")
    agent_id: str | None = Field(None, description="Agent id.")
    trace_id: str | None = Field(None, description="Trace id.")
    after_seq: int | None = Field(
        None, ge=0, le=INT64_MAX, description="Only ops committed after this sequence number, by sequence."
    )
    limit: int = Field(100, ge=0)
    offset: int = Field(0, ge=0)
    order: Order = Field("desc", description="desc: newest first; asc: oldest first.")


class OpFilter(OpFilterFields):
    """Which ops, in which order, which page. Every given filter must hold (AND)."""

    model_config = ConfigDict(extra="forbid")

    labels: dict[str, str] = Field(
        default_factory=dict, description="Labels an op must carry, each compared as text (label=key=value)."
    )

    @field_validator("labels", mode="before")
    @classmethod
    def _labels(cls, value: Any) -> Any:
        if value is None:
            return {}
        if isinstance(value, dict):
            for key in value:
                if not isinstance(key, str) or not LABEL_KEY.match(key):
                    raise ValueError(f"label name {key!r}: use letters, digits, _ . : -")
            return {key: label_text(item) for key, item in value.items()}
        return value

    @classmethod
    def of(cls, wanted: OpFilter | None = None, /, **filters: Any) -> OpFilter:
        """The filter ``wanted`` with ``filters`` in place of its fields, or the filter of
        ``filters`` alone (what every ``query(wanted=None, /, **filters)`` takes); ``UserError``
        naming what is wrong (an unknown filter, a negative limit, an order that is neither asc
        nor desc)."""
        if wanted is not None:
            if not filters:
                return wanted
            filters = {**wanted.model_dump(), **filters}
        unknown = sorted(set(filters) - set(cls.model_fields))
        if unknown:
            raise UserError(
                f"unknown op filter(s): {', '.join(unknown)}; known: {', '.join(cls.model_fields)}"
            )
        try:
            return cls(**filters)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'filter'}: {e['msg']}" for e in exc.errors()
            )
            raise UserError(f"bad op filter: {problems}") from None

    def params(self) -> list[tuple[str, str]]:
        """The filter as URL query parameters (``GET /ops``), labels as repeated ``label=key=value``."""
        out: list[tuple[str, str]] = []
        for name, value in self.model_dump(exclude_defaults=True, exclude={"labels"}).items():
            if isinstance(value, datetime):
                value = value.isoformat()
            elif isinstance(value, bool):
                value = str(value).lower()
            out.append((name, str(value)))
        out += [("label", f"{key}={value}") for key, value in self.labels.items()]
        return out


def label_text(value: Any) -> str:
    """A label's value as filters compare it: text as it is, bools lower-case, numbers as JSON."""
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def parse_labels(items: list[str]) -> dict[str, str]:
    """``["arm=rules", ...]`` -> ``{"arm": "rules"}``; ``UserError`` for an item
    without ``=``."""
    labels: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UserError(f"label filter {item!r}: write it as key=value")
        labels[key] = value
    return labels


def aware(value: datetime) -> datetime:
    """``value`` as an aware UTC datetime (naive ones are UTC)."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value
