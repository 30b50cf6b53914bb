"""Read what a comparison needs from one run folder: samples, counts and metadata.

A run is any folder :class:`stacklens.store.RunStore` reads: measured (``stacklens analyze`` /
``run``), imported OSProfiler traces or an imported Rally task (:mod:`stacklens.imports`).

* server view, from ``traces`` (operation, dur_s, outcome, http_status, start_ns, end_ns) and
  ``breakdown`` (trace_id, component, dur_s): *requests* are traces with ``http_status`` not
  null, as in :mod:`stacklens.analyze.queries`; a run imported from OSProfiler (manifest
  ``run.source == "osprofiler"``) has no HTTP status at all, so there every trace is a request;
  a ``stacklens run`` folder (manifest ``run.started_ns``/``ended_ns``) keeps only the requests
  that started within the run, :data:`WINDOW_MARGIN_NS` either side: its logs are read with a
  60 s margin, which holds the previous run's last requests when two runs follow each other;
* client view, from ``requests`` (scenario, outcome, create_s, delete_s, submit_ns, gone_ns)
  when the table exists (``stacklens run``, Rally imports);
* metadata, from the manifest and the tables: stacklens version, scenario, inputs, hosts
  (``spans.host`` / ``events.host``, else the run section's ``hosts``), service versions and
  captured config files when the run section carries them (``run.service_versions``:
  ``{service: version}``; ``run.config_files``: ``{path: sha256}``, as
  :func:`stacklens.drive.capture.capture` writes them) or a ``<run>/config/`` folder holds (INI
  files option by option, so a changed ``[filter_scheduler] host_subset_size`` shows as itself;
  a file whose options are read is not listed again by its hash).
"""

from __future__ import annotations

import configparser
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from stacklens.errors import InputNotFound, StoreError
from stacklens.store import RunStore
from stacklens.vocab import DONE_OUTCOMES

__all__ = [
    "RunData",
    "WINDOW_MARGIN_NS",
    "load_run",
]

#: Requests of a ``stacklens run`` folder count when they start at most this long (ns) before
#: the run's first request or after its end (clock correction leaves milliseconds on the lab).
WINDOW_MARGIN_NS = 5_000_000_000


@dataclass(frozen=True)
class RunData:
    """One run as the comparison sees it.

    ``traces``: requests only, columns ``trace_id, operation, dur_s (s), outcome, start_ns,
    end_ns``; ``breakdown``: ``trace_id, operation, component, dur_s (s)`` for successful
    requests (every component of the operation, 0.0 where a trace did not visit it, as the
    report's ``components`` query); ``client``: ``scenario, outcome, create_s, delete_s,
    submit_ns, end_ns`` or None; ``meta``: flat ``{key: value}`` of what describes the run.
    """

    name: str
    path: Path
    traces: pl.DataFrame
    breakdown: pl.DataFrame
    client: pl.DataFrame | None
    meta: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _hosts(store: RunStore) -> list[str]:
    for table in ("spans", "events"):
        if store.has(table):
            df = pl.read_parquet(store.tables_dir / f"{table}.parquet", columns=["host"])
            return sorted(h for h in df["host"].unique().to_list() if h)
    return []


def _config_options(path: Path) -> dict[str, str]:
    """What a run captured under ``<run>/config/``: ``{"<file> [section] option": value}`` for
    INI files (``*.conf``, ``*.ini``: oslo.config's format), ``{"<file>": sha256[:16]}`` for
    other files. At most 1000 files of 4 MiB each are read."""
    root = path / "config"
    if not root.is_dir():
        return {}
    out: dict[str, str] = {}
    for p in sorted(root.rglob("*"))[:1000]:
        if not p.is_file() or p.stat().st_size > 4 << 20:
            continue
        rel = str(p.relative_to(root))
        data = p.read_bytes()
        if p.suffix in (".conf", ".ini"):
            cp = configparser.ConfigParser(interpolation=None, strict=False)
            try:
                cp.read_string(data.decode("utf-8", "replace"), source=rel)
            except configparser.Error:
                out[rel] = hashlib.sha256(data).hexdigest()[:16]
                continue
            for opt, val in cp.defaults().items():
                out[f"{rel} [DEFAULT] {opt}"] = val
            for sec in cp.sections():
                for opt, val in cp.items(sec, raw=True):
                    if opt not in cp.defaults() or cp.defaults()[opt] != val:
                        out[f"{rel} [{sec}] {opt}"] = val
        else:
            out[rel] = hashlib.sha256(data).hexdigest()[:16]
    return out


def _meta(store: RunStore) -> dict[str, Any]:
    m = store.read_manifest()
    run = m.run or {}
    scenario = run.get("scenario")
    if isinstance(scenario, dict):
        scenario = scenario.get("name") or json.dumps(scenario, sort_keys=True)[:200]
    meta: dict[str, Any] = {
        "stacklens_version": m.stacklens_version or None,
        "source": run.get("source") or ("stacklens run" if run else "logs"),
        "scenario": scenario,
        "inputs": ", ".join(m.inputs or run.get("inputs") or []) or None,
        "hosts": _hosts(store) or sorted(str(h) for h in run.get("hosts") or []),
    }
    meta["node_count"] = len(meta["hosts"])
    for k, v in sorted((run.get("service_versions") or {}).items()):
        meta[f"version:{k}"] = v
    options = _config_options(store.path)
    read = {k.split(" [", 1)[0] for k in options}
    configs = {k: v for k, v in (run.get("config_files") or {}).items() if k not in read}
    configs.update(options)
    for k, v in sorted(configs.items()):
        meta[f"config:{k}"] = v
    return meta


def load_run(path: str | Path, name: str | None = None) -> RunData:
    """Read run folder ``path`` for comparison.

    Raises :class:`~stacklens.errors.InputNotFound` when the folder does not exist and
    :class:`~stacklens.errors.StoreError` when it has neither ``traces`` nor ``requests``.
    """
    p = Path(path)
    if not p.is_dir():
        raise InputNotFound(f"run folder {p} does not exist")
    store = RunStore(p)
    has_traces, has_requests = store.has("traces"), store.has("requests")
    if not has_traces and not has_requests:
        raise StoreError(f"{p} has neither a traces nor a requests table: analyze or import "
                         "it first (stacklens analyze / stacklens import)")
    meta = _meta(store)
    notes: list[str] = []
    traces = pl.DataFrame(schema={"trace_id": pl.String, "operation": pl.String,
                                  "dur_s": pl.Float64, "outcome": pl.String,
                                  "start_ns": pl.Int64, "end_ns": pl.Int64})
    breakdown = pl.DataFrame(schema={"trace_id": pl.String, "operation": pl.String,
                                     "component": pl.String, "dur_s": pl.Float64})
    if has_traces:
        t = store.read("traces")
        if meta["source"] == "osprofiler":
            notes.append("OSProfiler traces carry no HTTP status: every trace counts as a request")
        else:
            t = t.filter(pl.col("http_status").is_not_null())
        run = store.read_manifest().run or {}
        lo, hi = run.get("started_ns"), run.get("ended_ns")
        if isinstance(lo, int) and isinstance(hi, int) and t.height:
            inside = t.filter(pl.col("start_ns").is_between(lo - WINDOW_MARGIN_NS,
                                                            hi + WINDOW_MARGIN_NS))
            if inside.height < t.height:
                notes.append(f"{t.height - inside.height} requests outside the run's window "
                             "(its logs' margin) left out")
            t = inside
        traces = t.select(traces.columns)
        if store.has("breakdown"):
            ok = traces.filter(pl.col("outcome").is_in(list(DONE_OUTCOMES)))
            b = store.read("breakdown").join(ok.select("trace_id", "operation"), on="trace_id")
            comps = b.select("operation", "component").unique()
            grid = ok.select("trace_id", "operation").join(comps, on="operation")
            breakdown = grid.join(b.select("trace_id", "component", "dur_s"),
                                  on=["trace_id", "component"], how="left").with_columns(
                pl.col("dur_s").fill_null(0.0)).select(breakdown.columns)
    client = None
    if has_requests:
        r = store.read("requests")
        if r.height:
            client = r.select(
                pl.col("scenario").fill_null("(none)"), "outcome", "create_s", "delete_s",
                "submit_ns", pl.coalesce("gone_ns", "active_ns", "accepted_ns").alias("end_ns"))
    if traces.height == 0:
        notes.append("no server-side requests (e.g. an imported load-test task): only the "
                     "client view can be compared" if client is not None else
                     "no requests at all: nothing to compare")
    return RunData(name=name or p.name, path=p, traces=traces, breakdown=breakdown,
                   client=client, meta=meta, notes=notes)
