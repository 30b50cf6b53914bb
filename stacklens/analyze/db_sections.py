"""Report sections on database load: from the server's own accounting (tables ``db_digests``
and ``db_samples`` of :mod:`stacklens.dbstat`, recorded during ``stacklens run``) and, for
clouds where only logs exist, from the services' oslo.db retry and deadlock lines in
``events``.

Digest counters are cumulative: every figure here is the difference between the first and the
last snapshot of the run (a digest absent from the first counts from zero; a counter that went
down, after a server restart or a truncate, counts from zero again). Schemas are the
connections' default databases (nova, nova_api, nova_cell0, placement, glance, neutron ...);
the server's own schemas and statements without a default database (the recorder's) are left
out.

CUID shares (the seeds' select / insert / update / delete split) are shares of the CUID
statements of a schema, so the four add up to 1 per schema; transaction control, SET, SHOW and
DDL are counted apart as ``other``.

Log lines counted by :data:`DB_RETRIES` (wording from oslo.db's ``api.py`` ``wrap_db_retry``
and the ``_retry_on_deadlock`` helpers of nova/cinder/neutron DB APIs, by release):

- ``Performing DB retry for function <name>`` (DEBUG, oslo.db 4.x on; any retried cause);
- ``DB exceeded retry limit.`` (ERROR, every oslo.db and oslo-incubator release);
- ``Deadlock detected when running '<func>': Retrying...`` (WARNING, the older per-project
  decorators);
- the server's error texts anywhere in the record: ``Deadlock found when trying to get lock``
  (MySQL error 1213, oslo.db ``DBDeadlock``) and ``Lock wait timeout exceeded`` (1205).
"""

from __future__ import annotations

from stacklens.analyze.section import Column, Section

__all__ = ["DB_SECTIONS"]

_SYSTEM = "('performance_schema', 'information_schema', 'mysql', 'sys')"
_SUMS = ("count_star", "sum_timer_wait_s", "sum_lock_time_s", "sum_errors", "sum_rows_affected",
         "sum_rows_sent", "sum_rows_examined", "sum_no_index_used")
_DELTAS = ",\n".join(
    f"CASE WHEN f.count_star IS NULL OR l.count_star < f.count_star THEN l.{c} "
    f"ELSE l.{c} - f.{c} END AS {c}" for c in _SUMS)

#: Per schema x digest: what happened between the run's first and last snapshot.
_DELTA = f"""
    WITH b AS (SELECT min(snapshot) AS s0, max(snapshot) AS s1 FROM db_digests),
         d AS (SELECT * FROM db_digests
               WHERE schema IS NOT NULL AND digest IS NOT NULL AND schema NOT IN {_SYSTEM}),
         f AS (SELECT d.* FROM d JOIN b ON d.snapshot = b.s0),
         l AS (SELECT d.* FROM d JOIN b ON d.snapshot = b.s1),
         dl AS (SELECT l.schema, l.digest, l.digest_text, l.kind, {_DELTAS}
                FROM l LEFT JOIN f ON f.schema = l.schema AND f.digest = l.digest)
"""

_KINDS = ("select", "insert", "update", "delete")
_CUID_N = "CAST(" + " + ".join(f"{k}_n" for k in _KINDS) + " AS DOUBLE)"
_CUID_T = "(" + " + ".join(f"{k}_time_s" for k in _KINDS) + ")"

DB_CUID = Section(
    "db_cuid", "Database statements per schema: select / insert / update / delete (CUID)",
    "Statements and time per schema during the run, from performance_schema digests; CUID "
    "shares add up to 100 % per schema, other statements (COMMIT, SET, DDL) apart.",
    _DELTA + """,
         k AS (SELECT schema,
               sum(count_star) AS statements, sum(sum_timer_wait_s) AS time_s,
               """ + ",\n               ".join(
        f"sum(CASE WHEN kind = '{k}' THEN count_star ELSE 0 END) AS {k}_n,\n"
        f"               sum(CASE WHEN kind = '{k}' THEN sum_timer_wait_s ELSE 0 END) "
        f"AS {k}_time_s" for k in (*_KINDS, "other")) + f"""
               FROM dl GROUP BY schema)
    SELECT schema, statements, {", ".join(f"{k}_n" for k in _KINDS)}, other_n,
           {", ".join(f"CASE WHEN {_CUID_N} > 0 THEN {k}_n / {_CUID_N} END AS {k}_share"
                      for k in _KINDS)},
           time_s,
           {", ".join(f"CASE WHEN {_CUID_T} > 0 THEN {k}_time_s / {_CUID_T} END "
                      f"AS {k}_time_share" for k in _KINDS)}
    FROM k WHERE statements > 0 ORDER BY statements DESC, schema
    """,
    (
        Column("schema", "name", "the connections' default database"),
        Column("statements", "count", "statements executed (CUID and other)"),
        *(Column(f"{k}_n", "count", f"{k.upper()} statements", k) for k in _KINDS),
        Column("other_n", "count", "transaction control, SET, SHOW, DDL ...", "other"),
        *(Column(f"{k}_share", "fraction", f"{k.upper()} share of the CUID statements",
                 f"{k} %") for k in _KINDS),
        Column("time_s", "s", "server time executing the statements (all kinds)", "time"),
        *(Column(f"{k}_time_share", "fraction", f"{k.upper()} share of the CUID statements' "
                 "time", f"{k} time %") for k in _KINDS),
    ),
    needs=("db_digests",), absent={"db_cuid": []},
)

DB_TOP = Section(
    "db_top_digests", "Top statements by server time",
    "The 25 statement digests that took the most server time during the run.",
    _DELTA + """
    SELECT schema, kind, substring(digest_text, 1, 300) AS statement, count_star AS calls,
           sum_timer_wait_s AS time_s,
           CASE WHEN count_star > 0 THEN sum_timer_wait_s / count_star END AS mean_s,
           sum_rows_examined AS rows_examined, sum_rows_sent AS rows_sent,
           sum_rows_affected AS rows_affected, sum_errors AS errors,
           sum_no_index_used AS no_index
    FROM dl WHERE count_star > 0
    ORDER BY sum_timer_wait_s DESC, count_star DESC, digest LIMIT 25
    """,
    (
        Column("schema", "name", "default database"),
        Column("kind", "name", "select, insert, update, delete or other"),
        Column("statement", "text", "normalized statement text (literals as ?)"),
        Column("calls", "count", "times executed"),
        Column("time_s", "s", "total server time", "time"),
        Column("mean_s", "s", "mean server time per call", "mean"),
        Column("rows_examined", "count", "rows the server read", "examined"),
        Column("rows_sent", "count", "rows returned", "sent"),
        Column("rows_affected", "count", "rows changed", "affected"),
        Column("errors", "count", "calls that ended in an error"),
        Column("no_index", "count", "calls that scanned a table without an index", "no index"),
    ),
    needs=("db_digests",), absent={"db_top_digests": []},
)

DB_ERRORS = Section(
    "db_errors", "Statements that ended in an error, per schema",
    "Statement digests with errors during the run (duplicate keys, deadlocks, lock wait "
    "timeouts ... performance_schema counts the error, not its code): neutron's IP "
    "allocation collisions show as errors of INSERT INTO ipamallocations.",
    _DELTA + """
    SELECT schema, kind, substring(digest_text, 1, 300) AS statement, count_star AS calls,
           sum_errors AS errors, sum_lock_time_s AS lock_time_s, sum_timer_wait_s AS time_s
    FROM dl WHERE sum_errors > 0
    ORDER BY sum_errors DESC, schema, digest LIMIT 25
    """,
    (
        Column("schema", "name", "default database"),
        Column("kind", "name", "select, insert, update, delete or other"),
        Column("statement", "text", "normalized statement text (literals as ?)"),
        Column("calls", "count", "times executed"),
        Column("errors", "count", "calls that ended in an error"),
        Column("lock_time_s", "s", "time waiting for locks (performance_schema SUM_LOCK_TIME)",
               "lock time"),
        Column("time_s", "s", "total server time", "time"),
    ),
    needs=("db_digests",), absent={"db_errors": []},
)

_PIVOT = """
    WITH p AS (SELECT ts_ns,
        max(CASE WHEN metric = 'Innodb_deadlocks' THEN value END) AS deadlocks,
        max(CASE WHEN metric = 'Innodb_row_lock_waits' THEN value END) AS lock_waits,
        max(CASE WHEN metric = 'Innodb_row_lock_time' THEN value END) AS lock_ms,
        max(CASE WHEN metric = 'innodb_metrics' AND object = 'lock_timeouts' THEN value END)
          AS lock_timeouts,
        max(CASE WHEN metric = 'wsrep_local_cert_failures' THEN value END) AS cert_failures,
        max(CASE WHEN metric = 'Threads_connected' THEN value END) AS threads,
        max(CASE WHEN metric = 'Threads_running' THEN value END) AS running,
        max(CASE WHEN metric = 'Max_used_connections' THEN value END) AS max_used,
        max(CASE WHEN metric = 'snapshot_s' THEN value END) AS snapshot_s
      FROM db_samples GROUP BY ts_ns)
"""

DB_SUMMARY = Section(
    "db_summary", "Database: deadlocks, lock waits, connections",
    "InnoDB deadlocks and row-lock waits during the run (last minus first snapshot), the "
    "connection peak, and what the recorder itself cost.",
    _PIVOT + """
    SELECT count(*) AS snapshots, (max(ts_ns) - min(ts_ns)) / 1e9 AS window_s,
           max_by(deadlocks, ts_ns) - min_by(deadlocks, ts_ns) AS deadlocks,
           max_by(lock_waits, ts_ns) - min_by(lock_waits, ts_ns) AS lock_waits,
           (max_by(lock_ms, ts_ns) - min_by(lock_ms, ts_ns)) / 1000.0 AS lock_wait_s,
           max_by(lock_timeouts, ts_ns) - min_by(lock_timeouts, ts_ns) AS lock_timeouts,
           max_by(cert_failures, ts_ns) - min_by(cert_failures, ts_ns) AS cert_failures,
           max(threads) AS peak_threads_connected, max(running) AS peak_threads_running,
           max(max_used) AS max_used_connections, avg(snapshot_s) AS snapshot_mean_s
    FROM p HAVING count(*) > 0
    """,
    (
        Column("snapshots", "count", "snapshots taken"),
        Column("window_s", "s", "first to last snapshot", "window"),
        Column("deadlocks", "count", "InnoDB deadlocks (Innodb_deadlocks)"),
        Column("lock_waits", "count", "row-lock waits (Innodb_row_lock_waits)", "lock waits"),
        Column("lock_wait_s", "s", "time spent waiting for row locks (Innodb_row_lock_time)",
               "lock wait"),
        Column("lock_timeouts", "count", "lock wait timeouts (INNODB_METRICS lock_timeouts)",
               "lock timeouts"),
        Column("cert_failures", "count", "Galera certification failures (null off Galera)",
               "cert failures"),
        Column("peak_threads_connected", "count", "most connections seen at a snapshot",
               "peak connections"),
        Column("peak_threads_running", "count", "most running threads seen at a snapshot",
               "peak running"),
        Column("max_used_connections", "count", "the server's peak since it started",
               "max used"),
        Column("snapshot_mean_s", "s", "mean time one snapshot took (recorder overhead)",
               "snapshot cost"),
    ),
    needs=("db_samples",), absent={"db_summary": []},
)

DB_LOCK_TIMELINE = Section(
    "db_lock_timeline", "Database locks and connections over time",
    "Per snapshot interval: deadlocks, row-lock waits and wait time, connections.",
    _PIVOT + """
    SELECT ts_ns,
           deadlocks - lag(deadlocks) OVER (ORDER BY ts_ns) AS deadlocks,
           lock_waits - lag(lock_waits) OVER (ORDER BY ts_ns) AS lock_waits,
           (lock_ms - lag(lock_ms) OVER (ORDER BY ts_ns)) / 1000.0 AS lock_wait_s,
           threads AS threads_connected, running AS threads_running
    FROM p ORDER BY ts_ns
    """,
    (
        Column("ts_ns", "ns", "end of the interval", "time", iso_key="time"),
        Column("deadlocks", "count", "deadlocks in the interval"),
        Column("lock_waits", "count", "row-lock waits in the interval", "lock waits"),
        Column("lock_wait_s", "s", "row-lock wait time in the interval", "lock wait"),
        Column("threads_connected", "count", "connections at the snapshot", "connections"),
        Column("threads_running", "count", "running threads at the snapshot", "running"),
    ),
    needs=("db_samples",), absent={"db_lock_timeline": []}, terminal=False,
)

DB_THREADS = Section(
    "db_threads", "Database connections per user and per database",
    "Connected threads at each snapshot (information_schema.PROCESSLIST): peak and mean.",
    """
    SELECT CASE WHEN metric = 'user_threads' THEN 'user' ELSE 'database' END AS per,
           object AS name, max(value) AS peak, avg(value) AS mean
    FROM db_samples WHERE metric IN ('user_threads', 'db_threads')
    GROUP BY metric, object ORDER BY per DESC, peak DESC, name
    """,
    (
        Column("per", "name", "user or (default) database"),
        Column("name", "name", "the user or the database ('' for none)"),
        Column("peak", "count", "most threads at one snapshot"),
        Column("mean", "count", "mean threads over the snapshots (where present)"),
    ),
    needs=("db_samples",), absent={"db_threads": []},
)

_TEXT = "(message || ' ' || coalesce(continuation, ''))"
_RETRY = ("(message LIKE 'Performing DB retry for function%' "
          "OR message LIKE 'Deadlock detected when running%Retrying%')")
_LIMIT = "message LIKE 'DB exceeded retry limit%'"
_DEADLOCK = f"{_TEXT} LIKE '%Deadlock found when trying to get lock%'"
_TIMEOUT = f"{_TEXT} LIKE '%Lock wait timeout exceeded%'"
_DB_LINES = f"""
    WITH e AS (SELECT service, host, request_id, ts_ns,
                 CASE WHEN {_RETRY} THEN 1 ELSE 0 END AS retry,
                 CASE WHEN {_LIMIT} THEN 1 ELSE 0 END AS gave_up,
                 CASE WHEN {_DEADLOCK} THEN 1 ELSE 0 END AS deadlock,
                 CASE WHEN {_TIMEOUT} THEN 1 ELSE 0 END AS lock_timeout
               FROM events
               WHERE message LIKE '%DB %' OR message LIKE '%Deadlock%'
                  OR message LIKE '%Lock wait timeout%' OR continuation LIKE '%Deadlock found%'
                  OR continuation LIKE '%Lock wait timeout%'),
         m AS (SELECT * FROM e WHERE retry + gave_up + deadlock + lock_timeout > 0)
"""

DB_RETRIES = Section(
    "db_retries", "Database retries and deadlocks in the service logs",
    "oslo.db retry lines and MySQL deadlock / lock-wait-timeout errors per service (for "
    "clouds without database access; DEBUG logging shows the retries).",
    _DB_LINES + """
    SELECT service, sum(retry) AS retries, sum(deadlock) AS deadlock_lines,
           sum(lock_timeout) AS lock_timeout_lines, sum(gave_up) AS retry_limit,
           count(DISTINCT request_id) AS requests
    FROM m GROUP BY service ORDER BY retries + deadlock_lines DESC, service
    """,
    (
        Column("service", "name", "the service that logged"),
        Column("retries", "count", "DB retries performed (oslo.db or _retry_on_deadlock)"),
        Column("deadlock_lines", "count", "records with MySQL's deadlock error (1213)",
               "deadlocks"),
        Column("lock_timeout_lines", "count", "records with a lock wait timeout (1205)",
               "lock timeouts"),
        Column("retry_limit", "count", "'DB exceeded retry limit': the retries ran out",
               "gave up"),
        Column("requests", "count", "distinct request ids among these records"),
    ),
)

DB_RETRY_REQUESTS = Section(
    "db_retry_requests", "Requests that met database retries or deadlocks",
    "Per request id (the 100 with the most): retries and deadlock records, first seen.",
    _DB_LINES + """
    SELECT request_id, min(service) AS service, sum(retry) AS retries,
           sum(deadlock) AS deadlock_lines, sum(gave_up) AS retry_limit, min(ts_ns) AS first_ns
    FROM m WHERE request_id IS NOT NULL GROUP BY request_id
    ORDER BY retries + deadlock_lines DESC, request_id LIMIT 100
    """,
    (
        Column("request_id", "id", "the service's request id", "request"),
        Column("service", "name", "a service that logged (first by name)"),
        Column("retries", "count", "DB retries"),
        Column("deadlock_lines", "count", "records with MySQL's deadlock error", "deadlocks"),
        Column("retry_limit", "count", "the retries ran out", "gave up"),
        Column("first_ns", "ns", "first such record", "first", iso_key="first"),
    ),
    terminal=False,
)

#: The database sections, in report order.
DB_SECTIONS = (DB_SUMMARY, DB_CUID, DB_TOP, DB_ERRORS, DB_THREADS, DB_LOCK_TIMELINE, DB_RETRIES,
               DB_RETRY_REQUESTS)
