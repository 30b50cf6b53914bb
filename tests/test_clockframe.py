"""The clock frame (stacklens.trace.clockframe) leaves out the records of ids seen on one host
only and gives the whole events' causal pairs and offsets: on synthetic events built for each
rule's edge (an id named only in a message on its second host, a client's REQ/used sequence
whose context is local but whose returned id is not, single-host ids between them, a host and
a day seen only in records that leave, records without host or time), and on the real log
sets."""

from __future__ import annotations

import polars as pl
import pytest
from conftest import DATA, need
from polars.testing import assert_frame_equal

from stacklens.pipeline import ingest_step
from stacklens.schema import EVENTS
from stacklens.store import RunStore
from stacklens.trace import LINK_COLUMNS
from stacklens.trace.clockframe import clock_frame
from stacklens.trace.clocks import correct_clocks
from stacklens.trace.skew import causal_constraints

T0 = 1_600_000_000 * 10**9
MS = 1_000_000
DAY = 86_400 * 10**9
COLS = [c for c in LINK_COLUMNS if c not in ("instance_uuid", "http_method", "http_path")]


def rid(k: int) -> str:
    return f"req-{k:08d}-0000-4000-8000-000000000000"


def row(ts: int | None, host: str | None, service: str, logger: str, message: str,
        **kw: object) -> dict[str, object]:
    out = {c: kw.get(c) for c in EVENTS}
    out.update(ts_ns=ts, host=host, service=service, pid=kw.get("pid", 1), logger=logger,
               message=message, level="DEBUG")
    return out


def synthetic() -> pl.DataFrame:
    """Three hosts (``ctl`` the API and conductor, ``cmp`` 40 ms late, ``img`` 25 ms early);
    each kind of pair once or more, and many requests that stay on one host."""
    api, cmp, img = ("ctl", "nova-api"), ("cmp", "nova-compute"), ("img", "glance-api")
    rows = []
    for k in range(20):  # boots: API access line, a downstream id on cmp (http_origin)
        t = T0 + k * 200 * MS
        rows.append(row(t + 50 * MS, *api, "nova.osapi_compute.wsgi.server", "POST ... 202",
                        request_id=rid(k), http_status=202, http_dur_s=0.05))
        rows.append(row(t + 60 * MS - 40 * MS, *cmp, "nova.compute.manager", "Starting",
                        request_id=rid(1000 + k), global_request_id=rid(k)))
        # an RPC cast ctl -> cmp, and one on ctl alone (single-host rpc id)
        rows.append(row(t + 70 * MS, *api, "nova.conductor", "cast", rpc_kind="cast",
                        rpc_id=f"{k:032x}", request_id=rid(k)))
        rows.append(row(t + 75 * MS - 40 * MS, *cmp, "nova.compute", "recv",
                        rpc_kind="recv_cast", rpc_id=f"{k:032x}"))
        rows.append(row(t + 80 * MS, *api, "nova.conductor", "local", rpc_kind="cast",
                        rpc_id=f"{10_000 + k:032x}", request_id=rid(2000 + k)))
        rows.append(row(t + 81 * MS, *api, "nova.conductor", "local",
                        rpc_kind="recv_cast", rpc_id=f"{10_000 + k:032x}"))
        # polls: access lines and plain records of ids that stay on ctl
        for j in range(5):
            p = rid(3000 + 10 * k + j)
            rows.append(row(t + (90 + j) * MS, *api, "nova.api", "GET", request_id=p))
            rows.append(row(t + (91 + j) * MS, *api, "nova.osapi_compute.wsgi.server",
                            "GET ... 200", request_id=p, http_status=200, http_dur_s=0.001))
    for k in range(6):  # a client on ctl (pid 5, context local to ctl) calls glance on img
        t = T0 + 5 * 10**9 + k * 300 * MS
        ctx, local, far = rid(4000), rid(4100 + k), rid(4200 + k)
        req = "REQ: curl -g -i -X GET http://img:9292/v2/images"
        used = "GET call to image for http://img:9292/v2/images used request id "
        for sub, (got, host) in enumerate(((local, "ctl"), (far, "img"))):
            at = t + sub * 100 * MS
            rows.append(row(at, *api, "keystoneauth.session", req, request_id=ctx, pid=5))
            rows.append(row(at + 30 * MS, *api, "keystoneauth.session", used + got,
                            request_id=ctx, pid=5))
            skew = -25 * MS if host == "img" else 0
            rows.append(row(at + 5 * MS - skew, host, "glance-api" if host == "img" else
                            "nova-api", "glance.wsgi", "GET /v2/images 200", request_id=got,
                            http_status=200, http_dur_s=0.02))
        # an id seen in columns on img only, named in a dump on cmp (rpc_context) after a send
        rows.append(row(t + 200 * MS + 25 * MS, *img, "glance.api", "MSG_ID is " + "a" * 32,
                        request_id=rid(5000 + k),
                        rpc_kind=None))
        rows.append(row(t + 200 * MS + 25 * MS, *img, "oslo_messaging._drivers.amqpdriver",
                        "MSG_ID is " + f"{k:032x}", request_id=rid(5000 + k)))
        rows.append(row(t + 210 * MS - 40 * MS, *cmp, "oslo_messaging._drivers.amqpdriver",
                        "unpacked context: {u'request_id': u'" + rid(5000 + k) + "'}"))
        rows.append(row(t + 220 * MS - 40 * MS, *cmp, "oslo_messaging._drivers.amqpdriver",
                        "unpacked context: {u'request_id': u'" + rid(5100 + k) + "'}"))
    # a second day: img logs only a request of its own, cmp only records without time
    rows.append(row(T0 + DAY, *img, "glance.api", "GET", request_id=rid(6000)))
    rows.append(row(None, *cmp, "nova.compute", "untimed", request_id=rid(6001)))
    rows.append(row(T0 + 3 * MS, None, "nova-api", "nova.api", "no host", request_id=rid(6002)))
    return pl.DataFrame(rows, schema=EVENTS, orient="row").sample(fraction=1.0, shuffle=True,
                                                                  seed=5)


def _pairs(events: pl.DataFrame) -> pl.DataFrame:
    return causal_constraints(events).sort(pl.all())


def _check(store: RunStore) -> tuple[pl.DataFrame, pl.DataFrame]:
    path = store.tables_dir / "events.parquet"
    events = store.read("events", columns=COLS)
    frame = clock_frame(path, COLS)
    assert_frame_equal(_pairs(frame), _pairs(events))
    assert_frame_equal(correct_clocks(frame, apply=False)[1],
                       correct_clocks(events, apply=False)[1])
    return frame, events


def test_pairs_and_offsets_of_the_whole_events(tmp_path) -> None:
    store = RunStore(tmp_path)
    store.write({"events": synthetic()})
    frame, events = _check(store)
    pairs = _pairs(events)
    # every rule's pair is there, from the ids that cross hosts
    assert {"rpc_cast", "http_origin", "http_callee", "http_caller", "rpc_context"} <= set(
        pairs.get_column("kind")), pairs
    # the polls, the local casts and the id seen on one host are gone (but for the first
    # record of a host's day, whatever it holds)
    assert frame.height < events.height // 2
    keys = set(frame.get_column("request_id").cast(pl.String).drop_nulls())
    assert sum(rid(3000 + j) in keys for j in range(200)) <= 1
    # the day img logged alone is still a day with its hosts
    offsets = correct_clocks(frame, apply=False)[1]
    assert offsets.get_column("day").n_unique() == 2


@pytest.mark.parametrize("name", ["devstack-gate-cinder-ci-2016", "oslogmerger-osp7-router"])
def test_real_logs_pairs_and_offsets(tmp_path, name: str) -> None:
    store = RunStore(tmp_path)
    ingest_step(store, [str(need(DATA / "oslo-logs" / name))])
    _check(store)
