"""Issue 13's report pieces on small inputs: neutron-server's retry and IP allocation lines
(written here in the exact wording of neutron 26.0.6 / neutron-lib 3.18.3 / oslo.db 17.2.1, read
through the real ingest), their join to the driver's records, the client steps, messages per
create and per delete, statements that failed per schema, and the request-id reuse finding.
"""

from __future__ import annotations

import duckdb
import polars as pl

from stacklens.analyze.broker_sections import PER_CREATE
from stacklens.analyze.build import section_rows
from stacklens.analyze.client_sections import CLIENT_STEPS
from stacklens.analyze.db_sections import DB_ERRORS
from stacklens.analyze.findings import findings
from stacklens.analyze.neutron_sections import (
    NEUTRON_RETRIES,
    NEUTRON_RETRY_REQUESTS,
    NEUTRON_RETRY_SUMMARY,
)
from stacklens.ingest.pipeline import ingest
from stacklens.schema import conform

T0 = 1_795_539_000_000_000_000
SUBNET = "4c196686-a763-41bd-bec5-4814183b0683"
R1, G1 = "req-11111111-1111-4111-8111-111111111111", "req-aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa"
R2, G2 = "req-22222222-2222-4222-8222-222222222222", "req-bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb"
R3 = "req-33333333-3333-4333-8333-333333333333"
SITE = "/work/labvenv-neutron/lib/python3.11/site-packages"


def _line(t: str, level: str, logger: str, rid: str, gid: str | None, msg: str,
          where: str = "") -> str:
    ctx = f"[{gid or 'None'} {rid} - fake_project_id - - - -]"
    return f"2026-11-24 16:52:{t} 25539 {level} {logger} {ctx} {msg}{where}\n"


# neutron-server.log lines as neutron 26.0.6 writes them at DEBUG (devstack-style suffixes kept)
LOG = "".join([
    _line("17.600", "INFO", "neutron.api.wsgi", R3, None,
          '127.0.0.1 "GET /v2.0/networks HTTP/1.1" status: 200  len: 300 time: 0.0100000'),
    _line("17.647", "DEBUG", "neutron_lib.db.api", R1, G1,
          "Retry wrapper got retriable exception: Failed to create a duplicate IpamAllocation: "
          f"for attribute(s) ['PRIMARY'] with value(s) 10.77.0.16-{SUBNET}",
          f" wrapped {SITE}/neutron_lib/db/api.py:183"),
    _line("17.653", "DEBUG", "oslo_db.api", R1, G1,
          "Performing DB retry for function neutron.plugins.ml2.plugin.Ml2Plugin.create_port",
          f" wrapper {SITE}/oslo_db/api.py:155"),
    _line("18.000", "DEBUG", "neutron.db.ipam_pluggable_backend", R2, G2,
          "An exception occurred during IP allocation.",
          f" _ipam_allocate_ips {SITE}/neutron/db/ipam_pluggable_backend.py:150"),
    _line("18.010", "DEBUG", "neutron_lib.db.api", R2, G2,
          "Retry wrapper got retriable exception: (pymysql.err.OperationalError) (1213, "
          "'Deadlock found when trying to get lock; try restarting transaction')",
          f" wrapped {SITE}/neutron_lib/db/api.py:183"),
    _line("18.020", "DEBUG", "oslo_db.api", R2, G2,
          "Performing DB retry for function neutron.plugins.ml2.plugin.Ml2Plugin.create_port",
          f" wrapper {SITE}/oslo_db/api.py:155"),
    _line("19.000", "ERROR", "oslo_db.api", R2, G2, "DB exceeded retry limit."),
    _line("19.500", "INFO", "neutron.pecan_wsgi.hooks.translation", R3, None,
          "POST failed (client error): No more IP addresses available on network "
          "93086ca9-6cc7-4d62-992b-dd20614e6976."),
    _line("19.600", "INFO", "neutron.api.wsgi", R3, None,
          '127.0.0.1 "GET /v2.0/networks HTTP/1.1" status: 200  len: 300 time: 0.0100000'),
])


def _events(tmp_path) -> pl.DataFrame:
    d = tmp_path / "logs/controller/var/log/neutron"
    d.mkdir(parents=True)
    (d / "neutron-server.log").write_text(LOG)
    ev = ingest([str(tmp_path / "logs")]).events
    assert set(ev["service"]) == {"neutron-server"}
    return ev


def _requests(**over: list) -> pl.DataFrame:
    base = {"run_id": ["r"] * 3, "name": ["p0", "p1", "p2"], "outcome": ["ok", "ok", "api_error"],
            "request_id": [R1, "req-x", None], "global_request_id": ["req-g0", G2, "req-g2"],
            "create_http_status": [201, 201, 409], "submit_ns": [T0, T0, T0],
            "accepted_ns": [T0 + 2 * 10**9, T0 + 4 * 10**9, T0 + 10**9],
            "api_s": [2.0, 4.0, 1.0], "delete_ns": [T0 + 10 * 10**9, T0 + 10 * 10**9, None],
            "gone_ns": [T0 + 11 * 10**9, None, None], "delete_s": [1.0, None, None],
            "delete_request_id": ["req-d0", "req-d1", None]}
    base.update(over)
    return conform(pl.DataFrame(base), "requests")


def _con(**tables: pl.DataFrame) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    for name, df in tables.items():
        con.register(name, conform(df, name))
    return con


def test_neutron_retry_lines_counted_by_cause_and_function(tmp_path):
    ev = _events(tmp_path)
    assert "Performing DB retry for function neutron.plugins.ml2.plugin.Ml2Plugin.create_port" \
        in set(ev["message"])  # the devstack-style suffix is not part of the message
    rows = section_rows(_con(events=ev), NEUTRON_RETRIES)
    got = {(r["what"], r["detail"]): (r["records"], r["request_ids"]) for r in rows}
    fn = "neutron.plugins.ml2.plugin.Ml2Plugin.create_port"
    assert got == {
        ("retriable exception", "IP allocation collision"): (1, 1),
        ("retriable exception", "deadlock"): (1, 1),
        ("retry performed", fn): (2, 2),
        ("retry limit exceeded", ""): (1, 1),
        ("IP allocation exception", ""): (1, 1),
        ("no more IP addresses", ""): (1, 1),
    }
    assert rows[0]["what"] == "retry performed" and rows[0]["first_ns"] > 0


def test_retry_lines_join_the_driver_records_by_request_or_global_id(tmp_path):
    con = _con(events=_events(tmp_path), requests=_requests())
    rows = {r["name"]: r for r in section_rows(con, NEUTRON_RETRY_REQUESTS)}
    assert set(rows) == {"p0", "p1"}  # p0 by its request id, p1 by the global id it sent
    p0, p1 = rows["p0"], rows["p1"]
    assert (p0["step"], p0["ip_collisions"], p0["deadlocks"], p0["retries"], p0["client_s"]) == (
        "create", 1, 0, 1, 2.0)
    assert (p1["deadlocks"], p1["retriable"], p1["retries"], p1["retry_limit"]) == (1, 1, 1, 1)


def test_summary_counts_and_says_unknown_where_the_log_cannot_tell(tmp_path):
    ev = _events(tmp_path)
    [r] = section_rows(_con(events=ev), NEUTRON_RETRY_SUMMARY)
    assert (r["neutron_records"], r["debug_records"]) == (9, 5)
    assert (r["ip_allocation_retries"], r["deadlock_retries"], r["retriable"], r["retries"],
            r["retry_limit"], r["no_more_ips"]) == (1, 1, 2, 2, 1, 1)
    assert r["source"] == "neutron-server log at DEBUG"
    info = ev.filter(pl.col("level") != "DEBUG")  # a log at INFO: retries unknown, not 0
    [r] = section_rows(_con(events=info), NEUTRON_RETRY_SUMMARY)
    assert (r["ip_allocation_retries"], r["retries"], r["retry_limit"], r["no_more_ips"]) == (
        None, None, 1, 1)
    assert "retries unknown" in r["source"]
    none = ev.with_columns(service=pl.lit("nova-api"))  # no neutron-server log at all
    [r] = section_rows(_con(events=none), NEUTRON_RETRY_SUMMARY)
    assert (r["neutron_records"], r["retry_limit"], r["source"]) == (
        0, None, "no neutron-server log read: unknown")
    quiet = info.filter(pl.col("level") == "INFO").filter(~pl.col("message").str.contains("IP"))
    assert section_rows(_con(events=quiet), NEUTRON_RETRIES) == []


def test_client_steps_rates_and_percentiles():
    rows = {r["step"]: r for r in section_rows(_con(requests=_requests()), CLIENT_STEPS)}
    assert list(rows) == ["create", "delete", "record ok"]  # no ACTIVE step for ports
    c = rows["create"]
    assert (c["issued"], c["ok"], c["failed"]) == (3, 2, 1)
    assert abs(c["success_rate"] - 2 / 3) < 1e-9 and c["p50_s"] == 3.0 and c["max_s"] == 4.0
    d = rows["delete"]
    assert (d["issued"], d["ok"], d["p50_s"]) == (2, 1, 1.0)
    assert rows["record ok"]["ok"] == 2
    servers = _requests(create_s=[30.0, None, None], active_ns=[T0 + 30 * 10**9, None, None])
    rows = {r["step"]: r for r in section_rows(_con(requests=servers), CLIENT_STEPS)}
    assert (rows["active"]["issued"], rows["active"]["ok"], rows["active"]["p50_s"]) == (
        2, 1, 30.0)


def _msg(t_s: float, direction: str, kind: str, method: str | None) -> dict:
    return {"ts_ns": T0 + int(t_s * 1e9), "direction": direction, "kind": kind,
            "method": method, "exchange": "x", "size_bytes": 100}


def test_messages_per_create_and_per_delete():
    msgs = pl.DataFrame([
        _msg(-1, "publish", "cast", "report_state"),  # before the run's first create: out
        _msg(1, "publish", "fanout", "push"), *[_msg(1, "deliver", "fanout", "push")] * 4,
        _msg(2, "publish", "call", "update_device_list"),
        _msg(2, "publish", "reply", None), _msg(3, "publish", "fanout", "push"),
        *[_msg(3, "deliver", "fanout", "push")] * 4,
        _msg(10.5, "publish", "fanout", "remove_fdb_entries"),
        *[_msg(10.5, "deliver", "fanout", "remove_fdb_entries")] * 4,
    ])
    rows = section_rows(_con(messages=msgs, requests=_requests()), PER_CREATE)
    got = {(r["phase"], r["method"]): r for r in rows}
    assert got[("create", "push")]["published"] == 2
    assert got[("create", "push")]["delivered_per_request"] == 4.0  # 8 deliveries, 2 creates
    assert got[("create", "(all)")]["published"] == 3  # push x2 + the call; the reply is out
    assert got[("delete", "remove_fdb_entries")]["delivered_per_request"] == 4.0  # 1 delete done
    assert [r["method"] for r in rows][0] == "(all)"


def test_statements_that_failed_per_schema():
    def d(snap: int, digest: str, n: int, err: int) -> dict:
        return {"ts_ns": T0 + snap, "snapshot": snap, "schema": "neutron", "digest": digest,
                "digest_text": f"INSERT INTO `ipamallocations` ... {digest}", "kind": "insert",
                "count_star": n, "sum_timer_wait_s": 0.1, "sum_lock_time_s": 0.01,
                "sum_errors": err}
    dig = pl.DataFrame([d(0, "a", 10, 1), d(1, "a", 30, 5), d(0, "b", 5, 0), d(1, "b", 9, 0)])
    rows = section_rows(_con(db_digests=dig), DB_ERRORS)
    assert [(r["schema"], r["calls"], r["errors"]) for r in rows] == [("neutron", 20, 4)]


def test_request_id_reuse_finding():
    def acc(rid: str) -> dict:
        return {"ts_ns": T0, "service": "neutron-server", "host": "controller",
                "request_id": rid, "http_status": 201, "logger": "neutron.api.wsgi"}
    ev = pl.DataFrame([acc(f"req-{i}") for i in range(20)] + [acc("req-0")] * 4
                      + [acc("req-1")] * 2)
    con = _con(events=ev)
    [f] = [f for f in findings(con, {"events"}) if f["rule"] == "request_id_reuse"]
    assert f["evidence"]["neutron-server"] == {"access_lines": 26, "ids": 20, "shared_lines": 8}
    assert "8 of 26 access lines" in f["text"]
    ok = _con(events=pl.DataFrame([acc(f"req-{i}") for i in range(20)] + [acc("req-0")]))
    assert not [f for f in findings(ok, {"events"}) if f["rule"] == "request_id_reuse"]


def test_client_steps_split_per_part_of_a_mixed_run():
    mixed = pl.concat([
        _requests(scenario=["mix/create_ports"] * 3),
        _requests(scenario=["mix/boot_servers"] * 3, name=["s0", "s1", "s2"],
                  create_s=[30.0, None, None], active_ns=[T0 + 30 * 10**9, None, None]),
    ], how="diagonal_relaxed")
    rows = section_rows(_con(requests=mixed), CLIENT_STEPS)
    got = [(r["scenario"], r["step"], r["issued"], r["ok"]) for r in rows]
    assert got == [
        ("mix/boot_servers", "create", 3, 2), ("mix/boot_servers", "active", 2, 1),
        ("mix/boot_servers", "delete", 2, 1), ("mix/boot_servers", "record ok", 3, 2),
        ("mix/create_ports", "create", 3, 2),  # no ACTIVE step for the ports' part
        ("mix/create_ports", "delete", 2, 1), ("mix/create_ports", "record ok", 3, 2)]
