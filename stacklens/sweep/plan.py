"""Sweep plans: which targets, which fio / iperf3 matrix, as YAML validated with pydantic.

Errors name the file and the line (:func:`stacklens.yamlfile.load_model`). A plan, every key
but ``targets`` and one of ``fio`` / ``iperf3`` optional::

    name: ceph-volumes
    inventory: hosts.yaml            # collect's inventory, for ssh targets (host keys checked)
    workdir: /tmp/stacklens-sweep    # on every target: fio's test file lives here
    lead_s: 1.5                      # barrier: start time = now + lead_s, handed to all targets
    targets:
      - {name: vm1, local: true}
      - {name: vm2, netns: slt-a, address: 192.0.2.2}   # ip netns exec slt-a ...
      - {name: vm3, ssh: cmp1}                          # a host of the inventory
    fio:
      targets: [vm1, vm2, vm3]       # default: every target, in plan order
      vms: [1, 2, 3]                 # targets used per point: the first N of fio.targets
      rw: [randread, randwrite]
      bs: [4k, 64k]
      iodepth: [1]
      numjobs: [1]
      size: 64m                      # fio's size= (per job)
      runtime_s: 2
      ramp_s: 0
      ioengine: psync
      direct: false
      repeats: 3
      pause_s: 0                     # between points
      limits: {bw_mib_s: 3200, iops: 3200}   # sanity bound on the SUM over targets
    iperf3:
      links: [{client: vm1, server: vm2}, {client: vm3, server: vm2}]
      pairs: [1, 2]                  # links used per point: the first N
      protocol: [tcp, udp]
      parallel: [1, 4]               # -P streams per pair
      bitrate: 100M                  # -b, UDP only
      reverse: [false]
      time_s: 2
      repeats: 3
      pause_s: 0
      port: 5201                     # pair i uses port + i
      limits: {pair_mbit_s: 10000, total_mbit_s: 10000}
    pgbench:                         # the application workload (stacklens.sweep.app_run)
      server: vm2                    # PostgreSQL listens on this target's address
      clients: [vm1, vm3]
      vms: [1, 2]                    # clients per point: the first N
      connections: [1, 4]            # pgbench -c / -j per client
      time_s: 2
      scale: 1                       # pgbench -i -s (once, before the first point)
      repeats: 3
    probes:                          # after the matrices (stacklens.sweep.probe)
      latency: [{src: vm1, dst: vm2, placement: same-rack}]
      jitter: [{src: vm1, dst: vm2, placement: same-rack, bitrate: 10M, time_s: 2}]
      failover: [{src: vm1, dst: vm2, target: vm2, inject: ip link set eth0 down,
                  undo: ip link set eth0 up, hold_s: 2}]
      interval_s: 0.02
      duration_s: 5

Point identity (:attr:`Point.key`) is derived from the parameters only, so a re-run of the
same plan finds its finished points on disk and skips them. Raises :class:`PlanError` (exit 1).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from stacklens.errors import UserError
from stacklens.yamlfile import load_model

__all__ = [
    "FailoverProbe",
    "FioMatrix",
    "IperfMatrix",
    "JitterProbe",
    "LatencyProbe",
    "Link",
    "PgbenchMatrix",
    "Plan",
    "PlanError",
    "Point",
    "Probes",
    "Target",
    "load_plan",
    "parse_bs",
    "parse_plan",
    "points",
]

#: Bounds that keep every loop of a sweep finite.
MAX_POINTS = 5000
MAX_REPEATS = 100
MAX_RUNTIME_S = 3600.0

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,62}$")
_SIZE = re.compile(r"^(\d+)([kmgt]?)(i?b)?$", re.IGNORECASE)
_BITRATE = re.compile(r"^\d+(\.\d+)?[KMG]?$")
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_FIO_RW = ("read", "write", "randread", "randwrite", "rw", "randrw", "readwrite", "trim",
           "randtrim")


class PlanError(UserError):
    """A plan file cannot be used; the message names the file and line. Exit code 1."""


def parse_bs(v: str | int) -> int | None:
    """fio size text (``4k``, ``64KiB``, ``1m``, ``4096``) as bytes, fio's default base 1024;
    None when it is not one plain size (``4k-16k`` ranges, ``bssplit``)."""
    if isinstance(v, int):
        return v
    m = _SIZE.match(str(v).strip())
    return int(m.group(1)) * _UNITS[m.group(2).lower()] if m else None


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Target(_Model):
    """One place a tool runs: this machine (``local: true``), a network namespace of this
    machine (``netns``), or an inventory host over SSH (``ssh``). ``address`` is how iperf3
    clients reach it as a server (default: the inventory address; required for netns)."""

    name: str
    local: bool = False
    netns: str | None = None
    ssh: str | None = None
    address: str | None = None

    @field_validator("name", "netns", "ssh")
    @classmethod
    def _name(cls, v: str | None) -> str | None:
        if v is not None and not _NAME.match(v):
            raise ValueError(f"{v!r} is not a name (letters, digits, . _ -)")
        return v

    @model_validator(mode="after")
    def _one_kind(self) -> Target:
        if sum([self.local, self.netns is not None, self.ssh is not None]) != 1:
            raise ValueError("give exactly one of local: true, netns: NAME, ssh: HOST")
        return self

    @property
    def kind(self) -> str:
        """``local``, ``netns`` or ``ssh``."""
        return "local" if self.local else "netns" if self.netns else "ssh"


class FioLimits(_Model):
    """Sanity bounds for the sum over targets of one point (for example Ceph writes:
    disks x per-disk IOPS / replicas); a point above one is flagged ``above_limit``."""

    bw_mib_s: float | None = Field(default=None, gt=0)
    iops: float | None = Field(default=None, gt=0)


class FioMatrix(_Model):
    """The fio matrix: every combination of the lists is one point, run ``repeats`` times."""

    targets: list[str] = []
    vms: list[int] = Field([1], min_length=1)
    rw: list[str] = Field(["randread"], min_length=1)
    bs: list[str] = Field(["4k"], min_length=1)
    iodepth: list[int] = Field([1], min_length=1)
    numjobs: list[int] = Field([1], min_length=1)
    size: str = "64m"
    runtime_s: float = Field(2.0, gt=0, le=MAX_RUNTIME_S)
    ramp_s: float = Field(0.0, ge=0, le=MAX_RUNTIME_S)
    ioengine: str = "psync"
    direct: bool = False
    repeats: int = Field(3, ge=1, le=MAX_REPEATS)
    pause_s: float = Field(0.0, ge=0, le=MAX_RUNTIME_S)
    limits: FioLimits = FioLimits()

    @field_validator("vms", "iodepth", "numjobs")
    @classmethod
    def _positive(cls, v: list[int]) -> list[int]:
        if any(n < 1 for n in v):
            raise ValueError("every count must be >= 1")
        return v

    @field_validator("rw")
    @classmethod
    def _rw(cls, v: list[str]) -> list[str]:
        bad = [r for r in v if r not in _FIO_RW]
        if bad:
            raise ValueError(f"unknown rw {bad[0]!r} (fio's rw=: {', '.join(_FIO_RW)})")
        return v

    @field_validator("bs", "size", mode="before")
    @classmethod
    def _sizes(cls, v: object) -> object:
        for s in v if isinstance(v, list) else [v]:
            if parse_bs(s if isinstance(s, int) else str(s)) is None:
                raise ValueError(f"{s!r} is not a size like 4k, 64KiB, 1m or 4096")
        return [str(s) for s in v] if isinstance(v, list) else str(v)

    @field_validator("ioengine")
    @classmethod
    def _engine(cls, v: str) -> str:
        if not re.fullmatch(r"[a-z0-9_]+", v):
            raise ValueError(f"{v!r} is not an ioengine name")
        return v


class Link(_Model):
    """One iperf3 pair: ``client`` runs ``iperf3 -c``, ``server`` runs ``iperf3 -s``."""

    client: str
    server: str


class IperfLimits(_Model):
    """Sanity bounds in Mbit/s (10^6 bit/s): one pair, and the sum over pairs."""

    pair_mbit_s: float | None = Field(default=None, gt=0)
    total_mbit_s: float | None = Field(default=None, gt=0)


class IperfMatrix(_Model):
    """The iperf3 matrix; pair ``i`` of a point uses TCP/UDP port ``port + i``."""

    links: list[Link] = Field(min_length=1)
    pairs: list[int] = Field([1], min_length=1)
    protocol: list[Literal["tcp", "udp"]] = Field(["tcp"], min_length=1)
    parallel: list[int] = Field([1], min_length=1)
    bitrate: str = "100M"
    reverse: list[bool] = [False]
    time_s: float = Field(2.0, gt=0, le=MAX_RUNTIME_S)
    repeats: int = Field(3, ge=1, le=MAX_REPEATS)
    pause_s: float = Field(0.0, ge=0, le=MAX_RUNTIME_S)
    port: int = Field(5201, ge=1024, le=65000)
    limits: IperfLimits = IperfLimits()

    @field_validator("bitrate")
    @classmethod
    def _bitrate(cls, v: str) -> str:
        if not _BITRATE.match(v):
            raise ValueError(f"{v!r} is not an iperf3 bitrate like 100M, 1G, 500K")
        return v

    @field_validator("pairs", "parallel")
    @classmethod
    def _positive(cls, v: list[int]) -> list[int]:
        if any(n < 1 for n in v):
            raise ValueError("every count must be >= 1")
        return v


class LatencyProbe(_Model):
    """Round-trip latency from ``src`` to target ``dst``'s address, labelled by placement
    (same host, same rack, across hosts ...)."""

    src: str
    dst: str
    placement: str = "unlabelled"


class FailoverProbe(_Model):
    """Continuous ping ``src`` -> ``dst`` while ``inject`` runs on ``target``, ``hold_s``
    later ``undo`` (shell commands, for example ``ip link set eth0 down`` / ``up``)."""

    src: str
    dst: str
    target: str  # where inject/undo run ("on" would be a YAML boolean)
    inject: str
    undo: str
    hold_s: float = Field(2.0, gt=0, le=600)
    after_s: float = Field(1.0, ge=0, le=600)


class JitterProbe(_Model):
    """``iperf3 --udp`` from ``src`` to an iperf3 server on ``dst`` (``src == dst``: both in
    one place, the same-host class) for ``time_s`` at ``bitrate``: jitter and loss, labelled
    by placement."""

    src: str
    dst: str
    placement: str = "unlabelled"
    bitrate: str = "10M"
    time_s: float = Field(2.0, gt=0, le=600)
    port: int = Field(5301, ge=1024, le=65000)

    @field_validator("bitrate")
    @classmethod
    def _bitrate(cls, v: str) -> str:
        if not _BITRATE.match(v):
            raise ValueError(f"{v!r} is not an iperf3 bitrate like 100M, 1G, 500K")
        return v


class PgbenchMatrix(_Model):
    """The application workload: ``pgbench`` (PostgreSQL's) from the first ``vms`` of
    ``clients`` at once against the database at target ``server``'s address, each client
    ``-c connections -j connections`` for ``time_s`` with ``--progress=1``; ``init`` runs
    ``pgbench -i -s scale`` once from the first client before the first point. CPU, disk and
    network of every client and the server are sampled each second (``/proc``)."""

    server: str
    clients: list[str] = Field(min_length=1)
    vms: list[int] = Field([1], min_length=1)
    connections: list[int] = Field([1], min_length=1)
    time_s: int = Field(2, ge=1, le=3600)
    scale: int = Field(1, ge=1, le=1000)
    init: bool = True
    port: int = Field(5432, ge=1, le=65535)
    user: str = "postgres"
    database: str = "postgres"
    repeats: int = Field(3, ge=1, le=MAX_REPEATS)
    pause_s: float = Field(0.0, ge=0, le=MAX_RUNTIME_S)

    @field_validator("vms", "connections")
    @classmethod
    def _positive(cls, v: list[int]) -> list[int]:
        if any(n < 1 or n > 1000 for n in v):
            raise ValueError("every count must be in 1..1000")
        return v

    @field_validator("user", "database")
    @classmethod
    def _plain(cls, v: str) -> str:
        if not _NAME.match(v):
            raise ValueError(f"{v!r} is not a plain name")
        return v


class Probes(_Model):
    """Network probes run after the matrices: ping every ``interval_s`` for ``duration_s``;
    ``jitter``: iperf3 UDP runs by placement."""

    latency: list[LatencyProbe] = []
    jitter: list[JitterProbe] = []
    failover: list[FailoverProbe] = []
    interval_s: float = Field(0.02, ge=0.002, le=10)
    duration_s: float = Field(5.0, gt=0, le=3600)
    repeats: int = Field(1, ge=1, le=MAX_REPEATS)


class Plan(_Model):
    """A whole plan file."""

    name: str = "sweep"
    inventory: str | None = None
    workdir: str = "/tmp/stacklens-sweep"
    lead_s: float = Field(1.5, gt=0, le=60)
    targets: list[Target] = Field(min_length=1)
    fio: FioMatrix | None = None
    iperf3: IperfMatrix | None = None
    probes: Probes | None = None
    pgbench: PgbenchMatrix | None = None

    @field_validator("workdir")
    @classmethod
    def _workdir(cls, v: str) -> str:
        if not re.fullmatch(r"/[A-Za-z0-9_.\-/]*", v):
            raise ValueError("must be an absolute path of plain characters (no spaces)")
        return v

    @model_validator(mode="after")
    def _refs(self) -> Plan:
        names = [t.name for t in self.targets]
        dup = next((n for n in names if names.count(n) > 1), None)
        if dup:
            raise ValueError(f"target name {dup!r} given twice")
        if (self.fio is None and self.iperf3 is None and self.probes is None
                and self.pgbench is None):
            raise ValueError("give fio:, iperf3:, pgbench:, probes: or several")
        if self.pgbench is not None:
            pg = self.pgbench
            for key, ns in (("server", [pg.server]), ("clients", pg.clients)):
                bad = [n for n in ns if n not in names]
                if bad:
                    raise ValueError(f"pgbench.{key}: unknown target {bad[0]!r}")
            srv = self.target(pg.server)
            if srv.netns and not srv.address:
                raise ValueError(f"pgbench.server: {srv.name!r} (netns) needs an address")
            if max(pg.vms) > len(pg.clients):
                raise ValueError(f"pgbench.vms: {max(pg.vms)} clients asked, "
                                 f"{len(pg.clients)} given")
        if self.probes is not None:
            probes: list[LatencyProbe | FailoverProbe | JitterProbe] = [
                *self.probes.latency, *self.probes.failover, *self.probes.jitter]
            for pr in probes:
                for n in (pr.src, pr.dst, getattr(pr, "target", pr.src)):
                    if n not in names:
                        raise ValueError(f"probes: unknown target {n!r}")
                dst = self.target(pr.dst)
                if dst.netns and not dst.address:
                    raise ValueError(f"probes: target {dst.name!r} (netns) needs an address")
            fo = self.probes.failover
            if any(f.after_s + f.hold_s >= self.probes.duration_s for f in fo):
                raise ValueError("probes.failover: after_s + hold_s must end before "
                                 "probes.duration_s")
        if any(t.ssh for t in self.targets) and not self.inventory:
            raise ValueError("ssh targets need inventory: (collect's host inventory file)")
        if self.fio is not None:
            use = self.fio_targets()
            unknown = [n for n in use if n not in names]
            if unknown:
                raise ValueError(f"fio.targets: unknown target {unknown[0]!r}")
            if max(self.fio.vms) > len(use):
                raise ValueError(f"fio.vms: {max(self.fio.vms)} targets asked, "
                                 f"{len(use)} available")
        if self.iperf3 is not None:
            for link in self.iperf3.links:
                for n in (link.client, link.server):
                    if n not in names:
                        raise ValueError(f"iperf3.links: unknown target {n!r}")
                srv = self.target(link.server)
                if srv.netns and not srv.address:
                    raise ValueError(f"iperf3.links: server {srv.name!r} (netns) needs an "
                                     "address")
            if max(self.iperf3.pairs) > len(self.iperf3.links):
                raise ValueError(f"iperf3.pairs: {max(self.iperf3.pairs)} pairs asked, "
                                 f"{len(self.iperf3.links)} links given")
        n_runs = len(points(self))
        if n_runs > MAX_POINTS:
            raise ValueError(f"the matrix has {n_runs} point repeats, more than {MAX_POINTS}")
        return self

    def fio_targets(self) -> list[str]:
        """Names of the targets fio uses, in order (the first N make an N-VM point)."""
        assert self.fio is not None
        return self.fio.targets or [t.name for t in self.targets]

    def target(self, name: str) -> Target:
        """The target called ``name``. Raises KeyError."""
        for t in self.targets:
            if t.name == name:
                return t
        raise KeyError(name)


@dataclass(frozen=True)
class Point:
    """One repeat of one matrix point. ``targets`` are the fio targets, or for iperf3 the
    client targets, in order; ``servers`` the iperf3 server of each client (empty for fio).
    Sizes in bytes, times in seconds."""

    tool: str  # fio, iperf3
    key: str  # stable id from the parameters, also the folder of its raw output
    repeat: int  # 0-based
    n_targets: int  # VMs (fio) or pairs (iperf3)
    targets: tuple[str, ...]
    servers: tuple[str, ...] = ()
    rw: str | None = None
    bs: str | None = None
    iodepth: int | None = None
    numjobs: int | None = None
    protocol: str | None = None
    parallel: int | None = None
    reverse: bool | None = None
    connections: int | None = None  # pgbench -c per client


def points(plan: Plan) -> list[Point]:
    """Every point repeat of the plan, in run order: fio points, iperf3 points, then pgbench
    points (clients in ``targets``, the database in ``servers``), each point's repeats
    together."""
    out: list[Point] = []
    if plan.fio is not None:
        f = plan.fio
        use = plan.fio_targets()
        for vms, rw, bs, qd, nj in itertools.product(f.vms, f.rw, f.bs, f.iodepth, f.numjobs):
            key = f"fio-{rw}-bs{bs}-qd{qd}-nj{nj}-vms{vms}"
            out.extend(Point("fio", key, r, vms, tuple(use[:vms]), rw=rw, bs=bs, iodepth=qd,
                             numjobs=nj) for r in range(f.repeats))
    if plan.iperf3 is not None:
        p = plan.iperf3
        for n, proto, par, rev in itertools.product(p.pairs, p.protocol, p.parallel, p.reverse):
            key = f"iperf3-{proto}-P{par}-{'rev' if rev else 'fwd'}-pairs{n}"
            links = p.links[:n]
            out.extend(Point("iperf3", key, r, n, tuple(lk.client for lk in links),
                             tuple(lk.server for lk in links), protocol=proto, parallel=par,
                             reverse=rev) for r in range(p.repeats))
    if plan.pgbench is not None:
        pg = plan.pgbench
        for v, c in itertools.product(pg.vms, pg.connections):
            out.extend(Point("pgbench", f"pgbench-c{c}-vms{v}", r, v, tuple(pg.clients[:v]),
                             (pg.server,), connections=c) for r in range(pg.repeats))
    return out


def _line_hint(msg: str, lines: dict[tuple, int]) -> int | None:
    """Plan-level errors start with the key they are about (``fio.vms: ...``): its line."""
    m = re.match(r"([a-z0-9_]+(?:\.[a-z0-9_]+)*):", msg)
    if m:
        return lines.get(tuple(m.group(1).split(".")))
    if msg.startswith("target name") or msg.startswith("ssh targets"):
        return lines.get(("targets",))
    return None


def parse_plan(text: str, source: str = "<plan>") -> Plan:
    """Validate plan YAML ``text``; raise :class:`PlanError` naming ``source:line``."""
    return load_model(text, source, Plan, PlanError,
                      "a sweep plan is a YAML mapping (name, targets, fio, iperf3)",
                      line_hint=_line_hint)


def load_plan(path: str | Path) -> Plan:
    """Read and validate a plan file. Raises :class:`PlanError` (with file and line); a
    relative ``inventory`` is resolved against the plan's folder."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PlanError(f"{p}: no such plan file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise PlanError(f"{p}: cannot read: {e}") from None
    plan = parse_plan(text, str(p))
    if plan.inventory and not Path(plan.inventory).is_absolute():
        plan = plan.model_copy(update={"inventory": str((p.parent / plan.inventory).resolve())})
    return plan
