"""Report sections on neutron-server's IP allocation and database retries, from its log lines in
``events`` (service ``neutron-server``), joined to the driver's records (``requests``) by request
id where the line has one.

The lines counted, with the release they were read in (OpenStack 2025.1: neutron 26.0.6,
neutron-lib 3.18.3, oslo.db 17.2.1; each message is logged without the ``%`` arguments'
surroundings changing since neutron-lib 1.x / oslo.db 4.x):

- ``Retry wrapper got retriable exception: <exception>`` (DEBUG, ``neutron_lib/db/api.py``
  ``retry_db_errors``): a DB API call (``create_port``, ``allocate_ips_for_port`` ...) raised an
  exception that ``is_retriable`` accepts: ``DBDeadlock``, ``StaleDataError``,
  ``DBConnectionError``, ``DBDuplicateEntry``, ``RetryRequest``,
  ``NeutronDbObjectDuplicateEntry``. The exception text gives the cause:

  - ``Failed to create a duplicate IpamAllocation: for attribute(s) ['PRIMARY'] with value(s)
    <ip>-<ipam subnet id>`` (``neutron_lib/objects/exceptions.py``
    ``NeutronDbObjectDuplicateEntry``): two requests picked the same address from the subnet's
    window of free addresses (``neutron/ipam/drivers/neutrondb_ipam/driver.py``
    ``_generate_ips`` samples at random from up to ``MAX_WIN`` free addresses, the
    ``ipamallocations`` primary key refuses the second insert): an **IP allocation retry**;
  - ``Deadlock found when trying to get lock`` (MySQL error 1213, oslo.db ``DBDeadlock``):
    a **deadlock retry**; ``Lock wait timeout exceeded`` (1205) likewise;
  - other duplicates (``Failed to create a duplicate <Object>`` / ``Duplicate entry``), stale
    data (``StaleDataError``: ``UPDATE statement on table ... expected to update``), lost
    connections, other retriable errors.
- ``Performing DB retry for function <function>`` (DEBUG, ``oslo_db/api.py``
  ``wrap_db_retry``): the retry itself, after a back-off (neutron: 0.5 s doubling, jitter,
  at most ``MAX_RETRIES`` = 20);
- ``DB exceeded retry limit.`` (ERROR, ``oslo_db/api.py``): the retries ran out; the request
  fails;
- ``An exception occurred during IP allocation.`` (DEBUG, ``neutron/db/ipam_pluggable_backend.py``
  ``_ipam_allocate_ips``) and ``IP allocation failed on external system for <ips>`` (ERROR,
  the same function, when the rollback itself failed);
- ``No more IP addresses available`` (``IpAddressGenerationFailure`` of
  ``neutron_lib/exceptions`` and ``neutron/ipam/exceptions.py``, in the API's ``POST failed
  (client error): ...`` line): the subnet is full, a 409 that is not retried.

Counts are over the run's ``events`` (``stacklens run`` ingests its window with 60 s on each
side, so back-to-back runs share their edges); the per-request section counts only the lines
that name one of the run's own requests. The wording was read in the installed sources of the lab's neutron venv; lines of other
releases that word it otherwise are not counted (counts are then 0, never guessed).

Request ids: neutron-server 26 under eventlet logs many records with the context of another
request in flight (its oslo.context store is a real thread-local shared by all green threads:
``oslo_log`` is imported before ``eventlet.monkey_patch()`` in
``neutron/common/eventlet_utils.py``); the finding ``request_id_reuse`` measures it per run.
A retry line's request id is therefore that of *a* request in flight, not always the one
retried: the per-request join below is an attribution, the per-run counts are exact.
"""

from __future__ import annotations

from stacklens.analyze.section import Column, Section

__all__ = ["NEUTRON_SECTIONS"]

_WRAPPER = "message LIKE 'Retry wrapper got retriable exception%'"
_CAUSE = """CASE
      WHEN message LIKE '%duplicate IpamAllocation%'
        OR lower(message) LIKE '%duplicate entry%ipamallocations%' THEN 'IP allocation collision'
      WHEN message LIKE '%Deadlock found when trying to get lock%'
        OR message LIKE '%DBDeadlock%' THEN 'deadlock'
      WHEN message LIKE '%Lock wait timeout exceeded%' THEN 'lock wait timeout'
      WHEN message LIKE '%Failed to create a duplicate%'
        OR message LIKE '%Duplicate entry%' THEN 'duplicate entry'
      WHEN message LIKE '%StaleDataError%' OR message LIKE '%expected to update%'
        THEN 'stale data'
      WHEN message LIKE '%Lost connection%' OR message LIKE '%DBConnectionError%'
        OR message LIKE '%gone away%' THEN 'connection lost'
      ELSE 'other' END"""

#: neutron-server's retry and IP allocation lines: what, detail (cause or function), ids.
_LINES = f"""
    WITH e AS (
      SELECT ts_ns, request_id, global_request_id, message,
        CASE WHEN {_WRAPPER} THEN 'retriable exception'
             WHEN message LIKE 'Performing DB retry for function%' THEN 'retry performed'
             WHEN message LIKE 'DB exceeded retry limit%' THEN 'retry limit exceeded'
             WHEN message LIKE 'An exception occurred during IP allocation%'
               THEN 'IP allocation exception'
             WHEN message LIKE 'IP allocation failed on external system%'
               THEN 'IP allocation rollback failed'
             ELSE 'no more IP addresses' END AS what,
        CASE WHEN {_WRAPPER} THEN {_CAUSE}
             WHEN message LIKE 'Performing DB retry for function%'
               THEN trim(substring(message, 34, 200))
             ELSE '' END AS detail
      FROM events
      WHERE service = 'neutron-server'
        AND ({_WRAPPER} OR message LIKE 'Performing DB retry for function%'
             OR message LIKE 'DB exceeded retry limit%'
             OR message LIKE 'An exception occurred during IP allocation%'
             OR message LIKE 'IP allocation failed on external system%'
             OR message LIKE '%No more IP addresses available%'))
"""

_N = "sum(CASE WHEN {} THEN 1 ELSE 0 END)"
_COLLISION = "what = 'retriable exception' AND detail = 'IP allocation collision'"
_DEADLOCK = "what = 'retriable exception' AND detail = 'deadlock'"

NEUTRON_RETRY_SUMMARY = Section(
    "neutron_retry_summary", "Neutron IP allocation retries and deadlocks (neutron-server log)",
    "One row: what neutron-server's log says of the run's IP allocation collisions, deadlock "
    "retries and retry limits, and whether it could say it (retries are DEBUG lines: a log "
    "without DEBUG records leaves them unknown, not zero).",
    _LINES + f""",
    s AS (SELECT count(*) AS records,
                 sum(CASE WHEN level = 'DEBUG' THEN 1 ELSE 0 END) AS debug_records
          FROM events WHERE service = 'neutron-server'),
    c AS (SELECT {_N.format(_COLLISION)} AS ip, {_N.format(_DEADLOCK)} AS dl,
                 {_N.format("what = 'retriable exception'")} AS retriable,
                 {_N.format("what = 'retry performed'")} AS performed,
                 {_N.format("what = 'retry limit exceeded'")} AS gave_up,
                 {_N.format("what = 'no more IP addresses'")} AS full
          FROM e)
    SELECT s.records AS neutron_records, coalesce(s.debug_records, 0) AS debug_records,
           CASE WHEN s.debug_records > 0 THEN coalesce(c.ip, 0) END AS ip_allocation_retries,
           CASE WHEN s.debug_records > 0 THEN coalesce(c.dl, 0) END AS deadlock_retries,
           CASE WHEN s.debug_records > 0 THEN coalesce(c.retriable, 0) END AS retriable,
           CASE WHEN s.debug_records > 0 THEN coalesce(c.performed, 0) END AS retries,
           CASE WHEN s.records > 0 THEN coalesce(c.gave_up, 0) END AS retry_limit,
           CASE WHEN s.records > 0 THEN coalesce(c.full, 0) END AS no_more_ips,
           CASE WHEN s.records = 0 THEN 'no neutron-server log read: unknown'
                WHEN coalesce(s.debug_records, 0) = 0
                  THEN 'neutron-server log without DEBUG records: retries unknown'
                ELSE 'neutron-server log at DEBUG' END AS source
    FROM s CROSS JOIN c
    """,
    (
        Column("neutron_records", "count", "neutron-server records read", "neutron records"),
        Column("debug_records", "count", "of them DEBUG (the retry lines' level)",
               "DEBUG records"),
        Column("ip_allocation_retries", "count", "retriable exceptions: duplicate "
               "IpamAllocation (two requests took one address); null: unknown",
               "IP allocation retries"),
        Column("deadlock_retries", "count", "retriable exceptions: MySQL deadlock (1213); "
               "null: unknown", "deadlock retries"),
        Column("retriable", "count", "retriable exceptions of every cause; null: unknown"),
        Column("retries", "count", "'Performing DB retry' records; null: unknown"),
        Column("retry_limit", "count", "'DB exceeded retry limit' (ERROR): requests that gave "
               "up", "gave up"),
        Column("no_more_ips", "count", "'No more IP addresses available' (the subnet full)",
               "no more IPs"),
        Column("source", "text", "what the counts rest on"),
    ),
)

NEUTRON_RETRIES = Section(
    "neutron_retries", "Neutron IP allocation and database retries (neutron-server log)",
    "neutron-server's retry lines per cause (IP allocation collision, deadlock ...) and "
    "retried function, retry limits, IP allocation failures. Needs neutron-server at DEBUG "
    "for the retries (the lab's is).",
    _LINES + """
    SELECT what, detail, count(*) AS records, count(DISTINCT request_id) AS request_ids,
           min(ts_ns) AS first_ns, max(ts_ns) AS last_ns
    FROM e GROUP BY what, detail ORDER BY records DESC, what, detail
    """,
    (
        Column("what", "name", "retriable exception (cause in detail), retry performed "
               "(function in detail), retry limit exceeded, IP allocation exception / rollback "
               "failed, no more IP addresses"),
        Column("detail", "name", "the cause (retriable exceptions) or the retried function"),
        Column("records", "count", "log records"),
        Column("request_ids", "count", "distinct neutron request ids on them", "request ids"),
        Column("first_ns", "ns", "first record", "first", iso_key="first"),
        Column("last_ns", "ns", "last record", "last", iso_key="last"),
    ),
    absent={"neutron_retries": []},
)

NEUTRON_RETRY_REQUESTS = Section(
    "neutron_retry_requests", "Driver requests with neutron retry lines",
    "Each driver request (create or delete) whose request id is on a neutron retry line: "
    "retriable exceptions by cause, the retries, the client's outcome and time (the 200 with "
    "the most).",
    _LINES + """,
    q AS (SELECT name, outcome, api_s, delete_s, request_id AS rid, global_request_id AS gid,
                 'create' AS step FROM requests
          UNION ALL
          SELECT name, outcome, api_s, delete_s, delete_request_id, delete_global_request_id,
                 'delete' FROM requests),
    m AS (SELECT q.name, q.step, q.outcome, CASE WHEN q.step = 'create' THEN q.api_s
                 ELSE q.delete_s END AS client_s, e.*
          FROM e JOIN q ON q.rid = e.request_id OR q.gid = e.global_request_id)
    SELECT name, step, min(outcome) AS outcome, min(client_s) AS client_s,
           sum(CASE WHEN what = 'retriable exception' AND detail = 'IP allocation collision'
                    THEN 1 ELSE 0 END) AS ip_collisions,
           sum(CASE WHEN what = 'retriable exception' AND detail = 'deadlock'
                    THEN 1 ELSE 0 END) AS deadlocks,
           sum(CASE WHEN what = 'retriable exception' THEN 1 ELSE 0 END) AS retriable,
           sum(CASE WHEN what = 'retry performed' THEN 1 ELSE 0 END) AS retries,
           sum(CASE WHEN what = 'retry limit exceeded' THEN 1 ELSE 0 END) AS retry_limit
    FROM m GROUP BY name, step ORDER BY retriable DESC, retries DESC, name, step LIMIT 200
    """,
    (
        Column("name", "name", "the driver's record (port or server name)"),
        Column("step", "name", "create or delete"),
        Column("outcome", "name", "the record's outcome"),
        Column("client_s", "s", "the step's time seen by the client (api_s, delete_s)",
               "client"),
        Column("ip_collisions", "count", "retriable exceptions: duplicate IpamAllocation",
               "IP collisions"),
        Column("deadlocks", "count", "retriable exceptions: MySQL deadlock"),
        Column("retriable", "count", "retriable exceptions of any cause"),
        Column("retries", "count", "'Performing DB retry' records"),
        Column("retry_limit", "count", "'DB exceeded retry limit' records", "gave up"),
    ),
    needs=("requests",), absent={"neutron_retry_requests": []}, terminal=False,
)

#: The neutron sections, in report order.
NEUTRON_SECTIONS: tuple[Section, ...] = (NEUTRON_RETRY_SUMMARY, NEUTRON_RETRIES,
                                         NEUTRON_RETRY_REQUESTS)
