"""Per-line field rules of the oslo.log formats, shared by the Polars and the native tokenizer.

Every format-specific fact comes from the format's module (:mod:`stacklens.ingest.formats`);
the rules here are generic over :class:`~stacklens.ingest.formats.LineFormat`. The regular
expressions and constants are passed to the native tokenizer as data
(:func:`stacklens.ingest.tokenize.native_patterns`). Two rules stay code on both sides: the
timestamp parser (:func:`timestamp`, ``native/src/ts.rs``) and the request-context split
(:func:`context`, ``native/src/rules.rs``); ``tests/test_native_drift.py`` runs a table of their
edge cases through both and fails when they diverge.

Sources: oslo.log ``logging_context_format_string`` / ``logging_default_format_string`` (Havana
to 2025.1) for the record header and context; syslog/journald ``short-precise`` for the syslog
wrapper; loghub's collector prefix; os-log-merger's ``'%s [%s] %s'`` entry format; devstack's
``stack.sh`` (``set -o xtrace``: shell-trace lines start with ``+ ``).
"""

from __future__ import annotations

import polars as pl

from stacklens.ingest.formats import LineFormat
from stacklens.ingest.formats.base import OSLO_DATE, PLACEHOLDER
from stacklens.vocab import UUID

__all__ = [
    "BINARY",
    "DEBUG_SUFFIX",
    "HAS_PID",
    "INSTANCE",
    "INSTANCE_TAG",
    "SHELL_PREFIX",
    "TS_YEARS",
    "context",
    "prefix",
    "timestamp",
    "trace_rx",
]

#: Years a timestamp may have; other years make the timestamp unreadable (``bad_timestamp``),
#: never wrap. Every instant of 1970..2199 fits ``datetime[ns]`` and any two of them differ by
#: less than 2**63 ns (230 years = 7.3e18 ns), so durations never overflow INT64 downstream
#: (a 1700 and a 2200 time would: issue 15). 1970 keeps hosts whose clock was never set.
TS_YEARS = (1970, 2199)

#: bytes that make a non-header line ``binary`` (quarantined): C0 controls but TAB..CR and ESC, DEL
BINARY = r"[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f]"
#: devstack's DEBUG suffix, cut off DEBUG messages: ``{{(pid=N) func /path/x.py:L}}`` or the
#: older `` func /path/x.py:L``
DEBUG_SUFFIX = r"(?:\s*\{\{\(pid=\d+\) [^}]*\}\}|\s\S+ /\S+\.py:\d+)$"
#: the third space-separated field is a pid (else it is the level)
HAS_PID = r"^\d+$"
#: devstack shell-trace lines (``set -o xtrace``) between records: counted, not kept
SHELL_PREFIX = "+ "
#: a message starting with this is tagged with an instance (nova's ``[instance: <uuid>]``), not a
#: request context
INSTANCE_TAG = "[instance: "
#: the instance tag with its UUID as group 1
INSTANCE = r"^\[instance: (" + UUID + r")\]"


def prefix(fmt: LineFormat, raw: pl.Expr) -> dict[str, pl.Expr]:
    """Expressions splitting the format's wrapper prefix (:class:`~stacklens.ingest.formats.
    Prefix`) off ``raw``: ``core`` (the oslo part, with :data:`~stacklens.ingest.formats.base.
    PLACEHOLDER` in front where the format has no timestamp there) and the prefix's own fields."""
    p = fmt.prefix
    out = {col: raw.str.extract(rx, 1) for col, rx in p.extract}
    core = raw if p.strip is None else raw.str.replace(p.strip, p.strip_rep)
    if p.placeholder:
        core = (
            pl.when(core.str.contains("^" + OSLO_DATE + " "))
            .then(core)
            .otherwise(pl.lit(PLACEHOLDER) + core)
        )
    out["core"] = core
    return out


def trace_rx(fmt: LineFormat) -> str:
    """Old releases' ``TRACE`` lines look like headers but continue the record above."""
    return fmt.trace


def timestamp(fmt: LineFormat) -> pl.Expr:
    """``ts_text`` (``YYYY-MM-DD HH:MM:SS[.,]fff[fff]``) -> ns since epoch, UTC as assumed;
    null (unreadable) when malformed or its year is outside :data:`TS_YEARS`. Syslog lines
    without an oslo timestamp (``ts_text`` is the placeholder's) take ``sysdate`` in the file's
    year (``_year``). Int64 ns.

    The whole seconds are parsed with a cache (lines share their second) and the fraction is
    added as an integer, which is several times cheaper than parsing every full timestamp."""
    if fmt.timestamp == "none":
        return pl.lit(None, dtype=pl.Int64)
    t = pl.col("ts_text")
    sec = t.str.slice(0, 19).str.strptime(
        pl.Datetime("ns"), "%Y-%m-%d %H:%M:%S", strict=False, cache=True
    )
    frac = t.str.slice(20, 9)
    frac_ns = pl.when(frac.str.len_bytes() > 0).then(
        frac.cast(pl.Int64, strict=False)
        * pl.lit(10, dtype=pl.Int64).pow(9 - frac.str.len_bytes().cast(pl.Int64))
    ).otherwise(0)
    well_formed = (
        t.str.len_bytes().is_between(19, 29)
        & ((t.str.len_bytes() == 19) | t.str.slice(19, 1).is_in([".", ","]))
        & t.str.slice(0, 4).cast(pl.Int32, strict=False).is_between(*TS_YEARS)
    )
    oslo = pl.when(well_formed).then(sec.cast(pl.Int64) + frac_ns)
    if fmt.timestamp == "oslo":
        return oslo
    sysd = pl.when(pl.col("_year").is_between(*TS_YEARS)).then(
        (pl.col("_year").cast(pl.String) + " " + pl.col("sysdate").str.replace(r"  +", " "))
        .str.strptime(pl.Datetime("ns"), "%Y %b %d %H:%M:%S%.f", strict=False)
        .cast(pl.Int64)
    )
    return pl.when(t.str.starts_with(PLACEHOLDER[:4])).then(sysd).otherwise(oslo)


def context() -> dict[str, pl.Expr]:
    """Fields of the oslo request context in all its eras, from the context split on spaces
    (columns ``_c_field_0`` .. ``_c_field_3``): ``req-X user tenant`` (Havana to Liberty),
    ``req-X user project domain user_domain project_domain`` (Mitaka on), ``None req-X ...`` and
    ``req-G req-X ...`` (global request id first, Pike on). ``-``/``None`` become null."""
    t = [pl.col(f"_c_field_{i}") for i in range(4)]
    two = (
        t[1].str.starts_with("req-") & (t[0].str.starts_with("req-") | (t[0] == "None"))
    ).fill_null(False)
    one = t[0].str.starts_with("req-").fill_null(False) & ~two

    def _field(v: pl.Expr) -> pl.Expr:
        return pl.when(v.is_in(["-", "None", ""])).then(None).otherwise(v)

    return {
        "global_request_id": pl.when(two & (t[0] != "None")).then(t[0]),
        "request_id": pl.when(two).then(t[1]).when(one).then(t[0]),
        "user": _field(pl.when(two).then(t[2]).when(one).then(t[1])),
        "project": _field(pl.when(two).then(t[3]).when(one).then(t[2])),
    }
