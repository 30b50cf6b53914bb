"""Config advice linked to a run's symptoms: a tiny run folder written with RunStore (events in
the real wording of SQLAlchemy/oslo.db, oslo.messaging and MySQL errors, one compute host taking
most builds, the run's redacted config files in RUN/config/), then ``config_findings`` written
into it and read back by the report section."""

from __future__ import annotations

import uuid
from pathlib import Path

import polars as pl

from stacklens.advise import symptoms_of_run, write_config_findings
from stacklens.analyze.build import section_rows
from stacklens.analyze.config_sections import CONFIG_FINDINGS
from stacklens.store import RunStore

T0 = 1_760_000_000_000_000_000
REQ = "req-6f1c2a8e-3b7d-4c55-9e0a-1d2f3a4b5c6d"

QUEUEPOOL = ("Exception during message handling: sqlalchemy.exc.TimeoutError: QueuePool limit "
             "of size 10 overflow 20 reached, connection timed out, timeout 30.00 (Background on "
             "this error at: https://sqlalche.me/e/20/3o7r)")
QUEUEPOOL_TB = ("Traceback (most recent call last):\n"
                "  File \"/usr/lib/python3/dist-packages/sqlalchemy/pool/impl.py\", line 161, in "
                "_do_get\n    raise exc.TimeoutError(\n"
                "sqlalchemy.exc.TimeoutError: QueuePool limit of size 10 overflow 20 reached, "
                "connection timed out, timeout 30.00 (Background on this error at: "
                "https://sqlalche.me/e/20/3o7r)")
TIMEOUT = ("Setting instance to ERROR state.: oslo_messaging.exceptions.MessagingTimeout: Timed "
           "out waiting for a reply to message ID 8f1b5c1e3f0c4d0a9a6a3c2a1b0c9d8e")
DEADLOCK = ("DB exceeded retry limit.: oslo_db.exception.DBDeadlock: (pymysql.err.OperationalError)"
            " (1213, 'Deadlock found when trying to get lock; try restarting transaction')")

NOVA = """\
[DEFAULT]
transport_url = rabbit://openstack:***@10.0.0.11:5672//
[scheduler]
workers = 4
[filter_scheduler]
enabled_filters = ComputeFilter,ImagePropertiesFilter
"""
NOVA_DB = """\
[database]
connection = mysql+pymysql://nova:***@10.0.0.10:3306/nova
max_pool_size = 10
max_overflow = 20
[api_database]
connection = mysql+pymysql://nova_api:***@10.0.0.10:3306/nova_api
max_pool_size = 40
max_overflow = 40
"""
HAPROXY = """\
listen mariadb
  bind 10.0.0.10:3306
  server ctl1 10.0.0.11:3306 check
  server ctl2 10.0.0.12:3306 check
"""


def _ev(service: str, host: str, level: str, message: str, *, cont: str | None = None,
        instance: str | None = None, i: int = 0) -> dict:
    return {"ts_ns": T0 + i * 1_000_000, "host": host, "service": service, "pid": 100,
            "level": level, "logger": "nova", "request_id": REQ, "message": message,
            "continuation": cont, "instance_uuid": instance, "file": f"{service}.log",
            "line_no": i + 1, "n_lines": 1}


def _make_run(tmp_path: Path) -> RunStore:
    run = tmp_path / "run"
    rows = [
        _ev("nova-conductor", "ctl1", "ERROR", QUEUEPOOL, cont=QUEUEPOOL_TB, i=1),
        _ev("nova-conductor", "ctl1", "ERROR", "Exception during message handling",
            cont=QUEUEPOOL_TB, i=2),
        _ev("nova-scheduler", "ctl1", "ERROR", QUEUEPOOL, i=3),
        _ev("nova-compute", "cmp1", "ERROR", TIMEOUT, i=4),
        _ev("nova-api", "ctl1", "ERROR", DEADLOCK, i=5),
        _ev("nova-compute", "cmp3", "DEBUG", "Running periodic task", i=6),
    ]
    # cmp1 builds 9 instances, cmp2 one, cmp3 none: one host took most builds
    for k in range(10):
        inst = str(uuid.UUID(int=k + 1))
        rows.append(_ev("nova-compute", "cmp1" if k < 9 else "cmp2", "INFO",
                        "Took 3.1 seconds to build instance.", instance=inst, i=10 + k))
    store = RunStore(run)
    store.write({
        "events": pl.DataFrame(rows),
        "traces": pl.DataFrame([{"trace_id": REQ, "request_id": REQ, "outcome": "failed",
                                 "error": QUEUEPOOL, "first_error": QUEUEPOOL}]),
    })
    for name, text in {"nova/nova.conf": NOVA, "nova/nova-db.conf": NOVA_DB,
                       "haproxy/haproxy.cfg": HAPROXY}.items():
        p = run / "config" / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return store


def test_symptoms_are_counted_in_the_programs_wording(tmp_path):
    store = _make_run(tmp_path)
    got = {s.kind: s for s in symptoms_of_run(store)}
    assert set(got) == {"db_pool_exhausted", "rpc_timeout", "db_deadlock", "host_skew"}
    pool = got["db_pool_exhausted"]
    assert pool.count == 3 and pool.by_service == {"nova-conductor": 2, "nova-scheduler": 1}
    assert pool.pool == ((10, 20),) and pool.failed_requests == 1
    assert got["rpc_timeout"].by_service == {"nova-compute": 1}
    assert got["db_deadlock"].by_service == {"nova-api": 1}
    skew = got["host_skew"]
    assert skew.count == 9 and "cmp1 took 9 of 10 builds across 3 compute hosts" in skew.detail


def test_findings_link_symptom_to_setting(tmp_path):
    store = _make_run(tmp_path)
    n = write_config_findings(store.path)
    df = store.read("config_findings")
    assert n == df.height > 0
    pool = df.filter((pl.col("rule_id") == "db-pool") & pl.col("symptom").is_not_null())
    # the messages' pool (10 + 20) is [database]'s, not [api_database]'s (40 + 40)
    assert sorted(zip(pool["section"], pool["option"], pool["value"], strict=True)) == [
        ("database", "max_overflow", "20"), ("database", "max_pool_size", "10")]
    assert set(pool["severity"]) == {"error"}
    assert set(pool["service"]) == {"nova-conductor, nova-scheduler"}
    assert set(pool["symptom_count"]) == {3}
    assert "pool in effect: size 10 overflow 20" in pool["symptom"][0]
    assert "root cause of 1 failed requests" in pool["symptom"][0]
    assert pool["file"][0] == "nova/nova-db.conf" and pool["default"][0] in ("5", "50")

    subset = df.filter(pl.col("rule_id") == "host-subset")
    assert set(subset["option"]) == {"host_subset_size", "shuffle_best_same_weighed_hosts"}
    assert set(subset["severity"]) == {"error"} and set(subset["symptom_count"]) == {9}
    assert "cmp1 took 9 of 10 builds" in subset["symptom"][0]

    galera = df.filter(pl.col("rule_id") == "galera-single-writer")
    assert galera.height == 1 and galera["severity"][0] == "error"
    assert galera["service"][0] == "nova-api" and galera["symptom_count"][0] == 1
    assert galera["section"][0] == "listen mariadb" and galera["value"][0] == "2 active"

    timeouts = df.filter(pl.col("symptom").str.contains("rpc timeout"))
    assert "rpc-response-timeout" in set(timeouts["rule_id"])
    assert set(timeouts["service"]) == {"nova-compute"}


def test_report_section_reads_the_table(tmp_path):
    store = _make_run(tmp_path)
    write_config_findings(store.path)
    with store.connect() as con:
        rows = section_rows(con, CONFIG_FINDINGS)
    assert [c.name for c in CONFIG_FINDINGS.columns] == list(rows[0])
    assert rows[0]["severity"] == "error"
    sev = [r["severity"] for r in rows]
    assert sev == sorted(sev, key=["error", "warning", "info"].index)


def test_no_config_files_no_table(tmp_path):
    store = RunStore(tmp_path / "bare")
    store.write({"events": pl.DataFrame([_ev("nova-api", "h", "INFO", "hello")])})
    assert write_config_findings(store.path) is None
    assert not store.has("config_findings")
