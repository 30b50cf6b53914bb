"""Rally results as client-side records: another source of :class:`RequestRecord` rows.

Two formats:

* the JSON report, format 1.2 (``rally task report --json``, Rally >= 0.10):
  ``{"info": {"format_version": "1.2"}, "tasks": [{"subtasks": [{"workloads": [{"data":
  [iteration, ...]}]}]}]}``; each iteration has ``timestamp``, ``duration``, ``error``
  (``[type, message, traceback]`` or empty) and ``atomic_actions``, a list of
  ``{"name", "started_at", "finished_at", "children", "failed"?}``;
* the older ``rally task results`` list: ``[{"key": {"name", "pos", "kw"}, "result":
  [iteration, ...]}]``, where ``atomic_actions`` may also be a ``{name: duration}`` mapping
  (Rally < 0.10), laid out back to back from the iteration's ``timestamp``.

Each iteration that booted a server (atomic action ``nova.boot_server``) becomes one record:
submit = boot start, ACTIVE = boot end (Rally's boot waits for ACTIVE), delete = start of
``nova.delete_server`` / ``nova.force_delete_server``, gone = its end. Errors map to outcomes:
``GetResourceErrorStatus`` -> ``error`` (server in ERROR, fault kept), ``TimeoutException`` ->
``timeout``, messages with ``(HTTP 5xx)`` -> ``api_error`` with the status and the
``Request-ID`` novaclient puts in them, anything else -> ``failed``. The OSProfiler trace id
that Rally stores in the iteration's output is kept as ``profiler_trace_id``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from stacklens.drive.records import RequestRecord
from stacklens.errors import UserError

__all__ = ["BOOT_ACTIONS", "DELETE_ACTIONS", "read_rally", "records_from_rally"]

BOOT_ACTIONS = ("nova.boot_server", "nova.boot_servers")
DELETE_ACTIONS = ("nova.delete_server", "nova.force_delete_server", "nova.delete_servers")

_SERVER_NAME = re.compile(r"<Server: ([^>\s]+)>|Server (\S+?):([0-9a-fA-F-]{36})")
_CURRENT = re.compile(r"current status (\w+)")
_HTTP = re.compile(r"\(HTTP (\d{3})\)")
_REQ = re.compile(r"Request-ID: (req-[0-9a-fA-F-]{36})")
_FAULT = re.compile(r"Fault: (.*)", re.S)


def _ns(t: float | None) -> int | None:
    return int(round(t * 1e9)) if t is not None else None


def _actions(itr: dict[str, Any]) -> list[dict[str, Any]]:
    """Top-level atomic actions as dicts with started_at / finished_at, either format."""
    aa = itr.get("atomic_actions") or []
    if isinstance(aa, dict):  # Rally < 0.10: {name: duration}, in order
        t = float(itr.get("timestamp") or 0)
        out = []
        for name, dur in aa.items():
            d = float(dur) if dur is not None else None
            out.append({"name": re.sub(r" \(\d+\)$", "", name), "started_at": t,
                        "finished_at": t + d if d is not None else None,
                        "failed": d is None})
            t += d or 0.0
        return out
    return list(aa)


def _trace_id(itr: dict[str, Any]) -> str | None:
    for c in (itr.get("output") or {}).get("complete") or []:
        if c.get("chart_plugin") == "OSProfiler" and isinstance(c.get("data"), dict):
            return c["data"].get("trace_id")
    return None


def _classify(error: list[str]) -> tuple[str, str, int | None, str | None]:
    """(outcome, message, http status, request id) of a Rally iteration error."""
    etype = error[0] if error else ""
    msg = error[1] if len(error) > 1 else etype
    http = _HTTP.search(msg)
    req = _REQ.search(msg)
    if etype == "GetResourceErrorStatus":
        fault = _FAULT.search(msg)
        fault_msg = fault.group(1).strip() if fault else ""
        return "error", (fault_msg if fault_msg not in ("", "n/a") else msg), None, None
    if etype.endswith("TimeoutException") or "Timeout" in etype:
        return "timeout", msg, None, None
    if http and http.group(1).startswith(("4", "5")):
        return "api_error", msg, int(http.group(1)), req.group(1) if req else None
    return "failed", f"{etype}: {msg}" if etype and etype not in msg else msg, None, None


def _record(itr: dict[str, Any], run_id: str, scenario: str, pos: int, i: int) -> RequestRecord | None:
    acts = _actions(itr)
    boot = next((a for a in acts if a.get("name") in BOOT_ACTIONS), None)
    if boot is None and not scenario.startswith("NovaServers."):
        return None
    delete = next((a for a in acts if a.get("name") in DELETE_ACTIONS), None)
    error = itr.get("error") or []
    name_m = _SERVER_NAME.search(error[1]) if len(error) > 1 else None
    name = (name_m.group(1) or name_m.group(2)) if name_m else f"rally-{pos}-{i}"
    server_id = name_m.group(3) if name_m else None
    boot_ok = boot is not None and not boot.get("failed") and boot.get("finished_at") is not None
    del_ok = delete is not None and not delete.get("failed") and delete.get("finished_at") is not None
    rec = RequestRecord(
        run_id=run_id, name=name, server_id=server_id, source="rally",
        scenario=scenario, repetition=pos, iteration=i,
        submit_ns=_ns(boot["started_at"]) if boot else _ns(itr.get("timestamp")),
        active_ns=_ns(boot["finished_at"]) if boot_ok and boot else None,
        delete_ns=_ns(delete["started_at"]) if delete else None,
        gone_ns=_ns(delete["finished_at"]) if del_ok and delete else None,
        profiler_trace_id=_trace_id(itr),
    )
    if not error:
        return rec.evolve(outcome="ok", status="DELETED" if del_ok else "ACTIVE")
    outcome, msg, http, req = _classify(error)
    if boot_ok and delete is not None and not del_ok:
        outcome = "delete_failed" if outcome in ("failed", "api_error", "timeout") else outcome
    current = _CURRENT.search(msg)
    status = ("ERROR" if outcome == "error" else "ACTIVE" if boot_ok
              else current.group(1) if current else None)
    return rec.evolve(outcome=outcome, error=msg.strip(), create_http_status=http if not boot_ok
                      else None, request_id=req if not boot_ok else None, status=status)


def _workloads(doc: Any) -> Iterator[tuple[str, str, int, list[dict[str, Any]]]]:
    """(run id, scenario name, position, iterations) of every workload in either format."""
    if isinstance(doc, dict) and "tasks" in doc:
        for task in doc["tasks"]:
            for st in task.get("subtasks") or []:
                for w in st.get("workloads") or []:
                    name = w.get("name") or next(iter(w.get("scenario") or {}), None) or st.get("title", "")
                    yield task.get("uuid", "rally"), name, int(w.get("position", 0)), w.get("data") or []
    elif isinstance(doc, list):
        for n, res in enumerate(doc):
            key = res.get("key") or {}
            yield "rally", key.get("name", ""), int(key.get("pos", n)), res.get("result") or []
    else:
        raise ValueError("neither a Rally JSON report (format 1.2) nor a 'rally task results' list")


def records_from_rally(doc: Any) -> list[RequestRecord]:
    """Records of every server-booting iteration in a parsed Rally document."""
    out = []
    for run_id, scenario, pos, data in _workloads(doc):
        for i, itr in enumerate(data):
            rec = _record(itr, run_id, scenario, pos, i)
            if rec is not None:
                out.append(rec)
    return out


def read_rally(path: str | Path) -> list[RequestRecord]:
    """Read a Rally results file (either format). Raises UserError if it is neither."""
    p = Path(path)
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
        return records_from_rally(doc)
    except FileNotFoundError:
        raise UserError(f"{p}: no such file") from None
    except (ValueError, TypeError, AttributeError, KeyError) as e:
        raise UserError(f"{p}: not Rally results: {e}") from None
