"""A ``boot_servers`` run's plan: the scenario resolved to ids and counts, and the run's name
prefix (:func:`new_run_id` and :func:`run_prefix` serve every workload).

The driver takes a :class:`Plan`, never the YAML: everything it needs is here, with no look-ups
left to do. Servers of a run are named ``sl-<runid>-...`` so that :func:`run_prefix` finds them
(and ``stacklens cleanup`` deletes them) by name alone.
"""

from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass, field
from typing import Any

from stacklens.drive.scenario import Scenario
from stacklens.drive.shape import Burst, Shape, make_shape

__all__ = ["Plan", "new_run_id", "plan_from_scenario", "run_prefix"]


def new_run_id() -> str:
    """A short random run tag (8 hex digits)."""
    return uuid.uuid4().hex[:8]


def run_prefix(run_id: str) -> str:
    """The name prefix of a run's servers: ``sl-<runid>-``."""
    return f"sl-{run_id}-"


@dataclass(frozen=True)
class Plan:
    """Everything the driver needs, resolved (ids, counts): no YAML, no look-ups."""

    run_id: str
    total: int  # servers per repetition
    image_ref: str
    flavor_ref: str
    network: str = "none"
    scenario: str = "scenario"
    repetitions: int = 1
    concurrency: int = 100
    batch_size: int = 1  # servers per POST (1: parallel mode)
    shape: Shape = field(default_factory=Burst)
    poll_interval_s: float = 2.0
    overlap_s: float = 2.0  # changes-since looks this far behind the last list's Date
    active_timeout_s: float = 600.0
    delete: bool = True
    delete_when: str = "each"
    delete_timeout_s: float = 300.0
    ping: bool = False
    ssh: bool = False
    ssh_port: int = 22
    reach_timeout_s: float = 120.0
    cleanup: str = "delete"

    @property
    def prefix(self) -> str:
        """``sl-<runid>-``."""
        return run_prefix(self.run_id)

    def describe(self) -> dict[str, Any]:
        """The plan as plain data (the manifest's ``run.plan``): its fields, the shape's repr
        and the prefix."""
        d = dataclasses.asdict(self)
        d["shape"] = repr(self.shape)
        d["prefix"] = self.prefix
        return d


def plan_from_scenario(scn: Scenario, run_id: str, image_ref: str, flavor_ref: str,
                       network: str, computes: int | None = None) -> Plan:
    """The plan of scenario ``scn`` with resolved ids; ``computes`` for ``per_compute``."""
    b = scn.boot
    if b.count is not None:
        total = b.count
    else:
        n = b.computes or computes
        if not n:
            raise ValueError("per_compute needs the number of computes")
        assert b.per_compute is not None  # the config holds exactly one of count, per_compute
        total = b.per_compute * n
    ph = b.phases
    return Plan(
        run_id=run_id, total=total, image_ref=image_ref, flavor_ref=flavor_ref, network=network,
        scenario=scn.name, repetitions=b.repetitions, concurrency=b.concurrency,
        batch_size=(b.batch_size or total) if b.mode == "batch" else 1,
        shape=make_shape(b.ramp), poll_interval_s=scn.client.poll_interval_s,
        active_timeout_s=ph.active.timeout_s, delete=ph.delete.enabled,
        delete_when=ph.delete.when, delete_timeout_s=ph.delete.timeout_s,
        ping=ph.ping.enabled, ssh=ph.ssh.enabled, ssh_port=ph.ssh.port,
        reach_timeout_s=max(ph.ping.timeout_s if ph.ping.enabled else 0,
                            ph.ssh.timeout_s if ph.ssh.enabled else 0) or 120.0,
        cleanup=scn.cleanup,
    )
