"""The vectorized tokenizer: one file's bytes -> records (events), quarantined lines, stats.

All per-line work runs as Polars expressions (Rust ``regex``, no Python loop per line). Regexes
that need capture groups are kept simple and anchored (the capture engine is the slow part);
header recognition uses one capture-free pattern, which runs as a DFA.

Record assembly: a physical line is a *header* when it matches the file's format (and its level
is not ``TRACE``: old releases prefix traceback lines like records). Every following non-header
line is a *continuation* of the record above it (tracebacks, multi-line headers), except:
lines before the first header (``before_first_record``: shell-trace preambles of devstack screen
logs are counted as ``shell_trace``), devstack shell-trace lines between records, and lines with
binary bytes, which are quarantined with file and line number.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field

import polars as pl

from stacklens.ingest.formats import LineFormat
from stacklens.ingest.names import MERGER_ALIASES, service_from_name
from stacklens.ingest.redact import redact, redact_columns

__all__ = ["MAX_LINE_CHARS", "TokenizeResult", "tokenize"]

#: Longer lines are cut to this many characters (and counted as ``long_line``).
MAX_LINE_CHARS = 65_536
#: Quarantined raw text is cut to this many characters.
MAX_RAW_CHARS = 4_096

_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_REQ = "req-" + _UUID
_BINARY = r"[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f]"
_OSLO_DATE = r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:[.,]\d+)?"
# simple anchored extractors over the oslo core "<date> <time> [<pid>] <LEVEL> <logger> [<ctx>]"
_X_CTX = r"^\S+ \S+ (?:\d+ )?[A-Z]+ \S+ \[([^\]]*)\]"
_CORE_HEAD = r"^\S+ \S+ (?:\d+ )?[A-Z]+ \S+(?: \[[^\]]*\])? ?"
_DEBUG_SUFFIX = r"(?:\s*\{\{\(pid=\d+\) [^}]*\}\}|\s\S+ /\S+\.py:\d+)$"


@dataclass
class TokenizeResult:
    """``events`` has the :data:`~stacklens.schema.EVENTS` columns up to ``n_lines`` (facts are
    added by :mod:`stacklens.ingest.facts`); ``quarantine`` has :data:`~stacklens.schema.QUARANTINE`
    columns; ``stats`` rows are ``(kind, severity, count, detail)``."""

    events: pl.DataFrame
    quarantine: pl.DataFrame
    stats: list[tuple[str, str, int, str]] = field(default_factory=list)
    lines: int = 0


def _nonamed(rx: str) -> str:
    return re.sub(r"\(\?P<\w+>", "(?:", rx)


def split_lines(data: bytes) -> pl.Series:
    """Bytes -> one String per physical line (``\\n`` or ``\\r\\n``), invalid UTF-8 replaced by
    U+FFFD, empty lines as null. Uses Polars' CSV reader with no quoting as a fast line splitter;
    the unit-separator byte 0x1F it needs as field separator is replaced by ``?`` beforehand."""
    if not data:
        return pl.Series("raw", [], dtype=pl.String)
    # a leading newline keeps the CSV reader from sniffing a compression signature ("x^",
    # zstd magic) in the first bytes of a plain log; its empty row is dropped below
    df = pl.read_csv(
        io.BytesIO(b"\n" + data.replace(b"\x1f", b"?")),
        has_header=False,
        separator="\x1f",
        quote_char=None,
        new_columns=["raw"],
        infer_schema=False,
        encoding="utf8-lossy",
        truncate_ragged_lines=True,
    )
    return df.get_column("raw").slice(1)


def _prefix(fmt: LineFormat, raw: pl.Expr) -> dict[str, pl.Expr]:
    """Expressions splitting a wrapper prefix off ``raw``: ``core`` (the oslo part) and the
    prefix's own fields."""
    if fmt.name == "oslo_prefixed":
        return {"prog": raw.str.extract(r"^(\S+) ", 1), "core": raw.str.replace(r"^\S+ ", "")}
    if fmt.name == "oslo_merged":
        return {
            "alias": raw.str.extract(r"^\S+ \S+ \[([^\]]+)\] ", 1),
            "core": raw.str.replace(r"^(\S+ \S+) \[[^\]]+\] ", "${1} "),
        }
    if fmt.name == "syslog":
        head = r"^[A-Z][a-z]{2} +\d+ \S+ \S+ [^\s:\[]+(?:\[\d+\])?: "  # prog may hold '@'
        rest = raw.str.replace(head, "")
        return {
            "sysdate": raw.str.extract(r"^([A-Z][a-z]{2} +\d+ \S+) ", 1),
            "host": raw.str.extract(r"^[A-Z][a-z]{2} +\d+ \S+ (\S+) ", 1),
            "prog": raw.str.extract(r"^[A-Z][a-z]{2} +\d+ \S+ \S+ ([^\s:\[]+)", 1),
            "spid": raw.str.extract(r"^[A-Z][a-z]{2} +\d+ \S+ \S+ [^\s:\[]+\[(\d+)\]", 1),
            # journald lines without an oslo timestamp get a placeholder so one parser serves
            "core": pl.when(rest.str.contains("^" + _OSLO_DATE + " "))
            .then(rest)
            .otherwise(pl.lit("0000-00-00 00:00:00 ") + rest),
        }
    return {"core": raw}


def _timestamp(fmt: LineFormat, year: int) -> pl.Expr:
    oslo = (
        pl.col("ts_text")
        .str.replace(",", ".", literal=True)
        .str.strptime(pl.Datetime("ns"), "%Y-%m-%d %H:%M:%S%.f", strict=False)
    )
    if fmt.name != "syslog":
        return oslo.cast(pl.Int64)
    sysd = (
        (pl.lit(f"{year} ") + pl.col("sysdate").str.replace(r"  +", " "))
        .str.strptime(pl.Datetime("ns"), "%Y %b %d %H:%M:%S%.f", strict=False)
    )
    return pl.when(pl.col("ts_text").str.starts_with("0000")).then(sysd).otherwise(oslo).cast(
        pl.Int64
    )


def _context() -> dict[str, pl.Expr]:
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


def tokenize(
    data: bytes,
    fmt: LineFormat,
    *,
    file: str,
    host: str | None,
    service: str | None,
    year: int,
) -> TokenizeResult:
    """Tokenize the (decompressed) bytes of one log file of format ``fmt``.

    ``host``/``service`` are the file-level names; formats with per-line names (syslog, collector
    prefixes) override them line by line. ``year`` completes syslog timestamps, which carry none.
    Never raises on content: damaged lines end up in ``quarantine`` and ``stats``.
    """
    stats: list[tuple[str, str, int, str]] = []
    raw_s = split_lines(data)
    n = raw_s.len()
    if n == 0:
        return TokenizeResult(pl.DataFrame(), pl.DataFrame(), stats, 0)
    if b"\x1f" in data:
        stats.append(("control_char", "error", data.count(b"\x1f"), "0x1F bytes replaced by '?'"))
    header_rx = _nonamed(fmt.header)
    raw = pl.col("raw")
    df = (
        pl.DataFrame({"raw": raw_s})
        .with_row_index("line_no", offset=1)
        .with_columns(pl.col("line_no").cast(pl.Int64))
        .with_columns(
            long=raw.str.len_bytes() > MAX_LINE_CHARS,
            lossy=raw.str.contains("\ufffd", literal=True),
            is_header=raw.str.contains(header_rx) & ~raw.str.contains(r"^\S+ \S+ (?:\d+ )?TRACE "),
        )
    )
    # old-style TRACE lines behind a wrapper prefix
    if fmt.name != "oslo":
        df = df.with_columns(
            is_header=pl.col("is_header") & ~raw.str.contains(r" \d+ TRACE [\w.]+ ")
        )
    df = df.with_columns(rec=pl.col("is_header").cast(pl.Int64).cum_sum())
    counts = df.select(
        pl.col("long").sum().alias("long"),
        pl.col("lossy").sum().alias("lossy"),
        raw.is_null().sum().alias("blank"),
    ).row(0, named=True)
    if counts["long"]:
        stats.append(
            ("long_line", "error", counts["long"], f"lines over {MAX_LINE_CHARS} chars were cut")
        )
    if counts["lossy"]:
        stats.append(("non_utf8", "error", counts["lossy"], "invalid UTF-8 replaced by U+FFFD"))
    if counts["blank"]:
        stats.append(("blank_line", "info", counts["blank"], "empty lines"))

    body = df.filter(~pl.col("is_header") & raw.is_not_null()).with_columns(
        binary=raw.str.contains(_BINARY)
    )
    shell = body.get_column("raw").str.starts_with("+ ")
    if shell.sum():
        stats.append(("shell_trace", "info", int(shell.sum()), "devstack shell-trace lines"))
    body = body.filter(~shell)
    bad = body.filter(pl.col("binary") | (pl.col("rec") == 0))
    quarantine = bad.select(
        pl.lit(file).alias("file"),
        "line_no",
        pl.when(pl.col("binary"))
        .then(pl.lit("binary"))
        .otherwise(pl.lit("before_first_record"))
        .alias("reason"),
        redact(raw.str.slice(0, MAX_RAW_CHARS)).alias("raw"),
    )
    cont = (
        body.filter(~pl.col("binary") & (pl.col("rec") > 0))
        .group_by("rec", maintain_order=True)
        .agg(
            raw.str.slice(0, MAX_LINE_CHARS).str.join("\n").alias("continuation"),
            pl.len().alias("n_cont"),
        )
    )
    pre = _prefix(fmt, pl.col("raw"))
    core = pl.col("core")
    # one lazy plan: Polars evaluates independent columns in parallel and shares sub-expressions
    heads_lf = (
        df.lazy()
        .filter(pl.col("is_header"))
        .select("rec", "line_no", raw.str.slice(0, MAX_LINE_CHARS))
        .with_columns(**pre)
        .with_columns(
            _f=core.str.slice(0, 512).str.split_exact(" ", 5),
            ctx=core.str.extract(_X_CTX, 1),
            message=core.str.replace(_CORE_HEAD, ""),
        )
        .unnest("_f", separator="_")
        .with_columns(_has_pid=pl.col("_f_field_2").str.contains(r"^\d+$"))
        .with_columns(
            ts_text=pl.col("_f_field_0") + " " + pl.col("_f_field_1"),
            pid=pl.when("_has_pid").then(pl.col("_f_field_2")),
            level=pl.when("_has_pid").then(pl.col("_f_field_3")).otherwise(pl.col("_f_field_2")),
            logger=pl.when("_has_pid").then(pl.col("_f_field_4")).otherwise(pl.col("_f_field_3")),
            _c=pl.col("ctx").str.split_exact(" ", 4),
        )
        .unnest("_c", separator="_")
        .with_columns(**_context(), ts_ns=_timestamp(fmt, year))
    )
    heads = heads_lf.collect()
    bad_ts = heads.filter(pl.col("ts_ns").is_null())
    if bad_ts.height:
        quarantine = pl.concat(
            [
                quarantine,
                bad_ts.select(
                    pl.lit(file).alias("file"),
                    "line_no",
                    pl.lit("bad_timestamp").alias("reason"),
                    redact(raw.str.slice(0, MAX_RAW_CHARS)).alias("raw"),
                ),
            ]
        )
        heads = heads.filter(pl.col("ts_ns").is_not_null())
        lost = cont.join(bad_ts.select("rec"), on="rec", how="semi")
        if lost.height:
            cont = cont.join(bad_ts.select("rec"), on="rec", how="anti")
            lines = body.join(lost.select("rec"), on="rec", how="semi").filter(~pl.col("binary"))
            quarantine = pl.concat([quarantine, lines.select(
                pl.lit(file).alias("file"),
                "line_no",
                pl.lit("bad_timestamp").alias("reason"),
                redact(raw.str.slice(0, MAX_RAW_CHARS)).alias("raw"),
            )])
    msg = pl.col("message")
    heads = heads.with_columns(
        message=pl.when(pl.col("level") == "DEBUG")
        .then(msg.str.replace(_DEBUG_SUFFIX, ""))
        .otherwise(msg),
        instance_uuid=msg.str.extract(r"^\[instance: (" + _UUID + r")\]", 1),
    )
    for reason, n_q in quarantine.group_by("reason", maintain_order=True).len().iter_rows():
        severity = "info" if reason == "before_first_record" else "error"
        stats.append((reason, severity, n_q, "lines kept in the quarantine table"))
    ev = heads.join(cont, on="rec", how="left")
    host_e = pl.lit(host, dtype=pl.String)
    if fmt.per_line_host:
        host_e = pl.coalesce(pl.col("host"), host_e) if host is None else host_e
    pid_e = pl.col("pid")
    if "spid" in pre:
        pid_e = pl.coalesce(pl.col("pid"), pl.col("spid"))
    ev = ev.select(
        pl.col("ts_ns"),
        host_e.alias("host"),
        _service_expr(fmt, service, heads).alias("service"),
        pid_e.cast(pl.Int32, strict=False).alias("pid"),
        "level",
        "logger",
        "request_id",
        "global_request_id",
        "user",
        "project",
        "instance_uuid",
        "message",
        "continuation",
        pl.lit(file).alias("file"),
        "line_no",
        (pl.col("n_cont").fill_null(0) + 1).cast(pl.Int32).alias("n_lines"),
    )
    ev = redact_columns(ev, ["message", "continuation"])
    return TokenizeResult(ev, quarantine, stats, n)


def _service_expr(fmt: LineFormat, service: str | None, heads: pl.DataFrame) -> pl.Expr:
    """File-level service, or per-line from the syslog program / collector prefix / alias."""
    if service is not None or not fmt.per_line_service:
        return pl.lit(service, dtype=pl.String)
    col = "alias" if fmt.name == "oslo_merged" else "prog"
    # few distinct names per file: map each once in Python, then vectorized
    names = [v for v in heads.get_column(col).unique().to_list() if v is not None]
    if fmt.name == "oslo_merged":
        mapping = {v: MERGER_ALIASES.get(v.upper(), v.lower()) for v in names}
    else:
        mapping = {v: service_from_name(v) for v in names}
    return pl.col(col).replace_strict(mapping, default=None, return_dtype=pl.String)
