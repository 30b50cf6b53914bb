"""Workload ``create_ports``: N neutron ports created concurrently on one network and subnet,
then deleted (the seeds' port storms: 240 and 500 concurrent ports competing for the IP
allocation rows of one subnet). One record per port: the create's and the delete's timestamps,
request ids (``x-openstack-request-id``), HTTP statuses, outcome, and the port's fixed IP.

The network is the one the scenario names (name or id; its first IPv4 subnet, or the one named
by ``subnet``), or, by default, one the run creates (``sl-<runid>-net`` with subnet
``sl-<runid>-subnet`` of ``cidr``) and deletes at the end. A scenario::

    workload:
      create_ports:
        count: 200
        concurrency: 50              # creates in flight at most
        network: null                # default: the run creates sl-<runid>-net
        cidr: 10.77.0.0/24           # the created subnet (a /24 holds 253 ports)
        project_id: 5eed5eed...      # sent as project_id (noauth neutron needs one)
        binding: agents              # none, or agents: binding:host_id round-robin over the
                                     # hosts of the alive L2 agents (so the agents get fan-out)
        device_owner: compute:nova
        delete: {enabled: true, when: all, hold_s: 0}   # each: right after the create; all:
                                 # once every create of the repetition has answered and hold_s
                                 # passed (so the agents' asynchronous fan-out of the creates
                                 # ends before the deletes start theirs)

Records (:class:`PortRecord`, in ``requests.jsonl``): ``server_id`` is the port id, ``host``
its binding host, ``status`` the port status in the create's answer, ``api_s`` the create
(``port.create``) and ``delete_s`` the delete (``port.delete``: DELETE sent -> answered, a
port is gone when neutron answers 204). ``fixed_ip`` (the first fixed IP) is in the JSONL line;
the canonical ``requests`` table has no column for it.

Neutron is reached at the connection's network endpoint (clouds.yaml
``network_endpoint_override`` or the catalog's ``network`` service; ``stacklens lab up
--neutron`` writes it); plan raises :class:`~stacklens.errors.UserError` without one.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import Field

from stacklens.drive.cleanup import CleanupResult
from stacklens.drive.client import UUID_RE, ApiResult, ComputeClient, Connection
from stacklens.drive.clock import Clock, SystemClock
from stacklens.drive.pacer import DriveStats, DriveSummary, Pacer, outcome_of, wait_at_most
from stacklens.drive.plan import run_prefix
from stacklens.drive.reach import Prober
from stacklens.drive.records import JSONL_VERSION, RecordOutcome, RecordWriter, RequestRecord
from stacklens.drive.scenario import ConfigModel, Pacing, Scenario
from stacklens.drive.shape import Burst, Shape, make_shape
from stacklens.drive.workload import Workload, register_workload
from stacklens.errors import UserError

__all__ = [
    "CreatePorts",
    "CreatePortsWorkload",
    "NeutronTarget",
    "PortDelete",
    "PortDriver",
    "PortPlan",
    "PortRecord",
    "neutron_client",
]

#: What an L2 agent's ``agent_type`` is for ``binding: agents`` (the lab's stand-ins included).
L2_AGENT_TYPES = frozenset({"Open vSwitch agent", "Linux bridge agent"})


class PortDelete(ConfigModel):
    """Delete each port right after its create (``each``) or once every create of the
    repetition has answered (``all``, so that all ports hold their IP at once)."""

    enabled: bool = True
    when: Literal["each", "all"] = "all"
    hold_s: float = Field(default=0.0, ge=0, le=3600)  # all: wait this long before deleting


class CreatePorts(Pacing):
    """Workload ``create_ports``: ``count`` ports per repetition on one network/subnet."""

    count: int = Field(gt=0)
    network: str | None = None  # name or id; None: the run creates sl-<runid>-net
    subnet: str | None = None  # name or id on ``network``; None: its first IPv4 subnet
    cidr: str = "10.77.0.0/24"  # of the subnet the run creates
    project_id: str | None = None
    binding: Literal["none", "agents"] = "none"
    device_owner: str = "compute:nova"
    delete: PortDelete = PortDelete()


@dataclass(frozen=True, slots=True)
class PortRecord(RequestRecord):
    """One port's create and delete, as :class:`RequestRecord` plus ``fixed_ip`` (the port's
    first fixed IP address; JSONL only: readers of ``requests.jsonl`` ignore it)."""

    fixed_ip: str | None = None

    def evolve(self, **changes: Any) -> PortRecord:
        """A copy with ``changes`` applied."""
        return dataclasses.replace(self, **changes)

    def to_json(self) -> str:
        """One JSONL line (no newline): the record's fields, ``fixed_ip`` and ``"v"``."""
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        d["v"] = JSONL_VERSION
        return json.dumps(d, separators=(",", ":"))


@dataclass(frozen=True)
class NeutronTarget:
    """Where the ports go: an existing network and subnet (ids), or ``None`` ids and a
    ``cidr``: the run creates both."""

    network_id: str | None = None
    subnet_id: str | None = None
    cidr: str = "10.77.0.0/24"


@dataclass(frozen=True)
class PortPlan:
    """A ``create_ports`` run, resolved: no look-ups left but the network the run creates."""

    run_id: str
    total: int  # ports per repetition
    target: NeutronTarget
    network_endpoint: str  # neutron, ending in /v2.0
    scenario: str = "scenario"
    repetitions: int = 1
    concurrency: int = 50
    shape: Shape = field(default_factory=Burst)
    project_id: str | None = None
    hosts: tuple[str, ...] = ()  # binding:host_id round-robin; () = unbound
    device_owner: str = "compute:nova"
    delete: bool = True
    delete_when: str = "all"
    hold_s: float = 0.0  # delete_when all: seconds between the last create and the deletes
    request_timeout_s: float = 120.0
    max_connections: int = 100

    @property
    def prefix(self) -> str:
        """``sl-<runid>-``: ports ``sl-<runid>-r<rep>-<i>``, network ``sl-<runid>-net``."""
        return run_prefix(self.run_id)

    def describe(self) -> dict[str, Any]:
        """The plan as plain data (the manifest's ``run.plan``)."""
        return {"run_id": self.run_id, "total": self.total, "scenario": self.scenario,
                "repetitions": self.repetitions, "concurrency": self.concurrency,
                "shape": repr(self.shape), "prefix": self.prefix,
                "network_id": self.target.network_id, "subnet_id": self.target.subnet_id,
                "cidr": None if self.target.network_id else self.target.cidr,
                "network_endpoint": self.network_endpoint, "hosts": list(self.hosts),
                "device_owner": self.device_owner, "delete": self.delete,
                "delete_when": self.delete_when, "hold_s": self.hold_s}


def _v2(url: str) -> str:
    url = url.rstrip("/")
    return url if url.endswith("/v2.0") else f"{url}/v2.0"


def neutron_client(conn: Connection, timeout_s: float = 120.0,
                   max_connections: int = 100) -> ComputeClient:
    """A client whose :meth:`~ComputeClient.call` paths are relative to neutron's ``/v2.0``
    (``conn.network_endpoint``, same token and TLS settings). Raises UserError without one."""
    if not conn.network_endpoint:
        raise UserError("create_ports needs neutron: no network endpoint known (clouds.yaml "
                        "network_endpoint_override, or a keystone catalog)")
    return ComputeClient(Connection(_v2(conn.network_endpoint), conn.token, conn.verify,
                                    source=conn.source),
                         timeout_s=timeout_s, max_connections=max_connections)


async def _get(net: ComputeClient, path: str, what: str, **params: Any) -> dict[str, Any]:
    res = await net.call("lookup", "GET", path, params=params or None)
    if not res.ok or not isinstance(res.body, dict):
        raise UserError(f"cannot {what}: {res.error or res.status} ({net.endpoint}/{path})")
    return res.body


async def _find(net: ComputeClient, kind: str, name_or_id: str, **params: Any) -> dict[str, Any]:
    key = "id" if UUID_RE.match(name_or_id) else "name"
    found = (await _get(net, f"{kind}s", f"list {kind}s", **{key: name_or_id, **params}))[
        f"{kind}s"]
    if not found:
        raise UserError(f"{kind} '{name_or_id}' not found at {net.endpoint}")
    return found[0]


async def resolve_target(net: ComputeClient, cfg: CreatePorts) -> NeutronTarget:
    """The scenario's network/subnet as ids, or a target the run will create."""
    if cfg.network is None:
        if cfg.subnet is not None:
            raise UserError("create_ports: subnet needs network")
        return NeutronTarget(cidr=cfg.cidr)
    netw = await _find(net, "network", cfg.network)
    if cfg.subnet is not None:
        sub = await _find(net, "subnet", cfg.subnet, network_id=netw["id"])
    else:
        subs = [s for s in (await _get(net, "subnets", "list subnets",
                                       network_id=netw["id"]))["subnets"]
                if s.get("ip_version") == 4]
        if not subs:
            raise UserError(f"network '{cfg.network}' has no IPv4 subnet")
        sub = subs[0]
    return NeutronTarget(str(netw["id"]), str(sub["id"]), str(sub.get("cidr") or ""))


async def agent_hosts(net: ComputeClient) -> tuple[str, ...]:
    """Hosts of the alive L2 agents (:data:`L2_AGENT_TYPES`), sorted."""
    agents = (await _get(net, "agents", "list agents (binding: agents)"))["agents"]
    return tuple(sorted({a["host"] for a in agents
                         if a.get("alive") and a.get("agent_type") in L2_AGENT_TYPES}))


@register_workload("create_ports", config=CreatePorts)
class CreatePortsWorkload(Workload):
    """Create N ports concurrently on one subnet, then delete them: one record per port."""

    durations = ("api_s", "delete_s")  # port.create, port.delete
    sla_duration = "api_s"

    async def plan(self, scn: Scenario, client: ComputeClient, run_id: str,
                   computes: int | None = None) -> PortPlan:
        """Resolve the network/subnet and, for ``binding: agents``, the agents' hosts."""
        cfg: CreatePorts = self.config  # type: ignore[assignment]
        c = scn.client
        async with neutron_client(client.conn, c.request_timeout_s, 2) as net:
            target = await resolve_target(net, cfg)
            hosts = await agent_hosts(net) if cfg.binding == "agents" else ()
        if cfg.binding == "agents" and not hosts:
            raise UserError("binding: agents: no alive L2 agent in neutron")
        return PortPlan(run_id, cfg.count, target, _v2(client.conn.network_endpoint or ""),
                        scn.name, cfg.repetitions, cfg.concurrency, make_shape(cfg.ramp),
                        cfg.project_id, hosts, cfg.device_owner, cfg.delete.enabled,
                        cfg.delete.when, cfg.delete.hold_s, c.request_timeout_s, c.max_connections)

    @classmethod
    async def cleanup(cls, client: ComputeClient, prefix: str, timeout_s: float,
                      poll_interval_s: float) -> CleanupResult:
        """Delete the ports, subnets and networks named ``prefix``* (in that order)."""
        async with neutron_client(client.conn, timeout_s) as net:
            return await delete_prefixed(net, prefix)

    def driver(self, plan: Any, client: ComputeClient, writer: RecordWriter, *,
               clock: Clock | None = None, prober: Prober | None = None,
               on_tick: Callable[[DriveStats], None] | None = None) -> PortDriver:
        """The port driver of ``plan`` (a :class:`PortPlan`)."""
        return PortDriver(plan, client, writer, clock=clock, on_tick=on_tick)


async def delete_prefixed(net: ComputeClient, prefix: str) -> CleanupResult:
    """Delete every port, then subnet, then network whose name starts with ``prefix`` (neutron
    filters names exactly: the lists are read whole, ids and names only)."""
    found = deleted = 0
    remaining: list[str] = []
    errors: list[str] = []
    for kind in ("port", "subnet", "network"):
        res = await net.call("list", "GET", f"{kind}s", params={"fields": ["id", "name"]})
        if not res.ok or not isinstance(res.body, dict):
            errors.append(f"list {kind}s: {res.error or res.status}")
            continue
        ids = [x["id"] for x in res.body.get(f"{kind}s", [])
               if str(x.get("name") or "").startswith(prefix)]
        found += len(ids)
        sem = asyncio.Semaphore(20)

        async def one(i: str, kind: str = kind, sem: asyncio.Semaphore = sem) -> ApiResult:
            async with sem:
                return await net.call("delete", "DELETE", f"{kind}s/{i}")

        for i, r in zip(ids, await asyncio.gather(*(one(i) for i in ids)), strict=True):
            if r.ok or r.status == 404:
                deleted += 1
            else:
                remaining.append(i)
                errors.append(f"delete {kind} {i}: {r.error or r.status}")
    return CleanupResult(found, deleted, remaining, errors)


class PortDriver:
    """Runs a :class:`PortPlan`: creates the network/subnet when the plan says so, each port's
    create (and delete) timed and recorded, then deletes what the run created.

    Failures are records (``api_error``, ``timeout``, ``transport_error``; ``delete_failed``
    when the create worked and the delete did not). A network that cannot be created is an
    error of the summary with no records. Cancelling :meth:`run` (or :meth:`stop`) stops
    issuing; unanswered records end ``cancelled``; cleanup still runs."""

    def __init__(self, plan: PortPlan, client: ComputeClient, writer: RecordWriter,
                 clock: Clock | None = None,
                 on_tick: Callable[[DriveStats], None] | None = None,
                 net: ComputeClient | None = None):
        self.plan, self.client, self.writer = plan, client, writer
        self.clock = clock or SystemClock()
        self.on_tick = on_tick
        self.net = net or neutron_client(client.conn, plan.request_timeout_s,
                                         plan.max_connections)
        self.stats = DriveStats(total=plan.total * plan.repetitions)
        self.pacer = Pacer(plan.shape, plan.concurrency, self.clock.monotonic, self.stats)
        self.records: dict[tuple[str, str, int], PortRecord] = {}
        self.errors: list[str] = []
        self.leftovers: list[str] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._net_id = plan.target.network_id
        self._subnet_id = plan.target.subnet_id

    def stop(self) -> None:
        """Stop issuing (what the first Ctrl-C does)."""
        self.pacer.stop()

    async def run(self) -> DriveSummary:
        """Every repetition's ports, cleanup, then the summary (records in issue order)."""
        started = self.clock.now_ns()
        try:
            if await self._ensure_network():
                await self._drive()
        finally:
            await self._finish()
            if self.net is not self.client:
                await self.net.aclose()
        calls = dict(self.client.calls)
        for k, v in self.net.calls.items():
            calls[f"neutron.{k}"] = v
        return DriveSummary(list(self.records.values()), self.stats, self.pacer.stopping,
                            started, self.clock.now_ns(), self.leftovers, calls, self.errors)

    async def _drive(self) -> None:
        try:
            for rep in range(self.plan.repetitions):
                if self.pacer.stopping:
                    break

                def launch(idx: int, _n: int, rep: int = rep) -> None:
                    self._launch(rep, idx)

                await self.pacer.issue(self.plan.total, 1, launch)
                await self.pacer.wait(lambda: not self._tasks)
                if self.plan.delete and self.plan.delete_when == "all":
                    if self.plan.hold_s:  # ends early on stop()
                        await wait_at_most(self.pacer.wait(lambda: self.pacer.stopping),
                                           self.plan.hold_s)
                    await self._delete_all(rep)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            self.pacer.stop()

    # -- network ---------------------------------------------------------------------------
    def _owned(self) -> dict[str, Any]:
        return {"project_id": self.plan.project_id} if self.plan.project_id else {}

    async def _ensure_network(self) -> bool:
        if self._net_id is not None:
            return True
        p = self.plan
        r = await self.net.call("setup", "POST", "networks", json={"network": {
            "name": f"{p.prefix}net", **self._owned()}})
        if not r.ok:
            self.errors.append(f"create network: {r.error or r.status}")
            return False
        self._net_id = r.body["network"]["id"]
        r = await self.net.call("setup", "POST", "subnets", json={"subnet": {
            "name": f"{p.prefix}subnet", "network_id": self._net_id, "ip_version": 4,
            "cidr": p.target.cidr, **self._owned()}})
        if not r.ok:
            self.errors.append(f"create subnet {p.target.cidr}: {r.error or r.status}")
            return False
        self._subnet_id = r.body["subnet"]["id"]
        return True

    async def _finish(self) -> None:
        """Records never answered end ``cancelled``; the run's network goes when it owns it."""
        for t in list(self._tasks):
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for key, rec in self.records.items():
            if rec.outcome is None:
                self._record(key, rec.evolve(outcome=RecordOutcome.CANCELLED.value,
                                             error="run interrupted during the call"))
        if self.plan.delete:
            kept = [r.server_id for r in self.records.values()
                    if r.server_id and r.gone_ns is None]
            for pid in kept:  # interrupted, or delete_when all never reached
                res = await self.net.call("delete", "DELETE", f"ports/{pid}")
                if not (res.ok or res.status == 404):
                    self.leftovers.append(pid)
            if self.plan.target.network_id is None and self._net_id is not None:
                res = await self.net.call("setup", "DELETE", f"networks/{self._net_id}")
                if not (res.ok or res.status == 404):
                    self.leftovers.append(self._net_id)
                    self.errors.append(f"delete network: {res.error or res.status}")
        else:
            self.leftovers.extend(r.server_id for r in self.records.values() if r.server_id)
        self.writer.sync()

    # -- ports -----------------------------------------------------------------------------
    def _record(self, key: tuple[str, str, int], rec: PortRecord) -> None:
        first_end = rec.outcome is not None and self.records[key].outcome is None
        self.records[key] = rec
        self.writer.write(rec)
        if first_end:
            self.stats.done += 1
            self.stats.failed += rec.outcome != RecordOutcome.OK

    def _launch(self, rep: int, idx: int) -> None:
        p = self.plan
        host = p.hosts[(rep * p.total + idx) % len(p.hosts)] if p.hosts else None
        rec = PortRecord(run_id=p.run_id, name=f"{p.prefix}r{rep}-{idx:05d}",
                         scenario=p.scenario, repetition=rep, iteration=idx, host=host,
                         global_request_id=f"req-{uuid.uuid4()}")
        self.records[rec.key] = rec
        t = asyncio.create_task(self._one(rec))
        self._tasks.add(t)
        t.add_done_callback(self._done)

    def _done(self, t: asyncio.Task[None]) -> None:
        self._tasks.discard(t)
        self.pacer.release(1)
        if self.on_tick:
            self.on_tick(self.stats)

    def _port_body(self, rec: PortRecord) -> dict[str, Any]:
        port: dict[str, Any] = {"name": rec.name, "network_id": self._net_id,
                                "fixed_ips": [{"subnet_id": self._subnet_id}],
                                "device_owner": self.plan.device_owner,
                                "device_id": rec.name, **self._owned()}
        if rec.host:
            port["binding:host_id"] = rec.host
        return {"port": port}

    async def _one(self, rec: PortRecord) -> None:
        rec = rec.evolve(submit_ns=self.clock.now_ns())
        self.records[rec.key] = rec
        res = await self.net.call("create", "POST", "ports", json=self._port_body(rec),
                                  headers={"X-OpenStack-Request-ID": rec.global_request_id})
        outcome, error = outcome_of(res)
        port = res.body.get("port") if res.ok and isinstance(res.body, dict) else None
        port = port if isinstance(port, dict) else {}
        ips = port.get("fixed_ips") or [{}]
        rec = rec.evolve(accepted_ns=self.clock.now_ns(), create_http_status=res.status,
                         request_id=res.request_id, server_id=port.get("id"),
                         status=port.get("status"), fixed_ip=ips[0].get("ip_address"),
                         outcome=outcome, error=error)
        if outcome is not None or not self.plan.delete:
            self._record(rec.key, rec.evolve(outcome=outcome or RecordOutcome.OK.value))
            return
        if self.plan.delete_when == "all":
            self.records[rec.key] = rec  # the delete phase records it
            self.writer.write(rec)
            return
        await self._delete(rec)

    async def _delete(self, rec: PortRecord) -> None:
        gid = f"req-{uuid.uuid4()}"
        rec = rec.evolve(delete_ns=self.clock.now_ns(), delete_global_request_id=gid)
        res = await self.net.call("delete", "DELETE", f"ports/{rec.server_id}",
                                  headers={"X-OpenStack-Request-ID": gid})
        now = self.clock.now_ns()
        gone = res.ok or res.status == 404
        self._record(rec.key, rec.evolve(
            delete_accepted_ns=now, gone_ns=now if gone else None,
            delete_request_id=res.request_id, delete_http_status=res.status,
            outcome=(RecordOutcome.OK if gone else RecordOutcome.DELETE_FAILED).value,
            error=None if gone else f"delete: {res.error or res.status}"))

    async def _delete_all(self, rep: int) -> None:
        """Delete every port of repetition ``rep`` created ok, ``concurrency`` at a time."""
        todo = [r for r in self.records.values()
                if r.repetition == rep and r.outcome is None and r.server_id]
        sem = asyncio.Semaphore(self.plan.concurrency)

        async def one(r: PortRecord) -> None:
            async with sem:
                await self._delete(r)

        await asyncio.gather(*(one(r) for r in todo))
