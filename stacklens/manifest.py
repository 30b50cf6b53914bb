"""The run manifest: a typed, versioned record of what was done to a run folder.

``<run>/manifest.json`` is the second contract of a run folder beside its tables
(:mod:`stacklens.schema`): which stages ran, on which inputs, with which settings and totals.
It has one section per writer, and each section has exactly one writer:

=========  ===========================================  =======================================
section    written by                                   holds
=========  ===========================================  =======================================
``run``    the load driver (:mod:`stacklens.drive`)      scenario, plan, connection, state, SLA
``forecast`` the simulator (:mod:`stacklens.forecast`)   model, knobs, provenance ("simulated")
``ingest`` the ingest step (:mod:`stacklens.pipeline`)   inputs, options, line/record totals
``trace``  the trace step (:mod:`stacklens.pipeline`)    table row counts
``report`` the report step (:mod:`stacklens.pipeline`)   report format version, findings count
=========  ===========================================  =======================================

``stages`` is derived: the sections present, in pipeline order, so writing one section never
loses another's stage (format 1 lost ``run`` when ``stacklens run`` ingested its logs).

Format history (pyperf ``_bench.py`` style; :func:`upgrade` reads every older format):

1. stacklens 0.1: untyped dict; ``stages`` written by hand by each writer; ``inputs`` at top
   level beside ``ingest``.
2. stacklens 0.1 (issue 14): typed sections (``forecast`` added with issue 9, no version
   change: older readers keep it as an unknown key); ``stages`` derived from the sections; ``inputs``
   kept at top level (read by reports) and written by the ingest section's writer only.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from stacklens.errors import StoreError

__all__ = [
    "ForecastSection",
    "IngestSection",
    "MANIFEST_FORMAT_VERSION",
    "Manifest",
    "ReportSection",
    "SECTIONS",
    "TraceSection",
    "upgrade",
]

#: Current manifest format (history in the module docstring).
MANIFEST_FORMAT_VERSION = 2

#: The sections in pipeline order (``stages`` lists the present ones in this order).
SECTIONS = ("run", "forecast", "ingest", "trace", "report")


class _Section(BaseModel):
    """Base of a section: unknown keys are kept (a newer writer's additions survive a rewrite)."""

    model_config = ConfigDict(extra="allow")


class IngestSection(_Section):
    """What ingest read and wrote. Counts are whole numbers; ``wall_s`` in seconds."""

    files_read: int = 0
    files_skipped: int = 0
    lines: int = 0  # physical lines read
    bytes: int = 0  # bytes read (decompressed)
    records: int = 0  # rows of the events table (after the run window, if any)
    quarantined: int = 0  # rows of the quarantine table
    wall_s: float | None = None
    lines_per_s: int | None = None
    timezone_assumption: str = "UTC"  # what the times are, in words (starts with the zone)
    tz_offset_s: int = 0  # --tz-offset
    tz: list[str] = Field(default_factory=list)  # --tz entries
    window_ns: tuple[int, int] | None = None  # run window kept, ns since epoch UTC
    # the native tokenizer (stacklens_native) was on; formats it does not cover still ran on Polars
    native: bool = False


class TraceSection(_Section):
    """Row counts of the trace tables; ``wall_s`` the stage's time (seconds) and ``buckets``
    the number of buckets it ran in (1: the whole ``events`` frame at once; see
    :mod:`stacklens.trace.bounded`), absent in runs from before they were recorded."""

    traces: int = 0
    spans: int = 0
    flows: int = 0
    wall_s: float | None = None
    buckets: int | None = None


class ReportSection(_Section):
    """What the report step wrote."""

    report_format_version: int | None = None
    findings: int = 0
    files: list[str] = Field(default_factory=list)  # file names written in the run folder


class ForecastSection(_Section):
    """A simulated run (:mod:`stacklens.forecast`): its tables come from the model, not from
    logs, and every report of it says so. ``model``: the calibration model's path or name;
    further keys (knobs, provenance, summary, wall_s) as the simulator writes them."""

    simulated: bool = True
    model: str | None = None


class Manifest(_Section):
    """The whole ``manifest.json``. ``run`` is the driver's section: a dict whose keys
    (``run_id``, ``prefix``, ``state``, ``scenario``, ``plan``, ``connection``, ``started_ns``,
    ``ended_ns``, ``stats``, ``summary``, ``sla``, ...) are documented in
    :mod:`stacklens.drive.session`."""

    format_version: int = MANIFEST_FORMAT_VERSION
    stacklens_version: str = ""
    stages: list[str] = Field(default_factory=list)
    inputs: list[str] = Field(default_factory=list)
    run: dict[str, Any] | None = None
    forecast: ForecastSection | None = None
    ingest: IngestSection | None = None
    trace: TraceSection | None = None
    report: ReportSection | None = None

    def with_stages(self) -> Manifest:
        """A copy whose ``stages`` are the sections present, in pipeline order."""
        return self.model_copy(update={
            "stages": [s for s in SECTIONS if getattr(self, s) is not None]})


def upgrade(doc: dict[str, Any], where: str = "manifest.json") -> Manifest:
    """Read a manifest dict of any known format into the current :class:`Manifest`.

    Raises :class:`~stacklens.errors.StoreError` for a format newer than this stacklens reads
    (upgrade stacklens) or a document that is not a manifest."""
    if not isinstance(doc, dict):
        raise StoreError(f"{where} is not a stacklens manifest (a JSON object expected)")
    version = int(doc.get("format_version", 1) or 1)
    if version > MANIFEST_FORMAT_VERSION:
        raise StoreError(f"{where} was written by a newer stacklens (format {version} > "
                         f"{MANIFEST_FORMAT_VERSION}); upgrade stacklens")
    d = dict(doc)
    if version < 2:  # 1 -> 2: stages are derived; a 'trace' stage without its section
        had_trace = "trace" in (d.get("stages") or [])
        if had_trace and not isinstance(d.get("trace"), dict):
            d["trace"] = {}
    d["format_version"] = MANIFEST_FORMAT_VERSION
    try:
        return Manifest.model_validate(d).with_stages()
    except ValueError as e:
        raise StoreError(f"{where} cannot be read: {e}") from None
