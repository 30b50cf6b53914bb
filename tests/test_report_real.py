"""report.html of the real devstack-gate job opens in headless Chromium without errors."""

from __future__ import annotations

from pathlib import Path

from browser import open_report

from stacklens.report.html import render_html


def test_real_report_opens_in_chromium(devstack_run, tmp_path: Path):
    store, report = devstack_run
    page_file = tmp_path / "report.html"
    page_file.write_text(render_html(report), encoding="utf-8")
    shot = tmp_path / "report.png"
    seen = {}

    def actions(page):
        seen["bars"] = page.locator("#waterfall .bars path").count()
        seen["title"] = page.locator("#wf-title").inner_text()
        page.locator("#slowest-table tbody tr").nth(0).click()
        seen["after"] = page.locator("#wf-title").inner_text()

    out = open_report(page_file, actions, shot)
    assert not out["errors"], out["errors"]
    assert not out["blocked"], out["blocked"]
    assert seen["bars"] >= 1
    assert report["slowest"][0]["trace_id"] in seen["after"]
    assert shot.stat().st_size > 50_000
