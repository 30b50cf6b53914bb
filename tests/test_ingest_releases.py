"""Record assembly on synthetic logs written in each release's exact format (``synth_oslo``):
modern ERROR-prefixed tracebacks (oslo.log >= 1.2.0), old TRACE lines, a deployment prefix with
the request context, devstack under journald; os-log-merger output mixing other programs'
entries; lines without timestamps; timestamps outside the datetime[ns] range. Every case runs on
the Polars path and, when it is built, on the native tokenizer, which must agree."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal
from synth_oslo import devstack_journal, record

from stacklens.analyze.templates import error_text
from stacklens.ingest.formats import FORMATS, detect_format
from stacklens.ingest.tokenize import FileChunk, native_available, tokenize_batch

FMT = {f.name: f for f in FORMATS}
R = "req-c354514b-0c97-415e-ba7f-18750569f103 u1 p1 - - -"
R2 = "req-0c5f0c3e-86a1-4c55-a0b4-e4a1a29c7a11 u1 p1 - - -"
U = "4f1713a9-2ad0-4dce-8b3d-30dea178e0a5"
PATHS = [False, True] if native_available() else [False]


def tok(lines: list[str], fmt: str, **kw):
    """Tokenize on every available path; assert they agree; return the Polars result."""
    chunks = [FileChunk("f.log", ("\n".join(lines) + "\n").encode(), "h", "nova-api", 2016)]
    res = [tokenize_batch(chunks, FMT[fmt], native=n, **kw) for n in PATHS]
    for other in res[1:]:
        assert_frame_equal(other.events, res[0].events)
        assert_frame_equal(other.quarantine, res[0].quarantine)
        assert other.stats == res[0].stats
    return res[0]


def _api_failure(prefix: str, ts: str = "2025-03-01 10:00:00.200") -> list[str]:
    return (
        record("2025-03-01 10:00:00.100", 77, "INFO", "nova.api", "start", ctx=R)
        + record(ts, 77, "ERROR", "nova.api.openstack.wsgi", "Unexpected exception in API method",
                 ctx=R, exc="chain", prefix=prefix)
        # LOG.exception('') in the same millisecond, pid and logger: its own record
        + record(ts, 77, "ERROR", "nova.api.openstack.wsgi", "", ctx=R, exc="plain",
                 prefix=prefix, instance=U)
        # a genuine next record, same millisecond/pid/logger, no traceback
        + record(ts, 77, "ERROR", "nova.api.openstack.wsgi", "next genuine record", ctx=R2)
        + record("2025-03-01 10:00:00.300", 77, "WARNING", "nova.compute", "retrying", ctx=R,
                 exc="plain", prefix=prefix)
        + record("2025-03-01 10:00:00.400", 77, "INFO", "nova.api", "done", ctx=R)
    )


@pytest.mark.parametrize("prefix", ["modern", "ctx", "trace"])
def test_tracebacks_join_their_record(prefix):
    """Kilo on (``ERROR`` prefix), a context-carrying prefix, Juno and older (``TRACE``): one
    event per record, the traceback in its continuation, the next genuine record kept."""
    lines = _api_failure(prefix)
    ev = tok(lines, "oslo").events
    assert ev.get_column("message").to_list() == [
        "start", "Unexpected exception in API method", f"[instance: {U}] ", "next genuine record",
        "retrying", "done",
    ]
    assert ev.get_column("n_lines").sum() == len(lines)
    assert ev.filter(pl.col("level") == "ERROR").height == 3
    assert ev.get_column("n_lines").to_list()[1] > 10  # chained: both tracebacks
    assert ev.get_column("request_id").to_list()[3] == R2.split()[0]
    cont = ev.get_column("continuation").to_list()
    assert "The above exception was the direct cause" in cont[1]
    assert "Traceback (most recent call last):" in cont[4]  # a WARNING with exc_info


def test_trivial_message_gets_the_exception_line():
    ev = tok(_api_failure("modern"), "oslo").events.filter(pl.col("level") == "ERROR")
    texts = [error_text(m, c) for m, c in ev.select("message", "continuation").iter_rows()]
    assert texts[0] == "Unexpected exception in API method"
    assert texts[1] == f"[instance: {U}] RuntimeError: Timed out waiting for a reply to message ID 8a3"
    assert texts[2] == "next genuine record"


def test_unterminated_traceback_ends_at_a_new_key():
    """A file cut inside a traceback, then other records: nothing after the key changes is
    swallowed."""
    lines = _api_failure("modern")[:6]  # header + start of the chained traceback
    lines += record("2025-03-01 10:00:00.201", 77, "ERROR", "nova.api.openstack.wsgi", "later", ctx=R)
    ev = tok(lines, "oslo").events
    assert ev.get_column("message").to_list()[-1] == "later"
    assert ev.height == 3


def test_devstack_journal_tracebacks():
    """devstack under systemd: journald stamps each line (own microseconds), no oslo time."""
    lines = devstack_journal("ctl", "devstack@n-cpu.service", 10884, "ERROR", "nova.compute.manager",
                             "Build failed", ctx=f"None {R}", exc="plain")
    lines += devstack_journal("ctl", "devstack@n-cpu.service", 10884, "INFO", "nova.compute.manager",
                              "ok", ctx=f"None {R}", usec=500)
    ev = tok(lines, "syslog").events
    assert ev.get_column("message").to_list() == ["Build failed", "ok"]
    assert ev.get_column("n_lines").to_list() == [len(lines) - 1, 1]


def test_merged_other_programs_are_not_continuations():
    """os-log-merger (oslogmerger.py LogEntry.__str__, EXTRALINES_PADDING = 40 spaces): entries
    of non-oslo files keep their own timestamp text and are not glued to the oslo record."""
    pad = " " * 40
    lines = [
        "2018-10-11 08:00:49.397 [napi] 16 INFO nova.api.openstack.requestlog [req-53208dc7-ecfa-"
        "4513-ab32-45dfbca11606 u p - default default] 172.16.2.13 \"OPTIONS /\" status: 200",
        pad + "multiline part 1",
        "Oct 11 08:00:50 [messages] overcloud-controller-1 test: entry 2",
        pad + "entry 2 extra",
        "Oct 11 08:00:50.193729 [messages2] overcloud-controller-1 test: ms 6",
        "2018-10-11 08:00:50.500 [ping] 64 bytes from 10.0.0.5: icmp_seq=1 ttl=64 time=0.04 ms",
        "2018-10-11T08:00:50.600000Z [qemu] qemu-kvm: terminating on signal 15",
        "[275514.814982] [dmesg] tap0: entered promiscuous mode",
        "2018-10-11 08:00:50.902 [napi] 16 INFO nova.api.openstack.requestlog [-] done",
        pad + "more multiline",
    ]
    assert detect_format(lines).name == "oslo_merged"
    res = tok(lines, "oslo_merged")
    ev = res.events
    assert ev.get_column("n_lines").to_list() == [2, 2]
    assert ev.get_column("continuation").to_list() == [pad + "multiline part 1", pad + "more multiline"]
    q = res.quarantine
    assert q.get_column("line_no").to_list() == [3, 4, 5, 6, 7, 8]
    assert set(q.get_column("reason")) == {"merged_other"}
    assert ("f.log", "merged_other", "info", 6) in [s[:4] for s in res.stats]


def test_lines_without_timestamps():
    """A format string without %(asctime)s: records in file order, ts_ns null, said in stats,
    request ids still parsed; tracebacks still join."""
    lines = [
        f"INFO nova.compute.manager [{R}] [instance: {U}] Starting instance...",
        f"12 ERROR nova.compute.manager [{R}] Build failed",
        "12 ERROR nova.compute.manager Traceback (most recent call last):",
        '12 ERROR nova.compute.manager   File "/x.py", line 1, in f',
        "12 ERROR nova.compute.manager ValueError: boom",
        "12 ERROR nova.compute.manager ",
        f"DEBUG oslo_concurrency.lockutils [{R2}] Lock acquired",
    ]
    assert detect_format(lines).name == "oslo_nots"
    res = tok(lines, "oslo_nots")
    ev = res.events
    assert ev.height == 3
    assert ev.get_column("ts_ns").null_count() == 3
    assert ev.get_column("line_no").to_list() == [1, 2, 7]
    assert ev.get_column("request_id").to_list() == [R.split()[0], R.split()[0], R2.split()[0]]
    assert ev.get_column("instance_uuid").to_list()[0] == U
    assert ev.get_column("n_lines").to_list() == [1, 5, 1]
    assert res.quarantine.height == 0
    assert [s for s in res.stats if s[1] == "no_timestamp"][0][3] == 3


_WRAP = {  # each wrapper's form of one oslo line ``YYYY-MM-DD HH:MM:SS.mmm <rest>``
    "oslo": lambda ln: ln,
    "oslo_merged": lambda ln: f"{ln[:23]}000 [NAPI] {ln[24:]}",  # os-log-merger's entry
    "oslo_prefixed": lambda ln: "nova-api.log.1.2017-05-16_13:53:08 " + ln,  # loghub
    "syslog": lambda ln: "Mar  1 10:00:00 ctl nova-api[77]: " + ln,  # rsyslog, oslo time
}


@pytest.mark.parametrize("fmt", list(_WRAP))
@pytest.mark.parametrize("prefix", ["modern", "trace", "ctx"])
@pytest.mark.parametrize("exc", ["plain", "chain"])
def test_traceback_styles_in_every_wrapper(fmt, prefix, exc):
    """Every traceback style (Kilo+ ``ERROR`` prefix, Juno ``TRACE``, a prefix with the
    context) inside every wrapper stays with its record on both paths, nothing quarantined.
    Before session 32 the os-log-merger form of the ``ERROR``-prefixed styles matched the
    merger's other-program mark and was quarantined as ``merged_other``, the error record
    losing its traceback (4 of these 24 cases)."""
    lines = record("2025-03-01 10:00:00.200", 77, "ERROR", "nova.api.openstack.wsgi",
                   "Unexpected exception", ctx=R, exc=exc, prefix=prefix)
    lines += record("2025-03-01 10:00:00.300", 77, "INFO", "nova.api", "later", ctx=R)
    res = tok([_WRAP[fmt](ln) for ln in lines], fmt)
    assert res.events.select("message", "n_lines").rows() == [
        ("Unexpected exception", len(lines) - 1), ("later", 1)]
    assert "Timed out waiting for a reply" in res.events.get_column("continuation")[0]
    assert res.quarantine.height == 0


@pytest.mark.parametrize("fmt", ["oslo", "oslo_merged", "oslo_prefixed"])
def test_timestamps_outside_ns_range(fmt):
    """Years outside 1970..2199 (fields.TS_YEARS: any two times' difference fits INT64), month
    13, day 99: bad_timestamp, never a crash or a wrapped time."""
    pre = {"oslo": "", "oslo_merged": "", "oslo_prefixed": "nova-api.log "}[fmt]
    alias = " [NAPI]" if fmt == "oslo_merged" else ""
    dates = ["2016-06-28 13:56:12.360", "1677-09-22 00:00:00.000", "1600-01-01 00:00:00.000",
             "2262-01-01 00:00:00.000", "9999-12-31 23:59:59.999", "0000-01-01 00:00:00.000",
             "2016-13-28 13:56:12.360", "2016-06-99 13:56:12.360", "1970-01-01 00:00:00.000",
             "2199-12-31 23:59:59.999", "1969-12-31 23:59:59.999", "2200-01-01 00:00:00.000"]
    lines = [f"{pre}{d}{alias} 1 INFO nova.x [-] m{i}" for i, d in enumerate(dates)]
    res = tok(lines, fmt)
    assert res.events.get_column("message").to_list() == ["m0", "m8", "m9"]
    ts = res.events.get_column("ts_ns").cast(pl.Datetime("ns"))
    assert [t.year for t in ts.to_list()] == [2016, 1970, 2199]
    assert res.quarantine.get_column("reason").to_list() == ["bad_timestamp"] * 9


_FIELD = st.one_of(st.integers(0, 99_999), st.sampled_from([0, 1, 12, 13, 28, 29, 31, 60, 99]))


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(y=st.integers(0, 9999), mo=_FIELD, d=_FIELD, h=_FIELD, mi=_FIELD, s=_FIELD,
       frac=st.sampled_from(["", ".0", ".999", ".123456789", ",5"]))
def test_extreme_timestamp_fields(y, mo, d, h, mi, s, frac):
    """Any field values: both paths agree, nothing raises, every time fits datetime[ns]."""
    line = f"{y:04d}-{mo % 100:02d}-{d % 100:02d} {h % 100:02d}:{mi % 100:02d}:{s % 100:02d}{frac}"
    res = tok([line + " 1 INFO nova.x [-] m", "cont"], "oslo")
    assert res.events.height + res.quarantine.height >= 1
    if res.events.height:
        res.events.get_column("ts_ns").cast(pl.Datetime("ns")).dt.year()  # no overflow
        assert 1970 <= res.events.get_column("ts_ns").cast(pl.Datetime("ns")).dt.year()[0] <= 2199


def test_analyze_end_to_end_untimed_and_trivial_errors(tmp_path):
    """The whole pipeline (CLI) on one untimed file and one timed file whose failure is a
    LOG.exception('') with a modern traceback: no crash on null times, the untimed records are
    said in the ingest stats, and the failure's template is the exception line."""

    logs = tmp_path / "ctl"
    logs.mkdir()
    r1, r2 = R.split()[0], R2.split()[0]
    (logs / "nova-api.log").write_text(
        f'INFO nova.osapi_compute.wsgi.server [{R}] 10.0.0.1 "POST /v2.1/servers HTTP/1.1" '
        "status: 202 len: 10 time: 0.5\n"
        f"INFO nova.compute.manager [{R}] [instance: {U}] Took 5.00 seconds to build instance.\n"
    )
    # the API logs the exception, then its access line when the 500 response is sent; a 2xx
    # request with an ERROR line would be a success with a warning, not a failure
    lines = record("2025-03-01 10:00:00.050", 7, "ERROR", "nova.api.openstack.wsgi", "", ctx=R2,
                   exc="plain")
    lines += record("2025-03-01 10:00:00.100", 7, "INFO", "nova.osapi_compute.wsgi.server",
                    '10.0.0.1 "GET /v2.1/servers HTTP/1.1" status: 500 len: 10 time: 0.1', ctx=R2)
    (logs / "nova-compute.log").write_text("\n".join(lines) + "\n")
    rep, kinds = _analyze(logs, tmp_path / "run")
    assert kinds["no_timestamp"] == 2
    errs = {e["example_request_id"]: e["template"] for e in rep["errors"]}
    assert errs[r2].startswith("RuntimeError: Timed out waiting")
    assert r1 != r2


def _analyze(logs, out) -> tuple[dict, dict]:
    """``stacklens analyze LOGS --out OUT`` as a subprocess: (report.json, ingest stats by kind)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.run([sys.executable, "-m", "stacklens", "analyze", str(logs), "--out", str(out)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rep = json.loads((out / "report.json").read_text())
    return rep, {s["kind"]: s["count"] for s in rep["ingest"]["stats"]}


def test_analyze_extreme_times_of_one_request(tmp_path):
    """The earliest and the latest readable times in one request (and unreadable ones beside
    them): the trace and the analyses subtract them without INT64 overflow (issue 15; found by
    bench/fuzz_ingest.py --analyze)."""
    logs = tmp_path / "logs"
    logs.mkdir()
    ctx = "[req-ac769a75-c566-4e77-87c0-37f8324f6463 - -]"
    dates = ["2017-03-07 19:20:07.100", "1970-01-01 00:00:00.000", "2199-12-31 23:59:59.999",
             "2262-04-11 23:47:16.854", "0001-01-01 00:00:00.000"]
    (logs / "q-svc.log").write_text(
        "".join(f"{d} 9029 INFO neutron.manager {ctx} m{i}\n" for i, d in enumerate(dates)))
    rep, kinds = _analyze(logs, tmp_path / "run")
    assert kinds["bad_timestamp"] == 2
