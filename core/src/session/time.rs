//! ISO-8601 timestamps as JavaScript's `Date` writes and reads them, without a clock: the time
//! comes in as milliseconds since the epoch.

/// `new Date(ms).toISOString()`: `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn iso_from_ms(ms: u64) -> String {
    let secs = ms / 1000;
    let millis = ms % 1000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// `new Date(text).getTime()` for the ISO forms Pi writes (`Z` or `±HH:MM` offsets, optional
/// fraction); `None` where JavaScript would give `NaN`.
pub fn ms_from_iso(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    let num = |from: usize, len: usize| -> Option<i64> {
        let s = text.get(from..from + len)?;
        s.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| s.parse().ok())?
    };
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't') {
        return None;
    }
    let (y, mo, d) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    let (h, mi, s) = (num(11, 2)?, num(14, 2)?, num(17, 2)?);
    if b[13] != b':'
        || b[16] != b':'
        || !(1..=12).contains(&mo)
        || !(1..=31).contains(&d)
        || h > 24
        || mi > 59
        || s > 59
    {
        return None;
    }
    let mut i = 19;
    let mut millis = 0;
    if b.get(i) == Some(&b'.') {
        let start = i + 1;
        i = start;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start {
            return None;
        }
        let digits = &text[start..i.min(start + 3)];
        millis = digits.parse::<i64>().ok()? * 10_i64.pow(3 - digits.len() as u32);
    }
    let offset_min = match &text[i..] {
        "Z" | "z" => 0,
        zone if zone.len() == 6
            && (zone.starts_with('+') || zone.starts_with('-'))
            && &zone[3..4] == ":" =>
        {
            let sign = if zone.starts_with('-') { -1 } else { 1 };
            sign * (num(i + 1, 2)? * 60 + num(i + 4, 2)?)
        }
        _ => return None,
    };
    let days = days_from_civil(y, mo, d);
    Some(((days * 86_400 + h * 3600 + mi * 60 + s) * 1000 + millis) - offset_min * 60_000)
}

// Howard Hinnant's algorithms for the proleptic Gregorian calendar.
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_and_parses_like_date() {
        assert_eq!(iso_from_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso_from_ms(1_795_322_284_614), "2026-11-22T04:38:04.614Z");
        assert_eq!(iso_from_ms(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(
            ms_from_iso("2026-11-22T04:38:04.614Z"),
            Some(1_795_322_284_614)
        );
        assert_eq!(
            ms_from_iso("2026-11-22T05:38:04.614+01:00"),
            Some(1_795_322_284_614)
        );
        assert_eq!(ms_from_iso("2026-11-22T04:38:04Z"), Some(1_795_322_284_000));
        assert_eq!(
            ms_from_iso("2026-11-22T04:38:04.6Z"),
            Some(1_795_322_284_600)
        );
        assert_eq!(ms_from_iso("not a date"), None);
        for ms in [0, 1, 999, 86_399_999, 1_767_268_800_750, 4_102_444_800_000] {
            assert_eq!(ms_from_iso(&iso_from_ms(ms)), Some(ms as i64));
        }
    }
}
