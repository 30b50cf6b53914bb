"""The field's vocabulary, written once: id patterns, log levels, RPC kinds, outcomes, and the
test that tells a client line from a server line.

Every stage imports these names instead of spelling them again (the UUID pattern was written five
times, the outcome list three times). The module sits at the bottom of the layers: it imports
nothing of stacklens, and nothing but Polars (for :func:`is_client`).

Sources: OpenStack request ids are ``req-`` + a UUID4 (oslo.context ``generate_request_id``,
Havana to 2025.1); instance, volume and port ids are UUIDs written with dashes (nova, cinder and
neutron APIs), and some log lines write them without dashes (nova's ``instance_uuid`` in SQL
traces), hence :data:`UUID_LOOSE`. Levels are Python logging's names plus oslo.log's ``AUDIT``
(until Kilo) and ``TRACE`` (traceback lines before oslo.log 1.2.0). RPC kinds are what
:mod:`stacklens.ingest.facts` reads from oslo.messaging's DEBUG lines (``CALL msg_id``,
``CAST unique_id``, ``received message``, ``sending reply``, ``received reply``). Outcomes are those of
:mod:`stacklens.trace.classify` (field-notes section 4).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

import polars as pl

__all__ = [
    "CLIENT_LOGGER_SUFFIX",
    "DECIDED_OUTCOMES",
    "DONE_OUTCOMES",
    "ERROR_LEVELS",
    "LEVELS",
    "OUTCOMES",
    "Outcome",
    "REQ_ID",
    "RPC_SENDS",
    "RpcKind",
    "UUID",
    "UUID_LOOSE",
    "is_client",
]

#: A UUID as OpenStack writes it in ids and paths: lowercase hex, 8-4-4-4-12 with dashes.
#: Written for Rust's ``regex`` crate and Python's ``re`` alike (no look-around).
UUID: Final = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"

#: A UUID with or without its dashes (32 hex digits).
UUID_LOOSE: Final = r"[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}"

#: A request id (oslo.context): ``req-`` followed by a UUID.
REQ_ID: Final = "req-" + UUID

#: Level names a record may carry (Python logging + oslo.log's AUDIT and TRACE).
LEVELS: Final = ("DEBUG", "INFO", "AUDIT", "WARNING", "ERROR", "CRITICAL", "TRACE")

#: Levels that mark a record as an error (an annotation of its trace, not its outcome).
ERROR_LEVELS: Final = ("ERROR", "CRITICAL")


class RpcKind(StrEnum):
    """The ``rpc_kind`` of an event (``events.rpc_kind``), from oslo.messaging DEBUG lines."""

    CALL = "call"  # ``CALL msg_id: X exchange 'nova' topic 'conductor'``
    CAST = "cast"  # ``CAST unique_id: X ...``
    RECV_CALL = "recv_call"  # ``received message msg_id: X reply to reply_...``
    RECV_CAST = "recv_cast"  # ``received message with unique_id: X``
    REPLY_SEND = "reply_send"  # ``sending reply msg_id: X reply queue: ...``
    REPLY_RECV = "reply_recv"  # ``received reply msg_id: X``


#: RPC kinds that send a message to another service.
RPC_SENDS: Final = (RpcKind.CALL.value, RpcKind.CAST.value)


class Outcome(StrEnum):
    """One outcome per trace (``traces.outcome``); definitions in :mod:`stacklens.trace.classify`
    and the rates over them in :mod:`stacklens.analyze.queries`."""

    SUCCESS = "success"  # done, first try
    RETRIED = "retried"  # done after a reschedule or retry
    FAILED = "failed"  # 5xx, error state, fault, NoValidHost, retry limit
    REJECTED = "rejected"  # 4xx: the cloud refused the request
    UNKNOWN = "unknown"  # the completion is not in the logs


#: Every outcome, in report order.
OUTCOMES: Final = tuple(o.value for o in Outcome)

#: Outcomes where the cloud did what was asked (the numerator of the success rate).
DONE_OUTCOMES: Final = (Outcome.SUCCESS.value, Outcome.RETRIED.value)

#: Outcomes that decide whether the cloud works (the denominator of the success rate).
DECIDED_OUTCOMES: Final = (*DONE_OUTCOMES, Outcome.FAILED.value)

#: A tempest/keystoneauth client line is logged by a logger whose name ends with this
#: (``tempest.lib.common.rest_client``): the client's view of a request, not the server's.
CLIENT_LOGGER_SUFFIX: Final = "rest_client"


def is_client(logger: pl.Expr | None = None) -> pl.Expr:
    """Polars expression: true for records of a client logger (:data:`CLIENT_LOGGER_SUFFIX`),
    false for server records and for records without a logger. ``logger`` defaults to
    ``pl.col("logger")``."""
    col = pl.col("logger") if logger is None else logger
    return col.fill_null("").str.ends_with(CLIENT_LOGGER_SUFFIX)
