"""``stacklens collect``: logs of a time window from many hosts into one local folder.

Sources: files over SSH (asyncssh, host keys verified against known_hosts), systemd journals
(``journalctl`` per unit, over SSH or locally), and this machine's own folders. A YAML inventory
(:mod:`~stacklens.collect.inventory`) names the hosts, roles, log globs and units. The output
is the layout stacklens ingest already reads, plus a manifest::

    <out>/<host>/var/log/<path below /var/log>        files (rotated and .gz ones too)
    <out>/<host>/var/log/journald/<unit>.log          journald exports (short-precise)
    <out>/collect-manifest.json                       per host and source: method, bytes, ...
    <out>/.collect-state.jsonl                        resume journal

Only the window's lines travel where the source allows it (an awk or python3 filter on the
host for oslo.log files, ``--since/--until`` for journald); the manifest says per file whether
it was ``filtered`` or copied ``whole`` and why. Re-running skips complete files and continues
partial ones. Modules, in the order data flows:

    inventory  -> HostPlan per host; analysis_maps for ingest/analyze
    window     -> Window, the filter (awk program, python function shipped as python3 -c)
    transport / ssh -> where sh scripts run (this machine / asyncssh)
    listing    -> one script per host: tools present, files with size, mtime, first/last header
    files / journald -> one source: plan, fetch (fetch.py: resumable, verified), stats
    manifest   -> SourceResult, HostResult, collect-manifest.json, the resume journal
    collector  -> collect(): hosts in parallel, failures as data
"""

from __future__ import annotations

from stacklens.collect.collector import CollectOptions, CollectResult, collect, collect_async
from stacklens.collect.inventory import (
    HostPlan,
    Inventory,
    InventoryError,
    NameMaps,
    analysis_maps,
    load_inventory,
    parse_inventory,
)
from stacklens.collect.manifest import MANIFEST_NAME, HostResult, SourceResult
from stacklens.collect.window import Window

__all__ = [
    "CollectOptions",
    "CollectResult",
    "HostPlan",
    "HostResult",
    "Inventory",
    "InventoryError",
    "MANIFEST_NAME",
    "NameMaps",
    "SourceResult",
    "Window",
    "analysis_maps",
    "collect",
    "collect_async",
    "load_inventory",
    "parse_inventory",
]
