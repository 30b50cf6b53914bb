"""The application workload with a real PostgreSQL and real pgbench: the server in one network
namespace (its own data folder, listening only on that namespace's TEST-NET address), pgbench
clients in two others started together; TPS/TPM per second next to /proc samples of every
target; a point against a closed port kept with its reason; a re-run skips finished points.
Namespace tests need root, ip, postgresql and pgbench (skip with the reason)."""

from __future__ import annotations

import asyncio
import json
import os

import polars as pl
import pytest

from stacklens.sweep import finish, parse_plan, run_sweep
from stacklens.sweep.app import parse_pgbench, parse_samples, proc_rates, rates
from stacklens.sweep.app_run import APP_JOURNAL
from stacklens.sweep.netlab import NetLab, netlab_unavailable
from stacklens.sweep.pg import PgServer, pg_unavailable

OUT = """\
number of transactions actually processed: 4434
number of failed transactions: 0 (0.000%)
latency average = 0.901 ms
tps = 2216.520123 (without initial connection time)
"""
ERR = """\
SL_START 1795500000000000000
progress: 1.0 s, 2295.4 tps, lat 0.866 ms stddev 0.533, 0 failed
progress: 2.0 s, 2132.9 tps, lat 0.935 ms stddev 0.677, 0 failed
"""
SAMPLES = """\
S 1000000000
cpu  100 0 100 700 100 0 0 0 0 0
D 1000 2000
  eth0: 1000 10 0 0 0 0 0 0 500 5 0 0 0 0 0 0
    lo: 999 1 0 0 0 0 0 0 999 1 0 0 0 0 0 0
S 3000000000
cpu  200 0 200 1300 100 0 0 0 0 0
D 5096 2000
  eth0: 251000 10 0 0 0 0 0 0 125500 5 0 0 0 0 0 0
    lo: 5000 1 0 0 0 0 0 0 5000 1 0 0 0 0 0 0
"""


def test_pgbench_output_and_samples_table():
    r = parse_pgbench(OUT, ERR)
    assert r.tps == pytest.approx(2216.520123) and r.tpm == pytest.approx(2216.520123 * 60)
    assert (r.xacts, r.failed, r.lat_mean_ms) == (4434, 0, 0.901)
    assert r.series == ((1.0, 2295.4, 0.866), (2.0, 2132.9, 0.935))
    assert parse_pgbench("", "connection refused").error == "no tps in pgbench output"
    s = parse_samples(SAMPLES)
    assert len(s) == 2
    (row,) = rates(s, 1_000_000_000)
    # 2 s: cpu busy 200 of 800 ticks; 4096 sectors read = 2 MiB; eth0 250000 B in, 125000 out
    assert row["t_s"] == 2.0 and row["cpu_pct"] == pytest.approx(25.0)
    assert row["disk_read_mib_s"] == pytest.approx(1.0) and row["disk_write_mib_s"] == 0
    assert row["net_rx_mbit_s"] == pytest.approx(1.0) and row["net_tx_mbit_s"] == 0.5


def test_proc_rates_count_reaped_children_once():
    # postmaster 10 (parent 1, unwatched), backend 11 lives 0..1.5 s, pgbench 20 ends
    text = ("S 0\n10 1 1.0 0.0 postgres\n20 1 0.0 0.0 pgbench\n"
            "S 1000000000\n10 1 1.1 0.0 postgres\n11 10 0.4 0.0 postgres\n"
            "20 1 0.3 0.0 pgbench\n"
            "S 2000000000\n10 1 1.2 0.6 postgres\n")
    (t1, c1, n1), (t2, c2, n2) = proc_rates(text, 0)
    # second 1: 0.1 postmaster + 0.4 new backend + 0.3 pgbench; second 2: 0.1 postmaster +
    # 0.6 reaped backend - 0.4 counted before (pgbench's last part is lost: unwatched parent)
    assert (t1, n1, n2) == (1.0, 3, 1)
    assert c1 == pytest.approx(80.0) and c2 == pytest.approx(30.0)


WHY = netlab_unavailable() or pg_unavailable()


@pytest.fixture(scope="module")
def lab():
    if WHY:
        pytest.skip(WHY)
    with NetLab(3) as lab, PgServer(lab.addresses[0], lab.hosts[0]) as pg:
        yield lab, pg


def _plan(lab: NetLab, port: int, name: str = "pg") -> str:
    t = "\n".join(f"  - {{name: h{i}, netns: {ns}, address: {a}}}"
                  for i, (ns, a) in enumerate(zip(lab.hosts, lab.addresses, strict=True)))
    return f"""name: {name}
lead_s: 0.5
targets:
{t}
pgbench:
  server: h0
  clients: [h1, h2]
  vms: [1, 2]
  connections: [2]
  time_s: 2
  scale: 1
  port: {port}
  repeats: 2
"""


def test_pgbench_sweep_between_namespaces(lab, tmp_path):
    netlab, pg = lab
    plan = parse_plan(_plan(netlab, pg.port))
    out = tmp_path / "s"
    res = asyncio.run(run_sweep(plan, out))
    assert len(res.app) == 4
    rep = finish(out, res.runs, meta={}, base=out, probes=res.probes, app=res.app)
    app = pl.read_parquet(out / "tables" / "sweep_app.parquet")
    assert app.height == 6 and set(app["status"]) == {"ok"}, app["reason"].to_list()
    assert (app["tps"] > 50).all() and (app["tpm"] == app["tps"] * 60).all()
    reps = pl.read_parquet(out / "tables" / "sweep_app_repeats.parquet")
    two = reps.filter(pl.col("n_targets") == 2)
    # the sum over the two clients, each read from its own raw file
    for r in two.iter_rows(named=True):
        mine = app.filter((pl.col("point") == r["point"]) & (pl.col("repeat") == r["repeat"]))
        assert r["tps"] == pytest.approx(mine["tps"].sum()) and r["n_ok"] == 2
    series = pl.read_parquet(out / "tables" / "sweep_app_series.parquet")
    # --progress=1 over -T 2: one or two lines per client run (the last second may end first)
    assert series.group_by("point", "repeat", "target").len().height == 6
    assert series.height >= 6 and (series["tps"] > 0).all()
    res_t = pl.read_parquet(out / "tables" / "sweep_resources.parquet")
    assert set(res_t["target"]) == {"h0", "h1", "h2"}
    assert (res_t["cpu_pct"].is_between(0, 100)).all()
    # the server's namespace received the clients' queries: its eth0 saw traffic
    srv = res_t.filter((pl.col("target") == "h0") & (pl.col("t_s") <= 2.0))
    assert srv["net_rx_mbit_s"].max() > 0.1
    # psutil: the postgres processes of the server's namespace worked, per namespace
    assert srv["proc_cpu_pct"].max() > 1 and srv["n_procs"].min() >= 1
    assert srv["proc_cpu_pct"].max() < 100 * (os.cpu_count() or 1) + 20
    assert [r["n_ok"] for r in rep["app"]] == [2, 2] and rep["app"][1]["tps"] > 0
    assert reps["cpu_pct_mean"].null_count() == 0  # every repeat: /proc during the run
    assert reps["cpu_pct_mean"].is_between(0, 100).all()
    from rich.console import Console

    from stacklens.sweep.report import render

    with Console(width=160, record=True, file=open("/dev/null", "w")) as con:  # noqa: SIM115
        con.print(render(rep))
    assert "pgbench-c2-vms2" in con.export_text()
    # the barrier: both clients of a point started within 100 ms
    for _, g in app.filter(pl.col("n_targets") == 2).group_by("point", "repeat"):
        assert (g["start_ns"].max() - g["start_ns"].min()) / 1e6 < 100
    # resumable: a re-run runs nothing and keeps the journal
    lines = (out / APP_JOURNAL).read_text().splitlines()
    again = asyncio.run(run_sweep(plan, out))
    assert (out / APP_JOURNAL).read_text().splitlines() == lines and len(again.app) == 4


def test_closed_port_is_kept_with_reason(lab, tmp_path):
    netlab, pg = lab
    text = _plan(netlab, pg.port + 1, "closed").replace("vms: [1, 2]", "vms: [1]").replace(
        "repeats: 2", "repeats: 1")
    out = tmp_path / "c"
    res = asyncio.run(run_sweep(parse_plan(text), out))
    rep = finish(out, res.runs, meta={}, base=out, probes=res.probes, app=res.app)
    (row,) = [json.loads(x) for x in (out / APP_JOURNAL).read_text().splitlines()]
    assert row["targets"][0]["status"] == "failed"
    assert "pgbench -i failed" in row["targets"][0]["reason"]
    assert rep["app"][0]["n_failed"] == 1 and rep["app_failed"][0]["reason"]


def test_pgbench_plan_errors_name_the_line():
    from stacklens.sweep.plan import PlanError

    text = ("targets: [{name: a, local: true}]\npgbench:\n  server: a\n  clients: [a]\n"
            "  vms: [2]\n")
    with pytest.raises(PlanError, match=r"^p.yaml:5: pgbench.vms: 2 clients asked, 1 given"):
        parse_plan(text, "p.yaml")
    with pytest.raises(PlanError, match=r"^p.yaml:3: pgbench.server: unknown target 'zz'"):
        parse_plan(text.replace("server: a", "server: zz"), "p.yaml")
