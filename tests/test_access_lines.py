"""API access lines of every release are requests (issue 7, defect 5; issue 15).

Each generator below writes the exact line its OpenStack writer produces (cited per function),
inside an oslo.log record prefix (``%(asctime)s.%(msecs)03d %(process)d %(levelname)s
%(name)s [%(request_id)s %(user_identity)s] %(message)s``), and the logs go through the real
ingest -> trace pipeline.
"""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from stacklens.ingest.facts import MAX_DUR_S, add_facts
from stacklens.ingest.pipeline import ingest
from stacklens.trace import build_traces

P = "0123456789abcdef0123456789abcdef"  # a project id in paths


def rid(n: int) -> str:
    return f"req-{n:08d}-1111-2222-3333-444444444444"


def rec(t: str, pid: int, level: str, logger: str, ctx: str, msg: str) -> str:
    return f"2016-06-28 13:54:{t} {pid} {level} {logger} [{ctx}] {msg}\n"


def oslo_service_line(n: int, t: str, method: str, path: str, status: int, dur: str) -> str:
    """oslo.service wsgi.py ``wsgi_log_format`` default (Liberty..), two spaces before len:
    ``%(client_ip)s "%(request_line)s" status: %(status_code)s  len: %(body_length)s time:
    %(wall_seconds).7f`` (cinder-api, Newton devstack)."""
    return rec(t, 31085, "INFO", "eventlet.wsgi.server", f"{rid(n)} admin admin",
               f'127.0.0.1 "{method} {path} HTTP/1.1" status: {status}  len: 450 time: {dur}')


def nova_kilo_line(n: int, t: str, method: str, path: str, status: int, dur: str) -> str:
    """nova/wsgi.py ``wsgi_log_format`` (Kilo..Queens, one space before len:)."""
    return rec(t, 1295, "INFO", "nova.osapi_compute.wsgi.server", f"{rid(n)} u p - - -",
               f'10.0.0.1 "{method} {path} HTTP/1.1" status: {status} len: 701 time: {dur}')


def eventlet_default_line(n: int, t: str, method: str, path: str, status: int, dur: str,
                          logger: str = "eventlet.wsgi.server") -> str:
    """eventlet wsgi.py ``DEFAULT_LOG_FORMAT`` (glance-api, glance-registry, neutron.wsgi,
    keystone under eventlet): ``%(client_ip)s - - [%(date_time)s] "%(request_line)s"
    %(status_code)s %(body_length)s %(wall_seconds).6f``."""
    return rec(t, 28508, "INFO", logger, f"{rid(n)} u p - - -",
               f'127.0.0.1 - - [28/Jun/2016 13:54:{t[:2]}] "{method} {path} HTTP/1.1" {status} 870 {dur}')


def nova_requestlog_line(n: int, t: str, method: str, path: str, status: int, dur: str) -> str:
    """nova/api/openstack/requestlog.py (nova-api under uwsgi, Pike..2025.1): ``%(REMOTE_ADDR)s
    "%(REQUEST_METHOD)s %(REQUEST_URI)s" status: %(status)s len: %(len)s microversion:
    %(microversion)s time: %(time).6f``."""
    return rec(t, 700, "INFO", "nova.api.openstack.requestlog", f"{rid(n)} u p - default default",
               f'10.0.0.1 "{method} {path}" status: {status} len: 372 microversion: 2.96 time: {dur}')


def placement_line(n: int, t: str, method: str, path: str, status: int) -> str:
    """placement/requestlog.py (Stein..): same as nova's without ``time:``."""
    return rec(t, 501, "INFO", "placement.requestlog", f"{rid(n)} u p - default default",
               f'10.0.0.1 "{method} {path}" status: {status} len: 300 microversion: 1.39')


def cinder_wsgi_pair(n: int, t0: str, t1: str, method: str, url: str, status: int) -> str:
    """cinder/api/openstack/wsgi.py (cinder-api under uwsgi, no access line in its log):
    ``LOG.info("%(method)s %(url)s")`` then ``LOG.info("%(url)s returned with HTTP
    %(status)d")``."""
    ctx = f"{rid(n)} u p - default default"
    return (rec(t0, 601, "INFO", "cinder.api.openstack.wsgi", ctx, f"{method} {url}")
            + rec(t0, 601, "DEBUG", "cinder.api.openstack.wsgi", ctx, "Calling method create")
            + rec(t1, 601, "INFO", "cinder.api.openstack.wsgi", ctx, f"{url} returned with HTTP {status}"))


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        f = root / "ctl" / "var" / "log" / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)


def test_every_release_access_format_is_a_request(tmp_path: Path):
    _write(tmp_path, {
        "cinder/cinder-api.log": oslo_service_line(1, "01.000", "POST", f"/v2/{P}/volumes", 500, "0.5076342"),
        "nova/nova-api.log": nova_kilo_line(2, "02.000", "GET", f"/v2/{P}/flavors/1", 200, "0.0113549"),
        "glance/glance-api.log": eventlet_default_line(3, "03.000", "POST", "/v2/images", 201, "0.149019"),
        "neutron/server.log": eventlet_default_line(4, "04.000", "POST", "/v2.0/networks.json", 201,
                                                    "0.292592", logger="neutron.wsgi"),
        "keystone/keystone.log": eventlet_default_line(5, "05.000", "POST", "/v3/auth/tokens", 201, "0.031"),
        "nova/nova-api-uwsgi.log": nova_requestlog_line(6, "06.000", "POST", "/v2.1/servers", 202, "0.520000"),
        "placement/placement-api.log": placement_line(7, "07.000", "GET", "/resource_providers", 200),
        "cinder/cinder-api-uwsgi.log": cinder_wsgi_pair(8, "08.000", "08.750", "POST",
                                                        f"http://10.0.0.5/volume/v3/{P}/volumes", 202),
    })
    res = ingest([str(tmp_path)])
    acc = res.events.filter(pl.col("http_status").is_not_null()).sort("request_id")
    got = {r["request_id"][4:12]: (r["http_method"], r["http_path"], r["http_status"], r["http_dur_s"])
           for r in acc.iter_rows(named=True)}
    assert got == {
        "00000001": ("POST", f"/v2/{P}/volumes", 500, 0.5076342),
        "00000002": ("GET", f"/v2/{P}/flavors/1", 200, 0.0113549),
        "00000003": ("POST", "/v2/images", 201, 0.149019),
        "00000004": ("POST", "/v2.0/networks.json", 201, 0.292592),
        "00000005": ("POST", "/v3/auth/tokens", 201, 0.031),
        "00000006": ("POST", "/v2.1/servers", 202, 0.52),
        "00000007": ("GET", "/resource_providers", 200, None),
        "00000008": ("POST", f"/volume/v3/{P}/volumes", 202, 0.75),
    }
    traces = build_traces(res.events)["traces"]
    assert traces.filter(pl.col("operation") == "background").height == 0
    cinder_500 = traces.filter(pl.col("trace_id") == rid(1)).row(0, named=True)
    assert cinder_500["outcome"] == "failed" and cinder_500["operation"] == "volume.create"


def test_cinder_returned_lines_ignored_where_access_lines_exist(tmp_path: Path):
    # Newton cinder-api under eventlet logs both; the request is counted once, from the access
    # line (which carries the duration)
    url = f"http://127.0.0.1:8776/v2/{P}/types"
    text = (cinder_wsgi_pair(1, "32.000", "32.600", "POST", url, 200)
            + oslo_service_line(1, "32.634", "POST", f"/v2/{P}/types", 200, "0.6340000"))
    _write(tmp_path, {"cinder/cinder-api.log": text})
    ev = ingest([str(tmp_path)]).events
    acc = ev.filter(pl.col("http_status").is_not_null())
    assert acc.height == 1 and acc["http_dur_s"].to_list() == [0.634]


def test_apache_keystone_access_with_microseconds():
    # devstack's keystone vhost: LogFormat "%h %l %u %t \"%r\" %>s %b \"%{Referer}i\"
    # \"%{User-agent}i\" %D(us)" keystone_combined
    ev = pl.DataFrame({
        "message": ['10.0.0.1 - - [07/Mar/2017:19:14:43 +0900] "GET /v3/services?type=network HTTP/1.1" '
                    '200 343 "-" "python-keystoneclient" 11209(us)'],
        "logger": ["apache"],
    })
    out = add_facts(ev).row(0, named=True)
    assert (out["http_method"], out["http_path"], out["http_status"]) == ("GET", "/v3/services?type=network", 200)
    assert math.isclose(out["http_dur_s"], 0.011209)


BAD = ["1e19", "nan", "inf", "-inf", "-0.5", "1e400", "NaN", "Infinity"]


def test_absurd_durations_do_not_crash_and_are_counted(tmp_path: Path):
    lines = "".join(nova_kilo_line(i + 1, f"{10 + i:02d}.000", "GET", "/v2.1/servers/detail", 200, d)
                    for i, d in enumerate(BAD))
    lines += nova_kilo_line(99, "30.000", "GET", "/v2.1/servers/detail", 200, "0.25")
    _write(tmp_path, {"nova/nova-api.log": lines})
    res = ingest([str(tmp_path)])
    acc = res.events.filter(pl.col("http_status").is_not_null())
    assert acc.height == len(BAD) + 1  # every request kept, with method/path/status
    assert acc["http_dur_s"].drop_nulls().to_list() == [0.25]
    st_ = res.ingest_stats.filter(pl.col("kind") == "duration_out_of_range")
    assert st_["count"].sum() == len(BAD)
    out = build_traces(res.events)
    assert out["traces"].height == len(BAD) + 1
    assert out["spans"]["end_ns"].is_not_null().all()


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from(BAD),
                 st.integers(min_value=-10**30, max_value=10**30)))
def test_any_logged_time_is_null_or_usable(x):
    text = repr(x) if isinstance(x, float) else str(x)
    ev = pl.DataFrame({
        "message": [f'10.0.0.1 "GET /v2.1/servers HTTP/1.1" status: 200 len: 10 time: {text}',
                    f"Took {text} seconds to build instance."],
        "logger": ["nova.osapi_compute.wsgi.server", "nova.compute.manager"],
        "file": ["f", "f"],
    })
    stats: list = []
    out = add_facts(ev, stats)
    for v in (out["http_dur_s"][0], out["took_s"][1]):
        assert v is None or (math.isfinite(v) and 0 <= v <= MAX_DUR_S)
    assert out["http_status"][0] == 200
    nulls = int(out["http_dur_s"][0] is None and out["http_method"][0] is not None) + int(out["took_s"][1] is None)
    assert sum(r[3] for r in stats) == nulls
