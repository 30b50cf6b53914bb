"""Decode one oslo.messaging message as RabbitMQ's firehose hands it over, into one plain row.

Sources of the formats (oslo.messaging 16.x, ``_drivers/``; the markers have been stable since
the envelope appeared in Icehouse):

* ``common.serialize_msg``: the 2.0 envelope ``{"oslo.version": "2.0", "oslo.message": "<the
  message as a JSON string>"}``. Notifications of the ``messaging`` (1.0) driver and very old
  RPC senders send the message dict unwrapped; both forms are read.
* ``amqpdriver.AMQPDriverBase._send``: every RPC message has ``_unique_id``; a *call* adds
  ``_msg_id`` and ``_reply_q`` (the caller's ``reply_<hex>`` queue) and ``_timeout``; the
  context goes flat into ``_context_<key>`` entries (``amqp.pack_context``). ``rpc/client``
  puts ``method``, ``args``, and ``namespace`` / ``version`` when the target has them.
* A *cast* goes to the topic exchange (``control_exchange``, ``nova``) with routing key
  ``topic`` or ``topic.server``; a *fanout* cast to the exchange ``<topic>_fanout``
  (``impl_rabbit.fanout_send``).
* ``amqpdriver.AMQPIncomingMessage._send_reply``: a *reply* is ``{"result", "failure",
  "ending", "_msg_id", "_unique_id"}`` sent to the default exchange with the reply queue as the
  routing key.
* A *notification* (``notify/messaging.py``) carries ``event_type``, ``priority``,
  ``publisher_id``, ``payload``, ``message_id``, ``timestamp`` and the flat context.
* RabbitMQ's firehose (``amq.rabbitmq.trace``, rabbit_trace): routing key ``publish.<exchange>``
  or ``deliver.<queue>``; headers ``exchange_name``, ``routing_keys`` (list), ``properties``,
  ``node``, ``connection``, ``channel``, ``user``, ``vhost``, ``redelivered`` (deliveries); the
  body is the original body.

Contexts are redacted (:func:`redact`) before anything is kept; message bodies are not kept.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

__all__ = [
    "CONTEXT_MAX_CHARS",
    "KINDS",
    "decode_body",
    "decode_trace",
    "redact",
    "split_conn_name",
]

#: Values of ``messages.kind``.
KINDS = ("call", "cast", "fanout", "reply", "notification", "unknown")

#: The redacted context is kept as JSON cut to this many characters.
CONTEXT_MAX_CHARS = 2048

_SECRET_KEY = re.compile(r"password|secret|token|auth_token|credential", re.IGNORECASE)
_CONTEXT = "_context_"
_MASK = "***"
_CTX_KEEP = ("user", "user_id", "project_id", "project", "tenant", "request_id",
             "global_request_id", "is_admin", "roles", "read_deleted", "timestamp",
             "user_name", "project_name")


def redact(value: Any) -> Any:
    """``value`` with every mapping entry whose key names a secret (password, secret, token,
    credential; any case) replaced by ``"***"``, recursively through dicts and lists."""
    if isinstance(value, Mapping):
        return {k: (_MASK if isinstance(k, str) and _SECRET_KEY.search(k) and v is not None
                    else redact(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v) for v in value]
    return value


def _unwrap(obj: Any) -> tuple[dict[str, Any] | None, str]:
    """The message dict and its envelope label ("2.0", "none") or (None, "undecodable")."""
    if not isinstance(obj, dict):
        return None, "undecodable"
    if "oslo.version" in obj and "oslo.message" in obj:
        inner = obj["oslo.message"]
        try:
            msg = json.loads(inner) if isinstance(inner, str | bytes) else inner
        except ValueError:
            return None, "undecodable"
        return (msg, str(obj["oslo.version"])) if isinstance(msg, dict) else (None, "undecodable")
    return obj, "none"


def _kind(msg: Mapping[str, Any], exchange: str | None) -> str:
    if "event_type" in msg and ("payload" in msg or "priority" in msg):
        return "notification"
    if "method" in msg:
        if msg.get("_msg_id"):
            return "call"
        return "fanout" if exchange and exchange.endswith("_fanout") else "cast"
    if "_msg_id" in msg and ("failure" in msg or "ending" in msg or "result" in msg):
        return "reply"
    return "unknown"


def decode_body(body: bytes | str, exchange: str | None = None,
                routing_key: str | None = None) -> dict[str, Any]:
    """The oslo.messaging fields of one message body (JSON, either envelope form).

    Returns a dict with keys ``envelope`` ("2.0", "none", "undecodable"), ``kind`` (one of
    :data:`KINDS`), ``method``, ``namespace``, ``version``, ``topic``, ``msg_id``,
    ``unique_id``, ``reply_q``, ``request_id``, ``global_request_id``, ``user_id``,
    ``project_id``, ``event_type``, ``priority``, ``failure`` (bool, replies), ``ending``
    (bool, replies) and ``context`` (redacted JSON text, at most :data:`CONTEXT_MAX_CHARS`);
    absent fields are None. ``topic``: the routing key of a call or cast (``compute.fake-1``),
    the exchange less ``_fanout`` for a fanout, the routing key of a notification. Never raises."""
    out: dict[str, Any] = dict.fromkeys((
        "method", "namespace", "version", "topic", "msg_id", "unique_id", "reply_q",
        "request_id", "global_request_id", "user_id", "project_id", "event_type", "priority",
        "failure", "ending", "context"))
    try:
        obj = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        obj = None
    msg, envelope = _unwrap(obj)
    out["envelope"] = envelope
    if msg is None:
        out["kind"] = "unknown"
        return out
    kind = out["kind"] = _kind(msg, exchange)
    ctx = {k[len(_CONTEXT):]: v for k, v in msg.items() if str(k).startswith(_CONTEXT)}
    if kind == "notification" and not ctx and isinstance(msg.get("context"), dict):
        ctx = msg["context"]
    out["method"] = _str(msg.get("method"))
    out["namespace"] = _str(msg.get("namespace"))
    out["version"] = _str(msg.get("version"))
    out["msg_id"] = _str(msg.get("_msg_id"))
    out["unique_id"] = _str(msg.get("_unique_id") or msg.get("message_id"))
    out["reply_q"] = _str(msg.get("_reply_q"))
    out["request_id"] = _str(ctx.get("request_id"))
    out["global_request_id"] = _str(ctx.get("global_request_id"))
    out["user_id"] = _str(ctx.get("user_id") or ctx.get("user"))
    out["project_id"] = _str(ctx.get("project_id") or ctx.get("tenant"))
    out["event_type"] = _str(msg.get("event_type"))
    out["priority"] = _str(msg.get("priority"))
    if kind == "reply":
        out["failure"] = bool(msg.get("failure"))
        out["ending"] = bool(msg.get("ending"))
    if kind == "fanout" and exchange:
        out["topic"] = exchange[: -len("_fanout")]
    elif kind in ("call", "cast", "notification"):
        out["topic"] = routing_key
    if ctx:
        kept = {k: ctx[k] for k in _CTX_KEEP if k in ctx}
        kept |= {k: v for k, v in ctx.items() if _SECRET_KEY.search(k)}  # masked below
        out["context"] = json.dumps(redact(kept), default=str, sort_keys=True)[
            :CONTEXT_MAX_CHARS]
    return out


def _str(v: Any) -> str | None:
    return None if v is None else str(v)


def split_conn_name(name: str | None) -> tuple[str | None, int | None]:
    """oslo.messaging's connection name ``<binary>:<pid>:<uuid>`` (impl_rabbit) -> (binary,
    pid); (None, None) for other names (RabbitMQ's own ``ip:port -> ip:port``)."""
    if not name:
        return None, None
    parts = name.split(":")
    if len(parts) == 3 and parts[1].isdigit() and "->" not in name:
        return parts[0], int(parts[1])
    return None, None


def _header(headers: Mapping[str, Any], key: str) -> Any:
    v = headers.get(key)
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else v


def decode_trace(trace_key: str, headers: Mapping[str, Any] | None, body: bytes,
                 ts_ns: int) -> dict[str, Any]:
    """One firehose message -> one ``messages`` row (:data:`stacklens.schema.MESSAGES`) less
    ``conn_name``/``client_*`` (the recorder fills them from the management API).

    ``trace_key``: the firehose routing key (``publish.<exchange>`` / ``deliver.<queue>``);
    ``headers``: the trace message's headers; ``body``: the original body (its length is
    ``size_bytes``); ``ts_ns``: when the recorder received it (ns since the epoch, UTC). Never
    raises: what cannot be read is ``kind = "unknown"``, ``envelope = "undecodable"``."""
    headers = headers or {}
    direction, _, name = trace_key.partition(".")
    exchange = _header(headers, "exchange_name")
    if exchange is None and direction == "publish":
        exchange = name
    keys = headers.get("routing_keys") or []
    rk = keys[0] if keys else None
    rk = rk.decode("utf-8", "replace") if isinstance(rk, bytes) else rk
    row = decode_body(body, exchange, rk)
    red = headers.get("redelivered")
    row.update(
        ts_ns=ts_ns, direction=direction, exchange=exchange if exchange is not None else "",
        routing_key=rk, queue=name if direction == "deliver" else None,
        size_bytes=len(body), node=_header(headers, "node"),
        connection=_header(headers, "connection"),
        redelivered=None if red is None else bool(red),
    )
    if row["kind"] == "reply" and row["reply_q"] is None:
        row["reply_q"] = rk  # a reply's routing key is the caller's reply queue
    return row
