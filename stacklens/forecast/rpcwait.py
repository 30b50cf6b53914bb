"""How long an RPC caller waits for its reply: oslo.messaging's reply polling.

From oslo.messaging 14.8.0 (OpenStack 2024.2) the RabbitMQ driver's caller does not block on
its reply queue: ``ReplyWaiters.get`` (``oslo_messaging/_drivers/amqpdriver.py``) checks the
queue, then ``time.sleep(0.5)`` and checks again until the call's timeout (the comment there:
"we can't use block=True, see lp-2035113"). A call whose reply is back after ``r`` seconds
resumes its caller only at the next check: after ``0.5 * ceil(r / 0.5)`` seconds, never less
than 0.5 s. 14.7.0 and older block on the queue (``get(block=True, timeout=timeout)``) and
resume at once.

That wait is a mechanism the storm model must keep: a nova-compute claim holds the
``compute_resources`` lock across 4 conductor calls (``instance_claim``: the claim's saves
and the compute node update), so on a 2025.1 lab with 8 computes, where the conductor's
replies took longer than 0.5 s under the burst, a hold went from ~2.2 s (4 polls) to 3-9 s,
and the boots piled onto one host waited in that lock's queue.

The poll is read from the logs, not assumed from a release: :func:`detect_reply_poll` takes
each nova-compute ``CALL msg_id`` line and the next line its request logs in the same process
(the caller resumed); when most of those waits sit on multiples of 0.5 s, the runs poll.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl

__all__ = ["REPLY_POLL_S", "caller_wait", "caller_wait_s", "calls_within", "detect_reply_poll"]

#: oslo.messaging's reply check interval (s), 14.8.0 and later (module docstring).
REPLY_POLL_S = 0.5
#: A caller's wait within this many seconds of a multiple of the poll counts as polled.
NEAR_S = 0.04
#: The share of polled waits from which runs are taken to poll.
POLLED_SHARE = 0.7


def detect_reply_poll(events: pl.DataFrame) -> tuple[float, float, int]:
    """(poll s or 0, share of waits on a multiple of :data:`REPLY_POLL_S`, waits seen) from
    a run's ``events``: for each nova-compute ``CALL msg_id`` line with a request id, the
    time to the next line of that request in the same process other than the call's own
    ("Sending topic", "Expecting reply"). 0 when fewer than 20 waits are seen (DEBUG logging
    off) or under :data:`POLLED_SHARE` of them sit within :data:`NEAR_S` of a multiple of
    the poll (at least one)."""
    e = events.filter((pl.col("service") == "nova-compute") & pl.col("request_id").is_not_null()
                      & ~pl.col("message").str.starts_with("Sending topic")
                      & ~pl.col("message").str.starts_with("Expecting reply"))
    e = e.sort("ts_ns").with_columns(nxt=pl.col("ts_ns").shift(-1).over("request_id", "pid"))
    d = e.filter(pl.col("message").str.starts_with("CALL msg_id")
                 & pl.col("nxt").is_not_null()).select((pl.col("nxt") - pl.col("ts_ns")) / 1e9)
    w = d.to_series().to_numpy()
    if w.size < 20:
        return 0.0, 0.0, int(w.size)
    k = np.round(w / REPLY_POLL_S)
    near = (k >= 1) & (np.abs(w - k * REPLY_POLL_S) <= NEAR_S)
    share = float(near.mean())
    return (REPLY_POLL_S if share >= POLLED_SHARE else 0.0), share, int(w.size)


def caller_wait(reply_s: pl.Expr, poll_s: float) -> pl.Expr:
    """The caller's wait (s) for a reply back after ``reply_s`` seconds: ``reply_s`` itself
    without polling, else the next multiple of ``poll_s`` (at least one); the same rule as
    :func:`caller_wait_s`, over a column."""
    if poll_s <= 0:
        return reply_s
    return (reply_s / poll_s - 1e-6).ceil().clip(lower_bound=1.0) * poll_s


def caller_wait_s(reply_s: float, poll_s: float) -> float:
    """:func:`caller_wait` for one call (the storm model's callers)."""
    if poll_s <= 0:
        return reply_s
    return max(1.0, math.ceil(reply_s / poll_s - 1e-6)) * poll_s


def calls_within(calls: pl.DataFrame, windows: pl.DataFrame, poll_s: float) -> pl.DataFrame:
    """The calls that fall in each window, one row per (window, call). ``calls``:
    ``trace_id``, ``call_id``, ``start_ns``, ``end_ns`` (a conductor call span: sent to
    replied); ``windows``: ``trace_id``, ``key``, ``w0_ns``, ``w1_ns``. Returns ``key``,
    ``call_id`` and ``wait_s`` (f64: the caller's wait, :func:`caller_wait`)."""
    j = windows.join(calls, on="trace_id").filter(
        (pl.col("start_ns") >= pl.col("w0_ns")) & (pl.col("end_ns") <= pl.col("w1_ns")))
    return j.select("key", "call_id",
                    caller_wait((pl.col("end_ns") - pl.col("start_ns")) / 1e9, poll_s)
                    .alias("wait_s"))
