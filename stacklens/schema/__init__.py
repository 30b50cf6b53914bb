"""Canonical tables: the contract between pipeline stages.

Every stage reads the previous stage's tables and writes its own; nothing else crosses a stage
boundary. The tables live in a run folder as Parquet files (``<run>/tables/<name>.parquet``) and
as tables of the same name in ``<run>/stacklens.duckdb`` (see :mod:`stacklens.store`).

Shapes follow Perfetto's trace processor (a few shared tables, analyses as SQL over them) and
OSProfiler's span model (``trace_id`` / ``parent_id`` / ``base_id``) so that a trace can later be
exported to OpenTelemetry. Timestamps are ``*_ns``: integer nanoseconds since the Unix epoch,
UTC (oslo.log writes local time without a zone; the zone assumed is recorded in ``ingest_stats``
under kind ``timezone_assumption``). Durations are ``*_s``: float seconds.

The tables of the data-plane sweeps and of what a run captures beside the logs are declared in
:mod:`stacklens.schema.sweep` and :mod:`stacklens.schema.capture`; every name is importable
from here.
"""

from __future__ import annotations

import polars as pl

from stacklens.schema.capture import (
    BROKER_SAMPLES,
    CAPTURE_TABLES,
    CONFIG_FINDINGS,
    DB_DIGESTS,
    DB_SAMPLES,
    MESSAGES,
    RESOURCE_SAMPLES,
)
from stacklens.schema.sweep import (
    SWEEP_APP,
    SWEEP_APP_REPEATS,
    SWEEP_APP_SERIES,
    SWEEP_POINTS,
    SWEEP_PROBES,
    SWEEP_REPEATS,
    SWEEP_RESOURCES,
    SWEEP_SKIPPED,
    SWEEP_SUMMARY,
    SWEEP_TABLES,
)
from stacklens.schema.types import Columns, Dtype

__all__ = [
    "BREAKDOWN",
    "BROKER_SAMPLES",
    "CLOCK_OFFSETS",
    "CONFIG_FINDINGS",
    "Columns",
    "DB_DIGESTS",
    "DB_SAMPLES",
    "Dtype",
    "ERROR_TEMPLATES",
    "EVENTS",
    "FLOWS",
    "INGEST_STATS",
    "MESSAGES",
    "PHASES",
    "QUARANTINE",
    "REQUESTS",
    "RESOURCE_SAMPLES",
    "SPANS",
    "SWEEP_APP",
    "SWEEP_APP_REPEATS",
    "SWEEP_APP_SERIES",
    "SWEEP_POINTS",
    "SWEEP_PROBES",
    "SWEEP_REPEATS",
    "SWEEP_RESOURCES",
    "SWEEP_SKIPPED",
    "SWEEP_SUMMARY",
    "TABLES",
    "TEMPLATES",
    "TRACES",
    "conform",
    "empty",
]


#: One row per log record (a header line plus its continuation lines).
EVENTS: Columns = {
    "ts_ns": pl.Int64,  # record time, ns since epoch, UTC as assumed
    "host": pl.String,  # from folder layout, syslog prefix or --host-map
    "service": pl.String,  # binary: nova-api, nova-compute, neutron-server, tempest, ...
    "pid": pl.Int32,  # null where the line carries none
    "level": pl.String,  # DEBUG INFO WARNING ERROR CRITICAL (AUDIT, TRACE in old releases)
    "logger": pl.String,  # python logger name, e.g. nova.compute.manager
    "request_id": pl.String,  # req-<uuid> of this service's request context
    "global_request_id": pl.String,  # req-<uuid> of the caller (Pike on), else null
    "user": pl.String,
    "project": pl.String,
    "instance_uuid": pl.String,  # from the "[instance: <uuid>]" tag
    "message": pl.String,  # first line of the record, redacted, debug suffix removed
    "continuation": pl.String,  # following lines (tracebacks, headers), redacted; null if none
    "file": pl.String,  # path as given on the command line (inside .gz: the .gz path)
    "line_no": pl.Int64,  # 1-based line of the record's first line in the (decompressed) file
    "n_lines": pl.Int32,  # physical lines in the record
    # facts extracted from well-known messages (null elsewhere)
    "http_method": pl.String,  # wsgi access line or tempest rest_client line
    "http_path": pl.String,
    "http_status": pl.Int32,
    "http_dur_s": pl.Float64,  # server time (wsgi "time:") or client time (tempest)
    "took_s": pl.Float64,  # "Took 12.3 seconds to <took_what>"
    "took_what": pl.String,
    "rpc_kind": pl.String,  # call, cast, recv_call, recv_cast, reply_send, reply_recv
    "rpc_id": pl.String,  # oslo.messaging msg_id (calls, replies) or unique_id (casts)
    "rpc_topic": pl.String,  # topic of a call/cast: conductor, scheduler, compute, network, ...
    "lock_name": pl.String,  # oslo_concurrency lock lines
    "lock_waited_s": pl.Float64,
    "lock_held_s": pl.Float64,
}

#: One row per (file, kind): what ingest could not place, or had to assume. Severity is
#: ``info`` (known non-record lines, assumptions), ``error`` (damaged but kept), or ``data_loss``
#: (bytes that could not be read at all). Perfetto's ``stats`` table is the model.
INGEST_STATS: Columns = {
    "file": pl.String,
    "kind": pl.String,
    "severity": pl.String,
    "count": pl.Int64,
    "detail": pl.String,
}

#: One row per physical line that could not be placed in a record, raw text kept (redacted,
#: cut to 4096 characters).
QUARANTINE: Columns = {
    "file": pl.String,
    "line_no": pl.Int64,
    "reason": pl.String,  # binary, no_header_before, non_utf8, ...
    "raw": pl.String,
}

#: One service's part of one request (OSProfiler: one trace point pair).
SPANS: Columns = {
    "trace_id": pl.String,
    "span_id": pl.String,
    "parent_span_id": pl.String,  # null for the root span
    "request_id": pl.String,
    "host": pl.String,
    "service": pl.String,
    "pid": pl.Int32,
    "operation": pl.String,  # "POST /v2.1/servers", "rpc compute", "client", ...
    "start_ns": pl.Int64,
    "end_ns": pl.Int64,
    "end_exact": pl.Boolean,  # False: end is the last logged event, not a logged completion
    "status": pl.String,  # ok, error, unknown
    "error": pl.String,  # first error message of the span, null if none
    "n_events": pl.Int64,
}

#: Causal edges between spans (Perfetto ``flow(slice_out, slice_in)``).
FLOWS: Columns = {
    "trace_id": pl.String,
    "src_span_id": pl.String,
    "dst_span_id": pl.String,
    "kind": pl.String,  # rpc_call, rpc_cast, http, instance
    "rpc_id": pl.String,
    "send_ns": pl.Int64,
    "recv_ns": pl.Int64,  # null where the receipt was not logged
}

#: One row per reconstructed user action (all spans of one request).
TRACES: Columns = {
    "trace_id": pl.String,
    "request_id": pl.String,  # the root request id (the one the client saw)
    "operation": pl.String,  # server.create, server.delete, GET /v2.1/servers/{id}, ...
    "outcome": pl.String,  # success, retried, failed, rejected (HTTP 4xx), unknown
    "outcome_reason": pl.String,  # why: "completion logged", "failure logged", "HTTP 404", ...
    "http_status": pl.Int32,
    "error": pl.String,  # root cause: first error of the failing chain (failed traces only)
    "error_service": pl.String,
    "error_file": pl.String,
    "error_line_no": pl.Int64,
    "retries": pl.Int32,  # reschedules seen
    "instance_uuid": pl.String,
    "start_ns": pl.Int64,
    "end_ns": pl.Int64,
    "dur_s": pl.Float64,  # end-to-end: first event to end_ns (the logged completion when end_exact)
    "end_exact": pl.Boolean,
    "client_dur_s": pl.Float64,  # as timed by the client (tempest), null if no client log
    "n_spans": pl.Int32,
    "services": pl.String,  # comma-separated, in order of first appearance
    "n_error_records": pl.Int32,  # ERROR/CRITICAL records of the trace (annotations)
    "first_error": pl.String,  # first ERROR/CRITICAL message, whatever the outcome
}

#: Where each trace's end-to-end time went; the rows of one trace sum to its ``dur_s``.
BREAKDOWN: Columns = {
    "trace_id": pl.String,
    "component": pl.String,  # a service, or "between components" (queues, RPC, polling)
    "dur_s": pl.Float64,
}

#: Phases inside one service's span, from marker messages (nova-compute: claim, network,
#: block_device, spawn, build; see :mod:`stacklens.trace.classify` for the markers).
PHASES: Columns = {
    "trace_id": pl.String,
    "service": pl.String,
    "phase": pl.String,
    "start_ns": pl.Int64,
    "end_ns": pl.Int64,
    "dur_s": pl.Float64,
}

#: Error templates mined with Drain3 over ERROR/CRITICAL records and tracebacks.
TEMPLATES: Columns = {
    "template_id": pl.Int64,
    "template": pl.String,
    "n_events": pl.Int64,
}

#: One row per server a load driver asked for (``stacklens run``, or read from Rally results):
#: the client's view of its lifecycle. Written by :mod:`stacklens.drive`. Client timestamps are
#: ``*_ns`` on the client's clock; ``launched_ns`` is the server's own ``launched_at``. Joins
#: the server-side view on ``global_request_id`` = ``traces.trace_id`` (the driver sends its
#: own ``X-OpenStack-Request-ID``), else ``request_id`` = ``traces.request_id``.
REQUESTS: Columns = {
    "run_id": pl.String,  # the run's tag (stacklens) or task uuid (rally)
    "source": pl.String,  # stacklens, rally
    "scenario": pl.String,  # scenario name / rally workload title
    "repetition": pl.Int32,  # 0-based repetition (rally: workload position)
    "iteration": pl.Int32,  # 0-based index of the server within its repetition
    "name": pl.String,  # server name (stacklens: sl-<runid>-...)
    "server_id": pl.String,  # instance uuid, null if the create was refused
    "host": pl.String,  # OS-EXT-SRV-ATTR:host when visible (admin), else null
    "status": pl.String,  # last server status seen: BUILD, ACTIVE, ERROR, DELETED; null if none
    "outcome": pl.String,  # ok, error, api_error, timeout, transport_error, delete_failed, failed, cancelled; null while pending
    "error": pl.String,  # fault message, HTTP error message or client exception; null if ok
    "request_id": pl.String,  # x-openstack-request-id (else x-compute-request-id) of the create
    "global_request_id": pl.String,  # X-OpenStack-Request-ID the client sent with the create
    "create_http_status": pl.Int32,  # null: no HTTP response
    "delete_request_id": pl.String,
    "delete_global_request_id": pl.String,
    "delete_http_status": pl.Int32,
    "submit_ns": pl.Int64,  # create issued by the client (before connection-pool wait)
    "accepted_ns": pl.Int64,  # create response received (202 or error)
    "active_ns": pl.Int64,  # ACTIVE first seen by the client (includes polling delay)
    "launched_ns": pl.Int64,  # OS-SRV-USG:launched_at, server clock, second resolution
    "ping_ns": pl.Int64,  # first ping reply, null if not checked
    "ssh_ns": pl.Int64,  # first SSH banner, null if not checked
    "delete_ns": pl.Int64,  # delete issued
    "delete_accepted_ns": pl.Int64,  # delete response received
    "gone_ns": pl.Int64,  # DELETED (or 404) first seen by the client
    "api_s": pl.Float64,  # accepted - submit
    "create_s": pl.Float64,  # active - submit
    "delete_s": pl.Float64,  # gone - delete
    "reach_note": pl.String,  # why ping/SSH were skipped, null if checked or not asked for
    "profiler_trace_id": pl.String,  # OSProfiler trace id (rally), null elsewhere
}

#: Clock offset of each host per UTC day, from causal pairs (see :mod:`stacklens.trace.skew`):
#: seconds to ADD to the host's raw timestamps to put them on the reference host's clock.
CLOCK_OFFSETS: Columns = {
    "day": pl.String,  # UTC date of the records corrected
    "host": pl.String,
    "reference": pl.String,  # host whose clock is kept (offset 0)
    "offset_s": pl.Float64,  # midpoint of the feasible interval; null unless bounded
    "lo_s": pl.Float64,
    "hi_s": pl.Float64,
    "uncertainty_s": pl.Float64,  # half-width of the feasible interval
    "n_constraints": pl.Int64,
    "status": pl.String,  # reference, bounded, lower_only, upper_only, unconnected, unconstrained
    "applied": pl.Boolean,  # offset applied (bounded and uncertainty <= 0.5 s)
    "violations_before": pl.Int64,  # causal pairs violated by raw / corrected timestamps (day)
    "violations_after": pl.Int64,
    "dropped": pl.Int64,  # constraints dropped to break infeasible cycles
    "note": pl.String,  # the row in words, e.g. "no causal pairs between a and b: offset unknown"
}

#: The template of each failed trace's first error (written by the analyze stage).
ERROR_TEMPLATES: Columns = {
    "trace_id": pl.String,
    "template_id": pl.Int64,
    "template": pl.String,
}

TABLES: dict[str, Columns] = {
    "events": EVENTS,
    "ingest_stats": INGEST_STATS,
    "quarantine": QUARANTINE,
    "spans": SPANS,
    "flows": FLOWS,
    "traces": TRACES,
    "breakdown": BREAKDOWN,
    "phases": PHASES,
    "templates": TEMPLATES,
    "error_templates": ERROR_TEMPLATES,
    "requests": REQUESTS,
    "clock_offsets": CLOCK_OFFSETS,
    **SWEEP_TABLES,
    **CAPTURE_TABLES,
}


def empty(name: str) -> pl.DataFrame:
    """Return an empty frame with the columns and dtypes of canonical table ``name``.

    Raises ``KeyError`` for an unknown table name.
    """
    return pl.DataFrame(schema=TABLES[name])


def conform(df: pl.DataFrame, name: str) -> pl.DataFrame:
    """Cast and order ``df`` to table ``name``'s schema, adding missing columns as nulls."""
    schema = TABLES[name]
    cols = [
        (pl.col(c).cast(t) if c in df.columns else pl.lit(None, dtype=t)).alias(c)
        for c, t in schema.items()
    ]
    return df.select(cols)

