"""The few nova and glance API calls ``lab up`` makes itself, over plain HTTP (stdlib only).

Authentication is nova's ``noauth2``: the token ``user:project`` in ``X-Auth-Token``; user
``admin`` gets the admin role (needed for os-services, os-hypervisors and flavors). Glance runs
without keystone and gives every request an admin context.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from datetime import UTC, datetime

from stacklens.errors import LabError

__all__ = ["Api", "FLAVOR", "IMAGE", "ensure_flavor", "ensure_image", "fresh_services"]

FLAVOR = {"name": "lab.tiny", "id": "lab-tiny", "ram": 64, "vcpus": 1, "disk": 1}
IMAGE = "stacklens-lab-image"
ADMIN_TOKEN = "admin:admin"
MICROVERSION = "2.37"  # lab-notes: "networks": "none" needs >= 2.37


@dataclass(frozen=True)
class Api:
    """One endpoint, e.g. ``Api("http://127.0.0.1:28774/v2.1")``."""

    base: str
    token: str = ADMIN_TOKEN
    microversion: str | None = MICROVERSION

    def call(self, method: str, path: str, body: object = None, *, data: bytes | None = None,
             content_type: str = "application/json", timeout_s: float = 60.0):
        """``(status, parsed JSON or None)``; HTTP errors are returned, network errors raise
        LabError."""
        headers = {"X-Auth-Token": self.token, "Accept": "application/json"}
        if self.microversion:
            headers["OpenStack-API-Version"] = f"compute {self.microversion}"
        if body is not None:
            data = json.dumps(body).encode()
        if data is not None:
            headers["Content-Type"] = content_type
        req = urllib.request.Request(self.base + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout_s) as r:
                status, raw = r.status, r.read()
        except urllib.error.HTTPError as e:
            status, raw = e.code, e.read()
        except OSError as e:
            raise LabError(f"lab: {method} {self.base}{path} failed: {e}") from e
        try:
            return status, json.loads(raw) if raw else None
        except ValueError:
            return status, None


def _ts(s: str | None) -> float:
    if not s:
        return 0.0
    # nova returns naive UTC times
    return datetime.fromisoformat(s.replace("Z", "")).replace(tzinfo=UTC).timestamp()


def fresh_services(nova: Api, since_utc: float) -> dict[str, set[str]]:
    """``binary -> hosts`` of services that are up *and* reported after ``since_utc`` (epoch s).

    lab-notes: after a restart over existing data, boots got NoValidHost until every compute
    had sent a fresh heartbeat; registration alone is not enough.
    """
    status, body = nova.call("GET", "/os-services")
    out: dict[str, set[str]] = {}
    if status != 200 or not body:
        return out
    for s in body.get("services", []):
        seen = max(_ts(s.get("updated_at")), _ts(s.get("created_at")))
        if s.get("state") == "up" and seen >= since_utc - 1:
            out.setdefault(s["binary"], set()).add(s["host"])
    return out


def ensure_flavor(nova: Api) -> str:
    """Create flavor ``lab.tiny`` unless it exists; return its id."""
    status, _ = nova.call("GET", f"/flavors/{FLAVOR['id']}")
    if status == 200:
        return str(FLAVOR["id"])
    status, body = nova.call("POST", "/flavors", {"flavor": FLAVOR})
    if status != 200:
        raise LabError(f"lab: could not create flavor {FLAVOR['name']}: HTTP {status} {body}")
    return str(FLAVOR["id"])


def ensure_image(glance: Api) -> str:
    """Create and upload the tiny raw image ``stacklens-lab-image`` unless it is active."""
    status, body = glance.call("GET", f"/v2/images?name={IMAGE}")
    for im in (body or {}).get("images", []):
        if im.get("status") == "active":
            return im["id"]
    status, im = glance.call("POST", "/v2/images", {
        # no "visibility": public needs the admin role, which glance's unauthenticated
        # context lacks; its is_admin flag lets every request see the image anyway
        "name": IMAGE, "disk_format": "raw", "container_format": "bare"})
    if status != 201 or not im:
        raise LabError(f"lab: could not create image in glance: HTTP {status} {im}")
    status, body = glance.call("PUT", f"/v2/images/{im['id']}/file", data=b"\0" * 4096,
                               content_type="application/octet-stream")
    if status != 204:
        raise LabError(f"lab: could not upload the image to glance: HTTP {status} {body}")
    return im["id"]
