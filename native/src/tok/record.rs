//! Record assembly: a header line parsed into one event row (extract and strip rules,
//! fields, timestamp, request context, instance id, DEBUG suffix, redaction) and the closing of
//! a record with its continuation lines. The same rules as the record expressions of
//! `stacklens/ingest/tokenize.py`. Split out of `tok.rs`.

use std::borrow::Cow;

use memchr::memchr;
use regex::Regex;

use super::out::Events;
use super::strs::{cast_i32, slice_chars};
use super::{Rx, TsKind};
use crate::rules::{self, split_n};
use crate::ts;

pub(super) enum Cur {
    None,
    Good {
        start: usize,
        n_cont: u32,
    },
    Bad,
    /// an os-log-merger entry of another program and its extra lines
    Foreign,
}

impl Rx {
    /// Parse a header line (already cut to `max_line` chars) into `ev`; false (and nothing
    /// pushed) when its timestamp is unreadable.
    pub(super) fn head(&self, line: &str, year: i32, fidx: u32, line_no: i64, ev: &mut Events) -> bool {
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
    pub(super) fn finish(&self, cur: &mut Cur, ev: &mut Events) {
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
}
