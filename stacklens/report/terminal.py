"""Terminal rendering of a report dict (see :mod:`stacklens.analyze.run`) with rich.

Pure: :func:`render_terminal` returns a list of rich renderables; the CLI prints them to stdout.
"""

from __future__ import annotations

from typing import Any

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

__all__ = ["render_terminal"]


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _s(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def _table(title: str, cols: list[str], rows: list[list[Any]], right: set[int]) -> Table:
    t = Table(title=title, title_justify="left", header_style="bold")
    for i, c in enumerate(cols):
        t.add_column(c, justify="right" if i in right else "left", overflow="fold")
    for r in rows:
        t.add_row(*[Text(str(v)) for v in r])  # Text(): log text is never markup
    return t


def _findings(report: dict[str, Any]) -> Text | None:
    """The report's findings (:mod:`stacklens.analyze.findings`) as one block of words."""
    fs = report.get("findings")
    if fs is None:
        return None  # a report of an older stacklens
    t = Text()
    t.append("Findings\n", style="bold")
    if not fs:
        t.append("none: no rule had enough evidence\n")
    for f in fs:
        t.append(f"- [{f.get('severity')}] ", style="bold red" if f.get("severity") == "critical"
                 else "bold")
        t.append(f"{f.get('text')}\n")  # Text.append: log text is never markup
    t.rstrip()
    return t


def render_terminal(report: dict[str, Any], *, top: int = 12) -> list[RenderableType]:
    """Summary, operations, latency breakdown, root causes and ingest health as rich tables."""
    s = report.get("summary", {})
    by = s.get("by_outcome", {})
    w = report.get("window", {})
    ing = report.get("ingest", {})
    out: list[RenderableType] = []
    if (found := _findings(report)) is not None:
        out.append(found)
    head = Text()
    head.append("stacklens ", style="bold")
    head.append(f"{w.get('start')} .. {w.get('end')} ({w.get('dur_s', 0):.0f} s)\n")
    head.append(
        f"requests {s.get('traces', 0)}  success {by.get('success', 0)}  "
        f"retried {by.get('retried', 0)}  failed {by.get('failed', 0)}  "
        f"rejected (4xx) {by.get('rejected', 0)}  unknown {by.get('unknown', 0)}  "
        f"| background traces {s.get('background_traces', 0)}\n"
    )
    tp = s.get("throughput_rps")
    head.append(
        f"success rate {_pct(s.get('success_rate'))} of {s.get('decided', '-')} decided (requests"
        f" - rejected - unknown)  failure rate {_pct(s.get('failure_rate'))}"
        f"  retry rate {_pct(s.get('retry_rate'))}  throughput "
        f"{'-' if tp is None else f'{tp:.3f}'} req/s"
    )
    out.append(head)
    ops = report.get("operations", [])[:top]
    out.append(_table(
        "Operations (end-to-end seconds)",
        ["operation", "count", "ok", "retried", "failed", "4xx", "unknown", "p50", "p95", "p99"],
        [[o["operation"], o["count"], o["success"], o["retried"], o["failed"], o["rejected"],
          o["unknown"], _s(o["p50_s"]), _s(o["p95_s"]), _s(o["p99_s"])] for o in ops],
        set(range(1, 10)),
    ))
    comps = [c for c in report.get("components", []) if c["operation"] == "server.create"]
    if not comps and ops:
        comps = [c for c in report.get("components", []) if c["operation"] == ops[0]["operation"]]
    if comps:
        out.append(_table(
            f"Where the time goes: {comps[0]['operation']} (successful requests, seconds)",
            ["component", "p50", "p95", "mean", "share"],
            [[c["component"], _s(c["p50_s"]), _s(c["p95_s"]), _s(c["mean_s"]), _pct(c["share"])]
             for c in comps],
            {1, 2, 3, 4},
        ))
    if report.get("phases"):
        out.append(_table(
            "nova-compute phases (seconds)", ["phase", "count", "p50", "p95", "max"],
            [[p["phase"], p["count"], _s(p["p50_s"]), _s(p["p95_s"]), _s(p["max_s"])]
             for p in report["phases"]],
            {1, 2, 3, 4},
        ))
    errs = report.get("errors", [])[:top]
    out.append(_table(
        "Failed requests by root cause (first error in causal order)",
        ["component", "error template", "failed", "example request id"],
        [[e["component"], e["template"][:160], e["failed_requests"], e["example_request_id"]]
         for e in errs] or [["-", "no failed requests", 0, "-"]],
        {2},
    ))
    cs = (report.get("client_server") or {}).get("summary")
    if cs:
        out.append(_table(
            "Client view vs server view (stacklens run records joined to traces by request id)",
            ["requests", "found in traces", "both ok", "disagree", "client create p50",
             "server p50", "before server p50", "polling delay p50"],
            [[cs["requests"], cs["found"], cs["both_ok"], cs["disagree"],
              _s(cs["client_create_p50_s"]), _s(cs["server_p50_s"]),
              _s(cs["before_server_p50_s"]), _s(cs["polling_delay_p50_s"])]],
            set(range(8)),
        ))
    clocks = report.get("clocks", [])
    if clocks:
        out.append(_table(
            "Clock skew (seconds added to each host's clock; violations before -> after)",
            ["day", "host", "status", "offset", "+-", "applied", "violations"],
            [[c["day"], c["host"], c["status"], _s(c["offset_s"]), _s(c["uncertainty_s"]),
              "yes" if c["applied"] else "no", f"{c['violations_before']} -> {c['violations_after']}"]
             for c in clocks],
            {3, 4},
        ))
    totals = ing.get("totals", [])
    tbl = _table(
        f"Ingest: {ing.get('files', 0)} files read, {ing.get('files_skipped', 0)} skipped, "
        f"{ing.get('lines', 0)} lines, {ing.get('records', 0)} records, "
        f"{ing.get('quarantined', 0)} lines quarantined",
        ["kind", "severity", "count", "files"],
        [[t["kind"], t["severity"], t["count"], t["files"]] for t in totals],
        {2, 3},
    )
    out.append(tbl)
    return out
