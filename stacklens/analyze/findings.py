"""Findings: the few facts that explain a run, each with its evidence, in words.

A finding is a dict ``{"rule": str, "severity": "critical" | "warning" | "info", "text": str,
"evidence": {name: number | str | {name: number}}}`` (JSON-ready). Each rule of :data:`RULES` is one SQL query over the
canonical tables (:mod:`stacklens.schema`; DuckDB SQL in the subset Spark SQL shares, see
:mod:`stacklens.analyze.sql`) plus a small Python function that turns the query's rows into zero
or one finding. Thresholds keep weak evidence (small counts) out: a rule that cannot show its
numbers says nothing. Rule docstrings cite what each detects and why (the project's field
notes, ``shared/docs/field-notes.md`` sections 2-7, and the OpenStack source named there).

Times are seconds (``_s``), instants ns since epoch UTC (``_ns``); counts are integers.
:func:`findings` never raises on a run whose optional tables (``requests``, ``clock_offsets``,
``phases``) are absent or whose tables lack a newer column: those rules are skipped.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import duckdb

from stacklens.analyze.findings_ids import REQUEST_ID_REUSE_SQL, request_id_reuse
from stacklens.vocab import DONE_OUTCOMES, ERROR_LEVELS

__all__ = ["RULES", "Rule", "findings"]

Finding = dict[str, Any]
_REQ = "http_status IS NOT NULL"
#: fewest requests / events a rule needs before it speaks
MIN_BUILDS = 20
MIN_FAILED = 5
MIN_CLIENT = 10


@dataclass(frozen=True)
class Rule:
    """One finding rule: ``sql`` over the tables in ``needs``; ``judge(rows)`` returns a finding
    or None. ``rows`` is a list of dicts (column -> value). ``unless``: rules whose finding says
    the same thing with better evidence; this rule is skipped when one of them fired."""

    name: str
    needs: tuple[str, ...]
    sql: str
    judge: Callable[[list[dict[str, Any]]], Finding | None]
    unless: tuple[str, ...] = ()


def _f(rule: str, severity: str, text: str, **evidence: Any) -> Finding:
    return {"rule": rule, "severity": severity, "text": text, "evidence": evidence}


def _n(x: float) -> str:
    """Thousands separators, no decimals: 15311.4 -> '15,311'."""
    return f"{x:,.0f}"


def _sec(x: float) -> str:
    return f"{x:,.0f} s" if abs(x) >= 100 else f"{x:.1f} s" if abs(x) >= 1 else f"{x:.3f} s"


# -- host concentration ---------------------------------------------------------------------
HOST_CONCENTRATION_SQL = """
    WITH hosts AS (SELECT DISTINCT host FROM events WHERE service = 'nova-compute'),
         attempts AS (
           SELECT s.host, t.trace_id,
                  row_number() OVER (PARTITION BY t.trace_id
                                     ORDER BY s.start_ns DESC, s.host) AS k
           FROM traces t JOIN spans s ON s.trace_id = t.trace_id
           WHERE t.operation = 'server.create' AND s.service = 'nova-compute'),
         builds AS (SELECT host, count(*) AS builds FROM attempts WHERE k = 1 GROUP BY host)
    SELECT h.host, coalesce(b.builds, 0) AS builds
    FROM hosts h LEFT JOIN builds b ON b.host = h.host
    ORDER BY builds DESC, h.host
"""


def host_concentration(rows: list[dict[str, Any]]) -> Finding | None:
    """Builds concentrated on few compute hosts (field notes 4, "Scheduler saturation": the filter
    scheduler refreshes host state from the database per request, and parallel requests or
    several scheduler workers place from a stale view, so a burst lands on the same hosts; nova
    ``scheduler/filter_scheduler.py``, ``host_subset_size``). Fires when >= 4 compute hosts log,
    >= 20 builds ran, and at most half the hosts took >= 90 % of the builds."""
    total = sum(r["builds"] for r in rows)
    if len(rows) < 4 or total < MIN_BUILDS:
        return None
    counts = [r["builds"] for r in rows]
    k, acc = 0, 0
    while acc < 0.9 * total:
        acc += counts[k]
        k += 1
    if k > len(rows) // 2:
        return None
    share = "all" if acc == total else f"{acc} of"
    top = "/".join(str(c) for c in counts[:k])
    return _f(
        "host_concentration", "warning",
        f"{k} of {len(rows)} compute hosts took {share} {total} builds ({top}) while "
        f"{sum(1 for c in counts if not c)} logging hosts took none: consistent with nova's "
        f"scheduler weighing hosts from a stale view (concurrent requests see the same free "
        f"resources)",
        compute_hosts=len(rows), hosts_used=sum(1 for c in counts if c), top_hosts=k,
        builds=total, builds_on_top=acc,
        per_host={r["host"]: r["builds"] for r in rows[:k]},
    )


# -- lock waits -------------------------------------------------------------------------------
LOCK_WAITS_SQL = """
    SELECT lock_name, count(*) AS waits, sum(lock_waited_s) AS total_waited_s,
           max(lock_waited_s) AS max_waited_s,
           (SELECT sum(lock_waited_s) FROM events WHERE lock_waited_s IS NOT NULL) AS all_waited_s
    FROM events WHERE lock_waited_s IS NOT NULL
    GROUP BY lock_name ORDER BY total_waited_s DESC, lock_name LIMIT 1
"""


def lock_waits(rows: list[dict[str, Any]]) -> Finding | None:
    """One oslo.concurrency lock that requests queued on (oslo_concurrency/lockutils.py logs
    'Lock "X" acquired by "f" :: waited N s'; field notes 4, "Software contention on a single
    compute node": nova's ``compute_resources`` lock serialises every claim and update of the
    resource tracker on a host). Fires when the most-waited lock has >= 10 waits and >= 60 s of
    waiting in total."""
    if not rows:
        return None
    r = rows[0]
    if r["waits"] < 10 or (r["total_waited_s"] or 0) < 60:
        return None
    return _f(
        "lock_waits", "warning",
        f"the `{r['lock_name']}` lock waited {_n(r['total_waited_s'])} s in total over "
        f"{r['waits']} acquisitions (longest {_sec(r['max_waited_s'])}; "
        f"{100 * r['total_waited_s'] / r['all_waited_s']:.0f}% of all lock waiting)",
        lock_name=r["lock_name"], waits=r["waits"], total_waited_s=r["total_waited_s"],
        max_waited_s=r["max_waited_s"], all_locks_waited_s=r["all_waited_s"],
    )


# -- client vs server: queueing before the API ----------------------------------------------
API_QUEUE_SQL = """
    WITH j AS (
      SELECT r.submit_ns, coalesce(g.start_ns, q.start_ns) AS t_start_ns
      FROM requests r
      LEFT JOIN traces g ON g.trace_id = r.global_request_id
      LEFT JOIN traces q ON q.trace_id = r.request_id
      WHERE r.create_http_status IS NOT NULL),
         edges AS (
      SELECT submit_ns AS ts_ns, 1 AS d FROM requests
      WHERE submit_ns IS NOT NULL AND accepted_ns IS NOT NULL
      UNION ALL
      SELECT accepted_ns AS ts_ns, -1 AS d FROM requests
      WHERE submit_ns IS NOT NULL AND accepted_ns IS NOT NULL),
         run AS (SELECT sum(d) OVER (ORDER BY ts_ns, d ROWS UNBOUNDED PRECEDING) AS inflight
                 FROM edges)
    SELECT count(*) AS n,
           percentile_cont(0.50) WITHIN GROUP (ORDER BY (t_start_ns - submit_ns) / 1e9) AS p50_s,
           percentile_cont(0.95) WITHIN GROUP (ORDER BY (t_start_ns - submit_ns) / 1e9) AS p95_s,
           (SELECT max(inflight) FROM run) AS peak_inflight,
           (SELECT count(DISTINCT concat(host, ':', CAST(pid AS VARCHAR))) FROM events
            WHERE service = 'nova-api' AND pid IS NOT NULL) AS api_processes
    FROM j WHERE t_start_ns IS NOT NULL AND submit_ns IS NOT NULL
"""


def api_queue(rows: list[dict[str, Any]]) -> Finding | None:
    """Creates that waited before nova-api logged anything for them (client ``requests`` records
    of ``stacklens run`` joined to traces by request id: client submit to the trace's first
    record). A wait of seconds while many creates are in flight (submit to response, peak) is
    queueing in front of the API: too few API workers (``osapi_compute_workers`` or the WSGI
    server's workers, field notes 7; "single-process API services", field notes 4); the
    processes nova-api logged from are counted (host:pid). Fires when >= 10 creates matched and
    the p50 wait is >= 1 s."""
    if not rows or (rows[0]["n"] or 0) < MIN_CLIENT or rows[0]["p50_s"] is None:
        return None
    r = rows[0]
    if r["p50_s"] < 1.0:
        return None
    procs = (f"; nova-api logged from {r['api_processes']} processes"
             if r["api_processes"] else "")
    peak = "" if r["peak_inflight"] is None else f"; up to {r['peak_inflight']} in flight"
    return _f(
        "api_queue", "warning",
        f"POST /servers waited {_sec(r['p50_s'])} (p50; p95 {_sec(r['p95_s'])}) before nova-api "
        f"handled it (client submit to nova-api's first record, {r['n']} creates"
        f"{peak}{procs}): too few API workers for the concurrent "
        f"clients (or the client's own connection limit)",
        creates=r["n"], wait_p50_s=r["p50_s"], wait_p95_s=r["p95_s"],
        peak_inflight=r["peak_inflight"], api_processes=r["api_processes"],
    )


# -- delete: client view vs server view -------------------------------------------------------
DELETE_GAP_SQL = """
    WITH j AS (
      SELECT r.gone_ns, r.delete_s, coalesce(g.end_ns, q.end_ns) AS t_end_ns,
             coalesce(g.dur_s, q.dur_s) AS server_s
      FROM requests r
      LEFT JOIN traces g ON g.trace_id = r.delete_global_request_id
      LEFT JOIN traces q ON q.trace_id = r.delete_request_id
      WHERE r.gone_ns IS NOT NULL)
    SELECT count(*) AS n,
           sum(CASE WHEN gone_ns < t_end_ns THEN 1 ELSE 0 END) AS gone_before_end,
           percentile_cont(0.50) WITHIN GROUP (ORDER BY (t_end_ns - gone_ns) / 1e9) AS gap_p50_s,
           percentile_cont(0.50) WITHIN GROUP (ORDER BY delete_s) AS client_p50_s,
           percentile_cont(0.50) WITHIN GROUP (ORDER BY server_s) AS server_p50_s
    FROM j WHERE t_end_ns IS NOT NULL
"""


def delete_gap(rows: list[dict[str, Any]]) -> Finding | None:
    """Deletes the client saw finished while nova-compute still worked: nova saves the instance
    DELETED (what ``GET /servers/{id}`` returns) in ``compute/manager.py``
    ``_delete_instance`` before the resource tracker update and placement cleanup
    (``_complete_deletion``) end; field notes 2. Fires when >= 10 deletes matched and, at p50,
    the server ended >= 1 s after the client saw DELETED/404."""
    if not rows or (rows[0]["n"] or 0) < MIN_CLIENT or rows[0]["gap_p50_s"] is None:
        return None
    r = rows[0]
    if r["gap_p50_s"] < 1.0:
        return None
    return _f(
        "delete_gap", "info",
        f"clients saw {r['gone_before_end']} of {r['n']} deletes finished before nova did: "
        f"the server-side delete ended {_sec(r['gap_p50_s'])} (p50) after the client saw "
        f"DELETED (client delete p50 {_sec(r['client_p50_s'])}, server "
        f"{_sec(r['server_p50_s'])}): compute cleanup continues after the row is marked deleted",
        deletes=r["n"], gone_before_end=r["gone_before_end"], gap_p50_s=r["gap_p50_s"],
        client_delete_p50_s=r["client_p50_s"], server_delete_p50_s=r["server_p50_s"],
    )


# -- failures under one root cause ------------------------------------------------------------
FAILURE_CAUSE_SQL = f"""
    WITH f AS (
      SELECT coalesce(t.error_service, 'api') AS component,
             coalesce(m.template, t.error, t.outcome_reason) AS template, t.trace_id,
             t.start_ns
      FROM traces t LEFT JOIN error_templates m ON m.trace_id = t.trace_id
      WHERE t.outcome = 'failed' AND t.{_REQ})
    SELECT component, template, count(*) AS failed, min(start_ns) AS first_ns,
           max(start_ns) AS last_ns, (SELECT count(*) FROM f) AS all_failed
    FROM f GROUP BY component, template ORDER BY failed DESC, component, template LIMIT 1
"""


def _when(first_ns: int | None, last_ns: int | None) -> str:
    if first_ns is None or last_ns is None:
        return ""
    a, b = (datetime.fromtimestamp(x / 1e9, UTC).strftime("%Y-%m-%d %H:%M") for x in
            (first_ns, last_ns))
    return f" ({a} .. {b} UTC)" if a != b else f" ({a} UTC)"


def failure_cause(rows: list[dict[str, Any]]) -> Finding | None:
    """Failed requests concentrated under one root cause (first error in causal order, mined to
    a template; field notes 4: "count each failed request once, under the first error in its
    causal chain"). Fires when >= 5 requests failed and one cause holds >= 50 % of them."""
    if not rows or (rows[0]["all_failed"] or 0) < MIN_FAILED:
        return None
    r = rows[0]
    if r["failed"] < 0.5 * r["all_failed"]:
        return None
    tpl = str(r["template"] or "")[:160]
    return _f(
        "failure_cause", "critical",
        f"{r['failed']} of {r['all_failed']} failed requests share one root cause in "
        f"{r['component']}{_when(r['first_ns'], r['last_ns'])}: {tpl}",
        failed=r["failed"], all_failed=r["all_failed"], component=r["component"], template=tpl,
        first_ns=r["first_ns"], last_ns=r["last_ns"],
    )


# -- failures on one host ---------------------------------------------------------------------
FAILURE_HOST_SQL = f"""
    WITH f AS (
      SELECT DISTINCT t.trace_id, t.error_service AS service, s.host
      FROM traces t JOIN spans s ON s.trace_id = t.trace_id AND s.status = 'error'
      WHERE t.outcome = 'failed' AND t.{_REQ} AND s.service = t.error_service),
         svc_hosts AS (SELECT service, count(DISTINCT host) AS hosts FROM spans GROUP BY service),
         per AS (SELECT service, host, count(*) AS failed FROM f GROUP BY service, host),
         tot AS (SELECT service, count(DISTINCT trace_id) AS all_failed FROM f GROUP BY service)
    SELECT per.service, per.host, per.failed, tot.all_failed, h.hosts
    FROM per JOIN tot ON tot.service = per.service JOIN svc_hosts h ON h.service = per.service
    WHERE h.hosts >= 2
    ORDER BY per.failed DESC, per.service, per.host LIMIT 1
"""


def failure_host(rows: list[dict[str, Any]]) -> Finding | None:
    """Failures of a service that runs on several hosts, concentrated on one of them (a sick
    node: disk, agent down, libvirt; field notes 4). A service that runs on one host only says
    nothing about hosts, so it is left out. Fires when >= 5 requests failed in that service and
    one of its >= 2 hosts holds >= 80 % of them."""
    if not rows or (rows[0]["all_failed"] or 0) < MIN_FAILED:
        return None
    r = rows[0]
    if r["failed"] < 0.8 * r["all_failed"]:
        return None
    return _f(
        "failure_host", "critical",
        f"{r['failed']} of {r['all_failed']} requests that failed in {r['service']} failed on "
        f"host {r['host']} ({r['service']} ran on {r['hosts']} hosts)",
        service=r["service"], host=r["host"], failed=r["failed"], all_failed=r["all_failed"],
        hosts=r["hosts"],
    )


# -- a component dominating the breakdown -----------------------------------------------------
DOMINANT_COMPONENT_SQL = f"""
    WITH t AS (SELECT trace_id, operation, dur_s FROM traces
               WHERE {_REQ} AND outcome IN {DONE_OUTCOMES!r}),
         op AS (SELECT operation, count(*) AS n, sum(dur_s) AS total_s FROM t
                GROUP BY operation ORDER BY total_s DESC, operation LIMIT 1)
    SELECT op.operation, op.n, op.total_s, b.component, sum(b.dur_s) AS comp_s
    FROM op JOIN t ON t.operation = op.operation
    JOIN breakdown b ON b.trace_id = t.trace_id
    GROUP BY op.operation, op.n, op.total_s, b.component
    ORDER BY comp_s DESC, b.component LIMIT 1
"""


def dominant_component(rows: list[dict[str, Any]]) -> Finding | None:
    """One component taking most of the time of the operation that takes the most time in all
    (the latency breakdown of successful requests; field notes 2: each service's part of a
    boot). Fires when >= 20 requests and one component holds >= 60 % of their time."""
    if not rows or rows[0]["n"] < MIN_BUILDS or not rows[0]["total_s"]:
        return None
    r = rows[0]
    share = r["comp_s"] / r["total_s"]
    if share < 0.6:
        return None
    what = ("time between components (queues, RPC, polling)"
            if r["component"] == "between components" else r["component"])
    return _f(
        "dominant_component", "info",
        f"{what} takes {100 * share:.0f}% of the time of {r['operation']} "
        f"({_n(r['comp_s'])} of {_n(r['total_s'])} s over {r['n']} successful requests)",
        operation=r["operation"], component=r["component"], requests=r["n"], share=share,
        component_s=r["comp_s"], total_s=r["total_s"],
    )


# -- retries / reschedules --------------------------------------------------------------------
RETRIES_SQL = f"""
    SELECT sum(CASE WHEN retries > 0 THEN 1 ELSE 0 END) AS rescheduled,
           sum(retries) AS reschedules,
           sum(CASE WHEN retries > 0 AND outcome = 'failed' THEN 1 ELSE 0 END) AS then_failed,
           count(*) AS requests
    FROM traces WHERE {_REQ}
"""


def retries(rows: list[dict[str, Any]]) -> Finding | None:
    """Builds rescheduled to another host after failing on the first (nova
    ``compute/manager.py`` raises RescheduledException and conductor picks an alternate; field
    notes 2 step 5 and 4, "retries from stale views"). Fires at >= 3 rescheduled requests."""
    if not rows or (rows[0]["rescheduled"] or 0) < 3:
        return None
    r = rows[0]
    return _f(
        "retries", "warning",
        f"{r['rescheduled']} requests were rescheduled ({r['reschedules']} reschedules; "
        f"{r['then_failed']} failed in the end)",
        rescheduled=r["rescheduled"], reschedules=r["reschedules"],
        then_failed=r["then_failed"], requests=r["requests"],
    )


# -- RPC timeouts -----------------------------------------------------------------------------
RPC_TIMEOUT_SQL = f"""
    SELECT service, count(*) AS records, count(DISTINCT host) AS hosts,
           min(ts_ns) AS first_ns, max(ts_ns) AS last_ns
    FROM events
    WHERE level IN {(*ERROR_LEVELS, 'WARNING')!r}
      AND (message LIKE '%MessagingTimeout%' OR continuation LIKE '%MessagingTimeout%')
      AND message NOT LIKE 'Timed out waiting for nova-conductor%'
    GROUP BY service ORDER BY records DESC, service
"""


def rpc_timeouts(rows: list[dict[str, Any]]) -> Finding | None:
    """oslo.messaging ``MessagingTimeout`` (``oslo_messaging/exceptions.py``; raised when an RPC
    call gets no reply within ``rpc_response_timeout``; field notes 4, "Lost or late RPC
    messages", 5). Fires at >= 2 WARNING/ERROR records naming it. Not counted: nova's start-up
    wait for conductor (``nova/conductor/api.py`` ``wait_until_ready`` catches MessagingTimeout
    and logs "Timed out waiting for nova-conductor. ... Reattempting"), which is no request's
    failure."""
    n = sum(r["records"] for r in rows)
    if n < 2:
        return None
    first = min((r["first_ns"] for r in rows if r["first_ns"] is not None), default=None)
    last = max((r["last_ns"] for r in rows if r["last_ns"] is not None), default=None)
    svcs = ", ".join(f"{r['service']} {r['records']}" for r in rows[:4])
    more = f" and {len(rows) - 4} more services" if len(rows) > 4 else ""
    return _f(
        "rpc_timeouts", "critical",
        f"{n} WARNING/ERROR records report an RPC MessagingTimeout ({svcs}{more})"
        f"{_when(first, last)}: RPC replies lost or later than rpc_response_timeout",
        records=n, services=len(rows), first_ns=first, last_ns=last,
        per_service={r["service"]: r["records"] for r in rows},
    )


# -- delete cleanup after the instance is gone (no client records) ---------------------------
DELETE_CLEANUP_SQL = """
    SELECT phase, count(*) AS n,
           percentile_cont(0.50) WITHIN GROUP (ORDER BY dur_s) AS p50_s,
           percentile_cont(0.95) WITHIN GROUP (ORDER BY dur_s) AS p95_s
    FROM phases WHERE service = 'nova-compute' AND phase IN ('teardown', 'resource_cleanup')
    GROUP BY phase
"""


def delete_cleanup(rows: list[dict[str, Any]]) -> Finding | None:
    """Deletes whose compute-side cleanup outlasts the teardown: nova-compute's
    ``_delete_instance`` (``nova/compute/manager.py``) destroys the guest and the instance row
    (what a client polling ``GET /servers/{id}`` sees as gone), then ``_complete_deletion``
    updates the resource tracker under the ``compute_resources`` lock and deletes placement
    allocations; the capacity is free only then (phases ``teardown``: "Terminating instance"
    to "Instance destroyed"; ``resource_cleanup``: destroyed to "Deleted allocations"). Fires
    when >= 10 deletes have both phases, the cleanup p50 is >= 1 s and more than twice the
    teardown p50. Skipped when client records gave :func:`delete_gap`."""
    by = {r["phase"]: r for r in rows}
    td, rc = by.get("teardown"), by.get("resource_cleanup")
    if td is None or rc is None or rc["n"] < MIN_CLIENT or rc["p50_s"] is None:
        return None
    if rc["p50_s"] < 1.0 or rc["p50_s"] <= 2 * (td["p50_s"] or 0.0):
        return None
    return _f(
        "delete_cleanup", "info",
        f"nova-compute deletes spent {_sec(rc['p50_s'])} (p50; p95 {_sec(rc['p95_s'])}, "
        f"{rc['n']} deletes) in resource-tracker and placement cleanup after the guest was "
        f"destroyed (teardown p50 {_sec(td['p50_s'])}): a delete looks done to clients well "
        f"before the host's capacity is free",
        deletes=rc["n"], cleanup_p50_s=rc["p50_s"], cleanup_p95_s=rc["p95_s"],
        teardown_p50_s=td["p50_s"],
    )


# -- outcomes the logs cannot decide ----------------------------------------------------------
UNKNOWN_SQL = f"""
    SELECT operation, count(*) AS requests,
           sum(CASE WHEN outcome = 'unknown' THEN 1 ELSE 0 END) AS unknown,
           (SELECT count(*) FROM traces WHERE {_REQ}) AS all_requests,
           (SELECT sum(CASE WHEN outcome = 'unknown' THEN 1 ELSE 0 END) FROM traces
            WHERE {_REQ}) AS all_unknown
    FROM traces WHERE {_REQ}
    GROUP BY operation ORDER BY unknown DESC, operation LIMIT 3
"""


def unknown_outcomes(rows: list[dict[str, Any]]) -> Finding | None:
    """Requests whose completion is not in the logs (outcome ``unknown``,
    :mod:`stacklens.trace.classify`): their success rate and latency are missing evidence, not
    success (logs cut, a service's log absent, INFO-only logs of a release whose completion
    marker is DEBUG). Fires when >= 10 requests and >= 20 % of all requests are unknown."""
    if not rows or (rows[0]["all_unknown"] or 0) < 10:
        return None
    r = rows[0]
    if r["all_unknown"] < 0.2 * r["all_requests"]:
        return None
    ops = ", ".join(f"{x['operation']} {x['unknown']} of {x['requests']}" for x in rows
                    if x["unknown"])
    return _f(
        "unknown_outcomes", "warning",
        f"{r['all_unknown']} of {r['all_requests']} requests have no logged completion (outcome "
        f"unknown: {ops}): their success and latency are not in these logs",
        unknown=r["all_unknown"], requests=r["all_requests"],
    )


# -- clock offsets ----------------------------------------------------------------------------
CLOCKS_SQL = """
    SELECT host, day, offset_s, uncertainty_s, status, applied, violations_before,
           violations_after
    FROM clock_offsets WHERE status <> 'reference'
    ORDER BY abs(coalesce(offset_s, 0)) DESC, host, day
"""


def clock_offsets(rows: list[dict[str, Any]]) -> Finding | None:
    """Host clocks found offset by the causal-pair solver (:mod:`stacklens.trace.skew`): a
    corrected offset >= 10 ms (applied) changes cross-host timing; hosts whose offset could not
    be pinned (no usable pair, one-sided bounds, or too uncertain to apply) keep raw times, so
    their cross-host order is unchecked. Fires when either exists. Violations are per day (the
    table repeats a day's count on each host row)."""
    off = [r for r in rows if r["applied"] and r["offset_s"] is not None
           and abs(r["offset_s"]) >= 0.010]
    loose = [r for r in rows if not r["applied"]]
    if not off and not loose:
        return None
    parts = []
    if off:
        ex = ", ".join(f"{r['day']} {r['host']} {r['offset_s']:+.3f} s +- "
                       f"{r['uncertainty_s']:.3f}" for r in off[:4])
        more = f" and {len(off) - 4} more" if len(off) > 4 else ""
        days = {r["day"]: (r["violations_before"] or 0, r["violations_after"] or 0) for r in off}
        vb = sum(v[0] for v in days.values())
        va = sum(v[1] for v in days.values())
        parts.append(f"clock offsets corrected on {len(off)} host-days ({ex}{more}); causal "
                     f"violations on those {len(days)} days {vb} -> {va}")
    if loose:
        ex = ", ".join(f"{r['day']} {r['host']} ({r['status']})" for r in loose[:4])
        more = f" and {len(loose) - 4} more" if len(loose) > 4 else ""
        parts.append(f"{len(loose)} host-days kept raw times, offset not pinned: {ex}{more}")
    return _f(
        "clock_offsets", "info", "; ".join(parts),
        corrected=len(off), max_abs_offset_s=max((abs(r["offset_s"]) for r in off), default=0.0),
        not_pinned=len(loose),
    )


# -- ingest problems --------------------------------------------------------------------------
INGEST_SQL = """
    SELECT kind, severity, sum("count") AS n, count(DISTINCT file) AS files,
           min(detail) AS detail
    FROM ingest_stats
    WHERE severity IN ('error', 'data_loss') OR kind = 'layout_ambiguous'
    GROUP BY kind, severity ORDER BY n DESC, kind
"""


def ingest_problems(rows: list[dict[str, Any]]) -> Finding | None:
    """Input the run could not read whole (``ingest_stats`` of severity ``error``/``data_loss``:
    damaged gzip, unreadable files, cut lines, invalid UTF-8) and ambiguous file layouts (service
    or host guessed from a file name; fix with ``--service-map/--host-map``). The numbers behind
    every other finding are only as complete as this. Fires on any such row."""
    if not rows:
        return None
    sev = "critical" if any(r["severity"] == "data_loss" for r in rows) else "warning"
    kinds = ", ".join(f"{r['kind']} {_n(r['n'])} ({r['files']} files)" for r in rows[:5])
    fix = next((f"; {r['detail']}" for r in rows if r["kind"] == "layout_ambiguous"
                and r["detail"]), "")
    return _f(
        "ingest_problems", sev, f"input not read whole or not placed for sure: {kinds}{fix}",
        **{f"{r['kind']}_{r['severity']}": r["n"] for r in rows[:10]},
    )


RULES: tuple[Rule, ...] = (
    Rule("failure_cause", ("traces", "error_templates"), FAILURE_CAUSE_SQL, failure_cause),
    Rule("failure_host", ("traces", "spans"), FAILURE_HOST_SQL, failure_host),
    Rule("rpc_timeouts", ("events",), RPC_TIMEOUT_SQL, rpc_timeouts),
    Rule("host_concentration", ("events", "traces", "spans"), HOST_CONCENTRATION_SQL,
         host_concentration),
    Rule("lock_waits", ("events",), LOCK_WAITS_SQL, lock_waits),
    Rule("api_queue", ("requests", "traces", "events"), API_QUEUE_SQL, api_queue),
    Rule("retries", ("traces",), RETRIES_SQL, retries),
    Rule("dominant_component", ("traces", "breakdown"), DOMINANT_COMPONENT_SQL,
         dominant_component),
    Rule("delete_gap", ("requests", "traces"), DELETE_GAP_SQL, delete_gap),
    Rule("delete_cleanup", ("phases",), DELETE_CLEANUP_SQL, delete_cleanup,
         unless=("delete_gap",)),
    Rule("unknown_outcomes", ("traces",), UNKNOWN_SQL, unknown_outcomes),
    Rule("clock_offsets", ("clock_offsets",), CLOCKS_SQL, clock_offsets),
    Rule("ingest_problems", ("ingest_stats",), INGEST_SQL, ingest_problems),
    Rule("request_id_reuse", ("events",), REQUEST_ID_REUSE_SQL, request_id_reuse),
)


def _clean(v: Any) -> Any:
    return None if isinstance(v, float) and not math.isfinite(v) else v


def findings(con: duckdb.DuckDBPyConnection, present: set[str],
             rules: tuple[Rule, ...] = RULES) -> list[Finding]:
    """Run ``rules`` on a run's DuckDB connection (views of the canonical tables, as
    :meth:`stacklens.store.RunStore.connect` gives) and return their findings, in rule order.
    Rules whose tables are not all in ``present``, or whose columns a run folder of an older
    format lacks, are skipped."""
    out: list[Finding] = []
    for rule in rules:
        if not set(rule.needs) <= present or any(f["rule"] in rule.unless for f in out):
            continue
        try:
            cur = con.execute(rule.sql)
        except (duckdb.BinderException, duckdb.CatalogException):
            continue  # a run folder of an older format lacks a column: no evidence, no finding
        cols = [d[0] for d in cur.description]
        rows = [{c: _clean(v) for c, v in zip(cols, r, strict=True)} for r in cur.fetchall()]
        f = rule.judge(rows)
        if f is not None:
            out.append(f)
    return out
