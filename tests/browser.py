"""Open a report.html in Debian's Chromium (Playwright driving /usr/bin/chromium), with every
non-file request blocked; collect console errors, page errors and attempted network requests."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def open_report(page_file: Path, actions: Callable | None = None, shot: Path | None = None) -> dict:
    """Load ``page_file``, wait for ``window.stacklensReady``, run ``actions(page)``, screenshot.

    Returns ``{"errors": [...], "blocked": [...], "requested": [...]}``. Skips when Chromium or
    Playwright is missing. Every wait is bounded (30 s)."""
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} not installed (apt install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright python package not installed")
    out: dict[str, list[str]] = {"errors": [], "blocked": [], "requested": []}

    def route(r):
        if r.request.url.startswith(("file:", "data:", "blob:")):
            r.continue_()
        else:
            out["blocked"].append(r.request.url)
            r.abort()

    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS, timeout=30_000)
        try:
            page = browser.new_page(viewport={"width": 1440, "height": 1000})
            page.set_default_timeout(30_000)
            page.on("console", lambda m: out["errors"].append(f"console: {m.text}") if m.type == "error" else None)
            page.on("pageerror", lambda e: out["errors"].append(f"pageerror: {e}"))
            page.on("request", lambda req: out["requested"].append(req.url))
            page.route("**/*", route)
            page.goto(page_file.as_uri(), wait_until="load")
            page.wait_for_function("window.stacklensReady === true", timeout=30_000)
            if actions:
                actions(page)
            if shot:
                page.screenshot(path=str(shot), full_page=True, timeout=30_000)
        finally:
            browser.close()
    return out
