//! Hand-written fast forms of fixed patterns (each used only when Python passes exactly that
//! pattern; `fast_paths` reports which are on): the oslo header + TRACE check on ASCII text,
//! the devstack DEBUG suffix (windowed secret redaction is in `redact.rs`). Each has a test
//! against its regex on generated strings.

use memchr::memmem;

/// The oslo header (named groups made non-capturing) and TRACE rule the ASCII fast path
/// implements; any other pattern disables the fast path.
pub const OSLO_HEADER: &str = r"^(?:\d{4}-\d{2}-\d{2}) (?:\d{2}:\d{2}:\d{2}(?:[.,]\d+)?) (?:(?:\d+) )?(?:[A-Z]{4,8}) (?:[A-Za-z_][\w.\-]*)(?: \[(?:[^\]]*)\])?(?: |$)";
pub const OSLO_TRACE: &str = r"^\S+ \S+ (?:\d+ )?TRACE ";
/// The devstack DEBUG suffix `debug_suffix_start` implements.
pub const DEBUG_SUFFIX: &str = r"(?:\s*\{\{\(pid=\d+\) [^}]*\}\}|\s\S+ /\S+\.py:\d+)$";

/// The oslo format's traceback-key rule (`formats/oslo.py` `tb_line`) `oslo_tb_fast` implements.
pub const OSLO_TB_LINE: &str = r"^(?P<k>\S+ \S+ (?:\d+ )?)(?P<lvl>[A-Z]+) (?P<lg>\S+)(?P<rest>.*)$";

/// The groups of `OSLO_TB_LINE` on an ASCII line without '\n', as byte ends: `Some(Some((k,
/// lvl, lg)))` for `k = ..k`, `lvl = k..lvl`, `lg = lvl + 1..lg`, `rest = lg..`; `Some(None)`
/// when it does not match; `None` for a non-ASCII line (then the regex decides).
///
/// Why it is the regex: each `\S+` is followed by a literal space (or, for `lg`, by `.*$`,
/// which takes anything on a line), so a shorter run than the whole run of non-space bytes
/// only leaves a non-space byte where the space must be: the runs are the maximal ones. The
/// same holds for `\d+` and `[A-Z]+` before their space. `(?:\d+ )?` is tried first; without
/// it `[A-Z]+` would start at a digit, so when it matches and `[A-Z]+ ` fails after it, the
/// line does not match at all. On ASCII text `\S` is every byte but `[\t\n\v\f\r ]`.
pub fn oslo_tb_fast(b: &[u8]) -> Option<Option<(usize, usize, usize)>> {
    if !b.is_ascii() {
        return None;
    }
    // the line is ASCII: no run ends deferred
    let run = |i: usize, class: u8| run_of(b, i, class).0;
    let word = |i: usize| -> Option<usize> {
        let j = run(i, NONWS);
        (j > i && b.get(j) == Some(&b' ')).then_some(j + 1)
    };
    let Some(i) = word(0).and_then(word) else {
        return Some(None);
    };
    let d = run(i, DIGIT);
    let k = if d > i && b.get(d) == Some(&b' ') { d + 1 } else { i };
    let lvl = run(k, UPPER);
    if lvl == k || b.get(lvl) != Some(&b' ') {
        return Some(None);
    }
    let lg = run(lvl + 1, NONWS);
    if lg == lvl + 1 {
        return Some(None);
    }
    Some(Some((k, lvl, lg)))
}

/// Where `DEBUG_SUFFIX` matches (leftmost) in an ASCII message, if it does. Every match ends
/// at the end, so the leftmost match starts at the smallest `s` such that `m[s..]` is, whole,
/// `\s*\{\{\(pid=\d+\) [^}]*\}\}` or `\s\S+ /\S+\.py:\d+` (ASCII: `\s` is `[\t\n\v\f\r ]`).
pub fn debug_suffix_start(b: &[u8]) -> Option<usize> {
    static PID: std::sync::LazyLock<memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memmem::Finder::new(b"{{(pid="));
    let ws = |c: u8| matches!(c, 0x09..=0x0d | b' ');
    let mut best: Option<usize> = None;
    if b.ends_with(b"}}") {
        // "{{(pid=" DIGITS ") " then no '}' until the final "}}"
        let e = b.len() - 2;
        let from = memchr::memrchr(b'}', &b[..e]).map_or(0, |q| q + 1);
        for p in PID.find_iter(&b[from..e]).map(|i| i + from) {
            let d0 = p + 7;
            let mut j = d0;
            while j < e && b[j].is_ascii_digit() {
                j += 1;
            }
            if j > d0 && j + 2 <= e && &b[j..j + 2] == b") " {
                let mut s = p;
                while s > 0 && ws(b[s - 1]) {
                    s -= 1;
                }
                best = Some(s);
                break;
            }
        }
    }
    if b.last().is_some_and(u8::is_ascii_digit) {
        // WS RUN ' ' '/' TAIL ".py:" DIGITS, RUN and "/TAIL.py:DIGITS" without whitespace
        let mut k = b.len();
        while k > 0 && b[k - 1].is_ascii_digit() {
            k -= 1;
        }
        if k >= 4 && &b[k - 4..k] == b".py:" {
            let w = nonws_run_start(b, k - 4);
            if b[w] == b'/' && k - 4 > w + 1 && w >= 2 && b[w - 1] == b' ' && !ws(b[w - 2]) {
                let r = nonws_run_start(b, w - 2);
                if r >= 1 {
                    best = Some(best.map_or(r - 1, |x| x.min(r - 1)));
                }
            }
        }
    }
    best
}

/// The start of the run of bytes other than ASCII whitespace (`[\t\n\v\f\r ]`) that ends at
/// `end` (0 when it reaches the start): the last space, tab or CR before `end`, unless a LF,
/// VT or FF comes after it.
fn nonws_run_start(b: &[u8], end: usize) -> usize {
    let p = memchr::memrchr3(b' ', b'\t', b'\r', &b[..end]).map_or(0, |q| q + 1);
    memchr::memrchr3(b'\n', 0x0b, 0x0c, &b[p..end]).map_or(p, |q| p + q + 1)
}

/// ASCII byte classes of the hand-written scans: `[A-Z]`, `[A-Za-z_]` (a logger's first
/// byte), `[A-Za-z0-9_.-]`, `[0-9]`, and `\S` (not `[\t\n\v\f\r ]`); no non-ASCII byte is
/// in any.
const UPPER: u8 = 1;
const LOG0: u8 = 2;
const LOGW: u8 = 4;
const DIGIT: u8 = 8;
const NONWS: u8 = 16;
static CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut c = 0;
    while c < 128 {
        let b = c as u8;
        let alpha = b.is_ascii_alphabetic() || b == b'_';
        let ws = matches!(b, 0x09..=0x0d | b' ');
        t[c] = (b.is_ascii_uppercase() as u8) * UPPER
            + (alpha as u8) * LOG0
            + ((alpha || b.is_ascii_digit() || b == b'.' || b == b'-') as u8) * LOGW
            + (b.is_ascii_digit() as u8) * DIGIT
            + (!ws as u8) * NONWS;
        c += 1;
    }
    t
};

/// `(end, deferred)` of the run of bytes of `class` from `i`: `deferred` when the byte that
/// ends it is not ASCII (a Unicode class of the regex could go on there).
#[inline(always)]
fn run_of(b: &[u8], mut i: usize, class: u8) -> (usize, bool) {
    while i < b.len() && CLASS[b[i] as usize] & class != 0 {
        i += 1;
    }
    (i, i < b.len() && b[i] >= 0x80)
}

/// The oslo header and TRACE check on ASCII text: `Some(is_header && !is_trace)`, or `None`
/// when a non-ASCII byte is met where it could change the answer (then the regexes decide).
/// The bytes are read in order and the first one that decides, decides (a non-ASCII byte
/// there defers): that keeps the answer the regexes' on every input.
pub fn oslo_fast(b: &[u8]) -> Option<bool> {
    // the byte at `i`: Ok(Some(c)) ASCII, Ok(None) the end, Err non-ASCII (defer)
    let at = |i: usize| -> Result<Option<u8>, ()> {
        match b.get(i) {
            None => Ok(None),
            Some(&c) if c >= 0x80 => Err(()),
            Some(&c) => Ok(Some(c)),
        }
    };
    macro_rules! get {
        ($i:expr) => {
            match at($i) {
                Ok(v) => v,
                Err(()) => return None,
            }
        };
    }
    const PAT: &[u8; 19] = b"dddd-dd-dd dd:dd:dd";
    let ok = |p: u8, c: u8| if p == b'd' { c.is_ascii_digit() } else { c == p };
    // all 19 at once when they are all there and right (the usual header), else byte by byte
    let whole = b.len() >= 19 && PAT.iter().zip(b).fold(true, |a, (&p, &c)| a & ok(p, c));
    if !whole {
        for (k, &p) in PAT.iter().enumerate() {
            match get!(k) {
                Some(c) if ok(p, c) => {}
                _ => return Some(false),
            }
        }
    }
    let mut i = match get!(19) {
        Some(b' ') => 20,
        Some(b'.' | b',') => {
            let (j, defer) = run_of(b, 20, DIGIT);
            if defer {
                return None;
            }
            if j == 20 || b.get(j) != Some(&b' ') {
                return Some(false);
            }
            j + 1
        }
        _ => return Some(false),
    };
    // optional pid
    if get!(i).is_some_and(|c| c.is_ascii_digit()) {
        let (j, defer) = run_of(b, i, DIGIT);
        if defer {
            return None;
        }
        if b.get(j) != Some(&b' ') {
            return Some(false);
        }
        i = j + 1;
    }
    // level
    let (l1, defer) = run_of(b, i, UPPER);
    if defer {
        return None;
    }
    let level = &b[i..l1];
    if !(4..=8).contains(&level.len()) || b.get(l1) != Some(&b' ') {
        return Some(false);
    }
    i = l1 + 1;
    // logger
    let first = get!(i);
    if first.is_none_or(|c| CLASS[c as usize] & LOG0 == 0) {
        return Some(false);
    }
    let (i, defer) = run_of(b, i, LOGW);
    if defer {
        return None;
    }
    match b.get(i) {
        None | Some(b' ') => Some(level != b"TRACE"),
        Some(_) => Some(false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testrng::Rng;
    use crate::tok::{cast_i32, slice_chars};
    use regex::Regex;

    #[test]
    fn debug_suffix_matches_the_regex() {
        let re = Regex::new(DEBUG_SUFFIX).unwrap();
        let parts = [
            " ",
            "  ",
            "\t",
            "\x0b",
            "\n",
            "{{",
            "}}",
            "}",
            "{{(pid=",
            "(pid=",
            "12",
            "7",
            ") ",
            ")",
            "x",
            "ab",
            "/",
            " /",
            "/opt/x",
            ".py:",
            ".py",
            ":",
            "py:",
            "0",
            "9",
            "foo.py:12",
            " f /a.py:3",
            "}} ",
            "-",
            "\r",
        ];
        let mut rng = Rng(0x9e3779b97f4a7c15);
        for _ in 0..300_000 {
            let n = (rng.next() % 12) as usize;
            let m: String = (0..n).map(|_| rng.pick(&parts)).collect();
            let want = re.find(&m).map(|x| x.start());
            assert_eq!(debug_suffix_start(m.as_bytes()), want, "{m:?}");
        }
        for m in [
            "msg {{(pid=123) f /opt/a.py:1}}",
            "a b /c.py:12",
            "done  {{(pid=1) x}}",
            " x /y.py:1",
        ] {
            assert_eq!(debug_suffix_start(m.as_bytes()), re.find(m).map(|x| x.start()), "{m:?}");
        }
    }

    #[test]
    fn oslo_tb_fast_matches_the_regex() {
        let re = Regex::new(OSLO_TB_LINE).unwrap();
        let parts = [
            "2016-06-28",
            " ",
            "  ",
            "\t",
            "\x0b",
            "\r",
            "13:56:12.360",
            "29140",
            "1",
            "ERROR",
            "DEBUG",
            "E",
            "e",
            "nova.compute",
            "[req-1 u p]",
            "x",
            "9",
            "-",
            ":",
            "Traceback",
            "ERROR nova",
            "2016-06-28 13:56:12.360 ",
            "\x1c",
            "\x1f",
        ];
        let mut rng = Rng(0x5eed_0f_7b_11e5);
        let mut matched = 0;
        for _ in 0..300_000 {
            let n = (rng.next() % 12) as usize;
            let mut m = String::new();
            if rng.next() % 3 != 0 {
                m.push_str("2016-06-28 13:56:12.360 ");
                if rng.next() % 2 == 0 {
                    m.push_str(rng.pick(&["29140 ", "1 ", "12x "]));
                }
                m.push_str(rng.pick(&["ERROR ", "ERROR", "DEBUG x", "E  ", "Err "]));
            }
            m.extend((0..n).map(|_| rng.pick(&parts)));
            let want = re.captures(&m).map(|c| {
                let end = |g: &str| c.name(g).unwrap().end();
                (end("k"), end("lvl"), end("lg"))
            });
            matched += want.is_some() as usize;
            assert_eq!(oslo_tb_fast(m.as_bytes()), Some(want), "{m:?}");
        }
        assert!(matched > 20_000, "{matched}");
        assert_eq!(oslo_tb_fast("2016-06-28 13:56:12 1 ERROR nové x".as_bytes()), None);
    }

    #[test]
    fn oslo_fast_matches_the_regexes() {
        let header = Regex::new(OSLO_HEADER).unwrap();
        let trace = Regex::new(OSLO_TRACE).unwrap();
        let parts = [
            "2016-06-28",
            " ",
            "13:56:12",
            ".360",
            ",5",
            ".",
            "29140",
            "1",
            "DEBUG",
            "TRACE",
            "INFO",
            "ABC",
            "ABCDEFGHI",
            "nova.api",
            "_x-y.z",
            "[req-1 u p]",
            "[",
            "]",
            ":",
            "x",
            "2016-06-28 13:56:12",
            "\t",
            "9",
            "-",
        ];
        let mut rng = Rng(0x1234_5678_9abc_def1);
        let mut accepted = 0;
        for _ in 0..300_000 {
            let n = (rng.next() % 10) as usize;
            let mut m = String::new();
            if rng.next() % 4 != 0 {
                m.push_str(rng.pick(&[
                    "2016-06-28 13:56:12 ",
                    "2016-06-28 13:56:12.360 ",
                    "2016-06-28 13:56:12,5 ",
                ]));
                if rng.next() % 2 == 0 {
                    m.push_str("29140 ");
                }
                m.push_str(rng.pick(&["DEBUG ", "TRACE ", "INFO", "ABC "]));
            }
            m.extend((0..n).map(|_| rng.pick(&parts)));
            let want = header.is_match(&m) && !trace.is_match(&m);
            accepted += want as usize;
            if let Some(got) = oslo_fast(m.as_bytes()) {
                assert_eq!(got, want, "{m:?}");
            }
        }
        assert!(accepted > 5_000, "{accepted}");
    }

    #[test]
    fn fast_header() {
        assert_eq!(
            oslo_fast(b"2016-06-28 13:56:12.360 29140 DEBUG nova.api [req-1 u p] m"),
            Some(true)
        );
        assert_eq!(
            oslo_fast(b"2016-06-28 13:56:12.360 29140 TRACE nova.api x"),
            Some(false)
        );
        assert_eq!(oslo_fast(b"2016-06-28 13:56:12 INFO nova"), Some(true));
        assert_eq!(oslo_fast(b"2016-06-28 13:56:12 INFO nova:"), Some(false));
        assert_eq!(oslo_fast(b"2016-06-28 13:56:12 INFO nov\xc3\xa9"), None);
        assert_eq!(slice_chars("héllo", 1, Some(3)), "éll");
        assert_eq!(slice_chars("ab", 5, None), "");
        assert_eq!(cast_i32("2147483648"), None);
        assert_eq!(cast_i32("-2147483648"), Some(i32::MIN));
    }
}
