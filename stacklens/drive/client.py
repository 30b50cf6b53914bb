"""A small async client of the compute API, on ``httpx.AsyncClient`` with an injectable
transport (``httpx.MockTransport`` in tests).

Every call returns an :class:`ApiResult` rather than raising: an HTTP error, a timeout or a
refused connection is data (status, request id, message) for the record. Only the look-ups done
before a run (flavor, image, network, compute count) raise :class:`~stacklens.errors.UserError`.

Server state is observed with one list call per poll interval for all servers of a run
(``GET /servers/detail?name=^<prefix>&changes-since=<t>``, following ``servers_links``), never
one GET per server. With ``changes-since`` nova also returns deleted servers (status
``DELETED``), which is how a delete is seen finishing.

:func:`resolve_connection` finds the endpoint and token: an explicit ``--endpoint``/``--token``
(noauth2 clouds: token ``user:project``), or a clouds.yaml entry read with openstacksdk's loader
when openstacksdk is installed (an optional dependency, imported only here and only then), else
with a minimal reader that understands token-only (noauth) entries.
"""

from __future__ import annotations

import asyncio
import email.utils
import os
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx

from stacklens.errors import UserError
from stacklens.vocab import UUID_LOOSE

__all__ = [
    "ApiResult",
    "ComputeClient",
    "Connection",
    "ListResult",
    "UUID_RE",
    "resolve_connection",
]

#: An id that is a UUID (with or without dashes, any case): used as is, not looked up by name.
UUID_RE = re.compile(f"^{UUID_LOOSE}$", re.IGNORECASE)


@dataclass(frozen=True)
class Connection:
    """Where and how to reach the compute API."""

    endpoint: str  # compute endpoint, e.g. http://127.0.0.1:8774/v2.1
    token: str | None = None  # X-Auth-Token
    verify: bool | str = True  # TLS verification, or a CA bundle path
    image_endpoint: str | None = None  # glance, for image names (else nova's image proxy)
    network_endpoint: str | None = None  # neutron, for network names
    source: str = "flags"  # flags, clouds.yaml, openstacksdk

    def describe(self) -> dict[str, Any]:
        """What the manifest records (never the token)."""
        return {"endpoint": self.endpoint, "source": self.source,
                "token": "set" if self.token else None}


@dataclass(frozen=True)
class ApiResult:
    """One HTTP call's outcome. ``status`` is None when no response came (``error`` says why;
    ``sent`` is False when the request certainly never reached the server)."""

    status: int | None
    request_id: str | None = None
    body: Any = None
    error: str | None = None
    timeout: bool = False
    sent: bool = True
    date_s: float | None = None  # the response's Date header, server clock

    @property
    def ok(self) -> bool:
        """2xx response."""
        return self.status is not None and 200 <= self.status < 300

    @property
    def server_id(self) -> str | None:
        """``server.id`` of a create or show response."""
        if isinstance(self.body, dict) and isinstance(self.body.get("server"), dict):
            return self.body["server"].get("id")
        return None


@dataclass(frozen=True)
class ListResult:
    """The servers one list returned (all pages), the calls it took, and the server's Date."""

    servers: list[dict[str, Any]] = field(default_factory=list)
    calls: int = 0
    date_s: float | None = None
    error: str | None = None


def _request_id(r: httpx.Response) -> str | None:
    return r.headers.get("x-openstack-request-id") or r.headers.get("x-compute-request-id")


def _date_s(r: httpx.Response) -> float | None:
    d = r.headers.get("date")
    if not d:
        return None
    try:
        return email.utils.parsedate_to_datetime(d).timestamp()
    except (TypeError, ValueError):
        return None


def _error_message(r: httpx.Response) -> str:
    """nova's ``{"computeFault": {"message": ...}}`` or the first line of a text body."""
    try:
        body = r.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and body:
        inner = next(iter(body.values()))
        if isinstance(inner, dict) and inner.get("message"):
            return f"HTTP {r.status_code}: {inner['message']}"
    text = r.text.strip().splitlines()
    return f"HTTP {r.status_code}: {text[0][:300]}" if text else f"HTTP {r.status_code}"


def iso(ts_s: float) -> str:
    """``2026-01-01T00:00:00Z`` (what nova takes for changes-since)."""
    return datetime.fromtimestamp(ts_s, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class ComputeClient:
    """Async compute API calls. ``transport`` replaces the network (``httpx.MockTransport``)."""

    def __init__(
        self,
        conn: Connection,
        *,
        microversion: str = "2.37",
        timeout_s: float = 120.0,
        max_connections: int = 100,
        transport: httpx.AsyncBaseTransport | None = None,
    ):
        self.conn = conn
        self.endpoint = conn.endpoint.rstrip("/")
        headers = {
            "Accept": "application/json",
            "User-Agent": "stacklens-drive",
            "OpenStack-API-Version": f"compute {microversion}",
            "X-OpenStack-Nova-API-Version": microversion,
        }
        if conn.token:
            headers["X-Auth-Token"] = conn.token
        # One httpx client per connection ("lane"), each with a pool of one, handed out from a
        # queue: httpcore's pool rescans every pooled connection and every waiting request on
        # each release, which cost 4-15 ms of CPU per call with 100 connections and 2000
        # requests waiting; lanes keep each pool at one connection and one request. The last
        # lane is the poller's, so list calls never queue behind a storm of creates.
        verify = httpx.create_ssl_context(verify=conn.verify) if transport is None else True

        def lane() -> httpx.AsyncClient:
            return httpx.AsyncClient(
                headers=headers, timeout=httpx.Timeout(timeout_s),
                limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
                transport=transport, verify=verify)

        self._all_lanes = [lane() for _ in range(max(2, max_connections))]
        self._list_lane = self._all_lanes[-1]
        self._lanes: asyncio.Queue[httpx.AsyncClient] = asyncio.Queue()
        for c in self._all_lanes[:-1]:
            self._lanes.put_nowait(c)
        self.calls: dict[str, int] = {}

    async def aclose(self) -> None:
        """Close every connection."""
        for c in self._all_lanes:
            await c.aclose()

    async def __aenter__(self) -> ComputeClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- plumbing ------------------------------------------------------------------------
    async def _call(self, kind: str, method: str, url: str, **kw: Any) -> ApiResult:
        self.calls[kind] = self.calls.get(kind, 0) + 1
        try:
            if kind == "list":
                r = await self._list_lane.request(method, url, **kw)
            else:
                http = await self._lanes.get()
                try:
                    r = await http.request(method, url, **kw)
                finally:
                    self._lanes.put_nowait(http)
        except httpx.TimeoutException as e:
            sent = not isinstance(e, httpx.ConnectTimeout | httpx.PoolTimeout)
            return ApiResult(None, error=f"timeout: {type(e).__name__} {e}".strip(),
                             timeout=True, sent=sent)
        except httpx.HTTPError as e:
            sent = not isinstance(e, httpx.ConnectError)
            return ApiResult(None, error=f"{type(e).__name__}: {e}".strip(), sent=sent)
        body: Any = None
        if r.content:
            try:
                body = r.json()
            except ValueError:
                body = None
        err = None if r.is_success else _error_message(r)
        return ApiResult(r.status_code, _request_id(r), body, err, date_s=_date_s(r))

    async def call(self, kind: str, method: str, path: str, **kw: Any) -> ApiResult:
        """One HTTP call to ``<compute endpoint>/<path>`` (``kw`` as for ``httpx``: ``params``,
        ``json``, ``headers``), counted under ``kind`` in :attr:`calls`; never raises (see
        :class:`ApiResult`). The seam for workloads whose step is one API call."""
        return await self._call(kind, method, f"{self.endpoint}/{path.lstrip('/')}", **kw)

    # -- servers ---------------------------------------------------------------------------
    async def create_server(
        self,
        name: str,
        image_ref: str,
        flavor_ref: str,
        network: str = "none",
        count: int = 1,
        global_request_id: str | None = None,
    ) -> ApiResult:
        """``POST /servers``; ``count`` > 1 asks for one multi-create (min_count = max_count)."""
        server: dict[str, Any] = {"name": name, "imageRef": image_ref, "flavorRef": flavor_ref,
                                  "networks": network if network in ("none", "auto")
                                  else [{"uuid": network}]}
        if count > 1:
            server["min_count"] = server["max_count"] = count
        headers = {"X-OpenStack-Request-ID": global_request_id} if global_request_id else None
        return await self._call("create", "POST", f"{self.endpoint}/servers",
                                json={"server": server}, headers=headers)

    async def delete_server(self, server_id: str, global_request_id: str | None = None) -> ApiResult:
        """``DELETE /servers/{id}``."""
        headers = {"X-OpenStack-Request-ID": global_request_id} if global_request_id else None
        return await self._call("delete", "DELETE", f"{self.endpoint}/servers/{server_id}",
                                headers=headers)

    async def get_server(self, server_id: str) -> ApiResult:
        """``GET /servers/{id}`` (only as a fallback when a deleted server is not listed)."""
        return await self._call("show", "GET", f"{self.endpoint}/servers/{server_id}")

    async def list_servers(
        self, name_regex: str, changes_since_s: float | None = None, max_pages: int = 1000
    ) -> ListResult:
        """All servers whose name matches ``name_regex`` (nova: a regular expression), changed
        since ``changes_since_s`` (epoch seconds, server clock) when given, deleted ones
        included then. Follows ``servers_links`` pages."""
        params: dict[str, str] = {"name": name_regex}
        if changes_since_s is not None:
            params["changes-since"] = iso(changes_since_s)
        servers: list[dict[str, Any]] = []
        calls, date_s = 0, None
        for _ in range(max_pages):
            res = await self._call("list", "GET", f"{self.endpoint}/servers/detail", params=params)
            calls += 1
            if not res.ok:
                return ListResult(servers, calls, date_s, res.error or f"HTTP {res.status}")
            date_s = date_s if date_s is not None else res.date_s
            body = res.body if isinstance(res.body, dict) else {}
            servers.extend(body.get("servers") or [])
            nxt = next((ln.get("href") for ln in body.get("servers_links") or []
                        if ln.get("rel") == "next"), None)
            if not nxt:
                break
            q = parse_qs(urlsplit(nxt).query)
            if "marker" not in q:
                break
            params = {**params, "marker": q["marker"][0]}
            if "limit" in q:
                params["limit"] = q["limit"][0]
        return ListResult(servers, calls, date_s)

    # -- look-ups before a run -------------------------------------------------------------
    async def _get_json(self, kind: str, url: str, what: str, **kw: Any) -> Any:
        res = await self._call(kind, "GET", url, **kw)
        if not res.ok:
            raise UserError(f"cannot {what}: {res.error} ({url})")
        return res.body

    async def find_flavor(self, name_or_id: str) -> str:
        """Flavor id of a flavor name or id."""
        body = await self._get_json("lookup", f"{self.endpoint}/flavors/detail", "list flavors",
                                    params={"is_public": "None"})
        for f in body.get("flavors", []):
            if name_or_id in (f.get("id"), f.get("name")):
                return str(f["id"])
        raise UserError(f"flavor '{name_or_id}' not found at {self.endpoint}")

    async def find_image(self, name_or_id: str) -> str:
        """Image id of an image name or id (glance if known, else nova's image proxy)."""
        if UUID_RE.match(name_or_id):
            return name_or_id
        if self.conn.image_endpoint:
            url = self.conn.image_endpoint.rstrip("/")
            url = url if url.endswith("/v2") else f"{url}/v2"
            body = await self._get_json("lookup", f"{url}/images", "list images",
                                        params={"name": name_or_id})
        else:  # the proxy API ends at microversion 2.35
            body = await self._get_json(
                "lookup", f"{self.endpoint}/images", "list images", params={"name": name_or_id},
                headers={"OpenStack-API-Version": "compute 2.35",
                         "X-OpenStack-Nova-API-Version": "2.35"})
        for im in body.get("images", []):
            if im.get("name") == name_or_id:
                return str(im["id"])
        raise UserError(f"image '{name_or_id}' not found")

    async def find_network(self, name_or_id: str) -> str:
        """``none``, ``auto``, a network id, or the id of a network name (needs neutron)."""
        if name_or_id in ("none", "auto") or UUID_RE.match(name_or_id):
            return name_or_id
        if not self.conn.network_endpoint:
            raise UserError(f"network '{name_or_id}': give its id (no network endpoint known)")
        url = self.conn.network_endpoint.rstrip("/")
        url = url if url.endswith("/v2.0") else f"{url}/v2.0"
        body = await self._get_json("lookup", f"{url}/networks", "list networks",
                                    params={"name": name_or_id})
        nets = body.get("networks", [])
        if not nets:
            raise UserError(f"network '{name_or_id}' not found")
        return str(nets[0]["id"])

    async def count_computes(self) -> int:
        """nova-compute services that are enabled and up."""
        body = await self._get_json("lookup", f"{self.endpoint}/os-services",
                                    "list compute services (give workload.computes instead)",
                                    params={"binary": "nova-compute"})
        return sum(1 for s in body.get("services", [])
                   if s.get("state") == "up" and s.get("status") == "enabled")


# --- connection ------------------------------------------------------------------------------

_NOAUTH = {"none", "noauth", "admin_token", "token_endpoint"}


def _with_version(endpoint: str) -> str:
    ep = endpoint.rstrip("/")
    return ep if re.search(r"/v2(\.1)?(/|$)", ep) else f"{ep}/v2.1"


def resolve_connection(
    cloud: str | None = None,
    endpoint: str | None = None,
    token: str | None = None,
    config_file: str | Path | None = None,
) -> Connection:
    """The compute endpoint and token: ``endpoint`` (+ ``token``) when given, else the
    clouds.yaml entry ``cloud`` (openstacksdk conventions) read from ``config_file`` when given,
    else from openstacksdk's search path (``$OS_CLIENT_CONFIG_FILE``, ``./clouds.yaml``,
    ``~/.config/openstack``, ``/etc/openstack``; read, never edited). With openstacksdk installed
    its loader reads the file (keystone clouds); without it a minimal reader understands
    token-only (noauth) entries. Raises UserError when neither yields an endpoint."""
    if endpoint:
        return Connection(_with_version(endpoint), token, source="flags")
    if not cloud:
        raise UserError("no cloud: give --cloud NAME (clouds.yaml), 'cloud:' in the scenario, "
                        "or --endpoint URL --token TOKEN")
    try:
        import openstack.config  # noqa: F401  (optional dependency)
    except ImportError:
        return _from_clouds_yaml(cloud, token, config_file)
    return _from_openstacksdk(cloud, token, config_file)


def _from_openstacksdk(cloud: str, token: str | None, config_file: str | Path | None) -> Connection:
    import openstack.config

    files = [str(config_file)] if config_file else None
    try:
        region = openstack.config.OpenStackConfig(config_files=files).get_one(cloud=cloud)
    except Exception as e:  # openstacksdk raises its own tree; any failure is the user's entry
        raise UserError(f"cloud '{cloud}': {e}") from None
    cfg = region.config
    tok = token or cfg.get("auth_token") or (cfg.get("auth") or {}).get("token")
    ep = region.get_endpoint("compute")
    if cfg.get("auth_type") in _NOAUTH and ep:
        # with auth_type none, openstacksdk answers auth.endpoint for every service: only an
        # explicit override names glance or neutron
        return Connection(_with_version(ep), tok, region.verify,
                          cfg.get("image_endpoint_override"), cfg.get("network_endpoint_override"),
                          source="openstacksdk")
    try:
        sess = region.get_session()
        tok = tok or sess.get_token()
        ep = ep or region.get_session_endpoint("compute")
        img, net = region.get_session_endpoint("image"), region.get_session_endpoint("network")
    except Exception as e:  # keystoneauth errors: wrong password, unreachable keystone...
        raise UserError(f"cloud '{cloud}': cannot authenticate: {e}") from None
    if not ep:
        raise UserError(f"cloud '{cloud}': no compute endpoint in the catalog")
    return Connection(_with_version(ep), tok, region.verify, img, net, source="openstacksdk")


def _clouds_yaml_paths() -> list[Path]:
    env = os.environ.get("OS_CLIENT_CONFIG_FILE")
    paths = [Path(env)] if env else []
    return paths + [Path.cwd() / "clouds.yaml",
                    Path.home() / ".config" / "openstack" / "clouds.yaml",
                    Path("/etc/openstack/clouds.yaml")]


def _from_clouds_yaml(cloud: str, token: str | None, path: str | Path | None) -> Connection:
    """The noauth entry ``cloud`` of ``path`` (or the first file of the search path naming it)."""
    import yaml

    paths = [Path(path)] if path else _clouds_yaml_paths()
    for p in paths:
        if not p.is_file():
            continue
        clouds = (yaml.safe_load(p.read_text()) or {}).get("clouds") or {}
        if cloud not in clouds:
            continue
        c = clouds[cloud] or {}
        auth = c.get("auth") or {}
        auth_type = c.get("auth_type") or ("password" if auth.get("auth_url") else "none")
        if auth_type not in _NOAUTH:
            raise UserError(f"cloud '{cloud}' ({p}) authenticates with keystone "
                            f"({auth_type}): pip install openstacksdk")
        ep = (c.get("compute_endpoint_override") or c.get("endpoint_override")
              or auth.get("endpoint"))
        if not ep:
            raise UserError(f"cloud '{cloud}' ({p}) has no compute_endpoint_override or "
                            f"auth.endpoint")
        verify: bool | str = c.get("cacert") or c.get("verify", True)
        return Connection(_with_version(ep), token or c.get("auth_token") or auth.get("token"),
                          verify, c.get("image_endpoint_override"),
                          c.get("network_endpoint_override"), source=f"clouds.yaml:{p}")
    raise UserError(f"cloud '{cloud}' not found in {', '.join(str(p) for p in paths)}")
