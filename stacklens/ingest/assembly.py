"""Record-assembly rules beyond "a header opens a record": which header-like lines continue the
record above (modern tracebacks). (Which lines of os-log-merger output belong to other programs
is the format's ``other`` pattern, :mod:`stacklens.ingest.formats.oslo_merged`.)

The rule's regular expressions (Rust ``regex`` syntax) are shared with the native tokenizer
(``native/src/tok.rs``), which runs it as a state machine.
"""

from __future__ import annotations

import polars as pl

from stacklens.ingest.formats import LineFormat

__all__ = ["tb_patterns", "traceback_lines"]


# Modern tracebacks (oslo.log >= 1.2.0, Kilo; commit 27f7fe5 "Change misleading TRACE to ERROR"):
# ``ContextFormatter.formatException`` writes every line of ``traceback.print_exception`` output
# after ``logging_exception_prefix`` (default ``%(asctime)s.%(msecs)03d %(process)d ERROR
# %(name)s %(instance)s``; deployments may add the request context; devstack under systemd uses
# ``ERROR %(name)s %(instance)s``), rendered once per record: one asctime, pid and logger for all
# lines, level always ERROR, and the last line is the bare prefix (the output ends with "\n").
# The format's ``tb_line`` cuts a header candidate into the record key (everything before the
# level except a syslog date, which journald stamps per line) + level + logger + the rest.
_TB_TAGS = r"^ ?(?:\[[^\]]*\] ?)*"  # request context / [instance: X] of the prefix
_TB_START = _TB_TAGS + r"(?:\s*\+ Exception Group )?Traceback \(most recent call last\):\s*$"
_TB_CHAIN = _TB_TAGS + (
    r"(?:During handling of the above exception, another exception occurred:"
    r"|The above exception was the direct cause of the following exception:)\s*$"
)
_TB_BLANK = _TB_TAGS + r"\s*$"


def tb_patterns(fmt: LineFormat) -> dict[str, str]:
    """The traceback-rule patterns the native tokenizer runs (same as :func:`traceback_lines`)."""
    return {"tb_line": fmt.tb_line, "tb_start": _TB_START, "tb_chain": _TB_CHAIN,
            "tb_blank": _TB_BLANK}


def traceback_lines(cand: pl.DataFrame, fmt: LineFormat) -> pl.Series:
    """Which header candidates are lines of a modern traceback (continuations of the record).

    ``cand``: the header candidates of a batch in file and line order (columns ``raw``,
    ``fidx``). A candidate *links* to the one before it when both are in the same file, it has
    level ``ERROR`` and the same key (timestamp, pid, logger, wrapper prefix). Within a run of
    linked lines, a traceback block opens at ``Traceback (most recent call last):`` and closes
    after a bare-prefix line (the end of ``print_exception`` output) that is not followed by a
    chain line (``During handling ...`` / ``The above exception ...``). Lines in an open block
    are continuations; anything else stays a record, so a genuine next record is never swallowed
    unless it repeats the same millisecond, pid and logger inside an unterminated traceback.
    Returns a Boolean Series aligned with ``cand``. The native tokenizer runs the same rule as a
    state machine (``native/src/tok.rs``)."""
    # only ERROR lines link, to the line before them: cut only those (the capture is slow)
    err = pl.col("raw").str.contains(" ERROR ", literal=True).fill_null(False)
    need = err | err.shift(-1).fill_null(False)
    g = cand.select(
        "fidx", pl.when(need).then(pl.col("raw")).str.extract_groups(fmt.tb_line).alias("g")
    ).unnest("g")
    key = pl.col("k") + " " + pl.col("lg")
    rest = pl.col("rest")
    pos = pl.int_range(pl.len(), dtype=pl.Int64)
    link = (
        (key == key.shift(1)) & (pl.col("fidx") == pl.col("fidx").shift(1)) & (pl.col("lvl") == "ERROR")
    ).fill_null(False)
    g = g.with_columns(
        link=link,
        start=link & rest.str.contains(_TB_START).fill_null(False),
        chain=link & rest.str.contains(_TB_CHAIN).fill_null(False),
        blank=link & rest.str.contains(_TB_BLANK).fill_null(False),
        pos=pos,
    ).with_columns(
        run=(~pl.col("link")).cum_sum(),
        end=pl.col("blank") & ~pl.col("chain").shift(-1).fill_null(False),
    )
    g = g.with_columns(
        s_pos=pl.when("start").then("pos").forward_fill().over("run"),
        e_prev=pl.when("end").then("pos").forward_fill().shift(1).over("run"),
    )
    return g.select(
        pl.col("link")
        & pl.col("s_pos").is_not_null()
        & (pl.col("e_prev").is_null() | (pl.col("e_prev") < pl.col("s_pos")))
    ).to_series()
