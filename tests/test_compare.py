"""``stacklens compare`` end to end: synthetic clouds analyzed by the real CLI, compared by the
real CLI (subprocess: exit codes and stderr), and the statistics against references."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from conftest import DEVSTACK, need
from synth_nova import CPU, LV, Cloud, rid, uid

from stacklens.compare.stats import bootstrap_ratio_ci, mann_whitney, percentile

ROOT = Path(__file__).resolve().parents[1]
N_BOOTS = 40


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "stacklens", *map(str, args)],
                          capture_output=True, text=True, env=_env(), timeout=300)


def boots(root: Path, scale: float, fail_every: int = 0) -> Path:
    """``N_BOOTS`` server creates on a 2025.1 cloud, one a second; build time of boot ``i`` is
    ``scale * (3.0 + (37 i mod 20) / 10)`` s (a fixed spread); every ``fail_every``-th boot
    fails with No valid host."""
    c = Cloud("2025.1")
    for i in range(1, N_BOOTS + 1):
        t = float(i)
        c.api(t + 0.2, rid(i), "POST", "/v2.1/servers", 202, dur_s=0.2)
        if fail_every and i % fail_every == 0:
            c.log("ctl", "nova-conductor", t + 0.4, "ERROR", "nova.conductor.manager", rid(i),
                  "Failed to schedule instances: nova.exception.NoValidHost: No valid host "
                  "was found. ", uid(i))
            continue
        build = scale * (3.0 + (37 * i % 20) / 10)
        c.log("cpu1", "nova-compute", t + 0.5, "INFO", CPU, rid(i), "Starting instance...", uid(i))
        c.log("cpu1", "nova-compute", t + 0.5 + build - 0.2, "INFO", LV, None,
              "Instance spawned successfully.", uid(i))
        c.log("cpu1", "nova-compute", t + 0.5 + build, "INFO", CPU, rid(i),
              f"Took {build:.2f} seconds to build instance.", uid(i))
    return c.write(root)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("compare")
    out = {}
    for name, scale in (("a", 1.0), ("a_again", 1.0), ("slow", 2.0), ("fast", 0.5)):
        logs = boots(base / f"logs-{name}", scale)
        p = cli("analyze", logs, "--out", base / name)
        assert p.returncode == 0, p.stderr
        out[name] = base / name
    return out


def test_identical_runs_say_no_significant_change(runs):
    p = cli("compare", runs["a"], runs["a_again"], "--json")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    create = next(o for o in r["operations"] if o["operation"] == "server.create")
    assert create["stats"][0]["n"] == N_BOOTS
    ch = create["changes"][0]
    assert ch["verdict"] == "no significant change" and not ch["significant"]
    assert ch["ratio"] == 1.0 and ch["ci"][0] <= 1.0 <= ch["ci"][1]
    assert r["regressions"] == []
    text = cli("compare", runs["a"], runs["a_again"])
    assert text.returncode == 0 and "No significant regression" in text.stdout


def test_slowed_run_is_a_significant_regression_exit_3(runs, tmp_path):
    html = tmp_path / "cmp.html"
    seen_svg: list[int] = []
    p = cli("compare", runs["a"], runs["slow"], "--json", "--html", html)
    assert p.returncode == 3, p.stderr
    assert "significant regression" in p.stderr and p.stderr.count("\n") == 1
    r = json.loads(p.stdout)
    ch = next(o for o in r["operations"] if o["operation"] == "server.create")["changes"][0]
    assert ch["significant"] and ch["regression"] and ch["verdict"].endswith("x slower, significant")
    assert 1.8 < ch["ratio"] < 2.1 and ch["ci"][0] > 1.0 and ch["p_value"] < 1e-6
    comp = next(c for c in r["components"]
                if c["operation"] == "server.create" and c["component"] == "nova-compute")
    assert comp["changes"][0]["verdict"].endswith("x slower, significant")
    page = html.read_text()
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert "src=\"http" not in page and "x slower, significant" in page
    # the page in a real browser: no network, no script error, the chart drawn
    from browser import open_report

    seen = open_report(html, actions=lambda page: seen_svg.append(
        page.locator("#chart svg.main-svg").count()))
    assert seen["errors"] == [] and seen["blocked"] == [] and seen_svg[0] >= 1
    # a threshold above the slowdown: still significant, no longer a regression
    assert cli("compare", runs["a"], runs["slow"], "--threshold", "1.5").returncode == 0


def test_faster_run_and_three_runs(runs):
    p = cli("compare", runs["a"], runs["fast"], runs["a_again"], "--json")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    changes = next(o for o in r["operations"] if o["operation"] == "server.create")["changes"]
    assert [c["run"] for c in changes] == ["fast", "a_again"]
    assert changes[0]["verdict"].endswith("x faster, significant")
    assert changes[1]["verdict"] == "no significant change"


def test_failure_rate_change(tmp_path, runs):
    logs = boots(tmp_path / "logs", 1.0, fail_every=4)
    assert cli("analyze", logs, "--out", tmp_path / "failing").returncode == 0
    p = cli("compare", runs["a"], tmp_path / "failing", "--json")
    r = json.loads(p.stdout)
    rates = {row["metric"]: row for row in r["summary"]}
    assert rates["success_rate"]["values"] == [1.0, 0.75]
    assert rates["failure_rate"]["values"] == [0.0, 0.25]
    ch = rates["success_rate"]["changes"][0]
    assert ch["significant"] and ch["regression"] and p.returncode == 3


def test_rates_match_the_report_on_real_logs(devstack_run):
    need(DEVSTACK)
    from stacklens.compare import compare_runs, load_run

    store, report = devstack_run
    r = compare_runs([load_run(store.path, "x"), load_run(store.path, "y")])
    s = {row["metric"]: row["values"][0] for row in r["summary"]}
    assert s["requests"] == report["summary"]["traces"]
    assert s["success_rate"] == pytest.approx(report["summary"]["success_rate"], abs=1e-4)
    assert s["failure_rate"] == pytest.approx(report["summary"]["failure_rate"], abs=1e-4)
    assert all(c["verdict"] in ("no significant change", "no change (both medians 0 s)")
               for o in r["operations"] + r["components"] for c in o["changes"])


@pytest.mark.parametrize("q", [0.0, 0.5, 0.95, 0.99, 1.0])
def test_percentile_is_percentile_cont(q):
    xs = [0.3, 1.7, 0.2, 5.0, 2.2, 2.2, 9.1, 0.05, 3.3, 4.4, 7.0]
    con = duckdb.connect()
    want = con.execute(f"SELECT percentile_cont({q}) WITHIN GROUP (ORDER BY x) FROM "
                       f"unnest({xs}::DOUBLE[]) t(x)").fetchone()[0]
    assert percentile(xs, q) == pytest.approx(want)
    assert percentile([], q) is None


def test_mann_whitney_matches_scipy_and_bootstrap_is_seeded():
    stats = pytest.importorskip("scipy.stats")
    a = [round(1 + (i * 7919 % 97) / 50, 1) for i in range(60)]
    b = [round(1.2 + (i * 104729 % 89) / 45, 1) for i in range(45)]
    u, p = mann_whitney(a, b)
    ref = stats.mannwhitneyu(a, b, method="asymptotic")
    assert u == pytest.approx(ref.statistic) and p == pytest.approx(ref.pvalue)
    assert mann_whitney([1, 2], [3, 4, 5]) == (pytest.approx(float("nan"), nan_ok=True), 1.0)
    assert bootstrap_ratio_ci(a, b) == bootstrap_ratio_ci(a, b)
    lo, hi = bootstrap_ratio_ci(a, [2 * x for x in a])  # type: ignore[misc]
    assert 1.5 < lo <= 2.0 <= hi < 2.5


def test_compare_user_errors(runs, tmp_path):
    p = cli("compare", runs["a"])
    assert p.returncode == 1 and "at least two" in p.stderr
    p = cli("compare", runs["a"], tmp_path / "nope")
    assert p.returncode == 1 and "does not exist" in p.stderr
    (tmp_path / "empty").mkdir()
    p = cli("compare", runs["a"], tmp_path / "empty")
    assert p.returncode == 1 and "neither a traces nor a requests table" in p.stderr


def test_config_diff_beside_the_verdict(runs, tmp_path):
    """Two runs that differ in one scheduler option: the slowdown and the option, side by side."""
    import shutil

    for name, subset in (("a", 1), ("slow", 10)):
        shutil.copytree(runs[name], tmp_path / name)
        (tmp_path / name / "config").mkdir()
        (tmp_path / name / "config" / "nova.conf").write_text(
            "[DEFAULT]\ndebug = True\n[filter_scheduler]\n"
            f"host_subset_size = {subset}\n[database]\nmax_pool_size = 5\n")
    p = cli("compare", tmp_path / "a", tmp_path / "slow")
    assert p.returncode == 3
    assert "What differs between the runs" in p.stdout
    line = next(x for x in p.stdout.splitlines() if "host_subset_size" in x)
    assert "1" in line and "10" in line and "max_pool_size" not in p.stdout
    r = json.loads(cli("compare", tmp_path / "a", tmp_path / "slow", "--json").stdout)
    meta = {m["key"]: m for m in r["metadata"]}
    assert meta["config:nova.conf [filter_scheduler] host_subset_size"]["values"] == ["1", "10"]
    assert meta["config:nova.conf [filter_scheduler] host_subset_size"]["differs"]
    assert not meta["config:nova.conf [database] max_pool_size"]["differs"]


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_floats = st.lists(st.floats(0.001, 1e4, allow_nan=False), min_size=1, max_size=60)


@settings(max_examples=80, deadline=None)
@given(_floats, st.floats(0.0, 1.0))
def test_percentile_matches_numpy_linear(xs, q):
    import numpy as np

    assert percentile(xs, q) == pytest.approx(float(np.percentile(xs, q * 100)), rel=1e-9)


@settings(max_examples=40, deadline=None)
@given(_floats, _floats)
def test_change_is_antisymmetric_in_words(a, b):
    from stacklens.compare.model import duration_change

    ab, ba = duration_change(a, b, 0.1), duration_change(b, a, 0.1)
    assert ab["p_value"] == pytest.approx(ba["p_value"])  # the test is symmetric
    if ab["significant"] and ba["significant"]:  # (the two bootstraps draw differently)
        assert ("slower" in ab["verdict"]) == ("faster" in ba["verdict"])
    assert duration_change(a, a, 0.1)["verdict"] in ("no significant change",
                                                     "no change (both medians 0 s)")
