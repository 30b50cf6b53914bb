"""The vectorized tokenizer: a batch of files' bytes -> records (events), quarantined lines,
stats.

Small files are tokenized together (one batch per format) so the fixed cost of a Polars plan is
paid once per batch, not once per file.

All per-line work runs as Polars expressions (Rust ``regex``, no Python loop per line). Regexes
that need capture groups are kept simple and anchored (the capture engine is the slow part);
header recognition uses one capture-free pattern, which runs as a DFA.

Record assembly: a physical line is a *header* when it matches the file's format, its level is
not ``TRACE`` (old releases prefix traceback lines like records) and it is not a line of a modern
traceback (oslo.log >= 1.2.0 prefixes them with ``ERROR`` and the record's own timestamp, pid and
logger: :func:`~stacklens.ingest.assembly.traceback_lines`). Every following non-header line is
a *continuation* of the record above it (tracebacks, multi-line headers), except: lines before
the first header (``before_first_record``: shell-trace preambles of devstack screen logs are
counted as ``shell_trace``), devstack shell-trace lines between records, lines with binary bytes,
and in os-log-merger and syslog/journald output the entries of other programs and their extra
lines (``merged_other``), which are quarantined with file and line number. Timestamps whose year is
outside :data:`~stacklens.ingest.fields.TS_YEARS` are unreadable (``bad_timestamp``); files
without timestamps (format ``oslo_nots``) give records with ``ts_ns`` null in file order, counted as ``no_timestamp``.

Native path: when the optional extension ``stacklens_native`` (Rust, ``native/`` in the repository)
is installed, :func:`tokenize_batch` runs the per-line work there (line splitting, header check,
record assembly, fields, timestamps, redaction) in one parallel pass and only the per-file
joins stay in Polars. It names no format: it gets every rule of the file's format as data
(:func:`native_patterns`, from :mod:`stacklens.ingest.formats`, :mod:`~stacklens.ingest.fields`
and :mod:`~stacklens.ingest.redact`) and produces the same tables as the Polars path below,
which stays the reference and the fallback (``tests/test_native.py`` compares the two on the
real logs and on fuzzed input). ``STACKLENS_NATIVE=0`` forces the Polars path. The timestamp
and request-context rules stay code on both sides; ``tests/test_native_drift.py`` fails when
they diverge.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field

import polars as pl

from stacklens.ingest.assembly import tb_patterns as _tb_patterns
from stacklens.ingest.assembly import traceback_lines as _traceback_lines
from stacklens.ingest.fields import (
    BINARY,
    DEBUG_SUFFIX,
    HAS_PID,
    INSTANCE,
    INSTANCE_TAG,
    SHELL_PREFIX,
    TS_YEARS,
)
from stacklens.ingest.fields import context as _context
from stacklens.ingest.fields import prefix as _prefix
from stacklens.ingest.fields import timestamp as _timestamp
from stacklens.ingest.formats import LineFormat
from stacklens.ingest.formats.base import OSLO_DATE, PLACEHOLDER
from stacklens.ingest.redact import _CHEAP, _REPLACEMENT, _SECRET, redact, redact_columns
from stacklens.settings import native_enabled

try:  # the native tokenizer is optional: built from native/ (see native/README.md)
    import stacklens_native as _native
except ImportError:  # pragma: no cover - depends on the installation
    _native = None

__all__ = [
    "FileChunk",
    "MAX_LINE_CHARS",
    "TokenizeResult",
    "count_lines",
    "native_available",
    "native_wanted",
    "tokenize",
    "tokenize_batch",
]

#: Longer lines are cut to this many characters (and counted as ``long_line``).
MAX_LINE_CHARS = 65_536
#: Quarantined raw text is cut to this many characters.
MAX_RAW_CHARS = 4_096
#: The native tokenizer splits a batch into tasks of about this many bytes (one per thread at a
#: time; large files are cut at record headers).
_NATIVE_TASK_BYTES = 4 << 20
@dataclass(frozen=True)
class FileChunk:
    """One file's decompressed bytes and its file-level names. ``host``/``service`` are None
    where the format names them per line; ``year`` completes syslog timestamps."""

    file: str
    data: bytes
    host: str | None
    service: str | None
    year: int


@dataclass
class TokenizeResult:
    """``events`` has the :data:`~stacklens.schema.EVENTS` columns up to ``n_lines`` (facts are
    added by :mod:`stacklens.ingest.facts`); ``quarantine`` has :data:`~stacklens.schema.QUARANTINE`
    columns; ``stats`` rows are ``(file, kind, severity, count, detail)``; ``lines`` counts
    physical lines per file."""

    events: pl.DataFrame
    quarantine: pl.DataFrame
    stats: list[tuple[str, str, str, int, str]] = field(default_factory=list)
    lines: dict[str, int] = field(default_factory=dict)


def _nonamed(rx: str) -> str:
    return re.sub(r"\(\?P<\w+>", "(?:", rx)


def split_lines(data: bytes) -> pl.Series:
    """Bytes -> one String per physical line (``\\n`` or ``\\r\\n``), invalid UTF-8 replaced by
    U+FFFD, empty lines as null. Uses Polars' CSV reader with no quoting as a fast line splitter;
    the unit-separator byte 0x1F it needs as field separator is replaced by ``?`` beforehand."""
    if not data:
        return pl.Series("raw", [], dtype=pl.String)
    return _split_prefixed([b"\n", data])


def _split_prefixed(parts: list[bytes]) -> pl.Series:
    """Lines of ``b"".join(parts)`` whose first part is ``b"\\n"`` (its empty row is dropped).

    The leading newline keeps the CSV reader from sniffing a compression signature ("x^", zstd
    magic) in the first bytes of a plain log."""
    buf = b"".join(p.replace(b"\x1f", b"?") if b"\x1f" in p else p for p in parts)
    df = pl.read_csv(
        io.BytesIO(buf),
        has_header=False,
        separator="\x1f",
        quote_char=None,
        new_columns=["raw"],
        infer_schema=False,
        encoding="utf8-lossy",
        truncate_ragged_lines=True,
    )
    return df.get_column("raw").slice(1)


def tokenize(
    data: bytes,
    fmt: LineFormat,
    *,
    file: str,
    host: str | None,
    service: str | None,
    year: int,
) -> TokenizeResult:
    """Tokenize one file's (decompressed) bytes; see :func:`tokenize_batch`."""
    return tokenize_batch([FileChunk(file, data, host, service, year)], fmt)


def _lines(chunks: list[FileChunk]) -> tuple[pl.DataFrame, list[int]]:
    """All physical lines of ``chunks``: columns ``raw``, ``fidx`` (chunk index, UInt32),
    ``line_no`` (1-based within its file); and the line count of each chunk."""
    parts, counts = [b"\n"], []
    for c in chunks:
        d = c.data
        if d and not d.endswith(b"\n"):
            d += b"\n"
        counts.append(d.count(b"\n"))
        parts.append(d)
    raw = _split_prefixed(parts)
    if raw.len() != sum(counts):  # defensive: split file by file if the reader disagrees
        per = [split_lines(p) for p in parts[1:]]
        raw, counts = pl.concat(per), [x.len() for x in per]
    starts = [0]
    for n in counts[:-1]:
        starts.append(starts[-1] + n)
    # file index of every line: the last file whose first line is at or before it
    row = pl.int_range(raw.len(), dtype=pl.Int64, eager=True)
    first = pl.Series("first", starts, dtype=pl.Int64)
    fidx = (first.search_sorted(row, side="right") - 1).cast(pl.UInt32)
    df = pl.DataFrame({"raw": raw, "fidx": fidx}).with_columns(
        line_no=row - first.gather(fidx) + 1
    )
    return df, counts


def native_available() -> bool:
    """True when the native tokenizer (``stacklens_native``) is installed."""
    return _native is not None


def native_wanted() -> bool:
    """True when ingest will use the native tokenizer: ``stacklens_native`` is importable and
    ``STACKLENS_NATIVE`` is not ``0`` (files of formats marked ``native=False`` still take the
    Polars path)."""
    return _native is not None and native_enabled()


def count_lines(data: bytes) -> int:
    """Physical lines of ``data``: newlines, plus one for an unterminated last line (as
    ``grep -c ''`` and the tokenizers count). Native (GIL released) when :func:`native_wanted`
    and the installed module has it, else ``bytes.count``; the same number either way."""
    fast = getattr(_native, "count_lines", None) if native_wanted() else None
    if fast is not None:
        return int(fast(data))
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def tokenize_batch(
    chunks: list[FileChunk], fmt: LineFormat, *, native: bool | None = None
) -> TokenizeResult:
    """Tokenize the bytes of several files of one format in one vectorized pass.

    Formats with per-line names (syslog, collector prefixes) override the chunks' ``host`` /
    ``service`` line by line. Never raises on content: damaged lines end up in ``quarantine`` and
    ``stats``; records never span two files.

    ``native``: use the native tokenizer (default: when installed and ``STACKLENS_NATIVE`` is
    not ``0``); both paths give the same tables.
    """
    if native is None:
        native = native_wanted()
    if native:
        if _native is None:
            raise RuntimeError("stacklens_native is not installed (see native/README.md)")
        res = _tokenize_native(chunks, fmt)
        if res is not None:
            return res
    return _tokenize_polars(chunks, fmt)


def _control_chars(chunks: list[FileChunk]) -> list[tuple[str, str, str, int, str]]:
    return [
        (c.file, "control_char", "error", c.data.count(b"\x1f"), "0x1F bytes replaced by '?'")
        for c in chunks
        if b"\x1f" in c.data
    ]


def _meta(chunks: list[FileChunk]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "fidx": pl.Series(range(len(chunks)), dtype=pl.UInt32),
            "file": [c.file for c in chunks],
            "_host": pl.Series([c.host for c in chunks], dtype=pl.String),
            "_service": pl.Series([c.service for c in chunks], dtype=pl.String),
            "_year": pl.Series([c.year for c in chunks], dtype=pl.Int32),
        }
    )


_LINE_STATS = {
    "long_line": ("error", f"lines over {MAX_LINE_CHARS} chars were cut"),
    "non_utf8": ("error", "invalid UTF-8 replaced by U+FFFD"),
    "blank_line": ("info", "empty lines"),
}


_NOTS_DETAIL = (
    "records without timestamps: kept in file order (line_no) with no time (ts_ns null); "
    "they group by request id but give no durations or cross-host order"
)
_Q_DETAIL = {
    "merged_other": "lines of other programs, not oslo records (os-log-merger entries; syslog or "
    "journald entries such as uwsgi's request lines or the kernel's), kept in the quarantine table",
}


def _quarantine_table(q: pl.DataFrame, meta: pl.DataFrame, stats: list) -> pl.DataFrame:
    """``(fidx, line_no, raw, reason)`` rows -> the quarantine table; counts go to ``stats``."""
    quarantine = q.join(meta.select("fidx", "file"), on="fidx", maintain_order="left").select(
        "file", "line_no", "reason", "raw"
    )
    for f, reason, n_q in (
        quarantine.group_by("file", "reason", maintain_order=True).len().iter_rows()
    ):
        severity = "info" if reason in ("before_first_record", "merged_other") else "error"
        detail = _Q_DETAIL.get(reason, "lines kept in the quarantine table")
        stats.append((f, reason, severity, n_q, detail))
    return quarantine


def _select_events(ev: pl.DataFrame, fmt: LineFormat, pid: pl.Expr, n_lines: pl.Expr) -> pl.DataFrame:
    """The events columns, in order, from a frame of parsed headers joined with ``meta``."""
    host_e = pl.col("_host")
    if fmt.per_line_host:
        host_e = pl.coalesce(pl.col("_host"), pl.col("host"))
    return ev.select(
        pl.col("ts_ns"),
        host_e.alias("host"),
        pl.coalesce(pl.col("_service"), _service_expr(fmt, ev)).alias("service"),
        pid.alias("pid"),
        "level",
        "logger",
        "request_id",
        "global_request_id",
        "user",
        "project",
        "instance_uuid",
        "message",
        "continuation",
        "file",
        "line_no",
        n_lines.alias("n_lines"),
    )


def native_patterns(fmt: LineFormat) -> dict[str, str]:
    """Everything format-specific the native tokenizer runs, as data (``{key: str}``): the
    format's regexes (:mod:`stacklens.ingest.formats`), the shared field rules
    (:mod:`stacklens.ingest.fields`), the traceback rule and redaction. Keys ``x_<col>`` are the
    prefix's extract rules (``x_svc`` is the column that names the service); ``ts`` is the
    timestamp kind, ``ts_year_min``/``ts_year_max`` :data:`~stacklens.ingest.fields.TS_YEARS`."""
    pre = fmt.prefix
    p = {
        "header": _nonamed(fmt.header),
        "trace": fmt.trace,
        "has_pid": HAS_PID,
        "debug_suffix": DEBUG_SUFFIX,
        "binary": BINARY,
        "shell_prefix": SHELL_PREFIX,
        "instance": INSTANCE,
        "instance_tag": INSTANCE_TAG,
        "ts": fmt.timestamp,
        "ts_year_min": str(TS_YEARS[0]),
        "ts_year_max": str(TS_YEARS[1]),
        "redact_cheap": _CHEAP,
        "redact_secret": _SECRET,
        "redact_replacement": _REPLACEMENT,
        **_tb_patterns(fmt),
    }
    for col, rx in pre.extract:
        p["x_svc" if col == fmt.service_from else f"x_{col}"] = rx
    if pre.strip is not None:
        p |= {"core": pre.strip, "core_rep": pre.strip_rep}
    if pre.placeholder:
        p |= {"oslo_date": "^" + OSLO_DATE + " ", "placeholder": PLACEHOLDER}
    if fmt.other is not None:
        p["other"] = fmt.other
    return p


_native_patterns = native_patterns  # the name tests/test_native.py uses


def _tokenize_native(chunks: list[FileChunk], fmt: LineFormat) -> TokenizeResult | None:
    """:func:`tokenize_batch` on the native tokenizer; None where it does not apply (syslog
    years it does not parse like Polars), then the Polars path runs."""
    if fmt.timestamp == "syslog" and not all(1000 <= c.year <= 9999 for c in chunks):
        return None
    if not fmt.native:  # e.g. oslo_nots: the native tokenizer has no untimed records
        return None
    stats = _control_chars(chunks)
    files = [c.file for c in chunks]
    ev_t, q_t, counts = _native.tokenize(
        [c.data for c in chunks],
        fmt.name,
        [c.year for c in chunks],
        _native_patterns(fmt),
        MAX_LINE_CHARS,
        MAX_RAW_CHARS,
        _NATIVE_TASK_BYTES,
    )
    lines = dict(zip(files, [c[0] for c in counts], strict=True))
    if not any(c[0] for c in counts):
        return TokenizeResult(pl.DataFrame(), pl.DataFrame(), stats, lines)
    for f, (_, *per_kind, _) in zip(files, counts, strict=True):  # long, lossy, blank
        for (kind, (sev, text)), n_k in zip(_LINE_STATS.items(), per_kind, strict=True):
            if n_k:
                stats.append((f, kind, sev, n_k, text))
    for f, c in zip(files, counts, strict=True):
        if c[4]:
            stats.append((f, "shell_trace", "info", c[4], "devstack shell-trace lines"))
    meta = _meta(chunks)
    quarantine = _quarantine_table(
        pl.Series(q_t).struct.unnest().select("fidx", "line_no", "raw", "reason"), meta, stats
    )
    nat = pl.Series(ev_t).struct.unnest()
    fidx = nat.get_column("fidx")
    ev = nat.rename({"svc": fmt.service_from or "prog"}).with_columns(
        file=meta.get_column("file").gather(fidx),
        _host=meta.get_column("_host").gather(fidx),
        _service=meta.get_column("_service").gather(fidx),
    )
    ev = _select_events(ev, fmt, pl.col("pid"), pl.col("n_lines"))
    return TokenizeResult(ev, quarantine, stats, lines)


def _tokenize_polars(chunks: list[FileChunk], fmt: LineFormat) -> TokenizeResult:
    """:func:`tokenize_batch` in Polars expressions: the reference and the fallback."""
    stats = _control_chars(chunks)
    files = [c.file for c in chunks]
    df, counts = _lines(chunks)
    lines = dict(zip(files, counts, strict=True))
    if df.height == 0:
        return TokenizeResult(pl.DataFrame(), pl.DataFrame(), stats, lines)
    meta = _meta(chunks)
    header_rx = _nonamed(fmt.header)
    raw = pl.col("raw")
    trace_rx = fmt.trace
    df = df.with_columns(
        long=raw.str.len_bytes() > MAX_LINE_CHARS,
        lossy=raw.str.contains("\ufffd", literal=True),
        is_header=(raw.str.contains(header_rx) & ~raw.str.contains(trace_rx)).fill_null(False),
    )
    header_line = df.get_column("is_header")  # before the traceback rule folds some
    cand_idx = header_line.arg_true()
    if cand_idx.len():
        tb = _traceback_lines(df[cand_idx].select("raw", "fidx"), fmt)
        if tb.any():
            df = df.with_columns(
                is_header=df.get_column("is_header").scatter(cand_idx.filter(tb), False)
            )
    foreign = pl.lit(False)
    if fmt.other is not None:
        # old releases' TRACE lines are full oslo lines too, and so are the header lines the
        # traceback rule folded: they stay continuations
        foreign = (
            ~header_line & raw.str.contains(fmt.other) & ~raw.str.contains(trace_rx)
        ).fill_null(False)
    opens = pl.col("is_header") | pl.col("foreign") | (pl.col("line_no") == 1)
    df = df.with_columns(foreign=foreign).with_columns(
        # a record never continues across files: each file's first line opens a segment;
        # a foreign line (os-log-merger entry of another program) opens a foreign segment
        rec=opens.cast(pl.Int64).cum_sum(),
        seg_head=pl.when(opens).then(pl.col("is_header")).forward_fill(),
        seg_foreign=pl.when(opens).then(pl.col("foreign")).forward_fill(),
    )
    per_file = (
        df.group_by("fidx")
        .agg(
            pl.col("long").sum().alias("long_line"),
            pl.col("lossy").sum().alias("non_utf8"),
            raw.is_null().sum().alias("blank_line"),
        )
        .join(meta.select("fidx", "file"), on="fidx")
    )
    for row in per_file.sort("fidx").iter_rows(named=True):
        for kind, (sev, text) in _LINE_STATS.items():
            if row[kind]:
                stats.append((row["file"], kind, sev, int(row[kind]), text))

    body = df.filter(~pl.col("is_header") & raw.is_not_null()).with_columns(
        binary=raw.str.contains(BINARY), shell=raw.str.starts_with(SHELL_PREFIX)
    )
    for fidx, n_shell in body.filter("shell").group_by("fidx").len().sort("fidx").iter_rows():
        stats.append((files[fidx], "shell_trace", "info", n_shell, "devstack shell-trace lines"))
    body = body.filter(~pl.col("shell"))
    q_cols: list[str | pl.Expr] = [
        "fidx",
        "line_no",
        redact(raw.str.slice(0, MAX_RAW_CHARS)).alias("raw"),
    ]
    quarantine = body.filter(pl.col("binary") | ~pl.col("seg_head")).select(
        *q_cols,
        pl.when(pl.col("binary"))
        .then(pl.lit("binary"))
        .when(pl.col("seg_foreign"))
        .then(pl.lit("merged_other"))
        .otherwise(pl.lit("before_first_record"))
        .alias("reason"),
    )
    cont_lines = body.filter(~pl.col("binary") & pl.col("seg_head"))
    cont = cont_lines.group_by("rec", maintain_order=True).agg(
        raw.str.slice(0, MAX_LINE_CHARS).str.join("\n").alias("continuation"),
        pl.len().alias("n_cont"),
    )
    pre = _prefix(fmt, pl.col("raw"))
    core = pl.col("core")
    # one lazy plan: Polars evaluates independent columns in parallel and shares sub-expressions
    n = {i: pl.col(f"_f_field_{i}").str.len_chars() for i in range(5)}
    # character offset of what follows "<date> <time> [<pid>] <LEVEL> <logger> "
    off = pl.when("_has_pid").then(n[0] + n[1] + n[2] + n[3] + n[4] + 5).otherwise(
        n[0] + n[1] + n[2] + n[3] + 4
    )
    rest = pl.col("_rest")
    ctx_end = rest.str.find("]", literal=True)
    # a context is "[...]" right after the logger; "[instance: ...]" there is the message's tag
    has_ctx = (
        rest.str.starts_with("[") & ~rest.str.starts_with(INSTANCE_TAG) & ctx_end.is_not_null()
    )
    long_lines = df.get_column("long").any()
    heads_lf = df.lazy().filter(pl.col("is_header")).select(
        "rec", "fidx", "line_no", raw.str.slice(0, MAX_LINE_CHARS) if long_lines else raw
    )
    if fmt.timestamp == "syslog":
        heads_lf = heads_lf.join(
            meta.lazy().select("fidx", "_year"), on="fidx", how="left", maintain_order="left"
        )
    # one lazy plan: Polars evaluates independent columns in parallel and shares sub-expressions;
    # fields are cut by position (split, slice) rather than by capturing regexes, which are slow
    heads = (
        heads_lf.with_columns(**pre)
        .with_columns(_f=core.str.split_exact(" ", 5))
        .unnest("_f", separator="_")
        .with_columns(_has_pid=pl.col("_f_field_2").str.contains(HAS_PID))
        .with_columns(_rest=core.str.slice(off))
        .with_columns(
            ctx=pl.when(has_ctx).then(rest.str.slice(1, ctx_end - 1)),
            message=pl.when(has_ctx).then(rest.str.slice(ctx_end + 2)).otherwise(rest),
            ts_text=pl.col("_f_field_0") + " " + pl.col("_f_field_1"),
            pid=pl.when("_has_pid").then(pl.col("_f_field_2")),
            level=pl.when("_has_pid").then(pl.col("_f_field_3")).otherwise(pl.col("_f_field_2")),
            logger=pl.when("_has_pid").then(pl.col("_f_field_4")).otherwise(pl.col("_f_field_3")),
        )
        .with_columns(_c=pl.col("ctx").str.split_exact(" ", 4))
        .unnest("_c", separator="_")
        .with_columns(**_context(), ts_ns=_timestamp(fmt))
        .collect()
    )
    if fmt.timestamp == "none":
        for fidx, n_nots in heads.group_by("fidx").len().sort("fidx").iter_rows():
            stats.append((files[fidx], "no_timestamp", "info", n_nots, _NOTS_DETAIL))
    bad_ts = heads.filter(pl.col("ts_ns").is_null() & (fmt.timestamp != "none"))
    if bad_ts.height:
        heads = heads.filter(pl.col("ts_ns").is_not_null())
        # the unreadable record goes to quarantine whole: its header and its continuation lines
        lost = cont_lines.join(bad_ts.select("rec"), on="rec", how="semi", maintain_order="left")
        cont = cont.join(bad_ts.select("rec"), on="rec", how="anti", maintain_order="left")
        quarantine = pl.concat(
            [
                quarantine,
                pl.concat([bad_ts.select("fidx", "line_no", "raw"),
                           lost.select("fidx", "line_no", "raw")])
                .select(*q_cols, pl.lit("bad_timestamp").alias("reason")),
            ]
        )
    quarantine = _quarantine_table(quarantine, meta, stats)
    msg = pl.col("message")
    heads = heads.with_columns(
        message=pl.when(pl.col("level") == "DEBUG")
        .then(msg.str.replace(DEBUG_SUFFIX, ""))
        .otherwise(msg),
        instance_uuid=msg.str.extract(INSTANCE, 1),
    )
    # row order is part of the result: records in file and line order
    ev = heads.join(cont, on="rec", how="left", maintain_order="left").join(
        meta.select("fidx", "file", "_host", "_service"), on="fidx", how="left",
        maintain_order="left",
    )
    pid_e = pl.col("pid")
    if "spid" in pre:
        pid_e = pl.coalesce(pl.col("pid"), pl.col("spid"))
    ev = _select_events(
        ev, fmt, pid_e.cast(pl.Int32, strict=False), (pl.col("n_cont").fill_null(0) + 1).cast(pl.Int32)
    )
    ev = redact_columns(ev, ["message", "continuation"])
    return TokenizeResult(ev, quarantine, stats, lines)


def _service_expr(fmt: LineFormat, heads: pl.DataFrame) -> pl.Expr:
    """Per-line service from the format's ``service_from`` column (syslog program, collector
    prefix, os-log-merger alias), named by its ``service_name``."""
    if fmt.service_from is None:
        return pl.lit(None, dtype=pl.String)
    col = fmt.service_from
    # few distinct names per file: map each once in Python, then vectorized
    names = [v for v in heads.get_column(col).unique().to_list() if v is not None]
    mapping = {v: fmt.service_name(v) for v in names}
    return pl.col(col).replace_strict(mapping, default=None, return_dtype=pl.String)
