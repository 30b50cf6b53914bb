"""Clock correction for the trace stage: one offset per host and UTC day.

Offsets are estimated per day because clocks step and drift over weeks of rotated logs (on the
osp7 logs, networker2's offset moved by about 0.9 s between November and January), and applied
only where the feasible interval is tight (``MAX_UNCERTAINTY_S``). The ``events`` table keeps
the raw timestamps; spans, flows and traces are built on corrected time, and the offsets used
are kept in the ``clock_offsets`` table (:data:`stacklens.schema.CLOCK_OFFSETS`), one row per
host and day whenever there are two hosts or more, each with a ``note`` saying in words what is
known: the offset and its uncertainty, a one-sided bound, or that no causal pair links the host
to the reference (its offset is unknown). Single-host input has no rows.
"""

from __future__ import annotations

import polars as pl

from stacklens.schema import Columns, conform
from stacklens.trace.skew import apply_offsets, causal_constraints, estimate_offsets

__all__ = ["MAX_UNCERTAINTY_S", "correct_clocks"]

#: An offset is applied only when its feasible interval's half-width is at most this (seconds).
MAX_UNCERTAINTY_S = 0.5
_DAY_NS = 86_400 * 1_000_000_000


def correct_clocks(events: pl.DataFrame, apply: bool = True) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Return ``(events on corrected time, clock_offsets)``; ``events`` keeps its columns and
    row order. Single-host input is returned unchanged with an empty offsets table. With two
    or more hosts every host gets a row per UTC day, with a ``note`` in words; a day without
    any causal pair between hosts says which hosts' offsets are unknown (never "single host").
    With ``apply=False`` only the offsets are computed: ``events`` is returned as given."""
    hosts = events.get_column("host").drop_nulls().unique().sort().to_list()
    empty = pl.DataFrame(schema=_schema())
    if len(hosts) < 2:
        return events, empty
    cons = causal_constraints(events)
    reference = None
    if cons.height:  # one reference clock for every day where it has evidence
        counts = pl.concat([cons["src_host"], cons["dst_host"]]).value_counts(sort=True)
        reference = counts.get_column(counts.columns[0])[0]
    ev = events.with_columns(_day=pl.col("ts_ns") // _DAY_NS)
    parts, rows = [], []
    src = ev if apply else ev.select("host", "_day")
    for (day,), ev_d in src.partition_by("_day", as_dict=True, maintain_order=True).items():
        if day is None:
            parts.append(ev_d)
            continue
        c_d = cons.filter(pl.col("dst_ts_ns") // _DAY_NS == day)
        day_s = pl.from_epoch(pl.lit(day * _DAY_NS), time_unit="ns").dt.date().cast(pl.String)
        if c_d.height == 0:
            parts.append(ev_d)
            rows.append(_unknown_day(ev_d, hosts).with_columns(day=day_s))
            continue
        seen = set(c_d["src_host"]) | set(c_d["dst_host"])
        res = estimate_offsets(c_d, hosts, reference=reference if reference in seen else None)
        if apply:
            parts.append(apply_offsets(ev_d, res.offsets, max_uncertainty_s=MAX_UNCERTAINTY_S))
        rows.append(
            res.offsets.with_columns(
                day=day_s,
                reference=pl.lit(res.reference),
                applied=pl.col("offset_s").is_not_null()
                & (pl.col("uncertainty_s") <= MAX_UNCERTAINTY_S),
                violations_before=pl.lit(res.violations_before),
                violations_after=pl.lit(res.violations_after),
                dropped=pl.lit(res.dropped.height),
            ).with_columns(note=_notes(res.offsets, res.reference, c_d))
        )
    offsets = conform(pl.concat(rows, how="diagonal_relaxed"), "clock_offsets") if rows else empty
    if not apply:
        return events, offsets
    out = pl.concat(parts, how="diagonal_relaxed").drop("_day")
    if "ts_raw_ns" in out.columns:
        out = out.drop("ts_raw_ns")
    return out.select(events.columns), offsets


def _unknown_day(ev_d: pl.DataFrame, hosts: list[str]) -> pl.DataFrame:
    """Rows for a day with several hosts and no causal pair between any two of them."""
    day_hosts = sorted(ev_d.get_column("host").drop_nulls().unique().to_list())
    names = ", ".join(day_hosts[:6]) + (
        f" and {len(day_hosts) - 6} more" if len(day_hosts) > 6 else ""
    )
    if len(day_hosts) < 2:
        note = f"only {names or 'no host'} logged this day: nothing to compare"
    else:
        note = (
            f"{len(day_hosts)} hosts ({names}), no causal pairs between them this day "
            "(no RPC ids, HTTP request ids or scheduling lines seen on two hosts): "
            "their offsets are unknown"
        )
    return pl.DataFrame(
        {
            "host": hosts,
            "status": ["unconstrained"] * len(hosts),
            "n_constraints": [0] * len(hosts),
        },
    ).with_columns(
        applied=pl.lit(False),
        violations_before=pl.lit(0),
        violations_after=pl.lit(0),
        dropped=pl.lit(0),
        note=pl.lit(note),
    )


def _notes(offsets: pl.DataFrame, reference: str | None, cons: pl.DataFrame) -> pl.Series:
    """One sentence per host of :attr:`SkewResult.offsets` (same row order)."""
    kinds: dict[str, set[str]] = {}
    for s, d, k in cons.select("src_host", "dst_host", "kind").unique().iter_rows():
        kinds.setdefault(s, set()).add(k)
        kinds.setdefault(d, set()).add(k)
    out = []
    for r in offsets.iter_rows(named=True):
        h, n, st = r["host"], r["n_constraints"], r["status"]
        how = f"{n} causal pairs ({', '.join(sorted(kinds.get(h, ())))})"
        if st == "reference":
            out.append(f"reference clock: offsets of the other hosts are relative to {h}")
        elif st == "bounded":
            ok = r["uncertainty_s"] <= MAX_UNCERTAINTY_S
            out.append(
                f"{r['offset_s'] * 1000:+.1f} ms +/- {r['uncertainty_s'] * 1000:.1f} ms vs "
                f"{reference} from {how}" + ("" if ok else "; too uncertain, not applied")
            )
        elif st == "lower_only":
            out.append(
                f"offset of at least {r['lo_s'] * 1000:+.1f} ms vs {reference} from {how}; "
                "no upper bound: offset unknown, not applied"
            )
        elif st == "upper_only":
            out.append(
                f"offset of at most {r['hi_s'] * 1000:+.1f} ms vs {reference} from {how}; "
                "no lower bound: offset unknown, not applied"
            )
        elif st == "unconnected":
            out.append(f"{how} with other hosts, none linking {h} to {reference}: offset unknown")
        else:
            out.append(f"no causal pairs between {reference} and {h}: offset unknown")
    return pl.Series("note", out, dtype=pl.String)


def _schema() -> Columns:
    from stacklens.schema import CLOCK_OFFSETS

    return CLOCK_OFFSETS
