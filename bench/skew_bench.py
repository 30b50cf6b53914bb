"""Clock-skew recovery on the real osp7 logs: shift each host's clock, estimate, compare.

Reads ``oslo-logs/oslogmerger-osp7-router`` (three hosts: controller1, networker2,
networker3) from the shared data folder (``<repo>/../shared/data``; ``$STACKLENS_DATA`` may
name that folder or its ``oslo-logs/`` folder), ingests it with
``stacklens.ingest.pipeline.ingest`` and, for each scope (``all_history``: every event;
``debug_window``: from 2016-01-29 15:38, the DEBUG capture) and each seed:

1. estimates the offsets on the unshifted events (the logs' own skew, unknown truth);
2. adds a random shift in [-2, 2] s to each host's ``ts_ns`` (``random.Random(seed)``);
3. estimates again with the same reference host.

Each scope is run twice: with every event, and ``no_rpc`` (oslo.messaging records removed, so
only the pair kinds that need no RPC DEBUG ids remain: HTTP request ids, request origins,
scheduling order). ``--lab DIR`` adds the same test on a lab run (``DIR/logs/<host>/...``):
the records of a 30 s window are copied with each compute host's timestamps moved by a
known amount (the lab's hosts share one real clock, so the truth is exact).

A host's recovered shift is ``offset_unshifted - offset_shifted``; its truth is
``shift[host] - shift[reference]``; ``error_ms`` their difference, ``uncertainty_ms`` the
half-width of the shifted estimate's feasible interval. Comparing differences removes the
real skew already in the logs, so the error measures the method, not the data.

Prints one JSON object (see bench/README.md); progress on stderr. Exits 1 if the data
folder is absent.

Where only one bound exists (``lower_only``/``upper_only``), ``bound_shift_ms`` gives how far
that bound moved (it must equal the truth) and the offset stays unknown.

Usage: ``python bench/skew_bench.py [--seeds 5] [--lab /work/artifacts/labrun]``
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

import polars as pl

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(REPO))

from stacklens.ingest.pipeline import ingest  # noqa: E402
from stacklens.trace.skew import causal_constraints, estimate_offsets  # noqa: E402

CAPTURE = "oslogmerger-osp7-router"
WINDOW_NS = 1_454_081_880_000_000_000  # 2016-01-29 15:38:00, local time as ingested
SHIFT_S = 2.0


def log(msg: str) -> None:
    print(f"skew_bench: {msg}", file=sys.stderr, flush=True)


def capture_dir() -> Path:
    """The osp7 capture under ``$STACKLENS_DATA`` (data folder or its oslo-logs/) or the
    default ``<repo>/../shared/data``."""
    root = Path(os.environ.get("STACKLENS_DATA") or REPO.parent / "shared" / "data")
    for cand in (root / "oslo-logs" / CAPTURE, root / CAPTURE):
        if cand.is_dir():
            return cand
    return root / "oslo-logs" / CAPTURE


def shifted(ev: pl.DataFrame, shift_s: dict[str, float]) -> pl.DataFrame:
    by = pl.DataFrame({"host": list(shift_s), "_d": [round(v * 1e9) for v in shift_s.values()]})
    return (
        ev.join(by, on="host", how="left", maintain_order="left")
        .with_columns(ts_ns=pl.col("ts_ns") + pl.col("_d").fill_null(0))
        .drop("_d")
    )


def ms(x: float | None) -> float | None:
    return None if x is None else round(x * 1000, 3)


def scope(ev: pl.DataFrame, hosts: list[str], seeds: list[int]) -> dict[str, Any]:
    """Constraints, the logs' own skew, and shift-and-recover runs for one set of events."""
    t0 = time.perf_counter()
    cons = causal_constraints(ev)
    t1 = time.perf_counter()
    base = estimate_offsets(cons, hosts)
    t2 = time.perf_counter()
    pairs = (
        cons.group_by("src_host", "dst_host", "kind")
        .agg(n=pl.len(), violated_raw=(pl.col("lower_s") > 0).sum())
        .sort("src_host", "dst_host", "kind")
    )
    runs: list[dict[str, Any]] = []
    errors: list[float] = []
    for seed in seeds:
        rng = random.Random(seed)
        shift = {h: rng.uniform(-SHIFT_S, SHIFT_S) for h in hosts}
        res = estimate_offsets(causal_constraints(shifted(ev, shift)), hosts, base.reference)
        b = {r["host"]: r for r in base.offsets.iter_rows(named=True)}
        rows = []
        for r in res.offsets.iter_rows(named=True):
            h, ref = r["host"], base.reference
            assert ref is not None  # estimate_offsets sets it whenever there are hosts (rows)
            truth = shift[h] - shift[ref]
            rec = bound = None
            if r["offset_s"] is not None and b[h]["offset_s"] is not None:
                rec = b[h]["offset_s"] - r["offset_s"]
                errors.append(abs(rec - truth) * 1000)
            for k in ("lo_s", "hi_s"):
                if rec is None and bound is None and r[k] is not None and b[h][k] is not None:
                    bound = b[h][k] - r[k]
            rows.append(
                {
                    "host": h,
                    "status": r["status"],
                    "true_shift_ms": ms(truth),
                    "recovered_ms": ms(rec),
                    "error_ms": None if rec is None else round((rec - truth) * 1000, 6) + 0.0,
                    "bound_shift_ms": ms(bound),
                    "uncertainty_ms": ms(r["uncertainty_s"]),
                    "constraints": r["n_constraints"],
                }
            )
        runs.append(
            {
                "seed": seed,
                "reference": res.reference,
                "violations_before": res.violations_before,
                "violations_after": res.violations_after,
                "dropped": res.dropped.height,
                "hosts": rows,
            }
        )
    return {
        "events": ev.height,
        "constraints": cons.height,
        "constraints_by_pair": pairs.to_dicts(),
        "seconds": {"constraints": round(t1 - t0, 3), "estimate": round(t2 - t1, 4)},
        "logged_skew": {
            "reference": base.reference,
            "violations_before": base.violations_before,
            "violations_after": base.violations_after,
            "dropped": base.dropped.height,
            "hosts": [
                {
                    (k[:-2] + "_ms" if k.endswith("_s") else k): (ms(v) if k.endswith("_s") else v)
                    for k, v in r.items()
                }
                for r in base.offsets.iter_rows(named=True)
            ],
        },
        "runs": runs,
        "mean_abs_error_ms": round(sum(errors) / len(errors), 6) if errors else None,
        "max_abs_error_ms": round(max(errors), 6) if errors else None,
        "max_uncertainty_ms": max(
            (h["uncertainty_ms"] for r in runs for h in r["hosts"] if h["uncertainty_ms"]),
            default=None,
        ),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=5, help="runs per scope (seeds 1..N)")
    ap.add_argument("--lab", help="a lab run folder (with logs/<host>/var/log/...)")
    a = ap.parse_args(argv)
    path = capture_dir()
    if not path.is_dir():
        log(f"data not found: {path} (set STACKLENS_DATA to the shared data folder)")
        return 1
    log(f"ingesting {path}")
    t0 = time.perf_counter()
    ev = ingest([str(path)]).events
    ingest_s = time.perf_counter() - t0
    hosts = sorted(ev["host"].drop_nulls().unique())
    seeds = list(range(1, a.seeds + 1))
    out: dict = {"capture": CAPTURE, "hosts": hosts, "shift_range_s": [-SHIFT_S, SHIFT_S]}
    out["ingest_s"] = round(ingest_s, 2)
    for name, part in (
        ("all_history", ev),
        ("debug_window", ev.filter(pl.col("ts_ns") >= WINDOW_NS)),
    ):
        for tag, e in (("", part), ("_no_rpc", no_rpc(part))):
            log(f"{name}{tag}: {e.height:,} events, {len(seeds)} seeds")
            out[name + tag] = scope(e, hosts, seeds)
    if a.lab:
        out["lab"] = lab(Path(a.lab))
    print(json.dumps(out))
    return 0


def no_rpc(ev: pl.DataFrame) -> pl.DataFrame:
    """``ev`` without oslo.messaging's records (its DEBUG lines carry the RPC ids)."""
    lg = pl.col("logger").fill_null("")
    return ev.filter(
        pl.col("rpc_kind").is_null()
        & ~lg.str.starts_with("oslo_messaging")
        & ~lg.str.starts_with("oslo.messaging")
    )


LAB_SHIFT_S = {"fake-3": 0.8374, "fake-10": -1.2519, "fake-7": 0.0421}
LAB_WINDOW = (b"23:24:40", b"23:25:10")


def lab(run: Path) -> dict:
    """Shift-and-recover on a lab run: controller's nova/placement logs and three computes,
    one 30 s window copied to a temporary folder with the computes' clocks moved."""
    import datetime as dt
    import re
    import tempfile

    ts = re.compile(rb"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3})")
    files = [
        "controller/var/log/nova/nova-api.log",
        "controller/var/log/nova/nova-conductor.log",
        "controller/var/log/nova/nova-scheduler.log",
        "controller/var/log/placement/placement-api.log",
    ] + [f"{h}/var/log/nova/nova-compute.log" for h in LAB_SHIFT_S]
    with tempfile.TemporaryDirectory() as tmp:
        for rel in files:
            shift = LAB_SHIFT_S.get(rel.split("/")[0], 0.0)
            out, keep = [], False
            with (run / "logs" / rel).open("rb") as f:
                for line in f:
                    m = ts.match(line)
                    if m:
                        keep = LAB_WINDOW[0] <= m.group(1)[11:] < LAB_WINDOW[1]
                        if keep and shift:
                            t = dt.datetime.strptime(m.group(1).decode(), "%Y-%m-%d %H:%M:%S.%f")
                            t += dt.timedelta(milliseconds=round(shift * 1000))
                            stamp = t.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3].encode()
                            line = stamp + line[m.end() :]
                    if keep:
                        out.append(line)
            dst = Path(tmp) / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_bytes(b"".join(out))
        ev = ingest([tmp]).events
    res: dict = {"window_utc": [w.decode() for w in LAB_WINDOW], "events": ev.height}
    for tag, e in (("all", ev), ("no_rpc", no_rpc(ev))):
        cons = causal_constraints(e)
        est = estimate_offsets(cons, reference="controller")
        rows = []
        for r in est.offsets.iter_rows(named=True):
            truth = -LAB_SHIFT_S.get(r["host"], 0.0)
            rows.append(
                {
                    "host": r["host"],
                    "status": r["status"],
                    "true_offset_ms": ms(truth),
                    "recovered_ms": ms(r["offset_s"]),
                    "error_ms": None
                    if r["offset_s"] is None
                    else round((r["offset_s"] - truth) * 1000, 3),
                    "uncertainty_ms": ms(r["uncertainty_s"]),
                    "lo_ms": ms(r["lo_s"]),
                    "hi_ms": ms(r["hi_s"]),
                    "constraints": r["n_constraints"],
                }
            )
        kinds = cons.group_by("kind").len().sort("kind")
        res[tag] = {"constraints_by_kind": dict(kinds.iter_rows()), "hosts": rows}
    return res


if __name__ == "__main__":
    sys.exit(main())
