//! Per-line field rules that stay code (as in `stacklens/ingest/fields.py`): the request-context
//! split, and hand-written fast forms of two patterns Python passes as data (the binary-byte
//! class and the instance tag; when the patterns differ from these, the regexes run instead).
//! `tests/test_native_drift.py` runs a table of edge cases through these and the Polars
//! expressions (`fields.context`) through the exported `context` function.

/// `fields.BINARY`, the class `has_binary` implements.
pub const BINARY: &str = r"[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f]";
/// `fields.INSTANCE`, the pattern `instance_uuid` implements.
pub const INSTANCE: &str = r"^\[instance: ([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\]";

/// The `BINARY` class `[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f]`.
#[inline]
pub fn has_binary(b: &[u8]) -> bool {
    #[inline]
    fn bad(c: u8) -> bool {
        (c < 0x20 && !matches!(c, 0x09..=0x0d | 0x1b)) || c == 0x7f
    }
    let mut chunks = b.chunks_exact(32);
    for ch in &mut chunks {
        if ch.iter().fold(false, |a, &c| a | bad(c)) {
            return true;
        }
    }
    chunks.remainder().iter().any(|&c| bad(c))
}

/// `INSTANCE` (`^\[instance: (<uuid>)\]`) -> the uuid.
pub fn instance_uuid(m: &str) -> Option<&str> {
    let b = m.as_bytes();
    if b.len() < 48 || !b.starts_with(b"[instance: ") || b[47] != b']' {
        return None;
    }
    let u = &b[11..47];
    let ok = u.iter().enumerate().all(|(i, &c)| match i {
        8 | 13 | 18 | 23 => c == b'-',
        _ => c.is_ascii_digit() || (b'a'..=b'f').contains(&c),
    });
    ok.then(|| &m[11..47])
}

/// `_field` of `fields.context`: "-", "None" and "" become null.
#[inline]
pub fn field(v: Option<&str>) -> Option<&str> {
    v.filter(|s| !matches!(*s, "-" | "None" | ""))
}

/// The first `N` pieces of `s` split on ' ' (`str.split_exact(" ", N - 1)`).
pub fn split_n<const N: usize>(s: &str) -> [Option<&str>; N] {
    // memchr over the bytes (a space is one byte and never inside a UTF-8 sequence): `split`'s
    // char searcher cost ~5 % of the tokenizer
    let mut out = [None; N];
    let mut start = 0;
    let mut spaces = memchr::memchr_iter(b' ', s.as_bytes());
    for slot in out.iter_mut() {
        match spaces.next() {
            Some(end) => {
                *slot = Some(&s[start..end]);
                start = end + 1;
            }
            None => {
                *slot = Some(&s[start..]);
                break;
            }
        }
    }
    out
}

/// The request context of a header (`fields.context`): `[global_request_id, request_id, user,
/// project]` from the context text (without brackets; None: the line has no context).
/// `req-X user tenant` (Havana-Liberty), `req-X user project domain ...` (Mitaka on),
/// `None req-X ...` / `req-G req-X ...` (Pike on), `-`.
pub fn context(ctx: Option<&str>) -> [Option<&str>; 4] {
    let t = match ctx {
        Some(c) => split_n::<4>(c),
        None => [None; 4],
    };
    let two = t[1].is_some_and(|v| v.starts_with("req-")) && t[0].is_some_and(|v| v.starts_with("req-") || v == "None");
    let one = !two && t[0].is_some_and(|v| v.starts_with("req-"));
    fn pick<'s>(two: bool, one: bool, a: Option<&'s str>, b: Option<&'s str>) -> Option<&'s str> {
        if two {
            a
        } else if one {
            b
        } else {
            None
        }
    }
    let gri = if two && t[0] != Some("None") { t[0] } else { None };
    [
        gri,
        pick(two, one, t[1], t[0]),
        field(pick(two, one, t[2], t[1])),
        field(pick(two, one, t[3], t[2])),
    ]
}

#[cfg(test)]
mod tests {
    use super::split_n;

    #[test]
    fn split_n_is_the_first_pieces_of_split() {
        for s in [
            "",
            " ",
            "a",
            "a b",
            "a  b ",
            " a b c d e f g",
            "2026-01-01 10:00:00.1 12 INFO x [req-1 u p] m",
            "é ü ß",
        ] {
            let want: Vec<Option<&str>> = s.split(' ').map(Some).chain(std::iter::repeat(None)).take(5).collect();
            assert_eq!(split_n::<5>(s).to_vec(), want, "{s:?}");
            assert_eq!(split_n::<1>(s).to_vec(), want[..1].to_vec(), "{s:?}");
        }
    }
}
