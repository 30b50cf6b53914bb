"""Local time (issue 7 defect 8): ``--tz``, per-host assumptions in words, offset detection.

oslo.log writes ``%(asctime)s`` with ``time.localtime`` and no zone (oslo.log ``formatters.py``,
``_options.py`` ``log_date_format = '%Y-%m-%d %H:%M:%S'``, every release), so a host running
with ``TZ=Europe/Paris`` writes Paris wall-clock time.
"""

from __future__ import annotations

from datetime import UTC, datetime

import polars as pl
import pytest

from stacklens.errors import MapError
from stacklens.ingest.pipeline import ingest
from stacklens.ingest.timezone import TzSpec, apply_tz, parse_tz
from stacklens.zoneguess import detect_offset, offset_from_dual_stamps

NS = 1_000_000_000


def ns(s: str) -> int:
    return int(datetime.fromisoformat(s).replace(tzinfo=UTC).timestamp()) * NS


def write_host(root, host: str, stamp: str) -> None:
    d = root / host / "var" / "log" / "nova"
    d.mkdir(parents=True)
    (d / "nova-api.log").write_text(
        f"{stamp}.000 4242 INFO nova.api.openstack.requestlog "
        "[req-0b6a9c3e-1111-4222-8333-944455556666 admin demo] GET /v2.1/servers status: 200\n"
    )


def test_parse_tz():
    spec = parse_tz(["Europe/Paris", "cmp1=+05:30", "cmp2=-3"])
    assert spec.default == "Europe/Paris"
    assert spec.zone("cmp1") == "+05:30" and spec.zone("cmp2") == "-03:00"
    assert spec.zone("ctl") == "Europe/Paris"
    assert parse_tz([], 7200).default == "+02:00"  # legacy --tz-offset seconds
    for bad in (["Mars/Olympus"], ["+25:00"], ["UTC", "+01:00"]):
        with pytest.raises(MapError):
            parse_tz(bad)


def test_apply_tz_fixed_and_dst():
    ev = pl.DataFrame({
        "host": ["par", "par", "ist", "utc"],
        "ts_ns": [ns("2024-01-15 12:00:00"), ns("2024-07-15 12:00:00"),
                  ns("2024-07-15 12:00:00"), ns("2024-07-15 12:00:00")],
    })
    out = apply_tz(ev, TzSpec(None, (("par", "Europe/Paris"), ("ist", "+05:30"))))
    assert out["ts_ns"].to_list() == [
        ns("2024-01-15 11:00:00"),  # CET, UTC+1
        ns("2024-07-15 10:00:00"),  # CEST, UTC+2
        ns("2024-07-15 06:30:00"),
        ns("2024-07-15 12:00:00"),  # no zone given: unchanged
    ]
    # 02:30 on the spring-forward day does not exist in Paris: standard offset, not null
    gap = apply_tz(pl.DataFrame({"host": ["par"], "ts_ns": [ns("2024-03-31 02:30:00")]}),
                   TzSpec("Europe/Paris"))
    assert gap["ts_ns"][0] == ns("2024-03-31 01:30:00")


def test_ingest_tz_per_host_and_assumptions_in_words(tmp_path):
    write_host(tmp_path, "ctl1", "2024-07-15 14:00:00")
    write_host(tmp_path, "cmp1", "2024-07-15 12:00:00")
    r = ingest([str(tmp_path)], tz=["ctl1=Europe/Paris"])
    by_host = dict(r.events.select("host", "ts_ns").rows())
    assert by_host["ctl1"] == ns("2024-07-15 12:00:00")
    assert by_host["cmp1"] == ns("2024-07-15 12:00:00")
    assert r.timezone_summary.startswith("UTC (converted from local time by --tz: ctl1=Europe/Paris")
    said = r.ingest_stats.filter(pl.col("kind") == "timezone_assumption")["detail"].to_list()
    assert "host ctl1: times converted from Europe/Paris to UTC (--tz)" in said
    assert any(s.startswith("host cmp1: times assumed UTC: no zone in oslo.log lines; pass --tz "
                            "HOST=ZONE") for s in said)


def test_detect_offset():
    base = ns("2024-07-15 12:00:00")
    # server in UTC+02:00, 20-300 ms of network and queueing
    pairs = [(base + i * NS, base + i * NS + 7200 * NS + (20 + 30 * i) * 1_000_000)
             for i in range(10)]
    g = detect_offset(pairs)
    assert g.offset_s == 7200 and "--tz HOST=+02:00" in g.reason
    # India, half-hour zone, server behind the client is negative
    g = detect_offset([(c, s - 7200 * NS - 5 * 3600 * NS - 1800 * NS) for c, s in pairs])
    assert g.offset_s == -(5 * 3600 + 1800)
    # UTC with queueing: no zone
    assert detect_offset([(c, c + 2 * NS) for c, _ in pairs]).offset_s is None
    # 7 minutes: skew, not a zone
    g = detect_offset([(c, c + 420 * NS) for c, _ in pairs])
    assert g.offset_s is None and "clock skew" in g.reason
    # too few pairs, or inconsistent ones: unknown, with the reason
    assert detect_offset(pairs[:2]).offset_s is None
    mixed = pairs[:5] + [(c, c) for c, _ in pairs[5:]]
    assert detect_offset(mixed).offset_s is None


def test_offset_from_dual_stamps():
    base = ns("2024-07-15 12:00:00")
    local = [(base + i * NS + 3600 * NS, base + i * NS) for i in range(5)]
    assert offset_from_dual_stamps(local).offset_s == 3600
    same = [(base + i * NS, base + i * NS + 1_000_000) for i in range(5)]
    assert offset_from_dual_stamps(same).offset_s is None
