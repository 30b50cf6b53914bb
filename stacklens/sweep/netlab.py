"""Test hosts made of network namespaces: ``n`` namespaces on one bridge, like VMs on one
network, for sweeps and probes without a cloud (tests, benches, demos). Root only.

Layout: a hub namespace ``<prefix>hub`` holds bridge ``br0``; host ``i`` is namespace
``<prefix>h<i>`` with ``eth0`` = ``192.0.2.<10+i>/24`` (TEST-NET-1, RFC 5737: never routed),
its peer ``v<i>`` on the bridge. Nothing outside the namespaces is touched except the veth
creation (both ends are moved into namespaces at once). With ``bridges=2`` the hub holds a
second bridge ``br1`` joined to ``br0`` by the veth pair ``x0``/``x1`` (one L2 segment, two
bridges: the "across bridges / racks" placement; delay it with ``tc`` on ``x0``); host ``i``
sits on bridge ``i * bridges // n``. :meth:`NetLab.delete` removes every
namespace the lab made (their veths go with them); use the lab as a context manager.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["NetLab", "netlab_unavailable"]

MAX_HOSTS = 32
SUBNET = "192.0.2"


def netlab_unavailable(tools: Sequence[str] = ()) -> str | None:
    """Why namespace test hosts running ``tools`` (e.g. ``("fio", "iperf3")``) cannot be made
    here (None: they can)."""
    for tool in tools:
        if shutil.which(tool) is None:
            return f"{tool} is not installed (bash .ci/sweep-setup.sh)"
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "iproute2 (ip) is not installed"
    name = f"slt{secrets.token_hex(3)}"
    r = subprocess.run(["ip", "netns", "add", name], capture_output=True, text=True, timeout=20)
    if r.returncode != 0:
        return f"ip netns add failed: {r.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=20)
    return None


def _ip(*args: str) -> None:
    r = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=20)
    if r.returncode != 0:
        raise OSError(f"ip {' '.join(args)}: {r.stderr.strip()}")


@dataclass
class NetLab:
    """``n`` namespace hosts on one bridge. ``prefix`` starts with ``slt`` and a random
    suffix so that parallel runs never collide; :attr:`hosts` are the namespace names,
    :attr:`addresses` their IPv4 addresses."""

    n: int
    bridges: int = 1
    prefix: str = field(default_factory=lambda: f"slt{secrets.token_hex(2)}")
    made: list[str] = field(default_factory=list)

    @property
    def hub(self) -> str:
        """The namespace holding the bridge."""
        return f"{self.prefix}hub"

    @property
    def hosts(self) -> list[str]:
        """Namespace names of the hosts, in order."""
        return [f"{self.prefix}h{i}" for i in range(self.n)]

    @property
    def addresses(self) -> list[str]:
        """Host addresses, in order."""
        return [f"{SUBNET}.{10 + i}" for i in range(self.n)]

    def bridge_of(self, i: int) -> int:
        """The bridge (0 or 1) host ``i`` is on."""
        return i * self.bridges // self.n

    def veth(self, i: int) -> str:
        """Host ``i``'s bridge-side interface (in the hub namespace): take it down to cut
        the host off."""
        return f"v{i}"

    def create(self) -> NetLab:
        """Make the namespaces, bridge and links. Raises OSError (after removing what was
        made) when a step fails."""
        if not 1 <= self.n <= MAX_HOSTS or self.bridges not in (1, 2):
            raise ValueError(f"1..{MAX_HOSTS} hosts on 1 or 2 bridges")
        try:
            _ip("netns", "add", self.hub)
            self.made.append(self.hub)
            _ip("-n", self.hub, "link", "set", "lo", "up")
            _ip("-n", self.hub, "link", "add", "br0", "type", "bridge")
            _ip("-n", self.hub, "link", "set", "br0", "up")
            if self.bridges == 2:
                _ip("-n", self.hub, "link", "add", "br1", "type", "bridge")
                _ip("-n", self.hub, "link", "add", "x0", "type", "veth", "peer", "name", "x1")
                for br, x in (("br0", "x0"), ("br1", "x1")):
                    _ip("-n", self.hub, "link", "set", x, "master", br)
                    _ip("-n", self.hub, "link", "set", x, "up")
                _ip("-n", self.hub, "link", "set", "br1", "up")
            for i, (ns, addr) in enumerate(zip(self.hosts, self.addresses, strict=True)):
                _ip("netns", "add", ns)
                self.made.append(ns)
                _ip("-n", ns, "link", "set", "lo", "up")
                # made inside the host namespace, the peer moved to the hub: nothing stays in
                # the caller's namespace
                _ip("-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name",
                    self.veth(i), "netns", self.hub)
                _ip("-n", ns, "addr", "add", f"{addr}/24", "dev", "eth0")
                _ip("-n", ns, "link", "set", "eth0", "up")
                _ip("-n", self.hub, "link", "set", self.veth(i), "master",
                    f"br{self.bridge_of(i)}")
                _ip("-n", self.hub, "link", "set", self.veth(i), "up")
        except (OSError, subprocess.TimeoutExpired):
            self.delete()
            raise
        return self

    def delete(self) -> None:
        """Remove every namespace this lab made (bounded: one command each)."""
        for ns in reversed(self.made):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=20)
        self.made.clear()

    def __enter__(self) -> NetLab:
        return self.create()

    def __exit__(self, *exc: object) -> None:
        self.delete()
