"""What the standard ``OTEL_*`` environment asks of agentlake's OTLP export (no SDK imported).

Owns reading the environment only: whether trace export is on, which protocol, whether inputs
and outputs are captured. The exporter itself is ``otlp_export``; this module stays free of
the OpenTelemetry SDK so that deciding costs nothing at start-up when export is off.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def export_configured(environ: Mapping[str, str] | None = None) -> bool:
    """Trace export is on when ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` or
    ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set, unless ``OTEL_SDK_DISABLED`` is true or
    ``OTEL_TRACES_EXPORTER`` is ``none``."""
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() in _TRUE:
        return False
    if env.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "none":
        return False
    return bool(
        env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
        or env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    )


def export_protocol(environ: Mapping[str, str] | None = None) -> str:
    """``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL``, else ``OTEL_EXPORTER_OTLP_PROTOCOL``, else
    ``http/protobuf`` (the OTLP default)."""
    env = os.environ if environ is None else environ
    value = env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or env.get("OTEL_EXPORTER_OTLP_PROTOCOL") or ""
    return value.strip().lower() or "http/protobuf"


def capture_content(environ: Mapping[str, str] | None = None) -> bool:
    """Whether spans carry inputs and outputs: yes unless
    ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` is false (an op's summaries are
    already scrubbed of secrets and capped)."""
    env = os.environ if environ is None else environ
    value = env.get("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "").strip().lower()
    return value not in _FALSE
