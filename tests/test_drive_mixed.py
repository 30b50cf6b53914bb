"""Workload ``mixed`` (issue 13): several registered workloads in one run, against the fake
compute API on a virtual-time loop (a boot storm beside a one-call-per-step workload registered
here, in this test only). The lab run is tests/test_lab_mixed.py."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from doubles.fake_nova import FakeNova
from pydantic import Field

from stacklens.drive.client import ApiResult, ComputeClient, Connection
from stacklens.drive.clock import LoopClock, run_virtual
from stacklens.drive.mixed import MixedPlan, MixedWorkload, part_labels
from stacklens.drive.records import RecordWriter, RequestRecord, read_records
from stacklens.drive.scenario import (
    Pacing,
    Scenario,
    ScenarioError,
    load_scenario,
    parse_scenario,
    scenario_dict,
)
from stacklens.drive.session import run_scenario
from stacklens.drive.shape import make_shape
from stacklens.drive.steps import StepDriver, StepPlan
from stacklens.drive.workload import BUILTIN_MODULES, Workload, register_workload

REPO = Path(__file__).resolve().parents[1]


class Flavors(Pacing):
    """Test workload ``test_mixed_flavors``: ``count`` calls of ``GET /flavors/detail``."""

    count: int = Field(gt=0)


@register_workload("test_mixed_flavors", config=Flavors)
class FlavorsWorkload(Workload):
    async def plan(self, scn: Scenario, client: ComputeClient, run_id: str,
                   computes: int | None = None) -> StepPlan:
        c = self.config
        assert isinstance(c, Flavors)
        return StepPlan(run_id, c.count, scn.name, c.repetitions, c.concurrency,
                        make_shape(c.ramp))

    def driver(self, plan: Any, client: ComputeClient, writer: RecordWriter, *,
               clock=None, prober=None, on_tick=None) -> StepDriver:
        async def step(cl: ComputeClient, rec: RequestRecord) -> ApiResult:
            await asyncio.sleep(0.5)
            return await cl.call("flavors", "GET", "flavors/detail")

        return StepDriver(plan, client, writer, step, clock=clock, on_tick=on_tick)


SCENARIO = """\
name: mix
workload:
  mixed:
    parts:
      - boot_servers:
          count: 4
          flavor: m1.tiny
          image: cirros
          concurrency: 4
      - test_mixed_flavors:
          count: 6
          concurrency: 2
sla: {success_rate: 0.9, p95_s: 5}
"""


def run(tmp_path: Path, text: str, cancel_after_s: float | None = None):
    scn = parse_scenario(text)

    async def go():
        clock = LoopClock()
        nova = FakeNova(now=lambda: clock.now_ns() / 1e9, polls_to_active=3)
        task = asyncio.create_task(run_scenario(
            scn, Connection("http://nova.test/v2.1", "u:p"), tmp_path / "run",
            transport=nova.transport(), clock=clock, run_id="0badf00d"))
        if cancel_after_s is not None:
            await asyncio.sleep(cancel_after_s)
            task.cancel()
        return await task, nova

    return run_virtual(go())


def test_example_mixed_load_parses_and_keeps_only_given_parts():
    scn = load_scenario(REPO / "examples" / "mixed-load.yaml")
    name, cfg = scn.workload.chosen()
    assert name == "mixed" and "stacklens.drive.mixed" in BUILTIN_MODULES
    assert [p.chosen()[0] for p in cfg.parts] == ["boot_servers", "create_ports"]
    assert cfg.parts[1].chosen()[1].count == 40
    dumped = scenario_dict(scn)["workload"]["mixed"]
    assert [list(p) for p in dumped["parts"]] == [["boot_servers"], ["create_ports"]]
    assert dumped["parts"][0]["boot_servers"]["per_compute"] == 2


@pytest.mark.parametrize(
    ("old", "new", "line", "fragment"),
    [
        ("count: 6", "count: 0", 11, "workload.mixed.parts.1.test_mixed_flavors.count: Input"),
        ("image: cirros", "image: cirros\n          colour: red", 9,
         "workload.mixed.parts.0.boot_servers.colour: Extra inputs"),
        ("      - test_mixed_flavors:", "      - mixed: {parts: []}\n      - test_mixed_flavors:",
         10, "workload.mixed.parts.1: a part cannot be mixed (no nesting)"),
        ("      - test_mixed_flavors:", "      - juggle: {count: 1}\n      - test_mixed_flavors:",
         10, "workload.mixed.parts.1.juggle: Extra inputs are not permitted"),
        ("    parts:", "    start: staggered\n    parts:", 3, "offset_s > 0 goes with start"),
        ("    parts:", "    offset_s: 5\n    parts:", 3, "offset_s > 0 goes with start"),
        ("          concurrency: 2\n", "          concurrency: 2\n        boot_servers: {count: 1, flavor: f, image: i}\n", 10,
         "workload.mixed.parts.1: give exactly one workload of"),
    ],
)
def test_parts_are_validated_with_their_own_schema_at_the_line(old, new, line, fragment):
    with pytest.raises(ScenarioError) as e:
        parse_scenario(SCENARIO.replace(old, new), "s.yaml")
    msg = str(e.value)
    assert msg.startswith(f"s.yaml:{line}: "), msg
    assert fragment in msg, msg


def test_no_parts_is_an_error():
    with pytest.raises(ScenarioError, match=r"s.yaml:4: workload.mixed.parts: List should"):
        parse_scenario("name: m\nworkload:\n  mixed:\n    parts: []\n", "s.yaml")


def test_labels_number_repeated_types():
    assert part_labels(["a", "b", "a"]) == ["a#1", "b", "a#2"]


def test_plan_totals_prefixes_and_offsets():
    text = SCENARIO.replace("count: 4\n", "per_compute: 2\n").replace(
        "    parts:", "    start: staggered\n    offset_s: 10\n    parts:").replace(
        "sla:", "      - test_mixed_flavors: {count: 3, repetitions: 2}\nsla:")
    scn = parse_scenario(text)
    wl = MixedWorkload(scn.workload.chosen()[1])  # type: ignore[arg-type]

    async def go() -> MixedPlan:
        nova = FakeNova()
        async with ComputeClient(Connection("http://nova.test/v2.1", "u:p"),
                                 transport=nova.transport()) as client:
            return await wl.plan(scn, client, "0badf00d")

    plan = run_virtual(go())
    assert plan.labels == ("boot_servers", "test_mixed_flavors#1", "test_mixed_flavors#2")
    assert [p.total for p in plan.plans] == [8, 6, 3]  # 2 x the fake's 4 computes
    assert (plan.total, plan.repetitions) == (8 + 6 + 3 * 2, 1)
    assert [p.prefix for p in plan.plans] == [f"sl-0badf00d-p{i}-" for i in range(3)]
    assert all(p.prefix.startswith(plan.prefix) for p in plan.plans)
    assert plan.offsets_s == (0.0, 10.0, 20.0)
    d = plan.describe()
    assert d["total"] == 20 and [x["label"] for x in d["parts"]] == list(plan.labels)
    assert [x["scenario"] for x in d["parts"]] == ["mix/boot_servers",
                                                   "mix/test_mixed_flavors#1",
                                                   "mix/test_mixed_flavors#2"]


def test_a_mixed_run_drives_every_part_at_once_into_one_records_file(tmp_path):
    res, nova = run(tmp_path, SCENARIO)
    recs = res.summary.records
    by = {s: [r for r in recs if r.scenario == s] for s in {r.scenario for r in recs}}
    assert {k: len(v) for k, v in by.items()} == {"mix/boot_servers": 4,
                                                  "mix/test_mixed_flavors": 6}
    assert all(r.run_id == "0badf00d" and r.outcome == "ok" for r in recs)
    assert all(r.name.startswith("sl-0badf00d-p0-") for r in by["mix/boot_servers"])
    assert all(r.name.startswith("sl-0badf00d-p1-") for r in by["mix/test_mixed_flavors"])
    boots, calls = by["mix/boot_servers"], by["mix/test_mixed_flavors"]
    # at once: the flavor calls start while the servers are still building
    assert min(r.submit_ns for r in calls) < max(r.active_ns for r in boots)  # type: ignore
    assert not nova.servers or all(s.status == "DELETED" for s in nova.servers.values())
    assert res.summary.stats.total == 10 and res.summary.stats.done == 10
    assert res.summary.calls["flavors"] == 6  # counted once: the parts share the client
    sla = {c.name: c for c in res.sla}
    # p95 over each record's own duration: create_s of servers (> 5 s), api_s of calls
    assert sla["p95_s"].value == pytest.approx(max(r.create_s for r in boots), rel=0.2)
    m = json.loads((tmp_path / "run" / "manifest.json").read_text())["run"]
    assert m["state"] == "finished" and m["plan"]["total"] == 10
    parts = m["summary"]["parts"]
    assert set(parts) == {"boot_servers", "test_mixed_flavors"}
    assert parts["boot_servers"]["servers"] == 4 and "create_s" in parts["boot_servers"]
    assert set(parts["test_mixed_flavors"]) == {"servers", "outcomes", "success_rate", "api_s",
                                                "hosts"}
    assert m["summary"]["servers"] == 10
    jsonl, bad = read_records(tmp_path / "run" / "requests.jsonl")
    assert bad == 0 and len(jsonl) == 10 and {r.run_id for r in jsonl} == {"0badf00d"}


def test_stopping_a_mixed_run_stops_every_part(tmp_path):
    text = SCENARIO.replace("count: 4", "count: 40").replace("count: 6", "count: 100")
    res, nova = run(tmp_path, text, cancel_after_s=3)
    s = res.summary
    calls = [r for r in s.records if r.scenario == "mix/test_mixed_flavors"]
    assert s.interrupted and 0 < len(calls) < 100  # 2 calls of 0.5 s at a time for 3 s
    assert {r.outcome for r in calls} <= {"ok", "cancelled"}
    assert all(st.status == "DELETED" for st in nova.servers.values())  # cleaned up
    m = json.loads((tmp_path / "run" / "manifest.json").read_text())["run"]
    assert m["state"] == "interrupted"


def test_staggered_part_not_started_when_stopped_first(tmp_path):
    text = SCENARIO.replace("    parts:", "    start: staggered\n    offset_s: 1000\n    parts:")
    res, _nova = run(tmp_path, text, cancel_after_s=3)
    assert res.summary.interrupted
    assert not [r for r in res.summary.records if r.scenario == "mix/test_mixed_flavors"]


def test_cleanup_runs_every_other_type_by_prefix():
    async def go():
        nova = FakeNova()
        async with ComputeClient(Connection("http://nova.test/v2.1", "u:p"),
                                 transport=nova.transport()) as client:
            return await MixedWorkload.cleanup(client, "sl-0badf00d-", 5.0, 1.0)

    res = run_virtual(go())
    assert (res.found, res.remaining) == (0, [])
    assert any(e.startswith("create_ports: not cleaned: ") for e in res.errors)  # no neutron
