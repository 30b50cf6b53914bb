"""Finding: a host whose log times are local time, not UTC (issue 7, defect 8).

oslo.log writes ``asctime`` without a zone (``oslo_log/formatters.py``); stacklens assumes UTC
unless told ``--tz``. A ``stacklens run`` records when its client (UTC) sent each create, and
nova-api's first record of that request is its receipt: a consistent difference of a whole
number of quarter hours between the two is a zone, not queueing or clock skew
(:func:`stacklens.zoneguess.detect_offset` decides).
"""

from __future__ import annotations

from typing import Any

import duckdb

from stacklens.zoneguess import detect_offset

__all__ = ["PAIRS_SQL", "local_time_findings"]

#: (host, client submit ns, nova-api's first record ns) per create the client made.
PAIRS_SQL = """
    SELECT s.host, r.submit_ns, min(s.start_ns) AS server_ns
    FROM requests r
    JOIN traces t ON t.request_id = r.request_id
    JOIN spans s ON s.trace_id = t.trace_id AND s.service = 'nova-api'
    WHERE r.submit_ns IS NOT NULL AND s.start_ns IS NOT NULL AND s.host IS NOT NULL
    GROUP BY s.host, r.name, r.submit_ns
"""


def local_time_findings(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """One ``local_time`` finding per nova-api host whose times are off the client's UTC by a
    whole number of quarter hours; ``[]`` when the run has no client records or no such host.
    Finding: ``{rule, severity, text, evidence: {host, offset_s, pairs}}``."""
    by_host: dict[str, list[tuple[int, int]]] = {}
    for host, client_ns, server_ns in con.execute(PAIRS_SQL).fetchall():
        by_host.setdefault(host, []).append((client_ns, server_ns))
    out = []
    for host, pairs in sorted(by_host.items()):
        guess = detect_offset(pairs)
        if guess.offset_s is None:
            continue
        out.append({
            "rule": "local_time",
            "severity": "warning",
            "text": f"{host} logs local time, not UTC: {guess.reason}; every cross-host time "
                    "of this host is shifted until then",
            "evidence": {"host": host, "offset_s": guess.offset_s, "pairs": len(pairs)},
        })
    return out
