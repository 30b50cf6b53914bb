"""The workload registry: each load scenario type registers a name, a config schema and how to
plan and drive it (rally's ``@scenario.configure(name=...)`` with its ``CONFIG_SCHEMA`` is the
model). A scenario's ``workload:`` section names exactly one registered type; the scenario
parser validates that section with the type's schema (errors at the YAML line, see
:func:`stacklens.drive.scenario.scenario_model`) and :func:`stacklens.drive.session.run_scenario`
dispatches through :func:`get_workload`.

Registration is explicit: a module decorates its class with :func:`register_workload`; the
built-in modules are named in :data:`BUILTIN_MODULES` and imported on first use (no directory
scanning). A second registration under a taken name raises :class:`DuplicateWorkload`.

Adding a workload type = one module (a :class:`Workload` subclass, its pydantic config, its
plan and its driver, usually a :class:`~stacklens.drive.steps.StepDriver` step) plus its test,
and its module name in :data:`BUILTIN_MODULES` when it ships.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar

from pydantic import BaseModel

from stacklens.errors import UserError

if TYPE_CHECKING:
    from stacklens.drive.cleanup import CleanupResult
    from stacklens.drive.client import ComputeClient
    from stacklens.drive.clock import Clock
    from stacklens.drive.pacer import DriveStats, DriveSummary
    from stacklens.drive.reach import Prober
    from stacklens.drive.records import RecordWriter, RequestRecord
    from stacklens.drive.scenario import Scenario

__all__ = [
    "BUILTIN_MODULES",
    "DuplicateWorkload",
    "RunPlan",
    "Runner",
    "Workload",
    "get_workload",
    "register_workload",
    "workload_types",
]

#: Modules that register the shipped workload types, imported on first use of the registry.
BUILTIN_MODULES: tuple[str, ...] = ("stacklens.drive.boot_servers",
                                    "stacklens.drive.create_ports",
                                    "stacklens.drive.mixed")


class DuplicateWorkload(ValueError):
    """A workload name registered twice (a programming error, not a user error)."""


class RunPlan(Protocol):
    """What the session and the CLI read of any workload's resolved plan."""

    @property
    def run_id(self) -> str: ...  # 8 hex digits

    @property
    def prefix(self) -> str: ...  # name prefix of everything the run creates: sl-<runid>-

    @property
    def total(self) -> int: ...  # steps (servers, calls) per repetition

    @property
    def repetitions(self) -> int: ...

    @property
    def scenario(self) -> str: ...  # the scenario's name

    def describe(self) -> dict[str, Any]:
        """The plan as plain data for the manifest's ``run.plan``."""
        ...


class Runner(Protocol):
    """A driver of one plan: :meth:`run` drives it to the end (see :mod:`stacklens.drive.pacer`
    for the summary), :meth:`stop` stops issuing and cleans up."""

    async def run(self) -> DriveSummary:
        """Drive the whole plan; failures are records, never exceptions."""
        ...

    def stop(self) -> None:
        """Stop issuing; what the first Ctrl-C does."""
        ...


class Workload(ABC):
    """One workload type; an instance holds one scenario's validated ``config``.

    Class attributes set by :func:`register_workload`: ``name`` and ``config_schema``.
    ``durations`` names the :class:`~stacklens.drive.records.RequestRecord` duration properties
    (seconds) the summary reports; ``sla_duration`` the one the SLA's ``p95_s`` limits.
    """

    name: ClassVar[str] = ""
    config_schema: ClassVar[type[BaseModel]]
    durations: ClassVar[tuple[str, ...]] = ("api_s",)
    sla_duration: ClassVar[str] = "api_s"

    def __init__(self, config: BaseModel):
        self.config = config

    @abstractmethod
    async def plan(self, scn: Scenario, client: ComputeClient, run_id: str,
                   computes: int | None = None) -> RunPlan:
        """Resolve names to ids with ``client`` (raises UserError when one is unknown)."""

    @classmethod
    async def cleanup(cls, client: ComputeClient, prefix: str, timeout_s: float,
                      poll_interval_s: float) -> CleanupResult:
        """Delete what a run of this type left, found by its name ``prefix`` (``stacklens
        cleanup RUN``). Default: nothing to delete (a workload that creates nothing)."""
        from stacklens.drive.cleanup import CleanupResult

        return CleanupResult(0, 0, [], [])

    @abstractmethod
    def driver(self, plan: Any, client: ComputeClient, writer: RecordWriter, *,
               clock: Clock | None = None, prober: Prober | None = None,
               on_tick: Callable[[DriveStats], None] | None = None) -> Runner:
        """The runner of ``plan`` (as :meth:`plan` returned it), writing to ``writer``."""

    def sla_value(self, rec: RequestRecord) -> float | None:
        """Seconds the SLA's ``p95_s`` limits for ``rec``: its ``sla_duration`` property
        (``mixed`` takes it from the record's part)."""
        value: float | None = getattr(rec, self.sla_duration)
        return value

    def groups(self, records: list[RequestRecord]
               ) -> dict[str, tuple[list[RequestRecord], tuple[str, ...]]]:
        """Records per part (label -> (records, durations)) for a workload made of parts,
        summarized per part in the manifest; ``{}`` (the default) for the others."""
        return {}


_REGISTRY: dict[str, type[Workload]] = {}
_loaded = False

W = TypeVar("W", bound=type[Workload])


def register_workload(name: str, config: type[BaseModel]) -> Callable[[W], W]:
    """Class decorator: register a :class:`Workload` subclass under ``name`` (the key under
    ``workload:`` in a scenario) with its pydantic ``config`` schema. Raises
    :class:`DuplicateWorkload` when ``name`` is taken."""

    def deco(cls: W) -> W:
        if name in _REGISTRY:
            raise DuplicateWorkload(f"workload '{name}' is already registered "
                                    f"({_REGISTRY[name].__module__}.{_REGISTRY[name].__name__})")
        cls.name, cls.config_schema = name, config
        _REGISTRY[name] = cls
        return cls

    return deco


def _load_builtins() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        for mod in BUILTIN_MODULES:
            importlib.import_module(mod)


def workload_types() -> dict[str, type[Workload]]:
    """Every registered workload type by name (sorted), the built-ins included."""
    _load_builtins()
    return dict(sorted(_REGISTRY.items()))


def get_workload(name: str) -> type[Workload]:
    """The workload type registered as ``name``; UserError naming the known ones otherwise."""
    types = workload_types()
    if name not in types:
        raise UserError(f"unknown workload '{name}' (known: {', '.join(types)})")
    return types[name]
