"""The real entry point as a subprocess: exit codes, stderr, the run folder it leaves."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from conftest import DEVSTACK, need

import stacklens

BOOT = """\
2026-01-10 10:00:00.500 100 INFO nova.osapi_compute.wsgi.server [req-11111111-1111-1111-1111-111111111111 u p] 10.0.0.1 "POST /v2.1/servers HTTP/1.1" status: 202 len: 10 time: 0.5000000
2026-01-10 10:00:00.400 100 DEBUG oslo_messaging._drivers.amqpdriver [req-11111111-1111-1111-1111-111111111111 u p] CAST unique_id: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa exchange 'nova' topic 'conductor' _send /x/amqpdriver.py:1
2026-01-10 10:00:00.200 100 INFO nova.api.openstack.wsgi [req-22222222-2222-2222-2222-222222222222 u p] X-Auth-Token: secret-token-value password=hunter2
"""
COND = """\
2026-01-10 10:00:00.410 200 DEBUG oslo_messaging._drivers.amqpdriver [-] received message with unique_id: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa __call__ /x/amqpdriver.py:2
2026-01-10 10:00:00.450 200 DEBUG oslo_messaging._drivers.amqpdriver [req-11111111-1111-1111-1111-111111111111 u p] CAST unique_id: bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb exchange 'nova' topic 'compute' _send /x/amqpdriver.py:3
garbage \x00\x01 line
"""
CPU = """\
2026-01-10 10:00:00.460 300 DEBUG oslo_messaging._drivers.amqpdriver [-] received message with unique_id: bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb __call__ /x/amqpdriver.py:2
2026-01-10 10:00:03.000 300 INFO nova.compute.manager [req-11111111-1111-1111-1111-111111111111 u p] [instance: 33333333-3333-3333-3333-333333333333] Took 2.54 seconds to build instance.
"""


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", "from stacklens.cli import main; main()", *args],
        capture_output=True, text=True, timeout=300, cwd=cwd,
    )


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    d = tmp_path / "logs" / "ctl1" / "var" / "log" / "nova"
    d.mkdir(parents=True)
    (d / "nova-api.log").write_text(BOOT)
    (d / "nova-conductor.log").write_bytes(COND.encode().replace(b"\\x00\\x01", b"\x00\x01"))
    (d / "nova-compute.log").write_text(CPU)
    return tmp_path / "logs"


def test_version_and_help():
    r = run("--version")
    assert r.returncode == 0 and r.stdout.strip() == stacklens.__version__
    for cmd in ("analyze", "ingest", "trace", "report", "run", "cleanup", "collect", "lab"):
        r = run(cmd, "--help")
        assert r.returncode == 0, r.stderr
        assert "Usage" in r.stdout


def test_a_subcommand_imports_only_its_module():
    """main() builds the app with the named subcommand alone (the others' imports cost ~0.8 s
    of every start); the whole app, with every subcommand, is what --help lists."""
    from stacklens.cli import _COMMANDS, app

    names = [c.name for c in app.registered_commands] + [g.name for g in app.registered_groups]
    assert sorted(names) == sorted(_COMMANDS)
    code = ("import sys; sys.argv = ['stacklens', 'ingest', '--help']\n"
            "from stacklens.cli import main\n"
            "try:\n    main()\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
            "print(sorted(m for m in sys.modules if m.startswith('stacklens.cli.')))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    loaded = r.stdout.strip().splitlines()[-1]
    assert "stacklens.cli.ingest_cmd" in loaded and "Usage" in r.stdout
    for other in ("forecast_cmd", "sweep_cmd", "capacity_cmd", "lab_cmd", "broker_cmd"):
        assert f"stacklens.cli.{other}" not in loaded
    help_all = run("--help").stdout
    assert all(name in help_all for name in _COMMANDS)


def test_missing_path_is_a_user_error(tmp_path: Path):
    r = run("analyze", str(tmp_path / "nope"), "--out", str(tmp_path / "run"))
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("stacklens: error: no such file")


def test_no_logs_is_a_user_error(tmp_path: Path):
    (tmp_path / "notes.txt").write_text("hello\nworld\n")
    r = run("ingest", str(tmp_path), "--out", str(tmp_path / "run"))
    assert r.returncode == 1 and "no OpenStack log records" in r.stderr


def test_bad_option_is_usage(tmp_path: Path):
    assert run("analyze", "--no-such-flag").returncode == 2


def test_report_before_trace_is_a_user_error(tmp_path: Path):
    # an existing folder without tables (a missing folder says so: tests/test_cli_friction.py)
    (tmp_path / "empty").mkdir()
    r = run("report", str(tmp_path / "empty"))
    assert r.returncode == 1 and "stacklens ingest" in r.stderr


def test_stages_replay_alone_and_match_analyze(logs: Path, tmp_path: Path):
    a, b = tmp_path / "a", tmp_path / "b"
    r = run("analyze", str(logs), "--out", str(a), "--json")
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert run("ingest", str(logs), "--out", str(b)).returncode == 0
    assert run("trace", str(b)).returncode == 0
    r2 = run("report", str(b), "--json")
    assert r2.returncode == 0, r2.stderr
    rep2 = json.loads(r2.stdout)
    assert rep["summary"] == rep2["summary"]
    assert rep["summary"]["by_outcome"]["success"] == 1
    op = rep["operations"][0]
    assert op["operation"] == "server.create" and op["count"] == 1
    # the boot spans api -> conductor -> compute, linked through the RPC receipts
    wf = rep["waterfalls"]["req-11111111-1111-1111-1111-111111111111"]
    assert [s["service"] for s in wf] == ["nova-api", "nova-conductor", "nova-compute"]
    assert rep["ingest"]["quarantined"] == 1
    assert (a / "report.html").stat().st_size > 100_000
    assert (a / "stacklens.duckdb").exists() and (a / "tables" / "events.parquet").exists()
    # secrets never reach the store
    for f in (a / "tables").glob("*.parquet"):
        text = pl.read_parquet(f).write_csv()
        assert "hunter2" not in text and "secret-token-value" not in text, f.name


def test_analyze_real_devstack_job(tmp_path: Path):
    need(DEVSTACK)
    r = run("analyze", str(DEVSTACK), "--out", str(tmp_path / "run"))
    assert r.returncode == 0, r.stderr
    assert "server.create" in r.stdout or "Operations" in r.stdout
    assert (tmp_path / "run" / "report.html").exists()


def _jemalloc_options(prelude: str) -> str:
    """What Polars' jemalloc prints of its options at exit (``stats_print``) after ``prelude``
    and a Polars query, in a fresh interpreter without ``_RJEM_MALLOC_CONF``."""
    env = {k: v for k, v in os.environ.items() if k != "_RJEM_MALLOC_CONF"}
    code = (f"{prelude}; import os; os.environ['_RJEM_MALLOC_CONF'] += ',stats_print:true'; "
            "import polars as pl; pl.DataFrame({'a': range(10)}).sum()")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout + out.stderr


def test_cli_sets_polars_allocator_decay_before_polars_loads():
    """The CLI's jemalloc decay (stacklens.cli._alloc) reaches Polars' allocator, and a value
    already in the environment is kept (here Polars' own defaults come back)."""
    text = _jemalloc_options("import stacklens.cli, sys; assert 'polars' not in sys.modules")
    assert "opt.dirty_decay_ms: 3000 " in text and "opt.muzzy_decay_ms: 0 " in text, text[:2000]
    text = _jemalloc_options("import os; os.environ['_RJEM_MALLOC_CONF'] = 'narenas:2'; "
                             "import stacklens.cli")
    assert "opt.dirty_decay_ms: 500 " in text, text[:2000]
