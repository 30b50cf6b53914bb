"""Clock correction for the trace stage: one offset per host and UTC day.

Offsets are estimated per day because clocks step and drift over weeks of rotated logs (on the
osp7 logs, networker2's offset moved by about 0.9 s between November and January), and applied
only where the feasible interval is tight (``MAX_UNCERTAINTY_S``). The ``events`` table keeps
the raw timestamps; spans, flows and traces are built on corrected time, and the offsets used
are kept in the ``clock_offsets`` table (:data:`stacklens.schema.CLOCK_OFFSETS`).
"""

from __future__ import annotations

import polars as pl

from stacklens.trace.skew import apply_offsets, causal_constraints, estimate_offsets

__all__ = ["MAX_UNCERTAINTY_S", "correct_clocks"]

#: An offset is applied only when its feasible interval's half-width is at most this (seconds).
MAX_UNCERTAINTY_S = 0.5
_DAY_NS = 86_400 * 1_000_000_000


def correct_clocks(events: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Return ``(events on corrected time, clock_offsets)``; single-host input is returned
    unchanged with an empty offsets table. ``events`` keeps its columns and row order."""
    hosts = events.get_column("host").drop_nulls().unique().sort().to_list()
    empty = pl.DataFrame(schema=_schema())
    if len(hosts) < 2:
        return events, empty
    cons = causal_constraints(events)
    if cons.height == 0:
        return events, empty
    # one reference clock for every day where it has evidence: the most constrained host
    counts = pl.concat([cons["src_host"], cons["dst_host"]]).value_counts(sort=True)
    reference = counts.get_column(counts.columns[0])[0]
    ev = events.with_columns(_day=pl.col("ts_ns") // _DAY_NS)
    parts, rows = [], []
    for (day,), ev_d in ev.partition_by("_day", as_dict=True, maintain_order=True).items():
        c_d = cons.filter(pl.col("dst_ts_ns") // _DAY_NS == day)
        if c_d.height == 0:
            parts.append(ev_d)
            continue
        seen = set(c_d["src_host"]) | set(c_d["dst_host"])
        res = estimate_offsets(c_d, hosts, reference=reference if reference in seen else None)
        parts.append(apply_offsets(ev_d, res.offsets, max_uncertainty_s=MAX_UNCERTAINTY_S))
        rows.append(
            res.offsets.with_columns(
                day=pl.from_epoch(pl.lit(day * _DAY_NS), time_unit="ns").dt.date().cast(pl.String),
                reference=pl.lit(res.reference),
                applied=pl.col("offset_s").is_not_null()
                & (pl.col("uncertainty_s") <= MAX_UNCERTAINTY_S),
                violations_before=pl.lit(res.violations_before),
                violations_after=pl.lit(res.violations_after),
                dropped=pl.lit(res.dropped.height),
            )
        )
    out = pl.concat(parts, how="diagonal_relaxed").drop("_day")
    if "ts_raw_ns" in out.columns:
        out = out.drop("ts_raw_ns")
    offsets = pl.concat(rows, how="diagonal_relaxed").select(list(_schema())) if rows else empty
    return out.select(events.columns), offsets


def _schema() -> dict[str, pl.DataType]:
    from stacklens.schema import CLOCK_OFFSETS

    return CLOCK_OFFSETS
