"""Children with deadlines for ``drive_vs_rally.py``: run a command to completion or its
deadline (killed with its process group), CPU and peak RSS from ``os.wait4``; the bounded wait
for a quiet machine; log tails and progress lines. Split out of ``drive_vs_rally.py``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def _say(msg: str) -> None:
    print(f"[drive_vs_rally {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# children with deadlines, CPU from wait4
# ---------------------------------------------------------------------------------------------

def run_child(argv: list[str], log_prefix: Path, timeout_s: float,
              env: dict[str, str] | None = None, cwd: str | None = None) -> dict[str, Any]:
    """Run ``argv`` to completion (or its deadline); rusage from ``os.wait4`` of this child."""
    t0 = time.perf_counter()
    with open(f"{log_prefix}.out", "wb") as out, open(f"{log_prefix}.err", "wb") as err:
        p = subprocess.Popen(argv, stdout=out, stderr=err, env=env, cwd=cwd,
                             start_new_session=True, stdin=subprocess.DEVNULL)
    deadline, timed_out = time.monotonic() + timeout_s, False
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            timed_out = True
            for sig, grace in ((signal.SIGTERM, 20.0), (signal.SIGKILL, 10.0)):
                try:
                    os.killpg(p.pid, sig)
                except ProcessLookupError:
                    pass
                end = time.monotonic() + grace
                while time.monotonic() < end:
                    pid, status, ru = os.wait4(p.pid, os.WNOHANG)
                    if pid:
                        break
                    time.sleep(0.2)
                if pid:
                    break
            if not pid:
                pid, status, ru = os.wait4(p.pid, 0)
            break
        time.sleep(0.2)
    p.returncode = os.waitstatus_to_exitcode(status)  # reaped here; keep Popen from waiting
    return {"argv": argv, "rc": p.returncode, "timed_out": timed_out,
            "wall_s": round(time.perf_counter() - t0, 3),
            "cpu_user_s": round(ru.ru_utime, 3), "cpu_sys_s": round(ru.ru_stime, 3),
            "cpu_s": round(ru.ru_utime + ru.ru_stime, 3),
            "peak_rss_mb": round(ru.ru_maxrss / 1024, 1),
            "stdout": f"{log_prefix}.out", "stderr": f"{log_prefix}.err"}


def _tail(path: str | Path, n: int = 15) -> str:
    try:
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return ""


def wait_for_load(max_load: float, max_wait_s: float) -> dict[str, Any]:
    t0 = time.monotonic()
    load = os.getloadavg()[0]
    announced = False
    while load >= max_load and time.monotonic() - t0 < max_wait_s:
        if not announced:
            _say(f"load average {load:.2f} >= {max_load}; waiting (at most {max_wait_s:.0f} s)")
            announced = True
        time.sleep(10)
        load = os.getloadavg()[0]
    return {"loadavg_1m": round(load, 2), "below_max": load < max_load,
            "waited_s": round(time.monotonic() - t0, 1)}
