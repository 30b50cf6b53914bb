"""Drift between the two tokenizers' hand-written rules.

Most of a log format is data that both tokenizers read (:mod:`stacklens.ingest.formats`, passed to
Rust by :func:`~stacklens.ingest.tokenize.native_patterns`). Two rules stay code on both sides:
the timestamp parser (:func:`stacklens.ingest.fields.timestamp`, ``native/src/ts.rs``) and the
request-context split (:func:`stacklens.ingest.fields.context`, ``native/src/rules.rs``); and the
native fast paths implement fixed patterns. These tests run a generated table of edge cases
through both implementations and compare field by field: every registered format x timestamp
forms x context forms of each release (Havana ``[req-X user tenant]``, Mitaka six fields, Pike
``[None req-X ...]`` / ``[req-G req-X ...]``, ``[-]``).
"""

from __future__ import annotations

import itertools
import os

import polars as pl
import pytest
from polars.testing import assert_frame_equal

if os.environ.get("STACKLENS_REQUIRE_NATIVE") == "1":  # CI: a missing extension fails
    import stacklens_native as native
else:
    native = pytest.importorskip("stacklens_native", reason="stacklens_native is not built")

from stacklens.ingest import fields  # noqa: E402
from stacklens.ingest.formats import FORMATS, by_name  # noqa: E402
from stacklens.ingest.formats.base import PLACEHOLDER  # noqa: E402
from stacklens.ingest.tokenize import FileChunk, native_patterns, tokenize_batch  # noqa: E402

R = "req-c354514b-0c97-415e-ba7f-18750569f103"
G = "req-0c5f0c3e-86a1-4c55-a0b4-e4a1a29c7a11"

#: (date, time) forms: fractions of every length, separators, the TS_YEARS edges, invalid fields
TS_FORMS = [
    (d, t + f)
    for d in ["2016-06-28", "2016-02-29", "2015-02-29", "1970-01-01", "1969-12-31", "2199-12-31",
              "2200-01-01", "2016-13-01", "2016-00-10", "2016-04-31", "0000-00-00", "2016-06-2\u0663"]
    for t in ["13:56:12", "23:59:60", "24:00:00", "13:60:00", "13:56:61"]
    for f in ["", ".", ".3", ",360", ".360", ".123456", ".123456789", ".1234567891", ".12a"]
]
#: syslog dates (no year): day padding, fractions, bad months and fields
SYSDATES = [
    "Jan 25 09:29:50", "Jan  5 09:29:50", "Feb 29 00:00:00", "Dec 31 23:59:60", "Jan 25 09:29:50.1",
    "Jan 25 09:29:50.123456", "Jan 25 09:29:50.1234567891234", "Jan 25 09:29:50.", "Foo 25 09:29:50",
    "Jan 32 09:29:50", "Jan 25 25:29:50", "Jan 25 9:29:50", "Apr 31 01:02:03",
]
SYS_YEARS = [1969, 1970, 2015, 2016, 2199, 2200]
#: request contexts of every era, and the forms between them
CONTEXTS = [
    None, "-", "", " ", f"{R} admin demo", f"{R} u1 p1 - - -", f"None {R} admin admin",
    f"{G} {R} u1 p1 - - -", f"{R} None None", f"{R}", "req-x", "None req-a", f"{R} - -",
    f"{G} {R}", f"None {R} None None", f"x {R} u p", f"{R}  u p", "None", "None None",
]


def test_fast_path_constants_match_the_python_patterns():
    """The native fast paths implement exactly the patterns Python passes (else they are off and
    the regexes run: same tables, slower)."""
    c = native.constants()
    p = native_patterns(by_name("oslo"))
    assert c["oslo_header"] == p["header"]
    assert c["oslo_trace"] == p["trace"]
    assert c["oslo_tb_line"] == p["tb_line"]
    assert c["debug_suffix"] == fields.DEBUG_SUFFIX
    assert c["binary"] == fields.BINARY
    assert c["instance"] == fields.INSTANCE


def test_traceback_keys_compare_as_pairs():
    """The native tokenizer compares traceback keys as (k, lg) pairs, Python as the string
    ``k + " " + lg``; the two agree because every format's logger group holds no space."""
    from stacklens.ingest.formats import FORMATS

    with_tb = [f for f in FORMATS if f.tb_line]
    assert len(with_tb) >= 4
    for f in with_tb:
        assert "(?P<lg>\\S+)" in f.tb_line, f.name


def test_oslo_timestamps_agree():
    ts_text = [f"{d} {t}" for d, t in TS_FORMS]
    py = pl.DataFrame({"ts_text": ts_text}).select(fields.timestamp(by_name("oslo"))).to_series()
    nat = [native.oslo_ts(d, t, *fields.TS_YEARS) for d, t in TS_FORMS]
    assert py.to_list() == nat
    assert sum(v is not None for v in nat) > 50  # the table holds readable forms too


def test_syslog_timestamps_agree():
    rows = list(itertools.product(SYS_YEARS, SYSDATES))
    df = pl.DataFrame(
        {"ts_text": [PLACEHOLDER.strip()] * len(rows), "sysdate": [s for _, s in rows],
         "_year": pl.Series([y for y, _ in rows], dtype=pl.Int32)}
    )
    py = df.select(fields.timestamp(by_name("syslog"))).to_series().to_list()
    nat = [native.syslog_ts(y, s, *fields.TS_YEARS) for y, s in rows]
    assert py == nat
    assert sum(v is not None for v in nat) > 20


def test_contexts_agree():
    df = (
        pl.DataFrame({"ctx": pl.Series(CONTEXTS, dtype=pl.String)})
        .with_columns(_c=pl.col("ctx").str.split_exact(" ", 4))
        .unnest("_c", separator="_")
        .select(**fields.context())
    )
    nat = [native.context(c) for c in CONTEXTS]
    assert df.rows() == nat
    assert (None, R, "admin", "demo") in nat and (G, R, "u1", "p1") in nat


def _wrap(fmt_name: str, ts: str, oslo_rest: str) -> list[str]:
    """Header lines of format ``fmt_name`` around ``<ts> <oslo_rest>``."""
    line = f"{ts} {oslo_rest}"
    return {
        "oslo": [line],
        "oslo_prefixed": [f"nova-api.log.1.2017-05-16_13:53:08 {line}"],
        "oslo_merged": [f"{ts} [NOVACPU] {oslo_rest}", f"{ts} [n1/var/log/nova/nova-api.log] {oslo_rest}"],
        "syslog": [f"Jan 25 09:29:50.123 host1 nova-compute[77]: {line}",
                   f"Jan  5 09:29:50 host1 devstack@n-api.service[8]: {oslo_rest}"],
        "oslo_nots": [oslo_rest],
    }[fmt_name]


@pytest.mark.parametrize("fmt", [f for f in FORMATS if f.native], ids=lambda f: f.name)
def test_every_format_timestamp_and_context_agree(fmt):
    """Every native format x timestamp forms x context forms through both tokenizers: equal
    events (field by field), quarantine and stats."""
    lines = []
    for (d, t), ctx in itertools.product(TS_FORMS[::3], CONTEXTS):
        c = "" if ctx is None else f"[{ctx}] "
        lines += _wrap(fmt.name, f"{d} {t}", f"123 INFO nova.compute.manager {c}msg {d}")
    data = ("\n".join(lines) + "\n").encode()
    chunks = [FileChunk("a.log", data, "h", None, 2016), FileChunk("b.log", data, None, "svc", 2016)]
    py = tokenize_batch(chunks, fmt, native=False)
    nat = tokenize_batch(chunks, fmt, native=True)
    assert py.events.height > 100
    for col in py.events.columns:
        assert_frame_equal(nat.events.select(col), py.events.select(col))
    assert_frame_equal(nat.quarantine, py.quarantine)
    assert nat.stats == py.stats
