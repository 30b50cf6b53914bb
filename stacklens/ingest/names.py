"""Host and service names from file paths, folder layouts, syslog programs and user maps.

Service names are OpenStack *binary* names (``nova-api``, ``nova-compute``, ``neutron-server``,
...). devstack's short screen names (``n-cpu``, ``q-svc``, ``c-vol``; devstack ``stackrc``
``ENABLED_SERVICES``) and distribution log names (``/var/log/neutron/server.log``,
``openvswitch-agent.log``) are mapped to them. Hosts come, in order of precedence, from
``--host-map``, the syslog prefix of the line, a ``<host>/var/log/...`` folder layout, and lastly
the name of the input folder (a single-host dump such as a devstack-gate job).
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from pathlib import PurePath

from stacklens.errors import MapError
from stacklens.vocab import UUID

__all__ = ["NameMap", "host_from_path", "service_from_name"]

# devstack screen/service short names -> binary names
DEVSTACK_ALIASES: dict[str, str] = {
    "n-api": "nova-api",
    "n-api-meta": "nova-api-metadata",
    "n-cpu": "nova-compute",
    "n-sch": "nova-scheduler",
    "n-cond": "nova-conductor",
    "n-super-cond": "nova-conductor",
    "n-cond-cell1": "nova-conductor",
    "n-net": "nova-network",
    "n-crt": "nova-cert",
    "n-dhcp": "nova-dhcpbridge",
    "n-cauth": "nova-consoleauth",
    "n-novnc": "nova-novncproxy",
    "n-obj": "nova-objectstore",
    "placement-api": "placement-api",
    "c-api": "cinder-api",
    "c-sch": "cinder-scheduler",
    "c-vol": "cinder-volume",
    "c-bak": "cinder-backup",
    "g-api": "glance-api",
    "g-reg": "glance-registry",
    "q-svc": "neutron-server",
    "q-agt": "neutron-openvswitch-agent",
    "q-dhcp": "neutron-dhcp-agent",
    "q-l3": "neutron-l3-agent",
    "q-meta": "neutron-metadata-agent",
    "q-lbaas": "neutron-lbaas-agent",
    "q-metering": "neutron-metering-agent",
    "key": "keystone",
    "keystone": "keystone",
    "tempest": "tempest",
    "horizon": "horizon",
    "swift": "swift",
}
# os-log-merger aliases (its README) -> binary names
MERGER_ALIASES: dict[str, str] = {
    "NEUTRONSRV": "neutron-server",
    "NOVAAPI": "nova-api",
    "NOVACPU": "nova-compute",
    "NOVACOND": "nova-conductor",
    "NOVASCH": "nova-scheduler",
}
_PROJECTS = ("nova", "neutron", "cinder", "glance", "keystone", "placement", "heat", "swift")
_ROTATION = re.compile(
    r"(\.(txt|log|gz))+$|(\.\d+)+$|-\d{8}$|\.\d{4}-\d{2}-\d{2}[-_][\d:]+$|\.log[\w.:\-]*$"
)
_UUID_TAIL = re.compile("-" + UUID + "$")


def _strip_suffixes(name: str) -> str:
    prev = None
    while prev != name:
        prev = name
        name = _ROTATION.sub("", name)
    return name


def service_from_name(path_or_prog: str) -> str:
    """Map a log file path, a syslog program or a collector prefix to a service binary name.

    ``screen-n-cpu.txt`` -> ``nova-compute``; ``/var/log/neutron/server.log-20151124.gz`` ->
    ``neutron-server``; ``nova-api.log.1.2017-05-16_13:53:08`` -> ``nova-api``;
    ``neutron-ns-metadata-proxy-<uuid>.log`` -> ``neutron-ns-metadata-proxy``. Unknown names are
    returned stripped of extensions and rotation suffixes.
    """
    p = PurePath(path_or_prog)
    base = _strip_suffixes(p.name)
    if base.startswith("screen-"):
        base = base[len("screen-") :]
    # devstack under systemd: "devstack@n-api.service"
    base = base.removeprefix("devstack@").removesuffix(".service")
    base = _UUID_TAIL.sub("", base)
    if base in DEVSTACK_ALIASES:
        return DEVSTACK_ALIASES[base]
    if base.upper() in MERGER_ALIASES:
        return MERGER_ALIASES[base.upper()]
    if base.startswith(_PROJECTS):
        return base
    parent = p.parent.name
    if parent in _PROJECTS:
        return f"{parent}-{base}"
    return base


def host_from_path(path: str) -> str | None:
    """Host from a ``<host>/var/log/...`` layout (as collected by sosreport or os-log-merger)."""
    parts = PurePath(path).parts
    for i in range(1, len(parts) - 1):
        if parts[i] == "var" and parts[i + 1] == "log" and parts[i - 1] not in ("", "/"):
            return parts[i - 1]
    return None


def _parse_map(entries: list[str], what: str) -> list[tuple[str, str]]:
    out = []
    for e in entries:
        glob, sep, name = e.partition("=")
        if not sep or not glob or not name:
            raise MapError(f"--{what}-map entry {e!r} is not GLOB=NAME (e.g. '*/ctl1/*=ctl1')")
        out.append((glob, name))
    return out


@dataclass
class NameMap:
    """User overrides: ``GLOB=NAME`` pairs matched (fnmatch) against the file path, first wins."""

    host_map: list[str] = field(default_factory=list)
    service_map: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._hosts = _parse_map(self.host_map, "host")
        self._services = _parse_map(self.service_map, "service")

    def host(self, path: str) -> str | None:
        """The mapped host of ``path``, or None. Raises nothing."""
        return next((n for g, n in self._hosts if fnmatch.fnmatch(path, g)), None)

    def service(self, path: str) -> str | None:
        """The mapped service of ``path``, or None."""
        return next((n for g, n in self._services if fnmatch.fnmatch(path, g)), None)
