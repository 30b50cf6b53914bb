"""stacklens ingest vs os-log-merger on the same oslo.log files, in one run (the ratio to
``grep -c`` is measured by bench/ingest_bench.py).

os-log-merger (PyPI ``os-log-merger``, the OpenStack tool that merges service logs by time) is
the closest existing tool: it parses the same timestamps and sorts every record. It is installed
apart (``python3 -m venv /tmp/olm && /tmp/olm/bin/pip install os-log-merger``) and named with
``--olm``. Only plain files that stacklens detects as oslo.log are used (os-log-merger reads no
gzip). Each tool runs as a child process; wall time from perf_counter, CPU and peak RSS from
``os.wait4``. Prints one JSON object with the ratio of the two, measured in the same run.

    python bench/vs_os_log_merger.py --olm /tmp/olm/bin/os-log-merger [LOG_DIR ...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from stacklens.ingest.formats import detect_format
from stacklens.ingest.pipeline import _sample_lines
from stacklens.ingest.sources import find_files

DATA = Path(os.environ.get("STACKLENS_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))


def timed(cmd: list[str], timeout_s: float = 1800) -> dict:
    t0 = time.perf_counter()
    with open(os.devnull, "wb") as devnull:
        p = subprocess.Popen(cmd, stdout=devnull, stderr=devnull)
        deadline = t0 + timeout_s
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                p.kill()
                pid, status, ru = os.wait4(p.pid, 0)
                break
            time.sleep(0.01)
    return {"wall_s": round(time.perf_counter() - t0, 3), "cpu_s": round(ru.ru_utime + ru.ru_stime, 3),
            "peak_rss_mib": round(ru.ru_maxrss / 1024, 1), "exit": os.waitstatus_to_exitcode(status)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="*", default=[str(DATA / "oslo-logs" / "devstack-gate-cinder-ci-2016"),
                                                 str(DATA / "oslo-logs" / "devstack-mitaka-kyuhwi")])
    ap.add_argument("--olm", required=True, help="the os-log-merger executable")
    a = ap.parse_args()
    files = []
    for f in find_files(a.dirs):
        raw = f.path.read_bytes()
        if not raw.startswith(b"\x1f\x8b") and (fmt := detect_format(_sample_lines(raw))) and fmt.name == "oslo":
            files.append(str(f.path))
    if not files:
        print("no plain oslo.log files under " + ", ".join(a.dirs), file=sys.stderr)
        return 1
    lines = sum(Path(f).read_bytes().count(b"\n") for f in files)
    with tempfile.TemporaryDirectory() as tmp:
        res = {
            "stacklens": timed([sys.executable, "-m", "stacklens", "ingest", *files, "--out", f"{tmp}/run"]),
            "os_log_merger": timed([a.olm, *files]),
        }
    for r in res.values():
        r["lines_per_s"] = round(lines / r["wall_s"]) if r["wall_s"] else None
    out = {"benchmark": "vs_os_log_merger", "files": len(files), "lines": lines, **res,
           "stacklens_over_os_log_merger_speed": round(res["stacklens"]["lines_per_s"] / res["os_log_merger"]["lines_per_s"], 2)}
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
