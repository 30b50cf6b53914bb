"""HTML building blocks of the report page: escaping, number formats, tables and sections.

Every value from a report is untrusted log text: :func:`_e` escapes it for text and attributes
(control characters made visible); :func:`_text`, :func:`_int`, :func:`_secs`, :func:`_pct`
render a possibly missing or malformed value as an em dash instead of failing.
"""

from __future__ import annotations

import html
import math
import re
from typing import Any

from stacklens.report.html_page import OUTCOME_COLORS

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
