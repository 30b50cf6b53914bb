"""Render a stacklens report (the ``report.json`` dict) as one self-contained HTML page.

Input: the report dict produced by the analysis stage. Every key is optional and read
defensively (a missing or malformed part renders as "none"):

- ``stacklens_version``, ``format_version``, ``inputs`` (list of paths),
  ``timezone_assumption`` (str), ``window`` ``{start, end, dur_s}``
- ``summary`` ``{traces, by_outcome{success, retried, failed, rejected, unknown},
  success_rate, failure_rate, retry_rate, throughput_rps}``
- ``operations`` ``[{operation, count, success, retried, failed, rejected, unknown,
  p50_s, p95_s, p99_s}]``
- ``components`` ``[{operation, component, p50_s, p95_s, p99_s, mean_s, share}]``
- ``timeline`` ``[{minute, success, retried, failed, rejected, unknown}]``
- ``hosts`` ``[{host, service, events, errors, spans}]``
- ``errors`` ``[{component, template, failed_requests, example_request_id}]``
- ``slowest`` / ``failed`` ``[{trace_id, request_id, operation, outcome, start, dur_s,
  error, instance_uuid, http_status}]``
- ``waterfalls`` ``{trace_id: [{span_id, parent_span_id, service, host, operation,
  start_s, dur_s, status: ok|error|unknown, end_exact}]}``
- ``ingest`` ``{files, files_skipped, lines, records, quarantined,
  stats[{file, kind, severity, count, detail}], quarantine_sample[{file, line_no, reason, raw}]}``

Output: a single HTML document with plotly.js, CSS and JS inlined. It loads nothing over the
network (a Content-Security-Policy in the page forbids it), so it opens offline from disk.
All log-derived text is escaped: ``html.escape`` in markup, and JSON with ``< > &`` and
U+2028/2029 written as ``\\uXXXX`` inside the one data ``<script>``. Scripts are allowed by
hash only, so even text that slipped through could not run.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import math
import re
from string import Template
from typing import Any

from plotly.offline import get_plotlyjs

__all__ = ["render_html"]

OUTCOMES = ("success", "retried", "failed", "rejected", "unknown")
OUTCOME_COLORS = {"success": "#2f855a", "retried": "#d69e2e", "failed": "#c53030",
                  "rejected": "#dd6b20", "unknown": "#a0aec0"}
STATUS_COLORS = {"ok": "#3182ce", "error": "#c53030", "unknown": "#718096"}
COMPONENT_COLORS = {
    "tempest": "#4a5568", "keystone": "#805ad5", "nova-api": "#2b6cb0",
    "nova-conductor": "#3182ce", "nova-scheduler": "#63b3ed", "nova-compute": "#2c7a7b",
    "nova-network": "#38b2ac", "neutron-server": "#d69e2e", "glance-api": "#38a169",
    "cinder-api": "#dd6b20", "between components": "#cbd5e0",
}
FALLBACK_COLORS = ("#975a16", "#b83280", "#276749", "#9c4221", "#553c9a", "#2a4365")

CSS = """
:root{--bg:#f4f6f9;--card:#fff;--line:#dfe4ea;--text:#1a202c;--muted:#5f6b7a;--accent:#2b6cb0}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--text);
 font:14px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
header.top{background:#1a202c;color:#e2e8f0;padding:14px 32px;display:flex;align-items:baseline;
 gap:28px;flex-wrap:wrap;position:sticky;top:0;z-index:10}
header.top h1{font-size:18px;margin:0;font-weight:600;letter-spacing:.02em}
header.top nav a{color:#a0c4ec;text-decoration:none;margin-right:16px;font-size:13px}
header.top nav a:hover{color:#fff}
main{max-width:1440px;margin:0 auto;padding:20px 32px 48px}
section{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:18px 22px;scroll-margin-top:64px;
 margin:0 0 20px}
h2{font-size:16px;margin:0 0 12px;font-weight:600}
h3{font-size:14px;margin:18px 0 8px;font-weight:600}
.meta{display:grid;grid-template-columns:max-content 1fr;gap:4px 18px;margin:0}
.meta dt{color:var(--muted)} .meta dd{margin:0}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(150px,1fr));gap:14px;margin:0 0 20px}
.card{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:14px 16px;
 border-top:4px solid var(--c,#4a5568)}
.card .v{font-size:26px;font-weight:600;font-variant-numeric:tabular-nums}
.card .l{color:var(--muted);font-size:12px;text-transform:uppercase;letter-spacing:.05em}
.card .r{color:var(--muted);font-size:13px}
.scroll{overflow:auto;max-height:520px}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{padding:6px 10px;border-bottom:1px solid #edf0f3;text-align:left;vertical-align:top}
th{position:sticky;top:0;background:#f7f9fb;color:var(--muted);font-weight:600;font-size:12px;
 border-bottom:1px solid var(--line);white-space:nowrap}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr[data-trace]{cursor:pointer} tr[data-trace]:hover td{background:#f0f6fd}
tr.sel td{background:#e2efff!important}
tr[data-trace]:focus{outline:2px solid var(--accent);outline-offset:-2px}
.mono,code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px}
td.nw{white-space:nowrap}
.trunc{max-width:46ch;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
td.wrap{white-space:pre-wrap;word-break:break-word}
.muted,.none{color:var(--muted)} .none{font-style:italic;margin:4px 0}
.badge{display:inline-block;padding:0 8px;border-radius:10px;font-size:12px;color:#fff;
 background:var(--c,#718096);white-space:nowrap}
.btns{display:inline-flex;margin-left:12px;vertical-align:middle}
.btns button{font:inherit;font-size:12px;padding:2px 12px;border:1px solid var(--line);
 background:#fff;color:var(--text);cursor:pointer}
.btns button:first-child{border-radius:4px 0 0 4px} .btns button:last-child{border-radius:0 4px 4px 0}
.btns button.on{background:var(--accent);border-color:var(--accent);color:#fff}
.hint{color:var(--muted);font-size:12px;margin:4px 0 10px}
#wf-title{margin:0 0 4px} #wf-meta{color:var(--muted);font-size:13px;margin:0 0 6px}
#wf-meta .err{color:#9b2c2c;display:block;white-space:pre-wrap;word-break:break-word}
.plain{font-size:14px;margin:0 0 12px}
footer{color:var(--muted);font-size:12px;text-align:center;margin-top:8px}
"""

JS = r"""
(function () {
"use strict";
var D = JSON.parse(document.getElementById("stacklens-data").textContent);
var CFG = {displaylogo: false, responsive: true, modeBarButtonsToRemove: ["lasso2d", "select2d", "sendChartToCloud"]};
var FONT = {family: "system-ui, -apple-system, Segoe UI, Roboto, Arial, sans-serif", size: 12,
            color: "#1a202c"};
function esc(s) {  // plotly renders a little HTML in labels: show log text literally
  return String(s == null ? "" : s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}
function fmt(v) {
  if (typeof v !== "number" || !isFinite(v)) return "?";
  return v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v >= 1 ? v.toFixed(2) : v.toFixed(3);
}
function layout(extra) {
  var l = {font: FONT, paper_bgcolor: "#fff", plot_bgcolor: "#fff", bargap: 0.25,
           margin: {l: 10, r: 20, t: 36, b: 10}, hoverlabel: {font: {family: FONT.family}},
           legend: {orientation: "h", y: 1.0, yanchor: "bottom", x: 0, traceorder: "normal"}};
  return Object.assign(l, extra);
}
function grid(title, extra) {
  return Object.assign({title: {text: title}, gridcolor: "#edf0f3", zeroline: false, automargin: true}, extra);
}
function latency(stat) {
  var el = document.getElementById("chart-latency");
  if (!el) return Promise.resolve();
  var ops = D.operations.map(esc);
  var traces = D.component_order.map(function (c) {
    var rows = D.components.filter(function (r) { return r.component === c; });
    return {type: "bar", orientation: "h", name: esc(c), marker: {color: D.component_colors[c]},
            y: rows.map(function (r) { return esc(r.operation); }),
            x: rows.map(function (r) { return r[stat + "_s"]; }),
            hovertemplate: "%{y}<br>%{fullData.name}: %{x:.3f} s<extra></extra>"};
  });
  return Plotly.react(el, traces, layout({barmode: "stack", height: 150 + 34 * ops.length,
    xaxis: grid("seconds (" + stat + " per component)"),
    yaxis: grid("", {categoryorder: "array", categoryarray: ops, autorange: "reversed"})}), CFG);
}
function timeline() {
  var el = document.getElementById("chart-timeline");
  if (!el) return Promise.resolve();
  var x = D.timeline.map(function (r) { return String(r.minute).replace(/(Z|[+-]\d\d:?\d\d)$/, ""); });
  var traces = D.outcomes.map(function (o) {
    return {type: "bar", name: o, x: x, marker: {color: D.outcome_colors[o]},
            y: D.timeline.map(function (r) { return r[o] || 0; }),
            hovertemplate: "%{x}<br>" + o + ": %{y}<extra></extra>"};
  });
  var top = Math.max.apply(null, D.timeline.map(function (r) {
    return D.outcomes.reduce(function (a, o) { return a + (r[o] || 0); }, 0); }));
  return Plotly.react(el, traces, layout({barmode: "stack", height: 340, bargap: 0.1,
    xaxis: grid("minute (" + esc(D.tz) + ")", {type: "date"}),
    yaxis: grid("requests", top <= 10 ? {dtick: 1, tickformat: "d"} : {})}), CFG);
}
function waterfall(id) {
  var el = document.getElementById("waterfall");
  if (!el) return Promise.resolve();
  var row = D.traces[id] || {}, meta = document.getElementById("wf-meta");
  document.getElementById("wf-title").textContent = "Trace " + id + " · " + (row.operation || "?") +
    " · " + (row.outcome || "?") + (typeof row.dur_s === "number" ? " · " + fmt(row.dur_s) + " s" : "");
  var bits = [["request", row.request_id], ["instance", row.instance_uuid], ["HTTP", row.http_status],
              ["start", row.start]].filter(function (b) { return b[1] != null && b[1] !== ""; });
  meta.textContent = bits.map(function (b) { return b[0] + " " + b[1]; }).join("   ·   ");
  if (row.error) {
    var e = document.createElement("span"); e.className = "err"; e.textContent = row.error;
    meta.appendChild(e);
  }
  document.querySelectorAll("tr[data-trace]").forEach(function (tr) {
    tr.classList.toggle("sel", tr.getAttribute("data-trace") === id);
  });
  var spans = (D.waterfalls[id] || []).filter(function (s) { return s && typeof s === "object"; });
  spans = spans.map(function (s, i) { return [s, i]; }).sort(function (a, b) {
    return ((a[0].start_s || 0) - (b[0].start_s || 0)) || (a[1] - b[1]);
  }).map(function (p) { return p[0]; });
  var note = document.getElementById("wf-note");
  if (!spans.length) {
    Plotly.purge(el);
    note.textContent = "No waterfall was recorded for this trace.";
    return Promise.resolve();
  }
  var total = 0;
  spans.forEach(function (s) { total = Math.max(total, (s.start_s || 0) + (s.dur_s || 0)); });
  var groups = {}, order = [], inexact = 0;
  spans.forEach(function (s, i) {
    var st = STATUS[s.status] ? s.status : "unknown", exact = s.end_exact !== false;
    var key = st + (exact ? "" : " · end not logged");
    if (!exact) inexact++;
    if (!groups[key]) { groups[key] = {st: st, exact: exact, rows: []}; order.push(key); }
    groups[key].rows.push([s, i]);
  });
  var traces = order.map(function (key) {
    var g = groups[key], c = STATUS[g.st];
    var marker = g.exact ? {color: c} : {color: c + "40", line: {color: c, width: 1},
                 pattern: {shape: "/", fillmode: "overlay", fgcolor: c, size: 7, solidity: 0.35}};
    return {type: "bar", orientation: "h", name: key, marker: marker,
      y: g.rows.map(function (r) { return r[1]; }),
      base: g.rows.map(function (r) { return r[0].start_s || 0; }),
      x: g.rows.map(function (r) { return Math.max(r[0].dur_s || 0, total / 400); }),
      customdata: g.rows.map(function (r) {
        var s = r[0];
        return [esc(s.service) + " @ " + esc(s.host), esc(s.operation), fmt(s.start_s || 0),
                fmt(s.dur_s || 0), g.exact ? "" : "<br><i>end not logged</i>"];
      }),
      hovertemplate: "<b>%{customdata[0]}</b><br>%{customdata[1]}<br>start %{customdata[2]} s" +
                     " · duration %{customdata[3]} s%{customdata[4]}<extra></extra>"};
  });
  note.textContent = inexact ? "Hatched, lighter bars: end not logged (" + inexact +
    " span" + (inexact > 1 ? "s" : "") + "); the bar stops at the last event seen." : "";
  return Plotly.react(el, traces, layout({barmode: "overlay", height: 140 + 26 * spans.length,
    xaxis: grid("seconds from trace start", {rangemode: "tozero"}),
    yaxis: grid("", {autorange: "reversed", tickvals: spans.map(function (s, i) { return i; }),
      ticktext: spans.map(function (s) { return esc(s.service) + " @ " + esc(s.host); })})}), CFG);
}
var STATUS = D.status_colors;
document.querySelectorAll("#stat-buttons button").forEach(function (b) {
  b.addEventListener("click", function () {
    document.querySelectorAll("#stat-buttons button").forEach(function (o) { o.classList.toggle("on", o === b); });
    latency(b.getAttribute("data-stat"));
  });
});
document.querySelectorAll("tr[data-trace]").forEach(function (tr) {
  function go() {
    waterfall(tr.getAttribute("data-trace"));
    document.getElementById("traces").scrollIntoView({block: "start"});
  }
  tr.addEventListener("click", go);
  tr.addEventListener("keydown", function (ev) { if (ev.key === "Enter") go(); });
});
Promise.all([latency("p50"), timeline(), D.initial == null ? null : waterfall(D.initial)])
  .then(function () { window.stacklensReady = true; })
  .catch(function (err) { console.error("stacklens report: " + err); });
})();
"""

PAGE = Template("""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; $script_src; style-src 'unsafe-inline'; img-src data: blob:; font-src data:; base-uri 'none'; form-action 'none'">
<title>stacklens report</title>
<style>$css</style>
</head><body>
<header class="top"><h1>stacklens report</h1><nav>
<a href="#summary">Summary</a><a href="#latency">Latency</a><a href="#timeline">Timeline</a>
<a href="#operations">Operations</a><a href="#traces">Traces</a><a href="#errors">Errors</a>
<a href="#hosts">Hosts</a><a href="#ingest">Ingest</a></nav></header>
<main>
$body
<footer>stacklens $version · self-contained report: opens offline, loads nothing from the network</footer>
</main>
<script type="application/json" id="stacklens-data">$data</script>
<script>$plotly</script>
<script>$js</script>
</body></html>
""")

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _dict(x: Any) -> dict:
    return x if isinstance(x, dict) else {}


def _rows(x: Any) -> list[dict]:
    return [r for r in x if isinstance(r, dict)] if isinstance(x, list) else []


def _num(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, int | float):
        return None
    return float(x) if math.isfinite(x) else None


def _e(x: Any) -> str:
    """Escape any value for HTML text or attributes; control characters become visible."""
    s = str(x).encode("utf-8", "replace").decode("utf-8")
    return html.escape(_CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", s), quote=True)


def _text(x: Any) -> str:
    return '<span class="muted">—</span>' if x is None or x == "" else _e(x)


def _int(x: Any) -> str:
    v = _num(x)
    return "—" if v is None else f"{v:,.0f}"


def _secs(x: Any) -> str:
    v = _num(x)
    if v is None:
        return "—"
    return f"{v:,.0f}" if v >= 100 else f"{v:.1f}" if v >= 10 else f"{v:.2f}" if v >= 1 else f"{v:.3f}"


def _pct(x: Any) -> str:
    v = _num(x)
    if v is None:
        return "—"
    return "<0.1%" if 0 < v < 0.001 else f"{v * 100:.1f}%"


def _span(x: Any) -> str:
    v = _num(x)
    if v is None:
        return "—"
    if v < 120:
        return f"{v:.1f} s"
    m, s = divmod(round(v), 60)
    return f"{m} min {s} s" if m < 120 else f"{m // 60} h {m % 60} min"


def _badge(outcome: Any) -> str:
    return f'<span class="badge" style="--c:{OUTCOME_COLORS.get(outcome, "#718096")}">{_e(outcome)}</span>'


def _none(what: str) -> str:
    return f'<p class="none">none — {_e(what)}</p>'


def _table(tid: str, head: list[str], rows: list[list[str]], empty: str,
           attrs: list[str] | None = None) -> str:
    """``head`` labels prefixed with '#' are numeric (right aligned); cells are ready HTML."""
    if not rows:
        return _none(empty)
    num = [h.startswith("#") for h in head]
    th = "".join(f'<th class="n">{_e(h[1:])}</th>' if n else f"<th>{_e(h)}</th>" for h, n in zip(head, num, strict=True))
    body = []
    for i, row in enumerate(rows):
        tds = "".join(c if c.startswith("<td") else f'<td class="n">{c}</td>' if n else f"<td>{c}</td>"
                      for c, n in zip(row, num, strict=True))
        body.append(f"<tr{attrs[i] if attrs else ''}>{tds}</tr>")
    return f'<div class="scroll"><table id="{tid}"><thead><tr>{th}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'


def _section(sid: str, title: str, inner: str, extra: str = "") -> str:
    return f'<section id="{sid}"><h2>{_e(title)}{extra}</h2>{inner}</section>'


def _header(r: dict) -> str:
    w = _dict(r.get("window"))
    inputs = [str(p) for p in r.get("inputs") or [] if p is not None] if isinstance(r.get("inputs"), list) else []
    if inputs:
        items = "".join(f"<li class='mono'>{_e(p)}</li>" for p in inputs)
        shown = f"<details><summary>{len(inputs)} path{'s' * (len(inputs) != 1)}</summary><ul>{items}</ul></details>"
    else:
        shown = '<span class="none">none</span>'
    window = f"{_text(w.get('start'))} → {_text(w.get('end'))} ({_span(w.get('dur_s'))})"
    rows = [("Window", window), ("Timezone", _text(r.get("timezone_assumption"))), ("Inputs", shown),
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


def _clean(x: Any) -> Any:
    """JSON-safe copy: non-finite floats become null, keys strings, odd types strings."""
    if isinstance(x, dict):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_clean(v) for v in x]
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x if x is None or isinstance(x, str | int | float) else str(x)


def _json_for_script(obj: Any) -> str:
    """JSON that cannot end its <script> element: ASCII only, with < > & escaped too."""
    text = json.dumps(_clean(obj), ensure_ascii=True, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _payload(r: dict) -> dict:
    comps = [c for c in _rows(r.get("components")) if isinstance(c.get("component"), str) and c.get("operation") is not None]
    # the chart shows the operations the analysis kept in ``components``, in its order
    ops = list(dict.fromkeys(str(c["operation"]) for c in comps))
    names = list(dict.fromkeys(c["component"] for c in comps))
    known = list(COMPONENT_COLORS)
    order = sorted(names, key=lambda n: (known.index(n) if n in known else len(known), names.index(n)))
    colors = {n: COMPONENT_COLORS.get(n, FALLBACK_COLORS[i % len(FALLBACK_COLORS)]) for i, n in enumerate(order)}
    waterfalls = {str(k): _rows(v) for k, v in _dict(r.get("waterfalls")).items()}
    failed, slowest = _rows(r.get("failed")), _rows(r.get("slowest"))
    traces = {str(t.get("trace_id")): t for t in slowest + failed if t.get("trace_id") is not None}
    ids = [str(t["trace_id"]) for t in failed + slowest if t.get("trace_id") is not None]
    initial = next((i for i in ids if waterfalls.get(i)), ids[0] if ids else None)
    tz = str(r.get("timezone_assumption") or "UTC").split(" ")[0]
    return {"operations": ops, "components": [{**c, "operation": str(c["operation"])} for c in comps],
            "component_order": order, "component_colors": colors, "timeline": _rows(r.get("timeline")),
            "outcomes": list(OUTCOMES), "outcome_colors": OUTCOME_COLORS, "status_colors": STATUS_COLORS,
            "waterfalls": waterfalls, "traces": traces, "initial": initial, "tz": tz}


def _csp_hash(script: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode() + "'"


def _findings(r: dict) -> str:
    """The findings section (report key ``findings``: :mod:`stacklens.analyze.findings`)."""
    items = "".join(
        f"<li><b>{_e(f.get('severity'))}</b> {_e(f.get('text'))} "
        f"<details><summary class='hint'>evidence ({_e(f.get('rule'))})</summary>"
        f"<pre class='mono'>{_e(json.dumps(f.get('evidence'), indent=1, default=str))}</pre>"
        f"</details></li>"
        for f in _rows(r.get("findings")))
    return _section("findings", "Findings", f"<ul>{items}</ul>" if items
                    else _none("no finding: no rule had enough evidence"))


def render_html(report: dict) -> str:
    """Return the complete, self-contained HTML document for a stacklens ``report`` dict.

    ``report`` has the shape of ``report.json`` (see the module docstring: ``summary``,
    ``operations``, ``components``, ``timeline``, ``slowest``/``failed``, ``waterfalls``,
    ``errors``, ``hosts``, ``ingest``, ...); missing or malformed keys render as "none".
    Pure: nothing is read or written. The result inlines plotly.js, CSS, JS and the data, and
    needs no network access to display; all log-derived text is escaped.
    """
    r = _dict(report)
    data = _payload(r)
    ops = [[_text(o.get("operation")), *(_int(o.get(k)) for k in ("count", *OUTCOMES)),
            *(_secs(o.get(k)) for k in ("p50_s", "p95_s", "p99_s"))] for o in _rows(r.get("operations"))]
    errs = [[_text(e.get("component")), f"<td class='wrap mono'>{_text(e.get('template'))}</td>",
             _int(e.get("failed_requests")), f"<td class='mono'>{_text(e.get('example_request_id'))}</td>"]
            for e in _rows(r.get("errors"))]
    hosts = [[f"<td class='mono'>{_text(h.get('host'))}</td>", _text(h.get("service")),
              *(_int(h.get(k)) for k in ("events", "errors", "spans")),
              *(_secs(h.get(k)) for k in ("span_p50_s", "span_p95_s"))] for h in _rows(r.get("hosts"))]
    phases = [[_text(p.get("service")), _text(p.get("phase")), _int(p.get("count")),
               *(_secs(p.get(k)) for k in ("p50_s", "p95_s", "max_s"))] for p in _rows(r.get("phases"))]
    locks = [[f"<td class='mono'>{_text(lk.get('lock_name'))}</td>", _int(lk.get("waits")),
              *(_secs(lk.get(k)) for k in ("max_waited_s", "total_waited_s"))] for lk in _rows(r.get("locks"))]
    clocks = [[_text(c.get("day")), f"<td class='mono'>{_text(c.get('host'))}</td>", _text(c.get("status")),
               _secs(c.get("offset_s")), _secs(c.get("uncertainty_s")), _text("yes" if c.get("applied") else "no"),
               *(_int(c.get(k)) for k in ("n_constraints", "violations_before", "violations_after", "dropped")),
               _text(c.get("note"))]
              for c in _rows(r.get("clocks"))]
    csd = _dict(r.get("client_server"))
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
    rpc = [[_text(m.get("topic")), _text(m.get("kind")), _int(m.get("messages"))] for m in _rows(r.get("rpc"))]
    buttons = ('<span class="btns" id="stat-buttons"><button type="button" class="on" data-stat="p50">p50</button>'
               '<button type="button" data-stat="p95">p95</button></span>')
    has_wf = data["initial"] is not None
    wf = ('<h3 id="wf-title">Waterfall</h3><p id="wf-meta"></p><div id="waterfall"></div><p class="hint" id="wf-note"></p>'
          if has_wf else _none("no slow or failed traces to draw"))
    body = "\n".join([
        _header(r), _findings(r), _cards(r),
        _section("latency", "Where the time goes, per operation", (
            '<p class="hint">Stacked time per component; "between components" is time not covered by any'
            ' service span. Components are summarised separately, so the stack need not equal the'
            ' operation\'s own percentile.</p><div id="chart-latency"></div>')
            if data["components"] else _none("no component breakdown"), buttons if data["components"] else ""),
        _section("timeline", "Outcomes per minute",
                 '<div id="chart-timeline"></div>' if data["timeline"] else _none("no timeline")),
        _section("operations", "Operations", _table("ops-table", [
            "operation", "#count", *(f"#{o}" for o in OUTCOMES), "#p50 s", "#p95 s", "#p99 s"], ops, "no operations")),
        _section("traces", "Trace waterfall",
                 ('<p class="hint">Click a row in the tables below to draw its trace.</p>' if has_wf else "") + wf),
        _section("failed", "Failed traces", _trace_table("failed-table", _rows(r.get("failed")), "no failed traces")),
        _section("slowest", "Slowest traces", _trace_table("slowest-table", _rows(r.get("slowest")), "no traces")),
        _section("errors", "Errors behind failed requests", _table(
            "errors-table", ["component", "error template", "#failed requests", "example request id"], errs, "no errors")),
        *([_section("client", "Client view vs server view", cs_head + _table(
            "client-table", ["server", "trace", "client", "server outcome", "#api s", "#create s",
                             "#server s", "#before server s", "#polling delay s"], cs_rows,
            "no client records"))] if csd else []),
        _section("phases", "Phases inside nova-compute", _table(
            "phases-table", ["service", "phase", "#count", "#p50 s", "#p95 s", "#max s"], phases, "no phase markers")),
        _section("locks", "Lock waits", _table(
            "locks-table", ["lock", "#waits", "#max waited s", "#total waited s"], locks, "no lock waits logged")),
        _section("rpc", "RPC messages by topic", _table(
            "rpc-table", ["topic", "kind", "#messages"], rpc, "no RPC lines (DEBUG off?)")),
        _section("clocks", "Clock skew between hosts", (
            '<p class="hint">Seconds added to each host\'s timestamps to put them on the reference'
            ' host\'s clock, from causal pairs (a message is sent before it is received); applied'
            ' when the uncertainty is at most 0.5 s. Violations: causal pairs whose effect was'
            ' logged before its cause, before and after correction.</p>' if clocks else "") + _table(
            "clocks-table", ["day", "host", "status", "#offset s", "#± s", "applied", "#constraints",
                             "#violations before", "#after", "#dropped", "note"], clocks, "single host: no clock to correct")),
        _section("hosts", "Hosts", _table("hosts-table", ["host", "service", "#events", "#errors", "#spans", "#span p50 s", "#span p95 s"], hosts, "no hosts")),
        _ingest(r),
    ])
    plotly_js = get_plotlyjs()
    return PAGE.substitute(
        css=CSS, js=JS, plotly=plotly_js, body=body, data=_json_for_script(data),
        version=_e(r.get("stacklens_version") or "unknown"),
        script_src=f"script-src {_csp_hash(plotly_js)} {_csp_hash(JS)}")
