"""Scenario files: what ``stacklens run`` does, as YAML validated with pydantic.

Errors name the file and the line: the YAML is composed with PyYAML (whose nodes keep their
``start_mark``), every key path is mapped to its line, and each pydantic error location is
looked up in that map (the deepest key that exists; a missing key points at its parent).

A scenario, every key but ``workload.boot_servers.image`` / ``flavor`` and one of ``count`` /
``per_compute`` optional::

    name: boot-storm
    cloud: stacklens-lab            # a clouds.yaml entry (openstacksdk); --cloud overrides
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
        ramp: {shape: burst}        # constant / linear / steps: see RampConstant ...
        repetitions: 1
        phases:
          active: {timeout_s: 600}
          ping: {enabled: false}
          ssh: {enabled: false}
          delete: {enabled: true, when: each, timeout_s: 300}
    client: {poll_interval_s: 2, microversion: "2.37"}
    cleanup: delete                 # keep_errors, keep
    sla: {success_rate: 0.95, p95_s: 120}
    logs: [/var/log/nova]           # local folders to collect after the run
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from stacklens.errors import UserError
from stacklens.yamlfile import load_model

__all__ = [
    "ActivePhase",
    "BootServers",
    "ClientSettings",
    "DeletePhase",
    "Phases",
    "RampBurst",
    "RampConstant",
    "RampLinear",
    "RampStep",
    "RampSteps",
    "ReachPhase",
    "Scenario",
    "ScenarioError",
    "Sla",
    "Workload",
    "load_scenario",
    "parse_scenario",
    "scenario_dict",
]


class ScenarioError(UserError):
    """A scenario file cannot be used; the message names the file and line. Exit code 1."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RampBurst(_Model):
    """Issue as fast as ``concurrency`` allows."""

    shape: Literal["burst"] = "burst"


class RampConstant(_Model):
    """A constant rate of server creations per second."""

    shape: Literal["constant"]
    rate_per_s: float = Field(gt=0)


class RampLinear(_Model):
    """Rate rising (or falling) linearly from ``start_rate_per_s`` to ``end_rate_per_s`` over
    ``duration_s``, then staying at the end rate."""

    shape: Literal["linear"]
    start_rate_per_s: float = Field(ge=0)
    end_rate_per_s: float = Field(gt=0)
    duration_s: float = Field(gt=0)


class RampStep(_Model):
    """One step of a stepped ramp."""

    rate_per_s: float = Field(gt=0)
    duration_s: float = Field(gt=0)


class RampSteps(_Model):
    """Piecewise-constant rates; the last step's rate continues after the last step."""

    shape: Literal["steps"]
    steps: list[RampStep] = Field(min_length=1)


Ramp = Annotated[RampBurst | RampConstant | RampLinear | RampSteps, Field(discriminator="shape")]


class ActivePhase(_Model):
    """create -> ACTIVE: a server still not ACTIVE after ``timeout_s`` is a timeout."""

    timeout_s: float = Field(600, gt=0)


class ReachPhase(_Model):
    """Optional reachability check after ACTIVE (ping, or the SSH banner on ``port``); skipped,
    with the reason recorded, when the guest has no address or the tool is missing."""

    enabled: bool = False
    timeout_s: float = Field(120, gt=0)
    port: int = Field(22, gt=0, lt=65536)


class DeletePhase(_Model):
    """delete -> gone. ``when: each`` deletes a server as soon as it is ACTIVE (Rally's
    boot_and_delete); ``all`` once every server of the repetition is ACTIVE or failed."""

    enabled: bool = True
    when: Literal["each", "all"] = "each"
    timeout_s: float = Field(300, gt=0)


class Phases(_Model):
    """The phases each server goes through, in order."""

    active: ActivePhase = ActivePhase()
    ping: ReachPhase = ReachPhase()
    ssh: ReachPhase = ReachPhase()
    delete: DeletePhase = DeletePhase()


class BootServers(_Model):
    """Workload ``boot_servers``: ``count`` servers, or ``per_compute`` x compute nodes."""

    count: int | None = Field(None, gt=0)
    per_compute: int | None = Field(None, gt=0)
    computes: int | None = Field(None, gt=0)
    flavor: str
    image: str
    network: str = "none"
    mode: Literal["parallel", "batch"] = "parallel"
    batch_size: int | None = Field(None, gt=0)
    concurrency: int = Field(100, gt=0)
    ramp: Ramp = RampBurst()
    repetitions: int = Field(1, gt=0)
    phases: Phases = Phases()

    @model_validator(mode="after")
    def _one_count(self) -> BootServers:
        if (self.count is None) == (self.per_compute is None):
            raise ValueError("give exactly one of count and per_compute")
        if self.batch_size is not None and self.mode != "batch":
            raise ValueError("batch_size needs mode: batch")
        return self


class Workload(_Model):
    """The one workload of a scenario (``boot_servers`` for now)."""

    boot_servers: BootServers


class ClientSettings(_Model):
    """How the driver talks to the compute API."""

    poll_interval_s: float = Field(2.0, gt=0)
    request_timeout_s: float = Field(120.0, gt=0)
    max_connections: int = Field(100, gt=0)
    microversion: str = "2.37"
    endpoint: str | None = None  # compute endpoint, for clouds without a catalog (noauth2)

    @field_validator("microversion")
    @classmethod
    def _microversion(cls, v: str) -> str:
        m = re.fullmatch(r"2\.(\d+)", v)
        if not m or int(m.group(1)) < 37:
            raise ValueError("must be 2.N with N >= 37 (networks: none needs 2.37)")
        return v


class Sla(_Model):
    """Pass criteria: exit code 3 when one fails."""

    success_rate: float | None = Field(None, ge=0, le=1)  # share of servers with outcome ok
    p95_s: float | None = Field(None, gt=0)  # 95th percentile of create_s (submit -> ACTIVE)


class Scenario(_Model):
    """A whole scenario file."""

    name: str = "scenario"
    cloud: str | None = None
    workload: Workload
    client: ClientSettings = ClientSettings()
    cleanup: Literal["delete", "keep_errors", "keep"] = "delete"
    sla: Sla = Sla()
    logs: list[str] = []

    @property
    def boot(self) -> BootServers:
        """The ``boot_servers`` workload."""
        return self.workload.boot_servers


# --- line numbers --------------------------------------------------------------------------


def parse_scenario(text: str, source: str = "<scenario>") -> Scenario:
    """Validate scenario YAML ``text``; raise :class:`ScenarioError` naming ``source:line``."""
    return load_model(text, source, Scenario, ScenarioError,
                      "a scenario is a YAML mapping (name, cloud, workload...)", skip=_TAGS)


_TAGS = {"burst", "constant", "linear", "steps"}


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario file. Raises :class:`ScenarioError` (with file and line)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ScenarioError(f"{p}: no such scenario file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ScenarioError(f"{p}: cannot read: {e}") from None
    return parse_scenario(text, str(p))


def scenario_dict(s: Scenario) -> dict[str, Any]:
    """The scenario as plain data (for the run manifest)."""
    return s.model_dump(mode="json")
