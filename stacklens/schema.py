"""Canonical tables: the contract between pipeline stages.

Every stage reads the previous stage's tables and writes its own; nothing else crosses a stage
boundary. The tables live in a run folder as Parquet files (``<run>/tables/<name>.parquet``) and
as tables of the same name in ``<run>/stacklens.duckdb`` (see :mod:`stacklens.store`).

Shapes follow Perfetto's trace processor (a few shared tables, analyses as SQL over them) and
OSProfiler's span model (``trace_id`` / ``parent_id`` / ``base_id``) so that a trace can later be
exported to OpenTelemetry. Timestamps are ``*_ns``: integer nanoseconds since the Unix epoch,
UTC (oslo.log writes local time without a zone; the zone assumed is recorded in ``ingest_stats``
under kind ``timezone_assumption``). Durations are ``*_s``: float seconds.
"""

from __future__ import annotations

from typing import TypeAlias

import polars as pl
from polars.datatypes import DataTypeClass

__all__ = [
    "BREAKDOWN",
    "CLOCK_OFFSETS",
    "Columns",
    "Dtype",
    "ERROR_TEMPLATES",
    "EVENTS",
    "FLOWS",
    "INGEST_STATS",
    "PHASES",
    "QUARANTINE",
    "REQUESTS",
    "SPANS",
    "TABLES",
    "TEMPLATES",
    "TRACES",
    "conform",
    "empty",
]

#: A column's dtype as the tables below write it: a Polars dtype class (``pl.Int64``, what
#: these dicts hold) or a dtype instance (``pl.Datetime("ns")``). Both are accepted wherever
#: Polars takes a schema.
Dtype: TypeAlias = pl.DataType | DataTypeClass

#: A table's columns in order: name -> :data:`Dtype`.
Columns: TypeAlias = dict[str, Dtype]

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


# ==== sweep tables (stacklens.sweep, issue 10) =====================================================
# Written by ``stacklens sweep run`` / ``sweep analyze`` (:mod:`stacklens.sweep.tables`). Units in
# names: MiB/s = 2^20 B/s, Mbit/s = 10^6 bit/s, latencies in microseconds (fio's clat), ms, s.
# Latency percentiles of more than one fio job or target come from the merged clat histograms
# (fio json+ bins), never from averaged percentiles.

_SWEEP_KEYS: dict[str, pl.DataType] = {
    "sweep": pl.String(),  # the plan's name, or for sweep analyze the folder a series came from
    "tool": pl.String(),  # fio, iperf3
    "point": pl.String(),  # the point's key: its matrix values (fio-randread-bs4k-qd1-nj1-vms2)
    "n_targets": pl.Int32(),  # VMs (fio) or client/server pairs (iperf3) used together
    "rw": pl.String(),  # fio rw=
    "bs": pl.String(),  # fio bs= as given
    "bs_bytes": pl.Int64(),
    "iodepth": pl.Int32(),
    "numjobs": pl.Int32(),
    "protocol": pl.String(),  # iperf3: tcp, udp
    "parallel": pl.Int32(),  # iperf3 -P streams per pair
    "reverse": pl.Boolean(),  # iperf3 -R
}

#: One row per point x repeat x target, failed targets included (``status`` failed + reason).
SWEEP_POINTS: Columns = {
    **_SWEEP_KEYS,
    "repeat": pl.Int32(),  # 0-based
    "target": pl.String(),  # the plan's target name (iperf3: the client), or the file's name
    "status": pl.String(),  # ok, failed
    "reason": pl.String(),  # why it failed: exit status, tool error, timeout, unreachable ...
    "raw": pl.String(),  # the tool's JSON file, relative to the sweep folder (analyze: as found)
    "start_ns": pl.Int64(),  # when the target started the tool, controller clock, ns since epoch
    "start_lag_ms": pl.Float64(),  # start_ns - the barrier's start time
    "clock_offset_ms": pl.Float64(),  # target clock - controller clock (ssh: measured)
    "bw_mib_s": pl.Float64(),  # fio: bw_bytes of the directions of rw, summed over jobs
    "iops": pl.Float64(),
    "io_bytes": pl.Int64(),
    "runtime_s": pl.Float64(),
    "lat_mean_us": pl.Float64(),  # fio clat mean, weighted by I/O count
    "lat_p50_us": pl.Float64(),  # fio clat percentiles (fio's rule over the histogram)
    "lat_p95_us": pl.Float64(),
    "lat_p99_us": pl.Float64(),
    "lat_p999_us": pl.Float64(),
    "bw_mbit_s": pl.Float64(),  # iperf3: receiver side (sum_received) bits_per_second / 1e6
    "retransmits": pl.Int64(),  # iperf3 TCP sender retransmits
    "lost_percent": pl.Float64(),  # iperf3 UDP: 100 * lost_packets / packets
    "jitter_ms": pl.Float64(),  # iperf3 UDP
}

#: One row per point x repeat: sums over its targets (status ok / partial / failed).
SWEEP_REPEATS: Columns = {
    **_SWEEP_KEYS,
    "repeat": pl.Int32(),
    "status": pl.String(),  # ok (every target), partial (some), failed (none)
    "reason": pl.String(),
    "n_ok": pl.Int32(),  # targets that succeeded
    "start_spread_ms": pl.Float64(),  # latest - earliest target start (the barrier's quality)
    "bw_mib_s": pl.Float64(),  # sum over targets
    "iops": pl.Float64(),  # sum over targets
    "io_bytes": pl.Int64(),
    "runtime_s": pl.Float64(),
    "lat_mean_us": pl.Float64(),
    "lat_p50_us": pl.Float64(),  # from the merged histogram of every job of every target
    "lat_p95_us": pl.Float64(),
    "lat_p99_us": pl.Float64(),
    "lat_p999_us": pl.Float64(),
    "lat_source": pl.String(),  # merged_bins, fio_reported (one job, plain json), none
    "bw_mbit_s": pl.Float64(),  # sum over pairs
    "retransmits": pl.Int64(),
    "lost_percent": pl.Float64(),  # sum(lost) / sum(packets) over pairs
    "jitter_ms": pl.Float64(),  # maximum over pairs
    "flags": pl.String(),  # comma-separated: above_limit_bw, partial, bw_iops_mismatch, ...
}

#: One row per point: over its ok repeats (median, min, max), failed ones counted.
SWEEP_SUMMARY: Columns = {
    **_SWEEP_KEYS,
    "n_repeats": pl.Int32(),
    "n_ok": pl.Int32(),
    "n_failed": pl.Int32(),  # failed or partial repeats (kept in sweep_repeats with reasons)
    "bw_mib_s": pl.Float64(),  # median over ok repeats of the sum over targets
    "bw_mib_s_min": pl.Float64(),
    "bw_mib_s_max": pl.Float64(),
    "iops": pl.Float64(),
    "iops_min": pl.Float64(),
    "iops_max": pl.Float64(),
    "lat_mean_us": pl.Float64(),
    "lat_p50_us": pl.Float64(),  # median over repeats of the merged percentile
    "lat_p95_us": pl.Float64(),
    "lat_p99_us": pl.Float64(),
    "lat_p999_us": pl.Float64(),
    "bw_mbit_s": pl.Float64(),
    "bw_mbit_s_min": pl.Float64(),
    "bw_mbit_s_max": pl.Float64(),
    "lost_percent": pl.Float64(),
    "jitter_ms": pl.Float64(),
    "spread_pct": pl.Float64(),  # (max - min) / median of bw, percent
    "flags": pl.String(),
    "reasons": pl.String(),  # why repeats failed
}

#: Files ``sweep analyze`` could not use, one row each (kind: iperf3_text, fio_log, bad_json ...).
SWEEP_SKIPPED: Columns = {
    "file": pl.String(),
    "kind": pl.String(),
    "reason": pl.String(),
}

#: One row per network probe repeat (``probes:`` of a plan): ping every ``interval_s``.
SWEEP_PROBES: Columns = {
    "sweep": pl.String(),
    "kind": pl.String(),  # latency, failover
    "probe": pl.String(),  # latency-<src>-<dst>, failover-<src>-<dst>-on-<target>-<i>
    "repeat": pl.Int32(),
    "src": pl.String(),
    "dst": pl.String(),
    "placement": pl.String(),  # the plan's label: same-host, same-rack, across-hosts ...
    "status": pl.String(),  # ok, failed
    "reason": pl.String(),
    "raw": pl.String(),  # ping's output, relative to the sweep folder
    "interval_s": pl.Float64(),
    "sent": pl.Int64(),
    "received": pl.Int64(),
    "loss_pct": pl.Float64(),
    "rtt_p50_ms": pl.Float64(),  # nearest rank over the replies
    "rtt_p99_ms": pl.Float64(),
    "rtt_max_ms": pl.Float64(),
    "max_gap_s": pl.Float64(),  # longest time between two consecutive replies
    "outage_s": pl.Float64(),  # max_gap_s - interval_s
    "fault_s": pl.Float64(),  # how long the injected fault lasted (failover)
    "jitter_ms": pl.Float64(),  # kind jitter: iperf3 --udp client's jitter (RFC 3550 estimate)
    "bw_mbit_s": pl.Float64(),  # kind jitter: UDP received, 10^6 bit/s
}

_APP_KEYS: dict[str, pl.DataType] = {
    "sweep": pl.String(),
    "point": pl.String(),  # pgbench-c<connections>-vms<clients>
    "repeat": pl.Int32(),
    "n_targets": pl.Int32(),  # client targets running pgbench together
    "connections": pl.Int32(),  # pgbench -c (and -j) per client
}

#: Application workload (pgbench): one row per point x repeat x client target.
SWEEP_APP: Columns = {
    **_APP_KEYS,
    "target": pl.String(),
    "status": pl.String(),  # ok, failed
    "reason": pl.String(),
    "raw": pl.String(),  # pgbench's stdout (summary); .stderr beside it holds --progress
    "start_ns": pl.Int64(),  # SL_START of the barrier, ns since epoch
    "tps": pl.Float64(),  # pgbench's final tps (without initial connection time)
    "tpm": pl.Float64(),  # tps * 60
    "xacts": pl.Int64(),  # transactions actually processed
    "failed_xacts": pl.Int64(),
    "lat_mean_ms": pl.Float64(),  # pgbench's latency average
}

#: pgbench point x repeat: sums over the clients, the CPU of the watched targets.
SWEEP_APP_REPEATS: Columns = {
    **_APP_KEYS,
    "status": pl.String(),  # ok (every client), partial, failed
    "reason": pl.String(),
    "n_ok": pl.Int32(),
    "tps": pl.Float64(),  # sum over ok clients
    "tpm": pl.Float64(),
    "xacts": pl.Int64(),
    "lat_mean_ms": pl.Float64(),  # weighted by transactions
    "cpu_pct_mean": pl.Float64(),  # mean over targets and seconds of the run (/proc/stat)
}

#: pgbench --progress=1: one row per client x second.
SWEEP_APP_SERIES: Columns = {
    **_APP_KEYS,
    "target": pl.String(),
    "t_s": pl.Float64(),  # seconds since the client started
    "tps": pl.Float64(),  # transactions finished in that second
    "tpm": pl.Float64(),
    "lat_ms": pl.Float64(),
}

#: What the targets did during a pgbench run: one row per target x one-second interval.
SWEEP_RESOURCES: Columns = {
    **_APP_KEYS,
    "target": pl.String(),  # a client or the database server
    "t_s": pl.Float64(),  # end of the interval, seconds after the barrier's start
    "cpu_pct": pl.Float64(),  # busy share of all CPUs (/proc/stat; host-wide in a netns)
    "disk_read_mib_s": pl.Float64(),  # /sys/block/*/stat sectors x 512, 2^20 B
    "disk_write_mib_s": pl.Float64(),
    "net_rx_mbit_s": pl.Float64(),  # /proc/net/dev without lo (the namespace's own in a netns)
    "net_tx_mbit_s": pl.Float64(),
    "proc_cpu_pct": pl.Float64(),  # netns targets: CPU of the namespace's processes (psutil),
    "n_procs": pl.Int32(),  # percent of one CPU; processes in the namespace
}

TABLES.update({
    "sweep_app": SWEEP_APP,
    "sweep_app_repeats": SWEEP_APP_REPEATS,
    "sweep_app_series": SWEEP_APP_SERIES,
    "sweep_resources": SWEEP_RESOURCES,
    "sweep_probes": SWEEP_PROBES,
    "sweep_points": SWEEP_POINTS,
    "sweep_repeats": SWEEP_REPEATS,
    "sweep_summary": SWEEP_SUMMARY,
    "sweep_skipped": SWEEP_SKIPPED,
})
__all__ = sorted([*__all__, "SWEEP_APP", "SWEEP_APP_REPEATS", "SWEEP_APP_SERIES",
                  "SWEEP_RESOURCES", "SWEEP_POINTS", "SWEEP_PROBES", "SWEEP_REPEATS", "SWEEP_SKIPPED",
                  "SWEEP_SUMMARY"])
# ==== end of sweep tables ==========================================================================


# ==== broker tables (issue 8: stacklens.broker) ===================================================
#: One row per firehose event: a message published to an exchange (``direction = publish``) or
#: delivered from a queue (``deliver``); fan-out amplification = deliveries / publishes. Decoded
#: from the oslo.messaging envelope (:mod:`stacklens.broker.decode`); bodies are not kept.
MESSAGES: Columns = {
    "ts_ns": pl.Int64(),  # when the recorder received the trace event, ns since epoch, UTC
    "direction": pl.String(),  # publish, deliver
    "exchange": pl.String(),  # "" for the default exchange (replies)
    "routing_key": pl.String(),  # first routing key of the publish
    "queue": pl.String(),  # deliveries: the queue delivered from; null for publishes
    "kind": pl.String(),  # call, cast, fanout, reply, notification, unknown
    "method": pl.String(),  # RPC method (calls, casts, fanouts)
    "namespace": pl.String(),  # RPC target namespace, e.g. baseapi; null when none
    "version": pl.String(),  # RPC API version the sender asked for
    "topic": pl.String(),  # call/cast routing key (compute.fake-1), fanout topic, notif. topic
    "msg_id": pl.String(),  # call and its reply (oslo.messaging _msg_id, 32 hex)
    "unique_id": pl.String(),  # _unique_id of every RPC message (the CAST log line's id)
    "reply_q": pl.String(),  # the caller's reply queue (calls, replies)
    "request_id": pl.String(),  # context request_id (req-<uuid>)
    "global_request_id": pl.String(),  # context global_request_id
    "user_id": pl.String(),
    "project_id": pl.String(),
    "event_type": pl.String(),  # notifications
    "priority": pl.String(),  # notifications: INFO, ERROR, ...
    "failure": pl.Boolean(),  # replies: carried a remote exception
    "ending": pl.Boolean(),  # replies: the last reply of the call
    "envelope": pl.String(),  # "2.0", "none" (unwrapped), "undecodable"
    "context": pl.String(),  # selected context keys as JSON, secrets masked "***"
    "size_bytes": pl.Int64(),  # body bytes as published
    "node": pl.String(),  # RabbitMQ node
    "connection": pl.String(),  # RabbitMQ's connection name (ip:port -> ip:port)
    "conn_name": pl.String(),  # the client's name (oslo.messaging <binary>:<pid>:<uuid>)
    "client_binary": pl.String(),  # from conn_name: nova-compute, nova-conductor, ...
    "client_pid": pl.Int32(),  # from conn_name; joins events.pid for the host
    "redelivered": pl.Boolean(),  # deliveries only
}

#: Management API samples over time: one row per (poll, metric, object).
BROKER_SAMPLES: Columns = {
    "ts_ns": pl.Int64(),  # poll time, ns since epoch, UTC
    "metric": pl.String(),  # messages, messages_ready, publish_rate (1/s), recv_oct (bytes), ...
    "scope": pl.String(),  # overall, queue, connection
    "object": pl.String(),  # queue name or connection name; "" for overall
    "value": pl.Float64(),
}

TABLES.update({"messages": MESSAGES, "broker_samples": BROKER_SAMPLES})
__all__ = sorted([*__all__, "BROKER_SAMPLES", "MESSAGES"])
# ==== end of broker tables =========================================================================


# ==== database and resource tables (stacklens.dbstat, stacklens.resources; issue 8) ================

#: MariaDB/MySQL statement digests (``performance_schema.events_statements_summary_by_digest``),
#: one row per snapshot x schema x digest, counters *cumulative since the server started or the
#: table was truncated*: the analyses take deltas (last - first snapshot, or consecutive). The
#: first and the last snapshot hold every digest; snapshots between hold only the digests whose
#: ``count_star`` changed since the previous one. Literals are already replaced by ``?`` in the
#: server's digest text. Timers: the server's picoseconds as float seconds.
DB_DIGESTS: Columns = {
    "ts_ns": pl.Int64,  # when the snapshot was taken (recorder's clock), ns since epoch
    "snapshot": pl.Int32,  # 0, 1, ... in order; the last one is max(snapshot)
    "schema": pl.String,  # SCHEMA_NAME: the connection's default database (null: none)
    "digest": pl.String,  # DIGEST (hex); null is the server's overflow bucket
    "digest_text": pl.String,  # normalized statement text (literals as ?), may be truncated
    "kind": pl.String,  # select, insert, update, delete, other (first keyword of digest_text)
    "count_star": pl.Int64,  # statements executed
    "sum_timer_wait_s": pl.Float64,  # total execution time
    "sum_lock_time_s": pl.Float64,  # time waiting for table locks
    "sum_errors": pl.Int64,
    "sum_warnings": pl.Int64,
    "sum_rows_affected": pl.Int64,
    "sum_rows_sent": pl.Int64,
    "sum_rows_examined": pl.Int64,
    "sum_no_index_used": pl.Int64,  # statements that scanned a table without an index
}

#: Server-wide counters and gauges over time, long format: ``SHOW GLOBAL STATUS`` variables
#: (metric = variable name as the server spells it, object ``""``), InnoDB lock metrics
#: (metric ``innodb_metrics``, object = metric name, where enabled), connected threads per user
#: (metric ``user_threads``, object = user) and per default database (``db_threads``), and the
#: recorder's own cost (metric ``snapshot_s``). Counters are cumulative like the server's.
DB_SAMPLES: Columns = {
    "ts_ns": pl.Int64,  # ns since epoch
    "metric": pl.String,
    "object": pl.String,
    "value": pl.Float64,
}

#: Per-process resource use over time (psutil), one row per target x sample. A target is a
#: process and its descendants (a gunicorn master and its workers): figures are summed over the
#: tree as found at that sample. Rows with a null ``pid`` are system-wide network counters of the
#: loopback interface (``service`` ``net:lo``): per-process network bytes are not measurable
#: with psutil; or the whole machine's busy CPU (``service`` ``cpu:host``, ``n_procs`` = CPUs).
RESOURCE_SAMPLES: Columns = {
    "ts_ns": pl.Int64,  # ns since epoch
    "host": pl.String,  # the host the service stands for (lab computes: fake-N)
    "service": pl.String,  # nova-api, nova-conductor, mariadb, ...
    "pid": pl.Int32,  # the target's root process; null for system-wide rows
    "n_procs": pl.Int32,  # processes in the tree at this sample
    "cpu_pct": pl.Float64,  # CPU time over the interval since the previous sample / wall, in
    #                         percent of one CPU (200 = two CPUs busy); null at the first sample
    "rss_bytes": pl.Int64,  # resident set size summed over the tree (shared pages counted again)
    "threads": pl.Int32,  # OS threads summed over the tree
    "connections": pl.Int32,  # open inet sockets (TCP and UDP) summed over the tree
    "net_sent_bytes": pl.Int64,  # net:lo rows only: cumulative bytes sent on lo
    "net_recv_bytes": pl.Int64,  # net:lo rows only: cumulative bytes received on lo
}

TABLES.update({
    "db_digests": DB_DIGESTS,
    "db_samples": DB_SAMPLES,
    "resource_samples": RESOURCE_SAMPLES,
})
__all__ = sorted([*__all__, "DB_DIGESTS", "DB_SAMPLES", "RESOURCE_SAMPLES"])
# ==== end of database and resource tables ==========================================================


# ==== config advice (stacklens.advise, issue 8) ==================================================
#: One row per setting a config rule has something to say about (:mod:`stacklens.advise`),
#: linked to a symptom of the run when one points at it. Written by ``stacklens config check
#: --run`` and :func:`stacklens.advise.write_config_findings`.
CONFIG_FINDINGS: Columns = {
    "rule_id": pl.String(),  # the rule (stacklens.advise.rules.RULES), e.g. db-pool
    "severity": pl.String(),  # error, warning, info
    "service": pl.String(),  # the service(s) concerned: nova-conductor, neutron, rabbitmq-server
    "file": pl.String(),  # config file that sets it (relative), else where it would be set
    "section": pl.String(),  # oslo.config section ([DEFAULT] as DEFAULT); haproxy: listen NAME
    "option": pl.String(),
    "value": pl.String(),  # the value in effect as written; null: the default applies
    "default": pl.String(),  # the default in the cloud's release; computed ones in parentheses
    "advice": pl.String(),  # this case in plain words, then what to set and why
    "evidence": pl.String(),  # sources: guides, release notes, option help; the defining file
    "symptom": pl.String(),  # what the run showed (counts by service), null without a symptom
    "symptom_count": pl.Int64(),  # log records (host skew: builds on the busiest host)
}
TABLES["config_findings"] = CONFIG_FINDINGS
__all__ = sorted([*__all__, "CONFIG_FINDINGS"])
# ==== end of config advice =======================================================================
