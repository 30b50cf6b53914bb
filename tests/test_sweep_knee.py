"""Knees on tables of repeats (pure, no clock): a saturating curve has its knee with a
bootstrap range; a straight line has "no knee in range"; the report carries both; every
sweep command has help."""

from __future__ import annotations

import subprocess
import sys

import polars as pl
import pytest

from stacklens.sweep.knee import find_knees, knee_of
from stacklens.sweep.report import build_report, render
from stacklens.sweep.tables import summarize


def _repeats(ys_by_x: dict[int, list[float]], rw: str = "randread") -> list[dict]:
    rows = []
    for x, ys in ys_by_x.items():
        for r, y in enumerate(ys):
            rows.append({"sweep": "s", "tool": "fio", "point": f"fio-{rw}-vms{x}", "repeat": r,
                         "n_targets": x, "rw": rw, "bs": "4k", "iodepth": 1, "numjobs": 1,
                         "protocol": None, "parallel": None, "reverse": None, "bs_bytes": 4096,
                         "status": "ok", "bw_mib_s": y, "iops": y * 256, "n_ok": x,
                         "lat_p99_us": 100.0 * x, "flags": None, "reason": None})
    return rows


def test_knee_table():
    assert knee_of([1, 2, 3, 4, 5, 6, 7, 8], [100, 190, 260, 300, 310, 312, 311, 313]) == 4
    assert knee_of([1, 2, 3, 4, 5, 6, 7, 8], [100 * x for x in range(1, 9)]) is None
    assert knee_of([1, 2], [1, 2]) is None


def _report() -> dict:
    """A saturating and a linear series, checked, as a report."""
    sat = _repeats({1: [100, 104, 98], 2: [195, 200, 190], 4: [380, 390, 370],
                    8: [400, 410, 395], 16: [405, 400, 398]})
    lin = _repeats({1: [100, 101, 99], 2: [200, 198, 202], 4: [400, 405, 395],
                    8: [800, 790, 810], 16: [1600, 1590, 1610]}, rw="randwrite")
    reps = pl.DataFrame(sat + lin)
    knees = {k.series["rw"]: k for k in find_knees(reps, axes=("n_targets",))}
    k = knees["randread"]
    assert k.knee == 4 and k.low is not None and k.low <= 4 <= k.high and k.share > 0.5
    assert k.after == "holds" and k.lat_p99_at_knee_us == 400.0
    assert knees["randwrite"].knee is None
    assert knees["randwrite"].text.startswith("no knee in range 1..16")
    # deterministic: the bootstrap has a fixed seed
    again = {k.series["rw"]: k for k in find_knees(reps, axes=("n_targets",))}
    assert (again["randread"].low, again["randread"].high) == (k.low, k.high)
    summ = summarize(sat + lin)
    assert summ.filter(pl.col("point") == "fio-randread-vms4")["bw_mib_s"].item() == 380
    tables = {"sweep_summary": summ, "sweep_repeats": reps}
    rep = build_report(tables, list(knees.values()))
    assert rep["overview"]["ok"] == 30 and len(rep["knees"]) == 2
    assert {m["workload"] for m in rep["max"]} == {"randread bs=4k", "randwrite bs=4k"}
    assert render(rep) is not None
    return rep


def test_saturating_and_linear_series():
    _report()


def test_html_page_loads_offline_without_errors(tmp_path):
    from browser import open_report

    from stacklens.sweep.html import html_page

    rep = _report()
    page = tmp_path / "report.html"
    page.write_text(html_page(rep), encoding="utf-8")
    seen = open_report(page, shot=tmp_path / "shot.png")
    assert seen["errors"] == [] and seen["blocked"] == []
    assert (tmp_path / "shot.png").stat().st_size > 10_000


@pytest.mark.parametrize("args", [["sweep", "--help"], ["sweep", "run", "--help"],
                                  ["sweep", "analyze", "--help"]])
def test_every_sweep_command_has_help(args):
    r = subprocess.run([sys.executable, "-m", "stacklens", *args], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0 and "Usage" in r.stdout
