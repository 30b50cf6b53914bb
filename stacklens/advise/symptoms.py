"""Symptoms in a run's tables that point at a setting.

Log symptoms are counted in ``events`` (a record counts once when its message or its
continuation lines match) per service, and in ``traces`` (requests whose root-cause ``error``
or ``first_error`` matches). Patterns, in the programs' own wording:

- ``db_pool_exhausted``: SQLAlchemy's pool ``TimeoutError``: "QueuePool limit of size 5 overflow
  50 reached, connection timed out, timeout 30.00" (the sizes in effect are read back);
- ``rpc_timeout``: oslo.messaging "MessagingTimeout: Timed out waiting for a reply to message ID";
- ``rpc_pool_exhausted``: oslo.messaging pool.py "Connection pool limit exceeded: current size
  ... surpasses max configured rpc_conn_pool_size";
- ``db_deadlock``: oslo.db ``DBDeadlock``, MySQL 1213 "Deadlock found when trying to get lock",
  Galera "WSREP detected deadlock/conflict";
- ``amqp_unreachable``: oslo.messaging impl_rabbit "AMQP server on <host>:<port> is
  unreachable";
- ``port_binding_failed``: nova "PortBindingFailed" / neutron "binding_failed", "Binding failed";
- ``host_skew``: one nova-compute host took most builds: distinct ``instance_uuid`` per host in
  nova-compute records; a skew when there are at least 2 compute hosts, 4 instances, and the
  top host has at least half of them and at least 1.5 times its fair share (total / hosts).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import duckdb

from stacklens.store import RunStore

__all__ = ["PATTERNS", "SKEW_MIN_BUILDS", "Symptom", "symptoms_of_run"]

#: Symptom kind -> regular expression (RE2 / Python syntax in common).
PATTERNS: dict[str, str] = {
    "db_pool_exhausted": r"QueuePool limit of size -?\d+ overflow -?\d+ reached",
    "rpc_timeout": r"MessagingTimeout|Timed out waiting for a reply to message ID",
    "rpc_pool_exhausted": r"Connection pool limit exceeded",
    "db_deadlock": r"DBDeadlock|Deadlock found when trying to get lock|WSREP detected deadlock",
    "amqp_unreachable": r"AMQP server on \S+ is unreachable",
    "port_binding_failed": r"PortBindingFailed|binding_failed|[Bb]inding failed for port",
}
_POOL = re.compile(r"QueuePool limit of size (-?\d+) overflow (-?\d+) reached")

#: host_skew needs at least this many instances built.
SKEW_MIN_BUILDS = 4


@dataclass(frozen=True)
class Symptom:
    """One kind of trouble seen in a run: ``kind`` (a :data:`PATTERNS` key or ``host_skew``),
    ``count`` (log records; host_skew: builds on the busiest host), ``by_service`` ``{service:
    records}``, ``failed_requests`` (traces whose root cause matches; 0 without traces),
    ``detail`` (plain words: the busiest host, the pool sizes in the message), ``pool``
    (db_pool_exhausted: ``(size, overflow)`` pairs read from the messages)."""

    kind: str
    count: int
    by_service: dict[str, int] = field(default_factory=dict)
    failed_requests: int = 0
    detail: str = ""
    pool: tuple[tuple[int, int], ...] = ()

    def describe(self, service: str | None = None) -> str:
        """The symptom in words, for ``service`` alone when given."""
        n = self.by_service.get(service, 0) if service else self.count
        where = f" in {service}" if service else (" (" + ", ".join(
            f"{s} {c}" for s, c in sorted(self.by_service.items(), key=lambda x: -x[1])) + ")"
            if self.by_service else "")
        words = {"host_skew": self.detail}.get(self.kind) or (
            f"{self.kind.replace('_', ' ')}: {n} log records{where}")
        if self.detail and self.kind != "host_skew":
            words += f"; {self.detail}"
        if self.failed_requests:
            words += f"; root cause of {self.failed_requests} failed requests"
        return words


def _log_symptoms(con: duckdb.DuckDBPyConnection, has_traces: bool) -> list[Symptom]:
    out = []
    for kind, pat in PATTERNS.items():
        q = ("SELECT coalesce(service, '?') AS service, count(*) AS n, "
             "min(CASE WHEN regexp_matches(message, ?) THEN message ELSE continuation END) "
             "FROM events WHERE regexp_matches(message, ?) "
             "OR regexp_matches(coalesce(continuation, ''), ?) GROUP BY 1 ORDER BY 2 DESC")
        rows = con.execute(q, [pat, pat, pat]).fetchall()
        if not rows:
            continue
        by_service = {str(s): int(n) for s, n, _ in rows}
        failed = 0
        if has_traces:
            failed = int(con.execute(
                "SELECT count(*) FROM traces WHERE outcome = 'failed' AND (regexp_matches("
                "coalesce(error, ''), ?) OR regexp_matches(coalesce(first_error, ''), ?))",
                [pat, pat]).fetchone()[0])  # type: ignore[index]
        pools: tuple[tuple[int, int], ...] = ()
        detail = ""
        if kind == "db_pool_exhausted":
            found = sorted({(int(a), int(b)) for _, _, ex in rows
                            for a, b in _POOL.findall(ex or "")})
            pools = tuple(found)
            detail = "pool in effect: " + ", ".join(f"size {a} overflow {b}" for a, b in found)
        out.append(Symptom(kind, sum(by_service.values()), by_service, failed, detail, pools))
    return out


def _host_skew(con: duckdb.DuckDBPyConnection) -> list[Symptom]:
    rows = con.execute(
        "SELECT host, count(DISTINCT instance_uuid) AS n FROM events "
        "WHERE service = 'nova-compute' AND host IS NOT NULL GROUP BY host "
        "ORDER BY n DESC, host").fetchall()
    hosts = len(rows)
    total = sum(int(n) for _, n in rows)
    if hosts < 2 or total < SKEW_MIN_BUILDS:
        return []
    top_host, top = str(rows[0][0]), int(rows[0][1])
    if top * 2 < total or 2 * top * hosts < 3 * total:
        return []
    detail = (f"host {top_host} took {top} of {total} builds across {hosts} compute hosts "
              f"({100 * top / total:.0f} %)")
    return [Symptom("host_skew", top, {"nova-compute": top}, 0, detail)]


def symptoms_of_run(store: RunStore) -> list[Symptom]:
    """Every symptom the run at ``store`` shows (kinds in the module docstring), from its
    ``events`` table (and ``traces`` when present); ``[]`` when the run has no events."""
    if not store.has("events"):
        return []
    with store.connect(read_only=True) as con:
        return _log_symptoms(con, store.has("traces")) + _host_skew(con)
