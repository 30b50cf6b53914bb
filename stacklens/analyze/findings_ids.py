"""Finding ``request_id_reuse``: a service whose access lines repeat request ids.

A request id names one request: each server-side access line (``"POST /v2.0/ports HTTP/1.1"
status: 201 ...``) should carry its own. When many access lines of a service share ids, the
service logged records with the context of *another* request in flight, and every record of
it (spans, retries, errors) may be attributed to the wrong request. Seen on the lab's
neutron-server 26.0.6 (2025.1, eventlet ``neutron-server``): ``neutron/common/eventlet_utils.py``
imports ``oslo_log`` (and with it ``oslo_context``, whose ``_request_store`` is a
``threading.local()`` made at import) before it calls ``eventlet.monkey_patch()``, so the store
is one real thread-local shared by all green threads and a record carries the context last
stored by any request (one lab log of 206 concurrent port creates: 220 port access lines
under 122 ids). The client's
records (``requests``: the id neutron returned in ``X-OpenStack-Request-ID``) stay exact.

The rule's SQL and judge live here; :mod:`stacklens.analyze.findings` registers them.
"""

from __future__ import annotations

from typing import Any

from stacklens.vocab import CLIENT_LOGGER_SUFFIX

__all__ = ["MIN_SHARE", "MIN_SHARED", "REQUEST_ID_REUSE_SQL", "request_id_reuse"]

#: fewest access lines sharing ids, and least share of a service's access lines, to speak
MIN_SHARED = 5
MIN_SHARE = 0.05

REQUEST_ID_REUSE_SQL = f"""
    WITH a AS (SELECT service, request_id, count(*) AS n FROM events
               WHERE http_status IS NOT NULL AND request_id IS NOT NULL
                 AND NOT coalesce(logger, '') LIKE '%{CLIENT_LOGGER_SUFFIX}'
               GROUP BY service, request_id)
    SELECT service, sum(n) AS lines, count(*) AS ids,
           sum(CASE WHEN n > 1 THEN n ELSE 0 END) AS shared_lines, max(n) AS most
    FROM a GROUP BY service
    HAVING sum(CASE WHEN n > 1 THEN n ELSE 0 END) > 0
    ORDER BY shared_lines DESC, service
"""


def request_id_reuse(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Services whose access lines repeat request ids (see the module docstring). Fires when at
    least :data:`MIN_SHARED` access lines, and :data:`MIN_SHARE` of the service's access lines,
    carry a request id another access line also carries."""
    bad = [r for r in rows if r["shared_lines"] >= MIN_SHARED
           and r["shared_lines"] >= MIN_SHARE * r["lines"]]
    if not bad:
        return None
    words = "; ".join(
        f"{r['service']}: {r['shared_lines']:,} of {r['lines']:,} access lines share a request "
        f"id with another ({r['ids']:,} ids, one on {r['most']} lines)" for r in bad)
    return {"rule": "request_id_reuse", "severity": "warning",
            "text": (f"request ids repeat on access lines, {words}: records were logged with "
                     "another request's context (neutron-server under eventlet shares one "
                     "oslo.context store between green threads), so their spans and retries "
                     "may belong to other requests; the client records (requests) are exact"),
            "evidence": {r["service"]: {"access_lines": r["lines"], "ids": r["ids"],
                                        "shared_lines": r["shared_lines"]} for r in bad}}
