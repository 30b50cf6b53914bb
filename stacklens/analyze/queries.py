"""The report's analyses, declared: one :class:`~stacklens.analyze.section.Section` per query
over ``traces``, ``breakdown``, ``spans``, ``events``, ``phases``, ``error_templates`` ...
(see :mod:`stacklens.schema`), in report order. Written in the SQL subset that DuckDB and Spark
share (``percentile_cont(...) WITHIN GROUP (ORDER BY ...)``, ``CASE``, ``GROUP BY``, window
functions), so the same text runs on Spark over the Parquet tables (:mod:`stacklens.analyze.spark`).

To add an analysis or a report section: declare it in :data:`SECTIONS` (this module, or a
module whose tuple is added to it) and test it; the builder puts its rows in ``report.json``
and the terminal and HTML renderers show it as a table from its declared columns.

*Requests* are traces with an API access line or a client line (``http_status`` known); traces
of background work (periodic tasks, RPC without an API request) are counted apart and never enter
success, failure or latency figures.

Headline rates (section ``summary``; the one definition the report uses). Outcomes are those of
:mod:`stacklens.trace.classify` (:data:`stacklens.vocab.OUTCOMES`)::

    decided        = requests - rejected - unknown      (= success + retried + failed)
    success_rate   = (success + retried) / decided      (the cloud did what was asked)
    failure_rate   = failed / decided
    retry_rate     = retried / decided
    rejected_rate  = rejected / requests                (4xx: the cloud refused, e.g. a poll of a
                                                         deleted server; neither success nor failure)
    unknown_rate   = unknown / requests                 (completion not in the logs)
    window_s       = last request end - first request start (0 without requests)
    throughput_rps = (success + retried) / window_s     (NULL when the window is 0)

Rates are fractions in [0, 1], NULL when their denominator is 0. Rejected and unknown requests
are left out of the success rate because they say nothing about whether the cloud works: a 404
on a deleted server is the API doing its job, and an unlogged completion is missing evidence.
"""

from __future__ import annotations

from typing import Any

from stacklens.analyze.broker_sections import BROKER_SECTIONS  # issue 8
from stacklens.analyze.client_sections import CLIENT_SECTIONS
from stacklens.analyze.config_sections import CONFIG_SECTIONS  # config advice (issue 8)
from stacklens.analyze.db_sections import DB_SECTIONS
from stacklens.analyze.ingest_sections import INGEST_SECTIONS
from stacklens.analyze.neutron_sections import NEUTRON_SECTIONS  # issue 13
from stacklens.analyze.resource_sections import RESOURCE_SECTIONS
from stacklens.analyze.section import Column, Rows, Section
from stacklens.vocab import DONE_OUTCOMES, ERROR_LEVELS, OUTCOMES, RPC_SENDS

__all__ = ["BREAKDOWN_OPS", "CLIENT_QUERIES", "QUERIES", "SECTIONS", "TRACE_COLUMNS"]

#: The latency breakdown keeps the operations that take the most time in all.
BREAKDOWN_OPS = 15

_REQ = "http_status IS NOT NULL"


def _in(values: tuple[str, ...]) -> str:
    return "(" + ", ".join(f"'{v}'" for v in values) + ")"


_OUTCOME_COUNTS = ",\n".join(
    f"coalesce(sum(CASE WHEN outcome = '{o}' THEN 1 ELSE 0 END), 0) AS {o}" for o in OUTCOMES
)
_OUTCOME_COLUMNS = tuple(Column(o, "count", f"requests whose outcome is {o}") for o in OUTCOMES)
_DONE = " + ".join(DONE_OUTCOMES)
_DECIDED = f"CAST({_DONE} + failed AS DOUBLE)"


def _p(q: str, what: str) -> Column:
    return Column(f"{q}_s", "s", f"{q} of {what}")


_SUMMARY_RATES = ("success_rate", "failure_rate", "retry_rate", "rejected_rate", "unknown_rate")


def _summary(rows: Rows) -> dict[str, Any]:
    s = rows[0]
    return {
        "window": {"start": s["start"], "end": s["end"], "dur_s": s["window_s"]},
        "summary": {
            "traces": s["traces"],
            "background_traces": s["background_traces"],
            "by_outcome": {o: int(s[o]) for o in OUTCOMES},
            "decided": int(s["decided"]),
            **{k: s[k] for k in _SUMMARY_RATES},
            "throughput_rps": s["throughput_rps"],
        },
    }


SUMMARY = Section(
    "summary", "Summary", "Headline counts and rates over requests (one row).",
    f"""
        WITH s AS (
          SELECT count(*) AS traces,
                 {_OUTCOME_COUNTS},
                 min(start_ns) AS start_ns, max(end_ns) AS end_ns
          FROM traces WHERE {_REQ}),
        w AS (
          SELECT s.*,
                 CASE WHEN traces > 0 AND end_ns > start_ns THEN (end_ns - start_ns) / 1e9
                      ELSE 0.0 END AS window_s
          FROM s)
        SELECT w.*,
               {_DONE} + failed AS decided,
               ({_DONE}) / nullif({_DECIDED}, 0) AS success_rate,
               failed / nullif({_DECIDED}, 0) AS failure_rate,
               retried / nullif({_DECIDED}, 0) AS retry_rate,
               rejected / nullif(CAST(traces AS DOUBLE), 0) AS rejected_rate,
               "unknown" / nullif(CAST(traces AS DOUBLE), 0) AS unknown_rate,
               ({_DONE}) / nullif(window_s, 0) AS throughput_rps,
               (SELECT count(*) FROM traces WHERE NOT ({_REQ})) AS background_traces
        FROM w
    """,
    (
        Column("traces", "count", "requests (traces with an HTTP status)", "requests"),
        *_OUTCOME_COLUMNS,
        Column("start_ns", "ns", "first request start", iso_key="start"),
        Column("end_ns", "ns", "last request end", iso_key="end"),
        Column("window_s", "s", "last request end - first request start; 0 without requests"),
        Column("decided", "count", "success + retried + failed"),
        Column("success_rate", "fraction", "(success + retried) / decided"),
        Column("failure_rate", "fraction", "failed / decided"),
        Column("retry_rate", "fraction", "retried / decided"),
        Column("rejected_rate", "fraction", "rejected / requests"),
        Column("unknown_rate", "fraction", "unknown / requests"),
        Column("throughput_rps", "1/s", "(success + retried) / window_s"),
        Column("background_traces", "count", "traces without an API request (periodic, RPC)"),
    ),
    place=_summary,
)

COMPONENTS = Section(
    "components", "Where the time goes, per operation",
    "Per operation and component, over successful requests: percentiles of the time each trace "
    "spent in the component (0 when it does not appear in a trace) and the component's share of "
    f"all time; the {BREAKDOWN_OPS} operations with the most time in all, heaviest first.",
    f"""
        WITH t AS (SELECT trace_id, operation, dur_s FROM traces
                   WHERE {_REQ} AND outcome IN {_in(DONE_OUTCOMES)}),
             c AS (SELECT DISTINCT t.operation, b.component
                   FROM breakdown b JOIN t ON b.trace_id = t.trace_id),
             x AS (SELECT t.operation, c.component, t.trace_id,
                          coalesce(b.dur_s, 0.0) AS dur_s, t.dur_s AS total_s
                   FROM t JOIN c ON t.operation = c.operation
                   LEFT JOIN breakdown b
                     ON b.trace_id = t.trace_id AND b.component = c.component),
             o AS (SELECT operation, row_number() OVER (
                            ORDER BY coalesce(sum(dur_s), 0) DESC, count(*) DESC, operation)
                          AS heavy_rank
                   FROM traces WHERE {_REQ} GROUP BY operation),
             r AS (SELECT x.operation, x.component,
                          percentile_cont(0.50) WITHIN GROUP (ORDER BY x.dur_s) AS p50_s,
                          percentile_cont(0.95) WITHIN GROUP (ORDER BY x.dur_s) AS p95_s,
                          percentile_cont(0.99) WITHIN GROUP (ORDER BY x.dur_s) AS p99_s,
                          avg(x.dur_s) AS mean_s,
                          sum(x.dur_s) / nullif(sum(x.total_s), 0) AS share
                   FROM x GROUP BY x.operation, x.component)
        SELECT r.* FROM r JOIN o ON r.operation = o.operation
        WHERE o.heavy_rank <= {BREAKDOWN_OPS}
        ORDER BY o.heavy_rank, r.share DESC, r.component
    """,
    (
        Column("operation", "name", "API operation (e.g. server.create)"),
        Column("component", "name", "service, or 'between components' (time no span covers)"),
        _p("p50", "the time per trace in the component"),
        _p("p95", "the time per trace in the component"),
        _p("p99", "the time per trace in the component"),
        Column("mean_s", "s", "mean time per trace in the component", "mean"),
        Column("share", "fraction", "the component's part of the operation's total time"),
    ),
)

TIMELINE = Section(
    "timeline", "Outcomes per minute",
    "Requests by outcome and end-to-end percentiles per minute of request start.",
    f"""
        SELECT CAST(floor(start_ns / 60e9) AS BIGINT) * 60000000000 AS minute_ns,
               {_OUTCOME_COUNTS},
               percentile_cont(0.50) WITHIN GROUP (ORDER BY dur_s) AS p50_s,
               percentile_cont(0.95) WITHIN GROUP (ORDER BY dur_s) AS p95_s
        FROM traces WHERE {_REQ} GROUP BY 1 ORDER BY 1
    """,
    (
        Column("minute_ns", "ns", "the minute of request start (null for untimed logs)",
               iso_key="minute"),
        *_OUTCOME_COLUMNS,
        _p("p50", "end-to-end request time"),
        _p("p95", "end-to-end request time"),
    ),
    terminal=False,
)

OPERATIONS = Section(
    "operations", "Operations (end-to-end seconds)",
    "Per API operation: requests by outcome and end-to-end percentiles.",
    f"""
        SELECT operation, count(*) AS count,
               {_OUTCOME_COUNTS},
               percentile_cont(0.50) WITHIN GROUP (ORDER BY dur_s) AS p50_s,
               percentile_cont(0.95) WITHIN GROUP (ORDER BY dur_s) AS p95_s,
               percentile_cont(0.99) WITHIN GROUP (ORDER BY dur_s) AS p99_s,
               sum(dur_s) AS total_s
        FROM traces WHERE {_REQ}
        GROUP BY operation ORDER BY count DESC, operation
    """,
    (
        Column("operation", "name", "API operation (e.g. server.create)"),
        Column("count", "count", "requests"),
        *_OUTCOME_COLUMNS,
        _p("p50", "end-to-end request time"),
        _p("p95", "end-to-end request time"),
        _p("p99", "end-to-end request time"),
        Column("total_s", "s", "sum of end-to-end request times", "total"),
    ),
)

#: The columns of a trace row (sections ``slowest`` and ``failed``).
TRACE_COLUMNS = (
    Column("trace_id", "id", "trace id (the request id, or a synthetic id)", "trace"),
    Column("request_id", "id", "the API request id (req-...)", "request id"),
    Column("operation", "name", "API operation"),
    Column("outcome", "name", "one of stacklens.vocab.OUTCOMES"),
    Column("start_ns", "ns", "request start", iso_key="start"),
    Column("dur_s", "s", "end-to-end request time", "dur"),
    Column("error", "text", "the first error message in causal order"),
    Column("instance_uuid", "id", "the server the request acts on", "instance"),
    Column("http_status", "count", "HTTP status of the API response", "HTTP"),
    Column("outcome_reason", "text", "why the outcome was chosen", "reason"),
    Column("n_error_records", "count", "ERROR/CRITICAL records of the trace", "errors"),
    Column("first_error", "text", "the first error record's logger and message"),
)
_TRACE_COLS = ", ".join(c.name for c in TRACE_COLUMNS)
_SLOWEST_SQL = f"SELECT {_TRACE_COLS} FROM traces WHERE {_REQ} ORDER BY dur_s DESC, trace_id LIMIT 25"
_FAILED_SQL = (f"SELECT {_TRACE_COLS} FROM traces WHERE {_REQ} AND outcome = 'failed' "
               "ORDER BY start_ns, trace_id LIMIT 200")


def _waterfalls(rows: Rows) -> dict[str, Any]:
    out: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        spans = out.setdefault(r.pop("trace_id"), [])
        if r["span_id"] is not None:
            r["end_exact"] = bool(r["end_exact"])
            spans.append(r)
    return {"waterfalls": out}


WATERFALLS = Section(
    "waterfalls", "Trace waterfall",
    "The timed spans of the first 100 failed and of the slowest traces, times relative to the "
    "trace's first span (report key: {trace_id: [span rows]}; a trace without timed spans: []).",
    f"""
        WITH f AS ({_FAILED_SQL}),
             ids AS (SELECT trace_id, start_ns FROM f
                     ORDER BY start_ns, trace_id LIMIT 100),
             sp AS (SELECT trace_id, span_id, parent_span_id, service, host, operation, start_ns,
                           end_ns, status, end_exact,
                           min(start_ns) OVER (PARTITION BY trace_id) AS t0
                    FROM spans
                    WHERE start_ns IS NOT NULL AND end_ns IS NOT NULL
                      AND trace_id IN (SELECT trace_id FROM ids
                                       UNION SELECT trace_id FROM ({_SLOWEST_SQL}) s))
        SELECT k.trace_id, sp.span_id, sp.parent_span_id, sp.service, sp.host, sp.operation,
               (sp.start_ns - sp.t0) / 1e9 AS start_s, (sp.end_ns - sp.start_ns) / 1e9 AS dur_s,
               sp.status, sp.end_exact
        FROM (SELECT trace_id FROM ids UNION SELECT trace_id FROM ({_SLOWEST_SQL}) s2) k
        LEFT JOIN sp ON sp.trace_id = k.trace_id
        ORDER BY k.trace_id, sp.start_ns, sp.span_id
    """,
    (
        Column("trace_id", "id", "the trace drawn"),
        Column("span_id", "id", "span id"),
        Column("parent_span_id", "id", "parent span id (null for the root)"),
        Column("service", "name", "service of the span"),
        Column("host", "name", "host of the span"),
        Column("operation", "name", "what the span does"),
        Column("start_s", "s", "span start after the trace's first span"),
        Column("dur_s", "s", "span duration"),
        Column("status", "name", "ok | error | unknown"),
        Column("end_exact", "bool", "the span's end is logged (else: its last event)"),
    ),
    place=_waterfalls, terminal=False,
)

SLOWEST = Section("slowest", "Slowest traces", "The 25 slowest requests.", _SLOWEST_SQL,
                  TRACE_COLUMNS, terminal=False)
FAILED = Section("failed", "Failed traces", "Failed requests by start (at most 200).",
                 _FAILED_SQL, TRACE_COLUMNS, terminal=False)

ERRORS = Section(
    "errors", "Failed requests by root cause (first error in causal order)",
    "Root causes: failed requests counted once, under their first error's template.",
    f"""
        SELECT coalesce(t.error_service, 'api') AS component,
               coalesce(m.template, t.error) AS template,
               count(*) AS failed_requests,
               min(t.request_id) AS example_request_id
        FROM traces t LEFT JOIN error_templates m ON m.trace_id = t.trace_id
        WHERE t.outcome = 'failed' AND t.{_REQ}
        GROUP BY 1, 2 ORDER BY failed_requests DESC, component, template
    """,
    (
        Column("component", "name", "service of the first error ('api' when none)"),
        Column("template", "text", "Drain3 template of the first error", "error template"),
        Column("failed_requests", "count", "failed requests with this cause", "failed"),
        Column("example_request_id", "id", "one of them", "example request id"),
    ),
)

PHASES = Section(
    "phases", "nova-compute phases (seconds)",
    "Phases inside a service (nova-compute's build steps) and their duration percentiles.",
    """
        SELECT service, phase, count(*) AS count,
               percentile_cont(0.50) WITHIN GROUP (ORDER BY dur_s) AS p50_s,
               percentile_cont(0.95) WITHIN GROUP (ORDER BY dur_s) AS p95_s,
               max(dur_s) AS max_s
        FROM phases GROUP BY service, phase ORDER BY service, p50_s DESC, phase
    """,
    (
        Column("service", "name", "service logging the phase"),
        Column("phase", "name", "phase name"),
        Column("count", "count", "phases seen"),
        _p("p50", "the phase's duration"),
        _p("p95", "the phase's duration"),
        Column("max_s", "s", "longest phase", "max"),
    ),
)

LOCKS = Section(
    "locks", "Lock waits",
    "oslo.concurrency locks by total time waited (the 20 most waited).",
    """
        SELECT lock_name, count(*) AS waits, max(lock_waited_s) AS max_waited_s,
               sum(lock_waited_s) AS total_waited_s
        FROM events WHERE lock_waited_s IS NOT NULL
        GROUP BY lock_name ORDER BY total_waited_s DESC, lock_name LIMIT 20
    """,
    (
        Column("lock_name", "name", "lock name", "lock"),
        Column("waits", "count", "acquisitions that logged a wait"),
        Column("max_waited_s", "s", "longest wait", "max waited"),
        Column("total_waited_s", "s", "all waits", "total waited"),
    ),
    terminal=False,
)

RPC = Section(
    "rpc", "RPC messages by topic",
    "oslo.messaging calls and casts sent, per topic (the 30 busiest; DEBUG logs only).",
    f"""
        SELECT rpc_topic AS topic, rpc_kind AS kind, count(*) AS messages
        FROM events WHERE rpc_kind IN {_in(RPC_SENDS)}
        GROUP BY 1, 2 ORDER BY messages DESC, topic, kind LIMIT 30
    """,
    (
        Column("topic", "name", "RPC topic"),
        Column("kind", "name", "call | cast"),
        Column("messages", "count", "messages sent"),
    ),
    terminal=False,
)

CLOCKS = Section(
    "clocks", "Clock skew (seconds added to each host's clock; violations before -> after)",
    "Clock offsets applied per host and day (multi-host runs).",
    """
        SELECT day, host, reference, offset_s, uncertainty_s, status, applied, n_constraints,
               violations_before, violations_after, dropped, note
        FROM clock_offsets ORDER BY day, host
    """,
    (
        Column("day", "name", "UTC day (YYYY-MM-DD)"),
        Column("host", "name", "host"),
        Column("reference", "name", "host whose clock the offsets are relative to"),
        Column("offset_s", "s", "seconds added to the host's timestamps", "offset"),
        Column("uncertainty_s", "s", "half-width of the offset's interval", "+-"),
        Column("status", "name", "how the offset was found"),
        Column("applied", "bool", "whether the offset was applied (uncertainty <= 0.5 s)"),
        Column("n_constraints", "count", "causal pairs used", "constraints"),
        Column("violations_before", "count", "pairs logged effect-before-cause, uncorrected"),
        Column("violations_after", "count", "the same after correction"),
        Column("dropped", "count", "pairs left out as inconsistent"),
        Column("note", "text", "why an offset was not applied"),
    ),
)

HOSTS = Section(
    "hosts", "Hosts",
    "Per host and service: records, errors, spans and span-duration percentiles.",
    f"""
        WITH e AS (SELECT host, service, count(*) AS events,
                          sum(CASE WHEN level IN {_in(ERROR_LEVELS)} THEN 1 ELSE 0 END) AS errors
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
        ORDER BY e.host, e.events DESC, e.service
    """,
    (
        Column("host", "name", "host"),
        Column("service", "name", "service"),
        Column("events", "count", "log records"),
        Column("errors", "count", "ERROR/CRITICAL records"),
        Column("spans", "count", "spans"),
        Column("span_p50_s", "s", "median span duration", "span p50"),
        Column("span_p95_s", "s", "p95 of span durations", "span p95"),
    ),
    terminal=False,
)

#: Every section, in report order (the HTML page's order; the terminal shows those marked).
SECTIONS: tuple[Section, ...] = (
    SUMMARY, COMPONENTS, TIMELINE, OPERATIONS, WATERFALLS, FAILED, SLOWEST, ERRORS,
    *CLIENT_SECTIONS, PHASES, LOCKS, RPC, CLOCKS, HOSTS, *INGEST_SECTIONS,
    *BROKER_SECTIONS, *DB_SECTIONS, *NEUTRON_SECTIONS,  # issues 8, 13
    *RESOURCE_SECTIONS,
    *CONFIG_SECTIONS,
)
if len({s.name for s in SECTIONS}) != len(SECTIONS):  # pragma: no cover - a declaration error
    raise ValueError("duplicate section names")

#: Query texts by section name, for the sections every traced run can answer (all but the
#: client join); kept for callers of the query texts (Spark, tests).
QUERIES: dict[str, str] = {s.name: s.sql for s in SECTIONS if not s.needs}
#: Query texts of the sections that need the client records (``requests``).
CLIENT_QUERIES: dict[str, str] = {s.name: s.sql for s in SECTIONS if s.needs}
