"""Facts extracted from well-known OpenStack messages, as extra ``events`` columns.

Sources of the formats (read in the OpenStack code):

* wsgi access lines: eventlet ``wsgi_log_format`` default in nova/cinder/glance
  (``%(client_ip)s "%(request_line)s" status: %(status_code)s len: %(body_length)s time:
  %(wall_seconds).7f``), nova-api under a WSGI server (2025.1, ``nova/api/openstack/
  requestlog.py``: ``"POST /v2.1/servers" status: 202 len: 372 microversion: 2.37 time: 0.52``)
  and neutron's ``"GET /v2.0/ports HTTP/1.1" 200 1234 0.012``.
* tempest ``rest_client``: ``Request (Test:test_x): 202 POST http://.../servers 1.301s``.
* nova compute timing: ``Took 12.3 seconds to spawn the instance on the hypervisor.``
* oslo.messaging amqpdriver DEBUG lines: ``CALL msg_id: <32 hex> exchange 'nova' topic
  'conductor'``, ``CAST unique_id: ...``, ``received message msg_id: ... reply to ...``,
  ``received message with unique_id: ...``, ``sending reply msg_id: ...``, ``received reply
  msg_id: ...``.
* oslo.concurrency lockutils: ``Lock "x" acquired by "f" :: waited 0.001s`` and
  ``Lock "x" released by "f" :: held 0.010s`` (quoted ``"released"`` in newer releases).
"""

from __future__ import annotations

import polars as pl

__all__ = ["add_facts"]

_M = r"(GET|POST|PUT|DELETE|PATCH|HEAD|OPTIONS)"
_WSGI = r"\"" + _M + r" (\S+)(?: HTTP/\d\.\d)?\"(?: status:)? (\d{3}) (?:len: )?\d+(?: microversion: \S+)?(?: time:)? (\d+\.\d+)"
_CLIENT = r"^Request \([^)]*\): (\d{3}) " + _M + r" (\S+)(?: (\d+\.\d+)s)?"
_TOOK = r"Took (\d+(?:\.\d+)?) seconds to ([^.]*)"
_RPC = (
    r"(CALL msg_id|CAST unique_id|received message msg_id|received message with unique_id"
    r"|sending reply msg_id|received reply msg_id): ([0-9a-f]{32})"
)
_RPC_TOPIC = r"(?:CALL msg_id|CAST unique_id): [0-9a-f]{32} (?:exchange '[^']*'|FANOUT) topic '([^']*)'"
_RPC_KIND = {
    "CALL msg_id": "call",
    "CAST unique_id": "cast",
    "received message msg_id": "recv_call",
    "received message with unique_id": "recv_cast",
    "sending reply msg_id": "reply_send",
    "received reply msg_id": "reply_recv",
}
_LOCK = r"Lock \"([^\"]+)\" \"?(?:acquired|released)\"? by \"[^\"]+\" :: (waited|held) (\d+\.\d+)s"


def _num(e: pl.Expr) -> pl.Expr:
    return e.cast(pl.Float64, strict=False)


def add_facts(events: pl.DataFrame) -> pl.DataFrame:
    """Add the fact columns of :data:`stacklens.schema.EVENTS` (``http_*``, ``took_*``,
    ``rpc_*``, ``lock_*``) to a frame with a ``message`` column; null where absent."""
    m = pl.col("message")
    is_client = pl.col("logger").str.ends_with("rest_client")
    lock_kind = m.str.extract(_LOCK, 2)
    return (
        events.with_columns(
            _w=m.str.extract_groups(_WSGI),
            _c=pl.when(is_client).then(m.str.extract_groups(_CLIENT)),
            took_s=_num(m.str.extract(_TOOK, 1)),
            took_what=m.str.extract(_TOOK, 2),
            rpc_kind=m.str.extract(_RPC, 1).replace_strict(_RPC_KIND, default=None),
            rpc_id=m.str.extract(_RPC, 2),
            rpc_topic=m.str.extract(_RPC_TOPIC, 1),
            lock_name=m.str.extract(_LOCK, 1),
            lock_waited_s=pl.when(lock_kind == "waited").then(_num(m.str.extract(_LOCK, 3))),
            lock_held_s=pl.when(lock_kind == "held").then(_num(m.str.extract(_LOCK, 3))),
        )
        .with_columns(
            http_method=pl.coalesce(pl.col("_c").struct[1], pl.col("_w").struct[0]),
            http_path=pl.coalesce(
                pl.col("_c").struct[2].str.replace(r"^https?://[^/]+", ""), pl.col("_w").struct[1]
            ),
            http_status=pl.coalesce(pl.col("_c").struct[0], pl.col("_w").struct[2]).cast(
                pl.Int32, strict=False
            ),
            http_dur_s=_num(pl.coalesce(pl.col("_c").struct[3], pl.col("_w").struct[3])),
        )
        .drop("_w", "_c")
    )
