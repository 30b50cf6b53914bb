"""``stacklens export``: a run's traces for other tools. :mod:`~stacklens.export.otlp` sends
them to an OpenTelemetry receiver (Jaeger, the OpenTelemetry Collector) over OTLP/HTTP JSON.
Imports only :mod:`stacklens.store`, ``schema``, ``vocab`` and ``errors`` below it."""

from stacklens.export.otlp import (
    ExportResult,
    otlp_payloads,
    otlp_span_id,
    otlp_trace_id,
    send_otlp,
)

__all__ = ["ExportResult", "otlp_payloads", "otlp_span_id", "otlp_trace_id", "send_otlp"]
