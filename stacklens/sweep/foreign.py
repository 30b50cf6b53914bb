"""``stacklens sweep analyze DIR...``: fio and iperf3 JSON written by other tools (fio-plot,
CBT, shell loops) read into the same :class:`~stacklens.sweep.tables.PointRun` records as a
sweep's own runs, so the same tables, knees and report follow.

Each file under the folders is classified by content, never by name alone: fio JSON
(``fio version`` + ``jobs``), iperf3 JSON (``start`` + ``end``); everything else is skipped
and counted with its kind: ``iperf3_text`` (iperf3 without ``-J``), ``fio_log`` (fio's
``write_*_log`` files), ``bad_json`` (a JSON file that does not parse: truncated, empty),
``other_json``, ``binary``, ``unknown``, ``too_large``. Nothing raises for a bad file.

How files become points: the *series* is the file's folder relative to the folder given
(for iperf3 plus the file's stem, as such sets name a test by its file); folder names
matching ``repeat_pattern`` (default: ``time-...``, ``run-...``, ``rep...``, ``iter...``)
are taken out of the series and number the repeats instead. Within one series and repeat,
files with the same matrix values (fio: rw, bs, iodepth, numjobs; iperf3: protocol, streams,
direction) are the targets of one point and are summed.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stacklens.sweep.fio import is_fio_json
from stacklens.sweep.iperf import is_iperf_json, is_iperf_text
from stacklens.sweep.tables import PointRun, TargetRun

__all__ = ["DEFAULT_REPEAT_PATTERN", "Found", "MAX_FILES", "MAX_FILE_BYTES", "scan"]

DEFAULT_REPEAT_PATTERN = r"^(time|run|rep|repeat|iter|iteration)([-_].*|\d+)$"
MAX_FILES = 200_000
MAX_FILE_BYTES = 256 << 20
_FIO_LOG = re.compile(r"_(bw|iops|lat|clat|slat)(\.\d+)?\.log(\.\d+)?$")


@dataclass(frozen=True)
class Found:
    """What :func:`scan` read: point runs and skipped files ``(file, kind, reason)``."""

    runs: list[PointRun]
    skipped: list[tuple[str, str, str]]
    n_files: int


def _classify(path: Path) -> tuple[str, Any]:
    """``(kind, doc)``: kind fio / iperf3 with the parsed document, or a skip kind with a
    reason string."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            return "too_large", f"{size} bytes, more than {MAX_FILE_BYTES}"
        data = path.read_bytes()
    except OSError as e:
        return "unreadable", str(e.strerror or e)
    if _FIO_LOG.search(path.name):
        return "fio_log", "fio time-series log (write_*_log), not a result"
    if b"\0" in data[:4096]:
        return "binary", "binary file"
    text = data.decode("utf-8", errors="replace")
    head = text.lstrip()[:4096]
    if head.startswith(("{", "[")):
        try:
            doc = json.loads(text)
        except ValueError as e:
            return "bad_json", f"not valid JSON: {e}"
        if is_fio_json(doc):
            return "fio", doc
        if is_iperf_json(doc):
            return "iperf3", doc
        return "other_json", "JSON that is neither fio nor iperf3 output"
    if is_iperf_text(head):
        return "iperf3_text", "iperf3 text output (run with -J for JSON)"
    if not head:
        return "empty", "empty file"
    return "unknown", "neither fio nor iperf3 JSON"


def _fio_params(doc: dict[str, Any]) -> dict[str, Any]:
    jobs = [j for j in doc["jobs"] if isinstance(j, dict)]
    o = {**doc.get("global options", {}), **(jobs[0].get("job options", {}) if jobs else {})}

    def num(k: str) -> int | None:
        try:
            return int(str(o.get(k, "1")))
        except ValueError:
            return None

    return {"rw": o.get("rw") or o.get("readwrite") or "read", "bs": o.get("bs", "4k"),
            "iodepth": num("iodepth"), "numjobs": num("numjobs"), "protocol": None,
            "parallel": None, "reverse": None}


def _iperf_params(doc: dict[str, Any]) -> dict[str, Any]:
    ts = doc["start"].get("test_start") or {}
    return {"rw": None, "bs": None, "iodepth": None, "numjobs": None,
            "protocol": str(ts.get("protocol", "TCP")).lower(),
            "parallel": int(ts.get("num_streams", 1) or 1), "reverse": bool(ts.get("reverse"))}


def _key(tool: str, p: dict[str, Any]) -> str:
    if tool == "fio":
        return f"fio-{p['rw']}-bs{p['bs']}-qd{p['iodepth']}-nj{p['numjobs']}"
    return f"iperf3-{p['protocol']}-P{p['parallel']}-{'rev' if p['reverse'] else 'fwd'}"


def scan(dirs: list[Path], repeat_pattern: str = DEFAULT_REPEAT_PATTERN) -> Found:
    """Read every file under ``dirs`` (files given directly are read too), at most
    :data:`MAX_FILES`. Raises ``re.error`` for a bad ``repeat_pattern`` only."""
    rep = re.compile(repeat_pattern)
    skipped: list[tuple[str, str, str]] = []
    # (series, point, repeat label) -> (tool, params, [(target, path)])
    groups: dict[tuple[str, str, str], tuple[str, dict[str, Any], list[tuple[str, str]]]] = {}
    n = 0
    for root in dirs:
        files = [root] if root.is_file() else sorted(
            Path(d) / f for d, _, fs in os.walk(root) for f in fs)
        for path in files:
            n += 1
            if n > MAX_FILES:
                skipped.append((str(path), "limit", f"more than {MAX_FILES} files"))
                break
            kind, doc = _classify(path)
            if kind not in ("fio", "iperf3"):
                skipped.append((str(path), kind, str(doc)))
                continue
            rel = path.relative_to(root) if path != root else Path(path.name)
            parts = [root.name] + list(rel.parent.parts)
            reps = [p for p in parts if rep.match(p)]
            series = "/".join(p for p in parts if not rep.match(p))
            params = _fio_params(doc) if kind == "fio" else _iperf_params(doc)
            if kind == "iperf3":
                series = f"{series}/{path.stem}"
            key = (series, _key(kind, params), "/".join(reps))
            groups.setdefault(key, (kind, params, []))[2].append((path.name, str(path)))
    runs: list[PointRun] = []
    labels: dict[tuple[str, str], list[str]] = {}
    for series, point, label in groups:
        labels.setdefault((series, point), []).append(label)
    for (series, point, label), (tool, params, members) in sorted(groups.items()):
        r = sorted(labels[(series, point)]).index(label)
        runs.append(PointRun(series, tool, point, r, len(members), params,
                             tuple(TargetRun(name, "ok", raw=p) for name, p in sorted(members))))
    return Found(runs, skipped, n)
