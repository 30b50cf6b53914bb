//! Small string helpers with the semantics of the Polars expressions the reference tokenizer
//! (`stacklens/ingest/tokenize.py`) uses: `str.slice` in characters (not bytes) and
//! `cast(pl.Int32, strict=False)`. Split out of `tok.rs`; pure functions, no state.

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
pub(super) fn trunc_chars(s: &str, n: usize) -> &str {
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
