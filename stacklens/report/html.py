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
- ``sections`` (format 2): the declared sections in report order; the page walks them
  (:mod:`stacklens.report.walk`), drawing each key with its drawer in
  :mod:`stacklens.report.html_sections`, or as a table from its declared columns. Without
  ``sections`` the page uses its default order.

Output: a single HTML document with plotly.js, CSS and JS inlined. It loads nothing over the
network (a Content-Security-Policy in the page forbids it), so it opens offline from disk.
All log-derived text is escaped: ``html.escape`` in markup, and JSON with ``< > &`` and
U+2028/2029 written as ``\\uXXXX`` inside the one data ``<script>``. Scripts are allowed by
hash only, so even text that slipped through could not run.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
from typing import Any

from plotly.offline import get_plotlyjs

from stacklens.report.html_cells import _dict, _e, _rows
from stacklens.report.html_page import (
    COMPONENT_COLORS,
    CSS,
    FALLBACK_COLORS,
    JS,
    OUTCOME_COLORS,
    PAGE,
    STATUS_COLORS,
)
from stacklens.report.html_sections import DEFAULT_KEYS, DRAW, findings, generic, header
from stacklens.report.walk import sections_by_key
from stacklens.vocab import OUTCOMES

__all__ = ["render_html"]





































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
    parts = [header(r), findings(r)]
    for key, decls in sections_by_key(r, DEFAULT_KEYS):
        draw = DRAW.get(key)
        parts.append(draw(r, data) if draw else generic(r, decls))
    body = "\n".join(p for p in parts if p)
    plotly_js = get_plotlyjs()
    return PAGE.substitute(
        css=CSS, js=JS, plotly=plotly_js, body=body, data=_json_for_script(data),
        version=_e(r.get("stacklens_version") or "unknown"),
        script_src=f"script-src {_csp_hash(plotly_js)} {_csp_hash(JS)}")
