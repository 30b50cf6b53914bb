"""Workload ``boot_servers``: boot servers, wait for ACTIVE (optionally ping/SSH them), delete
them, and record each server's lifecycle (Rally's ``NovaServers.boot_and_delete_server``, one
list call per poll interval instead of one GET per server).

The type's parts: :class:`BootServers` (its config, registered below),
:class:`~stacklens.drive.plan.Plan` (resolved ids and counts),
:class:`~stacklens.drive.driver.Driver` (its lifecycle driver, on the generic
:class:`~stacklens.drive.pacer.Pacer`), :func:`~stacklens.drive.cleanup.cleanup_prefix` and
:mod:`~stacklens.drive.reach`. A scenario::

    workload:
      boot_servers:
        per_compute: 20             # or count: 200
        computes: 10                # default: nova-compute services that are up
        flavor: m1.tiny             # name or id
        image: cirros               # name or id
        network: none               # none, auto, or a network id
        mode: parallel              # or batch: one POST with min_count = max_count
        batch_size: 50              # batch mode: servers per POST (default: all)
        concurrency: 200            # servers in flight at most
        ramp: {shape: burst}        # constant / linear / steps: see stacklens.drive.scenario
        repetitions: 1
        phases:
          active: {timeout_s: 600}
          ping: {enabled: false}
          ssh: {enabled: false}
          delete: {enabled: true, when: each, timeout_s: 300}
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from pydantic import Field, model_validator

from stacklens.drive.cleanup import CleanupResult, cleanup_prefix
from stacklens.drive.client import ComputeClient
from stacklens.drive.clock import Clock
from stacklens.drive.driver import Driver
from stacklens.drive.pacer import DriveStats
from stacklens.drive.plan import Plan, plan_from_scenario
from stacklens.drive.reach import Prober
from stacklens.drive.records import RecordWriter
from stacklens.drive.scenario import ConfigModel, Pacing, Scenario
from stacklens.drive.workload import Workload, register_workload
from stacklens.errors import UserError

__all__ = [
    "ActivePhase",
    "BootServers",
    "BootServersWorkload",
    "DeletePhase",
    "Phases",
    "ReachPhase",
]


class ActivePhase(ConfigModel):
    """create -> ACTIVE: a server still not ACTIVE after ``timeout_s`` is a timeout."""

    timeout_s: float = Field(default=600, gt=0)


class ReachPhase(ConfigModel):
    """Optional reachability check after ACTIVE (ping, or the SSH banner on ``port``); skipped,
    with the reason recorded, when the guest has no address or the tool is missing."""

    enabled: bool = False
    timeout_s: float = Field(default=120, gt=0)
    port: int = Field(default=22, gt=0, lt=65536)


class DeletePhase(ConfigModel):
    """delete -> gone. ``when: each`` deletes a server as soon as it is ACTIVE (Rally's
    boot_and_delete); ``all`` once every server of the repetition is ACTIVE or failed."""

    enabled: bool = True
    when: Literal["each", "all"] = "each"
    timeout_s: float = Field(default=300, gt=0)


class Phases(ConfigModel):
    """The phases each server goes through, in order."""

    active: ActivePhase = ActivePhase()
    ping: ReachPhase = ReachPhase()
    ssh: ReachPhase = ReachPhase()
    delete: DeletePhase = DeletePhase()


class BootServers(Pacing):
    """Workload ``boot_servers``: ``count`` servers, or ``per_compute`` x compute nodes, each
    through the :class:`Phases` (``concurrency`` = servers in flight at most)."""

    count: int | None = Field(default=None, gt=0)
    per_compute: int | None = Field(default=None, gt=0)
    computes: int | None = Field(default=None, gt=0)
    flavor: str
    image: str
    network: str = "none"
    mode: Literal["parallel", "batch"] = "parallel"
    batch_size: int | None = Field(default=None, gt=0)
    phases: Phases = Phases()

    @model_validator(mode="after")
    def _one_count(self) -> BootServers:
        if (self.count is None) == (self.per_compute is None):
            raise ValueError("give exactly one of count and per_compute")
        if self.batch_size is not None and self.mode != "batch":
            raise ValueError("batch_size needs mode: batch")
        return self


@register_workload("boot_servers", config=BootServers)
class BootServersWorkload(Workload):
    """Boot, watch, (reach,) delete: one record per server."""

    durations = ("api_s", "create_s", "delete_s")
    sla_duration = "create_s"  # submit -> ACTIVE seen

    async def plan(self, scn: Scenario, client: ComputeClient, run_id: str,
                   computes: int | None = None) -> Plan:
        """Look up flavor, image, network (and the compute count for ``per_compute``)."""
        b = scn.boot  # == self.config
        flavor = await client.find_flavor(b.flavor)
        image = await client.find_image(b.image)
        network = await client.find_network(b.network)
        n = b.computes or computes
        if b.per_compute is not None and not n:
            n = await client.count_computes()
            if not n:
                raise UserError("per_compute: no nova-compute service is up "
                                "(set workload computes)")
        return plan_from_scenario(scn, run_id, image, flavor, network, n)

    @classmethod
    async def cleanup(cls, client: ComputeClient, prefix: str, timeout_s: float,
                      poll_interval_s: float) -> CleanupResult:
        """Delete the servers named ``prefix``* and wait until they are gone."""
        return await cleanup_prefix(client, prefix, timeout_s, poll_interval_s)

    def driver(self, plan: Any, client: ComputeClient, writer: RecordWriter, *,
               clock: Clock | None = None, prober: Prober | None = None,
               on_tick: Callable[[DriveStats], None] | None = None) -> Driver:
        """The server lifecycle driver of ``plan`` (a :class:`~stacklens.drive.plan.Plan`)."""
        return Driver(plan, client, writer, clock=clock, prober=prober, on_tick=on_tick)
