"""fio: the command a sweep runs, and its JSON output read exactly as fio defines it.

Format source: fio's ``stat.c`` (``show_thread_status_json`` / ``add_ddir_status_json``),
fio 3.x. Per job and direction (``read``, ``write``): ``bw_bytes`` (B/s), ``bw`` (KiB/s),
``iops``, ``io_bytes``, ``runtime`` (ms), ``total_ios``, ``clat_ns`` with ``mean``, ``N``
(fio >= 3.?; else ``total_ios``), ``percentile`` (``"99.000000": ns``) and, with
``--output-format=json+``, ``bins``: ``{"<ns>": count}`` where the key is
``plat_idx_to_val(i)``, the middle of histogram bucket ``i`` (only non-empty buckets).

Merging (what fio itself does for ``group_reporting``, ``sum_thread_stats``): bandwidth, IOPS
and bytes are summed over jobs and targets; the clat histograms are summed bucket by bucket
and percentiles are read from the merged histogram with fio's own rule
(``calc_clat_percentiles``: the first bucket whose cumulative count reaches ``p/100 * N``).
Percentiles are never averaged. Without ``bins`` (plain ``json``) only a single-job result
keeps fio's reported percentiles; a merge of several has none.
"""

from __future__ import annotations

import math
import shlex
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from stacklens.sweep.plan import FioMatrix, Point, parse_bs

__all__ = ["FioResult", "fio_command", "is_fio_json", "merge_fio", "parse_fio",
           "percentile_from_bins"]

#: The percentiles a sweep reports (fio's ``percentile`` keys are ``"%f"`` of these).
PCTS = (50.0, 95.0, 99.0, 99.9)
MIB = float(1 << 20)


@dataclass(frozen=True)
class FioResult:
    """One target's fio output (all jobs, the directions the workload uses), or a merge of
    several. ``bins`` maps bucket value (ns) to count, empty without json+; ``pct_ns`` holds
    fio's own percentiles (single job) or those of the merged ``bins``."""

    bw_bytes_s: float
    iops: float
    io_bytes: int
    runtime_ms: int
    n_ios: int
    clat_mean_ns: float | None
    bins: Mapping[int, int] = field(default_factory=dict)
    pct_ns: Mapping[float, float] = field(default_factory=dict)
    n_jobs: int = 1
    error: str | None = None
    version: str | None = None
    options: Mapping[str, str] = field(default_factory=dict)

    @property
    def bw_mib_s(self) -> float:
        """Bandwidth in MiB/s (2^20 B/s)."""
        return self.bw_bytes_s / MIB


def is_fio_json(doc: Any) -> bool:
    """True for a fio ``json`` / ``json+`` document (``fio version`` and ``jobs``)."""
    return isinstance(doc, dict) and "fio version" in doc and isinstance(doc.get("jobs"), list)


def fio_command(m: FioMatrix, p: Point, workdir: str, target: str) -> str:
    """The fio command line (POSIX sh) for one target of point ``p``: one job file per
    target in ``workdir``, JSON+ on stdout, ``group_reporting`` off (jobs merged here)."""
    assert p.rw and p.bs and p.iodepth and p.numjobs
    args = [
        "fio", "--output-format=json+", f"--name={p.key}", f"--directory={workdir}",
        f"--filename_format=sl-{target}.$jobnum", f"--rw={p.rw}", f"--bs={p.bs}",
        f"--iodepth={p.iodepth}", f"--numjobs={p.numjobs}", f"--size={m.size}",
        f"--ioengine={m.ioengine}", f"--direct={int(m.direct)}", "--time_based",
        f"--runtime={m.runtime_s:g}s", f"--ramp_time={m.ramp_s:g}s", "--randrepeat=0",
    ]
    return " ".join(shlex.quote(a) for a in args)


def _dirs(rw: str | None) -> tuple[str, ...]:
    """The directions a workload's numbers come from (``rw``/``randrw``: both)."""
    if rw is None:
        return ("read", "write")
    if rw in ("read", "randread"):
        return ("read",)
    if rw in ("write", "randwrite"):
        return ("write",)
    if rw in ("trim", "randtrim"):
        return ("trim",)
    return ("read", "write")


def _pct_key(p: float) -> str:
    return f"{p:f}"


def percentile_from_bins(bins: Mapping[int, int], pcts: Iterable[float] = PCTS
                         ) -> dict[float, float]:
    """Percentiles (ns) of a fio clat histogram by fio's rule: for each ``p`` the value of
    the first bucket (ascending) whose cumulative count is >= ``p / 100 * N``. Empty for an
    empty histogram."""
    n = sum(bins.values())
    if n <= 0:
        return {}
    items = sorted(bins.items())
    out: dict[float, float] = {}
    for p in sorted(pcts):
        need = p / 100.0 * n
        acc = 0
        for v, c in items:  # bounded by the number of buckets (<= 1856 in fio)
            acc += c
            if acc >= need:
                out[p] = float(v)
                break
    return out


def parse_fio(doc: dict[str, Any], rw: str | None = None) -> FioResult:
    """Read one fio JSON document (one target): jobs and the directions of ``rw`` (default:
    the first job's ``rw`` option) are merged as fio's ``group_reporting`` does.

    Raises ``ValueError`` when ``doc`` is not fio output or lacks a direction's numbers."""
    if not is_fio_json(doc):
        raise ValueError("not fio JSON output (no 'fio version' / 'jobs')")
    jobs = [j for j in doc["jobs"] if isinstance(j, dict)]
    if not jobs:
        raise ValueError("fio JSON without jobs")
    opts = {**doc.get("global options", {}), **jobs[0].get("job options", {})}
    rw = rw or opts.get("rw") or opts.get("readwrite")
    bw = iops = mean_w = 0.0
    io_bytes = n_ios = runtime = 0
    bins: Counter[int] = Counter()
    pct: dict[float, float] = {}
    errors = [f"job {j.get('jobname')}: error {j['error']}" for j in jobs if j.get("error")]
    parts = 0
    for j in jobs:
        for d in _dirs(rw):
            s = j.get(d)
            if not isinstance(s, dict):
                raise ValueError(f"job {j.get('jobname')!r} has no '{d}' section")
            if not s.get("io_bytes") and not s.get("total_ios"):
                continue
            parts += 1
            bw += float(s.get("bw_bytes", float(s.get("bw", 0)) * 1024))
            iops += float(s.get("iops", 0))
            io_bytes += int(s.get("io_bytes", 0))
            runtime = max(runtime, int(s.get("runtime", 0)))
            clat = s.get("clat_ns") or {}
            n = int(clat.get("N", s.get("total_ios", 0)) or 0)
            n_ios += int(s.get("total_ios", n))
            mean_w += float(clat.get("mean", 0.0)) * n
            for k, c in (clat.get("bins") or {}).items():
                bins[int(k)] += int(c)
            if parts == 1:
                pct = {float(k): float(v) for k, v in (clat.get("percentile") or {}).items()
                       if v}
    if bins:
        pct = percentile_from_bins(bins)
    elif parts > 1:
        pct = {}  # several jobs or directions without histograms: nothing exact to report
    n_clat = sum(bins.values()) or n_ios
    return FioResult(
        bw_bytes_s=bw, iops=iops, io_bytes=io_bytes, runtime_ms=runtime, n_ios=n_ios,
        clat_mean_ns=(mean_w / n_clat) if n_clat else None, bins=dict(bins),
        pct_ns={p: pct[p] for p in PCTS if p in pct}, n_jobs=len(jobs),
        error="; ".join(errors) or None, version=doc.get("fio version"),
        options={k: str(v) for k, v in opts.items()},
    )


def merge_fio(results: list[FioResult]) -> FioResult:
    """The sum over targets of one point: bandwidth, IOPS, bytes and I/Os summed, histograms
    summed bucket by bucket, percentiles from the merged histogram (none when a target has
    no histogram and there is more than one target), mean weighted by I/O count."""
    if len(results) == 1:
        return results[0]
    bins: Counter[int] = Counter()
    for r in results:
        bins.update(r.bins)
    have_all = all(r.bins for r in results)
    n = sum(r.n_ios for r in results)
    means = [(r.clat_mean_ns, r.n_ios) for r in results if r.clat_mean_ns is not None]
    mean = sum(m * k for m, k in means) / n if means and n else None
    return FioResult(
        bw_bytes_s=sum(r.bw_bytes_s for r in results), iops=sum(r.iops for r in results),
        io_bytes=sum(r.io_bytes for r in results),
        runtime_ms=max((r.runtime_ms for r in results), default=0), n_ios=n,
        clat_mean_ns=mean, bins=dict(bins) if have_all else {},
        pct_ns=percentile_from_bins(bins) if have_all else {},
        n_jobs=sum(r.n_jobs for r in results),
        error="; ".join(r.error for r in results if r.error) or None,
    )


def consistency_flags(r: FioResult, bs: str | None) -> list[str]:
    """Internal checks of one result: ``bw_iops_mismatch`` when bandwidth differs from IOPS x
    block size by more than 5 %, ``no_io`` when nothing was done."""
    flags = []
    if r.n_ios == 0 or r.bw_bytes_s <= 0:
        flags.append("no_io")
    b = parse_bs(bs) if bs else None
    if b and r.iops > 0 and not math.isclose(r.bw_bytes_s, r.iops * b, rel_tol=0.05):
        flags.append("bw_iops_mismatch")
    return flags
