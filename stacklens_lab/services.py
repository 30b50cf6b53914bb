"""Start, watch and stop the lab's processes: only the ones it started, found by PID file.

Each process is started in a session of its own (so a Ctrl-C at the terminal does not reach it
and the CLI may exit while it runs) with stdout and stderr in ``run/<name>.out``. Its PID file
``run/<name>.pid`` records the PID *and* its start time: a PID that was reused by some other
program after a crash is never signalled. The start time is kept as seconds since boot
(``since_boot_s``, the kernel's ``starttime`` in ``/proc/PID/stat``, which never changes): the
wall-clock form that psutil returns adds the boot time, which the kernel derives from the wall
clock in whole seconds (``btime``, proc(5)), so it can step by 1 s while a lab runs on a machine
whose clock is slewed, and a lab stopped after such a step would leave its services running
(2026-12-07: mariadb, rabbitmq and epmd of one lab, started before the step, outlived
``lab down --purge``). Stopping sends SIGTERM to the process group and to every
descendant found at that moment (Erlang's helpers leave the group), waits a bounded time, then
SIGKILLs what is left. Every wait here is bounded in count and in time.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from stacklens.errors import LabError

__all__ = [
    "ProcSpec",
    "ProcStatus",
    "http_ready",
    "lab_pids",
    "names",
    "port_open",
    "process_status",
    "service_pids",
    "since_boot_s",
    "start",
    "stop",
    "tail",
    "wait_until",
]


@dataclass(frozen=True)
class ProcSpec:
    """One process to start: ``argv`` with ``env`` added to the inherited environment."""

    name: str
    argv: Sequence[str]
    env: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ProcStatus:
    """One started process as seen now; memory summed over the process and its descendants."""

    name: str
    pid: int
    alive: bool
    n_procs: int = 0
    rss_mb: float = 0.0
    pss_mb: float = 0.0  # proportional set size: shared pages split among sharers
    cpu_s: float = 0.0


def _pidfile(run: Path, name: str) -> Path:
    return run / f"{name}.pid"


def start(spec: ProcSpec, run: Path) -> int:
    """Start ``spec`` detached, write its PID file, return the PID."""
    run.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **spec.env}
    with open(run / f"{spec.name}.out", "ab") as out:
        proc = subprocess.Popen(
            list(spec.argv), stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            env=env, start_new_session=True, close_fds=True,
        )
    p = psutil.Process(proc.pid)
    rec = {"pid": proc.pid, "create_time": p.create_time(), "since_boot_s": since_boot_s(p),
           "argv": list(spec.argv)}
    _pidfile(run, spec.name).write_text(json.dumps(rec) + "\n")
    return proc.pid


def since_boot_s(p: psutil.Process) -> float:
    """When ``p`` started, in seconds since the machine booted: its wall-clock start time less
    the boot time, both read now, so a step of the kernel's ``btime`` cancels (module
    docstring). Raises ``psutil.Error`` when the process is gone."""
    return p.create_time() - psutil.boot_time()


def _process(run: Path, name: str) -> psutil.Process | None:
    """The live process behind ``run/<name>.pid``, or None (gone, zombie, or PID reused).
    A PID file without ``since_boot_s`` (written before 2026-12-07) is matched on its
    wall-clock start time within 1.5 s, which a ``btime`` step of 1 s stays inside."""
    try:
        rec = json.loads(_pidfile(run, name).read_text())
        p = psutil.Process(rec["pid"])
        if "since_boot_s" in rec:
            if abs(since_boot_s(p) - float(rec["since_boot_s"])) > 0.05:
                return None
        elif abs(p.create_time() - rec["create_time"]) > 1.5:
            return None
        if p.status() == psutil.STATUS_ZOMBIE:
            return None
        return p
    except (OSError, ValueError, KeyError, psutil.Error):
        return None


def _tree(p: psutil.Process) -> list[psutil.Process]:
    try:
        kids = p.children(recursive=True)
    except psutil.Error:
        kids = []
    return [p, *kids]


def names(run: Path) -> list[str]:
    """Names of every PID file in ``run``."""
    return sorted(f.stem for f in run.glob("*.pid")) if run.is_dir() else []


def lab_pids(run: Path) -> set[tuple[int, float]]:
    """``(pid, start s since boot)`` of every live process the lab started, descendants
    included (:func:`since_boot_s`)."""
    out = set()
    for n in names(run):
        p = _process(run, n)
        for q in _tree(p) if p else []:
            try:
                if q.status() != psutil.STATUS_ZOMBIE:
                    out.add((q.pid, since_boot_s(q)))
            except psutil.Error:
                pass
    return out


def service_pids(run: Path, controller: str = "controller") -> dict[int, tuple[str, str]]:
    """Root PID -> ``(service, host)`` of every live process the lab started: for resource
    sampling (``stacklens.resources``). ``nova-compute-fake-N`` is ``("nova-compute",
    "fake-N")``; every other process (mariadb, rabbitmq, epmd, the APIs, conductor, scheduler,
    the neutron stand-in) is its own name on ``controller``. Descendants (gunicorn workers) are
    not listed: the sampler walks each tree."""
    out: dict[int, tuple[str, str]] = {}
    for n in names(run):
        p = _process(run, n)
        if p is None:
            continue
        svc, _, host = n.partition("-fake-")
        out[p.pid] = (svc, f"fake-{host}") if host else (n, controller)
    return out


def stop(run: Path, name: str, timeout_s: float = 30.0) -> bool:
    """Stop ``name`` and its descendants; remove its PID file. True if anything was running."""
    p = _process(run, name)
    _pidfile(run, name).unlink(missing_ok=True)
    if p is None:
        return False
    procs = _tree(p)
    try:
        if os.getpgid(p.pid) == p.pid:
            os.killpg(p.pid, signal.SIGTERM)
    except OSError:
        pass
    for q in procs:
        try:
            q.terminate()
        except psutil.Error:
            pass
    _gone, alive = psutil.wait_procs(procs, timeout=timeout_s)
    for q in alive:
        try:
            q.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(alive, timeout=5)
    return True


def process_status(run: Path, name: str) -> ProcStatus:
    """Liveness, memory and CPU of ``name``'s process tree."""
    p = _process(run, name)
    if p is None:
        pid = 0
        try:
            pid = json.loads(_pidfile(run, name).read_text())["pid"]
        except (OSError, ValueError, KeyError):
            pass
        return ProcStatus(name, pid, False)
    rss = pss = cpu = 0.0
    procs = _tree(p)
    for q in procs:
        try:
            with q.oneshot():
                mi = q.memory_full_info()
                rss += mi.rss
                pss += getattr(mi, "pss", mi.rss)
                t = q.cpu_times()
                cpu += t.user + t.system
        except psutil.Error:
            pass
    return ProcStatus(name, p.pid, True, len(procs), rss / 2**20, pss / 2**20, cpu)


def tail(path: Path, n: int = 15) -> str:
    """The last ``n`` lines of ``path`` (empty if unreadable), for error messages."""
    try:
        with open(path, "rb") as f:
            f.seek(max(0, f.seek(0, 2) - 16384))
            lines = f.read().decode("utf-8", "replace").splitlines()[-n:]
    except OSError:
        return ""
    return "\n".join("    " + ln for ln in lines)


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    """True when something accepts TCP connections on ``host:port``."""
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex((host, port)) == 0


def http_ready(url: str, headers: Mapping[str, str] | None = None) -> bool:
    """True when ``url`` answers with any HTTP status below 500."""
    req = urllib.request.Request(url, headers=dict(headers or {}))
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status < 500
    except urllib.error.HTTPError as e:
        return e.code < 500
    except (OSError, ValueError):
        return False


def wait_until(
    check: Callable[[], bool],
    what: str,
    *,
    run: Path,
    watch: Sequence[str] = (),
    timeout_s: float = 120.0,
    interval_s: float = 0.5,
) -> float:
    """Poll ``check`` until it is true; return the seconds waited.

    Bounded by ``timeout_s`` and by ``timeout_s / interval_s + 1`` tries. Raises
    :class:`LabError` naming ``what`` when time runs out, or at once when a process in
    ``watch`` has died, with the tail of its output.
    """
    t0 = time.monotonic()
    tries = int(timeout_s / interval_s) + 1
    for _ in range(tries):
        if check():
            return time.monotonic() - t0
        for n in watch:
            if _process(run, n) is None:
                raise LabError(f"lab: {n} exited while waiting for {what}; its output "
                               f"({run / (n + '.out')}):\n{tail(run / (n + '.out'))}")
        if time.monotonic() - t0 > timeout_s:
            break
        time.sleep(interval_s)
    raise LabError(f"lab: timed out after {timeout_s:.0f} s waiting for {what}"
                   + "".join(f"\n  {n}: {run / (n + '.out')}" for n in watch))
