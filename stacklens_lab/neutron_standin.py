"""A loopback neutron *stand-in*: not neutron, just enough of its API to answer nova.

Servers in the lab boot with ``"networks": "none"`` (microversion >= 2.37), yet nova still calls
neutron's list endpoints when it shows and deletes a server (``shared/docs/lab-notes.md``). This
stand-in answers every ``GET /v2.0/<resource>`` with an empty list, ``GET /v2.0/<resource>/<id>``
with 404 and everything else with 404, and writes one oslo.log-style access line per request
(DEBUG-free, ``[<caller's global request id> req-<own id> ...]``) to
``logs/controller/var/log/neutron/neutron-standin.log`` so that stacklens shows its calls under
the service name ``neutron-standin``, never as a real neutron-server.

Run as ``python -m stacklens_lab.neutron_standin --port N --log FILE``; binds 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import uuid
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from threading import Lock
from urllib.parse import urlsplit

__all__ = ["StandinHandler", "main", "respond"]

_LOG_LOCK = Lock()


def respond(method: str, path: str) -> tuple[int, dict]:
    """The stand-in's whole API: ``(status, body)`` for one request. Pure."""
    parts = [p for p in urlsplit(path).path.split("/") if p]
    if method == "GET" and not parts:
        return 200, {"versions": [{"id": "v2.0", "status": "CURRENT",
                                   "links": [{"rel": "self", "href": "/v2.0/"}]}]}
    if method == "GET" and len(parts) == 2 and parts[0] == "v2.0":
        resource = parts[1].removesuffix(".json").replace("-", "_")
        return 200, {resource: []}
    return 404, {"NeutronError": {"type": "NotFound", "detail": "",
                                  "message": "stacklens neutron stand-in: nothing here"}}


class StandinHandler(BaseHTTPRequestHandler):
    """Answers with :func:`respond` and logs one oslo.log-style line per request."""

    log_path: Path = Path("neutron-standin.log")
    server_version = "stacklens-neutron-standin"

    def _handle(self) -> None:
        t0 = time.perf_counter()
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        status, body = respond(self.command, self.path)
        data = json.dumps(body).encode()
        req_id = f"req-{uuid.uuid4()}"
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("X-OpenStack-Request-ID", req_id)
        self.end_headers()
        self.wfile.write(data)
        caller = self.headers.get("X-OpenStack-Request-ID") or "None"
        now = datetime.now()
        line = (f"{now:%Y-%m-%d %H:%M:%S}.{now.microsecond // 1000:03d} {os.getpid()} INFO "
                f"neutron_standin.wsgi [{caller} {req_id} - - - - -] {self.client_address[0]} "
                f'"{self.command} {self.path} {self.request_version}" status: {status}  '
                f"len: {len(data)} time: {time.perf_counter() - t0:.7f}\n")
        with _LOG_LOCK, open(self.log_path, "a", encoding="utf-8") as f:
            f.write(line)

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _handle

    def log_message(self, format, *args):  # noqa: A002 - stdlib signature
        """Silence the stdlib's stderr access log (the oslo-style file has it)."""


def main(argv: list[str] | None = None) -> None:
    """Serve until SIGTERM."""
    ap = argparse.ArgumentParser(prog="neutron_standin", description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--log", type=Path, required=True)
    a = ap.parse_args(argv)
    a.log.parent.mkdir(parents=True, exist_ok=True)
    StandinHandler.log_path = a.log
    ThreadingHTTPServer.daemon_threads = True
    ThreadingHTTPServer(("127.0.0.1", a.port), StandinHandler).serve_forever()


if __name__ == "__main__":
    main()
