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

use std::borrow::Cow;
use std::collections::HashMap;

use memchr::{memchr, memmem};
use rayon::prelude::*;
use regex::Regex;

use crate::arrow::{fields, Column, Fields, PrimCol, StrCol};
use crate::fast::{
    debug_suffix_start, oslo_fast, redact_windowed, CHEAP, DEBUG_SUFFIX, OSLO_HEADER, OSLO_TRACE, SECRET,
};
use crate::rules::{self, has_binary, instance_uuid, split_n};
use crate::ts;

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
    header: Regex,
    trace: Regex,
    has_pid: Regex,
    debug_suffix: Regex,
    cheap: Regex,
    secret: Regex,
    /// the secret pattern for anchored searches, when the patterns are `CHEAP` and `SECRET`
    windowed: Option<regex_automata::meta::Regex>,
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
            header: rx(p, "header")?,
            trace: rx(p, "trace")?,
            has_pid: rx(p, "has_pid")?,
            debug_suffix: rx(p, "debug_suffix")?,
            cheap: rx(p, "redact_cheap")?,
            secret: rx(p, "redact_secret")?,
            windowed: if s("redact_secret") == SECRET && s("redact_cheap") == CHEAP {
                Some(regex_automata::meta::Regex::new(SECRET).map_err(|e| e.to_string())?)
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
            ("redact", self.windowed.is_some()),
        ]
    }
}

// ---------------------------------------------------------------------------------------------
// small string helpers with Polars' semantics

/// `str.slice(start, len)` in characters (out of range -> empty / to the end).
pub(crate) fn slice_chars(s: &str, start: usize, len: Option<usize>) -> &str {
    let b = s.as_bytes();
    let byte_at = |k: usize| -> usize {
        if k <= b.len() && b[..k].is_ascii() {
            k
        } else {
            s.char_indices().nth(k).map_or(s.len(), |(i, _)| i)
        }
    };
    let a = byte_at(start);
    let rest = &s[a..];
    match len {
        None => rest,
        Some(n) => {
            let rb = rest.as_bytes();
            let e = if n <= rb.len() && rb[..n].is_ascii() {
                n
            } else {
                rest.char_indices().nth(n).map_or(rest.len(), |(i, _)| i)
            };
            &rest[..e]
        }
    }
}

/// `str.slice(0, n)`: the first `n` characters.
#[inline]
fn trunc_chars(s: &str, n: usize) -> &str {
    if s.len() <= n {
        s
    } else {
        slice_chars(s, 0, Some(n))
    }
}

/// `cast(pl.Int32, strict=False)` of a string.
pub(crate) fn cast_i32(s: &str) -> Option<i32> {
    let b = s.as_bytes();
    let (neg, d) = match b.first() {
        Some(b'-') => (true, &b[1..]),
        Some(b'+') => (false, &b[1..]),
        _ => (false, b),
    };
    if d.is_empty() || !d.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut v: i64 = 0;
    for &c in d {
        v = v * 10 + (c - b'0') as i64;
        if v > i32::MAX as i64 + 1 {
            return None;
        }
    }
    let v = if neg { -v } else { v };
    i32::try_from(v).ok()
}

// ---------------------------------------------------------------------------------------------
// outputs

#[derive(Default)]
pub struct Events {
    pub fidx: Vec<u32>,
    pub line_no: Vec<i64>,
    pub ts: Vec<i64>,
    pub host: StrCol,
    pub svc: StrCol,
    pub pid: PrimCol<i32>,
    pub level: StrCol,
    pub logger: StrCol,
    pub request_id: StrCol,
    pub global_request_id: StrCol,
    pub user: StrCol,
    pub project: StrCol,
    pub instance_uuid: StrCol,
    pub message: StrCol,
    pub continuation: StrCol,
    pub n_lines: Vec<i32>,
}

#[derive(Default)]
pub struct Quarantine {
    pub fidx: Vec<u32>,
    pub line_no: Vec<i64>,
    pub reason: Vec<u8>,
    pub raw: StrCol,
}

pub const REASONS: [&str; 4] = ["binary", "before_first_record", "bad_timestamp", "merged_other"];

impl Quarantine {
    fn push(&mut self, fidx: u32, line_no: i64, reason: u8, raw: &str) {
        self.fidx.push(fidx);
        self.line_no.push(line_no);
        self.reason.push(reason);
        self.raw.push(Some(raw));
    }
}

/// Per-file counters: lines, long_line, non_utf8, blank_line, shell_trace.
pub type Counts = [u64; 5];

/// What one piece added to its task's output (row ends, to fix line numbers afterwards).
struct Seg {
    fidx: u32,
    counts: Counts,
    ends: [usize; 4],
}

/// The output of a task: consecutive pieces processed by one thread.
#[derive(Default)]
struct TaskOut {
    segs: Vec<Seg>,
    ev: Events,
    q_body: Quarantine,
    q_bad_head: Quarantine,
    q_bad_line: Quarantine,
}

impl TaskOut {
    fn line_cols(&mut self) -> [&mut Vec<i64>; 4] {
        [
            &mut self.ev.line_no,
            &mut self.q_body.line_no,
            &mut self.q_bad_head.line_no,
            &mut self.q_bad_line.line_no,
        ]
    }
}

enum Cur {
    None,
    Good {
        start: usize,
        n_cont: u32,
    },
    Bad,
    /// an os-log-merger entry of another program and its extra lines
    Foreign,
}

struct Piece<'a> {
    fidx: u32,
    data: &'a [u8],
    year: i32,
}

// ---------------------------------------------------------------------------------------------

impl Rx {
    /// `redact()` of redact.py: when the cheap filter matches, every secret replaced.
    fn redact<'a>(&self, s: &'a str) -> Cow<'a, str> {
        match &self.windowed {
            Some(meta) => redact_windowed(meta, &self.cheap, &self.secret, &self.replacement, s),
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

    /// `(key, rest)` of a header candidate for the modern-traceback rule (`tokenize._TB_LINE`):
    /// the key is the wrapper prefix, timestamp, pid and logger; None unless the level is ERROR
    /// (only ERROR lines can link) or the pattern does not match.
    fn tb_key<'s>(&self, s: &'s str, need_error: bool) -> Option<(String, &'s str, bool)> {
        let c = self.tb_line.captures(s)?;
        let lvl = c.name("lvl")?.as_str();
        let is_err = lvl == "ERROR";
        if need_error && !is_err {
            return None;
        }
        let key = format!("{} {}", c.name("k")?.as_str(), c.name("lg")?.as_str());
        Some((key, c.name("rest")?.as_str(), is_err))
    }

    /// Parse a header line (already cut to `max_line` chars) into `ev`; false (and nothing
    /// pushed) when its timestamp is unreadable.
    fn head(&self, line: &str, year: i32, fidx: u32, line_no: i64, ev: &mut Events) -> bool {
        let cap1 = |r: &Option<Regex>| -> Option<&str> {
            r.as_ref()
                .and_then(|r| r.captures(line))
                .and_then(|c| c.get(1))
                .map(|m| m.as_str())
        };
        let (svc, host, spid, sysdate) = (
            cap1(&self.x_svc),
            cap1(&self.x_host),
            cap1(&self.x_spid),
            cap1(&self.x_sysdate),
        );
        let mut core: Cow<str> = match &self.core {
            None => Cow::Borrowed(line),
            Some(c) => c.replacen(line, 1, self.core_rep.as_str()),
        };
        if let (Some(ph), Some(od)) = (&self.placeholder, &self.oslo_date) {
            if !od.is_match(&core) {
                core = Cow::Owned(format!("{ph}{core}"));
            }
        }
        let core: &str = &core;
        let f = split_n::<5>(core);
        let has_pid = f[2].map(|v| self.has_pid(v));
        let used = if has_pid == Some(true) { 5 } else { 4 };
        let rest: Option<&str> = if f[..used].iter().all(Option::is_some) {
            let off: usize = f[..used].iter().map(|v| v.unwrap().len()).sum::<usize>() + used;
            Some(if off <= core.len() { &core[off..] } else { "" })
        } else {
            None
        };
        // timestamp first: a record without one goes to quarantine whole
        let ts = match (f[0], f[1]) {
            (Some(d), Some(t)) => {
                let ph = self.placeholder.as_deref().unwrap_or("");
                if self.ts_kind == TsKind::Syslog && d.starts_with(&ph[..ph.len().min(4)]) {
                    sysdate.and_then(|s| ts::syslog_ts(year, s, self.years))
                } else {
                    ts::oslo_ts(d, t, self.years)
                }
            }
            _ => None,
        };
        let Some(ts) = ts else { return false };

        let (ctx, msg) = match rest {
            None => (None, None),
            Some(r) => {
                let end = memchr(b']', r.as_bytes());
                match end {
                    Some(e) if r.starts_with('[') && !r.starts_with(self.instance_tag.as_str()) => {
                        (Some(slice_chars(r, 1, Some(e - 1))), Some(slice_chars(r, e + 2, None)))
                    }
                    _ => (None, Some(r)),
                }
            }
        };
        let (pid, level, logger) = if has_pid == Some(true) {
            (f[2], f[3], f[4])
        } else {
            (None, f[2], f[3])
        };
        let [gri, request_id, user, project] = rules::context(ctx);
        let inst = msg.and_then(|m| self.instance_uuid(m));
        let message: Option<Cow<str>> = msg.map(|m| {
            let m = if level == Some("DEBUG") {
                self.strip_debug(m)
            } else {
                Cow::Borrowed(m)
            };
            let redacted: Option<String> = match self.redact(&m) {
                Cow::Owned(r) => Some(r),
                Cow::Borrowed(_) => None,
            };
            redacted.map_or(m, Cow::Owned)
        });

        ev.fidx.push(fidx);
        ev.line_no.push(line_no);
        ev.ts.push(ts);
        ev.host.push(host);
        ev.svc.push(svc);
        ev.pid.push(pid.or(spid).and_then(cast_i32));
        ev.level.push(level);
        ev.logger.push(logger);
        ev.request_id.push(request_id);
        ev.global_request_id.push(gri);
        ev.user.push(user);
        ev.project.push(project);
        ev.instance_uuid.push(inst);
        ev.message.push(message.as_deref());
        true
    }

    /// Close the current record: its continuation (redacted as a whole) and line count.
    fn finish(&self, cur: &mut Cur, ev: &mut Events) {
        if let Cur::Good { start, n_cont } = *cur {
            if n_cont == 0 {
                ev.continuation.close(false);
            } else {
                // SAFETY: only whole UTF-8 strings and '\n' were appended since `start`
                let text = unsafe { std::str::from_utf8_unchecked(&ev.continuation.data[start..]) };
                let redacted: Option<String> = match self.redact(text) {
                    Cow::Owned(r) => Some(r),
                    Cow::Borrowed(_) => None,
                };
                if let Some(r) = redacted {
                    ev.continuation.data.truncate(start);
                    ev.continuation.data.extend_from_slice(r.as_bytes());
                }
                ev.continuation.close(true);
            }
            ev.n_lines.push(n_cont as i32 + 1);
        }
        *cur = Cur::None;
    }

    fn run_piece(&self, p: &Piece, out: &mut TaskOut) {
        let buf = p.data;
        let valid = std::str::from_utf8(buf).is_ok();
        let has_1f = memchr(0x1f, buf).is_some();
        let fffd = memmem::Finder::new("\u{FFFD}".as_bytes());
        let has_fffd = !valid || fffd.find(buf).is_some();
        let mut counts: Counts = [0; 5];
        let mut cur = Cur::None;
        let mut seg_head = false;
        let mut line_no: i64 = 0;
        let mut pos = 0;
        let mut scratch: Vec<u8> = Vec::new();
        // modern-traceback state (`tokenize._traceback_lines` as a state machine): the previous
        // header candidate (line range in `buf`), whether it was a linked bare-prefix line, and
        // whether a traceback block is open
        let mut prev_cand: Option<(usize, usize)> = None;
        let mut prev_blank = false;
        let mut tb_open = false;
        let error_finder = memmem::Finder::new(b" ERROR ");
        while pos < buf.len() {
            let line_start = pos;
            let (mut line, next) = match memchr(b'\n', &buf[pos..]) {
                Some(i) => (&buf[pos..pos + i], pos + i + 1),
                None => (&buf[pos..], buf.len()),
            };
            pos = next;
            line_no += 1;
            if let [rest @ .., b'\r'] = line {
                line = rest;
            }
            if line.is_empty() {
                counts[3] += 1;
                continue;
            }
            let s: Cow<str> = if valid && !has_1f {
                // SAFETY: the whole piece is valid UTF-8 and '\n' / '\r' are ASCII
                Cow::Borrowed(unsafe { std::str::from_utf8_unchecked(line) })
            } else {
                let bytes: &[u8] = if has_1f && memchr(0x1f, line).is_some() {
                    scratch.clear();
                    scratch.extend(line.iter().map(|&c| if c == 0x1f { b'?' } else { c }));
                    &scratch
                } else {
                    line
                };
                String::from_utf8_lossy(bytes)
            };
            let s: &str = &s;
            if s.len() > self.max_line {
                counts[1] += 1;
            }
            if has_fffd && fffd.find(s.as_bytes()).is_some() {
                counts[2] += 1;
            }
            let mut cand = self.is_header(s);
            if cand {
                let this = (line_start, line_start + line.len());
                let mut link = None;
                if error_finder.find(s.as_bytes()).is_some() {
                    if let Some((key, rest, _)) = self.tb_key(s, true) {
                        if let Some((a, b)) = prev_cand {
                            let pl = self.line_text(&buf[a..b], valid, has_1f);
                            if let Some((pkey, _, _)) = self.tb_key(&pl, false) {
                                if pkey == key {
                                    link = Some(rest);
                                }
                            }
                        }
                    }
                }
                prev_cand = Some(this);
                match link {
                    None => {
                        tb_open = false;
                        prev_blank = false;
                    }
                    Some(rest) => {
                        if prev_blank && !self.tb_chain.is_match(rest) {
                            tb_open = false;
                        }
                        if self.tb_start.is_match(rest) {
                            tb_open = true;
                        }
                        prev_blank = self.tb_blank.is_match(rest);
                        if tb_open {
                            cand = false;
                        }
                    }
                }
            }
            if cand {
                self.finish(&mut cur, &mut out.ev);
                seg_head = true;
                if self.head(trunc_chars(s, self.max_line), p.year, p.fidx, line_no, &mut out.ev) {
                    cur = Cur::Good {
                        start: out.ev.continuation.data.len(),
                        n_cont: 0,
                    };
                } else {
                    let raw = self.redact(trunc_chars(s, self.max_raw));
                    out.q_bad_head.push(p.fidx, line_no, 2, &raw);
                    cur = Cur::Bad;
                }
                continue;
            }
            if s.starts_with(self.shell_prefix.as_str()) {
                counts[4] += 1;
                continue;
            }
            let binary = self.has_binary(s);
            // an os-log-merger entry of another program (not an old TRACE line)
            let foreign = self.other.as_ref().is_some_and(|o| o.is_match(s)) && !self.trace.is_match(s);
            if foreign {
                self.finish(&mut cur, &mut out.ev);
                cur = Cur::Foreign;
            }
            if foreign || matches!(cur, Cur::Foreign) {
                let raw = self.redact(trunc_chars(s, self.max_raw));
                out.q_body.push(p.fidx, line_no, if binary { 0 } else { 3 }, &raw);
                continue;
            }
            if binary || !seg_head {
                let raw = self.redact(trunc_chars(s, self.max_raw));
                out.q_body.push(p.fidx, line_no, if binary { 0 } else { 1 }, &raw);
                continue;
            }
            match &mut cur {
                Cur::Good { n_cont, .. } => {
                    let data = &mut out.ev.continuation.data;
                    if *n_cont > 0 {
                        data.push(b'\n');
                    }
                    data.extend_from_slice(trunc_chars(s, self.max_line).as_bytes());
                    *n_cont += 1;
                }
                Cur::Bad => {
                    let raw = self.redact(trunc_chars(s, self.max_raw));
                    out.q_bad_line.push(p.fidx, line_no, 2, &raw);
                }
                Cur::None | Cur::Foreign => unreachable!("a segment head always opens a record"),
            }
        }
        self.finish(&mut cur, &mut out.ev);
        counts[0] = line_no as u64;
        let ends = [
            out.ev.line_no.len(),
            out.q_body.line_no.len(),
            out.q_bad_head.line_no.len(),
            out.q_bad_line.line_no.len(),
        ];
        out.segs.push(Seg {
            fidx: p.fidx,
            counts,
            ends,
        });
    }

    /// A physical line (without '\n' / '\r') as text, as `run_piece` decodes it.
    fn line_text<'a>(&self, line: &'a [u8], valid: bool, has_1f: bool) -> Cow<'a, str> {
        if valid && !has_1f {
            // SAFETY: the whole piece is valid UTF-8
            Cow::Borrowed(unsafe { std::str::from_utf8_unchecked(line) })
        } else if has_1f && memchr(0x1f, line).is_some() {
            let fixed: Vec<u8> = line.iter().map(|&c| if c == 0x1f { b'?' } else { c }).collect();
            Cow::Owned(String::from_utf8_lossy(&fixed).into_owned())
        } else {
            String::from_utf8_lossy(line)
        }
    }

    /// Does the line starting at `buf[0]` (up to '\n') open a record? (for piece boundaries)
    fn line_is_header(&self, line: &[u8]) -> bool {
        let line = match line {
            [rest @ .., b'\r'] => rest,
            l => l,
        };
        if line.is_empty() {
            return false;
        }
        let fixed: Cow<[u8]> = if memchr(0x1f, line).is_some() {
            Cow::Owned(line.iter().map(|&c| if c == 0x1f { b'?' } else { c }).collect())
        } else {
            Cow::Borrowed(line)
        };
        self.is_header(&String::from_utf8_lossy(&fixed))
    }

    /// Cut one file into pieces of about `target` bytes, each starting at a header line.
    fn split_file<'a>(&self, fidx: u32, data: &'a [u8], year: i32, target: usize) -> Vec<Piece<'a>> {
        let mut cuts = vec![0usize];
        let mut nominal = target;
        while nominal < data.len() {
            // first line start after `nominal` that is a header
            let mut ls = match memchr(b'\n', &data[nominal..]) {
                Some(i) => nominal + i + 1,
                None => break,
            };
            let mut found = None;
            while ls < data.len() {
                let end = memchr(b'\n', &data[ls..]).map_or(data.len(), |i| ls + i);
                // a cut line must open a record whatever precedes it: not an ERROR line, which
                // may continue a modern traceback
                if self.line_is_header(&data[ls..end]) && memmem::find(&data[ls..end], b" ERROR ").is_none() {
                    found = Some(ls);
                    break;
                }
                ls = end + 1;
            }
            match found {
                Some(c) => {
                    cuts.push(c);
                    nominal = c + target;
                }
                None => break,
            }
        }
        cuts.push(data.len());
        cuts.windows(2)
            .map(|w| Piece {
                fidx,
                data: &data[w[0]..w[1]],
                year,
            })
            .collect()
    }
}

/// The result of one batch.
pub struct Batch {
    pub event_fields: Fields,
    pub events: Vec<Vec<(&'static str, Column)>>,
    pub quarantine: Vec<(&'static str, Column)>,
    pub counts: Vec<Counts>,
}

fn concat_q(parts: Vec<Quarantine>) -> Quarantine {
    let mut q = Quarantine::default();
    let mut raws = Vec::with_capacity(parts.len());
    for p in parts {
        q.fidx.extend(p.fidx);
        q.line_no.extend(p.line_no);
        q.reason.extend(p.reason);
        raws.push(p.raw);
    }
    q.raw = StrCol::concat(raws);
    q
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

fn event_columns(e: Events) -> Vec<(&'static str, Column)> {
    vec![
        ("fidx", Column::U32(PrimCol::all_valid(e.fidx))),
        ("line_no", Column::I64(PrimCol::all_valid(e.line_no))),
        ("ts_ns", Column::I64(PrimCol::all_valid(e.ts))),
        ("host", Column::Str(e.host)),
        ("svc", Column::Str(e.svc)),
        ("pid", Column::I32(e.pid)),
        ("level", Column::Str(e.level)),
        ("logger", Column::Str(e.logger)),
        ("request_id", Column::Str(e.request_id)),
        ("global_request_id", Column::Str(e.global_request_id)),
        ("user", Column::Str(e.user)),
        ("project", Column::Str(e.project)),
        ("instance_uuid", Column::Str(e.instance_uuid)),
        ("message", Column::Str(e.message)),
        ("continuation", Column::Str(e.continuation)),
        ("n_lines", Column::I32(PrimCol::all_valid(e.n_lines))),
    ]
}
