"""Data-plane sweep tables (:mod:`stacklens.sweep`, issue 10), part of the canonical tables
(:data:`stacklens.schema.TABLES`). Written by ``stacklens sweep run`` / ``sweep analyze``
(:mod:`stacklens.sweep.tables`)."""

from __future__ import annotations

import polars as pl

from stacklens.schema.types import Columns

__all__ = ["SWEEP_APP", "SWEEP_APP_REPEATS", "SWEEP_APP_SERIES", "SWEEP_POINTS", "SWEEP_PROBES", "SWEEP_REPEATS", "SWEEP_RESOURCES", "SWEEP_SKIPPED", "SWEEP_SUMMARY", "SWEEP_TABLES"]

# Written by ``stacklens sweep run`` / ``sweep analyze`` (:mod:`stacklens.sweep.tables`). Units in
# names: MiB/s = 2^20 B/s, Mbit/s = 10^6 bit/s, latencies in microseconds (fio's clat), ms, s.
# Latency percentiles of more than one fio job or target come from the merged clat histograms
# (fio json+ bins), never from averaged percentiles.

_SWEEP_KEYS: dict[str, pl.DataType] = {
    "sweep": pl.String(),  # the plan's name, or for sweep analyze the folder a series came from
    "tool": pl.String(),  # fio, iperf3
    "point": pl.String(),  # the point's key: its matrix values (fio-randread-bs4k-qd1-nj1-vms2)
    "n_targets": pl.Int32(),  # VMs (fio) or client/server pairs (iperf3) used together
    "rw": pl.String(),  # fio rw=
    "bs": pl.String(),  # fio bs= as given
    "bs_bytes": pl.Int64(),
    "iodepth": pl.Int32(),
    "numjobs": pl.Int32(),
    "protocol": pl.String(),  # iperf3: tcp, udp
    "parallel": pl.Int32(),  # iperf3 -P streams per pair
    "reverse": pl.Boolean(),  # iperf3 -R
}

#: One row per point x repeat x target, failed targets included (``status`` failed + reason).
SWEEP_POINTS: Columns = {
    **_SWEEP_KEYS,
    "repeat": pl.Int32(),  # 0-based
    "target": pl.String(),  # the plan's target name (iperf3: the client), or the file's name
    "status": pl.String(),  # ok, failed
    "reason": pl.String(),  # why it failed: exit status, tool error, timeout, unreachable ...
    "raw": pl.String(),  # the tool's JSON file, relative to the sweep folder (analyze: as found)
    "start_ns": pl.Int64(),  # when the target started the tool, controller clock, ns since epoch
    "start_lag_ms": pl.Float64(),  # start_ns - the barrier's start time
    "clock_offset_ms": pl.Float64(),  # target clock - controller clock (ssh: measured)
    "bw_mib_s": pl.Float64(),  # fio: bw_bytes of the directions of rw, summed over jobs
    "iops": pl.Float64(),
    "io_bytes": pl.Int64(),
    "runtime_s": pl.Float64(),
    "lat_mean_us": pl.Float64(),  # fio clat mean, weighted by I/O count
    "lat_p50_us": pl.Float64(),  # fio clat percentiles (fio's rule over the histogram)
    "lat_p95_us": pl.Float64(),
    "lat_p99_us": pl.Float64(),
    "lat_p999_us": pl.Float64(),
    "bw_mbit_s": pl.Float64(),  # iperf3: receiver side (sum_received) bits_per_second / 1e6
    "retransmits": pl.Int64(),  # iperf3 TCP sender retransmits
    "lost_percent": pl.Float64(),  # iperf3 UDP: 100 * lost_packets / packets
    "jitter_ms": pl.Float64(),  # iperf3 UDP
}

#: One row per point x repeat: sums over its targets (status ok / partial / failed).
SWEEP_REPEATS: Columns = {
    **_SWEEP_KEYS,
    "repeat": pl.Int32(),
    "status": pl.String(),  # ok (every target), partial (some), failed (none)
    "reason": pl.String(),
    "n_ok": pl.Int32(),  # targets that succeeded
    "start_spread_ms": pl.Float64(),  # latest - earliest target start (the barrier's quality)
    "bw_mib_s": pl.Float64(),  # sum over targets
    "iops": pl.Float64(),  # sum over targets
    "io_bytes": pl.Int64(),
    "runtime_s": pl.Float64(),
    "lat_mean_us": pl.Float64(),
    "lat_p50_us": pl.Float64(),  # from the merged histogram of every job of every target
    "lat_p95_us": pl.Float64(),
    "lat_p99_us": pl.Float64(),
    "lat_p999_us": pl.Float64(),
    "lat_source": pl.String(),  # merged_bins, fio_reported (one job, plain json), none
    "bw_mbit_s": pl.Float64(),  # sum over pairs
    "retransmits": pl.Int64(),
    "lost_percent": pl.Float64(),  # sum(lost) / sum(packets) over pairs
    "jitter_ms": pl.Float64(),  # maximum over pairs
    "flags": pl.String(),  # comma-separated: above_limit_bw, partial, bw_iops_mismatch, ...
}

#: One row per point: over its ok repeats (median, min, max), failed ones counted.
SWEEP_SUMMARY: Columns = {
    **_SWEEP_KEYS,
    "n_repeats": pl.Int32(),
    "n_ok": pl.Int32(),
    "n_failed": pl.Int32(),  # failed or partial repeats (kept in sweep_repeats with reasons)
    "bw_mib_s": pl.Float64(),  # median over ok repeats of the sum over targets
    "bw_mib_s_min": pl.Float64(),
    "bw_mib_s_max": pl.Float64(),
    "iops": pl.Float64(),
    "iops_min": pl.Float64(),
    "iops_max": pl.Float64(),
    "lat_mean_us": pl.Float64(),
    "lat_p50_us": pl.Float64(),  # median over repeats of the merged percentile
    "lat_p95_us": pl.Float64(),
    "lat_p99_us": pl.Float64(),
    "lat_p999_us": pl.Float64(),
    "bw_mbit_s": pl.Float64(),
    "bw_mbit_s_min": pl.Float64(),
    "bw_mbit_s_max": pl.Float64(),
    "lost_percent": pl.Float64(),
    "jitter_ms": pl.Float64(),
    "spread_pct": pl.Float64(),  # (max - min) / median of bw, percent
    "flags": pl.String(),
    "reasons": pl.String(),  # why repeats failed
}

#: Files ``sweep analyze`` could not use, one row each (kind: iperf3_text, fio_log, bad_json ...).
SWEEP_SKIPPED: Columns = {
    "file": pl.String(),
    "kind": pl.String(),
    "reason": pl.String(),
}

#: One row per network probe repeat (``probes:`` of a plan): ping every ``interval_s``.
SWEEP_PROBES: Columns = {
    "sweep": pl.String(),
    "kind": pl.String(),  # latency, failover
    "probe": pl.String(),  # latency-<src>-<dst>, failover-<src>-<dst>-on-<target>-<i>
    "repeat": pl.Int32(),
    "src": pl.String(),
    "dst": pl.String(),
    "placement": pl.String(),  # the plan's label: same-host, same-rack, across-hosts ...
    "status": pl.String(),  # ok, failed
    "reason": pl.String(),
    "raw": pl.String(),  # ping's output, relative to the sweep folder
    "interval_s": pl.Float64(),
    "sent": pl.Int64(),
    "received": pl.Int64(),
    "loss_pct": pl.Float64(),
    "rtt_p50_ms": pl.Float64(),  # nearest rank over the replies
    "rtt_p99_ms": pl.Float64(),
    "rtt_max_ms": pl.Float64(),
    "max_gap_s": pl.Float64(),  # longest time between two consecutive replies
    "outage_s": pl.Float64(),  # max_gap_s - interval_s
    "fault_s": pl.Float64(),  # how long the injected fault lasted (failover)
    "jitter_ms": pl.Float64(),  # kind jitter: iperf3 --udp client's jitter (RFC 3550 estimate)
    "bw_mbit_s": pl.Float64(),  # kind jitter: UDP received, 10^6 bit/s
}

_APP_KEYS: dict[str, pl.DataType] = {
    "sweep": pl.String(),
    "point": pl.String(),  # pgbench-c<connections>-vms<clients>
    "repeat": pl.Int32(),
    "n_targets": pl.Int32(),  # client targets running pgbench together
    "connections": pl.Int32(),  # pgbench -c (and -j) per client
}

#: Application workload (pgbench): one row per point x repeat x client target.
SWEEP_APP: Columns = {
    **_APP_KEYS,
    "target": pl.String(),
    "status": pl.String(),  # ok, failed
    "reason": pl.String(),
    "raw": pl.String(),  # pgbench's stdout (summary); .stderr beside it holds --progress
    "start_ns": pl.Int64(),  # SL_START of the barrier, ns since epoch
    "tps": pl.Float64(),  # pgbench's final tps (without initial connection time)
    "tpm": pl.Float64(),  # tps * 60
    "xacts": pl.Int64(),  # transactions actually processed
    "failed_xacts": pl.Int64(),
    "lat_mean_ms": pl.Float64(),  # pgbench's latency average
}

#: pgbench point x repeat: sums over the clients, the CPU of the watched targets.
SWEEP_APP_REPEATS: Columns = {
    **_APP_KEYS,
    "status": pl.String(),  # ok (every client), partial, failed
    "reason": pl.String(),
    "n_ok": pl.Int32(),
    "tps": pl.Float64(),  # sum over ok clients
    "tpm": pl.Float64(),
    "xacts": pl.Int64(),
    "lat_mean_ms": pl.Float64(),  # weighted by transactions
    "cpu_pct_mean": pl.Float64(),  # mean over targets and seconds of the run (/proc/stat)
}

#: pgbench --progress=1: one row per client x second.
SWEEP_APP_SERIES: Columns = {
    **_APP_KEYS,
    "target": pl.String(),
    "t_s": pl.Float64(),  # seconds since the client started
    "tps": pl.Float64(),  # transactions finished in that second
    "tpm": pl.Float64(),
    "lat_ms": pl.Float64(),
}

#: What the targets did during a pgbench run: one row per target x one-second interval.
SWEEP_RESOURCES: Columns = {
    **_APP_KEYS,
    "target": pl.String(),  # a client or the database server
    "t_s": pl.Float64(),  # end of the interval, seconds after the barrier's start
    "cpu_pct": pl.Float64(),  # busy share of all CPUs (/proc/stat; host-wide in a netns)
    "disk_read_mib_s": pl.Float64(),  # /sys/block/*/stat sectors x 512, 2^20 B
    "disk_write_mib_s": pl.Float64(),
    "net_rx_mbit_s": pl.Float64(),  # /proc/net/dev without lo (the namespace's own in a netns)
    "net_tx_mbit_s": pl.Float64(),
    "proc_cpu_pct": pl.Float64(),  # netns targets: CPU of the namespace's processes (psutil),
    "n_procs": pl.Int32(),  # percent of one CPU; processes in the namespace
}

#: table name -> columns, for :data:`stacklens.schema.TABLES`
SWEEP_TABLES: dict[str, Columns] = {
    "sweep_app": SWEEP_APP,
    "sweep_app_repeats": SWEEP_APP_REPEATS,
    "sweep_app_series": SWEEP_APP_SERIES,
    "sweep_resources": SWEEP_RESOURCES,
    "sweep_probes": SWEEP_PROBES,
    "sweep_points": SWEEP_POINTS,
    "sweep_repeats": SWEEP_REPEATS,
    "sweep_summary": SWEEP_SUMMARY,
    "sweep_skipped": SWEEP_SKIPPED,
}
