//! Timestamps exactly as the Polars path computes them (`fields.timestamp`).
//!
//! Polars parses `%Y-%m-%d %H:%M:%S` with its fast fixed-width parser and falls back to a full
//! strptime when that fails; the observable result, which these functions reproduce, is: ASCII
//! digits only, month 1-12, day valid for the month (proleptic Gregorian), hour <= 23, minute
//! <= 59, second <= 60 (60 is a leap second: the next minute), and nanoseconds since the epoch
//! computed in i64; years outside `years` (`fields.TS_YEARS`, passed as data: durations between any
//! two fit i64) are unreadable, as `fields.timestamp` makes them. `tests/test_native_drift.py`
//! compares these with `fields.timestamp` on a table of edge cases (exported as `oslo_ts` and
//! `syslog_ts`).

const NS: i64 = 1_000_000_000;

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ => {
            if is_leap(y) {
                29
            } else {
                28
            }
        }
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn secs(y: i64, mo: u32, d: u32, h: u32, mi: u32, s: u32, years: (i64, i64)) -> Option<i64> {
    // years of fields.TS_YEARS: any two times differ by less than 2**63 ns
    if !(years.0..=years.1).contains(&y)
        || !(1..=12).contains(&mo)
        || d == 0
        || d > days_in_month(y, mo)
        || h > 23
        || mi > 59
        || s > 60
    {
        return None;
    }
    Some(days_from_civil(y, mo, d) * 86_400 + (h * 3600 + mi * 60 + s) as i64)
}

#[inline]
fn digits(b: &[u8]) -> Option<u32> {
    if b.is_empty() || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(b.iter().fold(0u32, |a, &c| a * 10 + (c - b'0') as u32))
}

/// `YYYY-MM-DD HH:MM:SS` (exactly 19 bytes) -> seconds since the epoch.
fn ymdhms(t: &[u8], years: (i64, i64)) -> Option<i64> {
    if t.len() != 19 || t[4] != b'-' || t[7] != b'-' || t[10] != b' ' || t[13] != b':' || t[16] != b':' {
        return None;
    }
    secs(
        digits(&t[0..4])? as i64,
        digits(&t[5..7])?,
        digits(&t[8..10])?,
        digits(&t[11..13])?,
        digits(&t[14..16])?,
        digits(&t[17..19])?,
        years,
    )
}

/// `ts_text = date + " " + time` -> ns (the oslo branch of `fields.timestamp`): null unless 19..29
/// bytes with `.` or `,` after the seconds; the fraction (up to 9 digits) is scaled to ns.
pub fn oslo_ts(date: &str, time: &str, years: (i64, i64)) -> Option<i64> {
    let n = date.len() + 1 + time.len();
    if !(19..=29).contains(&n) || !date.is_ascii() || !time.is_ascii() {
        return None;
    }
    let mut t = [0u8; 29];
    t[..date.len()].copy_from_slice(date.as_bytes());
    t[date.len()] = b' ';
    t[date.len() + 1..n].copy_from_slice(time.as_bytes());
    if n > 19 && t[19] != b'.' && t[19] != b',' {
        return None;
    }
    let s = ymdhms(&t[..19], years)?;
    let frac = &t[n.min(20)..n];
    let frac_ns = if frac.is_empty() {
        0
    } else {
        digits(frac)? as i64 * 10i64.pow(9 - frac.len() as u32)
    };
    Some(s.wrapping_mul(NS).wrapping_add(frac_ns))
}

const MONTHS: [&[u8; 3]; 12] = [
    b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov", b"Dec",
];

/// Take 1 or 2 ASCII digits from the front of `b`.
fn num12(b: &[u8]) -> Option<(u32, &[u8])> {
    let k = b.iter().take(2).take_while(|c| c.is_ascii_digit()).count();
    if k == 0 {
        return None;
    }
    Some((digits(&b[..k])?, &b[k..]))
}

/// The syslog branch of `fields.timestamp`: `strptime(f"{year} " + sysdate (first run of 2+ spaces
/// made one), "%Y %b %d %H:%M:%S%.f")`. `sysdate` is `Mon D[D] HH:MM:SS[.f+]` as the header
/// regex let it through; fields take 1-2 digits, the fraction its first 9 digits.
pub fn syslog_ts(year: i32, sysdate: &str, years: (i64, i64)) -> Option<i64> {
    if !sysdate.is_ascii() || !(1000..=9999).contains(&year) {
        return None;
    }
    // collapse the first run of two or more spaces
    let b = sysdate.as_bytes();
    let mut buf = Vec::with_capacity(b.len());
    let mut i = 0;
    let mut done = false;
    while i < b.len() {
        if !done && b[i] == b' ' && b.get(i + 1) == Some(&b' ') {
            buf.push(b' ');
            while i < b.len() && b[i] == b' ' {
                i += 1;
            }
            done = true;
            continue;
        }
        buf.push(b[i]);
        i += 1;
    }
    let s = &buf[..];
    if s.len() < 4 || s[3] != b' ' {
        return None;
    }
    let mo = MONTHS.iter().position(|m| &s[..3] == *m)? as u32 + 1;
    let (d, r) = num12(&s[4..])?;
    let r = r.strip_prefix(b" ")?;
    let (h, r) = num12(r)?;
    let r = r.strip_prefix(b":")?;
    let (mi, r) = num12(r)?;
    let r = r.strip_prefix(b":")?;
    let (sec, r) = num12(r)?;
    let nanos = match r {
        [] => 0,
        [b'.', f @ ..] => {
            if f.is_empty() || !f.iter().all(u8::is_ascii_digit) {
                return None;
            }
            let k = f.len().min(9);
            digits(&f[..k])? as i64 * 10i64.pow(9 - k as u32)
        }
        _ => return None,
    };
    let s = secs(year as i64, mo, d, h, mi, sec, years)?;
    Some(s.wrapping_mul(NS).wrapping_add(nanos))
}

#[cfg(test)]
mod tests {
    use super::*;

    const Y: (i64, i64) = (1970, 2199);

    #[test]
    fn known_values() {
        assert_eq!(oslo_ts("2016-06-28", "13:56:60", Y), Some(1_467_122_220 * NS));
        assert_eq!(oslo_ts("2016-02-29", "00:00:00", Y), Some(1_456_704_000 * NS));
        assert_eq!(oslo_ts("2015-02-29", "00:00:00", Y), None);
        assert_eq!(oslo_ts("1500-01-01", "00:00:00", Y), None);
        assert_eq!(oslo_ts("2200-01-01", "00:00:00", Y), None);
        assert_eq!(
            oslo_ts("2016-06-28", "13:56:12.360", Y),
            Some(1_467_122_172_360_000_000)
        );
        assert_eq!(syslog_ts(2016, "Jan 25 09:29:50", Y), Some(1_453_714_190 * NS));
        assert_eq!(syslog_ts(2016, "Jan  5 09:29:50", Y), Some(1_451_986_190 * NS));
        assert_eq!(
            syslog_ts(2016, "Jan 25 09:29:50.1234567891234", Y),
            Some(1_453_714_190_123_456_789)
        );
        assert_eq!(syslog_ts(2016, "Jan 25 09:29:50.", Y), None);
        assert_eq!(syslog_ts(1500, "Jan 25 09:29:50", Y), None);
    }
}
