"""RabbitMQ's management HTTP API: the firehose switch and periodic samples.

Endpoints (RabbitMQ management plugin, 3.x): ``GET/PUT /api/vhosts/<vhost>`` (the ``tracing``
flag is the firehose, as ``rabbitmqctl trace_on -p <vhost>``; a PUT must carry the vhost's
description and tags or it clears them), ``/api/overview`` (totals and rates),
``/api/queues/<vhost>``, ``/api/connections``. The user needs the ``administrator`` tag to
switch tracing and ``monitoring`` to read. All calls are synchronous (httpx) with a timeout.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx

__all__ = ["Management", "conn_label", "sample_rows"]


@dataclass
class Management:
    """A client for one broker's management API.

    ``url``: e.g. ``http://127.0.0.1:15672``; ``user``/``password``: management credentials;
    ``vhost``: the virtual host traced and sampled; ``timeout_s``: per HTTP call. Methods raise
    ``httpx.HTTPError`` on transport errors and HTTP error statuses."""

    url: str
    user: str = "guest"
    password: str = "guest"
    vhost: str = "/"
    timeout_s: float = 5.0

    def _client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url.rstrip("/"), auth=(self.user, self.password),
                            timeout=self.timeout_s)

    def _get(self, path: str, **params: str) -> Any:
        with self._client() as c:
            r = c.get(path, params=params or None)
            r.raise_for_status()
            return r.json()

    @property
    def _vhost_path(self) -> str:
        return "/api/vhosts/" + quote(self.vhost, safe="")

    def tracing(self) -> bool:
        """Whether the firehose is on for :attr:`vhost`."""
        return bool(self._get(self._vhost_path).get("tracing"))

    def set_tracing(self, on: bool) -> None:
        """Switch the firehose of :attr:`vhost` on or off, keeping its description and tags."""
        cur = self._get(self._vhost_path)
        body: dict[str, Any] = {"tracing": on}
        if cur.get("description") is not None:
            body["description"] = cur["description"]
        tags = cur.get("tags")
        if tags:
            body["tags"] = ",".join(tags) if isinstance(tags, list) else tags
        with self._client() as c:
            c.put(self._vhost_path, json=body).raise_for_status()

    def snapshot(self) -> dict[str, Any]:
        """One poll: ``{"overview": {...}, "queues": [...], "connections": [...]}`` as the API
        returns them (queues of :attr:`vhost` only)."""
        return {
            "overview": self._get("/api/overview"),
            "queues": self._get("/api/queues/" + quote(self.vhost, safe="")),
            "connections": self._get("/api/connections"),
        }


_OVERALL_TOTALS = ("connections", "channels", "queues", "consumers", "exchanges")
_OVERALL_QUEUE = ("messages", "messages_ready", "messages_unacknowledged")
_RATES = ("publish", "deliver_get", "ack", "redeliver", "return_unroutable", "drop_unroutable")
_QUEUE_KEYS = ("messages", "messages_ready", "messages_unacknowledged", "consumers", "memory")
_CONN_KEYS = ("channels", "recv_oct", "send_oct", "recv_cnt", "send_cnt")


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def sample_rows(snap: dict[str, Any], ts_ns: int, skip_conn: str | None = None
                ) -> list[dict[str, Any]]:
    """One :meth:`Management.snapshot` -> ``broker_samples`` rows (``ts_ns``, ``metric``,
    ``scope`` overall|queue|connection, ``object``, ``value``). Rates are per second
    (``<name>_rate``), byte counters in bytes, depths in messages. ``skip_conn``: the
    recorder's own connection name (``user_provided_name``), left out."""
    rows: list[dict[str, Any]] = []

    def add(metric: str, scope: str, obj: str, v: Any) -> None:
        x = _num(v)
        if x is not None:
            rows.append({"ts_ns": ts_ns, "metric": metric, "scope": scope, "object": obj,
                         "value": x})

    ov = snap.get("overview") or {}
    for k in _OVERALL_TOTALS:
        add(k, "overall", "", (ov.get("object_totals") or {}).get(k))
    for k in _OVERALL_QUEUE:
        add(k, "overall", "", (ov.get("queue_totals") or {}).get(k))
    stats = ov.get("message_stats") or {}
    for k in _RATES:
        add(k, "overall", "", stats.get(k))
        add(f"{k}_rate", "overall", "", (stats.get(f"{k}_details") or {}).get("rate"))
    for q in snap.get("queues") or []:
        name = str(q.get("name", ""))
        for k in _QUEUE_KEYS:
            add(k, "queue", name, q.get(k))
        qs = q.get("message_stats") or {}
        for k in ("publish", "deliver_get"):
            add(f"{k}_rate", "queue", name, (qs.get(f"{k}_details") or {}).get("rate"))
    for c in snap.get("connections") or []:
        name = conn_label(c)
        if skip_conn and name == skip_conn:
            continue
        for k in _CONN_KEYS:
            add(k, "connection", name, c.get(k))
    return rows


def conn_label(conn: dict[str, Any]) -> str:
    """A connection's client-given name (oslo.messaging: ``<binary>:<pid>:<uuid>``) or, without
    one, RabbitMQ's ``ip:port -> ip:port``."""
    props = conn.get("client_properties") or {}
    return str(conn.get("user_provided_name") or props.get("connection_name")
               or conn.get("name", ""))
