"""``stacklens broker capture --out RUN``: record every message through a RabbitMQ broker (its
firehose, switched on for the capture only) and the management API's counters, for a duration or
until a given time, into the run folder's ``messages`` and ``broker_samples`` tables.

Works for any RabbitMQ whose management API and AMQP listener are reachable with credentials of
an ``administrator`` user. The firehose is switched off again on every exit path (Ctrl-C too).
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

import typer
from rich.console import Console

from stacklens.broker import BrokerConfig, BrokerRecorder
from stacklens.errors import UserError
from stacklens.store import RunStore

broker_app = typer.Typer(help="Broker accounting: RabbitMQ messages and counters.",
                         no_args_is_help=True)
err = Console(stderr=True)


def _instant(text: str | None, what: str) -> float | None:
    if text is None:
        return None
    try:
        t = datetime.fromisoformat(text)
    except ValueError as e:
        raise UserError(f"{what}: not an ISO 8601 time: {text!r}") from e
    return (t if t.tzinfo else t.replace(tzinfo=UTC)).timestamp()


@broker_app.command("capture")
def capture(
    out: Path = typer.Option(..., "--out", help="Run folder to write the tables into."),
    mgmt_url: str = typer.Option("http://127.0.0.1:15672", "--mgmt-url",
                                 envvar="STACKLENS_RABBIT_MGMT_URL",
                                 help="RabbitMQ management API base URL."),
    amqp: str = typer.Option("", "--amqp", envvar="STACKLENS_RABBIT_AMQP",
                             help="AMQP host:port (default: the management host, port 5672)."),
    user: str = typer.Option("guest", "--user", envvar="STACKLENS_RABBIT_USER"),
    password: str = typer.Option("guest", "--password", envvar="STACKLENS_RABBIT_PASSWORD"),
    vhost: str = typer.Option("/", "--vhost"),
    duration: float | None = typer.Option(None, "--duration", help="Seconds to capture."),
    since: str | None = typer.Option(None, "--since", help="Start at this ISO 8601 time "
                                     "(UTC unless it has an offset); default now."),
    until: str | None = typer.Option(None, "--until", help="Stop at this ISO 8601 time."),
    every: float = typer.Option(5.0, "--sample-every", help="Management poll period, s."),
    as_json: bool = typer.Option(False, "--json", help="Print counts and notes as JSON."),
) -> None:
    """Capture the broker's messages and counters between --since and --until (or --duration)."""
    t_since, t_until = _instant(since, "--since"), _instant(until, "--until")
    if (duration is None) == (t_until is None):
        raise UserError("give exactly one of --duration and --until")
    host = urlsplit(mgmt_url).hostname or "127.0.0.1"
    ahost, _, aport = (amqp or f"{host}:5672").rpartition(":")
    cfg = BrokerConfig(mgmt_url, amqp_host=ahost or host, amqp_port=int(aport), user=user,
                       password=password, vhost=vhost, sample_every_s=every)
    if t_since is not None:
        wait = t_since - time.time()
        if wait > 0:
            err.print(f"broker: waiting {wait:.0f} s for --since")
            time.sleep(wait)
    end = t_until if t_until is not None else time.time() + float(duration or 0)
    rec = BrokerRecorder(cfg)
    try:
        rec.start()
    except Exception as e:
        raise UserError(f"broker: cannot capture from {mgmt_url}: {e}") from e
    err.print(f"broker: capturing until {datetime.fromtimestamp(end, UTC).isoformat()}")
    try:
        while time.time() < end:  # bounded by --until / --duration
            time.sleep(min(1.0, max(0.0, end - time.time())))
    except KeyboardInterrupt:
        err.print("broker: interrupted; stopping the capture")
    finally:
        tables, notes = rec.stop()
    RunStore(out).write(tables)
    counts = {k: v.height for k, v in tables.items()}
    if as_json:
        print(json.dumps({"out": str(out), "rows": counts, "notes": notes}))
    else:
        for n in notes:
            err.print(f"broker: {n}")
        print(f"{counts.get('messages', 0)} messages, {counts.get('broker_samples', 0)} "
              f"samples -> {out}")
