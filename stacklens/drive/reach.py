"""Reachability after ACTIVE (field-notes section 9: ACTIVE -> first ping -> SSH banner).

Optional phases. A guest that cannot be reached from here is not a failure of the boot: the
check is skipped and the reason recorded (``reach_note``): no address (``networks: none``, the
lab's fake computes), no ``ping`` binary, or no reply within the phase's time limit.
:class:`NetProber` is the real one; tests inject their own :class:`Prober`.
"""

from __future__ import annotations

import asyncio
import shutil
import time
from typing import Any, Protocol

__all__ = ["NetProber", "Prober", "Reach", "guest_address"]

Reach = tuple[int | None, int | None, str | None]  # (ping_ns, ssh_ns, note)


class Prober(Protocol):
    """Checks one ACTIVE server; returns (ping_ns, ssh_ns, note)."""

    async def reach(self, server: dict[str, Any], ping: bool, ssh: bool, port: int,
                    timeout_s: float) -> Reach:
        """Probe ``server`` (its list view) until ``timeout_s``."""
        ...


def guest_address(server: dict[str, Any]) -> str | None:
    """A floating IPv4 address of the server if any, else its first fixed IPv4 address."""
    fixed = None
    for addrs in (server.get("addresses") or {}).values():
        for a in addrs or []:
            if a.get("version", 4) != 4 or not a.get("addr"):
                continue
            if a.get("OS-EXT-IPS:type") == "floating":
                return a["addr"]
            fixed = fixed or a["addr"]
    return fixed


class NetProber:
    """ICMP via the system ``ping`` (one packet, 1 s wait, repeated) and the SSH banner via a
    TCP connection to ``port``; both retried every second until the time limit. ``now_ns``
    stamps the replies (the driver passes its clock)."""

    def __init__(self, now_ns=time.time_ns):
        self.now_ns = now_ns

    async def _ping_once(self, addr: str) -> bool:
        proc = await asyncio.create_subprocess_exec(
            "ping", "-c", "1", "-W", "1", addr,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
        return await proc.wait() == 0

    async def _banner_once(self, addr: str, port: int) -> bool:
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(addr, port), 2)
        except (OSError, TimeoutError):
            return False
        try:
            line = await asyncio.wait_for(reader.readline(), 5)
            return line.startswith(b"SSH-")
        except (OSError, TimeoutError):
            return False
        finally:
            writer.close()

    async def _until(self, check, deadline: float) -> int | None:
        loop = asyncio.get_running_loop()
        while loop.time() < deadline:
            if await check():
                return self.now_ns()
            await asyncio.sleep(1)
        return None

    async def reach(self, server: dict[str, Any], ping: bool, ssh: bool, port: int,
                    timeout_s: float) -> Reach:
        """Probe the guest; see the class docstring."""
        addr = guest_address(server)
        if addr is None:
            return None, None, "skipped: the server has no IPv4 address (networks: none?)"
        deadline = asyncio.get_running_loop().time() + timeout_s
        notes = []
        ping_ns = ssh_ns = None
        if ping:
            if shutil.which("ping") is None:
                notes.append("ping skipped: no ping binary")
            else:
                ping_ns = await self._until(lambda: self._ping_once(addr), deadline)
                if ping_ns is None:
                    notes.append(f"no ping reply from {addr} within {timeout_s:g} s")
        if ssh:
            ssh_ns = await self._until(lambda: self._banner_once(addr, port), deadline)
            if ssh_ns is None:
                notes.append(f"no SSH banner from {addr}:{port} within {timeout_s:g} s")
        return ping_ns, ssh_ns, "; ".join(notes) or None
