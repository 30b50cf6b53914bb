"""Scenario files (pydantic + line numbers) and load shapes (pure, as a table)."""

from __future__ import annotations

from pathlib import Path

import pytest

from stacklens.drive.plan import plan_from_scenario
from stacklens.drive.scenario import ScenarioError, load_scenario, parse_scenario
from stacklens.drive.shape import Burst, Constant, Linear, Steps, make_shape

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

MINIMAL = """\
name: t
workload:
  boot_servers:
    count: 5
    flavor: m1.tiny
    image: cirros
"""


def test_minimal_scenario_gets_the_defaults():
    s = parse_scenario(MINIMAL)
    b = s.boot
    assert (b.count, b.network, b.mode, b.concurrency, b.repetitions) == (5, "none", "parallel", 100, 1)
    assert b.ramp.shape == "burst"
    assert b.phases.delete.enabled and b.phases.delete.when == "each"
    assert not b.phases.ping.enabled and not b.phases.ssh.enabled
    assert s.cleanup == "delete" and s.client.microversion == "2.37"
    assert s.sla.success_rate is None and s.logs == []


def test_every_example_loads_and_plans():
    files = sorted(EXAMPLES.glob("*.yaml"))
    assert files, "examples/ holds no scenario"
    for f in files:
        s = load_scenario(f)
        if s.workload.chosen()[0] != "boot_servers":  # port-storm.yaml: tests/test_create_ports
            continue
        plan = plan_from_scenario(s, "r", "img", "1", "none", computes=3)
        assert plan.total > 0, f
    storm = load_scenario(EXAMPLES / "boot-storm.yaml")
    assert plan_from_scenario(storm, "r", "i", "f", "none").total == 200  # 10 computes x 20
    assert plan_from_scenario(load_scenario(EXAMPLES / "smoke.yaml"), "r", "i", "f", "none").total == 10


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        (MINIMAL.replace("count: 5", "count: -5"), 4, "count: Input should be greater than 0"),
        (MINIMAL.replace("    count: 5\n", ""), 3, "exactly one of count and per_compute"),
        (MINIMAL.replace("count: 5", "count: 5\n    per_compute: 2"), 3, "exactly one of"),
        (MINIMAL.replace("    image: cirros\n", ""), 3, "image: Field required"),
        (MINIMAL + "    colour: blue\n", 7, "colour: Extra inputs are not permitted"),
        (MINIMAL + "    ramp:\n      shape: constant\n      rate_per_s: 0\n", 9,
         "ramp.rate_per_s: Input should be greater than 0"),
        (MINIMAL + "    ramp:\n      shape: zigzag\n", 7, "does not match any of the expected tags"),
        (MINIMAL + "    mode: serial\n", 7, "mode: Input should be 'parallel' or 'batch'"),
        (MINIMAL + "client:\n  microversion: '2.1'\n", 8, "microversion: must be 2.N with N >= 37"),
        (MINIMAL + "sla:\n  success_rate: 1.5\n", 8, "success_rate: Input should be less than"),
        (MINIMAL + "cleanup: sometimes\n", 7, "cleanup: Input should be"),
        (MINIMAL + "    phases:\n      delete:\n        when: later\n", 9, "phases.delete.when"),
        (MINIMAL + "logs: /var/log\n", 7, "logs: Input should be a valid list"),
        (MINIMAL.replace("name: t\n", "name: t\nname: u\n"), 2, "key 'name' given twice"),
        ("workload:\n  boot_servers: [\n", 3, "not valid YAML"),
        ("- just\n- a list\n", 1, "a scenario is a YAML mapping"),
    ],
)
def test_errors_point_at_the_line(text, line, fragment):
    with pytest.raises(ScenarioError) as e:
        parse_scenario(text, "s.yaml")
    msg = str(e.value)
    assert msg.startswith(f"s.yaml:{line}: "), msg
    assert fragment in msg, msg


def test_several_errors_are_all_reported_with_their_lines():
    text = MINIMAL.replace("count: 5", "count: 0") + "    concurrency: 0\n"
    with pytest.raises(ScenarioError) as e:
        parse_scenario(text, "s.yaml")
    assert str(e.value).startswith("s.yaml:4: ") and "(also line 7: " in str(e.value)
    assert "\n" not in str(e.value)


def test_missing_file_is_a_user_error(tmp_path):
    with pytest.raises(ScenarioError, match="no such scenario file"):
        load_scenario(tmp_path / "nope.yaml")


def test_batch_size_needs_batch_mode():
    with pytest.raises(ScenarioError, match="batch_size needs mode: batch"):
        parse_scenario(MINIMAL + "    batch_size: 2\n")
    s = parse_scenario(MINIMAL + "    mode: batch\n")
    assert plan_from_scenario(s, "r", "i", "f", "none").batch_size == 5  # one POST for all


# --- load shapes: wait before item `issued` at `elapsed` seconds ----------------------------
SHAPES = [
    # shape, elapsed_s, issued, expected wait_s
    (Burst(), 0.0, 0, 0.0),
    (Burst(), 10.0, 1999, 0.0),
    (Constant(2.0), 0.0, 0, 0.0),  # item 0 at once
    (Constant(2.0), 0.0, 1, 0.5),
    (Constant(2.0), 0.2, 1, 0.3),
    (Constant(2.0), 3.0, 1, 0.0),  # late: at once
    (Constant(2.0), 1.0, 4, 1.0),
    (Linear(0.0, 10.0, 10.0), 0.0, 0, 0.0),
    (Linear(0.0, 10.0, 10.0), 0.0, 5, 3.1622776601683795),  # 0.5 t^2 = 5
    (Linear(0.0, 10.0, 10.0), 0.0, 50, 10.0),  # end of the ramp
    (Linear(0.0, 10.0, 10.0), 10.0, 60, 1.0),  # then 10/s
    (Linear(10.0, 2.0, 8.0), 0.0, 18, 2.0),  # falling: 10t - t^2/2 = 18
    (Linear(4.0, 4.0, 5.0), 0.0, 8, 2.0),  # flat
    (Steps(((1.0, 10.0), (5.0, 10.0))), 0.0, 5, 5.0),
    (Steps(((1.0, 10.0), (5.0, 10.0))), 0.0, 15, 11.0),
    (Steps(((1.0, 10.0), (5.0, 10.0))), 0.0, 70, 22.0),  # 60 by t=20, then 5/s
]


@pytest.mark.parametrize(("shape", "elapsed", "issued", "wait"), SHAPES)
def test_shape_table(shape, elapsed, issued, wait):
    assert shape.pace(elapsed, issued) == pytest.approx(wait, abs=1e-9)


@pytest.mark.parametrize("shape", [Constant(3.0), Linear(1.0, 9.0, 20.0), Linear(9.0, 1.0, 20.0),
                                   Steps(((2.0, 5.0), (7.0, 3.0)))])
def test_shapes_issue_in_order_and_at_the_integrated_rate(shape):
    due = [shape.due_s(k) for k in range(200)]
    assert due == sorted(due) and due[0] == 0.0
    assert all(shape.pace(t, k) == 0 for k, t in enumerate(due))  # due means now


def test_make_shape_from_the_scenario():
    ramp = parse_scenario(MINIMAL + "    ramp: {shape: linear, start_rate_per_s: 1, "
                          "end_rate_per_s: 3, duration_s: 4}\n").boot.ramp
    assert make_shape(ramp) == Linear(1.0, 3.0, 4.0)
    steps = parse_scenario(MINIMAL + "    ramp: {shape: steps, steps: [{rate_per_s: 1, "
                           "duration_s: 2}]}\n").boot.ramp
    assert make_shape(steps) == Steps(((1.0, 2.0),))
