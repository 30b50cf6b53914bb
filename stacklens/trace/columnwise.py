"""Frame operations a column at a time, for the bounded trace stage's large frames
(:mod:`stacklens.trace.bounded`): a Polars frame's sort or filter copies every column at once,
so the frame is held twice; done a column at a time, each source column let go once copied,
one column's copy is held beside the frame. The same rows and values as the frame operation
(Polars 2.1)."""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

__all__ = ["column_wise", "in_order", "own"]


def in_order(held: list[pl.DataFrame], by: pl.Expr) -> pl.DataFrame:
    """The one frame of ``held``, taken out of it, sorted by ``by`` (stable) a column at a time
    (:func:`column_wise`; the frame itself when already in order)."""
    if held[0].select(by.is_sorted()).item():
        return held.pop()
    order = held[0].select(pl.int_range(pl.len(), dtype=pl.UInt32)
                           .sort_by(by, maintain_order=True)).to_series()
    return column_wise(held, lambda s: s.gather(order))


def column_wise(held: list[pl.DataFrame], op: Callable[[pl.Series], pl.Series]) -> pl.DataFrame:
    """``op`` (a gather or filter: every column the same length after it) of each column of the
    one frame of ``held``, a column at a time, each source column let go once done. The frame is
    taken out of ``held`` so that no other reference keeps its columns (a caller's variable or
    argument would: the caller passes ``[frame]`` and drops its own name for it)."""
    df = held.pop()
    out = []
    for c in df.columns:
        out.append(op(df.get_column(c)))
        df = df.drop(c)
    return pl.DataFrame(out)


def own(col: str) -> pl.Expr:
    """String column ``col`` with its values in buffers of its own, not views into the buffers
    it was read or filtered from (the same values; null stays null): a filtered or gathered
    string column shares its source's buffers, so one kept value keeps them all alive."""
    return pl.concat_str([pl.col(col), pl.lit("")]).alias(col)
