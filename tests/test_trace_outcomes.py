"""Outcome classification on small synthetic logs in real oslo.log format (Newton-era lines)."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from stacklens.ingest.pipeline import ingest
from stacklens.trace import build_traces

R = "req-{n}1111111-1111-1111-1111-111111111111"
U = "{n}3333333-3333-3333-3333-333333333333"


def api(n: int, t: str, status: int, method="POST", path="/v2.1/servers") -> str:
    return (f'2026-01-10 10:00:{t} 100 INFO nova.osapi_compute.wsgi.server [{R.format(n=n)} u p] '
            f'10.0.0.1 "{method} {path} HTTP/1.1" status: {status} len: 10 time: 0.2000000\n')


def cpu(n: int, t: str, level: str, msg: str, host_pid=300) -> str:
    return (f"2026-01-10 10:00:{t} {host_pid} {level} nova.compute.manager [{R.format(n=n)} u p] "
            f"[instance: {U.format(n=n)}] {msg}\n")


def run(tmp_path: Path, api_log: str, cpu_logs: dict[str, str]) -> pl.DataFrame:
    d = tmp_path / "ctl" / "var" / "log" / "nova"
    d.mkdir(parents=True)
    (d / "nova-api.log").write_text(api_log)
    for host, text in cpu_logs.items():
        c = tmp_path / host / "var" / "log" / "nova"
        c.mkdir(parents=True)
        (c / "nova-compute.log").write_text(text)
    res = ingest([str(tmp_path)])
    return build_traces(res.events)["traces"].sort("trace_id")


def test_success_retried_failed_unknown_rejected(tmp_path: Path):
    api_log = (api(1, "01.000", 202) + api(2, "01.000", 202) + api(3, "01.000", 202)
               + api(4, "01.000", 202) + api(5, "01.000", 400) + api(6, "01.000", 500, "GET", "/v2.1/servers/detail"))
    cpu1 = (cpu(1, "02.000", "INFO", "Took 1.00 seconds to build instance.")
            # 2: rescheduled away from cpu1, then built on cpu2
            + cpu(2, "02.000", "ERROR", "Instance failed to spawn")
            + cpu(2, "02.100", "DEBUG", "Build of instance x was re-scheduled: boom")
            # 3: fails for good
            + cpu(3, "02.000", "ERROR", "Instance failed to spawn")
            + cpu(3, "02.500", "ERROR", "Build of instance aborted: second error"))
    cpu2 = cpu(2, "04.000", "INFO", "Took 1.50 seconds to build instance.")
    tr = run(tmp_path, api_log, {"cpu1": cpu1, "cpu2": cpu2})
    got = {r["trace_id"][4]: r for r in tr.iter_rows(named=True)}
    assert got["1"]["outcome"] == "success" and got["1"]["operation"] == "server.create"
    assert got["2"]["outcome"] == "retried" and got["2"]["retries"] == 1
    assert got["3"]["outcome"] == "failed"
    assert got["3"]["error"].endswith("Instance failed to spawn")  # the first error, not the last
    assert got["3"]["error_service"] == "nova-compute"
    assert got["4"]["outcome"] == "unknown"  # accepted, completion never logged
    assert got["5"]["outcome"] == "rejected"
    assert got["6"]["outcome"] == "failed" and got["6"]["error"].startswith("HTTP 500")
    assert got["1"]["end_exact"] and not got["4"]["end_exact"]


def test_downstream_api_calls_name_neither_the_operation_nor_its_outcome(tmp_path: Path):
    """nova-api and nova-compute call neutron with their request id as the global request id
    (Pike on): neutron's access lines join the server create's trace, earlier than nova-api's
    own (it answers last) and with their own statuses (nova's floating-IP lookup answers 404).
    The trace stays ``server.create``, judged by nova-api's 202 and the build."""
    rid = R.format(n=1)
    neu = [f"req-{i}2222222-2222-4222-8222-222222222222" for i in range(3)]

    def neutron(i: int, t: str, status: int, method: str, path: str) -> str:
        return (f"2026-01-10 10:00:{t} 500 INFO neutron.api.wsgi [{rid} {neu[i]} - p - - -] "
                f'127.0.0.1 "{method} {path} HTTP/1.1" status: {status}  len: 10 '
                "time: 0.0100000\n")

    api_log = api(1, "01.000", 202)  # started 00.800 (time 0.2)
    cpu1 = cpu(1, "03.000", "INFO", "Took 1.00 seconds to build instance.")
    d = tmp_path / "ctl" / "var" / "log" / "neutron"
    d.mkdir(parents=True)
    (d / "neutron-server.log").write_text(
        neutron(0, "00.900", 200, "GET", "/v2.0/networks?id=x")
        + neutron(1, "02.000", 200, "PUT", "/v2.0/ports/x")
        + neutron(2, "02.500", 404, "GET", "/v2.0/floatingips?port_id=x"))
    [t] = run(tmp_path, api_log, {"cpu1": cpu1}).iter_rows(named=True)
    assert (t["trace_id"], t["operation"], t["outcome"], t["http_status"]) == (
        rid, "server.create", "success", 202)
    assert "neutron-server" in t["services"]
