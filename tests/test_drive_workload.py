"""The workload registry: a second workload type registered here, in this test only (not
shipped), runs end to end through the generic parts (scenario validation at the YAML line,
session dispatch, pacing and concurrency, one record per step, records file, SLA, summary)
against the fake compute API. Adding a workload type is one module like the block below."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from doubles.fake_nova import FakeNova
from pydantic import Field

from stacklens.drive.client import ApiResult, ComputeClient, Connection
from stacklens.drive.clock import LoopClock, run_virtual
from stacklens.drive.records import RecordWriter, RequestRecord, read_records
from stacklens.drive.scenario import Pacing, Scenario, ScenarioError, parse_scenario
from stacklens.drive.session import run_scenario
from stacklens.drive.shape import make_shape
from stacklens.drive.steps import StepDriver, StepPlan
from stacklens.drive.workload import (
    DuplicateWorkload,
    Workload,
    get_workload,
    register_workload,
    workload_types,
)
from stacklens.errors import UserError
from stacklens.store import RunStore


# --- the whole of a new workload type -------------------------------------------------------
class ListFlavors(Pacing):
    """Test workload ``test_list_flavors``: ``count`` calls of ``GET /flavors/detail``."""

    count: int = Field(gt=0)


@register_workload("test_list_flavors", config=ListFlavors)
class ListFlavorsWorkload(Workload):
    """One ``GET /flavors/detail`` per step, timed and recorded once."""

    async def plan(self, scn: Scenario, client: ComputeClient, run_id: str,
                   computes: int | None = None) -> StepPlan:
        c = self.config
        assert isinstance(c, ListFlavors)
        return StepPlan(run_id, c.count, scn.name, c.repetitions, c.concurrency,
                        make_shape(c.ramp))

    def driver(self, plan: Any, client: ComputeClient, writer: RecordWriter, *,
               clock=None, prober=None, on_tick=None) -> StepDriver:
        async def step(cl: ComputeClient, rec: RequestRecord) -> ApiResult:
            return await cl.call("flavors", "GET", "flavors/detail",
                                 headers={"X-OpenStack-Request-ID": rec.global_request_id})

        return StepDriver(plan, client, writer, step, clock=clock, on_tick=on_tick)
# ---------------------------------------------------------------------------------------------


SCENARIO = """\
name: flavors
workload:
  test_list_flavors:
    count: 12
    concurrency: 3
    ramp: {shape: constant, rate_per_s: 4}
    repetitions: 2
sla: {success_rate: 0.9, p95_s: 0.5}
"""


def slow(nova: FakeNova, delay_s: float, fail_every: int = 0) -> httpx.MockTransport:
    """The fake's transport with ``delay_s`` of (virtual) latency per call; every
    ``fail_every``-th flavors call answered 503."""
    inner, n = nova.transport(), [0]

    async def handler(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(delay_s)
        if request.url.path.endswith("/flavors/detail"):
            n[0] += 1
            if fail_every and n[0] % fail_every == 0:
                return httpx.Response(503, json={"error": "busy"})
        return await inner.handle_async_request(request)

    return httpx.MockTransport(handler)


def run(tmp_path: Path, text: str, delay_s: float = 1.0, fail_every: int = 0):
    scn = parse_scenario(text)

    async def go():
        clock = LoopClock()
        nova = FakeNova(now=lambda: clock.now_ns() / 1e9)
        return await run_scenario(scn, Connection("http://nova.test/v2.1", "u:p"),
                                  tmp_path / "run", transport=slow(nova, delay_s, fail_every),
                                  clock=clock, run_id="0badf00d")

    return run_virtual(go())


def test_a_registered_workload_runs_end_to_end(tmp_path):
    res = run(tmp_path, SCENARIO, fail_every=8)
    recs = res.summary.records
    assert len(recs) == 24 and res.plan.total == 12 and res.plan.repetitions == 2
    assert {r.repetition for r in recs} == {0, 1}
    assert all(r.name.startswith("sl-0badf00d-r") for r in recs)
    by = {o: sum(r.outcome == o for r in recs) for o in {r.outcome for r in recs}}
    assert by == {"ok": 21, "api_error": 3}
    assert all(r.api_s == pytest.approx(1.0) for r in recs)  # one timed call per record
    assert res.summary.stats.peak_in_flight == 3  # concurrency held
    submits = sorted(r.submit_ns for r in recs if r.repetition == 0)
    assert (submits[-1] - submits[0]) / 1e9 >= 11 / 4 - 1e-6  # 4/s at most
    checks = {c.name: c for c in res.sla}
    assert checks["success_rate"].value == pytest.approx(21 / 24) and not checks["success_rate"].ok
    assert checks["p95_s"].value == pytest.approx(1.0) and not checks["p95_s"].ok
    m = json.loads((tmp_path / "run" / "manifest.json").read_text())["run"]
    assert m["state"] == "finished" and m["plan"]["total"] == 12
    assert m["scenario"]["workload"] == {"test_list_flavors": {
        "concurrency": 3, "ramp": {"shape": "constant", "rate_per_s": 4.0}, "repetitions": 2,
        "count": 12}}
    assert m["summary"]["outcomes"] == {"api_error": 3, "ok": 21}
    assert set(m["summary"]) == {"servers", "outcomes", "success_rate", "api_s", "hosts"}
    assert m["calls"] == {"flavors": 24}
    assert len(read_records(tmp_path / "run" / "requests.jsonl")[0]) == 24
    assert RunStore(tmp_path / "run").read("requests").height == 24


def test_the_scenario_validates_the_workload_with_its_schema_at_the_line():
    with pytest.raises(ScenarioError) as e:
        parse_scenario(SCENARIO.replace("count: 12", "count: 0"), "s.yaml")
    assert str(e.value).startswith("s.yaml:4: workload.test_list_flavors.count: Input should be")
    with pytest.raises(ScenarioError) as e:
        parse_scenario(SCENARIO.replace("    repetitions: 2\n", "    colour: red\n"), "s.yaml")
    assert str(e.value).startswith("s.yaml:7: workload.test_list_flavors.colour: Extra inputs")
    with pytest.raises(ScenarioError) as e:
        parse_scenario("workload:\n  juggle: {count: 1}\n", "s.yaml")
    assert str(e.value).startswith("s.yaml:2: workload.juggle: Extra inputs are not permitted")
    with pytest.raises(ScenarioError, match=r"s.yaml:1: workload: give exactly one workload of:"):
        parse_scenario("workload: {}\n", "s.yaml")
    two = SCENARIO.replace("sla:", "  boot_servers: {count: 1, flavor: f, image: i}\nsla:")
    with pytest.raises(ScenarioError, match="give exactly one workload of: boot_servers, "):
        parse_scenario(two, "s.yaml")


def test_registration_is_explicit_and_names_are_unique():
    types = workload_types()
    assert types["boot_servers"].name == "boot_servers"
    assert types["test_list_flavors"] is ListFlavorsWorkload
    assert get_workload("test_list_flavors").config_schema is ListFlavors
    with pytest.raises(DuplicateWorkload, match="already registered"):
        register_workload("test_list_flavors", config=ListFlavors)(ListFlavorsWorkload)
    with pytest.raises(UserError, match="unknown workload 'nope'"):
        get_workload("nope")
    nothing = run_virtual(ListFlavorsWorkload.cleanup(None, "sl-0badf00d-", 1.0, 1.0))  # type: ignore[arg-type]
    assert (nothing.found, nothing.remaining) == (0, [])  # creates nothing: nothing to delete


def test_an_interrupted_step_run_cancels_the_calls_in_flight(tmp_path):
    scn = parse_scenario(SCENARIO.replace("rate_per_s: 4", "rate_per_s: 100"))

    async def go():
        clock = LoopClock()
        nova = FakeNova(now=lambda: clock.now_ns() / 1e9)
        task = asyncio.create_task(run_scenario(
            scn, Connection("http://nova.test/v2.1", "u:p"), tmp_path / "run",
            transport=slow(nova, 10.0), clock=clock, run_id="0badf00d"))
        await asyncio.sleep(15)  # one round of 3 done, the next 3 in flight
        task.cancel()
        return await task

    res = run_virtual(go())
    outcomes = [r.outcome for r in res.summary.records]
    assert res.summary.interrupted
    assert outcomes.count("ok") == 3 and outcomes.count("cancelled") == 3
