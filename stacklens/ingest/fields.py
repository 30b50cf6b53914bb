"""Per-line field rules of the oslo.log formats, shared by the Polars and the native tokenizer.

The regular expressions here are passed to the native tokenizer as data
(:func:`stacklens.ingest.tokenize._native_patterns`); the Polars expressions :func:`timestamp`
and :func:`context` are mirrored by hand in ``native/src/ts.rs`` and ``native/src/tok.rs``
(``tests/test_native.py`` keeps the two paths identical): change them together.

Sources: oslo.log ``logging_context_format_string`` / ``logging_default_format_string`` (Havana
to 2025.1) for the record header and context; syslog/journald ``short-precise`` for the syslog
wrapper; loghub's collector prefix; os-log-merger's ``'%s [%s] %s'`` entry format.
"""

from __future__ import annotations

import polars as pl

from stacklens.ingest.formats import LineFormat

__all__ = ["TS_YEARS", "context", "prefix", "timestamp", "trace_rx"]

#: Years a timestamp may have; other years make the timestamp unreadable (``bad_timestamp``),
#: never wrap. Every instant of 1970..2199 fits ``datetime[ns]`` and any two of them differ by
#: less than 2**63 ns (230 years = 7.3e18 ns), so durations never overflow INT64 downstream
#: (a 1700 and a 2200 time would: issue 15). 1970 keeps hosts whose clock was never set.
TS_YEARS = (1970, 2199)

_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_REQ = "req-" + _UUID
_BINARY = r"[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f]"
_OSLO_DATE = r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:[.,]\d+)?"
_DEBUG_SUFFIX = r"(?:\s*\{\{\(pid=\d+\) [^}]*\}\}|\s\S+ /\S+\.py:\d+)$"
_HAS_PID = r"^\d+$"
# wrapper prefixes (see prefix); shared with the native tokenizer
_PFX_PROG, _PFX_CORE = r"^(\S+) ", r"^\S+ "
_MRG_ALIAS, _MRG_CORE, _MRG_CORE_REP = r"^\S+ \S+ \[([^\]]+)\] ", r"^(\S+ \S+) \[[^\]]+\] ", "${1} "
_SYS_HEAD = r"^[A-Z][a-z]{2} +\d+ \S+ \S+ [^\s:\[]+(?:\[\d+\])?: "  # prog may hold '@'
_SYS_DATE = r"^([A-Z][a-z]{2} +\d+ \S+) "
_SYS_HOST = r"^[A-Z][a-z]{2} +\d+ \S+ (\S+) "
_SYS_PROG = r"^[A-Z][a-z]{2} +\d+ \S+ \S+ ([^\s:\[]+)"
_SYS_SPID = r"^[A-Z][a-z]{2} +\d+ \S+ \S+ [^\s:\[]+\[(\d+)\]"
_SYS_PLACEHOLDER = "0000-00-00 00:00:00 "


def prefix(fmt: LineFormat, raw: pl.Expr) -> dict[str, pl.Expr]:
    """Expressions splitting a wrapper prefix off ``raw``: ``core`` (the oslo part) and the
    prefix's own fields."""
    if fmt.name == "oslo_prefixed":
        return {"prog": raw.str.extract(_PFX_PROG, 1), "core": raw.str.replace(_PFX_CORE, "")}
    if fmt.name == "oslo_merged":
        return {
            "alias": raw.str.extract(_MRG_ALIAS, 1),
            "core": raw.str.replace(_MRG_CORE, _MRG_CORE_REP),
        }
    if fmt.name == "syslog":
        rest = raw.str.replace(_SYS_HEAD, "")
        return {
            "sysdate": raw.str.extract(_SYS_DATE, 1),
            "host": raw.str.extract(_SYS_HOST, 1),
            "prog": raw.str.extract(_SYS_PROG, 1),
            "spid": raw.str.extract(_SYS_SPID, 1),
            # journald lines without an oslo timestamp get a placeholder so one parser serves
            "core": pl.when(rest.str.contains("^" + _OSLO_DATE + " "))
            .then(rest)
            .otherwise(pl.lit(_SYS_PLACEHOLDER) + rest),
        }
    if fmt.name == "oslo_nots":  # a placeholder date so one parser serves; ts_ns stays null
        return {"core": pl.lit(_SYS_PLACEHOLDER) + raw}
    return {"core": raw}


def trace_rx(fmt: LineFormat) -> str:
    """Old releases' ``TRACE`` lines look like headers but continue the record above."""
    if fmt.name == "oslo_nots":
        return r"^(?:\d+ )?TRACE "
    return r"^\S+ \S+ (?:\d+ )?TRACE " if fmt.name == "oslo" else r" \d+ TRACE [\w.]+ "


def timestamp(fmt: LineFormat) -> pl.Expr:
    """``ts_text`` (``YYYY-MM-DD HH:MM:SS[.,]fff[fff]``) -> ns since epoch, UTC as assumed;
    null (unreadable) when malformed or its year is outside :data:`TS_YEARS`.

    The whole seconds are parsed with a cache (lines share their second) and the fraction is
    added as an integer, which is several times cheaper than parsing every full timestamp."""
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
    if fmt.name == "oslo_nots":
        return pl.lit(None, dtype=pl.Int64)
    if fmt.name != "syslog":
        return oslo
    sysd = pl.when(pl.col("_year").is_between(*TS_YEARS)).then(
        (pl.col("_year").cast(pl.String) + " " + pl.col("sysdate").str.replace(r"  +", " "))
        .str.strptime(pl.Datetime("ns"), "%Y %b %d %H:%M:%S%.f", strict=False)
        .cast(pl.Int64)
    )
    return pl.when(t.str.starts_with("0000")).then(sysd).otherwise(oslo)


def context() -> dict[str, pl.Expr]:
    """Fields of the oslo request context in all its eras, from the context split on spaces
    (columns ``_c_field_0`` .. ``_c_field_3``): ``req-X user tenant`` (Havana to Liberty),
    ``req-X user project domain user_domain project_domain`` (Mitaka on), ``None req-X ...`` and
    ``req-G req-X ...`` (global request id first, Pike on). ``-``/``None`` become null."""
    t = [pl.col(f"_c_field_{i}") for i in range(4)]
    two = (t[1].str.starts_with("req-") & (t[0].str.starts_with("req-") | (t[0] == "None"))).fill_null(False)
    one = t[0].str.starts_with("req-").fill_null(False) & ~two

    def _field(v: pl.Expr) -> pl.Expr:
        return pl.when(v.is_in(["-", "None", ""])).then(None).otherwise(v)

    return {
        "global_request_id": pl.when(two & (t[0] != "None")).then(t[0]),
        "request_id": pl.when(two).then(t[1]).when(one).then(t[0]),
        "user": _field(pl.when(two).then(t[2]).when(one).then(t[1])),
        "project": _field(pl.when(two).then(t[3]).when(one).then(t[2])),
    }
