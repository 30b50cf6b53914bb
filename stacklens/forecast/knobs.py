"""The knobs of the boot-storm model: the configuration settings that decide scale, each with
its unit, its default and where its meaning comes from.

A knob is set from the command line as ``--set name=value`` (:func:`parse_sets`); the defaults
are nova 2025.1's own (or the lab's, where the lab sets them), and a calibration model may carry
the values its lab run used (``Calibration.knobs``), which override these defaults.

Sources: nova 2025.1 ``nova/conf/*.py`` (option defaults), the field notes (section 7: the
knobs that decide scale; section 4: the failure modes), the lab notes (what the lab sets).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, fields
from typing import Any

from stacklens.errors import UserError

__all__ = ["KNOB_HELP", "Knobs", "parse_sets"]


@dataclass(frozen=True)
class Knobs:
    """Settings of one simulated cloud. Counts are whole numbers, times ``*_s`` in seconds,
    rates are fractions in [0, 1]."""

    # cloud size and load (the scenario)
    computes: int = 4
    servers: int = 40
    concurrency: int = 20  # client slots: a slot is held from POST to the server gone
    poll_interval_s: float = 2.0  # client list-servers polling (stacklens run client)
    delete: bool = True  # delete each server as soon as it is ACTIVE (examples/boot-storm)
    # process counts (oslo.service workers: each a single-CPU Python process, GIL)
    api_workers: int = 2  # osapi_compute_workers (lab: gunicorn --workers)
    api_threads: int = 1  # requests one API worker serves at once (lab gunicorn sync: 1)
    conductor_workers: int = 2  # [conductor] workers
    scheduler_workers: int = 2  # [scheduler] workers
    # nova-compute
    max_concurrent_builds: int = 10  # [DEFAULT] max_concurrent_builds: build semaphore
    host_capacity: int = 1000  # instances one host takes (lab fake host: 1000 vCPU, 1 per VM)
    # scheduler placement decisions
    host_subset_size: int = 1  # [filter_scheduler] host_subset_size: pick among the best N
    shuffle_best_same_weighed_hosts: bool = False  # [filter_scheduler] same name
    view_memory: bool = False  # a scheduler worker counts its own picks until the row changes
    max_attempts: int = 3  # [scheduler] max_attempts: 1 try + reschedules
    scheduler_per_host_s: float = 0.0002  # filter + weigh cost per host per request (CPU)
    # database
    db_pool_size: int = 30  # [database] max_pool_size (10) + max_overflow (20), per process
    db_pool_timeout_s: float = 30.0  # [database] pool_timeout (SQLAlchemy QueuePool)
    db_deadlock_rate: float = 0.0  # per quota-reservation attempt (multi-writer Galera)
    db_max_retries: int = 5  # oslo.db wrap_db_retry(max_retries=5) on the quota write
    db_retry_interval_s: float = 1.0  # oslo.db retry_interval, doubled each retry, max 10 s
    # service failures not caused by load
    build_failure_rate: float = 0.0  # a build fails at the compute (rescheduled)
    # how far the calibrated load dependence is extrapolated beyond the calibrated load
    max_slowdown: float = 8.0  # cap on the service-time multiplier from load (no CPU model)
    contention: bool = True  # controller stages scaled by the builds in flight (dist.py)
    saturation: bool = True  # unserved stages beyond calibrated load: >= load / top (dist.py)
    # the host's shared CPU (a model with a cpu section: stacklens.forecast.cpu)
    cores: float = 0.0  # cores shared by every service and compute; 0: the calibration host's
    seed: int = 1

    def replace(self, **changes: Any) -> Knobs:
        """A copy with ``changes`` applied (names checked: ``TypeError`` on an unknown one)."""
        return dataclasses.replace(self, **changes)

    def as_dict(self) -> dict[str, Any]:
        """The knobs as a plain dict (JSON types)."""
        return dataclasses.asdict(self)


#: One line per knob for ``stacklens forecast --help-knobs`` and the docs.
KNOB_HELP: dict[str, str] = {
    "computes": "compute hosts (nova-compute services)",
    "servers": "servers booted in the storm",
    "concurrency": "client slots (a slot is held from POST until the server is gone)",
    "poll_interval_s": "client polling period, s",
    "delete": "delete each server once ACTIVE",
    "api_workers": "nova-api worker processes",
    "api_threads": "requests one nova-api worker serves at once (sync WSGI worker: 1)",
    "conductor_workers": "nova-conductor worker processes",
    "scheduler_workers": "nova-scheduler worker processes (each keeps its own host view)",
    "max_concurrent_builds": "builds one nova-compute runs at once",
    "host_capacity": "instances one host can take (claims beyond it are rescheduled)",
    "host_subset_size": "scheduler picks at random among the best N hosts",
    "shuffle_best_same_weighed_hosts": "random pick among equally weighed best hosts",
    "view_memory": "scheduler workers remember their own picks until the host's row is "
    "rewritten (nova's HostState.consume_from_request; the 2025.1 lab behaved as false)",
    "max_attempts": "scheduling attempts per boot (1 + reschedules)",
    "scheduler_per_host_s": "scheduler CPU per host considered per request, s",
    "db_pool_size": "DB connections per process (max_pool_size + max_overflow)",
    "db_pool_timeout_s": "wait for a DB connection before QueuePool error, s",
    "db_deadlock_rate": "probability that a quota write hits a deadlock (multi-writer)",
    "db_max_retries": "oslo.db retries of a deadlocked write",
    "db_retry_interval_s": "oslo.db first retry interval, s (doubles, at most 10 s)",
    "build_failure_rate": "probability that a build fails at the compute (rescheduled)",
    "max_slowdown": "cap on the load multiplier of service times beyond calibrated load "
    "(models without a cpu section)",
    "contention": "scale the controller's stage times by the builds in flight against those "
    "their load bin saw in the calibration (models calibrated since format 7; no cpu section)",
    "saturation": "beyond the highest calibrated load, grow the times of the stages no "
    "simulated worker serves (RPC hops, placement's allocation reads) at least in proportion "
    "to the load (a saturated server's asymptote), not only along the line fitted below it "
    "(no cpu section)",
    "cores": "CPU cores shared by the services and computes (processor sharing); 0: the "
    "calibration host's; models without a cpu section ignore it",
    "seed": "random seed",
}


def _coerce(name: str, raw: str, default: Any) -> Any:
    if isinstance(default, bool):
        low = raw.strip().lower()
        if low in ("1", "true", "yes", "on"):
            return True
        if low in ("0", "false", "no", "off"):
            return False
        raise UserError(f"--set {name}={raw}: expected true or false")
    try:
        if isinstance(default, int):
            return int(raw)
        return float(raw)
    except ValueError:
        raise UserError(f"--set {name}={raw}: expected a {type(default).__name__}") from None


def parse_sets(items: list[str], base: Knobs | None = None) -> Knobs:
    """Apply ``name=value`` strings to ``base`` (default :class:`Knobs`). Raises
    :class:`~stacklens.errors.UserError` for an unknown name, a malformed item, or a value of
    the wrong type or out of range (counts >= 1, rates in [0, 1])."""
    k = base or Knobs()
    known = {f.name for f in fields(Knobs)}
    changes: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise UserError(f"--set {item}: expected name=value")
        name, raw = (s.strip() for s in item.split("=", 1))
        name = name.replace("-", "_")
        if name not in known:
            raise UserError(f"--set {name}: unknown knob (known: {', '.join(sorted(known))})")
        changes[name] = _coerce(name, raw, getattr(k, name))
    out = k.replace(**changes)
    check(out)
    return out


def check(k: Knobs) -> None:
    """Raise :class:`~stacklens.errors.UserError` when a knob is out of range."""
    for f in fields(Knobs):
        v = getattr(k, f.name)
        if f.name.endswith("_rate") and not 0.0 <= v <= 1.0:
            raise UserError(f"{f.name}={v}: a rate is in [0, 1]")
        if isinstance(v, int) and not isinstance(v, bool) and f.name != "seed":
            if f.name == "db_max_retries":
                if v < 0:
                    raise UserError(f"{f.name}={v}: must be >= 0")
            elif v < 1:
                raise UserError(f"{f.name}={v}: must be >= 1")
        if isinstance(v, float) and v < 0:
            raise UserError(f"{f.name}={v}: must be >= 0")
