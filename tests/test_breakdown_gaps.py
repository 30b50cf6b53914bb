"""Breakdown gaps between services (stacklens.trace.classify.breakdown): a process waiting
silently inside its own span is that process's time, not 'between components', whichever
other service logged last; RPC transit (a receipt starts the receiver's span) and a caller
waiting for its reply stay 'between components'.

Synthetic logs in the formats of their writers, as in the 2025.1 lab: oslo.log record prefix
``[%(request_id)s %(user_identity)s]``; oslo.messaging ``_drivers/amqpdriver.py`` DEBUG lines
(``CAST unique_id``, ``received message with unique_id``, ``CALL msg_id``, ``received
message msg_id``, ``sending reply msg_id``); nova-compute's build waiting for its build slot
(``_locked_do_build_and_run_instance``'s semaphore logs nothing while it waits)."""

from __future__ import annotations

from pathlib import Path

from test_span_episodes import AMQP, R, mid, rec, received, reply, run

CTX = f"{R} u p"


def cast(t: float, pid: int, topic: str, n: int) -> str:
    return rec(t, pid, "DEBUG", AMQP, CTX, f"CAST unique_id: {mid(n)} exchange 'nova' topic '{topic}'")


def received_cast(t: float, pid: int, n: int) -> str:
    return rec(t, pid, "DEBUG", AMQP, CTX, f"received message with unique_id: {mid(n)}")


def call(t: float, pid: int, topic: str, n: int) -> str:
    return rec(t, pid, "DEBUG", AMQP, CTX, f"CALL msg_id: {mid(n)} exchange 'nova' topic '{topic}'")


def line(t: float, pid: int, logger: str, msg: str) -> str:
    return rec(t, pid, "DEBUG", logger, CTX, msg)


def test_a_silent_wait_in_a_span_is_its_service_time(tmp_path: Path):
    # conductor casts build_and_run_instance (t=1.0) and logs its own last line after the
    # compute's first ones (t=1.003); the compute then waits 100 s for a build slot, logging
    # nothing, and calls the conductor (t=101.0), which answers at once
    cond = (line(0.5, 200, "nova.conductor.manager", "Selected host: fake-1")
            + cast(1.0, 200, "compute.fake-1", 1)
            + line(1.003, 200, "oslo_messaging.rpc.server",
                   "Replied success message with id x and method: schedule_and_build_instances")
            + received(101.01, 200, 2)
            + reply(101.02, 200, 2))
    comp = (received_cast(1.001, 300, 1)
            + line(1.002, 300, "oslo_concurrency.lockutils",
                   'Lock "u1" acquired by "nova.compute.manager.ComputeManager.'
                   'build_and_run_instance.<locals>._locked_do_build_and_run_instance"'
                   ' :: waited 0.000s')
            + call(101.0, 300, "conductor", 2)
            + line(101.5, 300, "nova.compute.manager", "Start spawning the instance"))
    out = run(tmp_path, {"nova/nova-conductor.log": cond, "nova/nova-compute.log": comp})
    bd = dict(out["breakdown"].select("component", "dur_s").iter_rows())
    # 1.003 -> 101.0: the compute's wait (its span goes on), not the conductor's last line's
    assert bd["nova-compute"] > 99.9
    # the cast's transit (1.0 -> 1.001: the receipt starts the compute's span), the call's
    # (101.0 -> 101.01) and its reply's (101.02 -> 101.5: the compute awaited it)
    assert 0.49 < bd["between components"] < 0.52
    tot = sum(bd.values())
    tr = out["traces"]["dur_s"][0]
    assert abs(tot - tr) < 1e-6
