"""The message model (``stacklens model messages``) on run folders built with known counts:
the fit recovers the terms, the held-out prediction matches, the interval holds the truth, and
what the runs cannot show (neutron fan-out) is named, never invented."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from stacklens.errors import UserError
from stacklens.forecast.messages import fit_line, fit_messages, holdout, run_counts
from stacklens.store import RunStore

T0 = 1_790_000_000 * 10**9
MIN_NS = 60 * 10**9


def _run(path: Path, nodes: int, boots: int, minutes: float, noise: float = 0.0,
         seed: int = 0) -> Path:
    """A run at ``nodes`` computes: per boot 1 select_destinations call + its reply, 1
    build_and_run_instance cast, 4 conductor calls + replies, and a fanout delivered to
    ``nodes`` receivers (a fan-out term); periodic: 2 update_available_resource calls per node
    per minute without a request id."""
    rng = random.Random(seed)
    rows: list[dict] = []
    traces, spans = [], []
    ts = T0

    def msg(direction: str, kind: str, method: str | None, req: str | None, mid: str | None):
        nonlocal ts
        ts += 1000
        rows.append({"ts_ns": ts, "direction": direction, "kind": kind, "method": method,
                     "request_id": req, "msg_id": mid, "exchange": "nova", "topic": "x",
                     "size_bytes": 500})

    for b in range(boots):
        req = f"req-{b:08d}-0000-0000-0000-000000000000"
        traces.append({"trace_id": f"t{b}", "request_id": req, "operation": "server.create",
                       "outcome": "success", "start_ns": T0, "end_ns": T0 + 10**9,
                       "dur_s": 1.0})
        spans.append({"trace_id": f"t{b}", "span_id": f"s{b}", "request_id": req,
                      "service": "nova-api", "host": "c", "start_ns": T0, "end_ns": T0 + 1})
        msg("publish", "call", "select_destinations", req, f"m{b}")
        msg("publish", "reply", None, None, f"m{b}")
        msg("publish", "cast", "build_and_run_instance", req, None)
        extra = 1 if noise and rng.random() < noise else 0
        for c in range(4 + extra):
            msg("publish", "call", "object_action", req, f"m{b}-{c}")
            msg("publish", "reply", None, None, f"m{b}-{c}")
        for _ in range(nodes):
            msg("deliver", "fanout", "update_instance_info", req, None)
    for _ in range(int(2 * nodes * minutes)):
        msg("publish", "call", "update_available_resource", None, None)
    rows[-1]["ts_ns"] = T0 + int(minutes * MIN_NS)
    rows[0]["ts_ns"] = T0
    store = RunStore(path)
    store.write({"messages": pl.DataFrame(rows), "traces": pl.DataFrame(traces),
                 "spans": pl.DataFrame(spans)})
    store.write_section("run", {"run_id": path.name, "lab": {"computes": nodes}})
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> list[Path]:
    base = tmp_path_factory.mktemp("msgmodel")
    return [_run(base / f"n{n}", n, boots=2 * n, minutes=2.0) for n in (2, 4, 8, 16)]


def test_counts_split_per_request_and_periodic(runs: list[Path]):
    c = run_counts(runs[1])  # 4 nodes, 8 boots, 2 minutes
    assert (c.nodes, c.boots) == (4, 8)
    assert c.per_request["publish call select_destinations"] == 8
    assert c.per_request["publish reply"] == 8 * 5  # replies follow their call's request
    assert c.per_request["deliver fanout update_instance_info"] == 8 * 4
    assert c.periodic == {"publish call update_available_resource": 16}
    assert abs(c.window_min - 2.0) < 1e-6


def test_fit_recovers_terms_and_holdout_is_exact(runs: list[Path]):
    m = fit_messages([run_counts(r) for r in runs])
    f = m.per_boot["deliver fanout update_instance_info"]
    assert abs(f.a) < 1e-9 and abs(f.b - 1.0) < 1e-9  # one message per node per boot
    c = m.per_boot["publish call object_action"]
    assert abs(c.a - 4.0) < 1e-9 and abs(c.b) < 1e-9
    p = m.periodic["publish call update_available_resource"]
    assert abs(p.b - 2.0) < 0.05  # 2 per node per minute
    v, _, _ = m.predict(600)["per_boot_total"]
    assert abs(v - (1 + 1 + 1 + 4 + 4 + 600)) < 1e-6
    rows = holdout([run_counts(r) for r in runs])
    assert rows[0]["metric"] == "messages per boot" and abs(rows[0]["error_pct"]) < 1e-6
    assert abs(rows[1]["error_pct"]) < 2.0
    assert any("L2 population" in x for x in m.missing)  # named, not invented


def test_interval_holds_the_truth_with_noise(tmp_path: Path):
    rs = [_run(tmp_path / f"n{n}", n, boots=20 * n, minutes=1.0, noise=0.3, seed=n)
          for n in (2, 4, 8, 16, 32)]
    rows = holdout([run_counts(r) for r in rs])
    top = rows[0]
    assert abs(top["error_pct"]) < 10.0
    assert top["low"] <= top["measured"] <= top["high"]


def test_constrained_line_never_negative():
    f = fit_line("k", [(2, 5.0), (4, 4.0), (8, 3.0)])  # falling: b clipped at 0
    assert f.b == 0.0 and f.a == pytest.approx(4.0)
    g = fit_line("k", [(2, 1.0), (4, 3.0), (8, 7.0)])  # a would be < 0
    assert g.a == 0.0 and g.b > 0


def test_user_errors(tmp_path: Path, runs: list[Path]):
    with pytest.raises(UserError, match="two node counts"):
        fit_messages([run_counts(runs[0])])
    with pytest.raises(UserError, match="three node counts"):
        holdout([run_counts(r) for r in runs[:2]])
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match="no broker capture"):
        run_counts(tmp_path / "empty")


def test_cli(runs: list[Path]):
    args = [sys.executable, "-m", "stacklens", "model", "messages", *map(str, runs)]
    r = subprocess.run([*args, "--nodes", "600", "--holdout", "--json"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["prediction"]["nodes"] == 600 and doc["holdout"][0]["metric"]
    r = subprocess.run([*args, "--nodes", "600", "--holdout"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0 and "held out" in r.stdout and "missing:" in r.stdout
    r = subprocess.run(args[:5] + [str(runs[0])], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and r.stderr.count("\n") == 1


def test_a_slope_within_its_noise_is_not_extrapolated():
    """Per-boot counts that wobble with N (23.9, 22.9, 22.2, 24.2, 24.0 at 2..32 nodes) give an
    OLS slope whose t statistic is small: the fit is their mean, and its interval at 600 nodes
    stays a mean's; a clear trend (5 + 2N with small noise) keeps its slope."""
    flat = fit_line("reply", [(2, 23.9), (4, 22.9), (8, 22.2), (16, 24.2), (32, 24.0)])
    assert not flat.linear and flat.b == 0.0
    assert abs(flat.a - 23.44) < 1e-9
    v, lo, hi = flat.predict(600)
    assert v == flat.a and lo is not None and hi is not None and hi - lo < 6
    trend = fit_line("fanout", [(2, 9.1), (4, 12.9), (8, 21.2), (16, 36.8), (32, 69.1)])
    assert trend.linear and 1.9 < trend.b < 2.1
