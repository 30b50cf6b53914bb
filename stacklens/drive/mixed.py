"""Workload ``mixed``: several registered workloads driven at once in one run (issue 13: mixed
API load, several operations at the same time, as in the railway study). A scenario::

    workload:
      mixed:
        start: together             # or staggered: part i starts i * offset_s after part 0
        offset_s: 0                 # staggered: seconds between part starts (> 0)
        parts:
          - boot_servers: {count: 8, flavor: m1.tiny, image: cirros, network: net1}
          - create_ports: {count: 40, concurrency: 40, binding: agents}

Each part is one ``{type: config}`` mapping validated with that type's own schema (errors keep
their location: ``workload.mixed.parts.1.create_ports.count`` at its YAML line); a part cannot
be ``mixed`` (no nesting). Each part plans as the scenario with only that part (scenario name
``<name>/<label>``, label = the type, ``<type>#<k>`` when a type is given twice) and with run
id ``<runid>-p<i>``, so its resources are named ``sl-<runid>-p<i>-...``: every name still
starts with the run's prefix ``sl-<runid>-`` (``stacklens cleanup`` finds them) and no part
sees another's servers as its own.

The parts' drivers run concurrently and share the run's :class:`RecordWriter`; their records
keep the run's ``run_id`` and say their part in ``scenario`` (``<name>/<label>``). The summary
merges the parts' (records concatenated, counters summed: ``peak_in_flight`` is the sum of
the parts' peaks, an upper bound); the SLA's ``p95_s`` takes each record's duration from its
part's type (``sla_duration``); :meth:`MixedWorkload.groups` gives the manifest a summary per
part. :meth:`MixedRunner.stop` (and cancelling :meth:`MixedRunner.run`) stops every part.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import (
    Field,
    SerializeAsAny,
    TypeAdapter,
    create_model,
    field_serializer,
    field_validator,
    model_validator,
)

from stacklens.drive.cleanup import CleanupResult
from stacklens.drive.client import ComputeClient
from stacklens.drive.clock import Clock
from stacklens.drive.pacer import DriveStats, DriveSummary, wait_at_most
from stacklens.drive.plan import run_prefix
from stacklens.drive.reach import Prober
from stacklens.drive.records import RecordWriter, RequestRecord
from stacklens.drive.scenario import ConfigModel, Scenario, WorkloadSection
from stacklens.drive.workload import Runner, RunPlan, Workload, register_workload, workload_types
from stacklens.errors import UserError

__all__ = ["Mixed", "MixedPlan", "MixedRunner", "MixedWorkload", "part_labels"]

_PART_MODELS: dict[tuple[str, ...], Any] = {}


def _no_nesting(cls: Any, data: Any) -> Any:
    if isinstance(data, dict) and "mixed" in data:
        raise ValueError("a part cannot be mixed (no nesting)")
    return data


def _part_adapter() -> Any:
    """``TypeAdapter(list[Part])``: Part has one optional field per registered type but
    ``mixed``, validated with that type's schema (cached per set of registered names)."""
    types = {n: t for n, t in workload_types().items() if n != "mixed"}
    key = tuple(types)
    if key not in _PART_MODELS:
        fields: dict[str, Any] = {n: (t.config_schema | None, None) for n, t in types.items()}
        nest: dict[str, Any] = {"_nest": model_validator(mode="before")(_no_nesting)}
        part = create_model("Part", __base__=WorkloadSection, __validators__=nest, **fields)
        _PART_MODELS[key] = TypeAdapter(list[part])
    return _PART_MODELS[key]


class Mixed(ConfigModel):
    """Workload ``mixed``: ``parts`` (each ``{type: config}``) driven at once."""

    parts: list[SerializeAsAny[WorkloadSection]] = Field(min_length=1)
    start: Literal["together", "staggered"] = "together"
    offset_s: float = Field(default=0.0, ge=0, le=3600)  # staggered: between part starts

    @field_validator("parts", mode="before")
    @classmethod
    def _parts(cls, v: Any) -> Any:
        return _part_adapter().validate_python(v)

    @model_validator(mode="after")
    def _offsets(self) -> Mixed:
        if (self.start == "staggered") != (self.offset_s > 0):
            raise ValueError("offset_s > 0 goes with start: staggered (and only with it)")
        return self

    @field_serializer("parts")
    def _dump(self, parts: list[WorkloadSection], info: Any) -> list[dict[str, Any]]:
        return [{n: c.model_dump(mode=info.mode)} for n, c in (p.chosen() for p in parts)]


def part_labels(names: list[str]) -> list[str]:
    """Each part's label: its type, or ``<type>#<k>`` (k from 1) when the type repeats."""
    return [n if names.count(n) == 1 else f"{n}#{names[:i + 1].count(n)}"
            for i, n in enumerate(names)]


@dataclass(frozen=True)
class MixedPlan:
    """The parts' plans, each with its label, workload and start offset (seconds)."""

    run_id: str
    scenario: str
    labels: tuple[str, ...]
    workloads: tuple[Workload, ...]
    plans: tuple[RunPlan, ...]
    offsets_s: tuple[float, ...]
    start: str = "together"

    @property
    def prefix(self) -> str:
        """``sl-<runid>-``; part i's resources are ``sl-<runid>-p<i>-...``."""
        return run_prefix(self.run_id)

    @property
    def total(self) -> int:
        """Steps of every part, all repetitions (a mixed run is one repetition)."""
        return sum(p.total * p.repetitions for p in self.plans)

    @property
    def repetitions(self) -> int:
        """1: each part repeats on its own (see its plan)."""
        return 1

    def describe(self) -> dict[str, Any]:
        """The plan as plain data: totals, and each part's own plan with label and offset."""
        return {"run_id": self.run_id, "prefix": self.prefix, "scenario": self.scenario,
                "total": self.total, "repetitions": 1, "start": self.start,
                "parts": [{"label": lb, "type": w.name, "offset_s": off, **p.describe()}
                          for lb, w, p, off in zip(self.labels, self.workloads, self.plans,
                                                   self.offsets_s, strict=True)]}


class _PartWriter:
    """A part's view of the shared writer: records get the run's ``run_id`` back."""

    def __init__(self, writer: RecordWriter, run_id: str):
        self.writer, self.run_id = writer, run_id

    def write(self, rec: RequestRecord) -> None:
        self.writer.write(rec.evolve(run_id=self.run_id))

    def sync(self) -> None:
        self.writer.sync()


def _merge_stats(stats: list[DriveStats]) -> DriveStats:
    return DriveStats(**{f.name: sum(getattr(s, f.name) for s in stats)
                         for f in dataclasses.fields(DriveStats)})


class MixedRunner:
    """Runs every part's runner concurrently (part i after ``offsets_s[i]``) and merges their
    summaries. ``shared_calls``: the shared client's call counter, counted once (every part's
    summary holds it whole; keys only a part has, ``neutron.*``, are summed)."""

    def __init__(self, plan: MixedPlan, runners: list[Runner], shared_calls: dict[str, int],
                 on_tick: Callable[[DriveStats], None] | None = None):
        self.plan, self.runners, self.shared_calls = plan, runners, shared_calls
        self.on_tick = on_tick
        self.last: list[DriveStats] = [DriveStats(total=p.total * p.repetitions)
                                       for p in plan.plans]
        self._stop = asyncio.Event()
        self._started: set[int] = set()  # parts whose runner runs

    def tick(self, i: int) -> Callable[[DriveStats], None]:
        """The ``on_tick`` of part ``i``: keeps its counters, reports the sum."""
        def f(st: DriveStats) -> None:
            self.last[i] = st
            if self.on_tick:
                self.on_tick(_merge_stats(self.last))
        return f

    def stop(self) -> None:
        """Stop issuing in every part (parts not started yet never start)."""
        self._stop.set()
        for r in self.runners:
            r.stop()

    async def _part(self, i: int) -> DriveSummary:
        if self.plan.offsets_s[i]:
            await wait_at_most(self._stop.wait(), self.plan.offsets_s[i])
        if self._stop.is_set():  # stopped before it started: it stops at once
            self.runners[i].stop()
        self._started.add(i)
        return await self.runners[i].run()

    async def run(self) -> DriveSummary:
        """Every part to its end; a cancel (first Ctrl-C) is passed to every part, which stops
        issuing and cleans up; a second one while they do ends the run at once."""
        tasks = [asyncio.create_task(self._part(i)) for i in range(len(self.runners))]
        try:
            await asyncio.wait(tasks)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            self._stop.set()  # parts waiting for their start return at once, empty
            for i, t in enumerate(tasks):
                if i in self._started:  # a driver's own interrupt handling
                    t.cancel()
            try:
                await asyncio.wait(tasks)
            except asyncio.CancelledError:
                for t in tasks:
                    t.cancel()
                raise
        return self._merge([t.result() for t in tasks])

    def _merge(self, sums: list[DriveSummary]) -> DriveSummary:
        calls = dict(self.shared_calls)
        errors: list[str] = []
        for lb, s in zip(self.plan.labels, sums, strict=True):
            for k, v in s.calls.items():
                if k not in self.shared_calls:
                    calls[k] = calls.get(k, 0) + v
            errors += [f"{lb}: {e}" for e in s.errors]
        return DriveSummary(
            [r.evolve(run_id=self.plan.run_id) for s in sums for r in s.records],
            _merge_stats([s.stats for s in sums]), any(s.interrupted for s in sums),
            min(s.started_ns for s in sums), max(s.ended_ns for s in sums),
            [x for s in sums for x in s.leftovers], dict(sorted(calls.items())), errors)


@register_workload("mixed", config=Mixed)
class MixedWorkload(Workload):
    """Several workloads at once: one record per part's step, in one run."""

    durations = ("api_s", "create_s", "delete_s")  # the built-in parts' together

    def __init__(self, config: Mixed):
        super().__init__(config)
        chosen = [p.chosen() for p in config.parts]
        self.labels = part_labels([n for n, _ in chosen])
        types = workload_types()
        self.parts = [types[n](cfg) for n, cfg in chosen]
        self._by_label = dict(zip(self.labels, self.parts, strict=True))

    async def plan(self, scn: Scenario, client: ComputeClient, run_id: str,
                   computes: int | None = None) -> MixedPlan:
        """Plan every part as the scenario with only that part (UserError names the part)."""
        cfg: Mixed = self.config  # type: ignore[assignment]
        plans = []
        for i, (lb, wl, part) in enumerate(zip(self.labels, self.parts, cfg.parts, strict=True)):
            sub = scn.model_copy(update={"name": f"{scn.name}/{lb}", "workload": part})
            try:
                plans.append(await wl.plan(sub, client, f"{run_id}-p{i}", computes))
            except UserError as e:
                raise UserError(f"mixed part {i} ({lb}): {e}") from None
        step = cfg.offset_s if cfg.start == "staggered" else 0.0
        return MixedPlan(run_id, scn.name, tuple(self.labels), tuple(self.parts), tuple(plans),
                         tuple(i * step for i in range(len(plans))), cfg.start)

    @classmethod
    async def cleanup(cls, client: ComputeClient, prefix: str, timeout_s: float,
                      poll_interval_s: float) -> CleanupResult:
        """Every other registered type's cleanup by ``prefix`` (what the parts were is not
        known here); a type that cannot reach its service (UserError) is an error line."""
        found = deleted = 0
        remaining: list[str] = []
        errors: list[str] = []
        for name, t in workload_types().items():
            if t is cls:
                continue
            try:
                r = await t.cleanup(client, prefix, timeout_s, poll_interval_s)
            except UserError as e:
                errors.append(f"{name}: not cleaned: {e}")
                continue
            found, deleted = found + r.found, deleted + r.deleted
            remaining += r.remaining
            errors += [f"{name}: {e}" for e in r.errors]
        return CleanupResult(found, deleted, remaining, errors)

    def driver(self, plan: Any, client: ComputeClient, writer: RecordWriter, *,
               clock: Clock | None = None, prober: Prober | None = None,
               on_tick: Callable[[DriveStats], None] | None = None) -> MixedRunner:
        """Each part's driver on the shared client and writer (a :class:`MixedPlan`)."""
        runners: list[Runner] = []
        mixed = MixedRunner(plan, runners, client.calls, on_tick)
        for i, (wl, p) in enumerate(zip(plan.workloads, plan.plans, strict=True)):
            w: Any = _PartWriter(writer, plan.run_id)  # duck-types RecordWriter (write, sync)
            runners.append(wl.driver(p, client, w, clock=clock, prober=prober,
                                     on_tick=mixed.tick(i)))
        return mixed

    def sla_value(self, rec: RequestRecord) -> float | None:
        """The ``sla_duration`` of the record's part (from ``scenario``: ``<name>/<label>``)."""
        wl = self._by_label.get((rec.scenario or "").rsplit("/", 1)[-1])
        return getattr(rec, wl.sla_duration) if wl else None

    def groups(self, records: list[RequestRecord]
               ) -> dict[str, tuple[list[RequestRecord], tuple[str, ...]]]:
        """Records per part label, with the part type's durations."""
        return {lb: ([r for r in records if (r.scenario or "").rsplit("/", 1)[-1] == lb],
                     wl.durations) for lb, wl in self._by_label.items()}
