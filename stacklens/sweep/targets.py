"""Where a sweep's tools run: this machine, a network namespace of it, or an SSH host of
collect's inventory (asyncssh, host keys verified: :func:`stacklens.collect.ssh.connect`).

All three speak :class:`stacklens.collect.transport.Transport` (POSIX ``sh`` scripts). The
barrier (:func:`barrier_script`) hands every target the same start time on the controller's
clock, shifted by the target's measured clock offset (:func:`clock_offset`); each target
sleeps until then, prints ``SL_START <ns>`` on stderr and execs the tool.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shlex
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass

from stacklens.collect.inventory import load_inventory
from stacklens.collect.transport import STDERR_LIMIT, CmdResult, LocalTransport, Transport
from stacklens.sweep.plan import Plan, Target

__all__ = ["ClockOffset", "GroupTransport", "Opened", "barrier_script", "clock_offset",
           "open_targets", "start_of"]

_START = re.compile(r"SL_START (\d{12,})")


class GroupTransport:
    """Runs scripts on this machine, in network namespace ``netns`` when given (``ip netns
    exec``), each in its own process group: a timeout or a cancellation kills the whole group
    (the tool included, not only its shell), so no pipe stays open and no tool outlives its
    point. ``label`` names the target."""

    def __init__(self, label: str, netns: str | None = None) -> None:
        self.label = label
        self._ns = netns

    def _argv(self, script: str) -> list[str]:
        if self._ns:
            return ["ip", "netns", "exec", self._ns, "/bin/sh", "-c", script]
        return ["/bin/sh", "-c", script]

    async def run(self, script: str, timeout_s: float) -> CmdResult:
        """Run ``script`` to the end. Raises TimeoutError after ``timeout_s`` (the process
        group killed first); on cancellation the group is killed too."""
        proc = await asyncio.create_subprocess_exec(
            *self._argv(script), stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            start_new_session=True)
        try:
            out, err = await asyncio.wait_for(proc.communicate(), timeout_s)
        except (TimeoutError, asyncio.CancelledError):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(proc.communicate(), 10)
            raise
        rc = proc.returncode
        text = err.decode("utf-8", "replace")
        if len(text) > STDERR_LIMIT:  # keep the head (SL_START) and the tail (the error)
            text = text[:500] + "\n...\n" + text[-(STDERR_LIMIT - 510):]
        return CmdResult(out, text, rc if rc is not None and rc >= 0 else None)

    async def stream(self, script: str):
        """Start ``script`` and stream its stdout (collect's local stream)."""
        return await LocalTransport(self.label).stream(
            " ".join(shlex.quote(a) for a in self._argv(script)))

    async def close(self) -> None:
        """Nothing to release."""


@dataclass(frozen=True)
class ClockOffset:
    """Target clock minus controller clock (ns), from the exchange with the smallest round
    trip: offset = remote - (t0 + t1) / 2, uncertain by +- rtt / 2 (NTP's estimate)."""

    offset_ns: int
    rtt_ns: int


async def clock_offset(t: Transport, tries: int = 3,
                       clock: Callable[[], int] = time.time_ns) -> ClockOffset | None:
    """Measure ``t``'s clock offset with ``date +%s%N`` (``tries`` exchanges, at most 10 s
    each). None when the target does not answer with a number."""
    best: ClockOffset | None = None
    for _ in range(max(1, min(tries, 10))):
        t0 = clock()
        try:
            r = await t.run("date +%s%N", 10)
        except (TimeoutError, OSError):
            return best
        t1 = clock()
        text = r.stdout.decode("ascii", "replace").strip()
        if r.exit_status != 0 or not text.isdigit():
            return best
        cand = ClockOffset(int(text) - (t0 + t1) // 2, t1 - t0)
        if best is None or cand.rtt_ns < best.rtt_ns:
            best = cand
    return best


def barrier_script(start_ns: int, command: str, workdir: str | None = None) -> str:
    """A POSIX sh script: (make ``workdir``,) sleep until ``start_ns`` on this host's clock,
    print ``SL_START <ns>`` to stderr, then exec ``command``."""
    pre = f"mkdir -p {shlex.quote(workdir)} && cd {shlex.quote(workdir)} && " if workdir else ""
    return (
        f"{pre}now=$(date +%s%N); d=$(( {int(start_ns)} - now )); "
        "if [ \"$d\" -gt 0 ]; then sleep \"$(awk -v d=\"$d\" 'BEGIN{printf \"%.3f\", d/1e9}')\"; "
        "fi; echo \"SL_START $(date +%s%N)\" >&2; exec " + command
    )


def start_of(stderr: str) -> int | None:
    """The ``SL_START`` time a barrier script printed (target clock, ns), if any."""
    m = _START.search(stderr)
    return int(m.group(1)) if m else None


@dataclass
class Opened:
    """The transports of a plan's targets; ``errors`` holds why a target could not be
    opened (it fails every point it is in), ``offsets`` the measured clock offsets."""

    transports: dict[str, Transport]
    errors: dict[str, str]
    offsets: dict[str, ClockOffset]
    addresses: dict[str, str]

    async def close(self) -> None:
        """Close every transport."""
        for t in self.transports.values():
            await t.close()


async def open_targets(plan: Plan, names: set[str]) -> Opened:
    """Open a transport to each target in ``names``: local and netns at once, ssh hosts by
    collect's :func:`~stacklens.collect.ssh.connect` (failures come back in ``errors``, never
    raised). Clock offsets are measured for ssh targets; local and netns targets share this
    machine's clock (offset 0)."""
    opened = Opened({}, {}, {}, {})
    hosts = {}
    if any(plan.target(n).ssh for n in names):
        assert plan.inventory is not None
        hosts = {h.name: h for h in load_inventory(plan.inventory).plans()}
    for name in sorted(names):
        t: Target = plan.target(name)
        if t.local:
            opened.transports[name] = GroupTransport(name)
            opened.addresses[name] = t.address or "127.0.0.1"
            opened.offsets[name] = ClockOffset(0, 0)
        elif t.netns:
            opened.transports[name] = GroupTransport(name, t.netns)
            opened.addresses[name] = t.address or ""
            opened.offsets[name] = ClockOffset(0, 0)
        else:
            assert t.ssh is not None
            h = hosts.get(t.ssh)
            if h is None:
                opened.errors[name] = f"host {t.ssh!r} is not in {plan.inventory}"
                continue
            if h.transport == "local":
                opened.transports[name] = GroupTransport(name)
                opened.offsets[name] = ClockOffset(0, 0)
            else:
                from stacklens.collect.ssh import connect

                tr, err = await connect(h)
                if tr is None:
                    assert err is not None
                    opened.errors[name] = f"{err[0]}: {err[1]}"
                    continue
                opened.transports[name] = tr
                off = await clock_offset(tr)
                if off is not None:
                    opened.offsets[name] = off
            opened.addresses[name] = t.address or h.address or "127.0.0.1"
    return opened
