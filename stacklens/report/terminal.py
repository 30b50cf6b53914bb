"""Terminal rendering of a report dict (see :mod:`stacklens.analyze.run`) with rich.

Pure: :func:`render_terminal` returns a list of rich renderables; the CLI prints them to stdout.
"""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

__all__ = ["render_terminal"]


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _s(x: float | None) -> str:
    """Seconds with millisecond resolution below 100 s, tenths above (keeps columns narrow)."""
    if x is None:
        return "-"
    return f"{x:.3f}" if abs(x) < 100 else f"{x:.1f}"


#: Names (operations, components, templates) longer than this are cut in the middle.
NAME_MAX = 34


def shorten(text: str, width: int = NAME_MAX) -> str:
    """``text`` cut in the middle to at most ``width`` characters (``"GET /v2.1/os-…/detail"``):
    both ends of a name say the most (the verb and the resource)."""
    if len(text) <= width:
        return text
    head = (width - 1) // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head):]


def _table(
    title: str, cols: list[str], rows: list[list[Any]], right: set[int], *,
    wrap: set[int] = frozenset(), more: int = 0, what: str = "rows",  # type: ignore[assignment]
) -> Group:
    """A titled table that stays readable at 80 columns (CI logs, pipes): numbers, ids and names are
    never wrapped across lines (``no_wrap``; a name that does not fit ends in an ellipsis),
    only the free-text columns in ``wrap`` fold. ``more`` rows cut off are said in the caption."""
    t = Table(header_style="bold", box=box.SIMPLE_HEAD,
              caption=f"{more} more {what} in report.json" if more > 0 else None,
              caption_justify="left", padding=0, pad_edge=False, show_edge=False)
    for i, c in enumerate(cols):
        if i in wrap:
            t.add_column(c, justify="left", overflow="fold", ratio=1)
        else:
            cells = [len(str(r[i])) for r in rows] + [len(c)]
            t.add_column(c, justify="right" if i in right else "left", no_wrap=True,
                         overflow="ellipsis", min_width=min(max(cells), NAME_MAX + 6))
    for r in rows:
        t.add_row(*[Text(str(v)) for v in r])  # Text(): log text is never markup
    # the title wraps at the console's width, not the (narrower) table's
    return Group(Text(""), Text(title, style="bold"), t)


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
    all_ops = report.get("operations", [])
    ops = all_ops[:top]
    out.append(_table(
        "Operations (end-to-end seconds)",
        ["operation", "count", "ok", "retry", "fail", "4xx", "unkn", "p50", "p95", "p99"],
        [[shorten(o["operation"], 22), o["count"], o["success"], o["retried"], o["failed"],
          o["rejected"], o["unknown"], _s(o["p50_s"]), _s(o["p95_s"]), _s(o["p99_s"])]
         for o in ops],
        set(range(1, 10)), more=len(all_ops) - len(ops), what="operations",
    ))
    comps = [c for c in report.get("components", []) if c["operation"] == "server.create"]
    if not comps and ops:
        comps = [c for c in report.get("components", []) if c["operation"] == ops[0]["operation"]]
    if comps:
        out.append(_table(
            f"Where the time goes: {comps[0]['operation']} (successful requests, seconds)",
            ["component", "p50", "p95", "mean", "share"],
            [[shorten(c["component"]), _s(c["p50_s"]), _s(c["p95_s"]), _s(c["mean_s"]),
              _pct(c["share"])] for c in comps],
            {1, 2, 3, 4},
        ))
    if report.get("phases"):
        out.append(_table(
            "nova-compute phases (seconds)", ["phase", "count", "p50", "p95", "max"],
            [[p["phase"], p["count"], _s(p["p50_s"]), _s(p["p95_s"]), _s(p["max_s"])]
             for p in report["phases"]],
            {1, 2, 3, 4},
        ))
    all_errs = report.get("errors", [])
    errs = all_errs[:top]
    out.append(_table(
        "Failed requests by root cause (first error in causal order)",
        ["component", "failed", "example request id", "error template"],
        [[shorten(e["component"], 20), e["failed_requests"], e["example_request_id"],
          e["template"][:160]] for e in errs] or [["-", 0, "-", "no failed requests"]],
        {1}, wrap={3}, more=len(all_errs) - len(errs), what="root causes",
    ))
    cs = (report.get("client_server") or {}).get("summary")
    if cs:
        out.append(_table(
            "Client view vs server view (run records joined to traces by request id)",
            ["measure", "value"],
            [["requests", cs["requests"]], ["found in traces", cs["found"]],
             ["both ok", cs["both_ok"]], ["disagree", cs["disagree"]],
             ["client create p50 (s)", _s(cs["client_create_p50_s"])],
             ["server create p50 (s)", _s(cs["server_p50_s"])],
             ["before server p50 (s)", _s(cs["before_server_p50_s"])],
             ["polling delay p50 (s)", _s(cs["polling_delay_p50_s"])]]
            + [[label, _s(cs[k])] for k, label in (
                ("client_delete_p50_s", "client delete p50 (s)"),
                ("server_delete_p50_s", "server delete p50 (s)")) if k in cs],
            {1},
        ))
    clocks = report.get("clocks", [])
    if clocks:
        out.append(_table(
            "Clock skew (seconds added to each host's clock; violations before -> after)",
            ["day", "host", "status", "offset", "+-", "applied", "violations"],
            [[c["day"], shorten(c["host"], 20), c["status"], _s(c["offset_s"]),
              _s(c["uncertainty_s"]),
              "yes" if c["applied"] else "no", f"{c['violations_before']} -> {c['violations_after']}"]
             for c in clocks],
            {3, 4},
        ))
        notes = [f"- {c['day']} {c['host']}: {c['note']}" for c in clocks
                 if c.get("note") and not c.get("applied")]
        if notes:
            out.append(Text("\n".join(notes)))
    totals = ing.get("totals", [])
    tbl = _table(
        f"Ingest: {ing.get('files', 0)} files read, {ing.get('files_skipped', 0)} skipped, "
        f"{ing.get('lines', 0)} lines, {ing.get('records', 0)} records, "
        f"{ing.get('quarantined', 0)} lines quarantined",
        ["kind", "severity", "count", "files"],
        [[shorten(t["kind"]), t["severity"], t["count"], t["files"]] for t in totals],
        {2, 3},
    )
    out.append(tbl)
    return out
