#!/usr/bin/env python3
"""Fuzz ingest with mutated real OpenStack log lines (a benchmark-style tool, not a test).

What it does
------------
1. Reads the real logs under ``<repo>/../shared/data/oslo-logs`` (``--data`` overrides; ``.gz``
   files gunzipped) and keeps, per source file, its lines and its relative path (so host,
   service and format detection see what they see on real dumps).
2. Writes ``--lines`` physical lines in total (default 200,000; the issue-15 run used 1,000,000)
   into batches of mutated files under a temporary folder. Each output file is a random slice of
   one source file, each line mutated with probability ``--rate`` by one of:

   * ``bitflip``  1-3 random bits flipped (may create or destroy line ends, NULs, bad UTF-8);
   * ``truncate`` the line cut at a random byte (mid-UTF-8, mid-timestamp, mid-context);
   * ``extreme``  a field replaced by an extreme value: timestamps out of the ``datetime[ns]``
     range (0001, 1677, 2262, 9999), impossible dates (day 99, Feb 30, hour 99), 20-digit
     fractions and PIDs, ``time: 1e19`` / ``nan`` / ``-inf`` in access lines, 1000-char request
     ids, a 100 kB line, surrogate / BOM / U+2028 bytes, control characters;
   * ``random``   the line replaced by 0-200 random bytes.

   About 5 % of the files are written gzipped (a few of them cut short).
3. Runs ``stacklens.ingest.pipeline.ingest`` on every batch in a child process, once per
   tokenizer path (``STACKLENS_NATIVE=0`` Polars, ``=1`` native when installed), at nice 10 and
   with one worker, and checks:

   * no traceback and no crash (a child killed by a signal counts as a crash);
   * every physical line is accounted for: per recognized file, ``events.n_lines`` +
     quarantined + ``blank_line`` + ``shell_trace`` == physical lines == the ``format`` stat;
     per skipped file, its ``unrecognized_file`` / ``merged_output_skipped`` count; per gzip
     file the lines of what could be decompressed.

   With ``--analyze`` each batch is also traced, analyzed and reported (HTML included) in the
   child; a traceback there counts too, with its stage.

   A batch that crashes is kept (``--keep-crashes DIR``, default a temp folder) as reproducer.

Output: one JSON object on stdout (counts per path, crash sites, accounting mismatches);
progress on stderr. Usage::

    python bench/fuzz_ingest.py [--lines N] [--batch-lines N] [--rate P] [--seed S]
                                [--data DIR] [--paths 0,1] [--keep-crashes DIR] [--analyze]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO.parent / "shared" / "data" / "oslo-logs"
_SKIP_NAMES = (".csv", ".tsv", ".md", ".txt.csv")
_MAX_SOURCE_LINES = 200_000  # per source file: enough variety, bounded memory

EXTREME_TIMES = [
    b"0001-01-01 00:00:00.000", b"1677-09-21 00:12:43.145", b"1677-09-21 00:12:43.144",
    b"1600-01-01 00:00:00.000", b"2262-04-11 23:47:16.854", b"2262-04-11 23:47:16.855",
    b"9999-12-31 23:59:59.999", b"2016-02-30 13:56:12.360", b"2016-06-99 13:56:12.360",
    b"2016-13-45 99:99:99.000", b"2016-06-28 24:00:00.000", b"2016-06-28 13:56:60.000",
    b"2016-06-28 13:56:12.99999999999999999999", b"0000-00-00 00:00:00.000",
    b"2016-06-28 13:56:12,360", b"-001-06-28 13:56:12.360",
]
EXTREME_SYSDATES = [b"Feb 30 99:99:99", b"Jan 00 00:00:00", b"Dec 31 23:59:59.99999999999999"]
EXTREME_BITS = [
    b" time: 1e19", b" time: -1e308", b" time: nan", b" time: inf", b" time: 1e400",
    b" status: 99999999999999999999 len: -1 time: 0.1", b" len: 18446744073709551616",
    b" 99999999999999999999 ", b" -1 ", b" [req-" + b"f" * 1000 + b" a b] ",
    b" [instance: " + b"0" * 500 + b"] ", b"\xed\xa0\x80", b"\xef\xbb\xbf", b"\xe2\x80\xa8",
    b"\x00", b"\x1f", b"\r", b"\x0b\x0c", b"\xff\xfe", b"\xc0\x80", b"%s%n%x", b"{{(pid=1) }}",
    b" TRACE ", b"Traceback (most recent call last):",
]


def log(msg: str) -> None:
    print(f"[fuzz_ingest] {msg}", file=sys.stderr, flush=True)


def load_sources(data: Path) -> list[tuple[str, list[bytes]]]:
    """(relative path, lines) of every readable source file with at least 10 lines."""
    out = []
    for p in sorted(data.rglob("*")):
        if not p.is_file() or p.name.endswith(_SKIP_NAMES):
            continue
        raw = p.read_bytes()
        if raw[:2] == b"\x1f\x8b":
            try:
                raw = gzip.decompress(raw)
            except (OSError, EOFError):
                continue
        lines = raw.split(b"\n")[:_MAX_SOURCE_LINES]
        if len(lines) >= 10:
            rel = str(p.relative_to(data))
            out.append((rel[:-3] if rel.endswith(".gz") else rel, lines))
    return out


def mutate(line: bytes, rnd: random.Random) -> tuple[bytes, str]:
    """One mutation of ``line``: (new bytes, mutation name)."""
    kind = rnd.choices(["bitflip", "truncate", "extreme", "random"], [4, 2, 4, 1])[0]
    if kind == "bitflip" and line:
        b = bytearray(line)
        for _ in range(rnd.randint(1, 3)):
            i = rnd.randrange(len(b))
            b[i] ^= 1 << rnd.randrange(8)
        return bytes(b), kind
    if kind == "truncate" and line:
        return line[: rnd.randrange(len(line))], kind
    if kind == "random" or not line:
        return rnd.randbytes(rnd.randint(0, 200)), "random"
    r = rnd.random()
    if r < 0.4 and len(line) > 23 and line[:2] in (b"19", b"20"):
        return rnd.choice(EXTREME_TIMES) + line[23:], "extreme"
    if r < 0.5 and len(line) > 15 and line[:3].isalpha():
        return rnd.choice(EXTREME_SYSDATES) + line[15:], "extreme"
    if r < 0.55:
        return line + b" " + b"x" * 100_000, "extreme"
    i = rnd.randrange(len(line) + 1)
    return line[:i] + rnd.choice(EXTREME_BITS) + line[i:], "extreme"


def physical_lines(data: bytes) -> int:
    """stacklens' (and ``grep -c ''``'s) line count: newlines, plus an unterminated last line."""
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def write_batch(folder: Path, sources, n_lines: int, rate: float, rnd: random.Random,
                serial: int) -> tuple[int, dict[str, int], dict[str, int]]:
    """Write about ``n_lines`` mutated lines as files under ``folder``; returns (physical lines,
    {file: physical lines, for files the reader sees as plain text or intact gzip}, mutation
    counts)."""
    total = 0
    expect: dict[str, int] = {}
    muts: dict[str, int] = {}
    while total < n_lines:
        rel, lines = rnd.choice(sources)
        k = min(len(lines), rnd.randint(200, 20_000), n_lines - total + 1)
        start = rnd.randrange(0, len(lines) - k + 1)
        out = []
        for ln in lines[start : start + k]:
            if rnd.random() < rate:
                ln, m = mutate(ln, rnd)
                muts[m] = muts.get(m, 0) + 1
            out.append(ln)
        data = b"\n".join(out) + (b"\n" if rnd.random() < 0.9 else b"")
        serial += 1
        path = folder / f"f{serial:05d}" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        n = physical_lines(data)
        total += n
        if rnd.random() < 0.05:
            gz = gzip.compress(data, 1)
            if rnd.random() < 0.3:
                gz = gz[: rnd.randrange(10, len(gz))]  # truncated: counted as data_loss
                muts["gzip_cut"] = muts.get("gzip_cut", 0) + 1
            else:
                expect[str(path) + ".gz"] = n
            path = path.with_name(path.name + ".gz")
            path.write_bytes(gz)
        else:
            path.write_bytes(data)
            expect[str(path)] = n
    return total, expect, muts


# --- the child: ingest one batch, print what was accounted per file --------------------------

CHILD = r"""
import json, sys, traceback
import polars as pl
try:
    from stacklens.ingest.pipeline import ingest
    from stacklens.ingest import tokenize
    res = ingest([sys.argv[1]], workers=1)
    st = res.ingest_stats
    acc = {}
    for f, kind, c in st.select("file", "kind", "count").iter_rows():
        d = acc.setdefault(f, {})
        d[kind] = d.get(kind, 0) + c
    ev = res.events.group_by("file").agg(pl.col("n_lines").cast(pl.Int64).sum())
    for f, n in ev.iter_rows():
        acc.setdefault(f, {})["_events"] = n
    for f, n in res.quarantine.group_by("file").len().iter_rows():
        acc.setdefault(f, {})["_quarantine"] = n
    out = {"ok": True, "native": tokenize.native_wanted(), "acc": acc,
           "events": res.events.height, "quarantine": res.quarantine.height}
    if len(sys.argv) > 2:  # --analyze: trace, analyze and report too, into a scratch run folder
        stage = "trace"
        try:
            from stacklens.pipeline import report_step, trace_step
            from stacklens.store import RunStore
            store = RunStore(sys.argv[2])
            store.write({"events": res.events, "ingest_stats": st, "quarantine": res.quarantine})
            trace_step(store)
            stage = "report"
            report_step(store)
        except BaseException as e:
            tb = traceback.extract_tb(e.__traceback__)
            site = next((f"{fr.filename}:{fr.lineno} {fr.name}" for fr in reversed(tb)
                         if "stacklens" in fr.filename), "?")
            out.update(ok=False, error=f"{stage}: {type(e).__name__}: {str(e)[:300]}",
                       site=site, traceback=traceback.format_exc()[-4000:])
    print(json.dumps(out))
except BaseException as e:
    tb = traceback.extract_tb(e.__traceback__)
    site = next((f"{fr.filename}:{fr.lineno} {fr.name}" for fr in reversed(tb)
                 if "stacklens" in fr.filename), f"{tb[-1].filename}:{tb[-1].lineno}" if tb else "?")
    print(json.dumps({"ok": False, "error": f"{type(e).__name__}: {str(e)[:300]}", "site": site,
                      "traceback": traceback.format_exc()[-4000:]}))
"""


def check(acc: dict, expect: dict[str, int]) -> list[str]:
    """Accounting problems of one batch (empty when every line is accounted for)."""
    bad = []
    for f, n in expect.items():
        a = acc.get(f)
        if a is None:
            bad.append(f"{f}: not in ingest_stats")
            continue
        if "format" in a:
            got = a.get("_events", 0) + a.get("_quarantine", 0) + a.get("blank_line", 0) \
                + a.get("shell_trace", 0)
            if not (got == n == a["format"]):
                bad.append(f"{f}: {got} accounted, format stat {a['format']}, {n} lines")
        else:
            skipped = a.get("unrecognized_file", 0) + a.get("merged_output_skipped", 0)
            if skipped != n:
                bad.append(f"{f}: skipped count {skipped} != {n} lines ({a})")
    return bad


def run_child(folder: Path, native: str, timeout_s: float, analyze: bool = False) -> dict:
    env = {**os.environ, "STACKLENS_NATIVE": native, "PYTHONPATH": str(REPO),
           "POLARS_MAX_THREADS": "1", "RAYON_NUM_THREADS": "1"}
    try:
        extra = [str(folder.parent / f"{folder.name}-run{native}")] if analyze else []
        p = subprocess.run([sys.executable, "-c", CHILD, str(folder), *extra], capture_output=True,
                           text=True, env=env, timeout=timeout_s,
                           preexec_fn=lambda: os.nice(10))
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"timeout after {timeout_s} s", "site": "timeout"}
    if p.returncode != 0 or not p.stdout.strip():
        return {"ok": False, "error": f"child exit {p.returncode}", "site": f"exit {p.returncode}",
                "traceback": p.stderr[-4000:]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=200_000, help="physical lines in total")
    ap.add_argument("--batch-lines", type=int, default=100_000)
    ap.add_argument("--rate", type=float, default=0.3, help="share of lines mutated")
    ap.add_argument("--seed", type=int, default=15)
    env_data = os.environ.get("STACKLENS_DATA")
    ap.add_argument("--data", type=Path,
                    default=Path(env_data) / "oslo-logs" if env_data else DEFAULT_DATA)
    ap.add_argument("--paths", default="0,1", help="STACKLENS_NATIVE values to run")
    ap.add_argument("--keep-crashes", type=Path, default=None)
    ap.add_argument("--timeout-s", type=float, default=600.0, help="per batch and path")
    ap.add_argument("--analyze", action="store_true",
                    help="also trace, analyze and report each batch (tracebacks there count)")
    a = ap.parse_args(argv)
    if not a.data.exists():
        log(f"no real logs at {a.data}: nothing to mutate")
        return 2
    t0 = time.perf_counter()
    rnd = random.Random(a.seed)
    sources = load_sources(a.data)
    log(f"{len(sources)} source files from {a.data}")
    keep = a.keep_crashes or Path(tempfile.mkdtemp(prefix="fuzz-crashes-"))
    paths = a.paths.split(",")
    try:
        from stacklens.ingest import tokenize  # noqa: F401
        native_ok = tokenize.native_available()
    except ImportError:
        native_ok = False
    if "1" in paths and not native_ok:
        log("native tokenizer not installed: its runs fall back to Polars (reported)")
    res: dict = {"lines": 0, "files": 0, "batches": 0, "mutations": {}, "seed": a.seed,
                 "rate": a.rate, "paths": {p: {"tracebacks": 0, "crash_sites": {},
                                                "unaccounted_files": 0, "examples": [],
                                                "events": 0, "quarantine": 0, "native": None}
                                            for p in paths},
                 "reproducers": []}
    serial = 0
    work = Path(tempfile.mkdtemp(prefix="fuzz-ingest-"))
    try:
        while res["lines"] < a.lines:
            folder = work / f"b{res['batches']:04d}"
            n, expect, muts = write_batch(folder, sources, min(a.batch_lines, a.lines - res["lines"]),
                                          a.rate, rnd, serial)
            serial += len(expect) + 1000
            res["lines"] += n
            res["files"] += sum(1 for _ in folder.rglob("*") if _.is_file())
            res["batches"] += 1
            for k, v in muts.items():
                res["mutations"][k] = res["mutations"].get(k, 0) + v
            crashed = False
            for p in paths:
                tc = time.perf_counter()
                out = run_child(folder, p, a.timeout_s, a.analyze)
                r = res["paths"][p]
                r["child_s"] = round(r.get("child_s", 0.0) + time.perf_counter() - tc, 1)
                if not out["ok"] and "acc" in out:  # ingest passed, a later stage failed
                    r["events"] += out["events"]
                    r["quarantine"] += out["quarantine"]
                    bad = check(out["acc"], expect)
                    r["unaccounted_files"] += len(bad)
                if not out["ok"]:
                    r["tracebacks"] += 1
                    r["crash_sites"][out["site"]] = r["crash_sites"].get(out["site"], 0) + 1
                    r["examples"].append({"error": out["error"], "site": out["site"],
                                          "traceback": out.get("traceback", "")[-1500:]})
                    crashed = True
                    continue
                r["native"] = out["native"]
                r["events"] += out["events"]
                r["quarantine"] += out["quarantine"]
                bad = check(out["acc"], expect)
                r["unaccounted_files"] += len(bad)
                r["examples"] += [{"unaccounted": b} for b in bad[:3]]
            if crashed:
                dst = keep / folder.name
                shutil.copytree(folder, dst)
                res["reproducers"].append(str(dst))
            shutil.rmtree(folder)
            for p in paths:
                shutil.rmtree(folder.parent / f"{folder.name}-run{p}", ignore_errors=True)
            log(f"batch {res['batches']}: {res['lines']:,} lines; "
                + ", ".join(f"path {p}: {v['tracebacks']} tracebacks, {v['unaccounted_files']} "
                            f"unaccounted files" for p, v in res["paths"].items()))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    res["wall_s"] = round(time.perf_counter() - t0, 1)
    for v in res["paths"].values():
        v["examples"] = v["examples"][:10]
    print(json.dumps(res, indent=2))
    return 0 if all(v["tracebacks"] == 0 and v["unaccounted_files"] == 0
                    for v in res["paths"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
