"""Analyses as SQL over the canonical tables.

Every analysis is one query over ``traces``, ``breakdown``, ``spans``, ``events`` and
``templates`` (see :mod:`stacklens.schema`), written in the SQL subset that DuckDB and Spark SQL
share (``percentile_cont(...) WITHIN GROUP (ORDER BY ...)``, ``CASE``, ``GROUP BY``), so the
same text can later run on Spark over the Parquet tables.

*Requests* are traces with an API access line or a client line (``http_status`` known); traces
of background work (periodic tasks, RPC without an API request) are counted apart and never enter
success, failure or latency figures.

Headline rates (query ``summary``; the one definition the report uses). Outcomes are those of
:mod:`stacklens.trace.classify`::

    decided       = requests - rejected - unknown      (= success + retried + failed)
    success_rate  = (success + retried) / decided      (the cloud did what was asked)
    failure_rate  = failed / decided
    retry_rate    = retried / decided
    rejected_rate = rejected / requests                (4xx: the cloud refused, e.g. a poll of a
                                                        deleted server; neither success nor failure)
    unknown_rate  = unknown / requests                 (completion not in the logs)

Rates are fractions in [0, 1], NULL when their denominator is 0. Rejected and unknown requests
are left out of the success rate because they say nothing about whether the cloud works: a 404
on a deleted server is the API doing its job, and an unlogged completion is missing evidence.
"""

from __future__ import annotations

__all__ = ["CLIENT_QUERIES", "QUERIES"]

_REQ = "http_status IS NOT NULL"
_OUTCOME_COUNTS = ",\n".join(
    f"sum(CASE WHEN outcome = '{o}' THEN 1 ELSE 0 END) AS {o}"
    for o in ("success", "retried", "failed", "rejected", "unknown")
)

QUERIES: dict[str, str] = {
    # one row: headline counts and rates over requests
    "summary": f"""
        WITH s AS (
          SELECT count(*) AS traces,
                 {_OUTCOME_COUNTS},
                 min(start_ns) AS start_ns, max(end_ns) AS end_ns
          FROM traces WHERE {_REQ})
        SELECT s.*,
               success + retried + failed AS decided,
               (success + retried) / nullif(CAST(success + retried + failed AS DOUBLE), 0)
                 AS success_rate,
               failed / nullif(CAST(success + retried + failed AS DOUBLE), 0) AS failure_rate,
               retried / nullif(CAST(success + retried + failed AS DOUBLE), 0) AS retry_rate,
               rejected / nullif(CAST(traces AS DOUBLE), 0) AS rejected_rate,
               "unknown" / nullif(CAST(traces AS DOUBLE), 0) AS unknown_rate
        FROM s
    """,
    "background": f"SELECT count(*) AS n FROM traces WHERE NOT ({_REQ})",
    # per operation: outcomes and end-to-end percentiles (seconds)
    "operations": f"""
        SELECT operation, count(*) AS count,
               {_OUTCOME_COUNTS},
               percentile_cont(0.50) WITHIN GROUP (ORDER BY dur_s) AS p50_s,
               percentile_cont(0.95) WITHIN GROUP (ORDER BY dur_s) AS p95_s,
               percentile_cont(0.99) WITHIN GROUP (ORDER BY dur_s) AS p99_s,
               sum(dur_s) AS total_s
        FROM traces WHERE {_REQ}
        GROUP BY operation ORDER BY count DESC, operation
    """,
    # per operation and component: percentiles of the time each trace spent there (0 when the
    # component does not appear in a trace) and the component's share of all time
    "components": f"""
        WITH t AS (SELECT trace_id, operation, dur_s FROM traces
                   WHERE {_REQ} AND outcome IN ('success', 'retried')),
             c AS (SELECT DISTINCT t.operation, b.component
                   FROM breakdown b JOIN t ON b.trace_id = t.trace_id),
             x AS (SELECT t.operation, c.component, t.trace_id,
                          coalesce(b.dur_s, 0.0) AS dur_s, t.dur_s AS total_s
                   FROM t JOIN c ON t.operation = c.operation
                   LEFT JOIN breakdown b
                     ON b.trace_id = t.trace_id AND b.component = c.component)
        SELECT operation, component,
               percentile_cont(0.50) WITHIN GROUP (ORDER BY dur_s) AS p50_s,
               percentile_cont(0.95) WITHIN GROUP (ORDER BY dur_s) AS p95_s,
               percentile_cont(0.99) WITHIN GROUP (ORDER BY dur_s) AS p99_s,
               avg(dur_s) AS mean_s,
               sum(dur_s) / nullif(sum(total_s), 0) AS share
        FROM x GROUP BY operation, component ORDER BY operation, share DESC
    """,
    # outcomes and end-to-end percentiles per minute of request start
    "timeline": f"""
        SELECT CAST(floor(start_ns / 60e9) AS BIGINT) * 60 AS minute_s,
               {_OUTCOME_COUNTS},
               percentile_cont(0.50) WITHIN GROUP (ORDER BY dur_s) AS p50_s,
               percentile_cont(0.95) WITHIN GROUP (ORDER BY dur_s) AS p95_s
        FROM traces WHERE {_REQ} GROUP BY 1 ORDER BY 1
    """,
    # per host and service: records, errors, spans and span-duration percentiles (seconds)
    "hosts": """
        WITH e AS (SELECT host, service, count(*) AS events,
                          sum(CASE WHEN level IN ('ERROR', 'CRITICAL') THEN 1 ELSE 0 END) AS errors
                   FROM events GROUP BY host, service),
             s AS (SELECT host, service, count(*) AS spans,
                          percentile_cont(0.50) WITHIN GROUP (ORDER BY (end_ns - start_ns) / 1e9)
                            AS span_p50_s,
                          percentile_cont(0.95) WITHIN GROUP (ORDER BY (end_ns - start_ns) / 1e9)
                            AS span_p95_s
                   FROM spans GROUP BY host, service)
        SELECT e.host, e.service, e.events, e.errors, coalesce(s.spans, 0) AS spans,
               s.span_p50_s, s.span_p95_s
        FROM e LEFT JOIN s ON e.host = s.host AND e.service = s.service
        ORDER BY e.host, e.events DESC
    """,
    # root causes: failed requests counted once, under their first error's template
    "errors": f"""
        SELECT coalesce(t.error_service, 'api') AS component,
               coalesce(m.template, t.error) AS template,
               count(*) AS failed_requests,
               min(t.request_id) AS example_request_id
        FROM traces t LEFT JOIN error_templates m ON m.trace_id = t.trace_id
        WHERE t.outcome = 'failed' AND t.{_REQ}
        GROUP BY 1, 2 ORDER BY failed_requests DESC, component, template
    """,
    "slowest": f"""
        SELECT trace_id, request_id, operation, outcome, start_ns, dur_s, error, instance_uuid,
               http_status, outcome_reason, n_error_records, first_error
        FROM traces WHERE {_REQ} ORDER BY dur_s DESC, trace_id LIMIT 25
    """,
    "failed": f"""
        SELECT trace_id, request_id, operation, outcome, start_ns, dur_s, error, instance_uuid,
               http_status, outcome_reason, n_error_records, first_error
        FROM traces WHERE {_REQ} AND outcome = 'failed' ORDER BY start_ns, trace_id LIMIT 200
    """,
    "phases": """
        SELECT service, phase, count(*) AS count,
               percentile_cont(0.50) WITHIN GROUP (ORDER BY dur_s) AS p50_s,
               percentile_cont(0.95) WITHIN GROUP (ORDER BY dur_s) AS p95_s,
               max(dur_s) AS max_s
        FROM phases GROUP BY service, phase ORDER BY service, p50_s DESC
    """,
    "locks": """
        SELECT lock_name, count(*) AS waits, max(lock_waited_s) AS max_waited_s,
               sum(lock_waited_s) AS total_waited_s
        FROM events WHERE lock_waited_s IS NOT NULL
        GROUP BY lock_name ORDER BY total_waited_s DESC, lock_name LIMIT 20
    """,
    "rpc": """
        SELECT rpc_topic AS topic, rpc_kind AS kind, count(*) AS messages
        FROM events WHERE rpc_kind IN ('call', 'cast')
        GROUP BY 1, 2 ORDER BY messages DESC, topic LIMIT 30
    """,
    # clock offsets applied per host and day (multi-host runs)
    "clocks": """
        SELECT day, host, reference, offset_s, uncertainty_s, status, applied, n_constraints,
               violations_before, violations_after, dropped, note
        FROM clock_offsets ORDER BY day, host
    """,
    "ingest_totals": """
        SELECT kind, severity, sum("count") AS count, count(*) AS files
        FROM ingest_stats GROUP BY kind, severity ORDER BY severity, kind
    """,
}

_CLIENT_JOIN = """
    WITH r AS (SELECT * FROM requests WHERE create_http_status IS NOT NULL),
         j AS (
           SELECT r.name, r.server_id, r.outcome AS client_outcome, r.api_s, r.create_s,
                  r.submit_ns, r.active_ns,
                  coalesce(g.trace_id, q.trace_id) AS trace_id,
                  coalesce(g.outcome, q.outcome) AS server_outcome,
                  coalesce(g.dur_s, q.dur_s) AS server_dur_s,
                  coalesce(g.start_ns, q.start_ns) AS t_start_ns,
                  coalesce(g.end_ns, q.end_ns) AS t_end_ns,
                  coalesce(g.end_exact, q.end_exact) AS t_end_exact,
                  r.delete_s, coalesce(gd.dur_s, qd.dur_s) AS server_delete_s
           FROM r
           LEFT JOIN traces g ON g.trace_id = r.global_request_id
           LEFT JOIN traces q ON q.trace_id = r.request_id
           LEFT JOIN traces gd ON gd.trace_id = r.delete_global_request_id
           LEFT JOIN traces qd ON qd.trace_id = r.delete_request_id)
"""

#: Client records (``requests``, written by ``stacklens run``) joined to server traces by the
#: request id the client sent (global request id) or the one nova returned. ``before_server_s``:
#: client submit to the first server record (connection pool, network, nova-api queue);
#: ``polling_delay_s``: server completion to ACTIVE seen by the client. Deletes: the client's
#: ``delete_s`` (DELETE issued to DELETED/404 seen) beside the server's (to the last delete-work
#: record: nova saves the instance DELETED, which is what the client sees, before the resource
#: tracker and placement cleanup that ends the server-side delete).
CLIENT_QUERIES: dict[str, str] = {
    "client_server_summary": _CLIENT_JOIN + """
        SELECT count(*) AS requests,
               sum(CASE WHEN trace_id IS NOT NULL THEN 1 ELSE 0 END) AS found,
               sum(CASE WHEN client_outcome = 'ok' AND server_outcome IN ('success', 'retried')
                        THEN 1 ELSE 0 END) AS both_ok,
               sum(CASE WHEN trace_id IS NOT NULL AND (client_outcome = 'ok') <>
                        (server_outcome IN ('success', 'retried')) THEN 1 ELSE 0 END) AS disagree,
               percentile_cont(0.50) WITHIN GROUP (ORDER BY create_s) AS client_create_p50_s,
               percentile_cont(0.50) WITHIN GROUP (ORDER BY server_dur_s) AS server_p50_s,
               percentile_cont(0.50) WITHIN GROUP (ORDER BY (t_start_ns - submit_ns) / 1e9)
                 AS before_server_p50_s,
               percentile_cont(0.50) WITHIN GROUP (ORDER BY CASE WHEN t_end_exact
                 THEN (active_ns - t_end_ns) / 1e9 END) AS polling_delay_p50_s,
               percentile_cont(0.50) WITHIN GROUP (ORDER BY delete_s) AS client_delete_p50_s,
               percentile_cont(0.50) WITHIN GROUP (ORDER BY server_delete_s)
                 AS server_delete_p50_s
        FROM j
    """,
    "client_server": _CLIENT_JOIN + """
        SELECT name, server_id, trace_id, client_outcome, server_outcome, api_s, create_s,
               server_dur_s, (t_start_ns - submit_ns) / 1e9 AS before_server_s,
               CASE WHEN t_end_exact THEN (active_ns - t_end_ns) / 1e9 END AS polling_delay_s
        FROM j ORDER BY create_s DESC NULLS LAST, name LIMIT 500
    """,
}
