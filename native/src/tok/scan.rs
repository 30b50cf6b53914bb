//! The line loop: one piece of a file (whole lines, starting at a record) scanned line by line
//! into events and quarantine, with the modern-traceback linking as a state machine; and the
//! cutting of a file into such pieces for the parallel tasks. Split out of `tok.rs`.

use std::borrow::Cow;

use memchr::{memchr, memmem};

use super::out::{Counts, Seg, TaskOut};
use super::record::Cur;
use super::strs::trunc_chars;
use super::Rx;

pub(super) struct Piece<'a> {
    pub(super) fidx: u32,
    pub(super) data: &'a [u8],
    pub(super) year: i32,
}

impl Rx {
    pub(super) fn run_piece(&self, p: &Piece, out: &mut TaskOut) {
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
            // a header folded into a traceback below is never another program's entry
            let header_line = cand;
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
            // another program's entry (os-log-merger, syslog): not an old TRACE line, nor a
            // header line the traceback rule folded
            let foreign = !header_line && self.other.as_ref().is_some_and(|o| o.is_match(s)) && !self.trace.is_match(s);
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
    pub(super) fn split_file<'a>(&self, fidx: u32, data: &'a [u8], year: i32, target: usize) -> Vec<Piece<'a>> {
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
