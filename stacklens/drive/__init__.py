"""The load driver: workloads (boot storms today) against a compute API, recorded from the
client's side.

``stacklens run scenario.yaml --out RUN`` = :func:`load_scenario` -> :func:`run_scenario`
(the scenario's registered workload type plans the run and gives its driver, e.g.
:class:`Driver` on a :class:`ComputeClient`) -> ``RUN/requests.jsonl`` and the canonical
``requests`` table. Rally results load into the same records with :func:`read_rally`.

This package sits below ingest in the pipeline: it imports only :mod:`stacklens.store`,
:mod:`stacklens.schema` and :mod:`stacklens.errors`, never ingest, trace, analyze, report or
the CLI.

Generic modules: ``workload`` (the registry of workload types), ``scenario`` (YAML + pydantic),
``shape`` (load shapes, pure), ``pacer`` (pacing, concurrency slots, stats), ``steps`` (a
driver of one timed call per step), ``clock`` (injected clocks, virtual-time loop), ``client``
(httpx compute client, clouds.yaml), ``records`` (the record, JSONL, Polars), ``sla``,
``rally``, ``session`` (one run end to end). The ``boot_servers`` workload:
``boot_servers`` (config, registration), ``plan``, ``driver`` (the server lifecycle driver),
``cleanup`` (servers by prefix), ``reach`` (ping/SSH). The fake compute API the tests and the
benchmark drive is a test double: ``tests/doubles/fake_nova.py``.
"""

from stacklens.drive.cleanup import CleanupResult, cleanup_prefix
from stacklens.drive.client import ApiResult, ComputeClient, Connection, resolve_connection
from stacklens.drive.clock import LoopClock, SystemClock, VirtualTimeLoop, run_virtual
from stacklens.drive.driver import Driver
from stacklens.drive.pacer import DriveStats, DriveSummary, Pacer
from stacklens.drive.plan import Plan, new_run_id, plan_from_scenario, run_prefix
from stacklens.drive.rally import read_rally, records_from_rally
from stacklens.drive.records import RecordWriter, RequestRecord, read_records, to_frame
from stacklens.drive.scenario import Scenario, ScenarioError, load_scenario, parse_scenario
from stacklens.drive.session import RunResult, finalize_records, run_scenario
from stacklens.drive.shape import Burst, Constant, Linear, Shape, Steps, make_shape
from stacklens.drive.sla import SlaCheck, evaluate_sla, percentile
from stacklens.drive.steps import StepDriver, StepPlan
from stacklens.drive.workload import Workload, get_workload, register_workload, workload_types

__all__ = [
    "ApiResult",
    "Burst",
    "CleanupResult",
    "ComputeClient",
    "Connection",
    "Constant",
    "DriveStats",
    "DriveSummary",
    "Driver",
    "Linear",
    "LoopClock",
    "Pacer",
    "Plan",
    "RecordWriter",
    "RequestRecord",
    "RunResult",
    "Scenario",
    "ScenarioError",
    "Shape",
    "SlaCheck",
    "StepDriver",
    "StepPlan",
    "Steps",
    "SystemClock",
    "VirtualTimeLoop",
    "Workload",
    "cleanup_prefix",
    "evaluate_sla",
    "finalize_records",
    "get_workload",
    "load_scenario",
    "make_shape",
    "new_run_id",
    "parse_scenario",
    "percentile",
    "plan_from_scenario",
    "read_rally",
    "read_records",
    "records_from_rally",
    "register_workload",
    "resolve_connection",
    "run_prefix",
    "run_scenario",
    "run_virtual",
    "to_frame",
    "workload_types",
]
