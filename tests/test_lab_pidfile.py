"""The lab's PID files: a process is recognised by its start time since boot, so a step of the
kernel's ``btime`` (the wall-clock boot time, whole seconds) between ``lab up`` and ``lab down``
does not leave services running (stacklens_lab.services module docstring). Real processes
(``sleep``), no root needed."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import psutil

from stacklens_lab.services import ProcSpec, lab_pids, names, since_boot_s, start, stop

SLEEPER = (sys.executable, "-c", "import time; time.sleep(60)")


def _shift(run: Path, name: str, key: str, by_s: float, drop: str | None = None) -> None:
    f = run / f"{name}.pid"
    rec = json.loads(f.read_text())
    rec[key] += by_s
    if drop:
        rec.pop(drop)
    f.write_text(json.dumps(rec) + "\n")


def test_a_btime_step_does_not_hide_a_service_from_stop(tmp_path: Path):
    run = tmp_path / "run"
    pid = start(ProcSpec("svc", SLEEPER), run)
    rec = json.loads((run / "svc.pid").read_text())
    assert abs(rec["since_boot_s"] - since_boot_s(psutil.Process(pid))) < 0.05
    # the wall-clock start as read by `lab up` one second off what `lab down` reads
    _shift(run, "svc", "create_time", 1.0)
    assert (pid, since_boot_s(psutil.Process(pid))) in lab_pids(run)
    assert stop(run, "svc", timeout_s=10)
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert names(run) == []


def test_pid_files_from_before_match_within_a_btime_step(tmp_path: Path):
    run = tmp_path / "run"
    pid = start(ProcSpec("old", SLEEPER), run)
    _shift(run, "old", "create_time", 1.0, drop="since_boot_s")  # an older lab's file
    assert {p for p, _ in lab_pids(run)} == {pid}
    other = start(ProcSpec("reused", SLEEPER), run)
    _shift(run, "reused", "since_boot_s", 5.0)  # the PID now belongs to another program
    assert other not in {p for p, _ in lab_pids(run)}
    assert not stop(run, "reused", timeout_s=1)  # never signalled
    assert psutil.Process(other).is_running()
    psutil.Process(other).kill()
    assert stop(run, "old", timeout_s=10)
