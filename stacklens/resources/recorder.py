"""``ResourceRecorder``: CPU, memory, threads and sockets of local processes during a run.

A :class:`~stacklens.recorder.Recorder` over psutil. Each *target* is a root PID standing for
one service on one host (a gunicorn master and its workers, a nova-compute of a fake host);
every ``interval_s`` seconds the recorder walks each target's process tree and writes one row
of table ``resource_samples`` (:mod:`stacklens.schema`) per target, plus one row of the
system-wide loopback byte counters (service ``net:lo``, pid null): psutil has no per-process
network bytes, and on a one-machine lab all traffic is on ``lo``; and one row of the whole
machine's CPU (service ``cpu:host``, pid null, ``n_procs`` = logical CPUs): busy time (all
``psutil.cpu_times()`` fields but idle, iowait and steal) over the interval, in percent of one CPU, so
CPU taken by processes that are not targets (other jobs on a shared machine) shows as the
difference between it and the targets' sum.

CPU %: the tree's user + system CPU seconds used since the previous sample, over the wall
seconds between the samples, x 100 (percent of one CPU). A process that appeared since the
previous sample counts with all its CPU time; one that ended in between loses its last
interval. A target whose root process is gone gets no more rows and one note. Remote hosts
(node_exporter, SSH ``/proc``) are not read here.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import polars as pl
import psutil

from stacklens.schema import TABLES, conform
from stacklens.schema.capture import HOST_CPU_SERVICE, NET_SERVICE

__all__ = ["HOST_CPU_SERVICE", "NET_SERVICE", "ProcTarget", "ResourceRecorder"]

# the rows' service names live with the table's schema (the forecast reads them too)


@dataclass(frozen=True)
class ProcTarget:
    """One service's root process: ``pid`` as ``service`` on ``host``."""

    pid: int
    service: str
    host: str


class ResourceRecorder:
    """Sample ``targets`` every ``interval_s`` seconds (default 1) on a bounded thread.

    ``targets``: :class:`ProcTarget` items, or a mapping pid -> (service, host);
    ``children``: sum over each target's descendants (default true); ``max_samples``: bound of
    the loop (default 200 000); ``clock``: ns since the epoch. :meth:`stop` returns
    ``{"resource_samples": frame}`` and notes (targets that were gone)."""

    name = "resources"

    def __init__(self, targets: Mapping[int, tuple[str, str]] | list[ProcTarget],
                 interval_s: float = 1.0, children: bool = True, max_samples: int = 200_000,
                 clock: Callable[[], int] = time.time_ns) -> None:
        if isinstance(targets, Mapping):
            targets = [ProcTarget(p, s, h) for p, (s, h) in targets.items()]
        self.targets = list(targets)
        self.interval_s, self.children, self.max_samples = interval_s, children, max_samples
        self._clock = clock
        self._procs: dict[int, psutil.Process | None] = {}
        # per target: {(pid, start s since boot): cpu seconds} at the previous sample, and its time
        self._cpu_prev: dict[int, tuple[float, dict[tuple[int, float], float]]] = {}
        self._rows: list[dict[str, Any]] = []
        self._host_prev: tuple[float, float] | None = None  # (monotonic s, busy CPU s)
        self._ncpu = psutil.cpu_count() or 1
        self._notes: set[str] = set()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Find the target processes, take the first sample, start the thread. A target
        whose PID does not exist is a note, not an error."""
        for t in self.targets:
            try:
                self._procs[t.pid] = psutil.Process(t.pid)
            except psutil.Error:
                self._procs[t.pid] = None
                self._notes.add(f"{t.service}@{t.host}: pid {t.pid} not found")
        self.sample()
        self._thread = threading.Thread(target=self._loop, name="stacklens-resources",
                                        daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        for _ in range(self.max_samples):
            if self._stop.wait(self.interval_s):
                return
            self.sample()
        self._notes.add(f"stopped sampling after {self.max_samples} samples (the bound)")

    def _tree(self, root: psutil.Process) -> list[psutil.Process]:
        if not self.children:
            return [root]
        try:
            return [root, *root.children(recursive=True)]
        except psutil.Error:
            return [root]

    def _one(self, t: ProcTarget, ts: int, now_s: float) -> dict[str, Any] | None:
        root = self._procs.get(t.pid)
        if root is None:
            return None
        if not root.is_running() or root.status() == psutil.STATUS_ZOMBIE:
            self._procs[t.pid] = None
            self._notes.add(f"{t.service}@{t.host}: pid {t.pid} ended during the run")
            return None
        rss = threads = conns = n = 0
        cpu: dict[tuple[int, float], float] = {}
        for p in self._tree(root):
            try:
                with p.oneshot():
                    ct = p.cpu_times()
                    # keyed by the start since boot: psutil's wall-clock start time adds
                    # the kernel's btime, which can step by 1 s between two samples (proc(5))
                    cpu[(p.pid, round(p.create_time() - psutil.boot_time(), 3))] = (
                        ct.user + ct.system)
                    rss += p.memory_info().rss
                    threads += p.num_threads()
                    conns += len(p.net_connections(kind="inet"))
                n += 1
            except psutil.Error:
                continue  # ended between the listing and the reading
        prev = self._cpu_prev.get(t.pid)
        pct = None
        if prev is not None and now_s > prev[0]:
            used = sum(c - prev[1].get(k, 0.0) for k, c in cpu.items())
            pct = max(used, 0.0) / (now_s - prev[0]) * 100.0
        self._cpu_prev[t.pid] = (now_s, cpu)
        return {"ts_ns": ts, "host": t.host, "service": t.service, "pid": t.pid, "n_procs": n,
                "cpu_pct": pct, "rss_bytes": rss, "threads": threads, "connections": conns}

    def _host_cpu(self, ts: int, now_s: float) -> dict[str, Any]:
        ct = psutil.cpu_times()
        busy = sum(ct) - ct.idle - getattr(ct, "iowait", 0.0) - getattr(ct, "steal", 0.0)
        # guest time is already counted in user and nice (Linux proc(5))
        busy -= getattr(ct, "guest", 0.0) + getattr(ct, "guest_nice", 0.0)
        pct = None
        if self._host_prev is not None and now_s > self._host_prev[0]:
            pct = max(busy - self._host_prev[1], 0.0) / (now_s - self._host_prev[0]) * 100.0
        self._host_prev = (now_s, busy)
        return {"ts_ns": ts, "host": None, "service": HOST_CPU_SERVICE, "pid": None,
                "n_procs": self._ncpu, "cpu_pct": pct}

    def sample(self) -> None:
        """Take one sample of every live target and of the loopback counters now."""
        ts, now_s = self._clock(), time.monotonic()
        for t in self.targets:
            try:
                row = self._one(t, ts, now_s)
            except psutil.Error as e:
                self._notes.add(f"{t.service}@{t.host}: {type(e).__name__}")
                row = None
            if row is not None:
                self._rows.append(row)
        self._rows.append(self._host_cpu(ts, now_s))
        lo = psutil.net_io_counters(pernic=True).get("lo")
        if lo is not None:
            self._rows.append({"ts_ns": ts, "host": None, "service": NET_SERVICE, "pid": None,
                               "net_sent_bytes": lo.bytes_sent, "net_recv_bytes": lo.bytes_recv})

    def stop(self, timeout_s: float = 30.0) -> tuple[dict[str, pl.DataFrame], list[str]]:
        """Stop the thread, take a last sample, return ``({"resource_samples": frame},
        notes)``."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
            if self._thread.is_alive():
                self._notes.add(f"sampling thread still busy after {timeout_s:.0f} s")
        self.sample()
        df = pl.DataFrame(self._rows or None, schema=TABLES["resource_samples"])
        return {"resource_samples": conform(df, "resource_samples")}, sorted(self._notes)
