#!/usr/bin/env python3
"""A keystone stand-in for the Rally comparison (bench/drive_vs_rally.py): NOT keystone, just
enough of its v3 API for keystoneauth1, on 127.0.0.1 only.

The lab runs nova with ``noauth2`` and no keystone, but rally-openstack authenticates only
through keystone. This answers version discovery and ``POST /v3/auth/tokens`` with the noauth2
token ``admin:admin`` as ``X-Subject-Token`` (user and project ``admin``, role ``admin``) and a
catalog pointing at the lab's nova, glance, placement and neutron stand-in. It prints
``port N`` when listening, logs each request to ``--log``, and stops on SIGTERM or after
``--max-s`` seconds.

    python bench/keystone_standin.py --port-base 31700 [--log FILE] [--max-s 3600]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

NOAUTH_TOKEN = "admin:admin"


def _catalog(base: str, port_base: int) -> list[dict[str, Any]]:
    def ep(stype: str, name: str, url: str) -> dict[str, Any]:
        return {"id": name, "type": stype, "name": name, "endpoints": [
            {"id": f"{name}-public", "interface": "public", "region": "RegionOne",
             "region_id": "RegionOne", "url": url}]}
    return [
        ep("compute", "nova", f"http://127.0.0.1:{port_base + 74}/v2.1"),
        ep("image", "glance", f"http://127.0.0.1:{port_base + 92}"),
        ep("placement", "placement", f"http://127.0.0.1:{port_base + 78}"),
        ep("network", "neutron-standin", f"http://127.0.0.1:{port_base + 96}"),
        ep("identity", "keystone-standin", f"{base}/v3"),
    ]


class _KeystoneStandin(BaseHTTPRequestHandler):
    base = ""
    port_base = 0
    log_file = None
    server_version = "stacklens-bench-keystone-standin"

    def _send(self, code: int, body: dict, headers: tuple = ()) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _version(self) -> dict:
        return {"id": "v3.14", "status": "stable", "updated": "2020-04-07T00:00:00Z",
                "links": [{"rel": "self", "href": f"{self.base}/v3/"}],
                "media-types": [{"base": "application/json",
                                 "type": "application/vnd.openstack.identity-v3+json"}]}

    def _not_found(self) -> None:
        self._send(404, {"error": {"code": 404, "title": "Not Found",
                                   "message": "keystone stand-in (stacklens bench): not here"}})

    def do_GET(self) -> None:  # noqa: N802
        p = self.path.split("?")[0].rstrip("/")
        if p == "":
            self._send(300, {"versions": {"values": [self._version()]}})
        elif p == "/v3":
            self._send(200, {"version": self._version()})
        else:
            self._not_found()

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path.split("?")[0].rstrip("/") != "/v3/auth/tokens":
            return self._not_found()
        dom = {"id": "default", "name": "Default"}
        self._send(201, {"token": {
            "methods": ["password"], "expires_at": "2099-01-01T00:00:00.000000Z",
            "issued_at": time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime()),
            "audit_ids": [uuid.uuid4().hex[:22]],
            "user": {"id": "admin", "name": "admin", "domain": dom, "password_expires_at": None},
            "project": {"id": "admin", "name": "admin", "domain": dom},
            "roles": [{"id": "admin", "name": "admin"}, {"id": "member", "name": "member"}],
            "is_domain": False, "catalog": _catalog(self.base, self.port_base)}},
            (("X-Subject-Token", NOAUTH_TOKEN),))

    def log_message(self, fmt: str, *args: Any) -> None:
        if self.log_file:
            with open(self.log_file, "a") as f:
                f.write(f"{time.time():.3f} {self.command} {self.path} {fmt % args}\n")


def standin_main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser(prog="keystone_standin.py")
    ap.add_argument("--port-base", type=int, required=True, help="the lab's --port-base")
    ap.add_argument("--log", default=None)
    ap.add_argument("--max-s", type=float, default=3600.0, help="stop by itself after this")
    a = ap.parse_args(argv)
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _KeystoneStandin)
    srv.daemon_threads = True
    _KeystoneStandin.base = f"http://127.0.0.1:{srv.server_address[1]}"
    _KeystoneStandin.port_base = a.port_base
    _KeystoneStandin.log_file = a.log
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    print(f"port {srv.server_address[1]}", flush=True)
    time.sleep(a.max_s)
    srv.shutdown()


if __name__ == "__main__":
    standin_main(sys.argv[1:])
