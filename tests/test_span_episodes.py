"""One span per episode of a request's work in a process (issue 7, defect 6).

Synthetic logs in the formats of their writers: oslo.log record prefix with the Pike+ context
``[%(global_request_id)s %(request_id)s %(user_identity)s]`` (placement) or the older
``[%(request_id)s %(user_identity)s]``; oslo.messaging ``_drivers/amqpdriver.py`` DEBUG lines
(``CALL msg_id: X exchange 'nova' topic 'T'``, ``received message msg_id: X reply to Q``,
``sending reply msg_id: X reply queue: Q time elapsed: Ns``); placement ``requestlog.py``
(``Starting request: ip "GET /x"`` DEBUG, then the access line without time); oslo.service
``periodic_task.py`` (``Running periodic task ComputeManager._x``).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from stacklens.ingest.pipeline import ingest
from stacklens.trace import build_traces

R = "req-11111111-1111-1111-1111-111111111111"
AMQP = "oslo_messaging._drivers.amqpdriver"


def rec(t: float, pid: int, level: str, logger: str, ctx: str, msg: str) -> str:
    m, s = divmod(t, 60)
    return f"2025-03-01 10:{int(m):02d}:{s:06.3f} {pid} {level} {logger} [{ctx}] {msg}\n"


def mid(n: int) -> str:
    return f"{n:032x}"


def call(t, pid, topic, n, ctx=f"{R} u p"):
    return rec(t, pid, "DEBUG", AMQP, ctx, f"CALL msg_id: {mid(n)} exchange 'nova' topic '{topic}'")


def received(t, pid, n):
    return rec(t, pid, "DEBUG", AMQP, "-", f"received message msg_id: {mid(n)} reply to reply_{n:032x}")


def reply(t, pid, n, ctx=f"{R} u p"):
    return rec(t, pid, "DEBUG", AMQP, ctx,
               f"sending reply msg_id: {mid(n)} reply queue: reply_{n:032x} time elapsed: 0.01s")


def run(tmp_path: Path, files: dict[str, str]) -> dict[str, pl.DataFrame]:
    for rel, text in files.items():
        f = tmp_path / "ctl" / "var" / "log" / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)
    return build_traces(ingest([str(tmp_path)]).events)


def durs(out, service: str) -> list[float]:
    sp = out["spans"].filter(pl.col("service") == service).sort("start_ns")
    return ((sp["end_ns"] - sp["start_ns"]) / 1e9).to_list()


def placement_request(t: float, local: str, path: str) -> str:
    ctx = f"{R} {local} nova service - default default"
    return (rec(t, 501, "DEBUG", "placement.requestlog", ctx, f'Starting request: 10.0.0.5 "GET {path}"')
            + rec(t + 0.1, 501, "DEBUG", "placement.objects.resource_provider", ctx, "Getting providers")
            + rec(t + 0.135, 501, "INFO", "placement.requestlog", ctx,
                  f'10.0.0.5 "GET {path}" status: 200 len: 300 microversion: 1.39'))


def test_placement_requests_of_one_global_id_are_separate_spans(tmp_path: Path):
    # nova-compute (request R) calls placement three times over 395 s; placement logs R as the
    # global id beside its own id per request
    cpu = "".join(rec(t, 300, "INFO", "nova.compute.manager", f"{R} u p", f"step at {t}")
                  for t in (0.0, 200.0, 395.0))
    plc = (placement_request(0.05, "req-aaaaaaaa-0000-0000-0000-000000000001", "/allocations/x")
           + placement_request(200.05, "req-aaaaaaaa-0000-0000-0000-000000000002", "/allocations/x")
           + placement_request(395.05, "req-aaaaaaaa-0000-0000-0000-000000000003", "/allocations/x"))
    out = run(tmp_path, {"nova/nova-compute.log": cpu, "placement/placement-api.log": plc})
    d = durs(out, "placement-api")
    assert len(d) == 3 and max(d) <= 0.136
    assert out["traces"].height == 1


def test_reentries_with_one_request_id_are_cut_at_the_access_line(tmp_path: Path):
    # the same request id answered twice, 100 s apart (eventlet default format, glance-api)
    ctx = f"{R} u p - - -"

    def req(t):
        return (rec(t, 40, "DEBUG", "glance.api.v2.images", ctx, "image lookup")
                + rec(t + 0.05, 40, "INFO", "eventlet.wsgi.server", ctx,
                      '127.0.0.1 - - [01/Mar/2025 10:00:00] "GET /v2/images HTTP/1.1" 200 870 0.060000'))
    out = run(tmp_path, {"glance/glance-api.log": req(1.0) + req(101.0)})
    d = durs(out, "glance-api")
    assert len(d) == 2 and all(abs(x - 0.06) < 1e-6 for x in d)


def test_scheduler_calls_are_separate_spans(tmp_path: Path):
    # two select_destinations calls of one request, 37 s apart, 0.08 s of work each
    cond = call(1.0, 200, "scheduler", 1) + call(38.0, 200, "scheduler", 2)
    sch = ""
    for t, n in ((1.0, 1), (38.0, 2)):
        sch += (received(t + 0.001, 100, n)
                + rec(t + 0.02, 100, "DEBUG", "nova.scheduler.filter_scheduler", f"{R} u p", "Starting with 1 host(s)")
                + reply(t + 0.081, 100, n))
    out = run(tmp_path, {"nova/nova-conductor.log": cond, "nova/nova-scheduler.log": sch})
    d = durs(out, "nova-scheduler")
    assert len(d) == 2 and max(d) <= 0.081
    sp = out["spans"].filter(pl.col("service") == "nova-scheduler")
    assert sp["end_exact"].all() and sp["operation"].to_list() == ["call scheduler"] * 2


def test_reply_logged_under_a_stale_context_joins_its_call(tmp_path: Path):
    # oslo.messaging logged the reply under the thread's previous context (old releases)
    stale = "req-99999999-9999-9999-9999-999999999999 u p"
    cond = call(1.0, 200, "scheduler", 1)
    sch = (rec(0.5, 100, "DEBUG", "nova.scheduler.manager", stale, "old work")
           + received(1.001, 100, 1)
           + rec(1.02, 100, "DEBUG", "nova.scheduler.filter_scheduler", f"{R} u p", "Starting with 1 host(s)")
           + reply(1.05, 100, 1, ctx=stale))
    out = run(tmp_path, {"nova/nova-conductor.log": cond, "nova/nova-scheduler.log": sch})
    sp = out["spans"].filter((pl.col("service") == "nova-scheduler") & (pl.col("trace_id") == R))
    assert sp.height == 1 and sp["end_exact"][0] and sp["n_events"][0] == 3


def test_periodic_task_runs_are_separate_spans(tmp_path: Path):
    # the periodic context keeps one request id for the life of the process
    ctx = f"{R} - -"
    text = "".join(
        rec(t, 300, "DEBUG", "oslo_service.periodic_task", ctx, "Running periodic task ComputeManager._poll")
        + rec(t + 0.2, 300, "DEBUG", "nova.compute.manager", ctx, "polled")
        for t in (0.0, 60.0, 120.0, 180.0)
    )
    out = run(tmp_path, {"nova/nova-compute.log": text})
    d = durs(out, "nova-compute")
    assert len(d) == 4 and max(d) <= 0.2 + 1e-9


def test_nested_self_call_resumes_the_outer_handler(tmp_path: Path):
    # nova-network handles call 1, calls itself (call 2) and continues after the inner reply
    cpu = call(0.0, 300, "network", 1)
    net = (received(0.01, 400, 1)
           + rec(0.02, 400, "DEBUG", "nova.network.manager", f"{R} u p", "outer work")
           + call(0.03, 400, "network", 2)
           + received(0.04, 400, 2)
           + rec(0.05, 400, "DEBUG", "nova.network.manager", f"{R} u p", "inner work")
           + reply(0.06, 400, 2)
           + rec(5.00, 400, "DEBUG", "nova.network.manager", f"{R} u p", "outer continues")
           + reply(5.01, 400, 1))
    out = run(tmp_path, {"nova/nova-compute.log": cpu, "nova/nova-network.log": net})
    sp = out["spans"].filter(pl.col("service") == "nova-network").sort("start_ns")
    d = ((sp["end_ns"] - sp["start_ns"]) / 1e9).to_list()
    assert len(d) == 2 and abs(d[0] - 5.0) < 1e-6 and abs(d[1] - 0.02) < 1e-6
    assert sp["n_events"].to_list() == [5, 3]  # receipt, work, CALL, continuation, reply


def test_breakdown_still_sums_to_end_to_end(tmp_path: Path):
    cond = call(1.0, 200, "scheduler", 1) + call(38.0, 200, "scheduler", 2)
    sch = "".join(received(t + 0.001, 100, n) + reply(t + 0.08, 100, n) for t, n in ((1.0, 1), (38.0, 2)))
    plc = placement_request(2.0, "req-aaaaaaaa-0000-0000-0000-000000000001", "/allocations/x")
    out = run(tmp_path, {"nova/nova-conductor.log": cond, "nova/nova-scheduler.log": sch,
                         "placement/placement-api.log": plc})
    tot = out["breakdown"].group_by("trace_id").agg(pl.col("dur_s").sum())
    j = out["traces"].join(tot, on="trace_id")
    assert j.height == out["traces"].height
    assert ((j["dur_s"] - j["dur_s_right"]).abs() < 1e-6).all()


def test_eventlet_connection_events_under_a_stale_context_are_not_the_request(tmp_path: Path):
    # eventlet wsgi.py logs "(pid) accepted (...)" / "(pid) timed out (...)" under the context
    # the green thread had left over from its last request, minutes later
    ctx = f"{R} u p - - -"
    text = (rec(1.0, 40, "DEBUG", "neutron.api.v2.base", ctx, "port lookup")
            + rec(1.05, 40, "INFO", "neutron.wsgi", ctx,
                  '10.0.0.1 - - [01/Mar/2025 10:00:01] "GET /v2.0/ports.json HTTP/1.1" 200 870 0.060000')
            + rec(200.0, 40, "INFO", "neutron.wsgi", ctx, "(40) timed out ('10.0.0.1', 51695)")
            + rec(300.0, 40, "DEBUG", "neutron.wsgi", ctx, "(40) accepted ('10.0.0.1', 51700)"))
    out = run(tmp_path, {"neutron/server.log": text})
    d = durs(out, "neutron-server")
    assert len(d) == 3 and abs(d[0] - 0.06) < 1e-6 and d[1] == d[2] == 0
