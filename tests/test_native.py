"""The native tokenizer (``stacklens_native``, built from ``native/``) gives the same tables as the
Polars path it replaces: ``events``, ``quarantine`` and ``ingest_stats`` are compared frame for
frame on every real log under ``shared/data/oslo-logs`` and on generated input (valid lines of
every format with their edge cases, garbage, CRLF, NUL and other control bytes, invalid UTF-8,
long lines, several files per batch, batches cut into many small native tasks).

Skipped as a whole when the extension is not built (``pip install .``, see
``native/README.md``), except under ``STACKLENS_REQUIRE_NATIVE=1`` (CI), where that is an error.
"""

from __future__ import annotations

import os
import random
import string

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

if os.environ.get("STACKLENS_REQUIRE_NATIVE") == "1":  # CI: a missing extension fails here
    import stacklens_native  # noqa: F401
else:
    pytest.importorskip(
        "stacklens_native", reason="stacklens_native is not built (pip install .)"
    )

from conftest import DATA, need  # noqa: E402

from stacklens.ingest import tokenize as tok  # noqa: E402
from stacklens.ingest.formats import FORMATS  # noqa: E402
from stacklens.ingest.pipeline import ingest  # noqa: E402
from stacklens.ingest.tokenize import FileChunk, tokenize_batch  # noqa: E402

FMT = {f.name: f for f in FORMATS}
R = "req-c354514b-0c97-415e-ba7f-18750569f103"
G = "req-0c5f0c3e-86a1-4c55-a0b4-e4a1a29c7a11"
U = "4f1713a9-2ad0-4dce-8b3d-30dea178e0a5"


def assert_same(chunks: list[FileChunk], fmt_name: str) -> None:
    """Both paths on the same batch: equal frames (values, dtypes, order), stats and lines."""
    fmt = FMT[fmt_name]
    py = tokenize_batch(chunks, fmt, native=False)
    nat = tokenize_batch(chunks, fmt, native=True)
    assert_frame_equal(nat.events, py.events)
    assert_frame_equal(nat.quarantine, py.quarantine)
    assert nat.stats == py.stats
    assert nat.lines == py.lines


def chunks_of(datas: list[bytes], year: int = 2016) -> list[FileChunk]:
    return [FileChunk(f"f{i}.log", d, f"h{i % 2}", "svc" if i % 3 else None, year)
            for i, d in enumerate(datas)]


# --- the real logs ---------------------------------------------------------------------------


def _ingest_both(monkeypatch, path, **kw):
    out = {}
    for flag in ("0", "1"):
        monkeypatch.setenv("STACKLENS_NATIVE", flag)
        out[flag] = ingest([str(path)], **kw)
    return out["0"], out["1"]


def test_real_logs_identical(monkeypatch):
    """Every real log, end to end through ingest(): the three tables are equal."""
    py, nat = _ingest_both(monkeypatch, need(DATA / "oslo-logs"))
    assert nat.events.height > 100_000
    assert_frame_equal(nat.events, py.events)
    assert_frame_equal(nat.quarantine, py.quarantine)
    assert_frame_equal(nat.ingest_stats, py.ingest_stats)


def test_real_logs_identical_in_small_tasks(monkeypatch):
    """The same with every large file cut into many native tasks (cuts at record headers) and
    small batches: line numbers and records must not depend on where the cuts fall."""
    monkeypatch.setattr(tok, "_NATIVE_TASK_BYTES", 1 << 16)
    py, nat = _ingest_both(monkeypatch, need(DATA / "oslo-logs" / "devstack-gate-cinder-ci-2016"),
                           batch_bytes=8 << 20)
    assert_frame_equal(nat.events, py.events)
    assert_frame_equal(nat.quarantine, py.quarantine)
    assert_frame_equal(nat.ingest_stats, py.ingest_stats)


def test_fast_paths_are_on():
    """The hand-written fast paths (oslo header, DEBUG suffix, traceback key, windowed
    redaction) match the patterns they were written for. When this fails after a change to
    formats.py, tokenize.py or redact.py, the native path still gives the same tables (it falls
    back to the regexes) but slower: update the constants and their proofs in native/src/tok.rs
    and native/src/fast.rs.

    Redaction: the windowed fast path (native/src/redact.rs) is written for the rule set of
    :mod:`stacklens.ingest.redact` (issue 15: 21 rules, PEM, SAML, keyed forms); a change to
    the rules turns it off until its constants and proof are updated."""
    fmt = FMT["oslo"]
    on = tok._native.fast_paths(fmt.name, tok._native_patterns(fmt))
    assert on == {"oslo_header": True, "debug_suffix": True, "tb_line": True, "redact": True}


# --- generated input ----------------------------------------------------------------------------

_LEVELS = ["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL", "AUDIT", "TRACE", "ABC", "DEBUGGING1"]
_CTX = [
    "", "[-] ", f"[{R} admin demo] ", f"[{R} u1 p1 - - -] ", f"[None {R} admin admin] ",
    f"[{G} {R} u1 p1 - - -] ", f"[{R} None None] ", f"[{R}] ", "[req-x] ", "[None req-a] ",
    "[ ] ", "[] ", "[\u00e9t\u00e9 x] ", "[instance: " + U + "] ", "[unclosed ", "[a]]",
]
_MSGS = [
    "hello", "", " ", f"[instance: {U}] Claim successful", f"[instance: {U}]x", "[instance: zz] y",
    "GET /v2/servers HTTP/1.1 status: 200 len: 10 time: 0.1",
    "X-Auth-Token: gAAAAABcdefghijklmnopqrstuvwxyz0123456789", 'password": "s3cr3t"',
    "{'password': 'x', 'admin_pass': 'y'}", "token=abc&secret=def", "rabbit://u:p@h1:5672,u2:p2@h2/",
    "MII" + "A" * 70, "to\u212aen=abc", "pa\u017f\u017fword: zz", '"token": {"id": "abcd"}',
    "done {{(pid=1234) f /opt/stack/nova/nova/a.py:12}}", "x from (pid=9) y /opt/a/b.py:33",
    "tail /x.py:\u0663", "caf\u00e9 \u00fc\u00e7 \u4e2d\u6587", "a\tb\x0bc", "}} {{(pid=1) a}}",
    "Took 12.3 seconds to spawn", "Lock \"x\" acquired by \"f\" :: waited 0.001s",
]


def _date(r: random.Random) -> str:
    if r.random() < 0.7:
        y, mo, d = r.randint(2010, 2030), r.randint(1, 12), r.randint(1, 28)
        h, mi, s = r.randint(0, 23), r.randint(0, 59), r.randint(0, 59)
    else:  # the edges: leap days and seconds, out-of-range fields, years that overflow ns
        y = r.choice([0, 1500, 1677, 1678, 2000, 2015, 2016, 2100, 2261, 2262, 9999])
        mo, d = r.randint(0, 13), r.randint(0, 32)
        h, mi, s = r.randint(0, 25), r.randint(0, 61), r.choice([0, 59, 60, 61, 99])
    date = f"{y:04d}-{mo:02d}-{d:02d} {h:02d}:{mi:02d}:{s:02d}"
    frac = r.choice(["", ".", ".1", ".123", ",5", ".123456", ".123456789", ".1234567891", ".12345678901"])
    date += frac
    if r.random() < 0.03:  # a non-ASCII digit (accepted by the header regex's \d)
        i = r.choice([0, 3, 6, 9, 12, 18, len(date) - 1])
        date = date[:i] + "\u0663" + date[i + 1:]
    return date


def _tail(r: random.Random) -> str:
    pid = r.choice(["", f"{r.randint(1, 99999)} ", "99999999999 ", "0012 ", "\u0663 "])
    level = r.choice(_LEVELS)
    logger = r.choice(["nova.compute.manager", "x", "_a-b.c", "caf\u00e9", "9bad", "n:"])
    return f"{pid}{level} {logger} {r.choice(_CTX)}{r.choice(_MSGS)}"


def _header(r: random.Random, fmt: str) -> str:
    if fmt == "oslo":
        return f"{_date(r)} {_tail(r)}"
    if fmt == "oslo_prefixed":
        prog = r.choice(["nova-api.log.1.2017-05-16_13:53:08", "x.log", "n\u00e9.log", "1bad.log"])
        return f"{prog} {_date(r)} {_tail(r)}"
    if fmt == "oslo_merged":
        return f"{_date(r)} [{r.choice(['NEUTRONSRV', 'NOVACPU', 'x-1', 'bad alias'])}] {_tail(r)}"
    mon = r.choice(["Jan", "Feb", "Jun", "Sep", "Dec", "Foo", "jan"])
    day = r.choice([" 5", "05", "25", "29", "30", "31", "00", "\u0663\u0663"])
    tim = r.choice(["09:29:50", "23:59:60", "24:00:00", "09:29:61", "09:29:50.123456",
                    "09:29:50.1234567891", "09:29:5\u0663"])
    host = r.choice(["ctl1", "a.b-c", "h\u00e9"])
    prog = r.choice(["nova-compute[1234]", "devstack@n-api.service[10884]", "neutron-server",
                     "x[99999999999]"])
    inner = f"{_date(r)} " if r.random() < 0.5 else r.choice(["", "0000-01-01 00:00:00 "])
    return f"{mon} {day} {tim} {host} {prog}: {inner}{_tail(r)}"


_GARBAGE = [
    b"", b"\r", b"+ set -x", b"+ ", b"  Traceback (most recent call last):", b"\x00\x01binary\x7f",
    b"\x1f unit sep", b"\xff\xfe\xfdbad utf8", b"\xe2\x82", b"ok \xc3\xa9 \xef\xbf\xbd", b"\x1b[0m ansi",
    b'  File "/opt/x.py", line 1', b"password=hunter2 in a traceback", b"\t\x0b\x0c",
]


def _line(r: random.Random, fmt: str) -> bytes:
    x = r.random()
    if x < 0.45:
        line = _header(r, fmt).encode()
    elif x < 0.8:
        line = r.choice(_GARBAGE)
    else:
        line = bytes(r.randrange(256) for _ in range(r.randint(0, 40)))
    if r.random() < 0.02:
        line += b"y" * r.choice([70_000, 65_536, 65_537]) + "\u00e9".encode() * 10
    if r.random() < 0.05:  # lone CR and CRLF inside the data
        line += r.choice([b"\r", b"\r\r", b"\rx"])
    return line


def _file(r: random.Random, fmt: str, n: int) -> bytes:
    data = b"\n".join(_line(r, fmt) for _ in range(n))
    return data + r.choice([b"", b"\n", b"\r\n", b"\n\n"])


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**32 - 1), fmt=st.sampled_from(sorted(FMT)),
       sizes=st.lists(st.integers(0, 60), min_size=1, max_size=4))
def test_generated_batches(seed, fmt, sizes):
    r = random.Random(seed)
    assert_same(chunks_of([_file(r, fmt, n) for n in sizes]), fmt)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(datas=st.lists(st.binary(max_size=300), min_size=1, max_size=3),
       fmt=st.sampled_from(sorted(FMT)))
def test_random_bytes(datas, fmt):
    assert_same(chunks_of(datas), fmt)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=st.text(alphabet=st.characters(codec="utf-8"), max_size=200),
       fmt=st.sampled_from(sorted(FMT)))
def test_random_text_after_a_header(text, fmt):
    """Any text as the rest of a header line and as continuation lines."""
    r = random.Random(len(text))
    head = _header(r, fmt)
    data = f"{head}{text}\n{text}\n{head} {text}".encode()
    assert_same(chunks_of([data]), fmt)


def test_many_timestamps():
    """Thousands of dates, fractions and syslog times with their edge cases in one batch each."""
    r = random.Random(7)
    for fmt in sorted(FMT):
        lines = [_header(r, fmt) for _ in range(4000)]
        assert_same(chunks_of(["\n".join(lines).encode()], year=r.choice([2015, 2016])), fmt)


def test_syslog_years():
    r = random.Random(3)
    data = "\n".join(_header(r, "syslog") for _ in range(300)).encode()
    for year in (1000, 1999, 2016, 2024, 9999, 999, 10_000):  # outside 1000..9999: Polars path
        assert_same(chunks_of([data, data], year=year), "syslog")


def test_secrets_and_folds():
    """Redaction: every secret pattern, overlapping anchors, Unicode case folds (K/U+212A,
    s/U+017F), secrets spanning continuation lines, in messages, continuations and quarantine."""
    words = ["token", "TOKEN", "Token_Id", "x-auth-token", "X-Subject-Token", "x-service-token",
             "password", "passwd", "admin_pass", "admin_password", "secret", "auth_token",
             "to\u212aen", "pa\u017f\u017fword", "passecret", "secretoken", "gAAAAA" + "b" * 30,
             "MII" + "Q" * 64, "://u:p@h", ",u:p@h", '"token": {"x": 1, "id": "t0k"}', '"id": "x"']
    seps = ['": "', "': '", "=", ": ", "\"=\"", " = ", "\n", " ", ",", "@", "://"]
    r = random.Random(11)
    parts = []
    for _ in range(1500):
        msg = "".join(r.choice(words) + r.choice(seps) + r.choice(["v4lue", "a b", "\u00e9", ""])
                      for _ in range(r.randint(1, 4)))
        head = f"2016-06-28 13:56:12.360 29140 {r.choice(['DEBUG', 'INFO'])} nova.x [-] "
        parts.append(head + msg.replace("\n", " "))
        parts.append(msg)  # continuation (or before the first record)
    data = "\n".join(parts).encode()
    assert_same(chunks_of([b"\x01" + data, data]), "oslo")


def test_long_lines_and_many_files():
    r = random.Random(5)
    big = ("2016-06-28 13:56:12.360 1 INFO n [-] " + "\u00e9" * 40_000 + "x" * 40_000).encode()
    files = [big + b"\n" + b"z" * 1_000_000 + b"\n" + big]
    files += [_file(r, "oslo", r.randint(0, 5)) for _ in range(300)]
    files += [b"", b"\n", b"\r\n", b"no newline at the end"]
    assert_same(chunks_of(files), "oslo")


def test_crlf_and_control_bytes_everywhere():
    r = random.Random(9)
    lines = [_header(r, "oslo") for _ in range(500)]
    data = "\r\n".join(lines).encode()
    noisy = bytes(b if r.random() > 0.01 else r.choice(b"\x00\x1f\r\x7f\xff") for b in data)
    assert_same(chunks_of([data, noisy]), "oslo")


def test_cut_points_inside_large_files(monkeypatch):
    """Files larger than a native task are cut at record headers: a cut must not change line
    numbers, records or quarantine order (before_first_record, bad timestamps, binary)."""
    monkeypatch.setattr(tok, "_NATIVE_TASK_BYTES", 1 << 16)
    r = random.Random(13)
    for fmt in sorted(FMT):
        datas = [_file(r, fmt, 3000), _file(r, fmt, 10), _file(r, fmt, 2500)]
        assert_same(chunks_of(datas), fmt)


def test_empty_batches():
    for fmt in sorted(FMT):
        assert_same([], fmt)
        assert_same(chunks_of([b""]), fmt)
        assert_same(chunks_of([b"", b"\n\n"]), fmt)
        assert_same(chunks_of([b"no header here\n+ shell\n"]), fmt)


def test_env_switch(monkeypatch):
    """STACKLENS_NATIVE=0 forces the Polars path; unset, the native one runs."""
    monkeypatch.setenv("STACKLENS_NATIVE", "0")
    assert not tok.native_wanted()
    monkeypatch.delenv("STACKLENS_NATIVE")
    assert tok.native_wanted() and tok.native_available()
    # the result types agree with the schema whichever path runs
    data = "".join(random.Random(1).choice(string.ascii_letters) for _ in range(10)).encode()
    res = tokenize_batch(chunks_of([b"2016-06-28 13:56:12 1 INFO a [-] m\n" + data]), FMT["oslo"])
    assert res.events.schema["pid"] == pl.Int32 and res.events.height == 1


# --- record assembly of issue 7 (modern tracebacks, os-log-merger neighbours, time range) -----


def _tb_file(r: random.Random, fmt: str, n: int) -> bytes:
    """Records with modern / TRACE / context-prefixed tracebacks (synth_oslo, from oslo.log's
    formatException), same-millisecond genuine records, merged neighbours, garbage between."""
    from synth_oslo import record

    out: list[str] = []
    for i in range(n):
        ts = f"2025-03-01 10:00:{r.randint(0, 2):02d}.{r.choice([100, 200]):03d}"
        lines = record(ts, r.choice([7, 8]), r.choice(["ERROR", "ERROR", "WARNING", "INFO"]),
                       r.choice(["nova.a", "nova.b"]), r.choice(["", "failed", "x " * 3]),
                       ctx=r.choice(["-", f"{R} u p"]), instance=r.choice(["", U]),
                       exc=r.choice([None, "plain", "chain"]),
                       prefix=r.choice(["modern", "ctx", "trace"]))
        if r.random() < 0.2:  # cut a traceback short
            lines = lines[: r.randint(1, len(lines))]
        if fmt == "oslo_merged":
            alias = r.choice(["NAPI", "NCPU"])
            lines = [ln[:23] + f" [{alias}]" + ln[23:] for ln in lines]
            if r.random() < 0.3:
                lines.append(r.choice([
                    f"{ts} [ping] 64 bytes from 10.0.0.{i}: icmp_seq={i}",
                    "Oct 11 08:00:50 [messages] ctl1 kernel: tap0 up",
                    " " * 40 + "padded extra line",
                ]))
        elif fmt == "oslo_prefixed":
            lines = ["nova-api.log.1 " + ln for ln in lines]
        if r.random() < 0.1:
            lines.append(r.choice(_GARBAGE).decode("utf-8", "replace"))
        out += lines
    return ("\n".join(out) + "\n").encode()


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**32 - 1), fmt=st.sampled_from(["oslo", "oslo_merged", "oslo_prefixed"]),
       sizes=st.lists(st.integers(0, 30), min_size=1, max_size=3))
def test_tracebacks_and_neighbours(seed, fmt, sizes):
    r = random.Random(seed)
    assert_same(chunks_of([_tb_file(r, fmt, n) for n in sizes]), fmt)


def test_tracebacks_across_task_cuts(monkeypatch):
    """Native tasks never start inside a traceback: tiny tasks give the same tables."""
    monkeypatch.setattr(tok, "_NATIVE_TASK_BYTES", 512)
    r = random.Random(11)
    for fmt in ("oslo", "oslo_merged"):
        assert_same(chunks_of([_tb_file(r, fmt, 200), _tb_file(r, fmt, 50)]), fmt)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300) | st.text(alphabet="ab\n\r", max_size=60).map(str.encode))
def test_count_lines_native_equals_python(data):
    """``count_lines``: the native count (GIL released) is ``bytes.count`` plus one for an
    unterminated last line, the count of ``grep -c ''`` and of both tokenizers."""
    import stacklens_native

    if not hasattr(stacklens_native, "count_lines"):
        pytest.skip("stacklens_native predates count_lines: rebuild native/")
    want = data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
    assert stacklens_native.count_lines(data) == want == tok.count_lines(data)
