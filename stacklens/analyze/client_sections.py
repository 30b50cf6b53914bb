"""Report sections over the client records of ``stacklens run`` (table ``requests``), joined to
the server traces by the request id the client sent (global request id) or the one nova
returned. Runs without client records have ``"client_server": null`` in the report.

``create_s`` is the create as the client saw it: POST to ACTIVE, or, for workloads whose create
is synchronous (``create_ports``: no record has a ``create_s``), the call itself (``api_s``);
decided per ``scenario`` value, so that a ``mixed`` run's parts (``<name>/<part>``) each get
theirs. ``client_steps`` has one group of rows per ``scenario`` value (one for a plain run).
``before_server_s``: client submit to the first server record (connection pool, network,
nova-api queue); ``polling_delay_s``: server completion to ACTIVE seen by the client. Deletes:
the client's ``delete_s`` (DELETE issued to DELETED/404 seen) beside the server's (to the last
delete-work record: nova saves the instance DELETED, which is what the client sees, before the
resource tracker and placement cleanup that ends the server-side delete).
"""

from __future__ import annotations

from stacklens.analyze.section import Column, Section
from stacklens.vocab import DONE_OUTCOMES

__all__ = ["CLIENT_SECTIONS"]

_DONE = "(" + ", ".join(f"'{o}'" for o in DONE_OUTCOMES) + ")"

_CLIENT_JOIN = """
    WITH r AS (SELECT * FROM requests WHERE create_http_status IS NOT NULL),
         j AS (
           SELECT r.name, r.server_id, r.outcome AS client_outcome, r.api_s,
                  CASE WHEN (SELECT count(x.create_s) FROM requests x
                             WHERE x.scenario IS NOT DISTINCT FROM r.scenario) > 0
                       THEN r.create_s ELSE r.api_s END AS create_s,
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

CLIENT_SUMMARY = Section(
    "client_server_summary", "Client view vs server view (run records joined to traces by request id)",
    "The driver's requests beside the server traces (one row).",
    _CLIENT_JOIN + f"""
        SELECT count(*) AS requests,
               sum(CASE WHEN trace_id IS NOT NULL THEN 1 ELSE 0 END) AS found,
               sum(CASE WHEN client_outcome = 'ok' AND server_outcome IN {_DONE}
                        THEN 1 ELSE 0 END) AS both_ok,
               sum(CASE WHEN trace_id IS NOT NULL AND (client_outcome = 'ok') <>
                        (server_outcome IN {_DONE}) THEN 1 ELSE 0 END) AS disagree,
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
    (
        Column("requests", "count", "create requests the driver issued with an HTTP answer"),
        Column("found", "count", "of them, found in the server traces", "found in traces"),
        Column("both_ok", "count", "client ok and server success or retried", "both ok"),
        Column("disagree", "count", "found, and client and server disagree on success"),
        Column("client_create_p50_s", "s", "median create time seen by the client"),
        Column("server_p50_s", "s", "median server-side create time"),
        Column("before_server_p50_s", "s", "median submit to first server record"),
        Column("polling_delay_p50_s", "s", "median server completion to ACTIVE seen"),
        Column("client_delete_p50_s", "s", "median delete time seen by the client"),
        Column("server_delete_p50_s", "s", "median server-side delete time"),
    ),
    needs=("requests",), key="client_server",
    place=lambda rows: {"client_server": {"summary": rows[0]}},
    absent={"client_server": None},
)

CLIENT_ROWS = Section(
    "client_server", "Client view vs server view",
    "Each create request (the 500 slowest) with its client and server outcome and times.",
    _CLIENT_JOIN + """
        SELECT name, server_id, trace_id, client_outcome, server_outcome, api_s, create_s,
               server_dur_s, (t_start_ns - submit_ns) / 1e9 AS before_server_s,
               CASE WHEN t_end_exact THEN (active_ns - t_end_ns) / 1e9 END AS polling_delay_s
        FROM j ORDER BY create_s DESC NULLS LAST, name LIMIT 500
    """,
    (
        Column("name", "name", "server name the driver gave", "server"),
        Column("server_id", "id", "server id nova returned"),
        Column("trace_id", "id", "the server trace found", "trace"),
        Column("client_outcome", "name", "the driver's outcome", "client"),
        Column("server_outcome", "name", "the trace's outcome", "server outcome"),
        Column("api_s", "s", "the POST's response time", "api"),
        Column("create_s", "s", "POST to ACTIVE seen by the client", "create"),
        Column("server_dur_s", "s", "server-side create time", "server"),
        Column("before_server_s", "s", "submit to the first server record", "before server"),
        Column("polling_delay_s", "s", "server completion to ACTIVE seen", "polling delay"),
    ),
    needs=("requests",),
    place=lambda rows: {"client_server": {"rows": rows}},
    absent={"client_server": None},
)

_STEP_COLS = """count(*) AS issued, sum(ok) AS ok, count(*) - sum(ok) AS failed,
           sum(ok) * 1.0 / count(*) AS success_rate,
           percentile_cont(0.50) WITHIN GROUP (ORDER BY dur_s) AS p50_s,
           percentile_cont(0.95) WITHIN GROUP (ORDER BY dur_s) AS p95_s,
           max(dur_s) AS max_s"""

CLIENT_STEPS = Section(
    "client_steps", "Client requests per step (the driver's records)",
    "Per step, what the client issued and saw: the create call answered 2xx (api_s), the "
    "resource ACTIVE (create_s, servers only), the delete done (delete_s), and the record's "
    "outcome ok; times over the steps that succeeded. One group per scenario (a mixed run's "
    "parts: <name>/<part>).",
    f"""
    WITH c AS (SELECT scenario, 'create' AS step, 1 AS o,
                      CASE WHEN create_http_status BETWEEN 200 AND 299 THEN 1 ELSE 0 END AS ok,
                      CASE WHEN create_http_status BETWEEN 200 AND 299 THEN api_s END AS dur_s
               FROM requests WHERE submit_ns IS NOT NULL),
         a AS (SELECT scenario, 'active' AS step, 2 AS o,
                      CASE WHEN active_ns IS NOT NULL THEN 1 ELSE 0 END AS ok, create_s AS dur_s
               FROM requests q WHERE create_http_status BETWEEN 200 AND 299
                 AND EXISTS (SELECT 1 FROM requests x WHERE x.create_s IS NOT NULL
                             AND x.scenario IS NOT DISTINCT FROM q.scenario)),
         d AS (SELECT scenario, 'delete' AS step, 3 AS o,
                      CASE WHEN gone_ns IS NOT NULL THEN 1 ELSE 0 END AS ok,
                      CASE WHEN gone_ns IS NOT NULL THEN delete_s END AS dur_s
               FROM requests WHERE delete_ns IS NOT NULL),
         r AS (SELECT scenario, 'record ok' AS step, 4 AS o,
                      CASE WHEN outcome = 'ok' THEN 1 ELSE 0 END AS ok,
                      CAST(NULL AS DOUBLE) AS dur_s FROM requests),
         u AS (SELECT * FROM c UNION ALL SELECT * FROM a UNION ALL SELECT * FROM d
               UNION ALL SELECT * FROM r)
    SELECT scenario, step, {_STEP_COLS} FROM u GROUP BY scenario, step, o
    HAVING count(*) > 0 ORDER BY scenario NULLS FIRST, o
    """,
    (
        Column("scenario", "name", "the records' scenario (a mixed run: <name>/<part>, one "
               "group of steps per part)"),
        Column("step", "name", "create (call answered 2xx), active (servers: ACTIVE seen), "
               "delete (gone seen), record ok (the record's outcome)"),
        Column("issued", "count", "records that issued the step"),
        Column("ok", "count", "of them, succeeded"),
        Column("failed", "count", "issued - ok"),
        Column("success_rate", "fraction", "ok / issued", "success"),
        Column("p50_s", "s", "median time of the step, over the ok ones", "p50"),
        Column("p95_s", "s", "95th percentile, over the ok ones", "p95"),
        Column("max_s", "s", "slowest ok one", "max"),
    ),
    needs=("requests",), absent={"client_steps": []},
)

#: The client-view sections, in report order.
CLIENT_SECTIONS = (CLIENT_STEPS, CLIENT_SUMMARY, CLIENT_ROWS)
