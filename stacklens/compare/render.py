"""Render a comparison (the dict of :func:`stacklens.compare.model.compare_runs`).

Pure: each function returns the text to write; the CLI writes it.

* :func:`render_text`: the terminal view (rich tables): verdict lines first, then headline
  rates, operations and components side by side, what differs between the runs;
* :func:`render_html`: one self-contained page (plotly.js, CSS, JS and data inlined) whose
  Content-Security-Policy allows only its own scripts by hash, so it loads nothing from the
  network and opens offline (the same policy as the run report's page).
"""

from __future__ import annotations

import base64
import hashlib
import html
import io
import json
import math
from string import Template
from typing import Any

from plotly.offline import get_plotlyjs
from rich.console import Console
from rich.markup import escape
from rich.table import Table

__all__ = ["render_html", "render_text"]

#: Rows of operations / components shown in the terminal (all of them in JSON and HTML).
TERMINAL_ROWS = 15


def _s(x: Any) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.3f}"
    return str(x)


def _pct(x: Any) -> str:
    return "-" if x is None else f"{x * 100:.1f}%"


def _ci(ch: dict[str, Any]) -> str:
    ci = ch.get("ci")
    return f"[{ci[0]:.2f}, {ci[1]:.2f}]" if ci and None not in ci else "-"


def _style(ch: dict[str, Any]) -> str:
    if ch.get("regression"):
        return "bold red"
    if ch.get("significant"):
        return "yellow" if (ch.get("ratio") or 1) > 1 else "green"
    return ""


def _dur_table(title: str, rows: list[dict[str, Any]], key: list[str], names: list[str],
               limit: int) -> Table:
    t = Table(title=title, title_justify="left")
    for k in key:
        t.add_column(k)
    for n in names:
        t.add_column(f"{n} n", justify="right")
        t.add_column(f"{n} p50/p95 s (ok)", justify="right")
    for n in names[1:]:
        t.add_column(f"{n} vs {names[0]}")
    shown = sorted(rows, key=lambda r: (not any(c.get("significant") for c in r["changes"]),
                                        -sum(s["n"] for s in r["stats"])))[:limit]
    for r in shown:
        cells = [escape(str(r[k])) for k in key]
        for s in r["stats"]:
            ok = f" ({_pct(s['success_rate'])})" if s.get("success_rate") is not None else ""
            cells += [str(s["n"]), f"{_s(s['p50_s'])}/{_s(s['p95_s'])}{ok}"]
        for ch in r["changes"]:
            warn = " !" if ch.get("warnings") else ""
            cells.append(f"[{_style(ch)}]{ch['verdict']}[/] {_ci(ch)}{warn}" if _style(ch)
                         else f"{ch['verdict']} {_ci(ch)}{warn}")
        t.add_row(*cells)
    if len(rows) > limit:
        t.caption = f"{len(rows) - limit} more rows in --json / --html ('!': see warnings)"
    return t


def render_text(result: dict[str, Any], width: int = 120, color: bool = False) -> str:
    """The comparison as terminal text (ANSI colours when ``color``)."""
    buf = io.StringIO()
    con = Console(file=buf, width=width, force_terminal=color, no_color=not color,
                  highlight=False)
    names = [r["name"] for r in result["runs"]]
    con.print(f"[bold]stacklens compare[/]: baseline {names[0]}, "
              f"threshold {result['threshold']:.0%}, alpha {result['alpha']}")
    if result["regressions"]:
        con.print("[bold red]Regressions beyond the threshold:[/]")
        for line in result["regressions"]:
            con.print(f"  - {escape(line)}")
    else:
        con.print("[green]No significant regression beyond the threshold.[/]")
    t = Table(title="Headline (requests)", title_justify="left")
    t.add_column("metric")
    for n in names:
        t.add_column(n, justify="right")
    for n in names[1:]:
        t.add_column(f"{n} vs {names[0]}")
    for row in result["summary"]:
        fmt = _pct if row["metric"].endswith("_rate") else _s
        t.add_row(row["metric"], *[fmt(v) for v in row["values"]],
                  *[ch.get("verdict") or (f"{ch['delta']:+}" if ch.get("delta") is not None
                                          else "-") for ch in row["changes"]])
    con.print(t)
    if result["operations"]:
        con.print(_dur_table("Operations: end-to-end duration", result["operations"],
                             ["operation"], names, TERMINAL_ROWS))
    if result["components"]:
        con.print(_dur_table("Components: time per successful request", result["components"],
                             ["operation", "component"], names, TERMINAL_ROWS))
    if result["client"]:
        con.print(_dur_table("Client view: create time (submit to ACTIVE)", result["client"],
                             ["scenario"], names, TERMINAL_ROWS))
    diff = [m for m in result["metadata"] if m["differs"]]
    if diff:
        t = Table(title="What differs between the runs", title_justify="left")
        t.add_column("key", no_wrap=True)  # one line per key: values wrap, keys do not
        for n in names:
            t.add_column(n)
        for m in diff:
            t.add_row(escape(m["key"]), *[escape(_s(v)) for v in m["values"]])
        con.print(t)
    else:
        con.print("Metadata: the runs do not differ in version, scenario, inputs or hosts.")
    warns = list(result["warnings"])
    for kind in ("operations", "components", "client"):
        for r in result[kind]:
            for ch in r["changes"]:
                if ch.get("significant"):
                    warns += [f"{ch['run']} {r.get('operation') or r.get('scenario')}"
                              f"{'/' + r['component'] if 'component' in r else ''}: {w}"
                              for w in ch.get("warnings", [])]
    for w in warns[:20]:
        con.print(f"[yellow]warning:[/] {escape(w)}")
    return buf.getvalue()


_CSS = """body{font-family:system-ui,sans-serif;margin:1.5rem;color:#222}
table{border-collapse:collapse;margin:.5rem 0 1.5rem;font-size:.85rem}
td,th{border:1px solid #ddd;padding:.25rem .5rem;text-align:right}
td:first-child,th:first-child{text-align:left}.reg{color:#b00;font-weight:bold}
.sig{color:#a60}.faster{color:#070}.differs{background:#fff3cd}.warn{color:#a60}"""

_JS = """(function(){
var d = JSON.parse(document.getElementById("compare-data").textContent);
var el = document.getElementById("chart");
if (!el || !d.ops.length) { window.stacklensReady = true; return; }
var traces = d.runs.map(function (name, i) {
  return {type: "bar", orientation: "h", name: name + " p50 (s)",
          y: d.ops, x: d.p50.map(function (r) { return r[i]; })};
});
Plotly.newPlot(el, traces, {barmode: "group", height: 160 + 28 * d.ops.length,
  margin: {l: 260, r: 20, t: 20, b: 40}, xaxis: {title: {text: "seconds"}}},
  {displaylogo: false, responsive: true})
  .then(function () { window.stacklensReady = true; })
  .catch(function (err) { console.error("stacklens compare: " + err); });
})();
"""

_PAGE = Template("""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; $script_src; style-src 'unsafe-inline'; img-src data: blob:; font-src data:; base-uri 'none'; form-action 'none'">
<title>stacklens compare</title><style>$css</style></head><body>
<h1>stacklens compare</h1>
$body
<div id="chart"></div>
<script type="application/json" id="compare-data">$data</script>
<script>$plotly</script>
<script>$js</script>
</body></html>
""")


def _e(x: Any) -> str:
    return html.escape(_s(x))


def _cls(ch: dict[str, Any]) -> str:
    if ch.get("regression"):
        return "reg"
    if ch.get("significant"):
        return "sig" if (ch.get("ratio") or 1) > 1 else "faster"
    return ""


def _html_dur(title: str, rows: list[dict[str, Any]], key: list[str], names: list[str]) -> str:
    head = "".join(f"<th>{html.escape(k)}</th>" for k in key)
    rates = any(s.get("success_rate") is not None for r in rows for s in r["stats"])
    head += "".join(f"<th>{html.escape(n)} n</th><th>p50 s</th><th>p95 s</th><th>p99 s</th>"
                    + ("<th>success</th>" if rates else "") for n in names)
    head += "".join(f"<th>{html.escape(n)} vs baseline</th><th>95% CI</th><th>p</th>"
                    for n in names[1:])
    body = []
    for r in rows:
        cells = "".join(f"<td>{_e(r[k])}</td>" for k in key)
        cells += "".join(f"<td>{s['n']}</td><td>{_e(s['p50_s'])}</td><td>{_e(s['p95_s'])}</td>"
                         f"<td>{_e(s['p99_s'])}</td>"
                         + (f"<td>{_pct(s.get('success_rate'))}</td>" if rates else "")
                         for s in r["stats"])
        for ch in r["changes"]:
            tip = html.escape("; ".join(ch.get("warnings") or []))
            cells += (f"<td class='{_cls(ch)}' title='{tip}'>{_e(ch['verdict'])}"
                      f"{' ⚠' if tip else ''}</td><td>{_ci(ch)}</td><td>{_e(ch['p_value'])}</td>")
        body.append(f"<tr>{cells}</tr>")
    return (f"<h2>{html.escape(title)}</h2><table><tr>{head}</tr>{''.join(body)}</table>"
            if rows else "")


def _hash(script: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(script.encode()).digest()).decode() + "'"


def _json_for_script(obj: Any) -> str:
    def clean(x: Any) -> Any:
        if isinstance(x, dict):
            return {str(k): clean(v) for k, v in x.items()}
        if isinstance(x, list | tuple):
            return [clean(v) for v in x]
        if isinstance(x, float) and not math.isfinite(x):
            return None
        return x
    text = json.dumps(clean(obj), ensure_ascii=True, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render_html(result: dict[str, Any]) -> str:
    """The comparison as one self-contained HTML page (no network: CSP by script hashes)."""
    names = [r["name"] for r in result["runs"]]
    parts = [f"<p>Baseline <b>{html.escape(names[0])}</b>; threshold "
             f"{result['threshold']:.0%}; significance: Mann-Whitney U p &lt; {result['alpha']} "
             "and the 95% bootstrap interval of the ratio of medians excludes 1.</p>"]
    if result["regressions"]:
        parts.append("<h2 class='reg'>Regressions</h2><ul>" + "".join(
            f"<li class='reg'>{html.escape(x)}</li>" for x in result["regressions"]) + "</ul>")
    else:
        parts.append("<p class='faster'>No significant regression beyond the threshold.</p>")
    rows = "".join(
        f"<tr><td>{html.escape(r['metric'])}</td>"
        + "".join(f"<td>{_e(v)}</td>" for v in r["values"])
        + "".join(f"<td class='{_cls(c)}'>{_e(c.get('verdict') or c.get('delta'))}</td>"
                  for c in r["changes"]) + "</tr>" for r in result["summary"])
    parts.append("<h2>Headline</h2><table><tr><th>metric</th>"
                 + "".join(f"<th>{html.escape(n)}</th>" for n in names)
                 + "".join(f"<th>{html.escape(n)} vs baseline</th>" for n in names[1:])
                 + f"</tr>{rows}</table>")
    parts.append(_html_dur("Operations", result["operations"], ["operation"], names))
    parts.append(_html_dur("Components", result["components"], ["operation", "component"], names))
    parts.append(_html_dur("Client view (create time)", result["client"], ["scenario"], names))
    meta = "".join(
        f"<tr class='{'differs' if m['differs'] else ''}'><td>{html.escape(m['key'])}</td>"
        + "".join(f"<td>{_e(v)}</td>" for v in m["values"]) + "</tr>" for m in result["metadata"])
    parts.append("<h2>Runs</h2><table><tr><th>key</th>"
                 + "".join(f"<th>{html.escape(n)}</th>" for n in names) + f"</tr>{meta}</table>")
    if result["warnings"]:
        parts.append("<ul>" + "".join(f"<li class='warn'>{html.escape(w)}</li>"
                                      for w in result["warnings"]) + "</ul>")
    ops = result["operations"][:30]
    data = {"runs": names, "ops": [o["operation"] for o in ops],
            "p50": [[s["p50_s"] for s in o["stats"]] for o in ops]}
    plotly_js = get_plotlyjs()
    return _PAGE.substitute(css=_CSS, body="\n".join(parts), data=_json_for_script(data),
                            plotly=plotly_js, js=_JS,
                            script_src=f"script-src {_hash(plotly_js)} {_hash(_JS)}")
