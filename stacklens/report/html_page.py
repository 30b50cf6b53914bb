"""The fixed parts of the HTML report page: colours, CSS, the page's JavaScript (plotly.js
charts of the latency breakdown, the outcome timeline and the trace waterfall, reading the one
JSON data ``<script>``) and the page template. :mod:`stacklens.report.html` fills them in.
"""

from __future__ import annotations

from string import Template

__all__ = ["COMPONENT_COLORS", "CSS", "FALLBACK_COLORS", "JS", "OUTCOME_COLORS", "PAGE",
           "STATUS_COLORS"]

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
