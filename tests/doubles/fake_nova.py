"""A fake compute API with its own state machine, for tests and the driver benchmark.

It is not nova: it answers the few calls the driver makes (create, list with ``name`` /
``changes-since`` / paging, show, delete, flavors, images, os-services) the way nova 2.37+
does, and moves servers through ``BUILD -> ACTIVE | ERROR`` and ``deleting -> DELETED`` as it is
polled. A server changes state only when a list call observes it, after ``polls_to_active``
list calls and ``build_s`` seconds (likewise for deletes), so tests are deterministic under any
clock. Failure injection: every k-th POST answered 500, refused at the connection, or slow;
every k-th server ends in ERROR with a fault.

Use :meth:`FakeNova.transport` with ``httpx.AsyncClient`` (an ``httpx.MockTransport``), or
:func:`serve` for a real HTTP/1.1 server on loopback (``python tests/doubles/fake_nova.py
--port 0`` prints ``port N`` and serves until killed or ``--max-s`` passes; used by
``bench/drive_bench.py`` and the CLI tests).
"""

from __future__ import annotations

import asyncio
import email.utils
import itertools
import json
import re
import time
import uuid
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import httpx

__all__ = ["FakeNova", "FakeServer", "serve"]


def _iso(ts: float, micro: bool = False) -> str:
    d = datetime.fromtimestamp(ts, UTC)
    return d.strftime("%Y-%m-%dT%H:%M:%S.%f") if micro else d.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class FakeServer:
    """One fake instance."""

    id: str
    name: str
    index: int
    created: float
    updated: float
    global_request_id: str | None = None
    status: str = "BUILD"
    task_state: str | None = "scheduling"
    host: str | None = None
    launched: float | None = None
    terminated: float | None = None
    fails: bool = False
    delete_at: float | None = None
    polls: int = 0
    fault: dict[str, Any] | None = None

    @property
    def deleted(self) -> bool:
        """Gone (shown only to changes-since queries)."""
        return self.status == "DELETED"

    def view(self, admin: bool) -> dict[str, Any]:
        """The server as ``GET /servers/detail`` shows it."""
        d: dict[str, Any] = {
            "id": self.id, "name": self.name, "status": self.status,
            "created": _iso(self.created), "updated": _iso(self.updated),
            "OS-EXT-STS:task_state": self.task_state,
            "OS-SRV-USG:launched_at": _iso(self.launched, True) if self.launched else None,
            "OS-SRV-USG:terminated_at": _iso(self.terminated, True) if self.terminated else None,
            "addresses": {}, "links": [],
        }
        if admin:
            d["OS-EXT-SRV-ATTR:host"] = self.host
        if self.fault:
            d["fault"] = self.fault
        return d


@dataclass
class FakeNova:
    """State and request handling of the fake compute API. ``now`` is its clock (seconds)."""

    now: Callable[[], float] = time.time
    polls_to_active: int = 2
    build_s: float = 0.0
    polls_to_gone: int = 1
    delete_s: float = 0.0
    hosts: int = 4
    page_size: int = 1000
    admin: bool = True
    post_500_every: int = 0
    post_refuse_every: int = 0
    error_every: int = 0
    post_latency_s: float = 0.0
    fault_message: str = "No valid host was found. There are not enough hosts available."
    servers: dict[str, FakeServer] = field(default_factory=dict)
    calls: Counter = field(default_factory=Counter)
    list_times: list[float] = field(default_factory=list)
    posts_open: int = 0
    posts_open_max: int = 0
    _posts: int = 0
    _host_cycle: Any = None

    def __post_init__(self) -> None:
        self._host_cycle = itertools.cycle([f"fake-{i}" for i in range(1, self.hosts + 1)])

    # -- state machine -------------------------------------------------------------------
    def _tick(self) -> None:
        now = self.now()
        for s in self.servers.values():
            if s.status == "BUILD" and s.delete_at is None:
                s.polls += 1
                if s.polls >= self.polls_to_active and now - s.created >= self.build_s:
                    s.polls, s.updated, s.task_state = 0, now, None
                    if s.fails:
                        s.status = "ERROR"
                        s.fault = {"code": 500, "message": self.fault_message,
                                   "created": _iso(now)}
                    else:
                        s.status, s.host, s.launched = "ACTIVE", next(self._host_cycle), now
            elif s.delete_at is not None and not s.deleted:
                s.polls += 1
                if s.polls >= self.polls_to_gone and now - s.delete_at >= self.delete_s:
                    s.status, s.task_state, s.updated, s.terminated = "DELETED", None, now, now

    @property
    def live(self) -> list[FakeServer]:
        """Servers not deleted."""
        return [s for s in self.servers.values() if not s.deleted]

    # -- HTTP -----------------------------------------------------------------------------
    def _resp(self, status: int, body: Any = None, req: str | None = None) -> tuple[int, dict, bytes]:
        req = req or f"req-{uuid.uuid4()}"
        headers = {"x-openstack-request-id": req, "x-compute-request-id": req,
                   "date": email.utils.formatdate(self.now(), usegmt=True),
                   "content-type": "application/json"}
        return status, headers, (json.dumps(body).encode() if body is not None else b"")

    def _fault(self, status: int, kind: str, msg: str) -> tuple[int, dict, bytes]:
        return self._resp(status, {kind: {"code": status, "message": msg}})

    def handle(self, method: str, path: str, query: Mapping[str, str], headers: Mapping[str, str],
               body: bytes) -> tuple[int, dict[str, str], bytes]:
        """Answer one request: (status, headers, body)."""
        h = {k.lower(): v for k, v in headers.items()}
        if not h.get("x-auth-token"):
            return self._fault(401, "unauthorized", "no X-Auth-Token")
        parts = [p for p in path.split("/") if p]
        if parts and re.fullmatch(r"v2(\.1)?", parts[0]):
            parts = parts[1:]
        route = "/".join(parts)
        self.calls[(method, route if len(parts) < 2 or parts[1] == "detail" else parts[0] + "/{id}")] += 1
        if method == "POST" and route == "servers":
            return self._create(h, body)
        if method == "GET" and route == "servers/detail":
            return self._list(query)
        if len(parts) == 2 and parts[0] == "servers":
            s = self.servers.get(parts[1])
            if s is None or s.deleted:
                return self._fault(404, "itemNotFound", f"Instance {parts[1]} could not be found.")
            if method == "DELETE":
                if s.delete_at is None:
                    s.delete_at, s.task_state, s.updated, s.polls = self.now(), "deleting", self.now(), 0
                return self._resp(204)
            if method == "GET":
                return self._resp(200, {"server": s.view(self.admin)})
        if method == "GET" and route == "flavors/detail":
            return self._resp(200, {"flavors": [{"id": "1", "name": "m1.tiny"},
                                                {"id": "2", "name": "m1.small"}]})
        if method == "GET" and route == "images":
            return self._resp(200, {"images": [{"id": "5e0cbc1e-0000-4000-8000-000000000001",
                                                "name": "cirros"}]})
        if method == "GET" and route == "os-services":
            return self._resp(200, {"services": [
                {"binary": "nova-compute", "host": f"fake-{i}", "state": "up", "status": "enabled"}
                for i in range(1, self.hosts + 1)]})
        return self._fault(404, "itemNotFound", f"no route {method} /{route}")

    def _create(self, h: Mapping[str, str], body: bytes) -> tuple[int, dict, bytes]:
        self._posts += 1
        k = self._posts
        if self.post_500_every and k % self.post_500_every == 0:
            return self._fault(500, "computeFault", "Unexpected API Error (injected).")
        mv = h.get("openstack-api-version", "compute 2.1").split()[-1]
        try:
            server = json.loads(body)["server"]
        except (ValueError, KeyError, TypeError):
            return self._fault(400, "badRequest", "Malformed request body")
        if server.get("networks") in ("none", "auto") and int(mv.split(".")[1]) < 37:
            return self._fault(400, "badRequest", "networks none/auto needs microversion 2.37")
        n = int(server.get("max_count", 1))
        now = self.now()
        first = None
        for i in range(n):
            idx = len(self.servers)
            name = server["name"] if n == 1 else f"{server['name']}-{i + 1}"
            s = FakeServer(str(uuid.uuid4()), name, idx, now, now,
                           global_request_id=h.get("x-openstack-request-id"),
                           fails=bool(self.error_every and (idx + 1) % self.error_every == 0))
            self.servers[s.id] = s
            first = first or s
        assert first is not None
        return self._resp(202, {"server": {"id": first.id, "links": []}})

    def _list(self, q: Mapping[str, str]) -> tuple[int, dict, bytes]:
        if "marker" not in q:
            self._tick()
            self.list_times.append(self.now())
        since = q.get("changes-since")
        since_s = datetime.fromisoformat(since.replace("Z", "+00:00")).timestamp() if since else None
        pat = re.compile(q.get("name", ""))
        rows = [s for s in reversed(self.servers.values())  # nova: newest first
                if pat.search(s.name)
                and (s.updated >= since_s if since_s is not None else not s.deleted)]
        if "marker" in q:
            ids = [s.id for s in rows]
            rows = rows[ids.index(q["marker"]) + 1:] if q["marker"] in ids else []
        limit = min(int(q.get("limit", self.page_size)), self.page_size)
        page = rows[:limit]
        body: dict[str, Any] = {"servers": [s.view(self.admin) for s in page]}
        if len(rows) > limit:
            nq = {k: v for k, v in q.items() if k != "marker"}
            nq.update(limit=str(limit), marker=page[-1].id)
            body["servers_links"] = [{"rel": "next",
                                      "href": f"http://fake/v2.1/servers/detail?{urlencode(nq)}"}]
        return self._resp(200, body)

    # -- transports ------------------------------------------------------------------------
    def transport(self) -> httpx.MockTransport:
        """An ``httpx.MockTransport`` answering with this fake (async, so latency can apply)."""

        async def handler(request: httpx.Request) -> httpx.Response:
            if request.method == "POST":
                self.posts_open += 1
                self.posts_open_max = max(self.posts_open_max, self.posts_open)
                try:
                    if self.post_refuse_every and (self._posts + 1) % self.post_refuse_every == 0:
                        self._posts += 1
                        raise httpx.ConnectError("connection refused (injected)", request=request)
                    if self.post_latency_s:
                        await asyncio.sleep(self.post_latency_s)
                    st, hd, bd = self.handle(request.method, request.url.path,
                                             dict(request.url.params), request.headers,
                                             request.content)
                finally:
                    self.posts_open -= 1
            else:
                st, hd, bd = self.handle(request.method, request.url.path,
                                         dict(request.url.params), request.headers,
                                         request.content)
            return httpx.Response(st, headers=hd, content=bd)

        return httpx.MockTransport(handler)


_REASONS = {200: "OK", 202: "Accepted", 204: "No Content", 400: "Bad Request",
            401: "Unauthorized", 404: "Not Found", 500: "Internal Server Error"}


async def _connection(nova: FakeNova, reader: asyncio.StreamReader,
                      writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            line = await reader.readline()
            if not line.strip():
                break
            method, target, _ = line.decode("latin-1").split(" ", 2)
            headers: dict[str, str] = {}
            while True:
                h = await reader.readline()
                if h in (b"\r\n", b"\n", b""):
                    break
                k, _, v = h.decode("latin-1").partition(":")
                headers[k.strip().lower()] = v.strip()
            n = int(headers.get("content-length") or 0)
            body = await reader.readexactly(n) if n else b""
            u = urlsplit(target)
            if method == "POST" and nova.post_latency_s:
                await asyncio.sleep(nova.post_latency_s)
            st, hd, bd = nova.handle(method, u.path, dict(parse_qsl(u.query)), headers, body)
            head = "".join(f"{k}: {v}\r\n" for k, v in hd.items())
            writer.write(f"HTTP/1.1 {st} {_REASONS.get(st, 'Status')}\r\n{head}"
                         f"content-length: {len(bd)}\r\n\r\n".encode("latin-1") + bd)
            await writer.drain()
            if headers.get("connection", "").lower() == "close":
                break
    except (ConnectionError, asyncio.IncompleteReadError, ValueError):
        pass
    finally:
        writer.close()


async def serve(nova: FakeNova, host: str = "127.0.0.1", port: int = 0) -> asyncio.Server:
    """Serve ``nova`` over HTTP/1.1 on ``host:port`` (loopback only by default)."""
    return await asyncio.start_server(lambda r, w: _connection(nova, r, w), host, port,
                                      backlog=4096)


def main(argv: list[str] | None = None) -> None:
    """``python tests/doubles/fake_nova.py``: serve a fake nova on 127.0.0.1."""
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--build-s", type=float, default=0.0)
    ap.add_argument("--delete-s", type=float, default=0.0)
    ap.add_argument("--polls-to-active", type=int, default=1)
    ap.add_argument("--post-latency-s", type=float, default=0.0)
    ap.add_argument("--post-500-every", type=int, default=0)
    ap.add_argument("--error-every", type=int, default=0)
    ap.add_argument("--hosts", type=int, default=10)
    ap.add_argument("--max-s", type=float, default=600.0, help="stop after this many seconds")
    a = ap.parse_args(argv)
    nova = FakeNova(build_s=a.build_s, delete_s=a.delete_s, polls_to_active=a.polls_to_active,
                    polls_to_gone=1, post_latency_s=a.post_latency_s,
                    post_500_every=a.post_500_every, error_every=a.error_every, hosts=a.hosts)

    async def run() -> None:
        server = await serve(nova, "127.0.0.1", a.port)
        print(f"port {server.sockets[0].getsockname()[1]}", flush=True)
        async with server:
            await asyncio.sleep(a.max_s)

    try:
        asyncio.run(run())
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
