"""Tests for the self-contained HTML report: escaping, no network, and a real-browser check."""

from __future__ import annotations

import json
import struct
from html.parser import HTMLParser
from pathlib import Path

import pytest
from browser import open_report
from plotly.offline import get_plotlyjs
from report_fixture import BREAKOUT, HOSTILE, sample_report

from stacklens.report.html import render_html

ALLOWED_TAGS = {"html", "head", "meta", "title", "style", "body", "header", "h1", "nav", "a", "main",
                "section", "h2", "h3", "dl", "dt", "dd", "details", "summary", "ul", "li", "span", "div",
                "table", "thead", "tbody", "tr", "th", "td", "p", "b", "button", "footer", "script"}


class _Tags(HTMLParser):
    """Collects start tags and script elements the way a browser tokenizes them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.scripts: list[tuple[dict, str]] = []
        self._in_script: dict | None = None

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag == "script":
            self._in_script = dict(attrs)
            self.scripts.append((self._in_script, ""))

    def handle_data(self, data):
        if self._in_script is not None:
            attrs, text = self.scripts[-1]
            self.scripts[-1] = (attrs, text + data)

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = None


def _parse(doc: str) -> _Tags:
    p = _Tags()
    p.feed(doc)
    p.close()
    return p


@pytest.fixture(scope="module")
def report() -> dict:
    return sample_report()


@pytest.fixture(scope="module")
def doc(report) -> str:
    return render_html(report)


def test_hostile_text_is_escaped(doc, report):
    assert "<script>alert(1)" not in doc
    assert BREAKOUT not in doc and "<img" not in doc
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in doc  # shown literally, not dropped
    parsed = _parse(doc)
    assert {t for t, _ in parsed.tags} <= ALLOWED_TAGS
    assert not [a for t, a in parsed.tags if any(k.startswith("on") for k in a)]
    assert [a.get("type") for a, _ in parsed.scripts] == ["application/json", None, None]
    # the embedded data survives the escaping intact, U+2028 and all
    data = json.loads(parsed.scripts[0][1])
    assert data["traces"]["t-0006"]["error"].endswith(HOSTILE)
    assert "\u2028" in data["traces"]["t-0013"]["error"]
    assert data["waterfalls"] == {k: v for k, v in report["waterfalls"].items()}
    assert data["initial"] == report["failed"][0]["trace_id"]


def test_no_network_references(doc):
    lower = doc.lower()
    assert "<script src" not in lower and "<link" not in lower and "@import" not in lower
    assert "url(http" not in lower
    for attrs, _ in _parse(doc).scripts:
        assert "src" not in attrs
    assert get_plotlyjs() in doc  # plotly.js inlined, not fetched
    own = doc.replace(get_plotlyjs(), "")
    assert "http://" not in own and "https://" not in own
    assert "default-src 'none'" in own  # the page itself forbids network loads


@pytest.mark.parametrize("bad", [
    {},
    {"summary": None, "operations": "garbage", "waterfalls": [], "ingest": {"stats": [None, 3]}},
    {"summary": {"traces": 0, "by_outcome": {}, "throughput_rps": float("nan")}, "window": {"dur_s": float("inf")},
     "failed": [{"trace_id": "t-1", "dur_s": float("nan"), "error": "\udcff\x00"}], "waterfalls": {"t-1": None},
     "components": [{"operation": None, "component": 3}], "inputs": "not-a-list"},
])
def test_degenerate_reports_render(bad):
    doc = render_html(bad)
    assert doc.startswith("<!DOCTYPE html>") and doc.rstrip().endswith("</html>")
    doc.encode("utf-8")  # writable as UTF-8 even with lone surrogates in the input
    assert "none" in doc
    json.loads(_parse(doc).scripts[0][1])
    if not bad:
        for what in ("no operations", "no failed traces", "no errors", "no hosts", "no timeline"):
            assert f"none — {what}" in doc


def test_quarantine_count_is_stated(doc):
    assert "12 lines were quarantined" in doc


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_in_real_browser(tmp_path: Path, doc, report):
    page_file = tmp_path / "report.html"
    page_file.write_text(doc, encoding="utf-8")
    shot = tmp_path / "report.png"
    first_title = {}

    def actions(page):
        assert page.locator("#waterfall svg.main-svg").count() > 0
        assert page.locator("#waterfall .bars path").count() >= len(report["waterfalls"]["t-0006"])
        assert page.locator("#chart-latency svg.main-svg").count() > 0
        assert page.locator("#chart-timeline svg.main-svg").count() > 0
        assert page.locator(".modebar-btn[data-title^='Share']").count() == 0  # uploads to a cloud
        first = page.locator("#wf-title").inner_text()
        assert "t-0006" in first
        first_title["v"] = first
        page.locator("#failed-table tbody tr").nth(3).click()
        page.wait_for_function("!document.getElementById('wf-title').textContent.includes('t-0006')",
                               timeout=10_000)
        after = page.locator("#wf-title").inner_text()
        assert after != first and report["failed"][3]["trace_id"] in after
        assert page.locator("#failed-table tr.sel").count() == 1
        page.locator("#stat-buttons button[data-stat=p95]").click()

    out = open_report(page_file, actions, shot)
    errors, blocked, requested = out["errors"], out["blocked"], out["requested"]
    assert not errors, errors
    assert not blocked, f"page tried to reach the network: {blocked}"
    assert all(u.startswith(("file:", "data:", "blob:")) for u in requested), requested
    data = shot.read_bytes()
    width, height = _png_size(data)
    assert width >= 1000 and height >= 1500 and len(data) > 50_000
