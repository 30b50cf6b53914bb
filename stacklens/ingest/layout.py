"""Host and service of every input file, inferred from all file paths together.

OpenStack logs arrive in many layouts; the conventions read here are:

- distribution packages (RDO/Ubuntu, every release): ``/var/log/<project>/<binary>.log`` or the
  short form ``/var/log/neutron/server.log``, ``/var/log/cinder/volume.log``, rotated by
  logrotate as ``.log.1``, ``.log.2.gz`` or ``.log-20160129[.gz]`` (``dateext``);
- kolla-ansible: ``/var/log/kolla/<project>/<binary>.log``; tripleo containers:
  ``/var/log/containers/<project>/<binary>.log``; OSA: ``/var/log/<project>/<binary>.log`` in
  each container, collected as ``<container-or-host>/...``;
- devstack: ``screen-<short>.txt`` (devstack-gate), ``<short>.log[.<date>]`` (``LOGDIR``),
  systemd ``devstack@<short>.service`` (journald exports); short names from devstack ``stackrc``;
- collected trees: ``<host>/var/log/...`` (sosreport, ansible fetch, the lab), ``<host>/<project>/
  <binary>.log``, ``<host>/logs/screen-*.txt`` (zuul multinode), ``<host>/<project>.log``;
- flat renamings: ``<binary>-<host>.log``, ``<binary>.<host>.log``, ``<host>-<binary>.log``.

The inference: each file name is split into a known service and a leftover token (the host
candidate); folders name the host when all files sit in per-folder trees or a ``var/log`` tree.
Where the evidence is thin (a lone non-numeric token, a name that is no known service, two files
that give the same host and service), the file gets a note ``(kind, severity, detail)`` whose
detail gives the ``--host-map``/``--service-map`` arguments (``GLOB=NAME``, fnmatch on the path
as given, see :class:`~stacklens.ingest.names.NameMap`) that would settle it.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import PurePath

from stacklens.ingest.names import (
    _PROJECTS,
    DEVSTACK_ALIASES,
    MERGER_ALIASES,
    NameMap,
    _strip_suffixes,
    host_from_path,
    service_from_name,
)
from stacklens.vocab import UUID

__all__ = ["FileNames", "KNOWN_SERVICES", "infer_layout", "merged_names", "merger_alias",
           "service_from_loggers", "split_service"]

#: OpenStack binaries (console_scripts in each project's setup.cfg, Havana..2025.1) and the
#: single-name services (keystone under mod_wsgi, tempest, horizon), and the stacklens lab's
#: neutron stand-in.
KNOWN_SERVICES: frozenset[str] = frozenset(
    [
        *(f"nova-{s}" for s in (
            "api", "api-metadata", "api-os-compute", "compute", "conductor", "scheduler",
            "novncproxy", "consoleauth", "cert", "network", "dhcpbridge", "objectstore",
            "spicehtml5proxy", "serialproxy", "xvpvncproxy", "manage", "metadata", "console",
            "cells", "placement-api", "status", "api-wsgi", "compute-ironic")),
        *(f"neutron-{s}" for s in (
            "server", "openvswitch-agent", "linuxbridge-agent", "dhcp-agent", "l3-agent",
            "metadata-agent", "ovn-metadata-agent", "ovn-agent", "sriov-nic-agent",
            "metering-agent", "lbaas-agent", "lbaasv2-agent", "ns-metadata-proxy", "rpc-server",
            "periodic-workers", "macvtap-agent", "bgp-dragent", "vpn-agent", "api", "rpc",
            "netns-cleanup", "ovs-cleanup", "ipset-cleanup", "keepalived-state-change",
            "ovn-db-sync-util", "db-manage")),
        *(f"cinder-{s}" for s in ("api", "scheduler", "volume", "backup", "manage", "wsgi")),
        *(f"glance-{s}" for s in ("api", "registry", "manage", "cache", "scrubber")),
        *(f"heat-{s}" for s in ("api", "api-cfn", "engine", "manage")),
        *(f"placement-{s}" for s in ("api", "manage")),
        *(f"keystone-{s}" for s in ("all", "admin", "main", "manage", "wsgi-admin",
                                     "wsgi-public")),
        *(f"swift-{s}" for s in ("proxy-server", "object-server", "container-server",
                                 "account-server")),
        "keystone", "tempest", "horizon", "swift", "placement",
        # stacklens lab's loopback stand-in for neutron's API (named so wherever it appears)
        "neutron-standin",
    ]
)
# folders that are part of a layout, never a host
_GENERIC_DIRS = frozenset(
    ["var", "log", "logs", "kolla", "containers", "openstack", "apache", "apache2", "httpd",
     "journal", "openvswitch", "libvirt", "rabbitmq", "mysql", "etc", "old", "rotated",
     "screen-logs", "stack", "devstack", "ansible", "upstart", "supervisor", *_PROJECTS,
     "placement-api", "ovn", "octavia", "ironic"]
)
_SEP = re.compile(r"[-._]")
# tails that qualify a log, never name a host (keystone-access.log, n-api-error.log)
_NOT_HOST = frozenset(
    ["access", "error", "errors", "wsgi", "admin", "public", "main", "audit", "json", "debug",
     "stdout", "stderr", "console", "trace", "out", "err", "log", "txt", "summary", "conf",
     "config", "cfg", "ini", "sample", "dump", "report", "results"]
)
_HOSTISH = re.compile(r"\d")


@dataclass
class FileNames:
    """One file's inferred ``host`` (None: the input folder's name) and ``service``, and notes
    ``(kind, severity, detail)`` for ``ingest_stats``."""

    host: str | None
    service: str
    known: bool
    notes: list[tuple[str, str, str]] = field(default_factory=list)


def _resolve(name: str, parent: str | None) -> str | None:
    """The binary a bare name stands for (in folder ``parent`` when given), or None."""
    if name in DEVSTACK_ALIASES:
        return DEVSTACK_ALIASES[name]
    if name in KNOWN_SERVICES:
        return name
    if parent in _PROJECTS and f"{parent}-{name}" in KNOWN_SERVICES:
        return f"{parent}-{name}"
    return None


def _base(path: str) -> str:
    base = _strip_suffixes(PurePath(path).name)
    base = base.removeprefix("screen-").removeprefix("devstack@").removesuffix(".service")
    return re.sub("-" + UUID + "$", "", base)


def split_service(path: str) -> tuple[str | None, str | None]:
    """``(service, host_token)`` from a file name: ``nova-compute-3.log`` -> ``("nova-compute",
    "3")``, ``nova-compute.fake-3.log`` -> ``("nova-compute", "fake-3")``, ``ctl1.n-api.log`` ->
    ``("nova-api", "ctl1")``, ``screen-n-cpu.txt`` -> ``("nova-compute", None)``; ``(None, None)``
    when no known service is in the name. Rotation suffixes are removed first, never hosts."""
    p = PurePath(path)
    base, parent = _base(path), p.parent.name
    whole = _resolve(base, parent) or MERGER_ALIASES.get(base.upper())
    if whole:
        return whole, None
    cuts = [m.start() for m in _SEP.finditer(base)]
    # full binary names before short names completed by the folder (nova/compute-3.log)
    for par in (None, parent):
        for c in reversed(cuts):  # longest known service first: "<service><sep><host>"
            svc, tail = _resolve(base[:c], par), base[c + 1 :]
            if svc and tail:
                return (svc, tail) if tail.lower() not in _NOT_HOST else (None, None)
        for c in cuts:  # "<host><sep><service>"
            svc, head = _resolve(base[c + 1 :], par), base[:c]
            if svc and head and head.lower() not in _NOT_HOST:
                return svc, head
    return None, None


def _glob(path: str) -> str:
    name = PurePath(path).name
    return f"*/{name}" if "/" in path else name


def _host_dir(rel: PurePath) -> str | None:
    """The outermost folder of ``rel`` (relative to its input root) that is not layout."""
    for part in rel.parts[:-1]:
        if part.lower() not in _GENERIC_DIRS:
            return part
    return None


def infer_layout(files: list[tuple[str, str]], names: NameMap | None = None) -> dict[str, FileNames]:
    """Host and service of each ``(path, path relative to its input root)``; returns
    ``{path: FileNames}``. User maps (``names``) win over everything. Pure: reads no file."""
    names = names or NameMap()
    out: dict[str, FileNames] = {}
    rels = {p: PurePath(r) for p, r in files}
    # folders are hosts only when every file sits in some non-layout folder (per-host trees);
    # a single-host dump with sub-folders (devstack-gate's openvswitch/) keeps the root name
    dirs = {p: _host_dir(r) for p, r in rels.items()}
    folder_hosts = bool(files) and all(d is not None for d in dirs.values())
    split = {p: split_service(p) for p in rels}
    # tokens shared by several files of one service are hosts with good evidence
    tokens: dict[str, set[str]] = defaultdict(set)
    for svc, tok in split.values():
        if svc and tok:
            tokens[svc].add(tok)
    for p in rels:
        svc, tok = split[p]
        notes: list[tuple[str, str, str]] = []
        host = names.host(p) or host_from_path(p)
        dir_host = dirs[p] if folder_hosts else None
        if svc is None:
            base = _base(p)
            role = split_service(f"{base}-{dir_host}") if base in _PROJECTS and dir_host else None
            if role and role[0] and role[0].startswith(base + "-"):
                # "compute-03/nova.log": the folder names the role and the host
                svc = role[0]
            else:
                svc = service_from_name(p)
                notes.append(("layout_ambiguous", "info",
                              f"file name names no known OpenStack service; used service "
                              f"{svc!r}. If it is another, pass --service-map "
                              f"'{_glob(p)}*=SERVICE'"))
        if tok is not None and host is None:
            host = tok
            if len(tokens[svc]) < 2 and not _HOSTISH.search(tok):
                notes.append(("layout_ambiguous", "info",
                              f"took {tok!r} in the file name as the host of {svc}; if it is "
                              f"part of the service name pass --service-map "
                              f"'{_glob(p)}*=SERVICE' and --host-map '{_glob(p)}*=HOST'"))
        host = host or dir_host
        svc = names.service(p) or svc
        out[p] = FileNames(host, svc, svc in KNOWN_SERVICES, notes)
    # some files name their host and others do not: those get the input folder's name, say so
    if any(fn.host for fn in out.values()):
        for p, fn in out.items():
            if fn.host is None:
                fn.notes.append(("layout_ambiguous", "info",
                                 f"no host in the name or folder of this {fn.service} log while "
                                 f"other files name theirs; used the input folder's name. Pass "
                                 f"--host-map '{_glob(p)}*=HOST' to name it"))
    # the same file name in two folders that both give one host and service means the layout
    # hid a host (rotated copies of one log share a folder and are fine)
    seen: dict[tuple[str | None, str, str], set[str]] = defaultdict(set)
    for p, fn in out.items():
        seen[(fn.host, fn.service, _base(p))].add(str(rels[p].parent))
    for p, fn in out.items():
        same = seen[(fn.host, fn.service, _base(p))]
        if len(same) > 1 and not names.host(p):
            fn.notes.append(("layout_ambiguous", "info",
                             f"{len(same)} folders hold {_base(p)} as service {fn.service} on "
                             f"host {fn.host or '(input folder)'}; if they are different hosts "
                             f"pass --host-map '*/FOLDER/*=HOST' for each"))
    return out


# os-log-merger (openstack/os-log-merger oslogmerger.py, PATH_MAP and FILE_MAP): alias levels
# 2 and 3 write "[<dirs>/]<P>-<CODE>" for "<dirs>/<project>/<file>.log"
_MERGER_PROJECT = {"N": "nova", "G": "glance", "C": "cinder", "K": "keystone", "Q": "neutron",
                   "S": "swift", "H": "heat", "T": "ceilometer"}
_MERGER_CODE = {
    "SCH": "scheduler", "VOL": "volume", "BAK": "backup", "MNG": "manage", "API": "api",
    "CRT": "cert", "CPU": "compute", "COND": "conductor", "CAUTH": "consoleauth",
    "NET": "network", "NOVNC": "novncproxy", "KEY": "keystone", "REG": "registry",
    "AGT": "openvswitch-agent", "DHCP": "dhcp-agent", "L3": "l3-agent", "LBAAS": "lbaas-agent",
    "META": "metadata-agent", "MTR": "metering-agent", "SVC": "linuxbridge-agent",
    "ENG": "engine",
}
_MERGER_SHORT = re.compile(r"^([A-Za-z])-([\w\-]+?)(?:\.\w+)?$")


def merger_alias(alias: str) -> tuple[str | None, str | None]:
    """``(host, service)`` an os-log-merger alias stands for; None where it does not say.

    Level 0 aliases are the file path (``node1/var/log/nova/nova-api.log``), level 1 the file
    name, levels 2-3 ``node1/N-CPU`` (project letter, file code), and user aliases
    (``file:ALIAS``) are free text: only the README's (``NEUTRONSRV``, ``NOVACPU``, ...) and
    aliases that contain a service name (``nova-compute-3``) are understood. os-log-merger
    prints no legend of its aliases, so an alias it does not explain gives ``(None, None)``."""
    parts = [p for p in alias.split("/") if p]
    if not parts:
        return None, None
    host = host_from_path(alias)
    if host is None:
        host = next((p for p in parts[:-1] if p.lower() not in _GENERIC_DIRS), None)
    last = parts[-1]
    m = _MERGER_SHORT.match(last)
    if m and m.group(1).upper() in _MERGER_PROJECT and not split_service(last)[0]:
        proj = _MERGER_PROJECT[m.group(1).upper()]
        name = _MERGER_CODE.get(m.group(2).upper(), m.group(2).lower())
        if proj == "neutron" and name == "api":
            name = "server"  # FILE_MAP maps neutron's server.log to API
        return host, _resolve(name, proj) or f"{proj}-{name}"
    if last.upper() in MERGER_ALIASES:
        return host, MERGER_ALIASES[last.upper()]
    svc, tok = split_service(alias if len(parts) > 1 else last)
    return host or tok, svc


def merged_names(
    keys: list[tuple[str, str]], names: NameMap | None = None
) -> dict[tuple[str, str], tuple[str | None, str, tuple[str, str, str] | None]]:
    """Names of os-log-merger records: ``{(file, alias_service): (host, service, note)}``.

    ``alias_service`` is what the tokenizer made of the ``[ALIAS]`` column (a README alias
    mapped to its binary, else the alias lower-cased). User maps are matched against
    ``<file>:<alias>`` (os-log-merger's own ``file:ALIAS`` syntax, case as in the file or upper),
    then :func:`merger_alias` decodes path and level-2 aliases. ``host`` None keeps the file's
    host; ``note`` is a ``layout_ambiguous`` stats entry for an alias that names no known service.
    """
    names = names or NameMap()
    out = {}
    for f, svc in keys:
        tries = [f"{f}:{svc}", f"{f}:{svc.upper()}"]
        mh = next((h for k in tries if (h := names.host(k))), None)
        ms = next((x for k in tries if (x := names.service(k))), None)
        host, dec = merger_alias(svc)
        service = ms or (svc if svc in KNOWN_SERVICES else dec) or svc
        note = None
        if ms is None and service not in KNOWN_SERVICES:
            note = ("layout_ambiguous", "info",
                    f"os-log-merger alias {svc.upper()!r} names no known service (the merged "
                    f"file has no legend); pass --service-map '*:{svc.upper()}=SERVICE' and "
                    f"--host-map '*:{svc.upper()}=HOST'")
        out[(f, svc)] = (mh or host, service, note)
    return out


def service_from_loggers(project: str, loggers: dict[str, int], min_records: int = 5,
                         min_share: float = 0.6) -> tuple[str | None, str]:
    """The binary of a file named only by its project (``compute-1/nova.log``) from the counts
    of its records' logger names: ``nova.compute.manager`` runs in ``nova-compute`` (each
    project's ``<project>/<binary>/`` package holds that binary's manager). Returns
    ``(service or None, reason in words)``; None when fewer than ``min_records`` records name
    a binary or no binary has ``min_share`` of them (libraries such as ``nova.compute.utils``
    run in several binaries, so only a clear majority counts)."""
    votes: dict[str, int] = defaultdict(int)
    for name, n in loggers.items():
        parts = (name or "").split(".")
        if len(parts) >= 2 and parts[0] == project:
            cand = f"{project}-{parts[1]}"
            if parts[1] == "osapi_compute":
                cand = f"{project}-api"
            if cand in KNOWN_SERVICES:
                votes[cand] += n
    total = sum(votes.values())
    if total < min_records:
        return None, f"only {total} records with a {project}.<binary> logger"
    best = max(votes, key=lambda k: votes[k])
    share = votes[best] / total
    if share < min_share:
        return None, f"no binary has most loggers ({best} {share:.0%})"
    return best, f"{share:.0%} of {total} records log as {best.replace('-', '.', 1)}.*"
