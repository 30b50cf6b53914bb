"""Tables of what a run captures beside the logs (issue 8), part of the canonical tables
(:data:`stacklens.schema.TABLES`): broker messages and samples (:mod:`stacklens.broker`),
database digests and samples (:mod:`stacklens.dbstat`), process resources
(:mod:`stacklens.resources`) and config findings (:mod:`stacklens.advise`)."""

from __future__ import annotations

import polars as pl

from stacklens.schema.types import Columns

__all__ = ["BROKER_SAMPLES", "CAPTURE_TABLES", "CONFIG_FINDINGS", "DB_DIGESTS", "DB_SAMPLES",
           "HOST_CPU_SERVICE", "MESSAGES", "NET_SERVICE", "RESOURCE_SAMPLES"]

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

#: ``service`` of the ``resource_samples`` rows of the loopback interface's byte counters.
NET_SERVICE = "net:lo"
#: ``service`` of the ``resource_samples`` rows of the whole machine's busy CPU.
HOST_CPU_SERVICE = "cpu:host"

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

#: table name -> columns, for :data:`stacklens.schema.TABLES`
CAPTURE_TABLES: dict[str, Columns] = {
    "messages": MESSAGES,
    "broker_samples": BROKER_SAMPLES,
    "db_digests": DB_DIGESTS,
    "db_samples": DB_SAMPLES,
    "resource_samples": RESOURCE_SAMPLES,
    "config_findings": CONFIG_FINDINGS,
}
