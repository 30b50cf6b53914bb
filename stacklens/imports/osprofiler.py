"""OSProfiler traces -> the canonical ``spans``, ``flows``, ``traces`` and ``breakdown`` tables.

Input shapes (read from OSProfiler's source, ``osprofiler/drivers/*.py``):

* **the report tree** that ``osprofiler trace show --json`` prints, the same for every driver
  that stores points (ceilometer, messaging, mongodb, redis, elasticsearch, sqlalchemy,
  loginsight: all go through ``Driver._append_results`` / ``_parse_results``)::

      {"info": {"name": "total", "started": 0, "finished": <ms>, ...},
       "children": [{"trace_id", "parent_id", "info": {"name", "project", "service", "host",
                      "started": <ms>, "finished": <ms>, "exception"?: <etype or "None">,
                      "meta.raw_payload.<name>-start": <point>,
                      "meta.raw_payload.<name>-stop": <point>},
                     "children": [...]}],
       "stats"?: {...}}

  where a *point* is the notification as sent: ``{"name": "<name>-start", "base_id",
  "trace_id", "parent_id", "timestamp": "%Y-%m-%dT%H:%M:%S.%f" (UTC), "project", "service",
  "info": {...}}``; a stop point's ``info`` carries ``etype`` / ``message`` on an exception.
  Liberty (the shared perfdocs traces) has no ``stats`` / ``exception``; glance's db points put
  ``db.statement`` at the top of ``info`` instead of under ``db``;
* **a list of raw points** (what the drivers store, e.g. a sqlalchemy ``data`` table or a
  mongodb collection dumped as JSON): paired here by ``trace_id``, start with stop.

Mapping: one OSProfiler trace point (start/stop pair) = one span (``span_id`` = its
``trace_id``, ``parent_span_id`` = its ``parent_id`` when that is a point of the file).
Each top-level point (usually a ``wsgi`` request the client made) is a trace, keyed by its span
id; ``request_id`` = the OSProfiler ``base_id`` the client saw. ``service`` names the process
as stacklens does (``nova-api`` for nova's ``osapi_compute``, ``keystone``, ``glance-api``,
``neutron-server``, ``nova-conductor``). Flows: a child in another service than its parent is a
hop: ``http`` to a ``wsgi`` point, ``rpc_call`` to an ``rpc`` point that ends before its
parent, ``rpc_cast`` otherwise. Outcome: ``failed`` when a point of the trace recorded an
exception, else ``success``; OSProfiler records no HTTP status (``http_status`` null).
Breakdown: each instant of a trace goes to the deepest point active then (ties: the latest
started); instants with none active go to ``between components``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from stacklens.errors import UserError
from stacklens.schema import BREAKDOWN, FLOWS, SPANS, TRACES
from stacklens.vocab import UUID

__all__ = ["OsprofilerImport", "import_osprofiler", "parse_osprofiler"]

_ID_SEGMENT = re.compile(rf"/(?:{UUID}|[0-9a-f]{{32}}|\d+)(?=/|$|\.)")
_INSTANCE = re.compile(rf"(?:/servers/|instance_uuid'?: u?'|instance_uuid\"?: \")({UUID})")
#: Points per file read at most (bounded work on hostile input).
MAX_POINTS = 200_000


@dataclass(frozen=True)
class _Point:
    span_id: str
    parent_id: str | None
    base_id: str | None
    name: str
    project: str
    service: str
    host: str | None
    start_ns: int | None
    end_ns: int | None
    error: str | None
    info: dict[str, Any]


def _ts_ns(ts: Any) -> int | None:
    if not isinstance(ts, str):
        return None
    for fmt in ("%Y-%m-%dT%H:%M:%S.%f", "%Y-%m-%dT%H:%M:%S"):
        try:
            dt = datetime.strptime(ts[:26], fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
        return int(dt.timestamp()) * 1_000_000_000 + dt.microsecond * 1000
    return None


def _service(project: str, service: str) -> str:
    """Process name as stacklens's log ingest names it."""
    if project == "nova" and service == "osapi_compute":
        return "nova-api"
    if project == "keystone":
        return "keystone"
    if service.startswith(project + "-") or not project:
        return service
    return f"{project}-{service}" if service else project


def _error(stop: dict[str, Any] | None, info: dict[str, Any]) -> str | None:
    si = (stop or {}).get("info") or {}
    etype = si.get("etype") or info.get("exception")
    if not etype or etype == "None":
        return None
    msg = si.get("message")
    return f"{etype}: {msg}" if msg else str(etype)


def _from_tree(node: dict[str, Any], out: list[_Point], t0_ns: int | None) -> None:
    stack = [node]
    while stack and len(out) < MAX_POINTS:
        n = stack.pop()
        stack.extend(reversed(n.get("children") or []))
        info = n.get("info") or {}
        name = str(info.get("name") or "")
        if name == "total" and "trace_id" not in n:
            continue
        start = info.get(f"meta.raw_payload.{name}-start") or {}
        stop = info.get(f"meta.raw_payload.{name}-stop")
        s_ns, e_ns = _ts_ns(start.get("timestamp")), _ts_ns((stop or {}).get("timestamp"))
        if s_ns is None and t0_ns is not None and isinstance(info.get("started"), int | float):
            s_ns = t0_ns + int(info["started"] * 1e6)  # no absolute time: ms from the report
        if e_ns is None and stop is not None and t0_ns is not None and \
                isinstance(info.get("finished"), int | float):
            e_ns = t0_ns + int(info["finished"] * 1e6)
        pinfo = dict(start.get("info") or {})
        out.append(_Point(
            span_id=str(n.get("trace_id") or start.get("trace_id")),
            parent_id=n.get("parent_id") or start.get("parent_id"),
            base_id=start.get("base_id") or (stop or {}).get("base_id"),
            name=name, project=str(info.get("project") or start.get("project") or ""),
            service=str(info.get("service") or start.get("service") or ""),
            host=info.get("host") or pinfo.get("host"), start_ns=s_ns,
            end_ns=e_ns if stop is not None else None, error=_error(stop, info), info=pinfo))


def _from_points(points: list[dict[str, Any]], out: list[_Point]) -> None:
    pairs: dict[str, dict[str, dict[str, Any]]] = {}
    for p in points[:MAX_POINTS]:
        name = str(p.get("name") or "")
        kind = "stop" if name.endswith("-stop") else "start"
        pairs.setdefault(str(p.get("trace_id")), {})[kind] = p
    for sid, pr in pairs.items():
        start, stop = pr.get("start") or {}, pr.get("stop")
        any_p = start or stop or {}
        info = dict(start.get("info") or {})
        out.append(_Point(
            span_id=sid, parent_id=any_p.get("parent_id"), base_id=any_p.get("base_id"),
            name=str(any_p.get("name") or "").rsplit("-", 1)[0],
            project=str(any_p.get("project") or ""), service=str(any_p.get("service") or ""),
            host=any_p.get("host") or info.get("host") or ((stop or {}).get("info") or {}
                                                           ).get("host"),
            start_ns=_ts_ns(start.get("timestamp")) or _ts_ns((stop or {}).get("timestamp")),
            end_ns=_ts_ns((stop or {}).get("timestamp")), error=_error(stop, {}), info=info))


def _operation(p: _Point) -> str:
    req = p.info.get("request") or {}
    if p.name == "wsgi" and isinstance(req, dict) and req.get("path"):
        return f"{req.get('method', '?')} {_ID_SEGMENT.sub('/{id}', str(req['path']))}"
    fn = p.info.get("function") or {}
    if p.name == "rpc" and isinstance(fn, dict) and fn.get("name"):
        return f"rpc {str(fn['name']).rsplit('.', 1)[-1]}"
    return p.name or "point"


def _instance(points: list[_Point]) -> str | None:
    for p in points:
        m = _INSTANCE.search(json.dumps(p.info)[:20000])
        if m:
            return m.group(1)
    return None


def _breakdown(trace_id: str, pts: list[_Point], depth: dict[str, int], start: int,
               end: int) -> list[dict[str, Any]]:
    """Time of ``[start, end]`` per service: each instant to the deepest active point."""
    iv = [(p.start_ns, p.end_ns if p.end_ns is not None else p.start_ns, depth[p.span_id],
           p) for p in pts if p.start_ns is not None]
    cuts = sorted({start, end, *[a for a, _, _, _ in iv], *[b for _, b, _, _ in iv]})
    acc: dict[str, int] = {}
    for a, b in zip(cuts, cuts[1:], strict=False):
        if b <= a or a < start or b > end:
            continue
        live = [(d, s, p) for s, e, d, p in iv if s <= a and e >= b]
        top = max(live, key=lambda x: (x[0], x[1]))[2] if live else None
        comp = _service(top.project, top.service) if top else "between components"
        acc[comp] = acc.get(comp, 0) + (b - a)
    return [{"trace_id": trace_id, "component": c, "dur_s": ns / 1e9} for c, ns in acc.items()]


@dataclass(frozen=True)
class OsprofilerImport:
    """Tables made from OSProfiler traces (dicts of column lists conformed by the caller) and
    what was read: ``files``, ``base_ids``, ``points``, ``skipped`` (``[(file, reason)]``)."""

    tables: dict[str, pl.DataFrame]
    files: list[str]
    base_ids: list[str]
    points: int
    skipped: list[tuple[str, str]]


def parse_osprofiler(doc: Any, where: str = "<json>") -> list[_Point]:
    """The trace points of one parsed OSProfiler document (either shape in the module
    docstring). Raises ``ValueError`` when it is neither."""
    out: list[_Point] = []
    if isinstance(doc, dict) and "children" in doc:
        t0 = None
        for child in doc.get("children") or []:  # anchor relative ms on the first absolute time
            info = child.get("info") or {}
            st = info.get(f"meta.raw_payload.{info.get('name')}-start") or {}
            ns = _ts_ns(st.get("timestamp"))
            if ns is not None and isinstance(info.get("started"), int | float):
                t0 = ns - int(info["started"] * 1e6)
                break
        _from_tree({"info": doc.get("info") or {}, "children": doc["children"]}, out, t0)
    elif isinstance(doc, list) and all(isinstance(p, dict) and "trace_id" in p for p in doc):
        _from_points(doc, out)
    else:
        raise ValueError(f"{where}: neither an OSProfiler report ('osprofiler trace show "
                         "--json') nor a list of OSProfiler points")
    return out


def _tables(points: list[_Point]) -> dict[str, pl.DataFrame]:
    by_id = {p.span_id: p for p in points}
    root_of: dict[str, str] = {}
    depth: dict[str, int] = {}
    for p in points:  # bounded walk up: at most len(points) steps per point
        chain, cur = [p.span_id], p
        while cur.parent_id in by_id and len(chain) <= len(points) and \
                cur.parent_id not in root_of:
            cur = by_id[cur.parent_id]
            chain.append(cur.span_id)
        top = root_of.get(cur.parent_id or "", cur.span_id) if cur.parent_id in root_of \
            else cur.span_id
        base = depth.get(cur.parent_id or "", -1) + 1 if cur.parent_id in root_of else 0
        for k, sid in enumerate(reversed(chain)):
            root_of.setdefault(sid, top)
            depth.setdefault(sid, base + k)
    spans, flows = [], []
    for p in points:
        parent = by_id.get(p.parent_id or "")
        svc = _service(p.project, p.service)
        spans.append({
            "trace_id": root_of[p.span_id], "span_id": p.span_id,
            "parent_span_id": parent.span_id if parent else None, "request_id": p.base_id,
            "host": p.host, "service": svc, "pid": None, "operation": _operation(p),
            "start_ns": p.start_ns, "end_ns": p.end_ns if p.end_ns is not None else p.start_ns,
            "end_exact": p.end_ns is not None, "status": "error" if p.error else "ok",
            "error": p.error, "n_events": 2 if p.end_ns is not None else 1})
        if parent and _service(parent.project, parent.service) != svc:
            kind = "http" if p.name == "wsgi" else "rpc_call" if p.name == "rpc" and \
                (p.end_ns or 0) <= (parent.end_ns or 0) else "rpc_cast" if p.name == "rpc" \
                else "http"
            flows.append({"trace_id": root_of[p.span_id], "src_span_id": parent.span_id,
                          "dst_span_id": p.span_id, "kind": kind, "rpc_id": None,
                          "send_ns": p.start_ns, "recv_ns": p.start_ns})
    groups: dict[str, list[_Point]] = {}
    for p in points:
        groups.setdefault(root_of[p.span_id], []).append(p)
    traces, breakdown = [], []
    for tid, pts in groups.items():
        root = by_id[tid]
        starts = [p.start_ns for p in pts if p.start_ns is not None]
        ends = [p.end_ns for p in pts if p.end_ns is not None] or starts
        if not starts:
            continue
        s, e = min(starts), max(max(ends), min(starts))
        errs = [p for p in sorted(pts, key=lambda x: x.start_ns or 0) if p.error]
        services = list(dict.fromkeys(_service(p.project, p.service) for p in
                                      sorted(pts, key=lambda x: x.start_ns or 0)))
        traces.append({
            "trace_id": tid, "request_id": root.base_id, "operation": _operation(root),
            "outcome": "failed" if errs else "success",
            "outcome_reason": (f"OSProfiler: exception in {errs[0].name}" if errs
                               else "OSProfiler: no exception recorded"),
            "http_status": None, "error": errs[0].error if errs else None,
            "error_service": _service(errs[0].project, errs[0].service) if errs else None,
            "retries": 0, "instance_uuid": _instance(pts), "start_ns": s, "end_ns": e,
            "dur_s": (e - s) / 1e9, "end_exact": root.end_ns is not None,
            "n_spans": len(pts), "services": ",".join(services),
            "n_error_records": len(errs), "first_error": errs[0].error if errs else None})
        breakdown += _breakdown(tid, pts, depth, s, e)
    return {
        "spans": pl.DataFrame(spans, schema=SPANS) if spans else pl.DataFrame(schema=SPANS),
        "flows": pl.DataFrame(flows, schema=FLOWS) if flows else pl.DataFrame(schema=FLOWS),
        "traces": pl.DataFrame(traces, schema=TRACES) if traces else pl.DataFrame(schema=TRACES),
        "breakdown": (pl.DataFrame(breakdown, schema=BREAKDOWN) if breakdown
                      else pl.DataFrame(schema=BREAKDOWN)),
    }


def import_osprofiler(paths: list[str | Path]) -> OsprofilerImport:
    """Read OSProfiler JSON files (any name: ``.txt``, ``.json``; folders are searched for
    ``*.json`` and ``*.txt``) into canonical tables. A file that is not OSProfiler JSON is
    listed in ``skipped`` with the reason; none readable raises
    :class:`~stacklens.errors.UserError`."""
    files: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            files += sorted(q for q in p.rglob("*") if q.suffix in (".json", ".txt"))[:10000]
        elif p.exists():
            files.append(p)
        else:
            raise UserError(f"{p}: no such file or folder")
    points: list[_Point] = []
    read, skipped = [], []
    seen: set[str] = set()
    for f in files:
        try:
            doc = json.loads(f.read_text(encoding="utf-8"))
            pts = parse_osprofiler(doc, str(f))
        except (ValueError, UnicodeDecodeError) as e:
            skipped.append((str(f), str(e).split("\n")[0][:200]))
            continue
        fresh = [p for p in pts if p.span_id not in seen]
        if len(fresh) < len(pts):  # the same trace in two files: keep its first copy
            skipped.append((str(f), f"{len(pts) - len(fresh)} points already read"))
        seen.update(p.span_id for p in fresh)
        points += fresh
        read.append(str(f))
    if not points:
        why = f" ({skipped[0][0]}: {skipped[0][1]})" if skipped else ""
        raise UserError(f"no OSProfiler trace points in {', '.join(map(str, paths))}{why}")
    base_ids = sorted({p.base_id for p in points if p.base_id})
    return OsprofilerImport(tables=_tables(points), files=read, base_ids=base_ids,
                            points=len(points), skipped=skipped)
