"""Clock-skew correction (:mod:`stacklens.trace.skew`): synthetic hosts with known clock errors,
infeasible constraints, hosts without evidence, and shift-and-recover on the real osp7 logs."""

from __future__ import annotations

import random

import polars as pl
import pytest
from conftest import DATA, need

from stacklens.schema import conform
from stacklens.trace.skew import (
    CONSTRAINTS,
    apply_offsets,
    causal_constraints,
    estimate_offsets,
)

OSP7 = DATA / "oslo-logs" / "oslogmerger-osp7-router"
MS = 1_000_000


def events(rows: list[dict]) -> pl.DataFrame:
    """Canonical events from a few columns per row."""
    return conform(pl.DataFrame(rows, infer_schema_length=None), "events")


def local_ns(true_s: float, offset_s: float) -> int:
    """What a host whose clock needs ``offset_s`` added logs at true time ``true_s``: its
    reading, truncated to the millisecond as oslo.log does."""
    return int((true_s - offset_s) * 1000) * MS


def rpc_traffic(offsets: dict[str, float], n: int, seed: int = 7) -> pl.DataFrame:
    """``n`` RPC calls with replies between random pairs of hosts, 1-30 ms per hop."""
    rng = random.Random(seed)
    hosts, rows, t = sorted(offsets), [], 1_700_000_000.0
    for i in range(n):
        a, b = rng.sample(hosts, 2)
        t += rng.uniform(0.1, 1.0)
        sent, got = t, t + rng.uniform(0.001, 0.03)
        replied = got + rng.uniform(0.0, 0.2)
        back = replied + rng.uniform(0.001, 0.03)
        mid = f"{i:032x}"
        for host, ts, kind in (
            (a, sent, "call"),
            (b, got, "recv_call"),
            (b, replied, "reply_send"),
            (a, back, "reply_recv"),
        ):
            rows.append(
                {
                    "ts_ns": local_ns(ts, offsets[host]),
                    "host": host,
                    "rpc_kind": kind,
                    "rpc_id": mid,
                    "logger": "oslo_messaging._drivers.amqpdriver",
                }
            )
    return events(rows)


def constraints(rows: list[tuple[str, str, float]]) -> pl.DataFrame:
    return pl.DataFrame(
        [
            {
                "src_host": s,
                "dst_host": d,
                "lower_s": lo,
                "kind": "rpc_call",
                "key": str(i),
                "src_ts_ns": 0,
                "dst_ts_ns": 0,
            }
            for i, (s, d, lo) in enumerate(rows)
        ],
        schema=CONSTRAINTS,
    )


def test_three_hosts_offsets_recovered_within_uncertainty():
    truth = {"ctl": 0.0, "net": 0.7315, "cmp": -1.2042}
    ev = rpc_traffic(truth, 300)
    c = causal_constraints(ev)
    assert set(c["kind"]) == {"rpc_call", "rpc_reply"}
    assert c.height == 600 and c["src_host"].ne(c["dst_host"]).all()
    res = estimate_offsets(c, ["ctl", "net", "cmp"], reference="ctl")
    assert res.dropped.height == 0
    assert res.violations_before > 0 and res.violations_after == 0
    for host, off, unc, status in res.offsets.select(
        "host", "offset_s", "uncertainty_s", "status"
    ).iter_rows():
        assert status == ("reference" if host == "ctl" else "bounded")
        assert abs(off - truth[host]) <= unc + 1e-9, (host, off, unc)
        assert unc < 0.01  # 300 calls with 1-30 ms hops pin each offset to a few ms
    fixed = apply_offsets(ev, res.offsets)
    assert causal_constraints(fixed)["lower_s"].le(1e-9).all()  # no effect before its cause


def test_default_reference_is_the_host_in_most_constraints():
    res = estimate_offsets(constraints([("a", "b", 0.1), ("b", "a", -0.3), ("c", "b", 0.0)]))
    assert res.reference == "b"
    assert res.offsets.filter(pl.col("host") == "b")["offset_s"].item() == 0.0


def test_http_client_line_brackets_the_server_access_line():
    # tempest on host t (clock 2 s ahead: offset -2) times 0.500 s; nova-api on host a logs
    # its access line (0.300 s server time) with the same request id
    rid = "req-00000000-0000-0000-0000-000000000001"
    ev = events(
        [
            {
                "ts_ns": local_ns(100.5, -2.0),
                "host": "t",
                "logger": "tempest.lib.common.rest_client",
                "request_id": rid,
                "http_status": 202,
                "http_method": "POST",
                "http_dur_s": 0.5,
            },
            {
                "ts_ns": local_ns(100.4, 0.0),
                "host": "a",
                "logger": "nova.osapi_compute.wsgi.server",
                "request_id": rid,
                "http_status": 202,
                "http_method": "POST",
                "http_dur_s": 0.3,
            },
        ]
    )
    every = causal_constraints(ev).sort("kind")
    # the access line is also the request's origin: its receipt precedes tempest's line
    assert every["kind"].to_list() == ["http_end", "http_origin", "http_start"]
    c = every.filter(pl.col("kind") != "http_origin")
    end, start = c.row(0, named=True), c.row(1, named=True)
    assert (end["src_host"], end["dst_host"]) == ("a", "t")
    assert end["lower_s"] == pytest.approx(100.4 - 102.5 - 0.001)  # t - a >= -2.101
    assert (start["src_host"], start["dst_host"]) == ("t", "a")
    assert start["lower_s"] == pytest.approx(102.0 - 100.1 - 0.002)  # a - t >= 1.898
    res = estimate_offsets(c, reference="a")
    t = res.offsets.filter(pl.col("host") == "t").row(0, named=True)
    assert t["lo_s"] == pytest.approx(-2.101) and t["hi_s"] == pytest.approx(-1.898)
    assert abs(t["offset_s"] - -2.0) <= t["uncertainty_s"]


def test_kilo_rpc_context_pairs_and_ambiguous_senders():
    # oslo.messaging of Kilo: the sender logs MSG_ID/UNIQUE_ID under its request context, the
    # receiver only "unpacked context: {... 'request_id': ...}" under [-]
    def recv(host, ts, rid):
        return {
            "ts_ns": ts,
            "host": host,
            "logger": "oslo_messaging._drivers.amqp",
            "message": f"unpacked context: {{u'user': None, u'request_id': u'{rid}', u'is_admin': True}}",
        }

    def send(host, ts, rid, what="MSG_ID is"):
        return {
            "ts_ns": ts,
            "host": host,
            "logger": "oslo_messaging._drivers.amqpdriver",
            "request_id": rid,
            "message": f"{what} {'ab' * 16}",
        }

    ev = events(
        [
            send("n3", 1000 * MS, "req-1"),
            recv("c1", 900 * MS, "req-1"),  # c1 - n3 >= 0.099
            send("c1", 2000 * MS, "req-2", "UNIQUE_ID is"),
            recv("n3", 2300 * MS, "req-2"),
            send("c1", 3000 * MS, "req-3"),
            send("n2", 3001 * MS, "req-3"),
            recv("n3", 3100 * MS, "req-3"),
            send("c1", 4000 * MS, "req-4"),
            recv("c1", 4010 * MS, "req-4"),  # same host: no row
        ]
    )
    c = causal_constraints(ev).sort("key")
    assert c["key"].to_list() == ["req-1", "req-2"]  # req-3 has senders on two hosts
    assert set(c["kind"]) == {"rpc_context"}
    assert c.select("src_host", "dst_host").rows() == [("n3", "c1"), ("c1", "n3")]
    assert c["lower_s"].to_list() == pytest.approx([0.099, -0.301])
    assert causal_constraints(ev, max_skew_s=0.05)["key"].to_list() == ["req-2"]


def test_negative_cycle_is_reported_and_the_less_corroborated_side_dropped():
    # five rows say b - a is about -0.5 (b ahead); one row claims b - a >= 1.0
    rows = [
        ("b", "a", 0.49),
        ("b", "a", 0.48),
        ("b", "a", 0.47),
        ("a", "b", -0.52),
        ("a", "b", -0.53),
        ("a", "b", 1.0),
    ]
    res = estimate_offsets(constraints(rows), reference="a")
    assert res.dropped.height == 1
    d = res.dropped.row(0, named=True)
    assert (d["src_host"], d["dst_host"], d["lower_s"]) == ("a", "b", 1.0)
    assert d["cycle"] in ("a > b > a", "b > a > b")
    assert d["cycle_excess_s"] == pytest.approx(1.49)
    b = res.offsets.filter(pl.col("host") == "b").row(0, named=True)
    assert (b["lo_s"], b["hi_s"]) == pytest.approx((-0.52, -0.49))
    assert b["n_constraints"] == 5
    assert res.violations_before == 4  # the three b->a rows and the 1.0 claim
    assert res.violations_after == 1  # only the dropped row still fails


def test_negative_cycle_through_three_hosts():
    rows = [("a", "b", 0.2), ("b", "c", 0.2), ("c", "a", 0.2)]  # a < b < c < a: impossible
    res = estimate_offsets(constraints(rows), reference="a")
    assert res.dropped.height == 1
    assert res.dropped["cycle_excess_s"].item() == pytest.approx(0.6)
    assert len(res.dropped["cycle"].item().split(" > ")) == 4
    # every edge has one row: the tie goes by name, a -> b is dropped; c <= a - 0.2 and
    # b <= c - 0.2 remain, one-sided, so no point estimates
    assert res.dropped.select("src_host", "dst_host").row(0) == ("a", "b")
    o = res.offsets.select("host", "status", "hi_s").rows()
    assert o == [
        ("a", "reference", 0.0),
        ("b", "upper_only", pytest.approx(-0.4)),
        ("c", "upper_only", pytest.approx(-0.2)),
    ]
    assert res.violations_after == 0  # nothing evaluable: b and c have no point estimate


def test_hosts_without_evidence_are_unknown_and_say_so():
    rows = [("a", "b", 0.1), ("b", "a", -0.3), ("a", "c", 0.05), ("d", "e", 0.0)]
    res = estimate_offsets(constraints(rows), ["a", "b", "c", "d", "e", "quiet"], reference="a")
    o = {r["host"]: r for r in res.offsets.iter_rows(named=True)}
    assert o["a"]["status"] == "reference" and o["a"]["offset_s"] == 0.0
    assert o["b"]["status"] == "bounded" and o["b"]["offset_s"] == pytest.approx(0.2)
    assert o["c"]["status"] == "lower_only" and o["c"]["offset_s"] is None
    assert o["c"]["lo_s"] == pytest.approx(0.05) and o["c"]["hi_s"] is None
    assert o["d"]["status"] == o["e"]["status"] == "unconnected"
    q = o["quiet"]
    assert q["status"] == "unconstrained" and q["n_constraints"] == 0
    assert q["offset_s"] is None and q["uncertainty_s"] is None
    # unknown offsets leave timestamps alone
    ev = events([{"ts_ns": 5, "host": h} for h in ("a", "b", "c", "quiet", "elsewhere")])
    out = apply_offsets(ev, res.offsets)
    assert out["ts_raw_ns"].to_list() == [5] * 5
    assert out["ts_ns"].to_list() == [5, 5 + 200_000_000, 5, 5, 5]


def test_no_constraints_at_all():
    empty = causal_constraints(events([{"ts_ns": 1, "host": "a", "message": "hello"}]))
    assert empty.height == 0 and empty.schema == pl.Schema(CONSTRAINTS)
    res = estimate_offsets(empty, ["b", "a"])
    assert res.reference == "a" and res.dropped.height == 0
    assert res.offsets["status"].to_list() == ["unconstrained", "reference"]
    assert res.violations_before == res.violations_after == 0
    with pytest.raises(ValueError, match="reference host 'x'"):
        estimate_offsets(empty, ["a"], reference="x")


def test_apply_offsets_keeps_raw_time_and_adds_up():
    ev = events([{"ts_ns": 1_000, "host": "a"}, {"ts_ns": 2_000, "host": "b"}])
    off = pl.DataFrame({"host": ["b"], "offset_s": [-0.000_001], "uncertainty_s": [0.5]})
    once = apply_offsets(ev, off)
    assert once["ts_ns"].to_list() == [1_000, 1_000] and once["ts_raw_ns"].to_list() == [
        1_000,
        2_000,
    ]
    twice = apply_offsets(once, off)
    assert twice["ts_ns"].to_list() == [1_000, 0] and twice["ts_raw_ns"].to_list() == [1_000, 2_000]
    assert apply_offsets(ev, off, max_uncertainty_s=0.1)["ts_ns"].to_list() == [1_000, 2_000]
    assert once.columns == [*ev.columns, "ts_raw_ns"]
    with pytest.raises(ValueError, match="more than one row"):
        apply_offsets(ev, pl.concat([off, off]))


# --- real logs ----------------------------------------------------------------------------

HOSTS = ["controller1", "networker2", "networker3"]
#: the DEBUG window of the osp7 capture (2016-01-29 15:38-15:39, hosts' local time)
WINDOW_NS = 1_454_081_880_000_000_000  # 2016-01-29 15:38:00 as ingested


@pytest.fixture(scope="module")
def osp7_events():
    from stacklens.ingest.pipeline import ingest

    return ingest([str(need(OSP7))]).events


def shifted(ev: pl.DataFrame, shift_s: dict[str, float]) -> pl.DataFrame:
    by = pl.DataFrame({"host": list(shift_s), "_d": [round(v * 1e9) for v in shift_s.values()]})
    return (
        ev.join(by, on="host", how="left", maintain_order="left")
        .with_columns(ts_ns=pl.col("ts_ns") + pl.col("_d").fill_null(0))
        .drop("_d")
    )


def test_osp7_real_skew_in_the_debug_window(osp7_events):
    """The real logs already disagree: networker2 logs RPC receipts ~0.4 s before
    controller1 sent them, networker3 ~0.15 s; one offset per host explains all of it."""
    win = osp7_events.filter(pl.col("ts_ns") >= WINDOW_NS)
    c = causal_constraints(win)
    # Kilo logs: no message ids on receipt, no tempest; neutron-server's access lines are the
    # origin of the contexts its fanout casts carry to the agents (http_origin)
    assert set(c["kind"]) == {"rpc_context", "http_origin"}
    pairs = c.group_by("src_host", "dst_host").len()
    assert pairs.height == 4 and pairs["len"].min() >= 5  # both ways controller1 <-> networkers
    res = estimate_offsets(c, HOSTS, reference="controller1")
    assert res.violations_before > 0 and res.violations_after == 0 and res.dropped.height == 0
    o = {r["host"]: r for r in res.offsets.iter_rows(named=True)}
    assert o["networker2"]["status"] == o["networker3"]["status"] == "bounded"
    assert o["networker2"]["hi_s"] < -0.3 and o["networker3"]["lo_s"] > 0.1
    assert max(o[h]["uncertainty_s"] for h in HOSTS) < 0.05


@pytest.mark.parametrize("window", [False, True], ids=["all-history", "debug-window"])
def test_osp7_shift_and_recover(osp7_events, window):
    """Shift each host by a known amount; the estimate moves by exactly that, within the
    reported uncertainty (plus 1 ms for the logs' resolution)."""
    ev = osp7_events.filter(pl.col("ts_ns") >= WINDOW_NS) if window else osp7_events
    base = estimate_offsets(causal_constraints(ev), HOSTS)
    rng = random.Random(20160129)
    shift = {h: rng.uniform(-2.0, 2.0) for h in HOSTS}
    moved = estimate_offsets(causal_constraints(shifted(ev, shift)), HOSTS, base.reference)
    assert moved.dropped.height == base.dropped.height
    b = {r["host"]: r for r in base.offsets.iter_rows(named=True)}
    for r in moved.offsets.iter_rows(named=True):
        h = r["host"]
        assert r["status"] == b[h]["status"] in ("reference", "bounded"), r
        truth = shift[h] - shift[base.reference]  # host h's logs now read this much later
        recovered = b[h]["offset_s"] - r["offset_s"]
        assert abs(recovered - truth) <= r["uncertainty_s"] + 0.001, (h, recovered, truth)
