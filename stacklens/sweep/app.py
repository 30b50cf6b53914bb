"""The application workload: ``pgbench`` (PostgreSQL) commands and output, and the per-second
CPU / disk / network samples taken on every target while it runs.

pgbench output (PostgreSQL 15 ``pgbench(1)``, source ``src/bin/pgbench/pgbench.c``
``printProgressReport`` / ``printResults``): with ``--progress=1`` one line per second on
stderr, ``progress: 2.0 s, 412.0 tps, lat 2.420 ms stddev 1.104, 0 failed`` (``tps`` is the
transactions finished in that interval per second); at the end on stdout
``number of transactions actually processed: 812``, ``number of failed transactions: 0
(0.000%)``, ``latency average = 2.4 ms`` and ``tps = 405.1 (without initial connection
time)``. TPM is TPS x 60 (the unit database benchmarks quote).

Samples (:func:`sampler_command`): a bounded sh loop printing, every second, ``S <epoch ns>``,
the first line of ``/proc/stat`` (``cpu user nice system idle iowait irq softirq steal ...``,
USER_HZ ticks, ``proc(5)``), ``D <read sectors> <written sectors>`` summed over
``/sys/block/*/stat`` (whole devices; fields 3 and 7, 512-byte sectors, kernel
``Documentation/block/stat.rst``) and ``/proc/net/dev`` without its two header lines (bytes
received first, bytes sent ninth after the name). In a network namespace ``/proc/net/dev``
shows the namespace's interfaces; ``/proc/stat`` and the disks are the host's.

Namespace targets share the host's CPUs, so their processes are watched too
(:func:`netns_processes`, psutil): every second the CPU time (user + system, s) of each
process in the namespace, ``S <epoch ns>`` then ``<pid> <ppid> <cpu_s> <children_cpu_s>
<name>`` lines; :func:`proc_rates` turns them into ``proc_cpu_pct`` (percent of one CPU).
"""

from __future__ import annotations

import os
import re
import shlex
import time
from dataclasses import dataclass
from typing import Any

__all__ = ["PgbenchResult", "Sample", "init_command", "netns_processes", "parse_pgbench",
           "parse_samples", "pgbench_command", "proc_rates", "rates", "sampler_command"]

_PROGRESS = re.compile(r"^progress: ([\d.]+) s, ([\d.]+) tps, lat ([\d.]+) ms")
_TPS = re.compile(r"^tps = ([\d.]+)", re.M)
_XACTS = re.compile(r"^number of transactions actually processed: (\d+)", re.M)
_FAILED = re.compile(r"^number of failed transactions: (\d+)", re.M)
_LAT = re.compile(r"^latency average = ([\d.]+) ms", re.M)
MAX_SAMPLES = 3600


def pgbench_command(address: str, port: int, user: str, database: str, connections: int,
                    time_s: int) -> str:
    """``pgbench`` for one client target: ``-c``/``-j`` connections, ``-T`` seconds,
    ``--progress=1``, ``-n`` (the tables were vacuumed by ``-i``)."""
    q = shlex.quote
    return (f"pgbench -h {q(address)} -p {int(port)} -U {q(user)} -n -c {int(connections)} "
            f"-j {int(connections)} -T {int(time_s)} --progress=1 {q(database)}")


def init_command(address: str, port: int, user: str, database: str, scale: int) -> str:
    """``pgbench -i -s scale`` (creates and fills pgbench's tables, quietly)."""
    q = shlex.quote
    return (f"pgbench -h {q(address)} -p {int(port)} -U {q(user)} -i -q -s {int(scale)} "
            f"{q(database)}")


@dataclass(frozen=True)
class PgbenchResult:
    """One client's pgbench run: the final ``tps`` (transactions/s), transactions done and
    failed, mean latency (ms), and the per-second series ``(t_s, tps, lat_ms)``; ``error``
    when the summary is missing."""

    tps: float | None
    xacts: int | None
    failed: int | None
    lat_mean_ms: float | None
    series: tuple[tuple[float, float, float], ...]
    error: str | None = None

    @property
    def tpm(self) -> float | None:
        """Transactions per minute."""
        return self.tps * 60.0 if self.tps is not None else None


def parse_pgbench(stdout: str, stderr: str) -> PgbenchResult:
    """Read pgbench's summary (stdout) and ``--progress`` lines (stderr)."""
    series = []
    for line in stderr.splitlines():
        m = _PROGRESS.match(line.strip())
        if m:
            series.append((float(m.group(1)), float(m.group(2)), float(m.group(3))))

    def num(rx: re.Pattern[str], cast: Any) -> Any:
        m = rx.search(stdout)
        return cast(m.group(1)) if m else None

    tps = num(_TPS, float)
    return PgbenchResult(tps, num(_XACTS, int), num(_FAILED, int), num(_LAT, float),
                         tuple(series), None if tps is not None else "no tps in pgbench output")


def sampler_command(n: int) -> str:
    """A sh command printing ``n`` samples one second apart (``n`` capped at
    :data:`MAX_SAMPLES`)."""
    n = max(1, min(int(n), MAX_SAMPLES))
    loop = (f"i=0; while [ $i -lt {n} ]; do echo \"S $(date +%s%N)\"; head -n1 /proc/stat; "
            "cat /sys/block/*/stat 2>/dev/null | awk '{r+=$3; w+=$7} END {print \"D\", r+0, w+0}'; "
            "sed 1,2d /proc/net/dev; i=$((i+1)); [ $i -lt " + str(n) + " ] && sleep 1; done; "
            "true")
    return "/bin/sh -c " + shlex.quote(loop)


@dataclass(frozen=True)
class Sample:
    """One sample: time (ns), CPU busy and total ticks, disk sectors read / written,
    network bytes received / sent (all interfaces but ``lo``)."""

    ts_ns: int
    cpu_busy: int
    cpu_total: int
    rd_sectors: int
    wr_sectors: int
    rx_bytes: int
    tx_bytes: int


def parse_samples(text: str) -> list[Sample]:
    """The samples in a sampler's output; incomplete ones are dropped."""
    out: list[Sample] = []
    cur: dict[str, int] = {}

    def close() -> None:
        if {"ts", "busy", "total", "rd", "wr"} <= cur.keys():
            out.append(Sample(cur["ts"], cur["busy"], cur["total"], cur["rd"], cur["wr"],
                              cur.get("rx", 0), cur.get("tx", 0)))

    for line in text.splitlines():
        f = line.split()
        if not f:
            continue
        if f[0] == "S" and len(f) == 2 and f[1].isdigit():
            close()
            cur = {"ts": int(f[1])}
        elif f[0] == "cpu" and len(f) >= 5:
            ticks = [int(x) for x in f[1:9]]
            idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)
            cur.update(busy=sum(ticks) - idle, total=sum(ticks))
        elif f[0] == "D" and len(f) == 3:
            cur.update(rd=int(f[1]), wr=int(f[2]))
        elif ":" in line:
            name, _, rest = line.partition(":")
            vals = rest.split()
            if name.strip() != "lo" and len(vals) >= 9:
                cur["rx"] = cur.get("rx", 0) + int(vals[0])
                cur["tx"] = cur.get("tx", 0) + int(vals[8])
    close()
    return out


def rates(samples: list[Sample], start_ns: int) -> list[dict[str, float]]:
    """Per interval between consecutive samples: ``t_s`` (end of the interval, seconds after
    ``start_ns``), ``cpu_pct``, ``disk_read_mib_s``, ``disk_write_mib_s``, ``net_rx_mbit_s``,
    ``net_tx_mbit_s`` (MiB = 2^20 B, Mbit = 10^6 bit)."""
    rows = []
    for a, b in zip(samples, samples[1:], strict=False):
        dt = (b.ts_ns - a.ts_ns) / 1e9
        if dt <= 0:
            continue
        dtot = b.cpu_total - a.cpu_total
        rows.append({
            "t_s": (b.ts_ns - start_ns) / 1e9,
            "cpu_pct": 100.0 * (b.cpu_busy - a.cpu_busy) / dtot if dtot > 0 else 0.0,
            "disk_read_mib_s": (b.rd_sectors - a.rd_sectors) * 512 / 2**20 / dt,
            "disk_write_mib_s": (b.wr_sectors - a.wr_sectors) * 512 / 2**20 / dt,
            "net_rx_mbit_s": (b.rx_bytes - a.rx_bytes) * 8 / 1e6 / dt,
            "net_tx_mbit_s": (b.tx_bytes - a.tx_bytes) * 8 / 1e6 / dt})
    return rows


def _in_netns(ino: int) -> list[int]:
    out = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if os.stat(f"/proc/{pid}/ns/net").st_ino == ino:
                    out.append(int(pid))
            except OSError:
                continue
    return out


def netns_processes(netns: str) -> str:
    """One sample of the processes in network namespace ``netns`` (``/run/netns/<netns>``):
    ``S <ns>`` and ``<pid> <ppid> <self_cpu_s> <children_cpu_s> <name>`` lines (psutil
    ``cpu_times``: user + system, and children_user + children_system of reaped children);
    empty when the namespace is gone."""
    import psutil

    try:
        ino = os.stat(f"/run/netns/{netns}").st_ino
    except OSError:
        return ""
    lines = [f"S {time.time_ns()}"]
    for pid in _in_netns(ino):
        try:
            pr = psutil.Process(pid)
            t = pr.cpu_times()
            lines.append(f"{pid} {pr.ppid()} {t.user + t.system:.3f} "
                         f"{t.children_user + t.children_system:.3f} {pr.name()}")
        except (psutil.Error, OSError):
            continue
    return "\n".join(lines) + "\n"


def proc_rates(text: str, start_ns: int) -> list[tuple[float, float, int]]:
    """``(t_s, proc_cpu_pct, n_procs)`` per interval of :func:`netns_processes` samples.
    CPU used in an interval: the growth of own and reaped-children time of the processes
    seen at both ends, plus the own time of processes new at its end, minus the time already
    counted for processes that ended and were reaped by a watched parent (their whole time
    moved into the parent's children time: PostgreSQL's backends). Clamped at 0."""
    samples: list[tuple[int, dict[int, tuple[int, float, float]]]] = []
    for line in text.splitlines():
        f = line.split()
        if len(f) == 2 and f[0] == "S" and f[1].isdigit():
            samples.append((int(f[1]), {}))
        elif len(f) >= 4 and samples and f[0].isdigit():
            samples[-1][1][int(f[0])] = (int(f[1]), float(f[2]), float(f[3]))
    out = []
    for (ta, a), (tb, b) in zip(samples, samples[1:], strict=False):
        dt = (tb - ta) / 1e9
        if dt <= 0:
            continue
        used = sum(b[p][1] - a[p][1] + b[p][2] - a[p][2] for p in a.keys() & b.keys())
        used += sum(b[p][1] for p in b.keys() - a.keys())
        used -= sum(a[p][1] for p in a.keys() - b.keys() if a[p][0] in b)
        out.append(((tb - start_ns) / 1e9, 100.0 * max(0.0, used) / dt, len(b)))
    return out
