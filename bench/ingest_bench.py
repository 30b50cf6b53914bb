#!/usr/bin/env python3
"""Ingest throughput benchmark for stacklens (a benchmark, not a test: it asserts nothing).

What it measures
----------------
1. A corpus of at least ``--lines`` physical lines (default 5,000,000) is built in a temporary
   folder (or ``--corpus DIR``) by replicating the real OpenStack logs of
   ``<repo>/../shared/data/oslo-logs`` (``STACKLENS_DATA`` overrides that folder). Every copy
   lives in its own ``copy-NNN/`` folder and keeps the original layout (``<host>/var/log/...``),
   so host and service detection work as on real dumps; ``.gz`` files are written gunzipped, so
   both contenders below read the same plain bytes. Lines are counted exactly (``\\n`` count plus
   one for an unterminated last line, the definition of both ``grep -c ''`` and stacklens).
2. Each contender runs as a separate child process, timed from outside (``time.perf_counter``
   around spawn and ``os.wait4``); the child's peak RSS comes from the ``os.wait4`` rusage:

   * ``grep``: ``LC_ALL=C grep -a -c -h '' FILES...`` (chunked if the argument list is too long;
     counts summed). It reads every byte and finds every line end and nothing more: the floor
     of "looking at every line" on this machine, disk cache and core count.
   * ``stacklens``: ``stacklens ingest CORPUS --out RUN``, the real CLI end to end: interpreter
     start, imports, reading, format detection, tokenizing, facts, concatenation and sort, and
     writing DuckDB + Parquet. ``records`` and stacklens' own in-process ingest time
     (``ingest_wall_s``, reading to sorted events, without start-up and writing) come from the
     run folder's ``manifest.json``.
   * ``python_api`` (only with ``--also-python-api``): ``stacklens.ingest.pipeline.ingest()`` in
     a fresh interpreter, nothing written, for a breakdown (import time and ingest time apart).

   Each runs ``--repeat`` times (default 3); wall and CPU times (``cpu_s``, user + sys of the
   child from ``os.wait4``; for stacklens also ``cpu_user_s`` and ``cpu_sys_s`` apart: system
   time is page faults and copies) are medians, peak RSS is the maximum. The corpus was just written
   (or is read by grep first), so every run reads from the page cache: this measures CPU cost,
   not disk speed. ``machine.loadavg_1m`` (before, after) shows whether other processes were
   competing for the CPUs; on a busy machine ``cpu_s`` is steadier than ``wall_s``.

Why the ratio to grep
---------------------
Absolute lines/s depends on the CPU, its clock, the number of cores and the disk cache. grep,
measured in the same run on the same files, moves with all of those, so
``ratio_to_grep = stacklens lines/s / grep lines/s`` is the number to compare across machines
and over time; the absolute targets (``target_lines_per_s`` 1 M, ``goal_lines_per_s`` 3 M) are
meant for a 2-core machine.

Output: one JSON object on stdout; progress on stderr. Usage::

    python bench/ingest_bench.py [--lines N] [--repeat K] [--corpus DIR] [--keep]
                                 [--also-python-api] [--native | --no-native]

``--native`` / ``--no-native`` set ``STACKLENS_NATIVE`` (1 / 0) for the stacklens children: the
native tokenizer (``stacklens_native``, built from ``native/``) or the pure-Polars path; by default
the children use the native tokenizer when it is installed. ``stacklens.native`` in the output
says which path ran.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO.parent / "shared" / "data" / "oslo-logs"
TARGET_LINES_PER_S = 1_000_000
GOAL_LINES_PER_S = 3_000_000
_CHUNK = 1 << 20
#: bytes of file names per grep invocation (well under any ARG_MAX)
_ARGS_BYTES = 64 * 1024
_MAX_COPIES = 100_000


def log(msg: str) -> None:
    print(f"[ingest_bench] {msg}", file=sys.stderr, flush=True)


# corpus --------------------------------------------------------------------------------------
def count_lines(path: Path) -> tuple[int, int]:
    """Physical lines and bytes of ``path``: newlines, plus one for an unterminated last line."""
    lines = size = 0
    last = b"\n"
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(_CHUNK), b""):
            lines += chunk.count(b"\n")
            size += len(chunk)
            last = chunk[-1:]
    if size and last != b"\n":
        lines += 1
    return lines, size


def _gunzip_to(src: Path, dst: Path) -> None:
    """Decompress ``src`` into ``dst``; on a damaged stream keep what came before the damage."""
    with gzip.open(src, "rb") as fin, dst.open("wb") as fout:
        try:
            shutil.copyfileobj(fin, fout, _CHUNK)
        except (EOFError, OSError, zlib.error) as e:
            log(f"warning: {src} is damaged ({e}); kept what was decompressed")


def _source_files(data: Path) -> list[Path]:
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(data):
        dirnames.sort()
        for name in sorted(filenames):
            p = Path(dirpath) / name
            if p.is_file() and not p.is_symlink():
                out.append(p)
    return out


def build_corpus(data: Path, dest: Path, min_lines: int) -> None:
    """Replicate the files of ``data`` into ``dest/copy-NNN/`` until ``min_lines`` is reached.

    The first copy is written from the sources (gunzipping ``.gz`` files); later copies are file
    copies of the first. The last copy stops at the file that reaches ``min_lines``.
    """
    sources = _source_files(data)
    if not sources:
        raise SystemExit(f"ingest_bench: no files under {data}")
    first: list[tuple[Path, int]] = []  # (relative path in a copy, lines)
    total = 0
    copy0 = dest / "copy-000"
    for src in sources:
        rel = src.relative_to(data)
        if src.name.endswith(".gz"):
            rel = rel.with_name(src.name[: -len(".gz")])
            while (copy0 / rel).exists() or (data / rel).exists():  # bounded: adds a suffix
                rel = rel.with_name(rel.name + "_gz")
        out = copy0 / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        with src.open("rb") as f:
            gz = f.read(2) == b"\x1f\x8b"
        if gz:
            _gunzip_to(src, out)
        else:
            shutil.copyfile(src, out)
        n, _ = count_lines(out)
        first.append((rel, n))
        total += n
        if total >= min_lines:
            break
    per_copy = sum(n for _, n in first)
    if per_copy == 0:
        raise SystemExit(f"ingest_bench: the files under {data} hold no lines")
    log(f"copy-000: {len(first)} files, {per_copy:,} lines")
    copies = 1
    while total < min_lines and copies < _MAX_COPIES:
        cdir = dest / f"copy-{copies:03d}"
        for rel, n in first:
            out = cdir / rel
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(copy0 / rel, out)
            total += n
            if total >= min_lines:
                break
        copies += 1
        log(f"copy-{copies - 1:03d}: {total:,} lines so far")


def corpus_files(corpus: Path) -> tuple[list[Path], int, int]:
    """Every file under ``corpus`` (sorted, as stacklens walks it), total lines and bytes."""
    files = _source_files(corpus)
    lines = size = 0
    for f in files:
        n, b = count_lines(f)
        lines += n
        size += b
    return files, lines, size


# measuring -----------------------------------------------------------------------------------
def run_measured(
    cmd: list[str],
    *,
    env: dict[str, str] | None = None,
    timeout_s: float,
    stderr_path: Path | None = None,
) -> tuple[float, float, float, int, bytes]:
    """Run ``cmd``; return (wall s, peak RSS MiB, CPU s (user + sys), exit code, stdout)."""
    m = measure(cmd, env=env, timeout_s=timeout_s, stderr_path=stderr_path)
    return m["wall_s"], m["peak_rss_mib"], m["cpu_s"], m["code"], m["stdout"]


def measure(
    cmd: list[str],
    *,
    env: dict[str, str] | None = None,
    timeout_s: float,
    stderr_path: Path | None = None,
) -> dict:
    """Run ``cmd`` as a child process; a dict of ``wall_s`` (spawn to exit, s), ``cpu_user_s``,
    ``cpu_sys_s`` and ``cpu_s`` (their sum; the child's and its waited-for children's, from
    ``os.wait4``), ``peak_rss_mib`` (the child's maximum resident set), ``code`` (exit code) and
    ``stdout`` (bytes). The child is killed after ``timeout_s`` seconds."""
    err = stderr_path.open("wb") if stderr_path else subprocess.DEVNULL
    try:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, env=env)
        killer = threading.Timer(timeout_s, p.kill)
        killer.start()
        try:
            out = p.stdout.read()  # until the child closes stdout (exits)
            p.stdout.close()
            _, status, ru = os.wait4(p.pid, 0)
        finally:
            killer.cancel()
        wall = time.perf_counter() - t0
    finally:
        if stderr_path:
            err.close()
    p.returncode = code = os.waitstatus_to_exitcode(status)
    return {
        "wall_s": wall,
        "cpu_user_s": ru.ru_utime,
        "cpu_sys_s": ru.ru_stime,
        "cpu_s": ru.ru_utime + ru.ru_stime,
        "peak_rss_mib": ru.ru_maxrss / 1024.0,  # ru_maxrss is KiB on Linux
        "code": code,
        "stdout": out,
    }


def _chunks(files: list[Path]) -> list[list[str]]:
    out: list[list[str]] = [[]]
    size = 0
    for f in map(str, files):
        if out[-1] and size + len(f) + 1 > _ARGS_BYTES:
            out.append([])
            size = 0
        out[-1].append(f)
        size += len(f) + 1
    return out


def run_grep(files: list[Path], timeout_s: float) -> dict:
    """``grep -c ''`` over ``files``: wall s, CPU s, peak RSS MiB and total lines."""
    env = {**os.environ, "LC_ALL": "C"}
    wall = rss = cpu = 0.0
    lines = 0
    for chunk in _chunks(files):
        w, r, c, code, out = run_measured(
            ["grep", "-a", "-c", "-h", "", "--", *chunk], env=env, timeout_s=timeout_s
        )
        if code not in (0, 1):  # 1: some file had no lines
            raise SystemExit(f"ingest_bench: grep failed with exit code {code}")
        wall += w
        cpu += c
        rss = max(rss, r)
        lines += sum(int(x) for x in out.split())
    return {"wall_s": wall, "cpu_s": cpu, "peak_rss_mib": rss, "lines": lines}


def stacklens_cmd() -> list[str]:
    exe = Path(sys.executable).parent / "stacklens"
    if exe.exists():
        return [str(exe)]
    found = shutil.which("stacklens")
    if found:
        return [found]
    return [sys.executable, "-c", "from stacklens.cli import main; main()"]


def child_env(native: bool | None) -> dict[str, str] | None:
    """The stacklens children's environment: ``STACKLENS_NATIVE`` set when asked."""
    if native is None:
        return None
    return {**os.environ, "STACKLENS_NATIVE": "1" if native else "0"}


def native_used(native: bool | None) -> bool:
    """Whether the children run the native tokenizer (installed and not switched off)."""
    if native is False:
        return False
    code = "import stacklens.ingest.tokenize as t; print(t.native_wanted())"
    out = subprocess.run(
        [sys.executable, "-c", code], env=child_env(native), capture_output=True, text=True
    )
    return out.stdout.strip() == "True"


def run_stacklens(corpus: Path, out: Path, timeout_s: float, native: bool | None = None) -> dict:
    errf = out.parent / f"{out.name}.stderr"
    ms = measure(
        [*stacklens_cmd(), "ingest", str(corpus), "--out", str(out)],
        env=child_env(native),
        timeout_s=timeout_s,
        stderr_path=errf,
    )
    wall, rss, cpu, code = ms["wall_s"], ms["peak_rss_mib"], ms["cpu_s"], ms["code"]
    if code != 0:
        tail = errf.read_text(errors="replace")[-2000:]
        raise SystemExit(f"ingest_bench: stacklens ingest exited {code}:\n{tail}")
    m = json.loads((out / "manifest.json").read_text()).get("ingest", {})
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "cpu_user_s": ms["cpu_user_s"],
        "cpu_sys_s": ms["cpu_sys_s"],
        "peak_rss_mib": rss,
        "records": m.get("records"),
        "lines": m.get("lines"),
        "ingest_wall_s": m.get("wall_s"),
    }


_API_SCRIPT = """
import json, sys, time
t0 = time.perf_counter()
from stacklens.ingest.pipeline import ingest
t1 = time.perf_counter()
r = ingest([sys.argv[1]])
print(json.dumps({"import_s": t1 - t0, "ingest_s": r.wall_s, "lines": r.lines,
                  "records": r.events.height, "bytes": r.bytes}))
"""


def run_python_api(corpus: Path, timeout_s: float, native: bool | None = None) -> dict:
    wall, rss, cpu, code, out = run_measured(
        [sys.executable, "-c", _API_SCRIPT, str(corpus)], env=child_env(native), timeout_s=timeout_s
    )
    if code != 0:
        raise SystemExit(f"ingest_bench: the python-api run exited {code}")
    return {"wall_s": wall, "cpu_s": cpu, "peak_rss_mib": rss, **json.loads(out)}


# main ----------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--lines",
        type=int,
        default=5_000_000,
        help="minimum physical lines in the corpus (default 5,000,000)",
    )
    ap.add_argument("--repeat", type=int, default=3, help="runs of each contender (median)")
    ap.add_argument(
        "--corpus",
        type=Path,
        help="corpus folder: reused as is when not empty, else built there and kept",
    )
    ap.add_argument(
        "--keep",
        action="store_true",
        help="keep the temporary corpus and run folders (path printed on stderr)",
    )
    ap.add_argument(
        "--also-python-api",
        action="store_true",
        help="also time stacklens.ingest.pipeline.ingest() in-process, no writing",
    )
    ap.add_argument(
        "--native",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="force the native tokenizer on (--native) or off (--no-native) in the children "
        "(default: native when installed)",
    )
    ap.add_argument(
        "--timeout",
        type=float,
        default=3600.0,
        help="seconds before a child process is killed (default 3600)",
    )
    a = ap.parse_args(argv)
    if a.lines < 1 or a.repeat < 1:
        ap.error("--lines and --repeat must be >= 1")

    data = Path(os.environ.get("STACKLENS_DATA") or DEFAULT_DATA)
    work = Path(tempfile.mkdtemp(prefix="stacklens-bench-"))
    try:
        if a.corpus and a.corpus.is_dir() and any(a.corpus.iterdir()):
            corpus = a.corpus.resolve()
            log(f"reusing corpus {corpus}")
        else:
            if not data.is_dir():
                log(f"error: log data folder {data} not found (set STACKLENS_DATA)")
                return 1
            corpus = (a.corpus or work / "corpus").resolve()
            log(f"building a corpus of >= {a.lines:,} lines from {data} in {corpus}")
            t0 = time.perf_counter()
            build_corpus(data, corpus, a.lines)
            log(f"corpus built in {time.perf_counter() - t0:.1f} s")
        files, lines, size = corpus_files(corpus)
        log(f"corpus: {len(files):,} files, {lines:,} lines, {size / 2**20:,.0f} MiB")
        if lines < a.lines:
            log(f"warning: the reused corpus has fewer lines than --lines ({a.lines:,})")

        load_before = os.getloadavg()[0]
        gr: list[dict] = []
        sl: list[dict] = []
        api: list[dict] = []
        for i in range(a.repeat):
            g = run_grep(files, a.timeout)
            gr.append(g)
            log(f"run {i + 1}/{a.repeat} grep: {g['wall_s']:.2f} s ({g['lines']:,} lines)")
            if g["lines"] != lines:
                log(f"warning: grep counted {g['lines']:,} lines, the corpus count is {lines:,}")
            out = work / f"run-{i}"
            r = run_stacklens(corpus, out, a.timeout, a.native)
            sl.append(r)
            log(
                f"run {i + 1}/{a.repeat} stacklens ingest: {r['wall_s']:.2f} s "
                f"({r['cpu_s']:.1f} CPU s), "
                f"{r['peak_rss_mib']:,.0f} MiB peak, {r['records']:,} records"
            )
            if r["lines"] != lines:
                log(f"warning: stacklens counted {r['lines']:,} lines, corpus has {lines:,}")
            if not a.keep:
                shutil.rmtree(out, ignore_errors=True)
            if a.also_python_api:
                p = run_python_api(corpus, a.timeout, a.native)
                api.append(p)
                log(
                    f"run {i + 1}/{a.repeat} python api: {p['wall_s']:.2f} s "
                    f"(import {p['import_s']:.2f} s, ingest {p['ingest_s']:.2f} s)"
                )

        med = statistics.median
        gw = med(g["wall_s"] for g in gr)
        sw = med(r["wall_s"] for r in sl)
        grep_lps = lines / gw if gw else float("inf")
        sl_lps = lines / sw if sw else float("inf")
        result: dict = {
            "benchmark": "ingest",
            "lines": lines,
            "bytes": size,
            "files": len(files),
            "grep": {
                "wall_s": round(gw, 3),
                "lines_per_s": round(grep_lps),
                "cpu_s": round(med(g["cpu_s"] for g in gr), 3),
                "runs_wall_s": [round(g["wall_s"], 3) for g in gr],
            },
            "stacklens": {
                "native": native_used(a.native),
                "wall_s": round(sw, 3),
                "lines_per_s": round(sl_lps),
                "peak_rss_mib": round(max(r["peak_rss_mib"] for r in sl), 1),
                "records": sl[-1]["records"],
                "cpu_s": round(med(r["cpu_s"] for r in sl), 2),
                "cpu_user_s": round(med(r["cpu_user_s"] for r in sl), 2),
                "cpu_sys_s": round(med(r["cpu_sys_s"] for r in sl), 2),
                "ingest_wall_s": round(med(r["ingest_wall_s"] or 0.0 for r in sl), 3),
                "runs_wall_s": [round(r["wall_s"], 3) for r in sl],
            },
            "ratio_to_grep": round(sl_lps / grep_lps, 4),
            "target_lines_per_s": TARGET_LINES_PER_S,
            "goal_lines_per_s": GOAL_LINES_PER_S,
            "machine": {
                "cpus": os.cpu_count(),
                "python": platform.python_version(),
                "platform": platform.platform(),
                # other processes compete for the CPUs when this is near or above cpus
                "loadavg_1m": [round(load_before, 2), round(os.getloadavg()[0], 2)],
            },
        }
        if api:
            aw = med(p["wall_s"] for p in api)
            result["python_api"] = {
                "wall_s": round(aw, 3),
                "lines_per_s": round(lines / aw) if aw else None,
                "cpu_s": round(med(p["cpu_s"] for p in api), 2),
                "import_s": round(med(p["import_s"] for p in api), 3),
                "ingest_s": round(med(p["ingest_s"] for p in api), 3),
                "peak_rss_mib": round(max(p["peak_rss_mib"] for p in api), 1),
                "records": api[-1]["records"],
            }
        print(json.dumps(result, indent=2))
        return 0
    finally:
        if a.keep:
            log(f"kept {work}" + (f" and {a.corpus}" if a.corpus else ""))
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
