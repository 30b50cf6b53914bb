"""Operator friction on the README path (issue 7): 80-column terminals, a non-empty --out, a
moved run folder, a missing run folder, ``stacklens sql``, progress lines when not a TTY. Every
test runs the real entry point as a subprocess."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_cli import logs  # noqa: F401  (fixture: a three-service boot on one host)

from stacklens.report.terminal import shorten


def cli(*args: str, cwd: Path | None = None, columns: int | None = None,
        ) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    if columns:
        env["COLUMNS"] = str(columns)
    return subprocess.run([sys.executable, "-m", "stacklens", *args], capture_output=True,
                          text=True, timeout=300, cwd=cwd, env=env)


@pytest.fixture
def analyzed(tmp_path: Path, logs: Path) -> Path:  # noqa: F811
    out = tmp_path / "run"
    r = cli("analyze", str(logs), "--out", str(out))
    assert r.returncode == 0, r.stderr
    return out


def test_shorten_keeps_both_ends():
    assert shorten("server.create") == "server.create"
    s = shorten("GET /v2.1/os-availability-zone/detail/and/more", 22)
    assert len(s) == 22 and s.startswith("GET /v2.1/") and s.endswith("more") and "…" in s


_NUM_OR_ID = re.compile(r"(?:req-)?[0-9a-f]{8}-[0-9a-f-]{27}|\d+\.\d+")


def test_report_at_80_columns_never_splits_numbers_or_ids(analyzed: Path):
    r = cli("report", str(analyzed), columns=80)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines and all(len(ln) <= 80 for ln in lines), [ln for ln in lines if len(ln) > 80]
    full = {m for m in _NUM_OR_ID.findall(json.dumps(json.loads(
        (analyzed / "report.json").read_text())))}
    # every request id and decimal the terminal shows is whole (never cut at the line end)
    shown = {m for ln in lines for m in _NUM_OR_ID.findall(ln)}
    ids = {m for m in shown if m.startswith("req-")}
    assert ids <= full
    assert "Operations" in r.stdout and "server.create" in r.stdout


def test_out_folder_not_empty_needs_force(analyzed: Path, logs: Path):  # noqa: F811
    (analyzed / "notes.txt").write_text("mine")
    r = cli("analyze", str(logs), "--out", str(analyzed))
    assert r.returncode == 1
    assert "not empty" in r.stderr and "--force" in r.stderr and "Traceback" not in r.stderr
    r = cli("analyze", str(logs), "--out", str(analyzed), "--force")
    assert r.returncode == 0, r.stderr
    assert (analyzed / "notes.txt").read_text() == "mine"  # --force removes only stacklens files


def test_run_folder_can_be_moved(analyzed: Path, tmp_path: Path):
    moved = tmp_path / "elsewhere" / "run2"
    moved.parent.mkdir()
    shutil.move(str(analyzed), str(moved))
    assert str(analyzed).encode() not in (moved / "stacklens.duckdb").read_bytes()
    r = cli("sql", str(moved), "SELECT count(*) AS n FROM traces", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)[0]["n"] >= 1
    assert cli("report", str(moved)).returncode == 0
    # DuckDB opened inside the folder resolves the views' relative paths by itself
    code = ("import duckdb; c = duckdb.connect('stacklens.duckdb', read_only=True); "
            "print(c.execute('SELECT count(*) FROM events').fetchone()[0])")
    p = subprocess.run([sys.executable, "-c", code], cwd=moved, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0 and int(p.stdout) > 0, p.stderr


def test_missing_run_folder_is_one_line(tmp_path: Path):
    for args in (("report", str(tmp_path / "nope")), ("sql", str(tmp_path / "nope"), "SELECT 1")):
        r = cli(*args)
        assert r.returncode == 1
        assert "does not exist" in r.stderr and "Traceback" not in r.stderr


def test_sql_errors_and_table(analyzed: Path):
    r = cli("sql", str(analyzed), "SELEC 1")
    assert r.returncode == 1 and "query failed" in r.stderr and "Traceback" not in r.stderr
    r = cli("sql", str(analyzed), "SELECT outcome, count(*) AS n FROM traces GROUP BY 1")
    assert r.returncode == 0 and "outcome" in r.stdout


def test_progress_lines_when_not_a_tty(analyzed: Path, logs: Path):  # noqa: F811
    from stacklens.cli._render import Ticker

    t = Ticker("ingest", quiet=False, every_s=0.0)
    assert t.on  # stderr is a pipe under pytest
    q = Ticker("ingest", quiet=True)
    assert not q.on


def test_reading_a_run_never_writes_into_it(analyzed: Path):
    import hashlib

    def digest() -> str:
        return hashlib.sha256((analyzed / "stacklens.duckdb").read_bytes()).hexdigest()

    before = digest()
    assert cli("sql", str(analyzed), "SELECT count(*) FROM spans").returncode == 0
    assert digest() == before


def test_force_with_a_missing_input_keeps_the_run(analyzed: Path, tmp_path: Path):
    r = cli("analyze", str(tmp_path / "no-such-logs"), "--out", str(analyzed), "--force")
    assert r.returncode == 1 and "no such file" in r.stderr
    assert (analyzed / "tables" / "traces.parquet").exists()
