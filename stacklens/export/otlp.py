"""A run's traces as OpenTelemetry spans, sent over OTLP/HTTP with the JSON encoding.

Format: the OTLP ``ExportTraceServiceRequest`` in its JSON mapping (opentelemetry-proto,
``opentelemetry/proto/trace/v1/trace.proto`` and the OTLP specification's "JSON Protobuf
Encoding": ids as lowercase hex, 64-bit integers as decimal strings, enums as numbers), POSTed
to ``<endpoint>/v1/traces`` with ``Content-Type: application/json``. No OpenTelemetry SDK
is needed.

Mapping from the canonical tables (:mod:`stacklens.schema`):

* one ``resourceSpans`` per (service, host, pid): resource attributes ``service.name``,
  ``host.name``, ``process.pid``, ``service.namespace`` = ``openstack``;
* a span per ``spans`` row: name = ``operation``; times = ``start_ns`` / ``end_ns``, which the
  trace stage already put on the reference host's clock (:mod:`stacklens.trace.clocks`); the
  offset applied to the span's host that day is kept as ``stacklens.clock_offset_s``;
  ``traceId`` = the trace's request UUID as 32 hex digits (``req-<uuid>`` -> ``<uuid>``
  without dashes) or, for ids without a UUID, the first 32 hex digits of its SHA-256;
  ``spanId`` = the first 16 hex digits of SHA-256(trace_id, span_id);
* attributes: ``openstack.request_id``, ``openstack.service``, ``openstack.host``,
  ``stacklens.trace_id``, ``stacklens.span_id``, ``stacklens.end_exact``; on the root span
  also ``openstack.instance_uuid``, ``stacklens.outcome``, ``stacklens.outcome_reason``,
  ``http.response.status_code`` where known;
* status: ``ERROR`` (2) with the span's first error when ``status = 'error'``, else unset (0);
* kind: ``SERVER`` (2) for the receiving side of an HTTP hop or an RPC call and for a root with
  an HTTP status, ``CONSUMER`` (5) for the receiving side of an RPC cast, ``INTERNAL`` (1)
  otherwise;
* a span link per RPC flow (``flows.kind`` ``rpc_call`` / ``rpc_cast``) from the receiving span
  to the sending span, with ``messaging.message.id`` (the oslo.messaging msg_id / unique_id)
  and ``stacklens.flow.kind``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import polars as pl

from stacklens.errors import StoreError, UserError
from stacklens.store import RunStore
from stacklens.vocab import UUID

__all__ = ["ExportResult", "otlp_payloads", "otlp_span_id", "otlp_trace_id", "send_otlp"]

#: Spans per OTLP request at most (a request stays well under receivers' 4 MiB defaults).
BATCH_SPANS = 1000
_UUID_RE = re.compile(UUID)
_KIND_INTERNAL, _KIND_SERVER, _KIND_CONSUMER = 1, 2, 5


def otlp_trace_id(trace_id: str) -> str:
    """32 lowercase hex digits for a stacklens ``trace_id`` (see the module docstring)."""
    m = _UUID_RE.search(trace_id.lower())
    if m:
        return m.group(0).replace("-", "")
    return hashlib.sha256(trace_id.encode()).hexdigest()[:32]


def otlp_span_id(trace_id: str, span_id: str) -> str:
    """16 lowercase hex digits for a span, unique within its trace."""
    return hashlib.sha256(f"{trace_id}\x00{span_id}".encode()).hexdigest()[:16]


def _attr(key: str, value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    if isinstance(value, bool):
        v: dict[str, Any] = {"boolValue": value}
    elif isinstance(value, int):
        v = {"intValue": str(value)}
    elif isinstance(value, float):
        v = {"doubleValue": value}
    else:
        v = {"stringValue": str(value)}
    return {"key": key, "value": v}


def _attrs(pairs: list[tuple[str, Any]]) -> list[dict[str, Any]]:
    return [a for a in (_attr(k, v) for k, v in pairs) if a is not None]


def _offsets(store: RunStore) -> dict[tuple[str, str], float]:
    if not store.has("clock_offsets"):
        return {}
    df = store.read("clock_offsets").filter(pl.col("applied"))
    return {(r["host"], r["day"]): r["offset_s"] for r in df.iter_rows(named=True)}


def _day(ns: int | None) -> str:
    import datetime as _dt

    if ns is None:
        return ""
    return _dt.datetime.fromtimestamp(ns / 1e9, tz=_dt.UTC).strftime("%Y-%m-%d")


def otlp_payloads(store: RunStore, limit_traces: int | None = None,
                  batch_spans: int = BATCH_SPANS) -> Iterator[tuple[dict[str, Any], int]]:
    """``(ExportTraceServiceRequest as a JSON-ready dict, number of spans in it)`` batches for
    every span of every trace of run ``store`` (the first ``limit_traces`` traces by start when
    given). A trace is never split across batches. Raises
    :class:`~stacklens.errors.StoreError` when the run has no spans."""
    from stacklens import __version__

    if not store.has("spans"):
        raise StoreError(f"{store.path} has no spans table: analyze or import the run first")
    spans = store.read("spans").sort("trace_id", "start_ns")
    traces = store.read("traces") if store.has("traces") else pl.DataFrame(
        schema={"trace_id": pl.String})
    flows = store.read("flows") if store.has("flows") else pl.DataFrame()
    order = spans.group_by("trace_id").agg(pl.col("start_ns").min()).sort("start_ns", "trace_id")
    keep = order["trace_id"].to_list()[:limit_traces] if limit_traces else None
    if keep is not None:
        spans = spans.filter(pl.col("trace_id").is_in(keep))
    tinfo = {r["trace_id"]: r for r in traces.iter_rows(named=True)}
    offsets = _offsets(store)
    kind_of: dict[tuple[str, str], int] = {}
    links: dict[tuple[str, str], list[dict[str, Any]]] = {}
    if flows.height:
        for f in flows.iter_rows(named=True):
            k = (f["trace_id"], f["dst_span_id"])
            kind_of[k] = _KIND_CONSUMER if f["kind"] == "rpc_cast" else _KIND_SERVER
            if f["kind"] in ("rpc_call", "rpc_cast") and f["src_span_id"]:
                links.setdefault(k, []).append({
                    "traceId": otlp_trace_id(f["trace_id"]),
                    "spanId": otlp_span_id(f["trace_id"], f["src_span_id"]),
                    "attributes": _attrs([("stacklens.flow.kind", f["kind"]),
                                          ("messaging.message.id", f["rpc_id"])])})
    batch: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    n_batch = 0
    for (tid,), group in spans.group_by(["trace_id"], maintain_order=True):
        if n_batch and n_batch + group.height > batch_spans:
            yield _request(batch, __version__), n_batch
            batch, n_batch = {}, 0
        t = tinfo.get(tid) or {}
        ttid = otlp_trace_id(str(tid))
        for s in group.iter_rows(named=True):
            root = s["parent_span_id"] is None
            k = (tid, s["span_id"])
            kind = kind_of.get(k, _KIND_SERVER if root and t.get("http_status") is not None
                               else _KIND_INTERNAL)
            attrs = [("openstack.request_id", s["request_id"]),
                     ("openstack.service", s["service"]), ("openstack.host", s["host"]),
                     ("stacklens.trace_id", tid), ("stacklens.span_id", s["span_id"]),
                     ("stacklens.end_exact", s["end_exact"]),
                     ("stacklens.clock_offset_s",
                      offsets.get((s["host"], _day(s["start_ns"]))))]
            if root:
                attrs += [("openstack.instance_uuid", t.get("instance_uuid")),
                          ("stacklens.outcome", t.get("outcome")),
                          ("stacklens.outcome_reason", t.get("outcome_reason")),
                          ("http.response.status_code", t.get("http_status"))]
            span: dict[str, Any] = {
                "traceId": ttid, "spanId": otlp_span_id(str(tid), s["span_id"]),
                "name": s["operation"] or s["service"] or "span", "kind": kind,
                "startTimeUnixNano": str(s["start_ns"]),
                "endTimeUnixNano": str(max(s["end_ns"] or s["start_ns"], s["start_ns"])),
                "attributes": _attrs(attrs),
                "status": ({"code": 2, "message": s["error"] or "error"}
                           if s["status"] == "error" else {"code": 0}),
            }
            if not root:
                span["parentSpanId"] = otlp_span_id(str(tid), s["parent_span_id"])
            if k in links:
                span["links"] = links[k]
            batch.setdefault((s["service"], s["host"], s["pid"]), []).append(span)
        n_batch += group.height
    if n_batch:
        yield _request(batch, __version__), n_batch


def _request(batch: dict[tuple[Any, ...], list[dict[str, Any]]], version: str) -> dict[str, Any]:
    return {"resourceSpans": [{
        "resource": {"attributes": _attrs([("service.name", svc or "unknown"),
                                           ("service.namespace", "openstack"),
                                           ("host.name", host), ("process.pid", pid)])},
        "scopeSpans": [{"scope": {"name": "stacklens", "version": version}, "spans": spans}],
    } for (svc, host, pid), spans in batch.items()]}


@dataclass(frozen=True)
class ExportResult:
    """What an export sent: ``requests`` (HTTP POSTs), ``spans``, ``traces`` (distinct trace
    ids) and ``rejected`` (spans the receiver reported in ``partialSuccess``)."""

    requests: int
    spans: int
    traces: int
    rejected: int


def send_otlp(store: RunStore, endpoint: str, client: httpx.Client | None = None,
              limit_traces: int | None = None, timeout_s: float = 30.0) -> ExportResult:
    """POST every batch of :func:`otlp_payloads` to ``endpoint`` (``.../v1/traces`` is added
    unless present). Raises :class:`~stacklens.errors.UserError` when the receiver cannot be
    reached or answers with an HTTP error (the message quotes its answer)."""
    url = endpoint.rstrip("/")
    if not url.endswith("/v1/traces"):
        url += "/v1/traces"
    own = client is None
    c = client or httpx.Client(timeout=timeout_s)
    n_req = n_spans = rejected = 0
    ids: set[str] = set()
    try:
        for payload, n in otlp_payloads(store, limit_traces):
            try:
                r = c.post(url, json=payload)
            except httpx.HTTPError as e:
                raise UserError(f"OTLP receiver {url} cannot be reached: {e}") from None
            if r.status_code >= 300:
                raise UserError(f"OTLP receiver {url} answered HTTP {r.status_code}: "
                                f"{r.text[:300]}")
            body = r.json() if r.content and "json" in r.headers.get("content-type", "") else {}
            rejected += int((body.get("partialSuccess") or {}).get("rejectedSpans") or 0)
            n_req += 1
            n_spans += n
            ids.update(s["traceId"] for rs in payload["resourceSpans"]
                       for ss in rs["scopeSpans"] for s in ss["spans"])
    finally:
        if own:
            c.close()
    return ExportResult(requests=n_req, spans=n_spans, traces=len(ids), rejected=rejected)
