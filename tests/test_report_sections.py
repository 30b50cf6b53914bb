"""The declared report sections (stacklens.analyze.queries.SECTIONS): each SQL returns exactly
its declared columns, the report carries the declarations, building the report only reads, and a
section the renderers have no code for is still drawn from its declaration."""

from __future__ import annotations

import hashlib
import json
import shutil

import duckdb
import polars as pl
import pytest
from rich.console import Console

from stacklens.analyze.build import REPORT_FORMAT_VERSION, build_report, section_rows
from stacklens.analyze.queries import CLIENT_QUERIES, QUERIES, SECTIONS
from stacklens.analyze.section import Column, Section
from stacklens.analyze.sql import for_engine
from stacklens.errors import StoreError
from stacklens.report.html import render_html
from stacklens.report.terminal import render_terminal
from stacklens.schema import TABLES
from stacklens.store import RunStore


def _con_with_requests(store: RunStore) -> duckdb.DuckDBPyConnection:
    """The run's tables as views, plus an empty table of the declared schema for every table a
    section ``needs`` that the run lacks (``requests``, ``config_findings`` ...)."""
    con = duckdb.connect(":memory:")
    for pq in store.tables_dir.glob("*.parquet"):
        con.execute(f"CREATE VIEW {pq.stem} AS SELECT * FROM read_parquet('{pq}')")
    empty = pl.DataFrame(schema=TABLES["requests"])  # noqa: F841 - read by DuckDB by name
    con.execute("CREATE TABLE requests AS SELECT * FROM empty")
    for t in sorted({t for s in SECTIONS for t in s.needs} - {"requests"}):  # e.g. messages
        if not (store.tables_dir / f"{t}.parquet").exists():
            empty = pl.DataFrame(schema=TABLES[t])  # noqa: F841 - read by DuckDB by name
            con.execute(f"CREATE TABLE {t} AS SELECT * FROM empty")
    return con


def test_every_section_returns_its_declared_columns(devstack_run):
    store, _ = devstack_run
    con = _con_with_requests(store)
    for s in SECTIONS:
        cur = con.execute(s.sql)
        assert [d[0] for d in cur.description] == [c.name for c in s.columns], s.name


def test_every_section_transpiles_for_spark():
    assert set(QUERIES) | set(CLIENT_QUERIES) == {s.name for s in SECTIONS}
    for s in SECTIONS:
        assert for_engine(s.sql, "spark"), s.name


def test_report_declares_its_sections(devstack_run):
    _, report = devstack_run
    assert report["format_version"] == REPORT_FORMAT_VERSION == 2
    decl = report["sections"]
    assert [d["name"] for d in decl] == [s.name for s in SECTIONS]
    for d in decl:
        assert d["key"] in report and d["title"] and d["doc"]
        assert all(c["unit"] and c["doc"] and c["label"] for c in d["columns"])
    timeline = next(d for d in decl if d["name"] == "timeline")
    assert timeline["columns"][0] == {"name": "minute", "unit": "iso8601", "label": "minute",
                                      "doc": "the minute of request start (null for untimed logs)"}
    json.dumps(report)  # JSON as it is


def test_headline_figures_come_from_sql(devstack_run):
    store, report = devstack_run
    with store.connect() as con:
        s = section_rows(con, "summary")[0]
    done = s["success"] + s["retried"]
    assert s["throughput_rps"] == pytest.approx(done / s["window_s"])
    assert report["window"]["dur_s"] == s["window_s"]
    assert report["summary"]["throughput_rps"] == s["throughput_rps"]
    ops = {c["operation"] for c in report["components"]}
    heavy = sorted(report["operations"], key=lambda o: -(o["total_s"] or 0))[:15]
    assert ops <= {o["operation"] for o in heavy}


def _rounded(x: object) -> object:
    if isinstance(x, float):
        return float(f"{x:.9g}")
    if isinstance(x, dict):
        return {k: _rounded(v) for k, v in x.items()}
    return [_rounded(v) for v in x] if isinstance(x, list) else x


def test_building_the_report_only_reads(devstack_run, tmp_path):
    store, report = devstack_run
    copy = RunStore(tmp_path / "run")
    shutil.copytree(store.tables_dir, copy.tables_dir)
    shutil.copy(store.path / "manifest.json", copy.path / "manifest.json")

    def digest() -> str:
        h = hashlib.sha256()
        for p in sorted(copy.tables_dir.iterdir()):
            h.update(p.name.encode() + p.read_bytes())
        return h.hexdigest()

    before = digest()
    again = build_report(copy)
    assert digest() == before
    assert again.keys() == report.keys()
    for k in report:  # DuckDB sums in parallel: the last digits of a float may differ
        assert _rounded(again[k]) == _rounded(report[k]), k
    (copy.tables_dir / "error_templates.parquet").unlink()
    with pytest.raises(StoreError, match="error_templates"):
        build_report(copy)


def test_a_new_section_is_drawn_from_its_declaration():
    # what adding an analysis takes: a Section (SQL + columns); the renderers know nothing of it
    disk = Section("disk_waits", "Disk waits per host", "Time spent waiting on disks.",
                   "SELECT 'h1' AS host, 1.5 AS wait_s, 0.25 AS share",
                   (Column("host", "name", "host"), Column("wait_s", "s", "time waited", "wait"),
                    Column("share", "fraction", "part of all waits")))
    rows = section_rows(duckdb.connect(":memory:"), disk)
    report = {"sections": [disk.describe()], **disk.shape(rows)}
    assert report["disk_waits"] == [{"host": "h1", "wait_s": 1.5, "share": 0.25}]
    doc = render_html(report)
    assert "Disk waits per host" in doc and "1.50" in doc and "25.0%" in doc
    con = Console(record=True, width=100)
    for r in render_terminal(report):
        con.print(r)
    text = con.export_text()
    assert "Disk waits per host" in text and "1.500" in text and "25.0%" in text


def test_units_are_checked():
    with pytest.raises(ValueError):
        Column("x", "furlongs", "?")
    with pytest.raises(ValueError):
        Column("x", "s", "?", iso_key="y")
