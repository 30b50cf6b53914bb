""":class:`BrokerRecorder`: every message through RabbitMQ during a run, and the broker's own
counters over time, as the tables ``messages`` and ``broker_samples``.

Threads (three, each bounded and stopped by :meth:`BrokerRecorder.stop`):

* *firehose*: a pika ``BlockingConnection`` bound to ``amq.rabbitmq.trace`` with ``#`` through
  an exclusive, auto-deleted queue capped at :attr:`BrokerConfig.broker_queue_max` messages
  (RabbitMQ drops the oldest beyond it: the broker is never held back by a slow recorder). It
  hands raw trace messages to a bounded in-process queue without waiting; what does not fit is
  counted (``dropped``), never blocks the connection.
* *decoder*: turns raw trace messages into rows (:func:`stacklens.broker.decode.decode_trace`).
* *sampler*: polls the management API every :attr:`BrokerConfig.sample_every_s` seconds.

The firehose is switched on (management API ``tracing`` flag, or ``rabbitmqctl trace_on``
when :attr:`BrokerConfig.ctl` is given) only after the trace queue consumes, and off again in
:meth:`stop` -- also when anything failed -- after which the queue is drained (bounded).
"""

from __future__ import annotations

import os
import queue
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import Any

import polars as pl

from stacklens.broker.decode import decode_trace, split_conn_name
from stacklens.broker.mgmt import Management, conn_label, sample_rows
from stacklens.schema import BROKER_SAMPLES, MESSAGES

__all__ = ["BrokerConfig", "BrokerRecorder"]

_TRACE_X = "amq.rabbitmq.trace"


@dataclass(frozen=True)
class BrokerConfig:
    """Where the broker is and how hard to look.

    ``mgmt_url``: management API base URL; ``amqp_host``/``amqp_port``: the AMQP listener the
    firehose is read from; ``user``/``password``: credentials for both (management tag
    ``administrator`` to switch tracing); ``vhost``; ``sample_every_s``: management poll period;
    ``queue_max``: raw trace messages held in memory before drops; ``broker_queue_max``: cap of
    the trace queue in the broker; ``max_rows``: rows kept before drops; ``ctl``: argv prefix of
    rabbitmqctl (e.g. ``["rabbitmqctl", "-n", "rabbit@host"]``) to switch the firehose with
    ``trace_on``/``trace_off`` instead of the management API; ``quiet_s``/``quiet_wait_s``: at
    stop, the firehose stays on until no trace event arrived for ``quiet_s`` seconds (waiting at
    most ``quiet_wait_s``), so a message published just before the end is traced delivered too
    (switching off mid-flight leaves a publish without its delivery)."""

    mgmt_url: str
    amqp_host: str = "127.0.0.1"
    amqp_port: int = 5672
    user: str = "guest"
    password: str = "guest"
    vhost: str = "/"
    sample_every_s: float = 5.0
    queue_max: int = 200_000
    broker_queue_max: int = 1_000_000
    max_rows: int = 5_000_000
    ctl: tuple[str, ...] | None = None
    quiet_s: float = 0.5
    quiet_wait_s: float = 3.0


class BrokerRecorder:
    """A :class:`stacklens.recorder.Recorder` for RabbitMQ (``name = "broker"``).

    :meth:`start` connects, binds the trace queue and switches the firehose on; it raises
    (pika / httpx errors, ``RuntimeError``) when the broker cannot be traced, with tracing left
    off. :meth:`stop` returns ``{"messages": frame, "broker_samples": frame}`` (schemas
    :data:`stacklens.schema.MESSAGES`, :data:`stacklens.schema.BROKER_SAMPLES`) and notes
    (counts of messages, drops, decode failures, sampling errors); it never raises."""

    name = "broker"

    def __init__(self, config: BrokerConfig) -> None:
        self.cfg = config
        self.mgmt = Management(config.mgmt_url, config.user, config.password, config.vhost)
        self._raw: queue.Queue[tuple[int, str, dict[str, Any] | None, bytes] | None] = \
            queue.Queue(maxsize=config.queue_max)
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._rows: list[dict[str, Any]] = []
        self._samples: list[dict[str, Any]] = []
        self._conns: dict[str, str] = {}  # RabbitMQ connection name -> client-given name
        self._notes: list[str] = []
        self._dropped = self._row_drops = self._sample_errors = 0
        self._start_error: BaseException | None = None
        self._threads: list[threading.Thread] = []
        self._conn_name = f"stacklens-broker:{os.getpid()}:{id(self):x}"
        self._tracing = False
        self._last_event = time.monotonic()  # monotonic s of the last trace event received
        self.t0_ns = self.t1_ns = 0

    # -- firehose -------------------------------------------------------------------------
    def _firehose(self) -> None:
        import pika  # imported here: the rest of stacklens works without it

        try:
            conn = pika.BlockingConnection(pika.ConnectionParameters(
                self.cfg.amqp_host, self.cfg.amqp_port, self.cfg.vhost,
                pika.PlainCredentials(self.cfg.user, self.cfg.password),
                client_properties={"connection_name": self._conn_name},
                socket_timeout=10, blocked_connection_timeout=30, heartbeat=60))
            ch = conn.channel()
            q = ch.queue_declare("", exclusive=True, auto_delete=True, arguments={
                "x-max-length": self.cfg.broker_queue_max}).method.queue
            ch.queue_bind(q, _TRACE_X, "#")
        except BaseException as e:  # noqa: BLE001 - handed to start()
            self._start_error = e
            self._ready.set()
            self._raw.put(None)
            return

        def on_msg(_ch: Any, method: Any, props: Any, body: bytes) -> None:
            item = (time.time_ns(), method.routing_key, props.headers, body)
            self._last_event = time.monotonic()
            try:
                self._raw.put_nowait(item)
            except queue.Full:
                self._dropped += 1

        try:
            ch.basic_consume(q, on_msg, auto_ack=True)
            self._ready.set()
            while not self._stop.is_set():
                conn.process_data_events(time_limit=0.5)
            # drain what the broker still holds for us (tracing is off by now), bounded
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                left = ch.queue_declare(q, passive=True).method.message_count
                conn.process_data_events(time_limit=0.3)
                if left == 0:
                    break
        except Exception as e:  # noqa: BLE001 - a recorder notes, never raises
            self._notes.append(f"firehose connection ended: {e!r}")
        finally:
            try:
                conn.close()
            except Exception:  # noqa: BLE001, S110 - closing a broken connection
                pass
            self._raw.put(None)  # tells the decoder to finish (blocks only if full: bounded)

    def _decoder(self) -> None:
        while True:
            item = self._raw.get()
            if item is None:
                return
            if len(self._rows) >= self.cfg.max_rows:
                self._row_drops += 1
                continue
            ts, key, headers, body = item
            self._rows.append(decode_trace(key, headers, body, ts))

    # -- management -----------------------------------------------------------------------
    def _sample_once(self) -> None:
        try:
            snap = self.mgmt.snapshot()
        except Exception as e:  # noqa: BLE001 - counted
            self._sample_errors += 1
            if self._sample_errors == 1:
                self._notes.append(f"management API sample failed: {e!r}")
            return
        for c in snap.get("connections") or []:
            self._conns[str(c.get("name", ""))] = conn_label(c)
        self._samples.extend(sample_rows(snap, time.time_ns(), skip_conn=self._conn_name))

    def _sampler(self) -> None:
        while not self._stop.wait(self.cfg.sample_every_s):
            self._sample_once()

    # -- switch ---------------------------------------------------------------------------
    def _switch(self, on: bool) -> None:
        if self.cfg.ctl:
            argv = [*self.cfg.ctl, "trace_on" if on else "trace_off", "-p", self.cfg.vhost]
            r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
            if r.returncode != 0:
                raise RuntimeError(f"{' '.join(argv)} failed: {r.stderr.strip()[-500:]}")
        else:
            self.mgmt.set_tracing(on)

    def _wait_quiet(self) -> None:
        """Block until no trace event came for ``quiet_s`` seconds, ``quiet_wait_s`` at most;
        notes it when the broker never went quiet (a busy cloud: the edge may hold a few
        publishes without their deliveries)."""
        deadline = time.monotonic() + self.cfg.quiet_wait_s
        while time.monotonic() < deadline:
            idle = time.monotonic() - self._last_event
            if idle >= self.cfg.quiet_s:
                return
            time.sleep(min(self.cfg.quiet_s - idle, 0.1) + 0.01)
        self._notes.append(f"the broker did not go quiet for {self.cfg.quiet_s} s within "
                           f"{self.cfg.quiet_wait_s} s before the firehose was switched off: "
                           "messages in flight then are traced published but not delivered")

    # -- Recorder protocol ----------------------------------------------------------------
    def start(self) -> None:
        """Connect, bind, switch the firehose on, start the threads (returns in seconds)."""
        self.t0_ns = time.time_ns()
        was_on = self.mgmt.tracing() if not self.cfg.ctl else False
        if was_on:
            self._notes.append("the firehose was already on before the capture; left on")
        for target in (self._firehose, self._decoder):
            t = threading.Thread(target=target, name=f"stacklens-broker-{target.__name__}",
                                 daemon=True)
            t.start()
            self._threads.append(t)
        if not self._ready.wait(30) or self._start_error is not None:
            self._stop.set()
            err = self._start_error or TimeoutError("trace queue not ready after 30 s")
            raise RuntimeError(f"broker capture could not start: {err}") from err
        try:
            if not was_on:
                self._switch(True)
                self._tracing = True
        except BaseException:
            self._stop.set()
            raise
        self._sample_once()
        t = threading.Thread(target=self._sampler, name="stacklens-broker-sampler", daemon=True)
        t.start()
        self._threads.append(t)

    def stop(self, timeout_s: float = 30.0) -> tuple[dict[str, pl.DataFrame], list[str]]:
        """Switch the firehose off (always), drain, join the threads (at most ``timeout_s``
        each), and return the tables and notes (see the class docstring)."""
        self.t1_ns = time.time_ns()
        if self._tracing:
            self._wait_quiet()
            try:
                self._switch(False)
                self._tracing = False
            except Exception as e:  # noqa: BLE001
                self._notes.append(f"could not switch the firehose off: {e!r}")
        self._sample_once()
        self._stop.set()
        for t in self._threads:
            t.join(timeout_s)
            if t.is_alive():
                self._notes.append(f"{t.name} still running after {timeout_s:.0f} s")
        return {"messages": self.messages_frame(), "broker_samples": self.samples_frame()}, \
            self.notes()

    # -- results --------------------------------------------------------------------------
    def messages_frame(self) -> pl.DataFrame:
        """The ``messages`` rows so far, connection names resolved to the client-given ones."""
        rows = list(self._rows)
        for r in rows:
            name = self._conns.get(r.get("connection") or "", r.get("connection"))
            r["conn_name"] = name
            r["client_binary"], r["client_pid"] = split_conn_name(name)
        return pl.DataFrame(rows, schema=MESSAGES) if rows else pl.DataFrame(schema=MESSAGES)

    def samples_frame(self) -> pl.DataFrame:
        """The ``broker_samples`` rows so far."""
        return pl.DataFrame(self._samples, schema=BROKER_SAMPLES) if self._samples \
            else pl.DataFrame(schema=BROKER_SAMPLES)

    def notes(self) -> list[str]:
        """Plain-words notes: what was captured and what was lost."""
        pub = sum(1 for r in self._rows if r.get("direction") == "publish")
        und = sum(1 for r in self._rows if r.get("envelope") == "undecodable")
        out = [f"{len(self._rows)} trace events ({pub} published, {len(self._rows) - pub} "
               f"delivered), {len(self._samples)} management samples"]
        if self._dropped:
            out.append(f"{self._dropped} trace messages dropped (in-memory queue full)")
        if self._row_drops:
            out.append(f"{self._row_drops} trace messages dropped beyond {self.cfg.max_rows} rows")
        if und:
            out.append(f"{und} messages not decodable as oslo.messaging JSON")
        if self._sample_errors:
            out.append(f"{self._sample_errors} management API samples failed")
        return out + self._notes


