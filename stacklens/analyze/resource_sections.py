"""Report sections on what each service consumed during the run (table ``resource_samples`` of
:mod:`stacklens.resources`, recorded by ``stacklens run`` for local processes).

A service may run as several instances (one nova-compute per fake host): peaks and means are
per instance (one process tree), the largest instance's peak and the mean over instances and
samples. CPU is in percent of one CPU (a ``fraction`` that may exceed 1: 1.5 = one and a half
CPUs busy); memory is RSS summed over a tree's processes, in MiB (shared pages count again in
each process, so the sum over gunicorn workers overstates what they take together).

The sizing table (seeds: peak CPU, memory and network per service at idle, 800 and 2000
concurrent boots) is :data:`RESOURCE_SIZING`: one run gives one load level, its peak number
of client requests in flight (table ``requests`` of ``stacklens run``); runs at several levels
compared side by side give the table.
"""

from __future__ import annotations

from stacklens.analyze.section import Column, Section

__all__ = ["RESOURCE_SECTIONS"]

_MIB = 1048576.0
_PER_SERVICE = f"""
    WITH r AS (SELECT * FROM resource_samples WHERE pid IS NOT NULL),
         s AS (SELECT service, count(DISTINCT host) AS instances,
                 max(cpu_pct) / 100.0 AS peak_cpu, avg(cpu_pct) / 100.0 AS mean_cpu,
                 percentile_cont(0.95) WITHIN GROUP (ORDER BY cpu_pct) / 100.0 AS p95_cpu,
                 max(rss_bytes) / {_MIB} AS peak_rss_mib, avg(rss_bytes) / {_MIB} AS mean_rss_mib,
                 max(threads) AS peak_threads, max(connections) AS peak_connections,
                 max(n_procs) AS processes
               FROM r GROUP BY service)
"""

_COLUMNS = (
    Column("service", "name", "service"),
    Column("instances", "count", "hosts the service ran as"),
    Column("processes", "count", "most processes in one instance's tree", "procs"),
    Column("peak_cpu", "fraction", "highest CPU of one instance over one interval (of one CPU)",
           "peak CPU"),
    Column("p95_cpu", "fraction", "95th percentile of the instances' CPU samples", "p95 CPU"),
    Column("mean_cpu", "fraction", "mean CPU over instances and samples", "mean CPU"),
    Column("peak_rss_mib", "count", "highest RSS of one instance, MiB", "peak RSS MiB"),
    Column("mean_rss_mib", "count", "mean RSS, MiB", "mean RSS MiB"),
    Column("peak_threads", "count", "most OS threads in one instance", "threads"),
    Column("peak_connections", "count", "most open inet sockets in one instance", "sockets"),
)

RESOURCES = Section(
    "resources", "Resources per service (CPU, memory, threads, sockets)",
    "Sampled with psutil during the run; per instance, peak and mean.",
    _PER_SERVICE + """
    SELECT service, instances, processes, peak_cpu, p95_cpu, mean_cpu, peak_rss_mib,
           mean_rss_mib, peak_threads, peak_connections
    FROM s ORDER BY peak_cpu DESC NULLS LAST, service
    """,
    _COLUMNS, needs=("resource_samples",), absent={"resources": []},
)

RESOURCE_NETWORK = Section(
    "resource_network", "Loopback traffic during the run (system-wide)",
    "Bytes on the loopback interface between the first and the last sample, and the busiest "
    "interval. psutil has no per-process byte counters: on a one-machine lab every service "
    "talks over lo, so this is all of their traffic together (and anything else on lo).",
    """
    WITH n AS (SELECT ts_ns, net_sent_bytes AS b FROM resource_samples
               WHERE pid IS NULL AND net_sent_bytes IS NOT NULL),
         d AS (SELECT ts_ns, b - lag(b) OVER (ORDER BY ts_ns) AS db,
                      (ts_ns - lag(ts_ns) OVER (ORDER BY ts_ns)) / 1e9 AS dt FROM n)
    SELECT sum(db) AS lo_bytes, sum(db) / sum(dt) AS mean_bytes_per_s,
           max(CASE WHEN dt > 0 THEN db / dt END) AS peak_bytes_per_s
    FROM d WHERE db IS NOT NULL HAVING count(*) > 0
    """,
    (
        Column("lo_bytes", "count", "bytes sent on lo (equal to received)", "bytes"),
        Column("mean_bytes_per_s", "1/s", "mean bytes per second", "mean B/s"),
        Column("peak_bytes_per_s", "1/s", "busiest interval, bytes per second", "peak B/s"),
    ),
    needs=("resource_samples",), absent={"resource_network": []},
)

RESOURCE_HOST = Section(
    "resource_host", "The machine's CPU: sampled services and everything else",
    "Busy CPU of the whole machine (psutil.cpu_times: all but idle, iowait and steal) beside "
    "the sum over the sampled services at the same instants; the difference is CPU that no "
    "sampled service took (other jobs, the load generator's machine neighbours, the kernel), "
    "which slows the services without showing in their rows. Fractions of one CPU.",
    """
    WITH h AS (SELECT ts_ns, cpu_pct / 100.0 AS busy, n_procs AS cpus FROM resource_samples
               WHERE pid IS NULL AND service = 'cpu:host' AND cpu_pct IS NOT NULL),
         s AS (SELECT ts_ns, sum(cpu_pct) / 100.0 AS services FROM resource_samples
               WHERE pid IS NOT NULL AND cpu_pct IS NOT NULL GROUP BY ts_ns),
         j AS (SELECT h.busy, h.cpus, coalesce(s.services, 0) AS services
               FROM h LEFT JOIN s USING (ts_ns))
    SELECT max(cpus) AS cpus, count(*) AS samples, avg(busy) AS mean_busy,
           max(busy) AS peak_busy, avg(services) AS mean_services,
           avg(greatest(busy - services, 0)) AS mean_other,
           avg(busy) / max(cpus) AS mean_utilisation
    FROM j HAVING count(*) > 0
    """,
    (
        Column("cpus", "count", "logical CPUs of the machine", "CPUs"),
        Column("samples", "count", "intervals sampled"),
        Column("mean_busy", "fraction", "mean busy CPU of the machine (of one CPU)", "mean busy"),
        Column("peak_busy", "fraction", "busiest interval (of one CPU)", "peak busy"),
        Column("mean_services", "fraction", "mean CPU of the sampled services together",
               "services"),
        Column("mean_other", "fraction", "mean busy CPU no sampled service took", "other"),
        Column("mean_utilisation", "fraction", "mean busy CPU over the CPUs (0..1)", "util"),
    ),
    needs=("resource_samples",), absent={"resource_host": []},
)

RESOURCE_TIMELINE = Section(
    "resource_timeline", "Resources per service over time",
    "Per minute and service: mean and peak CPU, peak RSS (for the timeline beside throughput "
    "and latency).",
    """
    SELECT (ts_ns - ts_ns % 60000000000) AS minute_ns, service,
           avg(cpu_pct) / 100.0 AS mean_cpu, max(cpu_pct) / 100.0 AS peak_cpu,
           max(rss_bytes) / 1048576.0 AS peak_rss_mib
    FROM resource_samples WHERE pid IS NOT NULL
    GROUP BY ts_ns - ts_ns % 60000000000, service ORDER BY minute_ns, service
    """,
    (
        Column("minute_ns", "ns", "the minute", "minute", iso_key="minute"),
        Column("service", "name", "service"),
        Column("mean_cpu", "fraction", "mean CPU of the service's instances", "mean CPU"),
        Column("peak_cpu", "fraction", "highest CPU of one instance", "peak CPU"),
        Column("peak_rss_mib", "count", "highest RSS of one instance, MiB", "peak RSS MiB"),
    ),
    needs=("resource_samples",), absent={"resource_timeline": []}, terminal=False,
)

RESOURCE_SIZING = Section(
    "resource_sizing", "Sizing: peak per service at this run's load",
    "Peak CPU and RSS per service instance at the run's load level (most client requests in "
    "flight at once); compare runs at several levels for the seeds' sizing table.",
    _PER_SERVICE + """,
         q AS (SELECT submit_ns AS t, 1 AS d FROM requests WHERE submit_ns IS NOT NULL
               UNION ALL
               SELECT coalesce(active_ns, submit_ns), -1 FROM requests
               WHERE submit_ns IS NOT NULL),
         c AS (SELECT sum(d) OVER (ORDER BY t, d ROWS UNBOUNDED PRECEDING) AS n FROM q),
         lvl AS (SELECT coalesce(max(n), 0) AS in_flight FROM c)
    SELECT lvl.in_flight, s.service, s.instances, s.peak_cpu, s.peak_rss_mib, s.peak_threads,
           s.peak_connections
    FROM s CROSS JOIN lvl ORDER BY s.peak_cpu DESC NULLS LAST, s.service
    """,
    (
        Column("in_flight", "count", "load level: most client requests in flight at once",
               "load"),
        *(c for c in _COLUMNS if c.name in ("service", "instances", "peak_cpu", "peak_rss_mib",
                                             "peak_threads", "peak_connections")),
    ),
    needs=("resource_samples", "requests"), absent={"resource_sizing": []}, terminal=False,
)

#: The resource sections, in report order.
RESOURCE_SECTIONS = (RESOURCES, RESOURCE_HOST, RESOURCE_NETWORK, RESOURCE_SIZING,
                     RESOURCE_TIMELINE)
