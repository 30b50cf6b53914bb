"""The recorders ``stacklens run`` starts beside the load (issue 8): RabbitMQ's firehose and
management counters (:mod:`stacklens.broker`), MariaDB's statement digests and lock counters
(:mod:`stacklens.dbstat`), and per-process CPU/memory of the cloud's services
(:mod:`stacklens.resources`, local processes only).

For the built-in lab every target is known (:func:`stacklens_lab.capture_targets`); for any
other cloud the user names the broker's management URL and the database URL (options or
``STACKLENS_RABBIT_MGMT_URL`` / ``STACKLENS_DB_URL``); what is not named is not captured, and
the run says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import typer

from stacklens.broker import BrokerConfig, BrokerRecorder
from stacklens.dbstat import DbRecorder, DbTarget
from stacklens.recorder import Recorder, Recording
from stacklens.resources import ResourceRecorder
from stacklens.store import RunStore

CAPTURE = typer.Option(True, "--capture/--no-capture",
                       help="Record the broker's messages, the database's statements and the "
                            "services' CPU/memory during the run (the lab: all; another cloud: "
                            "what --broker-mgmt-url / --db-url name).")
BROKER_URL = typer.Option(None, "--broker-mgmt-url", envvar="STACKLENS_RABBIT_MGMT_URL",
                          help="RabbitMQ management API URL, e.g. http://user:pass@host:15672 "
                               "(user needs the administrator tag: the firehose is switched on "
                               "for the run only).")
DB_URL = typer.Option(None, "--db-url", envvar="STACKLENS_DB_URL",
                      help="MariaDB/MySQL URL as in [database] connection, e.g. "
                           "mysql+pymysql://user:pass@host:3306/ (needs performance_schema).")


def _broker(url: str, amqp_port: int = 5672) -> BrokerRecorder:
    u = urlsplit(url)
    base = f"{u.scheme}://{u.hostname}:{u.port or 15672}{u.path.rstrip('/')}"
    return BrokerRecorder(BrokerConfig(base, amqp_host=u.hostname or "127.0.0.1",
                                       amqp_port=amqp_port, user=u.username or "guest",
                                       password=u.password or "guest", sample_every_s=5.0))


def recorders(lab_root: Path | None, broker_url: str | None,
              db_url: str | None) -> tuple[list[Recorder], list[str]]:
    """The recorders for this run and notes on what will not be captured. ``lab_root``: the
    lab's folder when the run's cloud is the lab (its broker, database and processes), else
    None. Raises :class:`~stacklens.errors.StacklensError` for a malformed ``db_url``."""
    recs: list[Recorder] = []
    notes: list[str] = []
    lab: dict[str, Any] | None = None
    if lab_root is not None:
        from stacklens_lab import capture_targets

        lab = capture_targets(lab_root)
    if broker_url:
        recs.append(_broker(broker_url))
    elif lab is not None:
        u = urlsplit(lab["rabbit_mgmt_url"])
        recs.append(_broker(f"http://guest:guest@{u.hostname}:{u.port}", lab["amqp_port"]))
    else:
        notes.append("broker: not captured (no --broker-mgmt-url)")
    if db_url:
        recs.append(DbRecorder(DbTarget.from_url(db_url), interval_s=5.0))
    elif lab is not None:
        recs.append(DbRecorder(DbTarget(**lab["db"]), interval_s=5.0))
    else:
        notes.append("db: not captured (no --db-url)")
    if lab is not None and lab["pids"]:
        recs.append(ResourceRecorder(lab["pids"], interval_s=1.0))
    else:
        notes.append("resources: not captured (the cloud's processes are not on this machine)")
    return recs, notes


def keep(out: Path, rec: Recording, skipped: list[str],
         window_ns: tuple[int, int]) -> dict[str, Any]:
    """Store what the recorders captured in the run folder ``out`` (their tables) and return
    the manifest's ``run.capture`` block: ``{"tables": {name: rows}, "notes": {recorder:
    [str]}, "skipped": [str], "window_ns": [start, end]}`` (every recorder was on during the
    window, ns since epoch; :func:`stacklens.broker.crosscheck` compares logs inside it); the
    report shows the notes."""
    store = RunStore(out)
    store.write(rec.tables)
    block = {"tables": {k: v.height for k, v in rec.tables.items()},
             "notes": rec.notes, "skipped": skipped,
             "window_ns": list(window_ns)}
    run = dict(store.manifest().get("run") or {})
    run["capture"] = block
    store.write_section("run", run)
    return block
