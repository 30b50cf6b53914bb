"""The sections of the HTML report page, one function per report key, and a table drawn from the
declared columns for any section without a function of its own (:mod:`stacklens.report.walk`).

Each drawer takes the report dict and the page's data payload (the charts' JSON) and returns
ready, escaped HTML; a missing or malformed part renders as "none".
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from stacklens.report.html_cells import (
    _badge,
    _dict,
    _e,
    _int,
    _none,
    _num,
    _pct,
    _rows,
    _secs,
    _section,
    _span,
    _table,
    _text,
)
from stacklens.report.html_page import OUTCOME_COLORS
from stacklens.report.walk import NUMERIC_UNITS, Decl, cells
from stacklens.vocab import OUTCOMES

__all__ = [
    "DEFAULT_KEYS",
    "DRAW",
    "findings",
    "generic",
    "header",
]

def header(r: dict) -> str:
    """The page header: inputs (folded list), time window and its duration, stacklens and
    report format versions, as escaped HTML."""
    w = _dict(r.get("window"))
    inputs = [str(p) for p in r.get("inputs") or [] if p is not None] if isinstance(r.get("inputs"), list) else []
    if inputs:
        items = "".join(f"<li class='mono'>{_e(p)}</li>" for p in inputs)
        shown = f"<details><summary>{len(inputs)} path{'s' * (len(inputs) != 1)}</summary><ul>{items}</ul></details>"
    else:
        shown = '<span class="none">none</span>'
    window = f"{_text(w.get('start'))} → {_text(w.get('end'))} ({_span(w.get('dur_s'))})"
    rows = [("Window", window), ("Timezone", _text(r.get("timezone_assumption"))), ("Inputs", shown),
            *([("Simulated", "<strong>yes: a forecast from a calibrated model, not measured"
                "</strong>")] if r.get("simulated") else []),
            ("stacklens", f"{_text(r.get('stacklens_version'))} · report format {_text(r.get('format_version'))}")]
    return _section("report", "Run", '<dl class="meta">' + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in rows) + "</dl>")


def _cards(r: dict) -> str:
    s = _dict(r.get("summary"))
    by, total = _dict(s.get("by_outcome")), _num(s.get("traces"))
    given = {"success": s.get("success_rate"), "failed": s.get("failure_rate"), "retried": s.get("retry_rate")}
    bg = _num(s.get("background_traces"))
    cards = [("requests", _int(total), f"API requests in window; {_int(bg)} background traces", "#4a5568")]
    for o in OUTCOMES:
        n = _num(by.get(o))
        # success/failed/retried: the analyze stage's rates (over decided requests)
        if o in given:
            rate, sub = given[o], f" of {_int(_num(s.get('decided')))} decided (requests - rejected - unknown)"
        else:
            rate, sub = (n / total if n is not None and total else None), " of requests"
        cards.append((o, _int(n), _pct(rate) + sub, OUTCOME_COLORS[o]))
    cards.append(("throughput", _secs(s.get("throughput_rps")), "requests / s", "#2b6cb0"))
    return '<div class="cards" id="summary">' + "".join(
        f'<div class="card" style="--c:{c}"><div class="l">{_e(label)}</div><div class="v">{v}</div>'
        f'<div class="r">{_e(sub)}</div></div>' for label, v, sub, c in cards) + "</div>"


def _trace_table(tid: str, rows: list[dict], empty: str) -> str:
    cells, attrs = [], []
    for t in rows:
        err = t.get("error")
        cells.append([f"<td class='mono nw'>{_text(t.get('trace_id'))}</td>", f"<td class='mono nw'>{_text(t.get('request_id'))}</td>",
                      _text(t.get("operation")), _badge(t.get("outcome")), f"<td class='nw'>{_text(t.get('start'))}</td>",
                      _secs(t.get("dur_s")), _text(t.get("http_status")),
                      f"<td><div class='trunc' title='{_e(err or '')}'>{_text(err)}</div></td>"])
        attrs.append(f' tabindex="0" data-trace="{_e(t.get("trace_id"))}"')
    return _table(tid, ["trace", "request id", "operation", "outcome", "start", "#dur s", "#HTTP", "error"],
                  cells, empty, attrs)


def _ingest(r: dict) -> str:
    g = _dict(r.get("ingest"))
    q, lines = _num(g.get("quarantined")), _num(g.get("lines"))
    if q is None:
        plain = "The report does not say how many lines were quarantined."
    else:
        plain = (f"<b>{_int(q)} line{'s' * (q != 1)} {'were' if q != 1 else 'was'} quarantined</b> (could not be parsed"
                 f" and were set aside) out of {_int(lines)} lines read from {_int(g.get('files'))} files"
                 f" ({_int(g.get('files_skipped'))} skipped); {_int(g.get('records'))} log records parsed.")
    stats = [[f"<td class='mono'>{_text(s.get('file'))}</td>", _text(s.get("kind")), _text(s.get("severity")),
              _int(s.get("count")), f"<td class='wrap'>{_text(s.get('detail'))}</td>"] for s in _rows(g.get("stats"))]
    sample = [[f"<td class='mono'>{_text(s.get('file'))}</td>", _int(s.get("line_no")), _text(s.get("reason")),
               f"<td class='wrap mono'>{_text(s.get('raw'))}</td>"] for s in _rows(g.get("quarantine_sample"))]
    return _section("ingest", "Ingest", f'<p class="plain">{plain}</p><h3>Ingest statistics</h3>'
                    + _table("ingest-table", ["file", "kind", "severity", "#count", "detail"], stats, "no ingest statistics")
                    + "<h3>Quarantine sample</h3>"
                    + _table("quarantine-table", ["file", "#line", "reason", "raw line"], sample, "no quarantined lines sampled"))


def findings(r: dict) -> str:
    """The findings section (report key ``findings``: :mod:`stacklens.analyze.findings`)."""
    items = "".join(
        f"<li><b>{_e(f.get('severity'))}</b> {_e(f.get('text'))} "
        f"<details><summary class='hint'>evidence ({_e(f.get('rule'))})</summary>"
        f"<pre class='mono'>{_e(json.dumps(f.get('evidence'), indent=1, default=str))}</pre>"
        f"</details></li>"
        for f in _rows(r.get("findings")))
    return _section("findings", "Findings", f"<ul>{items}</ul>" if items
                    else _none("no finding: no rule had enough evidence"))

def _latency(r: dict, data: dict) -> str:
    buttons = ('<span class="btns" id="stat-buttons"><button type="button" class="on" data-stat="p50">p50</button>'
               '<button type="button" data-stat="p95">p95</button></span>')
    return _section("latency", "Where the time goes, per operation", (
        '<p class="hint">Stacked time per component; "between components" is time not covered by any'
        ' service span. Components are summarised separately, so the stack need not equal the'
        ' operation\'s own percentile.</p><div id="chart-latency"></div>')
        if data["components"] else _none("no component breakdown"), buttons if data["components"] else "")


def _timeline(r: dict, data: dict) -> str:
    return _section("timeline", "Outcomes per minute",
                    '<div id="chart-timeline"></div>' if data["timeline"] else _none("no timeline"))


def _operations(r: dict, data: dict) -> str:
    ops = [[_text(o.get("operation")), *(_int(o.get(k)) for k in ("count", *OUTCOMES)),
            *(_secs(o.get(k)) for k in ("p50_s", "p95_s", "p99_s"))] for o in _rows(r.get("operations"))]
    return _section("operations", "Operations", _table("ops-table", [
        "operation", "#count", *(f"#{o}" for o in OUTCOMES), "#p50 s", "#p95 s", "#p99 s"], ops, "no operations"))


def _waterfall(r: dict, data: dict) -> str:
    has_wf = data["initial"] is not None
    wf = ('<h3 id="wf-title">Waterfall</h3><p id="wf-meta"></p><div id="waterfall"></div><p class="hint" id="wf-note"></p>'
          if has_wf else _none("no slow or failed traces to draw"))
    return _section("traces", "Trace waterfall",
                    ('<p class="hint">Click a row in the tables below to draw its trace.</p>' if has_wf else "") + wf)


def _failed(r: dict, data: dict) -> str:
    return _section("failed", "Failed traces", _trace_table("failed-table", _rows(r.get("failed")), "no failed traces"))


def _slowest(r: dict, data: dict) -> str:
    return _section("slowest", "Slowest traces", _trace_table("slowest-table", _rows(r.get("slowest")), "no traces"))


def _errors(r: dict, data: dict) -> str:
    errs = [[_text(e.get("component")), f"<td class='wrap mono'>{_text(e.get('template'))}</td>",
             _int(e.get("failed_requests")), f"<td class='mono'>{_text(e.get('example_request_id'))}</td>"]
            for e in _rows(r.get("errors"))]
    return _section("errors", "Errors behind failed requests", _table(
        "errors-table", ["component", "error template", "#failed requests", "example request id"], errs, "no errors"))


def _client(r: dict, data: dict) -> str:
    csd = _dict(r.get("client_server"))
    if not csd:
        return ""
    cs_sum = _dict(csd.get("summary"))
    cs_rows = [[_text(c.get("name")), f"<td class='mono'>{_text(c.get('trace_id'))}</td>",
                _text(c.get("client_outcome")), _text(c.get("server_outcome")),
                *(_secs(c.get(k)) for k in ("api_s", "create_s", "server_dur_s", "before_server_s",
                                            "polling_delay_s"))] for c in _rows(csd.get("rows"))]
    cs_head = (f'<p class="hint">{_int(cs_sum.get("found"))} of {_int(cs_sum.get("requests"))} requests'
               f' the driver issued were found in the server traces; client and server disagree on'
               f' {_int(cs_sum.get("disagree"))}. Before server: submit to the first server record'
               f' (connection pool, network, API queue); polling delay: completion logged to ACTIVE'
               f' seen.</p>') if cs_sum else ""
    return _section("client", "Client view vs server view", cs_head + _table(
        "client-table", ["server", "trace", "client", "server outcome", "#api s", "#create s",
                         "#server s", "#before server s", "#polling delay s"], cs_rows,
        "no client records"))


def _phases(r: dict, data: dict) -> str:
    phases = [[_text(p.get("service")), _text(p.get("phase")), _int(p.get("count")),
               *(_secs(p.get(k)) for k in ("p50_s", "p95_s", "max_s"))] for p in _rows(r.get("phases"))]
    return _section("phases", "Phases inside nova-compute", _table(
        "phases-table", ["service", "phase", "#count", "#p50 s", "#p95 s", "#max s"], phases, "no phase markers"))


def _locks(r: dict, data: dict) -> str:
    locks = [[f"<td class='mono'>{_text(lk.get('lock_name'))}</td>", _int(lk.get("waits")),
              *(_secs(lk.get(k)) for k in ("max_waited_s", "total_waited_s"))] for lk in _rows(r.get("locks"))]
    return _section("locks", "Lock waits", _table(
        "locks-table", ["lock", "#waits", "#max waited s", "#total waited s"], locks, "no lock waits logged"))


def _rpc(r: dict, data: dict) -> str:
    rpc = [[_text(m.get("topic")), _text(m.get("kind")), _int(m.get("messages"))] for m in _rows(r.get("rpc"))]
    return _section("rpc", "RPC messages by topic", _table(
        "rpc-table", ["topic", "kind", "#messages"], rpc, "no RPC lines (DEBUG off?)"))


def _clocks(r: dict, data: dict) -> str:
    clocks = [[_text(c.get("day")), f"<td class='mono'>{_text(c.get('host'))}</td>", _text(c.get("status")),
               _secs(c.get("offset_s")), _secs(c.get("uncertainty_s")), _text("yes" if c.get("applied") else "no"),
               *(_int(c.get(k)) for k in ("n_constraints", "violations_before", "violations_after", "dropped")),
               _text(c.get("note"))]
              for c in _rows(r.get("clocks"))]
    return _section("clocks", "Clock skew between hosts", (
        '<p class="hint">Seconds added to each host\'s timestamps to put them on the reference'
        ' host\'s clock, from causal pairs (a message is sent before it is received); applied'
        ' when the uncertainty is at most 0.5 s. Violations: causal pairs whose effect was'
        ' logged before its cause, before and after correction.</p>' if clocks else "") + _table(
        "clocks-table", ["day", "host", "status", "#offset s", "#± s", "applied", "#constraints",
                         "#violations before", "#after", "#dropped", "note"], clocks, "single host: no clock to correct"))


def _hosts(r: dict, data: dict) -> str:
    hosts = [[f"<td class='mono'>{_text(h.get('host'))}</td>", _text(h.get("service")),
              *(_int(h.get(k)) for k in ("events", "errors", "spans")),
              *(_secs(h.get(k)) for k in ("span_p50_s", "span_p95_s"))] for h in _rows(r.get("hosts"))]
    return _section("hosts", "Hosts", _table("hosts-table", ["host", "service", "#events", "#errors", "#spans", "#span p50 s", "#span p95 s"], hosts, "no hosts"))


def _cell(v: Any, unit: str) -> str:
    if unit == "s" or unit == "1/s":
        return _secs(v)
    if unit == "count":
        return _int(v)
    if unit == "fraction":
        return _pct(v)
    if unit == "bool":
        return _text(None if v is None else "yes" if v else "no")
    if unit == "text":
        return f"<td class='wrap'>{_text(v)}</td>"
    return f"<td class='mono'>{_text(v)}</td>" if unit == "id" else _text(v)


def generic(r: dict, decls: list[Decl]) -> str:
    """Sections without a drawer of their own: one table per declaration, from its columns
    (headers from the column labels and units, numbers formatted per unit)."""
    out = []
    for d in decls:
        data = r.get(d["key"])
        if d["key"] != d["name"] and isinstance(data, dict):
            data = data.get(d["name"], data)
        cols, rows = cells(d, data)
        head = [("#" if c.get("unit") in NUMERIC_UNITS else "")
                + str(c.get("label") or c["name"]).lstrip("#") for c in cols]
        body = [[_cell(v, str(c.get("unit"))) for v, c in zip(row, cols, strict=True)] for row in rows]
        sid = "s-" + "".join(ch if ch.isalnum() else "-" for ch in d["name"])
        doc = f'<p class="hint">{_e(d.get("doc") or "")}</p>' if d.get("doc") else ""
        out.append(_section(sid, str(d.get("title") or d["name"]),
                            doc + _table(f"{sid}-table", head, body, "no rows")))
    return "".join(out)


#: The report keys drawn with code of their own, in the page's default order (the order of
#: reports that declare no sections); other declared sections are drawn by :func:`generic`.
DRAW: dict[str, Callable[[dict, dict], str]] = {
    "summary": lambda r, data: _cards(r), "components": _latency, "timeline": _timeline,
    "operations": _operations, "waterfalls": _waterfall, "failed": _failed, "slowest": _slowest,
    "errors": _errors, "client_server": _client, "phases": _phases, "locks": _locks, "rpc": _rpc,
    "clocks": _clocks, "hosts": _hosts, "ingest": lambda r, data: _ingest(r),
}
DEFAULT_KEYS = tuple(DRAW)
