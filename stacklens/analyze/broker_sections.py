"""Report sections over the broker capture (tables ``messages`` and, for the log cross-check,
``events``; :mod:`stacklens.broker`). Runs without a capture hold ``[]`` under each key.

Publishes are messages sent; deliveries are what queues handed to consumers (a fanout publish
is delivered once per bound queue). Replies carry no method: they take their call's, joined by
msg_id. A message is *request* traffic when its request id (or global request id) belongs to a
reconstructed trace's spans, else *background* (periodic tasks: service heartbeats through the
conductor, ``update_available_resource``, ``sync_instance_info``...). Node: the host of the
sending process, from ``events`` (pid of the oslo.messaging connection name).
"""

from __future__ import annotations

from stacklens.analyze.section import Column, Section

__all__ = ["BROKER_SECTIONS"]

_NEEDS = ("messages",)

# publishes with the method of their call for replies
_PUB = """
    pub AS (
      SELECT m.ts_ns, m.kind, m.size_bytes, m.msg_id, m.request_id, m.global_request_id,
             m.exchange, m.client_pid, m.client_binary,
             coalesce(m.method, c.method) AS method
      FROM messages m
      LEFT JOIN (SELECT msg_id, min(method) AS method FROM messages
                 WHERE direction = 'publish' AND kind = 'call' GROUP BY msg_id) c
        ON m.kind = 'reply' AND c.msg_id = m.msg_id
      WHERE m.direction = 'publish')
"""

BY_METHOD = Section(
    "broker_methods", "Messages per RPC method (broker capture)",
    "Messages and bytes published per RPC method and kind, and deliveries of them.",
    "WITH" + _PUB + """,
    dlv AS (SELECT coalesce(method, '') AS method, kind, count(*) AS n FROM messages
            WHERE direction = 'deliver' AND kind <> 'reply' GROUP BY 1, 2)
    SELECT coalesce(p.method, '(none)') AS method, p.kind, count(*) AS published,
           sum(p.size_bytes) AS bytes, avg(p.size_bytes) AS mean_bytes,
           max(d.n) AS delivered
    FROM pub p LEFT JOIN dlv d ON d.method = coalesce(p.method, '') AND d.kind = p.kind
    GROUP BY 1, 2 ORDER BY published DESC, method, kind
    """,
    (
        Column("method", "name", "RPC method (replies: their call's)"),
        Column("kind", "name", "call, cast, fanout, reply, notification, unknown"),
        Column("published", "count", "messages published"),
        Column("bytes", "count", "body bytes published"),
        Column("mean_bytes", "count", "mean body bytes per message", "mean bytes"),
        Column("delivered", "count", "deliveries to consumers (replies: not counted here)"),
    ),
    needs=_NEEDS, absent={"broker_methods": []},
)

PER_REQUEST = Section(
    "broker_requests", "Messages per request (broker capture joined to traces)",
    "Per trace (request id or global request id of the message context): messages and bytes "
    "published, replies included (the 200 busiest).",
    "WITH" + _PUB + """,
    rid AS (SELECT DISTINCT trace_id, request_id FROM spans WHERE request_id IS NOT NULL),
    tagged AS (
      SELECT p.*, coalesce(g.trace_id, r.trace_id) AS trace_id FROM pub p
      LEFT JOIN (SELECT msg_id, min(request_id) AS request_id,
                        min(global_request_id) AS global_request_id
                 FROM pub WHERE kind = 'call' GROUP BY msg_id) c
        ON p.kind = 'reply' AND c.msg_id = p.msg_id
      LEFT JOIN rid g ON g.request_id = coalesce(p.global_request_id, c.global_request_id)
      LEFT JOIN rid r ON r.request_id = coalesce(p.request_id, c.request_id))
    SELECT t.trace_id, min(tr.operation) AS operation, count(*) AS messages,
           sum(CASE WHEN t.kind = 'call' THEN 1 ELSE 0 END) AS calls,
           sum(CASE WHEN t.kind IN ('cast', 'fanout') THEN 1 ELSE 0 END) AS casts,
           sum(t.size_bytes) AS bytes
    FROM tagged t LEFT JOIN traces tr ON tr.trace_id = t.trace_id
    WHERE t.trace_id IS NOT NULL
    GROUP BY t.trace_id ORDER BY messages DESC, t.trace_id LIMIT 200
    """,
    (
        Column("trace_id", "id", "trace"),
        Column("operation", "name", "the trace's operation"),
        Column("messages", "count", "messages published for it (calls, casts, replies)"),
        Column("calls", "count", "RPC calls"),
        Column("casts", "count", "RPC casts and fanouts"),
        Column("bytes", "count", "body bytes published"),
    ),
    needs=(*_NEEDS, "spans", "traces"), absent={"broker_requests": []},
)

PER_SECOND = Section(
    "broker_timeline", "Broker messages per second",
    "Publishes and deliveries per second of the capture, and body bytes published.",
    """
    SELECT (ts_ns // 1000000000) * 1000000000 AS second_ns,
           sum(CASE WHEN direction = 'publish' THEN 1 ELSE 0 END) AS published,
           sum(CASE WHEN direction = 'deliver' THEN 1 ELSE 0 END) AS delivered,
           sum(CASE WHEN direction = 'publish' THEN size_bytes ELSE 0 END) AS bytes
    FROM messages GROUP BY 1 ORDER BY 1
    """,
    (
        Column("second_ns", "ns", "the second", "second", iso_key="second"),
        Column("published", "count", "messages published in that second"),
        Column("delivered", "count", "deliveries in that second"),
        Column("bytes", "count", "body bytes published in that second"),
    ),
    needs=_NEEDS, absent={"broker_timeline": []}, terminal=False,
)

FANOUT = Section(
    "broker_fanout", "Fan-out amplification per exchange",
    "Deliveries per publish for each exchange (1 for point-to-point; the number of bound "
    "queues for fanout exchanges).",
    """
    SELECT exchange,
           sum(CASE WHEN direction = 'publish' THEN 1 ELSE 0 END) AS published,
           sum(CASE WHEN direction = 'deliver' THEN 1 ELSE 0 END) AS delivered,
           sum(CASE WHEN direction = 'deliver' THEN 1 ELSE 0 END) * 1.0
             / nullif(sum(CASE WHEN direction = 'publish' THEN 1 ELSE 0 END), 0)
             AS amplification
    FROM messages GROUP BY exchange ORDER BY delivered DESC, exchange
    """,
    (
        Column("exchange", "name", "exchange ('' is the default exchange: replies)"),
        Column("published", "count", "messages published to it"),
        Column("delivered", "count", "deliveries of them from queues"),
        Column("amplification", "count", "deliveries per publish (a ratio)"),
    ),
    needs=_NEEDS, absent={"broker_fanout": []},
)

PERIODIC = Section(
    "broker_background", "Background vs request traffic per node and minute",
    "Messages published per sending node and minute, split into request traffic (its "
    "request id is in a trace not rooted at an RPC server, i.e. not a periodic task) and background traffic (periodic tasks, heartbeats), with the "
    "background's busiest method.",
    "WITH" + _PUB + """,
    rid AS (SELECT DISTINCT s.request_id FROM spans s JOIN traces t ON t.trace_id = s.trace_id
            WHERE s.request_id IS NOT NULL AND t.operation NOT LIKE 'rpc %'),
    node AS (SELECT pid, min(host) AS host FROM events WHERE pid IS NOT NULL GROUP BY pid),
    t AS (
      SELECT (p.ts_ns // 60000000000) * 60000000000 AS minute_ns,
             coalesce(n.host, p.client_binary, '?') AS node, p.method,
             CASE WHEN r1.request_id IS NOT NULL OR r2.request_id IS NOT NULL
                  THEN 1 ELSE 0 END AS req
      FROM pub p
      LEFT JOIN node n ON n.pid = p.client_pid
      LEFT JOIN rid r1 ON r1.request_id = p.request_id
      LEFT JOIN rid r2 ON r2.request_id = p.global_request_id
      WHERE p.kind <> 'reply'),
    bg AS (SELECT minute_ns, node, method, count(*) AS n,
                  row_number() OVER (PARTITION BY minute_ns, node
                                     ORDER BY count(*) DESC, method) AS rk
           FROM t WHERE req = 0 GROUP BY minute_ns, node, method)
    SELECT t.minute_ns, t.node, sum(t.req) AS request_msgs,
           sum(1 - t.req) AS background_msgs, min(b.method) AS top_background_method
    FROM t LEFT JOIN bg b ON b.minute_ns = t.minute_ns AND b.node = t.node AND b.rk = 1
    GROUP BY t.minute_ns, t.node ORDER BY t.minute_ns, t.node
    """,
    (
        Column("minute_ns", "ns", "the minute", "minute", iso_key="minute"),
        Column("node", "name", "sending host (from the logs' pids) or binary"),
        Column("request_msgs", "count", "calls/casts of traced requests (replies excluded)"),
        Column("background_msgs", "count", "calls/casts of no traced request"),
        Column("top_background_method", "name", "busiest background method"),
    ),
    needs=(*_NEEDS, "events", "spans", "traces"), absent={"broker_background": []},
    terminal=False,
)

LOGS_VS_BROKER = Section(
    "broker_vs_logs", "RPC sends per method: broker capture vs oslo.messaging DEBUG lines",
    "Calls and casts per method published (broker) beside 'Calling RPC method' lines logged "
    "inside the capture's time span (logs). Differences: senders not logging at DEBUG, or "
    "sends at the edges of the capture.",
    """
    WITH w AS (SELECT min(ts_ns) - 1000000000 AS lo, max(ts_ns) AS hi FROM messages),
    b AS (SELECT method, count(*) AS n FROM messages
          WHERE direction = 'publish' AND kind IN ('call', 'cast', 'fanout') GROUP BY method),
    l AS (SELECT regexp_extract(message, '^Calling RPC method (\\S+) on target', 1) AS method,
                 count(*) AS n
          FROM events, w
          WHERE message LIKE 'Calling RPC method %' AND ts_ns >= w.lo AND ts_ns <= w.hi
          GROUP BY 1)
    SELECT coalesce(b.method, l.method) AS method, coalesce(b.n, 0) AS broker,
           coalesce(l.n, 0) AS logs, coalesce(b.n, 0) - coalesce(l.n, 0) AS difference
    FROM b FULL OUTER JOIN l ON l.method = b.method
    ORDER BY broker DESC, method
    """,
    (
        Column("method", "name", "RPC method"),
        Column("broker", "count", "calls, casts and fanouts published"),
        Column("logs", "count", "'Calling RPC method' lines in the capture's span"),
        Column("difference", "count", "broker - logs"),
    ),
    needs=(*_NEEDS, "events"), absent={"broker_vs_logs": []},
)

PER_CREATE = Section(
    "broker_per_create", "Messages per resource created / deleted (broker capture, run phases)",
    "Calls, casts and fan-outs (replies left out) per method in the create phase (the run's "
    "first create sent to its first delete sent) and the delete phase (first delete sent to "
    "the end of the capture), published and delivered, and per create answered 2xx / per "
    "delete done. A fanout is delivered once per bound queue: per agent for neutron's "
    "fan-outs. Phases overlap nothing only when the run deletes after all creates "
    "(create_ports' delete when: all); '(all)' rows are the phase's totals.",
    """
    WITH b AS (SELECT min(submit_ns) AS t0, min(delete_ns) AS t1,
                      sum(CASE WHEN create_http_status BETWEEN 200 AND 299 THEN 1 ELSE 0 END)
                        AS creates,
                      sum(CASE WHEN gone_ns IS NOT NULL THEN 1 ELSE 0 END) AS deletes
               FROM requests),
    e AS (SELECT max(ts_ns) + 1 AS t2 FROM messages),
    m AS (SELECT CASE WHEN b.t1 IS NULL OR m.ts_ns < b.t1 THEN 'create' ELSE 'delete' END
                   AS phase, coalesce(m.method, '(none)') AS method, m.kind,
                 CASE WHEN m.direction = 'publish' THEN 1 ELSE 0 END AS pub,
                 CASE WHEN m.direction = 'deliver' THEN 1 ELSE 0 END AS dlv,
                 b.creates, b.deletes
          FROM messages m CROSS JOIN b CROSS JOIN e
          WHERE m.kind <> 'reply' AND m.ts_ns >= b.t0 AND m.ts_ns < e.t2),
    g AS (SELECT phase, method, kind, sum(pub) AS published, sum(dlv) AS delivered,
                 max(CASE WHEN phase = 'create' THEN creates ELSE deletes END) AS n
          FROM m GROUP BY phase, method, kind
          UNION ALL
          SELECT phase, '(all)', '', sum(pub), sum(dlv),
                 max(CASE WHEN phase = 'create' THEN creates ELSE deletes END)
          FROM m GROUP BY phase)
    SELECT phase, method, kind, published, delivered, n AS requests,
           CASE WHEN n > 0 THEN published * 1.0 / n END AS published_per_request,
           CASE WHEN n > 0 THEN delivered * 1.0 / n END AS delivered_per_request
    FROM g ORDER BY phase, CASE WHEN method = '(all)' THEN 0 ELSE 1 END, delivered DESC,
             published DESC, method, kind
    """,
    (
        Column("phase", "name", "create (first create to first delete sent) or delete"),
        Column("method", "name", "RPC method; (all): the phase's total"),
        Column("kind", "name", "call, cast, fanout, notification, unknown"),
        Column("published", "count", "messages published in the phase"),
        Column("delivered", "count", "deliveries to consumers in the phase"),
        Column("requests", "count", "creates answered 2xx (create phase), deletes done "
               "(delete phase)"),
        Column("published_per_request", "count", "published / requests (a ratio)",
               "published per request"),
        Column("delivered_per_request", "count", "delivered / requests (a ratio)",
               "delivered per request"),
    ),
    needs=(*_NEEDS, "requests"), absent={"broker_per_create": []},
)

#: The broker sections, in report order.
BROKER_SECTIONS: tuple[Section, ...] = (BY_METHOD, LOGS_VS_BROKER, PER_CREATE, PER_REQUEST,
                                        FANOUT, PER_SECOND, PERIODIC)
