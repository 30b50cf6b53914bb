"""Numbers from records for ``drive_vs_rally.py``: p50/p95/max of durations (seconds), the
peak of overlapping intervals, outcomes and submit spread from request-record dicts, and the
calls nova-api logged between two byte offsets of its log. Split out of ``drive_vs_rally.py``."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any


def _pcts(vals: list[float]) -> dict[str, float | None]:
    from stacklens.drive.sla import percentile

    return {k: (round(v, 3) if (v := percentile(vals, q)) is not None else None)
            for k, q in (("p50", 0.5), ("p95", 0.95), ("max", 1.0))} | {"n": len(vals)}


def _peak_overlap(intervals: list[tuple[float, float]]) -> int:
    ev = sorted([(a, 1) for a, _ in intervals] + [(b, -1) for _, b in intervals],
                key=lambda e: (e[0], e[1]))  # an end before a start at the same instant
    cur = peak = 0
    for _, d in ev:
        cur += d
        peak = max(peak, cur)
    return peak


def records_numbers(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """e2e percentiles, outcomes, peak in flight and submit spread from record dicts
    (the fields of RequestRecord: outcome, submit_ns, active_ns, delete_ns, gone_ns)."""
    ok = [r for r in rows if r.get("outcome") == "ok"]

    def dur(r: dict, a: str, b: str) -> float | None:
        return (r[b] - r[a]) / 1e9 if r.get(a) is not None and r.get(b) is not None else None

    intervals = []
    for r in rows:
        ends = [v for k in ("gone_ns", "delete_ns", "active_ns") if (v := r.get(k)) is not None]
        if r.get("submit_ns") is not None and ends:
            intervals.append((r["submit_ns"] / 1e9, max(ends) / 1e9))
    submits = sorted(r["submit_ns"] for r in rows if r.get("submit_ns") is not None)
    return {
        "records": len(rows),
        "outcomes": dict(Counter(r.get("outcome") or "pending" for r in rows)),
        "create_s": _pcts([d for r in ok if (d := dur(r, "submit_ns", "active_ns")) is not None]),
        "delete_s": _pcts([d for r in ok if (d := dur(r, "delete_ns", "gone_ns")) is not None]),
        "peak_in_flight_from_records": _peak_overlap(intervals),
        "submit_spread_s": round((submits[-1] - submits[0]) / 1e9, 3) if submits else None,
    }


_REQLOG = re.compile(r'nova\.api\.openstack\.requestlog .*?"(\w+) (\S+)" status: (\d+)'
                     r'.*? time: ([\d.]+)')
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def nova_api_calls(log: Path, start: int, end: int) -> dict[str, Any]:
    """Calls nova-api logged between two byte offsets of its log, by method and path template."""
    try:
        with open(log, "rb") as f:
            f.seek(start)
            text = f.read(max(0, end - start)).decode("utf-8", "replace")
    except OSError as e:
        return {"error": str(e)}
    by: Counter[str] = Counter()
    status: Counter[str] = Counter()
    server_s = 0.0
    for m in _REQLOG.finditer(text):
        path = _UUID.sub("{id}", m.group(2).split("?")[0])
        path = re.sub(r"/flavors/[^/]+", "/flavors/{id}", path)
        by[f"{m.group(1)} {path}"] += 1
        status[m.group(3)] += 1
        server_s += float(m.group(4))
    return {"total": sum(by.values()), "by_call": dict(by.most_common()),
            "by_status": dict(status), "nova_api_time_s": round(server_s, 3)}


def _offset(p: Path) -> int:
    try:
        return p.stat().st_size
    except OSError:
        return 0


def _ratio(a: Any, b: Any) -> float | None:
    return round(a / b, 3) if isinstance(a, int | float) and isinstance(b, int | float) and b \
        else None
