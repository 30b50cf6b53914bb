"""A realistic stacklens report dict (the report.json shape) for renderer tests.

~30 traces from a Tempest run against a small Mitaka-era cloud, some failed, with hostile
log text (``<script>``, ``</script>``, quotes, U+2028, control characters) in error messages,
templates, span operations and quarantined raw lines.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

HOSTILE = "<script>alert(1)</script>"
BREAKOUT = "</script><img src=x onerror=alert(2)>"

T0 = datetime(2016, 6, 28, 13, 56, 0, tzinfo=UTC)

# operation -> (http status, [(service, host, span operation, share of trace)])
FLOWS = {
    "server.create": (202, [
        ("tempest", "tempest1", "POST /v2.1/servers", None),
        ("keystone", "ctl1", "POST /v3/auth/tokens", 0.04),
        ("nova-api", "ctl1", "POST /v2.1/servers", 0.12),
        ("nova-conductor", "ctl1", "build_instances", 0.05),
        ("nova-scheduler", "ctl1", "select_destinations", 0.08),
        ("nova-compute", "cmp1", "build_and_run_instance", 0.45),
        ("glance-api", "ctl1", "GET /v2/images/cirros", 0.06),
        ("neutron-server", "ctl1", "POST /v2.0/ports.json", 0.09),
    ]),
    "server.delete": (204, [
        ("tempest", "tempest1", "DELETE /v2.1/servers/{id}", None),
        ("nova-api", "ctl1", "DELETE /v2.1/servers/{id}", 0.15),
        ("nova-compute", "cmp2", "terminate_instance", 0.55),
        ("neutron-server", "ctl1", "DELETE /v2.0/ports/{id}.json", 0.15),
    ]),
    "volume.create": (202, [
        ("tempest", "tempest1", "POST /v2/{project}/volumes", None),
        ("keystone", "ctl1", "GET /v3/auth/tokens", 0.05),
        ("cinder-api", "ctl1", "POST /v2/{project}/volumes", 0.6),
    ]),
    "image.upload": (201, [
        ("tempest", "tempest1", "PUT /v2/images/{id}/file", None),
        ("glance-api", "ctl1", "PUT /v2/images/{id}/file", 0.8),
    ]),
    "network.create": (201, [
        ("tempest", "tempest1", "POST /v2.0/networks", None),
        ("neutron-server", "ctl1", "POST /v2.0/networks.json", 0.7),
        ("nova-network", "ctl1", "allocate_for_instance", 0.1),
    ]),
}
BASE_DUR = {"server.create": 6.0, "server.delete": 2.5, "volume.create": 1.8,
            "image.upload": 3.5, "network.create": 0.9}
ERRORS = [
    ("nova-compute", f"Instance failed to spawn: libvirtError: {HOSTILE}"),
    ("nova-scheduler", "NoValidHost: No valid host was found. There are not enough hosts available."),
    ("neutron-server", f"Port binding failed for port {BREAKOUT} on host cmp1"),
    ("cinder-api", "Invalid input received: 'size' \"must\" be > 0 & <= 1000\u2028next line"),
]

# trace index -> error (the failing component is part of that trace's flow)
FAILURES = {5: ERRORS[0], 10: ERRORS[1], 12: ERRORS[3], 19: ERRORS[2], 25: ERRORS[0]}


def _iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _uuid(rng: random.Random) -> str:
    h = f"{rng.getrandbits(128):032x}"
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"


def sample_report(n_traces: int = 30, seed: int = 7) -> dict:
    """Build the report dict; deterministic for a given ``seed``."""
    rng = random.Random(seed)
    ops = list(FLOWS)
    traces, waterfalls = [], {}
    for i in range(n_traces):
        op = ops[i % len(ops)]
        status, flow = FLOWS[op]
        dur = round(BASE_DUR[op] * rng.uniform(0.6, 2.2), 3)
        err = FAILURES.get(i)
        outcome = "failed" if err else "retried" if i == 11 else "rejected" if i in (7, 20) else "success"
        tid = f"t-{i + 1:04d}"
        start = T0 + timedelta(seconds=i * 41 + rng.uniform(0, 20))
        spans, cursor = [], 0.0
        for j, (svc, host, sop, share) in enumerate(flow):
            if share is None:
                s0, d = 0.0, dur
            else:
                d = round(dur * share * rng.uniform(0.8, 1.1), 3)
                s0 = round(min(cursor + rng.uniform(0.01, 0.08), dur - d), 3)
                cursor = s0 + d * 0.7
            failed_here = err is not None and svc == err[0]
            spans.append({"span_id": f"{tid}-s{j}", "parent_span_id": None if j == 0 else f"{tid}-s0",
                          "service": svc, "host": host,
                          "operation": f"{sop} {HOSTILE}" if failed_here else sop,
                          "start_s": s0, "dur_s": d,
                          "status": "error" if failed_here or (err and j == 0) else ("unknown" if svc == "nova-network" else "ok"),
                          "end_exact": not (failed_here or svc == "nova-network")})
        waterfalls[tid] = spans
        traces.append({"trace_id": tid, "request_id": f"req-{_uuid(rng)}", "operation": op,
                       "outcome": outcome, "start": _iso(start), "dur_s": dur,
                       "error": f"{err[0]}: {err[1]}" if err else None,
                       "instance_uuid": _uuid(rng) if op.startswith("server.") else None,
                       "http_status": 500 if outcome == "failed" else 400 if outcome == "rejected" else status})

    operations, components = [], []
    for op in ops:
        rows = [t for t in traces if t["operation"] == op]
        durs = sorted(t["dur_s"] for t in rows)
        row = {"operation": op, "count": len(rows),
               **{o: sum(t["outcome"] == o for t in rows) for o in ("success", "retried", "failed", "rejected", "unknown")},
               "p50_s": durs[len(durs) // 2], "p95_s": durs[int(len(durs) * 0.95)], "p99_s": durs[-1]}
        operations.append(row)
        _, flow = FLOWS[op]
        covered = 0.0
        for svc, _host, _sop, share in flow:
            name = "tempest" if share is None else svc
            share = 0.05 if share is None else share
            covered += share
            components.append({"operation": op, "component": name, "p50_s": round(row["p50_s"] * share, 3),
                               "p95_s": round(row["p95_s"] * share, 3), "p99_s": round(row["p99_s"] * share, 3),
                               "mean_s": round(row["p50_s"] * share * 1.1, 3), "share": share})
        rest = max(0.0, 1 - covered)
        components.append({"operation": op, "component": "between components", "p50_s": round(row["p50_s"] * rest, 3),
                           "p95_s": round(row["p95_s"] * rest, 3), "p99_s": round(row["p99_s"] * rest, 3),
                           "mean_s": round(row["p50_s"] * rest, 3), "share": round(rest, 3)})

    timeline: dict[str, dict] = {}
    for t in traces:
        minute = t["start"][:17] + "00Z"
        slot = timeline.setdefault(minute, {"minute": minute, "success": 0, "retried": 0, "failed": 0,
                                            "rejected": 0, "unknown": 0})
        slot[t["outcome"]] += 1

    by_outcome = {o: sum(t["outcome"] == o for t in traces) for o in ("success", "retried", "failed", "rejected", "unknown")}
    window_s = 1260.0
    failed = [t for t in traces if t["outcome"] == "failed"]
    errors = [{"component": c, "template": tmpl.replace("libvirtError: ", "libvirtError: <*> "), "failed_requests": 1 + k,
               "example_request_id": next((t["request_id"] for t in failed if t["error"] and t["error"].startswith(c)), None)}
              for k, (c, tmpl) in enumerate(ERRORS)]
    hosts = [{"host": h, "service": s, "events": rng.randint(2000, 90000), "errors": rng.randint(0, 40),
              "spans": rng.randint(10, 400)}
             for h, s in [("ctl1", "nova-api"), ("ctl1", "nova-conductor"), ("ctl1", "nova-scheduler"),
                          ("ctl1", "keystone"), ("ctl1", "glance-api"), ("ctl1", "cinder-api"),
                          ("ctl1", "neutron-server"), ("cmp1", "nova-compute"), ("cmp2", "nova-compute"),
                          ("tempest1", "tempest")]]
    return {
        "format_version": 1, "stacklens_version": "0.1.0",
        "inputs": ["logs/ctl1/", "logs/cmp1/", "logs/cmp2/", f"logs/odd & weird/{HOSTILE}.log"],
        "timezone_assumption": "UTC (no zone in oslo.log timestamps)",
        "window": {"start": "2016-06-28T13:50:00Z", "end": "2016-06-28T14:11:00Z", "dur_s": window_s},
        "summary": {"traces": len(traces), "by_outcome": by_outcome,
                    "success_rate": by_outcome["success"] / len(traces),
                    "failure_rate": by_outcome["failed"] / len(traces),
                    "retry_rate": by_outcome["retried"] / len(traces),
                    "throughput_rps": round(len(traces) / window_s, 4)},
        "operations": operations, "components": components,
        "timeline": [timeline[k] for k in sorted(timeline)], "hosts": hosts, "errors": errors,
        "slowest": sorted(traces, key=lambda t: -t["dur_s"])[:10], "failed": failed,
        "waterfalls": waterfalls,
        "ingest": {
            "files": 40, "files_skipped": 5, "lines": 500000, "records": 450000, "quarantined": 12,
            "stats": [
                {"file": "logs/cmp1/nova-compute.log", "kind": "non_utf8", "severity": "error", "count": 3,
                 "detail": "3 lines decoded with replacement characters"},
                {"file": "logs/ctl1/screen-n-api.log.gz", "kind": "truncated_gzip", "severity": "data_loss", "count": 1,
                 "detail": f"stream ended early after 18233 lines {BREAKOUT}"},
                {"file": "logs/ctl1/keystone.log", "kind": "timezone_assumption", "severity": "info", "count": 1,
                 "detail": "no zone in timestamps; assumed UTC"},
            ],
            "quarantine_sample": [
                {"file": "logs/cmp1/nova-compute.log", "line_no": 17, "reason": "binary",
                 "raw": "\x00\x01\x02 ELF garbage \x7f"},
                {"file": "logs/ctl1/n-api.log", "line_no": 90211, "reason": "no timestamp",
                 "raw": f"    {HOSTILE} continuation without header {BREAKOUT}"},
            ],
        },
    }
