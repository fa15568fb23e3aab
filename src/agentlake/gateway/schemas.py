"""Typed request and response bodies of the gateway (and the MCP tools that mirror it).

Owns the wire shapes only; each model converts from the library's own types where they
differ. Field descriptions end up in the OpenAPI document, so they are written for API users.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Health(BaseModel):
    """The gateway is up; it says nothing about the model servers (see ``/models``)."""

    status: str = Field("ok", description="Always 'ok' when the process answers.")
    version: str = Field(..., description="agentlake version.")
    uptime_s: float = Field(..., ge=0, description="Seconds since the app was created.")
    auth: bool = Field(..., description="True when API keys are configured (every other endpoint needs one).")


# --- lake -------------------------------------------------------------------------------

Scalar = str | int | float | bool | None


class SQLRequest(BaseModel):
    """One read-only query: a single SELECT or WITH statement, checked by the lake's guard."""

    model_config = ConfigDict(extra="forbid")

    sql: str = Field(
        ...,
        min_length=1,
        max_length=100_000,
        description="One SELECT/WITH statement; `?` for parameters.",
        examples=["SELECT role, count(*) AS n FROM workers GROUP BY role ORDER BY n DESC"],
    )
    params: list[Scalar] = Field(
        default_factory=list, max_length=100, description="Values bound to the `?` placeholders."
    )
    max_rows: int | None = Field(
        None,
        ge=1,
        le=100_000,
        description="Return at most this many rows (never more than the server's sql_max_rows).",
    )


class SQLResponse(BaseModel):
    """The rows of a query, capped; ``truncated`` says more rows existed."""

    columns: list[str]
    rows: list[list[Any]] = Field(
        ..., description="Row values in column order; dates and times as ISO 8601 strings."
    )
    row_count: int = Field(..., ge=0)
    truncated: bool = Field(..., description="True when the result was cut at the row cap.")
    elapsed_ms: float = Field(..., ge=0)

    @classmethod
    def from_result(cls, result: Any) -> SQLResponse:
        return cls(
            columns=result.columns,
            rows=result.rows,
            row_count=len(result.rows),
            truncated=result.truncated,
            elapsed_ms=result.elapsed_ms,
        )
