"""Terminal rendering of a report dict (``report.json``, see :mod:`stacklens.analyze.build`) with
rich, walking the sections the report declares (:mod:`stacklens.report.walk`).

Pure: :func:`render_terminal` returns a list of rich renderables; the CLI prints them to stdout.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from stacklens.report.walk import NUMERIC_UNITS, Decl, cells, sections_by_key
from stacklens.vocab import OUTCOMES

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
#: Console width the tables are laid out for (CI logs, pipes), and the narrowest a free-text
#: column may get there (characters).
WIDTH, TEXT_MIN = 80, 24


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


def _head(report: dict[str, Any], top: int) -> list[RenderableType]:
    s = report.get("summary", {})
    by = s.get("by_outcome", {})
    w = report.get("window", {})
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
    return [head]


def _operations(report: dict[str, Any], top: int) -> list[RenderableType]:
    all_ops = report.get("operations", [])
    ops = all_ops[:top]
    return [_table(
        "Operations (end-to-end seconds)",
        ["operation", "count", "ok", "retry", "fail", "4xx", "unkn", "p50", "p95", "p99"],
        [[shorten(o["operation"], 22), o["count"], *(o[k] for k in OUTCOMES),
          _s(o["p50_s"]), _s(o["p95_s"]), _s(o["p99_s"])]
         for o in ops],
        set(range(1, 10)), more=len(all_ops) - len(ops), what="operations",
    )]


def _components(report: dict[str, Any], top: int) -> list[RenderableType]:
    all_comps = report.get("components", [])
    comps = [c for c in all_comps if c["operation"] == "server.create"]
    ops = report.get("operations", [])
    if not comps and ops:
        comps = [c for c in all_comps if c["operation"] == ops[0]["operation"]]
    if not comps:
        return []
    return [_table(
        f"Where the time goes: {comps[0]['operation']} (successful requests, seconds)",
        ["component", "p50", "p95", "mean", "share"],
        [[shorten(c["component"]), _s(c["p50_s"]), _s(c["p95_s"]), _s(c["mean_s"]),
          _pct(c["share"])] for c in comps],
        {1, 2, 3, 4},
    )]


def _phases(report: dict[str, Any], top: int) -> list[RenderableType]:
    if not report.get("phases"):
        return []
    return [_table(
        "nova-compute phases (seconds)", ["phase", "count", "p50", "p95", "max"],
        [[p["phase"], p["count"], _s(p["p50_s"]), _s(p["p95_s"]), _s(p["max_s"])]
         for p in report["phases"]],
        {1, 2, 3, 4},
    )]


def _errors(report: dict[str, Any], top: int) -> list[RenderableType]:
    all_errs = report.get("errors", [])
    errs = all_errs[:top]
    return [_table(
        "Failed requests by root cause (first error in causal order)",
        ["component", "failed", "example request id", "error template"],
        [[shorten(e["component"], 20), e["failed_requests"], e["example_request_id"],
          e["template"][:160]] for e in errs] or [["-", 0, "-", "no failed requests"]],
        {1}, wrap={3}, more=len(all_errs) - len(errs), what="root causes",
    )]


def _client(report: dict[str, Any], top: int) -> list[RenderableType]:
    cs = (report.get("client_server") or {}).get("summary")
    if not cs:
        return []
    return [_table(
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
    )]


def _clocks(report: dict[str, Any], top: int) -> list[RenderableType]:
    clocks = report.get("clocks", [])
    if not clocks:
        return []
    out: list[RenderableType] = [_table(
        "Clock skew (seconds added to each host's clock; violations before -> after)",
        ["day", "host", "status", "offset", "+-", "applied", "violations"],
        [[c["day"], shorten(c["host"], 20), c["status"], _s(c["offset_s"]),
          _s(c["uncertainty_s"]),
          "yes" if c["applied"] else "no", f"{c['violations_before']} -> {c['violations_after']}"]
         for c in clocks],
        {3, 4},
    )]
    notes = [f"- {c['day']} {c['host']}: {c['note']}" for c in clocks
             if c.get("note") and not c.get("applied")]
    if notes:
        out.append(Text("\n".join(notes)))
    return out


def _ingest(report: dict[str, Any], top: int) -> list[RenderableType]:
    ing = report.get("ingest", {})
    totals = ing.get("totals", [])
    return [_table(
        f"Ingest: {ing.get('files', 0)} files read, {ing.get('files_skipped', 0)} skipped, "
        f"{ing.get('lines', 0)} lines, {ing.get('records', 0)} records, "
        f"{ing.get('quarantined', 0)} lines quarantined",
        ["kind", "severity", "count", "files"],
        [[shorten(t["kind"]), t["severity"], t["count"], t["files"]] for t in totals],
        {2, 3},
    )]


def _cell(v: Any, unit: str) -> str:
    if v is None:
        return "-"
    if unit == "s":
        return _s(v)
    if unit == "fraction":
        return _pct(v)
    if unit == "1/s":
        return f"{v:.3f}"
    if unit == "bool":
        return "yes" if v else "no"
    if unit == "count" and isinstance(v, float):  # means and sums of counts: 1 decimal at most
        return f"{v:.0f}" if v.is_integer() else f"{v:.1f}"
    return shorten(str(v), 160) if unit == "text" else shorten(str(v))


def _generic(report: dict[str, Any], decls: list[Decl], top: int) -> list[RenderableType]:
    """Declared sections without code of their own: a table from the declared columns."""
    out: list[RenderableType] = []
    for d in decls:
        if not d.get("terminal", True):
            continue
        data = report.get(d["key"])
        if d["key"] != d["name"] and isinstance(data, dict):
            data = data.get(d["name"], data)
        cols, rows = cells(d, data)
        if not rows:
            continue
        if len(rows) == 1 and len(cols) > 5:  # one wide row: a measure / value column pair
            out.append(_table(
                str(d.get("title") or d["name"]), ["measure", "value"],
                [[str(c.get("label") or c["name"]), _cell(v, str(c.get("unit")))]
                 for v, c in zip(rows[0], cols, strict=True)], {1}, wrap={1}))
            continue
        shown = rows[:top]
        names = [str(c.get("label") or c["name"]) for c in cols]
        units = [str(c.get("unit")) for c in cols]
        body = [[_cell(v, u) for v, u in zip(r, units, strict=True)] for r in shown]
        text = [i for i, u in enumerate(units) if u == "text"]
        notes: list[str] = []
        others = [i for i in range(len(names)) if i not in text]
        widths = _widths(names, body)
        ends = itertools.accumulate((widths[i] for i in others), initial=4)  # after a row number
        over = [i for i, end in zip(others, list(ends)[1:], strict=True) if end > WIDTH]
        if over or (text and sum(widths[i] for i in others) > WIDTH - TEXT_MIN):
            # more than 80 characters: the columns that do not fit and the free texts go under
            # the table, numbered (rich cut the columns beyond the width off, and a text column
            # a few letters wide folded one word fragment per line)
            moved = sorted(set(text) | set(over))
            notes = [f"#{n}  " + "  ".join(f"{names[i]}: {r[i]}" for i in moved)
                     for n, r in enumerate(body, 1)]
            keep = [i for i in range(len(names)) if i not in moved]
            names = ["#", *(names[i] for i in keep)]
            units = ["count", *(units[i] for i in keep)]
            body = [[str(n), *(r[i] for i in keep)] for n, r in enumerate(body, 1)]
        out.append(_table(
            str(d.get("title") or d["name"]), names, body,
            {i for i, u in enumerate(units) if u in NUMERIC_UNITS},
            wrap={i for i, u in enumerate(units) if u == "text"},
            more=len(rows) - len(shown),
        ))
        out.extend(Text(n) for n in notes)
    return out


def _widths(names: list[str], body: list[list[str]]) -> list[int]:
    """Characters each column takes at its natural width, one space after it (names cut at
    ``NAME_MAX + 6``, as :func:`_table` lays them out)."""
    return [min(max(len(c) for c in col), NAME_MAX + 6) + 1
            for col in zip(names, *body, strict=True)]


#: The report keys the terminal draws with code of its own; other declared sections marked
#: ``terminal`` are drawn as tables from their columns (:func:`_generic`).
_DRAW: dict[str, Callable[[dict[str, Any], int], list[RenderableType]]] = {
    "summary": _head, "components": _components, "operations": _operations, "errors": _errors,
    "client_server": _client, "phases": _phases, "clocks": _clocks, "ingest": _ingest,
}
#: The order for reports that declare no sections (format 1).
_DEFAULT = ("summary", "operations", "components", "phases", "errors", "client_server", "clocks",
            "ingest")


def render_terminal(report: dict[str, Any], *, top: int = 12) -> list[RenderableType]:
    """Findings, then the report's sections in declared order (summary, latency breakdown,
    operations, root causes, client view, phases, clock skew, ingest health, and any section
    declared for the terminal) as rich renderables. Pure: the caller prints them."""
    out: list[RenderableType] = []
    if report.get("simulated"):
        out.append(Text("SIMULATED: a forecast from a calibrated model, not a measured run",
                        style="bold reverse"))
    if (found := _findings(report)) is not None:
        out.append(found)
    for key, decls in sections_by_key(report, _DEFAULT):
        if decls and not any(d.get("terminal", True) for d in decls):
            continue
        draw = _DRAW.get(key)
        out.extend(draw(report, top) if draw else _generic(report, decls, top))
    return out
