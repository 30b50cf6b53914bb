"""Scenario files: what ``stacklens run`` does, as YAML validated with pydantic.

Errors name the file and the line: the YAML is composed with PyYAML (whose nodes keep their
``start_mark``), every key path is mapped to its line, and each pydantic error location is
looked up in that map (the deepest key that exists; a missing key points at its parent).

The ``workload:`` section names exactly one registered workload type
(:mod:`stacklens.drive.workload`) and is validated with that type's config schema
(:func:`scenario_model`); ``boot_servers`` is described in :mod:`stacklens.drive.boot_servers`.
Every workload but ``mixed`` has the :class:`Pacing` keys (``concurrency``, ``ramp``,
``repetitions``); ``mixed`` (:mod:`stacklens.drive.mixed`) has parts, each with its own.

A scenario's top level (the ``workload:`` body of ``boot_servers``, with every key, is in
:mod:`stacklens.drive.boot_servers`)::

    name: boot-storm
    cloud: stacklens-lab            # a clouds.yaml entry (openstacksdk); --cloud overrides
    workload:
      boot_servers: {per_compute: 20, flavor: m1.tiny, image: cirros, concurrency: 200}
    client: {poll_interval_s: 2, microversion: "2.37"}
    cleanup: delete                 # keep_errors, keep
    sla: {success_rate: 0.95, p95_s: 120}   # ok/all records; p95 of create_s (see Sla)
    logs: [/var/log/nova]           # local folders to collect after the run
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    create_model,
    field_validator,
    model_validator,
)

from stacklens.errors import UserError
from stacklens.yamlfile import load_model

if TYPE_CHECKING:
    from stacklens.drive.boot_servers import BootServers

__all__ = [
    "ClientSettings",
    "ConfigModel",
    "Pacing",
    "Ramp",
    "RampBurst",
    "RampConstant",
    "RampLinear",
    "RampStep",
    "RampSteps",
    "Scenario",
    "ScenarioError",
    "Sla",
    "WorkloadSection",
    "load_scenario",
    "parse_scenario",
    "scenario_dict",
    "scenario_model",
]


class ScenarioError(UserError):
    """A scenario file cannot be used; the message names the file and line. Exit code 1."""


class ConfigModel(BaseModel):
    """Base of every scenario model: unknown keys are errors, values are frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)


_Model = ConfigModel


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


class Pacing(_Model):
    """The pacing every workload shares: how many steps at once, at what rate, how often."""

    concurrency: int = Field(default=100, gt=0)  # steps (servers, calls) in flight at most
    ramp: Ramp = RampBurst()
    repetitions: int = Field(default=1, gt=0)


class WorkloadSection(_Model):
    """The ``workload:`` mapping: one registered workload type (see
    :mod:`stacklens.drive.workload`) and its config. :func:`scenario_model` gives it one
    optional field per registered type."""

    @model_validator(mode="after")
    def _exactly_one(self) -> WorkloadSection:
        given = [k for k in type(self).model_fields if getattr(self, k) is not None]
        if len(given) != 1:
            known = ", ".join(type(self).model_fields) or "(none registered)"
            raise ValueError(f"give exactly one workload of: {known}")
        return self

    def chosen(self) -> tuple[str, BaseModel]:
        """``(name, config)`` of the workload the scenario gives."""
        for k in type(self).model_fields:
            v = getattr(self, k)
            if v is not None:
                return k, v
        raise ValueError("scenario without a workload")


class ClientSettings(_Model):
    """How the driver talks to the compute API."""

    poll_interval_s: float = Field(default=2.0, gt=0)
    request_timeout_s: float = Field(default=120.0, gt=0)
    max_connections: int = Field(default=100, gt=0)
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
    """Pass criteria: exit code 3 when one fails (see :mod:`stacklens.drive.sla`).

    ``success_rate``: minimum share of the run's records whose client-side outcome is ``ok``
    (ok / all records; failed, cancelled, pending count against). Not the report's success
    rate, which is over server-side traces and leaves out rejected and unknown ones.
    ``p95_s``: maximum 95th percentile (linear interpolation) of the workload's main duration
    over records ok, in seconds (``boot_servers``: ``create_s``, submit -> ACTIVE seen)."""

    success_rate: float | None = Field(default=None, ge=0, le=1)  # ok / all records, 0..1
    p95_s: float | None = Field(default=None, gt=0)


class Scenario(_Model):
    """A whole scenario file. Validate one with :func:`parse_scenario` (or
    :func:`scenario_model`), which knows the registered workload types."""

    name: str = "scenario"
    cloud: str | None = None
    workload: WorkloadSection
    client: ClientSettings = ClientSettings()
    cleanup: Literal["delete", "keep_errors", "keep"] = "delete"
    sla: Sla = Sla()
    logs: list[str] = []

    @property
    def boot(self) -> BootServers:
        """The ``boot_servers`` workload's config (shorthand; ValueError for another type)."""
        name, cfg = self.workload.chosen()
        if name != "boot_servers":
            raise ValueError(f"scenario {self.name!r} has workload {name!r}, not boot_servers")
        return cfg  # type: ignore[return-value]


_MODELS: dict[tuple[str, ...], type[Scenario]] = {}


def scenario_model() -> type[Scenario]:
    """The :class:`Scenario` model whose ``workload`` section has one optional field per
    registered workload type, validated with that type's config schema (so errors keep their
    ``workload.<type>.<key>`` location and YAML line). Cached per set of registered names."""
    from stacklens.drive.workload import workload_types

    types = workload_types()
    key = tuple(types)
    if key not in _MODELS:
        fields: dict[str, Any] = {n: (t.config_schema | None, None) for n, t in types.items()}
        section = create_model("Workload", __base__=WorkloadSection, **fields)
        _MODELS[key] = create_model("Scenario", __base__=Scenario,
                                    workload=(section, ...))
    return _MODELS[key]


# --- line numbers --------------------------------------------------------------------------


def parse_scenario(text: str, source: str = "<scenario>") -> Scenario:
    """Validate scenario YAML ``text``; raise :class:`ScenarioError` naming ``source:line``."""
    return load_model(text, source, scenario_model(), ScenarioError,
                      "a scenario is a YAML mapping (name, cloud, workload...)", skip=_TAGS)


_TAGS = frozenset({"burst", "constant", "linear", "steps"})  # ramp union tags


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
    """The scenario as plain data (for the run manifest); ``workload`` holds only the type
    the scenario gives: ``{name: config}``."""
    d = s.model_dump(mode="json")
    d["workload"] = {k: v for k, v in d["workload"].items() if v is not None}
    return d
