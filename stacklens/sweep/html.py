"""The sweep report as one self-contained HTML page (``report.html``): plotly.js inlined, no
network, no script but plotly's and the figures' data. Pure: :func:`html_page` returns the
text; the CLI writes it.

One chart per knee series (median throughput over repeats along its axis, the knee and its
bootstrap range shaded, p99 latency where fio has it), then the tables of the terminal
report: maximum per workload, failed and partial repeats, skipped files.
"""

from __future__ import annotations

import html
from typing import Any

import plotly.graph_objects as go
from plotly.offline import get_plotlyjs

__all__ = ["MAX_CHARTS", "html_page"]

MAX_CHARTS = 60
#: Nothing is loaded from anywhere: inline scripts and styles only.
_CSP = ("default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; "
        "style-src 'unsafe-inline'; img-src data:")


def _figure(k: dict[str, Any]) -> str:
    fig = go.Figure()
    unit = "MiB/s" if k["metric"] == "bw_mib_s" else "Mbit/s"
    fig.add_trace(go.Scatter(x=k["x"], y=k["y_median"], mode="lines+markers",
                             name=f"median {unit}"))
    if k["knee"] is not None:
        lo, hi = k["range"] or [k["knee"], k["knee"]]
        if hi > lo:
            fig.add_vrect(x0=lo, x1=hi, fillcolor="orange", opacity=0.2, line_width=0)
        fig.add_vline(x=k["knee"], line_dash="dash", line_color="orange")
    geometric = len(k["x"]) > 2 and k["x"][0] > 0 and all(
        b / a >= 1.5 for a, b in zip(k["x"], k["x"][1:], strict=False))
    title = " ".join(f"{a}={b}" for a, b in k["series"].items() if a != "tool")
    fig.update_layout(title=f"{html.escape(title)}<br><sub>{html.escape(k['text'])}</sub>",
                      xaxis_title=k["axis"], yaxis_title=unit, height=360,
                      margin={"l": 60, "r": 20, "t": 70, "b": 50},
                      xaxis_type="log" if geometric else "linear")
    return str(fig.to_html(full_html=False, include_plotlyjs=False))


def _table(rows: list[dict[str, Any]], cols: list[str]) -> str:
    if not rows:
        return "<p>none</p>"
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    body = "".join("<tr>" + "".join(
        f"<td>{html.escape('' if r.get(c) is None else str(r.get(c)))}</td>" for c in cols)
        + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def html_page(rep: dict[str, Any]) -> str:
    """The page for a report from :func:`~stacklens.sweep.report.build_report`."""
    o = rep["overview"]
    charts = "".join(f"<div class=chart>{_figure(k)}</div>" for k in rep["knees"][:MAX_CHARTS])
    more = (f"<p>{len(rep['knees']) - MAX_CHARTS} more series in report.json</p>"
            if len(rep["knees"]) > MAX_CHARTS else "")
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>stacklens sweep</title>
<meta http-equiv="Content-Security-Policy" content="{_CSP}">
<style>body{{font-family:sans-serif;margin:1em 2em}}table{{border-collapse:collapse;font-size:13px}}
td,th{{border:1px solid #ccc;padding:2px 6px;text-align:left}}.chart{{max-width:900px}}</style>
<script>{get_plotlyjs()}</script></head><body>
<h1>stacklens sweep</h1>
<p>{o['points']} points, {o['repeats']} repeats: {o['ok']} ok, {o['partial']} partial,
{o['failed']} failed; {o['skipped_files']} files skipped.</p>
<h2>Maximum per workload</h2>
{_table(rep['max'], ['sweep', 'workload', 'point', 'bw_mib_s', 'iops', 'lat_p99_us',
                     'bw_mbit_s', 'n_repeats', 'spread_pct'])}
<h2>Inflection points</h2>{charts}{more}
<h2>Failed and partial repeats</h2>
{_table(rep['failed'], ['sweep', 'point', 'repeat', 'status', 'n_ok', 'n_targets', 'reason'])}
<h2>Skipped files</h2>
{_table(rep['skipped'][:500], ['kind', 'file', 'reason'])}
<script>window.stacklensReady = true;</script>
</body></html>
"""
