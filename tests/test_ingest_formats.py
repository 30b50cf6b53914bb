"""Every oslo.log era and wrapper (field notes section 3), multi-line records, and the facts
extracted from well-known messages, each through :func:`stacklens.ingest.pipeline.ingest` on small
files written to ``tmp_path``."""

from __future__ import annotations

import calendar
import os

import polars as pl
import pytest

from stacklens.ingest.formats import detect_format
from stacklens.ingest.names import host_from_path, service_from_name
from stacklens.ingest.pipeline import ingest

R = "req-c354514b-0c97-415e-ba7f-18750569f103"
G = "req-0c5f0c3e-86a1-4c55-a0b4-e4a1a29c7a11"
U = "4f1713a9-2ad0-4dce-8b3d-30dea178e0a5"


def ns(y, mo, d, h, mi, s, us=0) -> int:
    """UTC nanoseconds since the epoch."""
    return calendar.timegm((y, mo, d, h, mi, s)) * 10**9 + us * 1000


def ingest_text(tmp_path, name: str, text: str, year: int | None = None, **kw):
    """Write ``text`` to ``tmp_path/name`` and ingest that file; return (result, path)."""
    p = tmp_path / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    if year is not None:  # syslog lines carry no year: ingest takes the file's mtime year
        t = calendar.timegm((year, 6, 1, 0, 0, 0))
        os.utime(p, (t, t))
    return ingest([str(p)], **kw), str(p)


def rows(res) -> list[dict]:
    return res.events.sort("line_no").to_dicts()


def fmt_of(res, path: str) -> str:
    st_ = res.ingest_stats.filter((pl.col("file") == path) & (pl.col("kind") == "format"))
    return st_["detail"][0]


# --- 3. eras and wrappers --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ctx", "request_id", "global_id", "user", "project"),
    [
        (f"{R} admin demo", R, None, "admin", "demo"),  # Havana - Liberty
        (f"{R} u1 p1 - - -", R, None, "u1", "p1"),  # Mitaka on, empty domains
        (f"{R} u1 p1 d1 ud1 pd1", R, None, "u1", "p1"),
        (f"{R} - - - - -", R, None, None, None),
        (f"None {R} admin admin", R, None, "admin", "admin"),  # modern devstack, no global id
        (f"None {R} u1 p1 - - -", R, None, "u1", "p1"),
        (f"{G} {R} u1 p1 - - -", R, G, "u1", "p1"),  # Pike on: global id first
        (f"{R} None None", R, None, None, None),
        (f"{R} ", R, None, None, None),  # tempest: "[req-... ]"
        ("-", None, None, None, None),  # no context (periodic tasks, start-up)
    ],
    ids=["tenant", "mitaka-dashes", "mitaka-full", "all-dashes", "none-global", "none-global-6",
         "global", "none-user", "tempest-empty", "no-context"],
)
def test_request_context_eras(tmp_path, ctx, request_id, global_id, user, project):
    line = f"2016-06-28 13:56:12.360 29140 INFO nova.compute.manager [{ctx}] Starting\n"
    res, _ = ingest_text(tmp_path, "screen-n-cpu.txt", line)
    (r,) = rows(res)
    assert (r["request_id"], r["global_request_id"], r["user"], r["project"]) == (
        request_id, global_id, user, project
    )
    assert r["message"] == "Starting"
    assert (r["pid"], r["level"], r["logger"]) == (29140, "INFO", "nova.compute.manager")


def test_oslo_fields_instance_pid_and_time(tmp_path):
    text = (
        f"2016-06-28 13:56:36.684 30596 INFO nova.compute.manager [{R} tempest-X-1 tempest-X-1] "
        f"[instance: {U}] Took 22.18 seconds to spawn the instance on the hypervisor.\n"
        f"2016-06-28 13:56:37.001 WARNING cinder.volume.manager [{R} admin demo] no pid here\n"
        f"2016-06-28 13:56:38,250 30596 AUDIT nova.compute.manager [{R} admin demo] comma ms\n"
        f"2016-06-28 13:56:39 30596 ERROR nova.compute.manager [-] no fraction\n"
    )
    res, path = ingest_text(tmp_path, "screen-n-cpu.txt", text)
    assert fmt_of(res, path) == "oslo"
    r = rows(res)
    assert [x["ts_ns"] for x in r] == [
        ns(2016, 6, 28, 13, 56, 36, 684000),
        ns(2016, 6, 28, 13, 56, 37, 1000),
        ns(2016, 6, 28, 13, 56, 38, 250000),
        ns(2016, 6, 28, 13, 56, 39),
    ]
    assert r[0]["instance_uuid"] == U
    assert r[0]["message"].startswith(f"[instance: {U}] Took 22.18")
    assert [x["pid"] for x in r] == [30596, None, 30596, 30596]
    assert [x["level"] for x in r] == ["INFO", "WARNING", "AUDIT", "ERROR"]
    assert r[1]["logger"] == "cinder.volume.manager" and r[1]["message"] == "no pid here"
    assert {x["service"] for x in r} == {"nova-compute"}
    assert {x["host"] for x in r} == {tmp_path.name}  # single-host dump: the input folder
    assert r[0]["instance_uuid"] and r[1]["instance_uuid"] is None


def test_devstack_debug_suffixes_are_stripped(tmp_path):
    text = (
        "2016-06-28 13:54:07.810 30596 DEBUG os_brick.initiator.connector [-] Factory for ISCSI "
        "on x86_64 factory /usr/local/lib/python2.7/dist-packages/os_brick/initiator/"
        "connector.py:182\n"
        f"2017-03-07 19:27:40.426 13551 DEBUG nova.compute.manager [None {R} admin admin] "
        "Building {{(pid=13551) _do_build /opt/stack/nova/nova/compute/manager.py:1900}}\n"
        "2017-03-07 19:27:41.000 13551 INFO nova.compute.manager [-] INFO keeps a /path.py:1\n"
    )
    res, _ = ingest_text(tmp_path, "n-cpu.log", text)
    assert [x["message"] for x in rows(res)] == [
        "Factory for ISCSI on x86_64",
        "Building",
        "INFO keeps a /path.py:1",
    ]


def test_syslog_with_inner_oslo_timestamp(tmp_path):
    text = (
        f"Jan 25 09:29:50 ctl1 nova-compute[1234]: 2017-01-25 09:29:50.123 1234 DEBUG "
        f"nova.compute.manager [{R} admin demo] [instance: {U}] Claim successful "
        "{{(pid=1234) _claim /opt/stack/nova/nova/compute/manager.py:123}}\n"
        f"Jan 25 09:29:51 cmp2 neutron-server[77]: 2017-01-25 09:29:51.500 77 INFO "
        f"neutron.wsgi [{G} {R} u1 p1 - - -] created\n"
    )
    res, path = ingest_text(tmp_path, "syslog", text, year=2017)
    assert fmt_of(res, path) == "syslog"
    a, b = rows(res)
    assert a["ts_ns"] == ns(2017, 1, 25, 9, 29, 50, 123000)
    assert (a["host"], a["service"], a["pid"], a["level"]) == ("ctl1", "nova-compute", 1234, "DEBUG")
    assert a["message"] == f"[instance: {U}] Claim successful"
    assert (a["request_id"], a["user"], a["project"], a["instance_uuid"]) == (R, "admin", "demo", U)
    assert (b["host"], b["service"], b["pid"]) == ("cmp2", "neutron-server", 77)
    assert (b["request_id"], b["global_request_id"]) == (R, G)
    assert b["ts_ns"] == ns(2017, 1, 25, 9, 29, 51, 500000)


def test_journald_without_inner_timestamp(tmp_path):
    text = (
        f"Jan 25 09:29:50 ubuntu nova-compute[1234]: DEBUG nova.compute.manager "
        f"[None {R} admin admin] [instance: {U}] Starting instance... "
        "{{(pid=1234) _do_build_and_run_instance /opt/stack/nova/nova/compute/manager.py:1759}}\n"
        f"Jan  5 09:29:52.654321 ubuntu nova-scheduler[99]: INFO nova.scheduler.manager "
        f"[{G} {R} admin admin] selected\n"
    )
    res, _ = ingest_text(tmp_path, "syslog.txt", text, year=2017)
    a, b = rows(res)
    assert a["ts_ns"] == ns(2017, 1, 25, 9, 29, 50)  # year from the file's mtime
    assert (a["host"], a["service"], a["pid"], a["level"], a["logger"]) == (
        "ubuntu", "nova-compute", 1234, "DEBUG", "nova.compute.manager"
    )
    assert a["message"] == f"[instance: {U}] Starting instance..."
    assert (a["request_id"], a["global_request_id"], a["instance_uuid"]) == (R, None, U)
    assert b["ts_ns"] == ns(2017, 1, 5, 9, 29, 52, 654321)
    assert (b["service"], b["pid"], b["global_request_id"]) == ("nova-scheduler", 99, G)


def test_journald_devstack_unit_program_names(tmp_path):
    text = (
        "Apr 04 20:48:22 train nova-compute[1]: INFO nova.compute.manager [-] first\n"
        f"Apr 04 20:48:22 train devstack@n-api.service[10884]: ERROR nova.context "
        f"[None {R} None None] Error gathering result from cell\n"
    )
    res, _ = ingest_text(tmp_path, "syslog.txt", text, year=2019)
    r = rows(res)
    assert len(r) == 2
    assert (r[1]["host"], r[1]["service"], r[1]["pid"], r[1]["level"]) == (
        "train", "nova-api", 10884, "ERROR"
    )


@pytest.mark.parametrize("native", ["1", "0"])
def test_journald_lines_of_other_programs_are_not_continuations(tmp_path, monkeypatch, native):
    """A prefixed line whose body is not an oslo header (uwsgi's request log line, written by
    the same unit and pid; a kernel line) is an entry of its own: quarantined as
    ``merged_other`` with its line number, not appended to the record above; an unprefixed
    indented line (a multi-line entry's rest, as journalctl prints it) still continues."""
    monkeypatch.setenv("STACKLENS_NATIVE", native)
    unit = "train devstack@placement-api.service[1234]:"
    uwsgi = (  # uwsgi core/logging.c uwsgi_logit_simple's format
        "[pid: 1234|app: 0|req: 7/19] 10.0.0.1 () {58 vars in 1091 bytes} "
        "[Thu Apr  4 20:48:22 2019] GET /placement/resource_providers => generated 512 bytes "
        "in 50 msecs (HTTP/1.1 200) 6 headers in 233 bytes (1 switches on core 0)"
    )
    text = (
        f"Apr 04 20:48:22.100000 {unit} INFO placement.requestlog [{R} admin admin] "
        f"10.0.0.1 \"GET /placement/resource_providers\" status: 200 len: 512 microversion: 1.39\n"
        f"Apr 04 20:48:22.150000 {unit} {uwsgi}\n"
        "Apr 04 20:48:22.160000 train kernel: [ 1234.567890] device tap0 entered promiscuous mode\n"
        f"Apr 04 20:48:23.000000 {unit} ERROR placement.handler [{R} admin admin] boom\n"
        "                                 second line of the same entry\n"
    )
    res, path = ingest_text(tmp_path, "journal.txt", text, year=2019)
    assert fmt_of(res, path) == "syslog"
    a, b = rows(res)
    assert (a["line_no"], a["http_status"], a["continuation"]) == (1, 200, None)
    assert (b["line_no"], b["message"]) == (4, "boom")
    assert b["continuation"] == "                                 second line of the same entry"
    q = res.quarantine.sort("line_no")
    assert q.select("line_no", "reason").rows() == [(2, "merged_other"), (3, "merged_other")]
    assert "=> generated 512 bytes in 50 msecs" in q["raw"][0]


def test_loghub_source_file_prefix(tmp_path):
    text = (
        f"nova-api.log.1.2017-05-16_13:53:08 2017-05-16 00:00:00.008 25746 INFO "
        f"nova.osapi_compute.wsgi.server [{R} 113d3a99c3da401fbd62cc2caa5b96d2 "
        f"54fadb412c4e40cdbaed9335e4c35a9e - default default] 10.11.10.1 \"GET "
        f"/v2/54fadb412c4e40cdbaed9335e4c35a9e/servers/detail HTTP/1.1\" status: 200 len: 1893 "
        f"time: 0.2477829\n"
        f"nova-compute.log.1.2017-05-16_13:55:31 2017-05-16 00:00:04.500 2931 INFO "
        f"nova.compute.manager [{R} - - - - -] [instance: {U}] VM Started (Lifecycle Event)\n"
        f"nova-scheduler.log.2017-05-16_13:55:31 2017-05-16 00:00:05.000 2000 INFO "
        f"nova.scheduler.host_manager [-] Successfully synced instances\n"
    )
    res, path = ingest_text(tmp_path, "OpenStack_2k.log", text)
    assert fmt_of(res, path) == "oslo_prefixed"
    a, b, c = rows(res)
    assert [x["service"] for x in (a, b, c)] == ["nova-api", "nova-compute", "nova-scheduler"]
    assert a["ts_ns"] == ns(2017, 5, 16, 0, 0, 0, 8000)
    assert (a["pid"], a["user"], a["project"]) == (
        25746, "113d3a99c3da401fbd62cc2caa5b96d2", "54fadb412c4e40cdbaed9335e4c35a9e"
    )
    assert (a["http_method"], a["http_status"], a["http_dur_s"]) == ("GET", 200, 0.2477829)
    assert b["instance_uuid"] == U and b["user"] is None
    assert c["message"] == "Successfully synced instances"


def test_os_log_merger_alias_format(tmp_path):
    text = (
        f"2016-01-29 15:38:19.690000 [NEUTRONSRV] 26926 INFO neutron.wsgi [{R} admin demo] one\n"
        "2016-01-29 15:38:19.691500 [NOVACPU] 3333 DEBUG nova.compute.manager [-] two\n"
        "2016-01-29 15:38:19.692000 [NOVAAPI] 3334 TRACE nova.api Traceback (most recent...\n"
    )
    res, path = ingest_text(tmp_path, "mergedlogs.log", text)
    assert fmt_of(res, path) == "oslo_merged"
    a, b = rows(res)
    assert (a["service"], a["pid"], a["request_id"], a["message"]) == (
        "neutron-server", 26926, R, "one"
    )
    assert (b["service"], b["ts_ns"], b["n_lines"]) == (
        "nova-compute", ns(2016, 1, 29, 15, 38, 19, 691500), 2
    )


def test_host_and_service_from_layout(tmp_path):
    line = "2015-11-24 10:00:00.000 1 INFO neutron.agent [-] x\n"
    res, path = ingest_text(tmp_path, "networker2/var/log/neutron/openvswitch-agent.log", line)
    (r,) = rows(res)
    assert (r["host"], r["service"]) == ("networker2", "neutron-openvswitch-agent")
    res, _ = ingest_text(tmp_path, "controller1/var/log/neutron/server.log", line)
    assert rows(res)[0]["service"] == "neutron-server"


@pytest.mark.parametrize(
    ("name", "service"),
    [
        ("screen-n-cpu.txt", "nova-compute"),
        ("screen-q-svc.txt.gz", "neutron-server"),
        ("c-vol.log.2017-03-07-192007", "cinder-volume"),
        ("/var/log/neutron/server.log-20151124.gz", "neutron-server"),
        ("/var/log/nova/nova-api.log.1", "nova-api"),
        ("nova-api.log.1.2017-05-16_13:53:08", "nova-api"),
        (f"neutron-ns-metadata-proxy-{U}.log", "neutron-ns-metadata-proxy"),
        ("tempest.txt", "tempest"),
        ("NEUTRONSRV", "neutron-server"),
    ],
)
def test_service_from_name(name, service):
    assert service_from_name(name) == service


def test_host_from_path():
    assert host_from_path("logs/networker3/var/log/nova/nova-compute.log") == "networker3"
    assert host_from_path("/var/log/nova/nova-compute.log") is None
    assert host_from_path("screen-n-cpu.txt") is None


def test_detect_format():
    oslo = f"2016-06-28 13:56:12.360 29140 INFO nova.compute.manager [{R} a b] x"
    assert detect_format([oslo, "  continuation"]).name == "oslo"
    assert detect_format(["nova-api.log.1.2017-05-16_13:53:08 " + oslo]).name == "oslo_prefixed"
    assert detect_format(["2016-01-29 15:38:19.690000 [NOVACPU] 1 INFO nova.x [-] y"]).name == (
        "oslo_merged"
    )
    assert detect_format(["Jan 25 09:29:50 h nova-compute[1]: INFO nova.x [-] y"]).name == "syslog"
    assert detect_format([]) is None
    assert detect_format(["", "   "]) is None
    assert detect_format(["Jun 28 13:56:12 host kernel: [ 1.0] usb 1-1: new device"]) is None
    assert detect_format(["127.0.0.1 - - [28/Jun/2016:13:56:12 +0000] \"GET / HTTP/1.1\" 200"]) is None
    # a few records among many other lines (devstack screen logs start with a shell preamble)
    assert detect_format(["+ preamble"] * 15 + [oslo]).name == "oslo"
    assert detect_format(["+ preamble"] * 30 + [oslo]) is None


# --- 2. multi-line records -------------------------------------------------------------------


def test_old_style_trace_lines_join_the_record_above(tmp_path):
    p = "2016-06-28 13:56:40.100 30596"
    text = (
        f"{p} ERROR nova.compute.manager [{R} admin demo] [instance: {U}] Instance failed\n"
        f"{p} TRACE nova.compute.manager [instance: {U}] Traceback (most recent call last):\n"
        f'{p} TRACE nova.compute.manager [instance: {U}]   File "manager.py", line 1, in f\n'
        f"{p} TRACE nova.compute.manager [instance: {U}] RescheduledException: boom\n"
        f"{p} TRACE nova.compute.manager [instance: {U}] \n"
        f"2016-06-28 13:56:40.200 30596 INFO nova.compute.manager [-] next\n"
    )
    res, _ = ingest_text(tmp_path, "screen-n-cpu.txt", text)
    a, b = rows(res)
    assert (a["line_no"], a["n_lines"], a["level"]) == (1, 5, "ERROR")
    assert a["message"] == f"[instance: {U}] Instance failed"
    assert a["continuation"].count("\n") == 3 and "RescheduledException: boom" in a["continuation"]
    assert (b["line_no"], b["n_lines"]) == (6, 1)
    assert res.events.filter(pl.col("level") == "TRACE").height == 0


def test_bare_traceback_lines_join_the_record_above(tmp_path):
    text = (
        f"2017-03-07 19:27:40.426 13551 ERROR oslo_messaging.rpc.server [{R} a p - - -] "
        "Exception during message handling\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python2.7/dist-packages/oslo_messaging/rpc/server.py", line 133\n'
        "    res = self.dispatcher.dispatch(message)\n"
        "\n"
        "NoValidHost: No valid host was found.\n"
        "2017-03-07 19:27:41.000 13551 INFO nova.x [-] after\n"
    )
    res, _ = ingest_text(tmp_path, "n-cond.log", text)
    a, b = rows(res)
    assert (a["line_no"], a["n_lines"]) == (1, 5)  # the blank line is counted, not joined
    assert a["continuation"].splitlines()[0] == "Traceback (most recent call last):"
    assert a["continuation"].endswith("NoValidHost: No valid host was found.")
    assert b["line_no"] == 7


def test_old_style_trace_lines_behind_a_prefix(tmp_path):
    pre = "nova-compute.log.1.2017-05-16_13:55:31 2017-05-16 00:00:04.500 2931"
    text = (
        f"{pre} ERROR nova.compute.manager [-] failed\n"
        f"{pre} TRACE nova.compute.manager Traceback (most recent call last):\n"
        f"{pre} TRACE nova.compute.manager ValueError\n"
    )
    res, _ = ingest_text(tmp_path, "OpenStack_2k.log", text)
    (a,) = rows(res)
    assert a["n_lines"] == 3 and a["service"] == "nova-compute"


def test_tempest_rest_client_record_with_multi_line_headers(tmp_path):
    text = (
        f"2016-06-28 13:55:55.228 2712 INFO tempest.lib.common.rest_client [{R} ] Request "
        "(ServersTestJSON:test_create_server): 202 POST http://127.0.0.1:8774/v2.1/servers 1.301s\n"
        f"2016-06-28 13:55:55.229 2712 DEBUG tempest.lib.common.rest_client [{R} ] Request - "
        "Headers: {'Content-Type': 'application/json', 'X-Auth-Token': '<omitted>'}\n"
        '        Body: {"server": {"name": "tempest-server-1", "flavorRef": "42"}}\n'
        "    Response - Headers: {'status': '202', 'content-length': '787', "
        f"'x-compute-request-id': '{R}'}}\n"
        '        Body: {"server": {"id": "' + U + '"}} _log_request_full '
        "/opt/stack/tempest/tempest/lib/common/rest_client.py:422\n"
        f"2016-06-28 13:55:56.000 2712 INFO tempest.lib.common.rest_client [{R} ] next\n"
    )
    res, _ = ingest_text(tmp_path, "tempest.txt", text)
    a, b, c = rows(res)
    assert a["service"] == "tempest" and a["user"] is None and a["request_id"] == R
    assert (a["http_method"], a["http_path"], a["http_status"], a["http_dur_s"]) == (
        "POST", "/v2.1/servers", 202, 1.301
    )
    assert (b["line_no"], b["n_lines"]) == (2, 4)
    assert b["message"].startswith("Request - Headers: {'Content-Type'")
    cont = b["continuation"].splitlines()
    assert [ln.split(":")[0].strip() for ln in cont] == ["Body", "Response - Headers", "Body"]
    assert c["line_no"] == 6


# --- 4. facts --------------------------------------------------------------------------------


def _facts(tmp_path, logger: str, messages: list[str], level: str = "INFO") -> list[dict]:
    text = "".join(
        f"2016-06-28 13:56:{i:02d}.000 1 {level} {logger} [{R} admin demo] {m}\n"
        for i, m in enumerate(messages)
    )
    res, _ = ingest_text(tmp_path, "screen-n-api.txt", text)
    return rows(res)


def test_wsgi_access_lines(tmp_path):
    a, b, c = _facts(tmp_path, "nova.osapi_compute.wsgi.server", [
        '192.168.1.5 "POST /v2.1/servers HTTP/1.1" status: 202 len: 787 time: 1.2980521',
        '10.0.0.1 "GET /v2.0/ports.json HTTP/1.1" 200 1234 0.012',
        '127.0.0.1 - - [28/Jun/2016 13:56:20] "DELETE /v2.0/ports/x.json?a=b HTTP/1.1" 204 168 '
        "0.091234",
    ])
    assert (a["http_method"], a["http_path"], a["http_status"], a["http_dur_s"]) == (
        "POST", "/v2.1/servers", 202, 1.2980521
    )
    assert (b["http_method"], b["http_path"], b["http_status"], b["http_dur_s"]) == (
        "GET", "/v2.0/ports.json", 200, 0.012
    )
    assert (c["http_method"], c["http_path"], c["http_status"], c["http_dur_s"]) == (
        "DELETE", "/v2.0/ports/x.json?a=b", 204, 0.091234
    )


def test_tempest_client_line(tmp_path):
    (a,) = _facts(tmp_path, "tempest.lib.common.rest_client", [
        "Request (ServersTestJSON:test_create_server): 202 POST "
        "http://127.0.0.1:8774/v2.1/servers 1.301s",
    ])
    assert (a["http_method"], a["http_path"], a["http_status"], a["http_dur_s"]) == (
        "POST", "/v2.1/servers", 202, 1.301
    )
    # the same text from another logger is not a client line
    (b,) = _facts(tmp_path, "nova.api", ["Request (x:y): 202 POST http://h/v2.1/servers 1.3s"])
    assert b["http_method"] is None


def test_tempest_client_line_without_duration(tmp_path):
    (a,) = _facts(tmp_path, "tempest.lib.common.rest_client", [
        "Request (main): 200 POST http://127.0.0.1:5000/v2.0/tokens",
    ])
    assert (a["http_method"], a["http_path"], a["http_status"], a["http_dur_s"]) == (
        "POST", "/v2.0/tokens", 200, None
    )


def test_took_lines(tmp_path):
    a, b = _facts(tmp_path, "nova.compute.manager", [
        f"[instance: {U}] Took 12.3 seconds to spawn the instance on the hypervisor.",
        f"[instance: {U}] Took 14 seconds to build instance.",
    ])
    assert (a["took_s"], a["took_what"], a["instance_uuid"]) == (
        12.3, "spawn the instance on the hypervisor", U
    )
    assert (b["took_s"], b["took_what"]) == (14.0, "build instance")


def test_oslo_messaging_lines(tmp_path):
    m = "0123456789abcdef0123456789abcdef"
    got = _facts(tmp_path, "oslo_messaging._drivers.amqpdriver", [
        f"CALL msg_id: {m} exchange 'nova' topic 'conductor' _send /x/amqpdriver.py:448",
        f"CAST unique_id: {m} exchange 'nova' topic 'compute.cmp1' _send /x/amqpdriver.py:448",
        f"CAST unique_id: {m} FANOUT topic 'scheduler' _send /x/amqpdriver.py:448",
        f"received message msg_id: {m} reply to reply_ed364df8215d4ec7a29da1c926970948 __call__ "
        "/x/amqpdriver.py:194",
        f"received message with unique_id: {m} __call__ /x/amqpdriver.py:196",
        f"sending reply msg_id: {m} reply queue: reply_ed364df8215d4ec7a29da1c926970948 time "
        "elapsed: 0.0124881290001s _send_reply /x/amqpdriver.py:73",
        f"received reply msg_id: {m} __call__ /x/amqpdriver.py:296",
        "Pool creating new connection create /x/amqp.py:70",
    ], level="DEBUG")
    assert [(g["rpc_kind"], g["rpc_topic"]) for g in got] == [
        ("call", "conductor"),
        ("cast", "compute.cmp1"),
        ("cast", "scheduler"),
        ("recv_call", None),
        ("recv_cast", None),
        ("reply_send", None),
        ("reply_recv", None),
        (None, None),
    ]
    assert [g["rpc_id"] for g in got] == [m] * 7 + [None]
    assert got[0]["message"] == f"CALL msg_id: {m} exchange 'nova' topic 'conductor'"


def test_lock_lines(tmp_path):
    got = _facts(tmp_path, "oslo_concurrency.lockutils", [
        'Lock "compute_resources" acquired by "nova.compute.resource_tracker.'
        '_update_available_resource" :: waited 0.000s',
        'Lock "compute_resources" released by "nova.compute.resource_tracker.'
        '_update_available_resource" :: held 0.212s',
        f'Lock "{U}" acquired by "nova.compute.manager._locked_do_build_and_run_instance" :: '
        "waited 3.200s",
        'Lock "compute_resources" "released" by "nova.compute.resource_tracker.ResourceTracker.'
        'instance_claim" :: held 0.010s',
        'Acquiring lock "compute_resources" by "nova.compute.resource_tracker.ResourceTracker.'
        'instance_claim"',
    ], level="DEBUG")
    assert [(g["lock_name"], g["lock_waited_s"], g["lock_held_s"]) for g in got] == [
        ("compute_resources", 0.0, None),
        ("compute_resources", None, 0.212),
        (U, 3.2, None),
        ("compute_resources", None, 0.010),
        (None, None, None),
    ]


def test_ordinary_messages_have_no_facts(tmp_path):
    (a,) = _facts(tmp_path, "nova.compute.manager", ["Token validated for the GET request"])
    facts = ["http_method", "http_status", "took_s", "rpc_kind", "rpc_id", "lock_name"]
    assert all(a[k] is None for k in facts)
