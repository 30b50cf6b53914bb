//! The tokenizer: a batch of files' bytes -> events, quarantine and per-file counters, with the
//! exact semantics of the Polars path in `stacklens/ingest/tokenize.py` (the reference).
//!
//! Every regular expression comes from Python (one source of truth) and runs on the same engine
//! Polars uses (the `regex` crate). Hand-written code is used only where it is provably the same:
//! the oslo header/TRACE check on ASCII text (it defers to the regexes on any non-ASCII byte, and
//! only when the patterns are the ones it was written for), field splitting on spaces, character
//! slicing, the context rules and the timestamps (see `ts.rs`).
//!
//! Work is split into pieces (a file, or a part of a large file that starts at a header line, so
//! no record crosses a piece) processed in parallel with rayon, then concatenated in order.
//!
//! This file holds the compiled patterns (`Rx`), the per-line rules they drive and the parallel
//! batch driver (`tokenize`); the rest lives in submodules:
//!
//! | module | what |
//! |---|---|
//! | `tok/scan.rs` | the line loop over one piece, traceback linking, cutting files into pieces |
//! | `tok/record.rs` | a header line parsed into an event row; closing a record |
//! | `tok/out.rs` | event / quarantine columns, per-file counters, batch assembly |
//! | `tok/strs.rs` | string helpers with Polars' semantics (`str.slice`, `cast(Int32)`) |

mod out;
mod record;
mod scan;
mod strs;

use std::borrow::Cow;
use std::collections::HashMap;

use rayon::prelude::*;
use regex::Regex;

use crate::arrow::{fields, Column, PrimCol, StrCol};
use crate::fast::{debug_suffix_start, oslo_fast, oslo_tb_fast, DEBUG_SUFFIX, OSLO_HEADER, OSLO_TB_LINE, OSLO_TRACE};
use crate::redact::{Windowed, CHEAP, SECRET};
use crate::rules::{self, has_binary, instance_uuid};

pub use out::Batch;
use out::{concat_q, event_columns, Events, TaskOut, REASONS};
use scan::Piece;
#[cfg(test)]
pub(crate) use strs::{cast_i32, slice_chars};

/// Which parser gives a record's time (the format's `timestamp`, pattern key `ts`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum TsKind {
    /// the oslo timestamp
    Oslo,
    /// the oslo timestamp, or (after the placeholder) the syslog date in the file's year
    Syslog,
}

/// Compiled patterns and limits for one format. Nothing here names a format: every
/// format-specific rule arrives as a pattern (see `tokenize.native_patterns`).
pub struct Rx {
    ts_kind: TsKind,
    /// `fields.TS_YEARS`
    years: (i64, i64),
    fast_oslo: bool,
    fast_binary: bool,
    fast_instance: bool,
    binary: Regex,
    instance: Regex,
    /// `fields.INSTANCE_TAG`: a `[...]` after the logger starting so is the message's, not a context
    instance_tag: String,
    /// `fields.SHELL_PREFIX`
    shell_prefix: String,
    fast_debug: bool,
    /// `tb_line` is `OSLO_TB_LINE` (`oslo_tb_fast` on ASCII lines)
    fast_tb: bool,
    header: Regex,
    trace: Regex,
    has_pid: Regex,
    debug_suffix: Regex,
    cheap: Regex,
    secret: Regex,
    /// windowed redaction, when the patterns are `CHEAP` and `SECRET` (redact.rs)
    windowed: Option<Windowed>,
    replacement: String,
    /// the prefix's extract rules (`x_svc`, `x_host`, `x_spid`, `x_sysdate`; group 1)
    x_svc: Option<Regex>,
    x_host: Option<Regex>,
    x_spid: Option<Regex>,
    x_sysdate: Option<Regex>,
    /// the prefix strip rule: first match replaced by `core_rep`
    core: Option<Regex>,
    core_rep: String,
    /// with `placeholder`: put in front of a core that does not match `oslo_date`
    oslo_date: Option<Regex>,
    placeholder: Option<String>,
    /// entries of other programs (the format's `other`: os-log-merger)
    other: Option<Regex>,
    tb_line: Regex,
    tb_start: Regex,
    tb_chain: Regex,
    tb_blank: Regex,
    max_line: usize,
    max_raw: usize,
}

fn rx(p: &HashMap<String, String>, key: &str) -> Result<Regex, String> {
    let pat = p.get(key).ok_or_else(|| format!("pattern {key:?} missing"))?;
    Regex::new(pat).map_err(|e| format!("pattern {key:?}: {e}"))
}

fn opt_rx(p: &HashMap<String, String>, key: &str) -> Result<Option<Regex>, String> {
    if p.contains_key(key) {
        rx(p, key).map(Some)
    } else {
        Ok(None)
    }
}

impl Rx {
    pub fn new(fmt: &str, p: &HashMap<String, String>, max_line: usize, max_raw: usize) -> Result<Rx, String> {
        let s = |k: &str| p.get(k).cloned().unwrap_or_default();
        let ts_kind = match s("ts").as_str() {
            "oslo" => TsKind::Oslo,
            "syslog" => TsKind::Syslog,
            other => return Err(format!("format {fmt:?}: timestamp kind {other:?} is not supported")),
        };
        let year = |k: &str| -> Result<i64, String> { s(k).parse::<i64>().map_err(|e| format!("pattern {k:?}: {e}")) };
        if p.contains_key("placeholder") != p.contains_key("oslo_date") {
            return Err("patterns \"placeholder\" and \"oslo_date\" go together".into());
        }
        if p.contains_key("core_rep") && !p.contains_key("core") {
            return Err("pattern \"core_rep\" without \"core\"".into());
        }
        if ts_kind == TsKind::Syslog && !(p.contains_key("x_sysdate") && p.contains_key("placeholder")) {
            return Err("syslog timestamps need patterns \"x_sysdate\" and \"placeholder\"".into());
        }
        Ok(Rx {
            ts_kind,
            years: (year("ts_year_min")?, year("ts_year_max")?),
            fast_oslo: s("header") == OSLO_HEADER && s("trace") == OSLO_TRACE,
            fast_binary: s("binary") == rules::BINARY,
            fast_instance: s("instance") == rules::INSTANCE,
            binary: rx(p, "binary")?,
            instance: rx(p, "instance")?,
            instance_tag: p
                .get("instance_tag")
                .cloned()
                .ok_or("pattern \"instance_tag\" missing")?,
            shell_prefix: p
                .get("shell_prefix")
                .cloned()
                .ok_or("pattern \"shell_prefix\" missing")?,
            fast_debug: s("debug_suffix") == DEBUG_SUFFIX,
            fast_tb: s("tb_line") == OSLO_TB_LINE,
            header: rx(p, "header")?,
            trace: rx(p, "trace")?,
            has_pid: rx(p, "has_pid")?,
            debug_suffix: rx(p, "debug_suffix")?,
            cheap: rx(p, "redact_cheap")?,
            secret: rx(p, "redact_secret")?,
            windowed: if s("redact_secret") == SECRET && s("redact_cheap") == CHEAP {
                Some(Windowed::new()?)
            } else {
                None
            },
            replacement: p
                .get("redact_replacement")
                .cloned()
                .ok_or("pattern \"redact_replacement\" missing")?,
            x_svc: opt_rx(p, "x_svc")?,
            x_host: opt_rx(p, "x_host")?,
            x_spid: opt_rx(p, "x_spid")?,
            x_sysdate: opt_rx(p, "x_sysdate")?,
            core: opt_rx(p, "core")?,
            core_rep: s("core_rep"),
            oslo_date: opt_rx(p, "oslo_date")?,
            placeholder: p.get("placeholder").cloned(),
            other: opt_rx(p, "other")?,
            tb_line: rx(p, "tb_line")?,
            tb_start: rx(p, "tb_start")?,
            tb_chain: rx(p, "tb_chain")?,
            tb_blank: rx(p, "tb_blank")?,
            max_line,
            max_raw,
        })
    }
}

impl Rx {
    /// Which hand-written fast paths are on (each needs the exact pattern it was written for).
    pub fn fast_paths(&self) -> Vec<(&'static str, bool)> {
        vec![
            ("oslo_header", self.fast_oslo),
            ("debug_suffix", self.fast_debug),
            ("tb_line", self.fast_tb),
            ("redact", self.windowed.is_some()),
        ]
    }
}

// ---------------------------------------------------------------------------------------------

impl Rx {
    /// `redact()` of redact.py: when the cheap filter matches, every secret replaced.
    fn redact<'a>(&self, s: &'a str) -> Cow<'a, str> {
        match &self.windowed {
            Some(w) => w.redact(&self.cheap, &self.secret, &self.replacement, s),
            None if self.cheap.is_match(s) => self.secret.replace_all(s, self.replacement.as_str()),
            None => Cow::Borrowed(s),
        }
    }

    fn is_header(&self, s: &str) -> bool {
        if self.fast_oslo {
            if let Some(v) = oslo_fast(s.as_bytes()) {
                return v;
            }
        }
        self.header.is_match(s) && !self.trace.is_match(s)
    }

    fn strip_debug<'a>(&self, m: &'a str) -> Cow<'a, str> {
        let b = m.as_bytes();
        // the suffix ends with "}}" or with a (possibly non-ASCII) digit
        let maybe = b.ends_with(b"}}") || matches!(b.last(), Some(&c) if c.is_ascii_digit() || c >= 0x80);
        if !maybe {
            Cow::Borrowed(m)
        } else if self.fast_debug && b.is_ascii() {
            Cow::Borrowed(&m[..debug_suffix_start(b).unwrap_or(b.len())])
        } else {
            self.debug_suffix.replacen(m, 1, "")
        }
    }

    fn has_binary(&self, s: &str) -> bool {
        if self.fast_binary {
            has_binary(s.as_bytes())
        } else {
            self.binary.is_match(s)
        }
    }

    fn instance_uuid<'a>(&self, m: &'a str) -> Option<&'a str> {
        if self.fast_instance {
            instance_uuid(m)
        } else {
            self.instance.captures(m).and_then(|c| c.get(1)).map(|g| g.as_str())
        }
    }

    fn has_pid(&self, f: &str) -> bool {
        if f.is_ascii() {
            !f.is_empty() && f.bytes().all(|c| c.is_ascii_digit())
        } else {
            self.has_pid.is_match(f)
        }
    }

    /// `(key, rest, is_error)` of a header candidate for the modern-traceback rule
    /// (`tokenize._TB_LINE`): the key is the wrapper prefix, timestamp, pid (group `k`) and
    /// logger (`lg`), compared as a pair: every format's `lg` is `\S+`, so `tokenize.py`'s
    /// string `k + " " + lg` splits at its last space and pairs are equal exactly when those
    /// strings are (`tests/test_native_drift.py` checks the patterns); None unless the level
    /// is ERROR (only ERROR lines can link) or the pattern does not match.
    fn tb_key<'s>(&self, s: &'s str, need_error: bool) -> Option<((&'s str, &'s str), &'s str, bool)> {
        if self.fast_tb {
            if let Some(got) = oslo_tb_fast(s.as_bytes()) {
                let (k, lvl, lg) = got?;
                let is_err = &s[k..lvl] == "ERROR";
                if need_error && !is_err {
                    return None;
                }
                return Some(((&s[..k], &s[lvl + 1..lg]), &s[lg..], is_err));
            }
        }
        let c = self.tb_line.captures(s)?;
        let lvl = c.name("lvl")?.as_str();
        let is_err = lvl == "ERROR";
        if need_error && !is_err {
            return None;
        }
        Some((
            (c.name("k")?.as_str(), c.name("lg")?.as_str()),
            c.name("rest")?.as_str(),
            is_err,
        ))
    }
}

/// Tokenize a batch: `datas[i]` is file `i`, `years[i]` its syslog year. Pieces of about
/// `task_bytes` are processed in parallel; events come back as one chunk per task.
pub fn tokenize(rx: &Rx, datas: &[&[u8]], years: &[i32], task_bytes: usize) -> Batch {
    let pieces: Vec<Piece> = datas
        .par_iter()
        .enumerate()
        .flat_map_iter(|(i, d)| rx.split_file(i as u32, d, years[i], task_bytes))
        .collect();
    // tasks: runs of consecutive pieces of at least task_bytes (small files go together)
    let mut tasks: Vec<&[Piece]> = Vec::new();
    let (mut start, mut size) = (0, 0);
    for (i, p) in pieces.iter().enumerate() {
        size += p.data.len();
        if size >= task_bytes {
            tasks.push(&pieces[start..=i]);
            (start, size) = (i + 1, 0);
        }
    }
    if start < pieces.len() {
        tasks.push(&pieces[start..]);
    }
    let mut outs: Vec<TaskOut> = tasks
        .par_iter()
        .map(|ps| {
            let mut out = TaskOut::default();
            ps.iter().for_each(|p| rx.run_piece(p, &mut out));
            out
        })
        .collect();

    // line numbers: each piece counted from 1; add the lines of the file's earlier pieces
    let mut counts = vec![[0u64; 5]; datas.len()];
    for o in outs.iter_mut() {
        let mut begin = [0usize; 4];
        let segs = std::mem::take(&mut o.segs);
        for seg in &segs {
            let c = &mut counts[seg.fidx as usize];
            let base = c[0] as i64;
            if base != 0 {
                for (k, col) in o.line_cols().into_iter().enumerate() {
                    col[begin[k]..seg.ends[k]].iter_mut().for_each(|x| *x += base);
                }
            }
            for (total, n) in c.iter_mut().zip(seg.counts) {
                *total += n;
            }
            begin = seg.ends;
        }
    }
    let (mut qb, mut qh, mut ql) = (Vec::new(), Vec::new(), Vec::new());
    let mut events = Vec::with_capacity(outs.len());
    for o in outs {
        if !o.ev.line_no.is_empty() {
            events.push(event_columns(o.ev));
        }
        qb.push(o.q_body);
        qh.push(o.q_bad_head);
        ql.push(o.q_bad_line);
    }
    // quarantine order: body lines, then unreadable-timestamp headers, then their lines
    let q = concat_q(qb.into_iter().chain(qh).chain(ql).collect());
    let mut reason = StrCol::default();
    for r in &q.reason {
        reason.push(Some(REASONS[*r as usize]));
    }
    let quarantine = vec![
        ("fidx", Column::U32(PrimCol::all_valid(q.fidx))),
        ("line_no", Column::I64(PrimCol::all_valid(q.line_no))),
        ("reason", Column::Str(reason)),
        ("raw", Column::Str(q.raw)),
    ];
    Batch {
        event_fields: fields(&event_columns(Events::default())),
        events,
        quarantine,
        counts,
    }
}
