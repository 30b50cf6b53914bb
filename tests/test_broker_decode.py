"""stacklens.broker.decode on oslo.messaging messages built by hand in each form (2.0 envelope,
unwrapped), the log side of the cross-check on hand-made events, and the broker sections on a
run without a capture."""

from __future__ import annotations

import json

import polars as pl

from stacklens.analyze.broker_sections import BROKER_SECTIONS
from stacklens.broker import crosscheck, decode_body, decode_trace, log_rpc_sends, redact
from stacklens.broker.decode import split_conn_name
from stacklens.schema import EVENTS, MESSAGES, TABLES

CTX = {"_context_request_id": "req-11111111-2222-3333-4444-555555555555",
       "_context_global_request_id": "req-99999999-2222-3333-4444-555555555555",
       "_context_auth_token": "gAAAAsecret", "_context_user_id": "u1",
       "_context_project_id": "p1", "_context_service_password": "pw"}


def env2(msg: dict) -> bytes:
    return json.dumps({"oslo.version": "2.0", "oslo.message": json.dumps(msg)}).encode()


def test_call_in_the_2_0_envelope():
    msg = {"method": "select_destinations", "args": {}, "namespace": "compute_task",
           "version": "1.25", "_msg_id": "a" * 32, "_reply_q": "reply_" + "b" * 32,
           "_timeout": None, "_unique_id": "c" * 32, **CTX}
    row = decode_trace("publish.nova", {"exchange_name": "nova", "routing_keys": ["scheduler"]},
                       env2(msg), 5)
    assert (row["kind"], row["method"], row["namespace"], row["version"]) == (
        "call", "select_destinations", "compute_task", "1.25")
    assert (row["msg_id"], row["unique_id"], row["reply_q"]) == ("a" * 32, "c" * 32,
                                                                 "reply_" + "b" * 32)
    assert row["request_id"].startswith("req-1") and row["global_request_id"].startswith("req-9")
    assert (row["direction"], row["exchange"], row["topic"], row["envelope"]) == (
        "publish", "nova", "scheduler", "2.0")
    assert row["size_bytes"] == len(env2(msg)) and row["ts_ns"] == 5
    ctx = json.loads(row["context"])
    assert ctx["auth_token"] == "***" and ctx["service_password"] == "***"
    assert "gAAAAsecret" not in row["context"] and ctx["user_id"] == "u1"


def test_unwrapped_cast_and_fanout():
    msg = {"method": "build_and_run_instance", "args": {}, "version": "6.0",
           "_unique_id": "d" * 32, **CTX}
    row = decode_body(json.dumps(msg), "nova", "compute.fake-1")
    assert (row["kind"], row["envelope"], row["topic"], row["msg_id"]) == (
        "cast", "none", "compute.fake-1", None)
    row = decode_body(env2(msg), "scheduler_fanout", "")
    assert (row["kind"], row["topic"]) == ("fanout", "scheduler")


def test_reply_takes_its_queue_and_failure():
    msg = {"result": None, "failure": "{\"class\": \"NoValidHost\"}", "ending": True,
           "_msg_id": "a" * 32, "_unique_id": "e" * 32}
    row = decode_trace("deliver.reply_x", {"exchange_name": b"", "routing_keys": [b"reply_x"],
                                           "redelivered": 0}, env2(msg), 1)
    assert (row["kind"], row["failure"], row["ending"], row["reply_q"]) == (
        "reply", True, True, "reply_x")
    assert (row["direction"], row["queue"], row["exchange"], row["redelivered"]) == (
        "deliver", "reply_x", "", False)
    assert row["method"] is None and row["context"] is None


def test_notification_and_garbage():
    msg = {"event_type": "compute.instance.create.end", "priority": "INFO", "payload": {},
           "message_id": "m1", "publisher_id": "compute.fake-1", **CTX}
    row = decode_body(json.dumps(msg), "nova", "notifications.info")
    assert (row["kind"], row["event_type"], row["priority"], row["topic"]) == (
        "notification", "compute.instance.create.end", "INFO", "notifications.info")
    for body in (b"\xff\xfe", b"[1, 2]", b'{"oslo.version": "2.0", "oslo.message": "{bad"}'):
        row = decode_body(body)
        assert (row["kind"], row["envelope"]) == ("unknown", "undecodable")
    assert decode_body(b'{"x": 1}')["kind"] == "unknown"


def test_redact_and_connection_names():
    assert redact({"a": {"AdminPassword": "x", "ok": [{"token": "t"}]}, "n": None}) == {
        "a": {"AdminPassword": "***", "ok": [{"token": "***"}]}, "n": None}
    assert split_conn_name("nova-compute:1234:5f0c") == ("nova-compute", 1234)
    assert split_conn_name("127.0.0.1:1 -> 127.0.0.1:2") == (None, None)
    assert split_conn_name(None) == (None, None)


def _events(rows: list[dict]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema={k: EVENTS[k] for k in (
        "ts_ns", "host", "service", "pid", "file", "line_no", "request_id", "message",
        "rpc_kind", "rpc_id", "rpc_topic")})


def test_log_sends_pair_the_method_and_match_the_broker():
    f, r = "c.log", "req-1"
    ev = _events([
        dict(ts_ns=10, file=f, line_no=1, pid=7, request_id=r,
             message="Calling RPC method ping on target conductor"),
        dict(ts_ns=11, file=f, line_no=2, pid=8, request_id="req-2",
             message="Calling RPC method sync on target scheduler"),
        dict(ts_ns=12, file=f, line_no=3, pid=7, request_id=r, rpc_kind="call",
             rpc_id="a" * 32, rpc_topic="conductor", message="CALL msg_id: ..."),
        dict(ts_ns=13, file=f, line_no=4, pid=8, request_id="req-2", rpc_kind="cast",
             rpc_id="b" * 32, rpc_topic="scheduler", message="CAST unique_id: ..."),
        dict(ts_ns=99, file=f, line_no=5, pid=8, request_id="req-2", rpc_kind="cast",
             rpc_id="c" * 32, rpc_topic="scheduler", message="CAST unique_id: ..."),
    ])
    s = log_rpc_sends(ev)
    assert s["method"].to_list() == ["ping", "sync", None]
    msgs = pl.DataFrame([
        dict(ts_ns=20, direction="publish", kind="call", method="ping", msg_id="a" * 32,
             unique_id="x" * 32),
        dict(ts_ns=21, direction="publish", kind="cast", method="sync", unique_id="b" * 32),
        dict(ts_ns=22, direction="deliver", kind="cast", method="sync", unique_id="b" * 32),
    ], schema={k: MESSAGES[k] for k in ("ts_ns", "direction", "kind", "method", "msg_id",
                                        "unique_id")})
    cc = crosscheck(msgs, s, window_ns=(0, 50))
    assert cc.rows() == [("ping", 1, 1, 1, 0, 0), ("sync", 1, 1, 1, 0, 0)]
    assert crosscheck(msgs, s).filter(pl.col("method") == "(none)")["logs_only"].item() == 1


def test_sections_declare_absent_rows_and_run_on_empty_tables():
    import duckdb

    con = duckdb.connect(":memory:")
    for t in ("messages", "events", "spans", "traces", "requests"):
        empty = pl.DataFrame(schema=TABLES[t])  # noqa: F841 - read by DuckDB by name
        con.execute(f"CREATE TABLE {t} AS SELECT * FROM empty")
    for s in BROKER_SECTIONS:
        assert "messages" in s.needs and s.absent == {s.key: []}
        cur = con.execute(s.sql)
        assert [d[0] for d in cur.description] == [c.name for c in s.columns], s.name
        assert cur.fetchall() == []
