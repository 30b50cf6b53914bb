"""The bounded-memory trace stage (stacklens.trace.bounded) writes the same tables as the
whole-frame path (stacklens.trace.build_traces): same rows, values, dtypes and row order, on the
real log sets and on synthetic events built for the cross-trace cases."""

from __future__ import annotations

import random

import polars as pl
import pytest
from conftest import DATA, need
from polars.testing import assert_frame_equal

from stacklens.errors import UserError
from stacklens.pipeline import _NOT_TRACED, ingest_step, trace_step
from stacklens.schema import EVENTS, TABLES
from stacklens.store import RunStore
from stacklens.trace import build_traces
from stacklens.trace.bounded import (
    BUCKETS_ENV,
    MEM_ENV,
    THREADS_ENV,
    _link_pass,
    bucket_count,
    build_traces_bounded,
    link_pass,
    trace_threads,
)
from stacklens.trace.reqonly import REQ_ONLY

NAMES = ("spans", "flows", "traces", "breakdown", "phases", "clock_offsets")
COLS = [c for c in TABLES["events"] if c not in _NOT_TRACED]


def _same(store: RunStore, buckets: int) -> dict[str, pl.DataFrame]:
    whole = build_traces(store.read("events", columns=COLS))
    got = build_traces_bounded(store.tables_dir / "events.parquet", COLS, buckets=buckets)
    assert set(got) == set(NAMES)
    for name in NAMES:
        assert_frame_equal(got[name], whole[name], check_row_order=True, check_dtypes=True)
    return whole


@pytest.fixture(scope="module", params=["devstack-gate-cinder-ci-2016", "oslogmerger-osp7-router",
                                        "devstack-mitaka-kyuhwi", "loghub-2k"])
def real_store(request, tmp_path_factory) -> RunStore:
    path = need(DATA / "oslo-logs" / request.param)
    store = RunStore(tmp_path_factory.mktemp(request.param))
    ingest_step(store, [str(path)])
    return store


@pytest.mark.parametrize("buckets", [4, 7])
def test_real_logs_identical(real_store: RunStore, buckets: int) -> None:
    whole = _same(real_store, buckets)
    if "devstack-gate" in str(real_store.path):
        assert whole["traces"].height > 100 and whole["flows"].height > 0


# -- synthetic events ------------------------------------------------------------------------

def _row(**kw: object) -> dict[str, object]:
    return {c: kw.get(c) for c in EVENTS}


def _synthetic(n_traces: int = 40, seed: int = 7) -> pl.DataFrame:
    """Requests over two hosts (API and conductor on ``ctl``, compute on ``cmp``, whose clock
    runs 40 ms late), with the cross-trace cases: RPC receipts without a request id, a receipt
    and a reply logged under a stale context of another request, downstream requests carrying
    the global request id, instance-only records inside and after a trace's window (an orphan
    completion marker), and background records of no trace."""
    rnd = random.Random(seed)
    rows = []
    t = 1_600_000_000 * 10**9
    skew = 40_000_000
    prev = None
    for k in range(n_traces):
        rid, inst = f"req-{k:08x}-0000-4000-8000-000000000000", f"{k:08x}-1111-4000-8000-000000000000"
        t += rnd.randint(1, 50) * 10**6
        base = {"request_id": rid, "pid": 100 + k % 3}
        api = {**base, "host": "ctl", "service": "nova-api", "logger": "nova.api.openstack"}
        rows.append(_row(ts_ns=t, level="INFO", message="Starting request", **api))
        call, cast = f"m{k:04d}", f"u{k:04d}"
        rows.append(_row(ts_ns=t + 1_000_000, level="DEBUG", logger="oslo_messaging._drivers.amqpdriver",
                         message=f"CALL msg_id: {call} exchange 'nova' topic 'conductor'",
                         rpc_kind="call", rpc_id=call, rpc_topic="conductor",
                         **{k2: v for k2, v in api.items() if k2 != "logger"}))
        # receipt: no request id (inherits the sender's), or a stale context of the previous request
        stale = prev if (k % 5 == 3 and prev) else None
        cond = {"host": "ctl", "service": "nova-conductor", "pid": 200}
        rows.append(_row(ts_ns=t + 2_000_000, level="DEBUG", logger="oslo_messaging._drivers.amqpdriver",
                         message=f"received message msg_id: {call} reply to reply_x",
                         rpc_kind="recv_call", rpc_id=call, request_id=stale, **cond))
        rows.append(_row(ts_ns=t + 3_000_000, level="INFO", logger="nova.conductor.manager",
                         message="building", request_id=rid, instance_uuid=inst, **cond))
        rows.append(_row(ts_ns=t + 4_000_000, level="DEBUG", logger="oslo_messaging._drivers.amqpdriver",
                         message=f"CAST unique_id: {cast} exchange 'nova' topic 'compute'",
                         rpc_kind="cast", rpc_id=cast, rpc_topic="compute", request_id=rid, **cond))
        # the reply, under a stale context every third request
        rows.append(_row(ts_ns=t + 5_000_000, level="DEBUG", logger="oslo_messaging._drivers.amqpdriver",
                         message=f"sending reply msg_id: {call} reply queue: reply_x",
                         rpc_kind="reply_send", rpc_id=call,
                         request_id=(prev if (k % 3 == 1 and prev) else rid), **cond))
        rows.append(_row(ts_ns=t + 6_000_000, level="INFO",
                         message="POST /v2.1/servers status: 202", http_method="POST",
                         http_path="/v2.1/servers", http_status=202 if k % 7 else 500,
                         http_dur_s=0.006, **api))
        cpu = {"host": "cmp", "service": "nova-compute", "pid": 300 + k % 2}
        c0 = t + 20_000_000 - skew
        rows.append(_row(ts_ns=c0, level="DEBUG", logger="oslo_messaging._drivers.amqpdriver",
                         message=f"received message with unique_id: {cast}", rpc_kind="recv_cast",
                         rpc_id=cast, **cpu))
        msgs = ["Attempting claim: memory 512 MB", "Claim successful on node cmp",
                "Start spawning the instance on the hypervisor.",
                "Took 3.10 seconds to spawn the instance on the hypervisor."]
        for j, m in enumerate(msgs):
            rows.append(_row(ts_ns=c0 + (j + 1) * 10**8, level="INFO", logger="nova.compute.manager",
                             message=f"[instance: {inst}] {m}", request_id=rid, instance_uuid=inst, **cpu))
        if k % 4 == 0:
            rows.append(_row(ts_ns=c0 + 5 * 10**8, level="ERROR", logger="nova.compute.manager",
                             message=f"[instance: {inst}] Instance failed to spawn", request_id=rid,
                             instance_uuid=inst, file="n-cpu.log", line_no=k, **cpu))
        # downstream request carrying the global request id (neutron, Pike on)
        nid = f"req-{k:08x}-2222-4000-8000-000000000000"
        rows.append(_row(ts_ns=c0 + 2 * 10**8, level="INFO", host="cmp", service="neutron-server",
                         pid=400, logger="neutron.wsgi", request_id=nid, global_request_id=rid,
                         message="POST /v2.0/ports status: 201", http_method="POST",
                         http_path="/v2.0/ports", http_status=201, http_dur_s=0.05))
        # instance-only records: one inside the window (link rule 4), one orphan completion
        # marker after it (adopted), one lifecycle record long after (no trace)
        rows.append(_row(ts_ns=c0 + 3 * 10**8, level="INFO", logger="nova.compute.manager",
                         message=f"[instance: {inst}] VM Started (Lifecycle Event)",
                         instance_uuid=inst, **cpu))
        rows.append(_row(ts_ns=c0 + 9 * 10**8, level="INFO", logger="nova.virt.libvirt.driver",
                         message=f"[instance: {inst}] Instance spawned successfully.",
                         instance_uuid=inst, **cpu))
        if k % 2:
            rows.append(_row(ts_ns=c0 + 10**9, level="INFO", logger="nova.compute.manager",
                             message=f"[instance: {inst}] Took 5.0 seconds to build instance.",
                             took_s=5.0, took_what="build instance", request_id=rid,
                             instance_uuid=inst, **cpu))
        rows.append(_row(ts_ns=t + 7_000_000, level="DEBUG", host="ctl", service="nova-scheduler",
                         pid=500, logger="oslo_service.periodic_task",
                         message="Running periodic task SchedulerManager._expire"))
        prev = rid
    df = pl.DataFrame(rows, schema=EVENTS, orient="row")
    return df.sample(fraction=1.0, shuffle=True, seed=seed)  # ingest order is not time order


@pytest.mark.parametrize("buckets", [2, 4, 7])
def test_synthetic_cross_trace_identical(tmp_path, buckets: int) -> None:
    store = RunStore(tmp_path)
    store.write({"events": _synthetic()})
    whole = _same(store, buckets)
    tr, fl = whole["traces"], whole["flows"]
    assert tr.height >= 40 and whole["clock_offsets"].height > 0
    # the cases are there: a flow whose receiver sits in another trace, adopted markers
    span_trace = whole["spans"].select("span_id", "trace_id")
    cross = fl.join(span_trace.rename({"span_id": "dst_span_id", "trace_id": "_dst"}),
                    on="dst_span_id").filter(pl.col("_dst") != pl.col("trace_id"))
    assert cross.height > 0
    assert (tr["outcome"] == "failed").any() and (tr["outcome"] == "success").any()
    assert whole["phases"].height > 0


def test_offsets_across_midnight_identical(tmp_path) -> None:
    """Clock offsets are per host and UTC day: with the run straddling midnight (records in file
    order shuffled, so the days' order of first record is not time order), the bounded stage's
    folded clock frame gives the whole-frame offsets for both days."""
    events = _synthetic()
    t0 = 1_600_000_000 * 10**9
    day = 86_400 * 10**9
    shift = (t0 // day + 1) * day - (t0 + 10**9)  # midnight 1 s into the run
    store = RunStore(tmp_path)
    store.write({"events": events.with_columns(pl.col("ts_ns") + shift)})
    whole = _same(store, 3)
    assert whole["clock_offsets"].get_column("day").n_unique() == 2


def test_offsets_host_seen_only_in_plain_records_of_a_day(tmp_path) -> None:
    """A host whose only records of a day are plain ones of a request it also logged the day
    before is still a host of that day (the note of a day without causal pairs names it)."""
    day = 86_400 * 10**9
    t = 1_600_000_000 * 10**9 // day * day + day - 10 * 10**9  # 10 s before midnight
    rid, other = "req-00000001-0000-4000-8000-000000000000", "req-00000002-0000-4000-8000-000000000000"
    a = {"host": "a", "service": "nova-api", "pid": 1, "logger": "nova.api.openstack"}
    b = {"host": "b", "service": "nova-compute", "pid": 2, "logger": "nova.compute.manager"}
    rows = [
        _row(ts_ns=t, level="INFO", message="POST /v2.1/servers status: 202", request_id=rid,
             http_method="POST", http_path="/v2.1/servers", http_status=202, http_dur_s=0.5, **a),
        _row(ts_ns=t + 10**9, level="INFO", message="claim", request_id=rid, **b),
        _row(ts_ns=t + 20 * 10**9, level="INFO", message="still building", request_id=rid, **b),
        _row(ts_ns=t + 21 * 10**9, level="INFO", message="listing", request_id=other, **a),
    ]
    store = RunStore(tmp_path)
    store.write({"events": pl.DataFrame(rows, schema=EVENTS, orient="row")})
    whole = _same(store, 2)
    second = whole["clock_offsets"].filter(pl.col("day") == pl.col("day").max())
    assert second.height and "2 hosts (a, b)" in second.get_column("note")[0]


def test_offsets_from_folded_context_dumps_identical(tmp_path) -> None:
    """Kilo and older receipts log only ``unpacked context: {... 'request_id': ...}`` (the
    receiver's own context null): the bounded stage folds a (host, service, logger, ids, day)
    group's dumps per dump id, and the offsets stay the whole frame's. Several ids per group,
    each received more than once and first at a different time, the computes 2 and 4 s behind;
    a dump with an RPC id is kept whole, one without a request id folds to a null message."""
    t0 = 1_600_000_000 * 10**9
    ctl = {"host": "ctl", "service": "nova-conductor", "pid": 7,
           "logger": "oslo_messaging._drivers.amqpdriver"}
    rows = []
    for k in range(12):
        rid = f"req-{k:08d}-0000-4000-8000-000000000000"
        t = t0 + k * 50_000_000
        rows.append(_row(ts_ns=t, level="DEBUG", message=f"MSG_ID is {k:032x}", request_id=rid,
                         **ctl))
        for j, cmp in enumerate(("cmp1", "cmp2")):
            at = t + 5_000_000 - 2 * 10**9 * (j + 1) + 1_000_000 * j
            for r in range(3):  # the same context received 3 times, 20 ms apart
                rows.append(_row(ts_ns=at + r * 20_000_000, level="DEBUG", host=cmp,
                                 service="nova-compute", pid=9,
                                 logger="oslo_messaging._drivers.amqpdriver",
                                 message=f"unpacked context: {{u'user': None, u'request_id': "
                                         f"u'{rid}', u'is_admin': True}}",
                                 rpc_id=(f"{k:032x}" if r == 2 and k % 4 == 0 else None)))
    rows.append(_row(ts_ns=t0 + 10**9, level="DEBUG", host="cmp1", service="nova-compute",
                     pid=9, logger="oslo_messaging._drivers.amqpdriver",
                     message="unpacked context: {u'user': None, u'is_admin': True}"))
    events = pl.DataFrame(rows, schema=EVENTS, orient="row").sample(fraction=1.0, shuffle=True,
                                                                     seed=3)
    store = RunStore(tmp_path)
    store.write({"events": events})
    whole = _same(store, 2)
    off = whole["clock_offsets"]
    # each compute's bound comes from its first receipt of each context (the later two
    # receipts would loosen it by 20 and 40 ms): one-sided, so not applied
    cmp = off.filter(pl.col("host") != "ctl").sort("host")
    assert cmp.get_column("lo_s").to_list() == pytest.approx([1.994, 3.993], abs=1e-9), off
    assert cmp.get_column("n_constraints").to_list() == [12, 12], off
    assert cmp.get_column("note").str.contains("rpc_context").all(), off


def test_records_linked_by_request_id_alone(tmp_path) -> None:
    """Records that carry a request id and nothing else linking reads stay out of the global
    pass, one row per request id (stacklens.trace.reqonly), with the same tables: also for
    such a record of a request that joins a global id's trace through another of its records
    (link rule 2), for such records without a time, and across midnight."""
    events = _synthetic()
    downstream = events.filter(pl.col("global_request_id").is_not_null())
    extra = [_row(ts_ns=ts - 1_000_000, level="DEBUG", host="cmp", service="neutron-server",
                  pid=400, logger="neutron.db.ipam", message="Allocating an IP", request_id=nid)
             for ts, nid in downstream.select("ts_ns", "request_id").rows()]
    extra += [_row(ts_ns=None, level="INFO", host="ctl", service="nova-api", pid=100,
                   logger="nova.api.openstack", message="untimed", request_id=rid)
              for rid in events.get_column("request_id").drop_nulls().unique().sort()[:5]]
    t0 = 1_600_000_000 * 10**9
    day = 86_400 * 10**9
    shift = (t0 // day + 1) * day - (t0 + 10**9)  # midnight 1 s into the run
    events = pl.concat([events, pl.DataFrame(extra, schema=EVENTS, orient="row")]).with_columns(
        pl.col("ts_ns") + shift).sample(fraction=1.0, shuffle=True, seed=11)
    store = RunStore(tmp_path)
    store.write({"events": events})
    whole = _same(store, 3)
    assert whole["clock_offsets"].get_column("day").n_unique() == 2
    path = store.tables_dir / "events.parquet"
    keys, _, ids, _ = _link_pass(path, COLS, 3)
    full, _ = link_pass(path, COLS, 3)
    alone = events.filter(REQ_ONLY).height
    assert alone > 50 and full.height == keys.height + alone
    # the downstream ids are in the trace of the global id their access line names
    got = dict(ids.select(pl.col("request_id", "trace_id").cast(pl.String)).rows())
    want = dict(downstream.select("request_id", "global_request_id").rows())
    assert {k: got[k] for k in want} == want


def test_trace_step_records_buckets(tmp_path, monkeypatch) -> None:
    store = RunStore(tmp_path)
    events = _synthetic(12)
    store.write({"events": events})
    monkeypatch.setenv(BUCKETS_ENV, "3")
    stale = store.tables_dir / ".trace-buckets-killed" / "0"  # left by a killed trace run
    stale.mkdir(parents=True)
    (stale / "000000.parquet").write_bytes(b"half")
    sec = trace_step(store)
    assert sec.buckets == 3 and sec.wall_s is not None
    assert not list(store.tables_dir.glob(".trace-buckets-*"))
    whole = build_traces(events.select(COLS))
    for name in NAMES:
        assert_frame_equal(store.read(name), whole[name])


@pytest.mark.parametrize("merge_rows", [1, 7, 40])
def test_tables_merged_by_ranges_of_trace_ids(tmp_path, monkeypatch, merge_rows: int) -> None:
    """spans, traces and breakdown merged from the buckets a range of trace ids at a time
    (several ranges; one trace per range at the smallest) give the whole-frame tables, from
    build_traces_bounded and written part by part by trace_step."""
    from stacklens.trace import bounded, bucketmerge

    monkeypatch.setattr(bucketmerge, "MERGE_ROWS", merge_rows)
    monkeypatch.setattr(bounded, "_BUCKET_ROW_GROUP", 3)  # several row groups per file
    store = RunStore(tmp_path)
    events = _synthetic(30)
    store.write({"events": events})
    whole = _same(store, 4)
    n = whole["spans"].height
    assert n > 3 * merge_rows or merge_rows == 40
    parts = [name for name, _ in bounded.iter_traces_bounded(
        store.tables_dir / "events.parquet", COLS, buckets=4)]
    assert parts.count("spans") == min(-(-n // merge_rows), whole["traces"].height)
    monkeypatch.setenv(BUCKETS_ENV, "4")
    trace_step(store)
    for name in NAMES:
        assert_frame_equal(store.read(name), whole[name])


@pytest.mark.parametrize("threads", ["1", "2", "3"])
def test_buckets_run_at_once_give_the_same_tables(tmp_path, monkeypatch, threads: str) -> None:
    store = RunStore(tmp_path)
    events = _synthetic(12)
    store.write({"events": events})
    monkeypatch.setenv(BUCKETS_ENV, "4")
    monkeypatch.setenv(THREADS_ENV, threads)
    assert trace_step(store).buckets == 4
    whole = build_traces(events.select(COLS))
    for name in NAMES:
        assert_frame_equal(store.read(name), whole[name])


def test_threads_share_the_budget(monkeypatch) -> None:
    monkeypatch.delenv(BUCKETS_ENV, raising=False)
    monkeypatch.delenv(MEM_ENV, raising=False)
    one = bucket_count(10_000_000, mem_mib=1024)
    assert bucket_count(10_000_000, mem_mib=1024, threads=2) in (2 * one - 1, 2 * one)
    assert bucket_count(1000, threads=2) == 1  # fits the budget: the whole-frame path
    monkeypatch.setenv(THREADS_ENV, "0")
    with pytest.raises(UserError, match=THREADS_ENV):
        trace_threads()
    monkeypatch.setenv(THREADS_ENV, "3")
    assert trace_threads() == 3


def test_bucket_count_setting(monkeypatch) -> None:
    monkeypatch.delenv(BUCKETS_ENV, raising=False)
    monkeypatch.delenv(MEM_ENV, raising=False)
    assert bucket_count(1000) == 1
    assert bucket_count(10_000_000, mem_mib=1024) > 1
    monkeypatch.setenv(MEM_ENV, "1")
    assert bucket_count(10_000) > 1
    monkeypatch.setenv(MEM_ENV, "lots")
    with pytest.raises(UserError, match=MEM_ENV):
        bucket_count(10)
    monkeypatch.setenv(BUCKETS_ENV, "5")
    assert bucket_count(10) == 5


@pytest.mark.parametrize("dtype", [pl.String, pl.Categorical])
def test_id_lookup_is_a_left_join(dtype) -> None:
    """``id_lookup`` gives what a left join on unique keys gives: null for a null or unmatched
    key (``replace_strict`` alone would map a null key), whatever the key's dtype."""
    from stacklens.trace.link import id_lookup

    rng = random.Random(7)
    keys = [rng.choice(["a", "b", "c", "d", None]) for _ in range(500)]
    df = pl.DataFrame({"k": keys}).with_columns(pl.col("k").cast(dtype))
    table = pl.DataFrame({"k": ["a", "c", None], "v": ["A", "C", "N"]}).with_columns(
        pl.col("k").cast(dtype))
    want = df.join(table, on="k", how="left", maintain_order="left").get_column("v")
    got = df.select(id_lookup("k", table, "v")).to_series()
    assert got.to_list() == want.to_list()
    empty = pl.DataFrame(schema={"k": dtype, "v": pl.String})
    assert df.select(id_lookup("k", empty, "v")).to_series().null_count() == df.height


def test_marker_hits_in_marker_then_record_order() -> None:
    """All markers matched in one query give one row per (record, marker), markers in
    :data:`MARKERS` order and records in their order within each, as one filter per marker."""
    from stacklens.trace.completion import MARKERS, marker_hits, message_body

    msgs = ["Took 1.5 seconds to spawn the instance on the hypervisor.",
            "Instance spawned successfully.", "Terminating instance",
            "Claim successful on node x", "nothing to see", None,
            "[instance: 0b0e7c6e-9a56-4d1c-8f3a-1c2b3d4e5f60] Instance destroyed successfully.",
            "Took 2.0 seconds to destroy the instance on the hypervisor."]
    loggers = ["nova.compute.manager", None, "nova.compute.manager", "nova.compute.claims",
               "x", "x", "nova.virt.libvirt.driver", "nova.compute.manager"]
    n = 3 * len(msgs)
    tev = pl.DataFrame({
        "trace_id": [f"t{i % 4}" for i in range(n)], "ts_ns": list(range(n)),
        "eid": pl.Series(range(n), dtype=pl.UInt32), "host": "h", "service": "nova-compute",
        "span_id": "s", "instance_uuid": None, "logger": loggers * 3, "message": msgs * 3,
        "file": "f", "line_no": list(range(n)), "synthetic": [False] * (n - 1) + [True],
    }, schema_overrides={"instance_uuid": pl.String})
    got = marker_hits(tev)
    body = tev.filter(~pl.col("synthetic")).with_columns(_body=message_body()).drop("synthetic")
    want = pl.concat([
        body.filter(pl.col("_body").str.contains(m.regex).fill_null(False)
                    & (pl.col("logger").fill_null("").str.contains(m.logger) if m.logger
                       else pl.lit(True)))
        .with_columns(marker=pl.lit(i, pl.Int32)).drop("_body")
        for i, m in enumerate(MARKERS)
    ])
    assert got.height >= 12
    assert_frame_equal(got, want)


@pytest.mark.parametrize("batch", [7, 50, 10_000])
def test_split_by_row_groups_and_slices(tmp_path, monkeypatch, batch: int) -> None:
    """The split reads the events file a row group at a time, a row group larger than the
    batch in equal slices: with many row groups, cut or not, the same tables."""
    from stacklens.trace import bounded

    monkeypatch.setattr(bounded, "_BATCH", batch)
    store = RunStore(tmp_path)
    store.write({"events": _synthetic(12)})
    path = store.tables_dir / "events.parquet"
    pl.read_parquet(path).write_parquet(path, row_group_size=40)
    import pyarrow.parquet as papq

    assert papq.ParquetFile(path).metadata.num_row_groups > 3
    _same(store, 4)
