"""One snapshot of a MariaDB/MySQL server's statement and lock accounting, as rows.

What is read (every query is read-only; the account needs ``SELECT`` on ``performance_schema``
and the ``PROCESS`` privilege to see other users' threads):

- ``performance_schema.events_statements_summary_by_digest``: cumulative counters per default
  schema x statement digest (MariaDB 10.5+ and MySQL 5.6+ share the columns read here; timers
  are picoseconds). Needs ``performance_schema = ON`` at server start and the
  ``statements_digest`` consumer (on by default when the schema is on).
- ``SHOW GLOBAL STATUS`` for :data:`STATUS_VARIABLES` (InnoDB deadlocks and row-lock waits,
  connection peaks, Galera certification failures where the server is a Galera node).
- ``information_schema.INNODB_METRICS``: the ``lock_*`` metrics that are enabled (MariaDB has an
  ``ENABLED`` column, MySQL a ``STATUS`` column: both are tried).
- ``information_schema.PROCESSLIST`` counted per user and per default database.

:func:`statement_kind` is the one place a statement is classed as select / insert / update /
delete (the seeds' CUID) or other.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = [
    "DIGEST_SQL",
    "KINDS",
    "STATUS_VARIABLES",
    "digest_rows",
    "sample_rows",
    "statement_kind",
]

#: Statement classes, CUID first; ``other`` is transaction control, SET, SHOW, DDL ...
KINDS = ("select", "insert", "update", "delete", "other")

#: Global status variables sampled (absent ones, e.g. ``wsrep_*`` off Galera, are skipped).
STATUS_VARIABLES = (
    "Innodb_deadlocks", "Innodb_row_lock_waits", "Innodb_row_lock_time",
    "Innodb_row_lock_current_waits", "Max_used_connections", "Threads_connected",
    "Threads_running", "Connections", "Aborted_connects", "Questions", "Slow_queries",
    "Com_select", "Com_insert", "Com_update", "Com_delete", "Com_commit", "Com_rollback",
    "wsrep_local_cert_failures", "wsrep_local_bf_aborts",
)

DIGEST_SQL = """
SELECT SCHEMA_NAME, DIGEST, DIGEST_TEXT, COUNT_STAR, SUM_TIMER_WAIT, SUM_LOCK_TIME,
       SUM_ERRORS, SUM_WARNINGS, SUM_ROWS_AFFECTED, SUM_ROWS_SENT, SUM_ROWS_EXAMINED,
       SUM_NO_INDEX_USED
FROM performance_schema.events_statements_summary_by_digest
"""

_STATUS_SQL = "SHOW GLOBAL STATUS WHERE Variable_name IN (" + ", ".join(
    f"'{v}'" for v in STATUS_VARIABLES) + ")"
_METRICS_SQL = ("SELECT NAME, COUNT FROM information_schema.INNODB_METRICS "
                "WHERE SUBSYSTEM = 'lock' AND {col}")
_USERS_SQL = ("SELECT USER, count(*) FROM information_schema.PROCESSLIST "
              "WHERE COMMAND <> 'Daemon' GROUP BY USER")
_DBS_SQL = ("SELECT coalesce(DB, ''), count(*) FROM information_schema.PROCESSLIST "
            "WHERE COMMAND <> 'Daemon' GROUP BY DB")

_FIRST_WORD = re.compile(r"[\s(]*([A-Za-z]+)")
_KIND = {"select": "select", "with": "select", "insert": "insert", "replace": "insert",
         "update": "update", "delete": "delete"}
_PS = 1e-12  # performance_schema timers are picoseconds


def statement_kind(digest_text: str | None) -> str:
    """``select`` / ``insert`` / ``update`` / ``delete`` / ``other`` from a statement's first
    keyword (``WITH`` counts as select, ``REPLACE`` as insert, ``SELECT ... FOR UPDATE`` is a
    select). None or text without a keyword -> ``other``."""
    m = _FIRST_WORD.match(digest_text or "")
    return _KIND.get(m.group(1).lower(), "other") if m else "other"


def digest_rows(cur: Any, ts_ns: int, snapshot: int) -> list[dict[str, Any]]:
    """Run :data:`DIGEST_SQL` on DB-API cursor ``cur``: one dict per digest with the columns of
    :data:`stacklens.schema.DB_DIGESTS`. Raises the driver's error when the table is missing
    (performance_schema off)."""
    cur.execute(DIGEST_SQL)
    out = []
    for (schema, digest, text, n, t_ps, lock_ps, errs, warns, aff, sent, exam,
         noidx) in cur.fetchall():
        out.append({
            "ts_ns": ts_ns, "snapshot": snapshot, "schema": schema, "digest": digest,
            "digest_text": text, "kind": statement_kind(text), "count_star": int(n),
            "sum_timer_wait_s": int(t_ps) * _PS, "sum_lock_time_s": int(lock_ps) * _PS,
            "sum_errors": int(errs), "sum_warnings": int(warns), "sum_rows_affected": int(aff),
            "sum_rows_sent": int(sent), "sum_rows_examined": int(exam),
            "sum_no_index_used": int(noidx),
        })
    return out


def _rows(cur: Any, sql: str) -> list[tuple[Any, ...]]:
    cur.execute(sql)
    return list(cur.fetchall())


def sample_rows(cur: Any, ts_ns: int, notes: set[str]) -> list[dict[str, Any]]:
    """Global status, InnoDB lock metrics and threads per user/database as
    :data:`stacklens.schema.DB_SAMPLES` dicts. A part the server refuses (no privilege, no such
    table or column) is skipped and named once in ``notes``; other driver errors propagate."""
    out: list[dict[str, Any]] = []

    def add(metric: str, obj: str, value: Any) -> None:
        try:
            out.append({"ts_ns": ts_ns, "metric": metric, "object": obj, "value": float(value)})
        except (TypeError, ValueError):
            pass  # a non-numeric status value (e.g. wsrep text): not a counter

    for name, value in _rows(cur, _STATUS_SQL):
        add(str(name), "", value)
    metrics: list[tuple[Any, ...]] | None = None
    for col in ("ENABLED = 1", "STATUS = 'enabled'"):  # MariaDB, then MySQL
        try:
            metrics = _rows(cur, _METRICS_SQL.format(col=col))
            break
        except Exception:  # noqa: BLE001 - the other server's column name
            continue
    if metrics is None:
        notes.add("information_schema.INNODB_METRICS not readable: lock metrics not sampled")
    for name, value in metrics or []:
        add("innodb_metrics", str(name), value)
    for metric, sql in (("user_threads", _USERS_SQL), ("db_threads", _DBS_SQL)):
        try:
            for obj, n in _rows(cur, sql):
                add(metric, str(obj), n)
        except Exception as e:  # noqa: BLE001 - a privilege problem is a note, not the end
            notes.add(f"{metric}: PROCESSLIST not readable ({e})")
    return out
