#!/usr/bin/env python3
"""End-to-end benchmark of ``stacklens analyze`` (ingest + trace + report) at several sizes.

A benchmark, not a test: it asserts nothing and prints one JSON object on stdout (progress on
stderr).

Corpus
------
For each size (physical lines, ``1M``, ``10M``, ``500k`` or a plain number) a corpus of at least
that many lines is built by repeating the real OpenStack logs of ``<repo>/../shared/data/
oslo-logs`` (``STACKLENS_DATA`` overrides the folder) in ``copy-NNN/`` folders, each keeping
the original ``<host>/var/log/...`` layout (the first copy is written as by
``bench/ingest_bench.py``, ``.gz`` files gunzipped). So that the copies are distinct requests
rather than the same ones seen N times (which the trace stage would merge into one), copy ``k``
has the first 8 hex digits of every UUID (request ids, instance ids, ...) and of every
un-dashed 32-hex id (RPC ``msg_id``/``unique_id``, reply queues, project and user ids) XOR-ed
with ``k``: the same ids within a copy stay the same, and no copy shares one with another.
Timestamps are left as they are (the copies overlap in time, like more load on the same cloud).
Corpora live under ``--corpus-root`` (default: a temporary folder) as ``<root>/v2-<lines>/``
(``v2``: :data:`CORPUS_VERSION`) and are reused when present.

Measures
--------
Each size is run ``--repeat`` times (default 1; medians, peak RSS is the maximum):

* ``grep``: ``LC_ALL=C grep -a -c -h '' FILES`` over the same files, the floor of "reading every
  line" on this machine and page cache (``ratio_to_grep`` = stacklens lines/s / grep lines/s
  compares across machines);
* ``stacklens``: ``stacklens analyze CORPUS --out RUN --json`` (``--command ingest``: ``stacklens
  ingest``), a child process timed from outside: ``wall_s``, ``cpu_user_s`` and ``cpu_sys_s``
  (``os.wait4`` rusage of the child), ``peak_rss_mib`` (its maximum resident set) and
  ``lines_per_s``; the stage times come from the run's ``manifest.json`` (``ingest_wall_s``,
  ``trace_wall_s``; ``trace_buckets``: how many buckets the trace stage ran in, set by
  ``STACKLENS_TRACE_MEM_MIB``, see ``stacklens/trace/bounded.py``).

Usage::

    python bench/analyze_bench.py [SIZE ...] [--repeat K] [--corpus-root DIR] [--keep]
                                  [--command analyze|ingest]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from ingest_bench import (
    DEFAULT_DATA,
    GOAL_LINES_PER_S,
    build_corpus,
    corpus_files,
    log,
    measure,
    run_grep,
    stacklens_cmd,
)

_UUID = re.compile(rb"[0-9a-fA-F]{8}(?=-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})")
#: un-dashed 32-hex ids: oslo.messaging ``msg_id``/``unique_id``, reply queues ``reply_<hex>``,
#: Keystone project and user ids; their first 8 digits, as for UUIDs
_HEX32 = re.compile(rb"(?<![0-9a-zA-Z])[0-9a-f]{8}(?=[0-9a-f]{24}(?![0-9a-zA-Z]))")
#: corpus layout version, in the corpus folder's name: 2 also shifts the 32-hex ids (version 1
#: left them alone, so every copy's RPC messages paired with every other copy's)
CORPUS_VERSION = 2
_SIZE = re.compile(r"(\d+(?:\.\d+)?)([kKmM]?)")


def parse_size(text: str) -> int:
    """``1M`` -> 1,000,000; ``500k`` -> 500,000; ``1234`` -> 1234. Raises ValueError."""
    m = _SIZE.fullmatch(text.strip())
    if not m:
        raise ValueError(f"not a size: {text!r} (e.g. 1M, 500k, 2000000)")
    mult = {"": 1, "k": 1_000, "m": 1_000_000}[m.group(2).lower()]
    return int(float(m.group(1)) * mult)


def _shift_ids(data: bytes, k: int) -> bytes:
    """Every UUID's and every un-dashed 32-hex id's first 8 hex digits XOR ``k`` (lower case
    hex, as the logs write them)."""
    def shift(m: re.Match[bytes]) -> bytes:
        return b"%08x" % (int(m.group(0), 16) ^ k)
    return _HEX32.sub(shift, _UUID.sub(shift, data))


def build_distinct_corpus(data: Path, dest: Path, min_lines: int) -> None:
    """Copies of ``data`` in ``dest/copy-NNN/`` up to ``min_lines`` lines, ids made distinct
    per copy (see the module docstring)."""
    build_corpus(data, dest, min_lines)  # copy-000 from the sources, then plain copies
    for cdir in sorted(dest.glob("copy-*")):
        k = int(cdir.name.split("-", 1)[1])
        if k == 0:
            continue
        for f in sorted(p for p in cdir.rglob("*") if p.is_file()):
            f.write_bytes(_shift_ids(f.read_bytes(), k))
        log(f"{cdir.name}: ids shifted")


def run_stacklens(command: str, corpus: Path, out: Path, timeout_s: float) -> dict:
    """One ``stacklens <command> CORPUS --out OUT`` child, measured (see :func:`measure`)."""
    errf = out.parent / f"{out.name}.stderr"
    cmd = [*stacklens_cmd(), command, str(corpus), "--out", str(out)]
    if command == "analyze":
        cmd.append("--json")  # the report on stdout, not drawn on a terminal
    m = measure(cmd, timeout_s=timeout_s, stderr_path=errf)
    if m["code"] != 0:
        tail = errf.read_text(errors="replace")[-2000:]
        raise SystemExit(f"analyze_bench: stacklens {command} exited {m['code']}:\n{tail}")
    man = json.loads((out / "manifest.json").read_text())
    ing = man.get("ingest", {})
    tr = man.get("trace") or {}
    return {**m, "records": ing.get("records"), "ingest_wall_s": ing.get("wall_s"),
            "traces": tr.get("traces"), "trace_wall_s": tr.get("wall_s"),
            "trace_buckets": tr.get("buckets")}


def bench_size(size: int, root: Path, data: Path, a: argparse.Namespace, work: Path) -> dict:
    """Build (or reuse) the corpus of ``size`` lines and measure grep and stacklens on it."""
    corpus = root / f"v{CORPUS_VERSION}-{size}"
    if not (corpus.is_dir() and any(corpus.iterdir())):
        log(f"building a corpus of >= {size:,} lines in {corpus}")
        t0 = time.perf_counter()
        build_distinct_corpus(data, corpus, size)
        log(f"corpus built in {time.perf_counter() - t0:.1f} s")
    files, lines, nbytes = corpus_files(corpus)
    gr, sl = [], []
    for i in range(a.repeat):
        gr.append(run_grep(files, a.timeout))
        out = work / f"run-{size}-{i}"
        r = run_stacklens(a.command, corpus, out, a.timeout)
        sl.append(r)
        log(f"{size:,} lines, run {i + 1}/{a.repeat}: grep {gr[-1]['wall_s']:.2f} s, stacklens "
            f"{a.command} {r['wall_s']:.2f} s ({r['cpu_user_s']:.1f} user + "
            f"{r['cpu_sys_s']:.1f} sys CPU s, {r['peak_rss_mib']:,.0f} MiB peak)")
        if not a.keep:
            shutil.rmtree(out, ignore_errors=True)
    med = statistics.median
    gw = med(g["wall_s"] for g in gr)
    sw = med(r["wall_s"] for r in sl)
    lps = lines / sw if sw else None
    grep_lps = lines / gw if gw else None
    return {
        "lines": lines,
        "bytes": nbytes,
        "files": len(files),
        "wall_s": round(sw, 3),
        "cpu_user_s": round(med(r["cpu_user_s"] for r in sl), 2),
        "cpu_sys_s": round(med(r["cpu_sys_s"] for r in sl), 2),
        "peak_rss_mib": round(max(r["peak_rss_mib"] for r in sl), 1),
        "lines_per_s": round(lps) if lps else None,
        "records": sl[-1]["records"],
        "traces": sl[-1]["traces"],
        "ingest_wall_s": med(r["ingest_wall_s"] or 0.0 for r in sl),
        "trace_wall_s": med(r["trace_wall_s"] or 0.0 for r in sl),
        "trace_buckets": sl[-1]["trace_buckets"],
        "runs_wall_s": [round(r["wall_s"], 3) for r in sl],
        "grep": {"wall_s": round(gw, 3), "lines_per_s": round(grep_lps) if grep_lps else None,
                 "cpu_s": round(med(g["cpu_s"] for g in gr), 3)},
        "ratio_to_grep": round(lps / grep_lps, 4) if lps and grep_lps else None,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sizes", nargs="*", default=["1M", "10M"],
                    help="corpus sizes in physical lines (default: 1M 10M)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per size (median)")
    ap.add_argument("--command", choices=("analyze", "ingest"), default="analyze",
                    help="the stacklens subcommand measured (default analyze)")
    ap.add_argument("--corpus-root", type=Path,
                    help="folder of corpora (<root>/v2-<lines>/), reused when present")
    ap.add_argument("--keep", action="store_true", help="keep temporary corpora and run folders")
    ap.add_argument("--timeout", type=float, default=3600.0,
                    help="seconds before a child process is killed (default 3600)")
    a = ap.parse_args(argv)
    try:
        sizes = [parse_size(s) for s in a.sizes]
    except ValueError as e:
        ap.error(str(e))
    if a.repeat < 1 or any(s < 1 for s in sizes):
        ap.error("sizes and --repeat must be >= 1")
    data = Path(os.environ.get("STACKLENS_DATA") or DEFAULT_DATA)
    if not data.is_dir():
        log(f"error: log data folder {data} not found (set STACKLENS_DATA)")
        return 1
    work = Path(tempfile.mkdtemp(prefix="stacklens-analyze-bench-"))
    root = (a.corpus_root or work / "corpora").resolve()
    try:
        load_before = os.getloadavg()[0]
        results = [bench_size(s, root, data, a, work) for s in sizes]
        print(json.dumps({
            "benchmark": f"stacklens {a.command}",
            "sizes": results,
            "goal_lines_per_s": GOAL_LINES_PER_S,
            "machine": {"cpus": os.cpu_count(),
                        "loadavg_1m": [round(load_before, 2), round(os.getloadavg()[0], 2)]},
        }, indent=2))
        return 0
    finally:
        if a.keep:
            log(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
