"""Merging the bounded trace stage's bucket tables into the whole-frame path's row order
(:mod:`stacklens.trace.bounded`, :mod:`stacklens.trace.spark`). A trace lives in one bucket,
so each table is its buckets' rows, concatenated and stably sorted by the keys the whole-frame
path orders it by."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import polars as pl

from stacklens.schema import TABLES

__all__ = ["MERGE_ROWS", "PHASES", "RANGED", "merge_buckets", "merged", "ranged"]

#: The ``phases`` table's order of phases (the whole-frame path's).
PHASES = ["claim", "network", "block_device", "spawn", "teardown", "resource_cleanup", "build"]
#: Tables ordered by ``trace_id`` alone, merged from the buckets by ranges of trace ids
#: (:func:`ranged`): each bucket writes them sorted by ``trace_id`` in row groups, with
#: statistics, and a range holds about :data:`MERGE_ROWS`.
RANGED = ("spans", "traces", "breakdown")
MERGE_ROWS = 500_000


def merge_buckets(parts: dict[str, list[pl.DataFrame]]) -> dict[str, pl.DataFrame]:
    """Concatenate the buckets' tables in the whole-frame path's row order. Empties ``parts``
    as it goes (a table's bucket frames are dropped once it is merged)."""
    return dict(merged(lambda name: parts.pop(name, [])))


def ranged(name: str, files: Sequence[Path]) -> Iterator[pl.DataFrame]:
    """Table ``name`` (one of :data:`RANGED`) from its buckets' ``files`` (each sorted by
    ``trace_id``, in bucket order) in the whole-frame path's row order (by ``trace_id``,
    stable), as consecutive parts of about :data:`MERGE_ROWS` rows: the sorted trace ids are
    cut into ranges and each range is read from every file (Polars skips the row groups
    whose statistics fall outside it) and sorted. A trace lives in one bucket, so a stable sort
    of a range keeps its rows in its bucket's order, as the sort of the whole table did. Memory:
    one range and the trace ids, not the table (``spans`` of the 30 M-line bench corpus, 1.06 M
    rows in 45 files, prototyped: 839 -> ~360 MiB peak, 1.6 -> 2.3 s). No files: one empty
    part."""
    import pyarrow.parquet as papq

    if not files:
        yield pl.DataFrame(schema=TABLES[name])
        return
    ids = pl.concat([pl.read_parquet(f, columns=["trace_id"]).unique() for f in files]
                    ).get_column("trace_id").sort()
    rows = sum(papq.ParquetFile(f).metadata.num_rows for f in files)
    # one range, all rows, when there is a null trace id (never in these tables)
    n = 1 if ids.null_count() else min(math.ceil(rows / MERGE_ROWS), ids.len())
    cuts = [None, *(ids[len(ids) * k // n] for k in range(1, n)), None]
    del ids
    for lo, hi in zip(cuts[:-1], cuts[1:], strict=True):
        keep = pl.lit(True)
        if lo is not None:
            keep = keep & (pl.col("trace_id") >= lo)
        if hi is not None:
            keep = keep & (pl.col("trace_id") < hi)
        yield (pl.concat([pl.scan_parquet(f).filter(keep).collect() for f in files],
                         rechunk=False).sort("trace_id", maintain_order=True))


def merged(load: Callable[[str], list[pl.DataFrame]],
            names: Sequence[str] = ("spans", "traces", "breakdown", "phases", "flows"),
            ) -> Iterator[tuple[str, pl.DataFrame]]:
    """``(name, table)`` for those of spans, traces, breakdown, phases and flows in
    ``names``, each concatenated from ``load(name)`` (its buckets' frames in bucket order; none:
    an empty table) without a rechunk and sorted into the whole-frame path's row order, one
    table at a time."""
    def cat(n: str) -> pl.DataFrame:
        frames = load(n)
        return pl.concat(frames, rechunk=False) if frames else pl.DataFrame(schema=TABLES[n])

    for n in ("spans", "traces", "breakdown"):
        if n in names:
            yield n, cat(n).sort("trace_id", maintain_order=True)
    if "phases" in names:
        rank = pl.col("phase").replace_strict(PHASES, list(range(len(PHASES))),
                                              return_dtype=pl.Int32)
        yield "phases", cat("phases").sort(rank, pl.col("trace_id"), maintain_order=True)
    if "flows" in names:
        fl = cat("flows")
        http = pl.col("kind") == "http"
        yield "flows", pl.concat([
            fl.filter(~http).sort("trace_id", maintain_order=True),
            fl.filter(http).sort("send_ns", "trace_id", maintain_order=True),
        ])
