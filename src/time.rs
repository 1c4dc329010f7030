//! Times as Ironic and Keystone write them: ISO 8601, read to the
//! microsecond. One reader for both (a node's `provision_updated_at`, a
//! token's `expires_at`).

/// An ISO 8601 time as Ironic and Keystone write it
/// (`2026-12-01T11:35:39.826460+00:00`, whole seconds on MySQL,
/// `2026-12-01T07:25:31.000000Z`, maybe no offset: UTC) -> microseconds
/// since the epoch. Digits past the sixth of a fraction are dropped.
pub fn iso_micros(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    let num = |from: usize, len: usize| -> Option<i64> {
        let digits = b.get(from..from + len)?;
        digits.iter().try_fold(0i64, |n, &d| d.is_ascii_digit().then(|| n * 10 + i64::from(d - b'0')))
    };
    let (year, month, day) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    let (hour, minute, second) = (num(11, 2)?, num(14, 2)?, num(17, 2)?);
    if b.get(4) != Some(&b'-') || b.get(7) != Some(&b'-') || !matches!(b.get(10), Some(b'T' | b't' | b' ')) {
        return None;
    }
    if b.get(13) != Some(&b':') || b.get(16) != Some(&b':') {
        return None;
    }
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let mut i = 19;
    let mut micros = 0i64;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            if i - start < 6 {
                micros = micros * 10 + i64::from(b[i] - b'0');
            }
            i += 1;
        }
        if i == start {
            return None;
        }
        for _ in (i - start)..6 {
            micros *= 10;
        }
    }
    let offset_s = match b.get(i) {
        None => 0,
        Some(b'Z' | b'z') if i + 1 == b.len() => 0,
        Some(&sign @ (b'+' | b'-')) => {
            let (h, m) = match b.len() - i {
                6 if b[i + 3] == b':' => (num(i + 1, 2)?, num(i + 4, 2)?),
                5 => (num(i + 1, 2)?, num(i + 3, 2)?),
                _ => return None,
            };
            let s = h * 3600 + m * 60;
            if sign == b'+' {
                s
            } else {
                -s
            }
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset_s;
    Some(seconds * 1_000_000 + micros)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_read_as_ironic_and_keystone_write_them() {
        let at = iso_micros;
        assert_eq!(at("1970-01-01T00:00:00+00:00"), Some(0));
        assert_eq!(at("1970-01-01T00:00:01.5+00:00"), Some(1_500_000));
        assert_eq!(at("2026-12-01T11:35:39.826460+00:00"), Some(1_796_124_939_826_460));
        assert_eq!(at("2026-12-01T11:35:39+00:00"), Some(1_796_124_939_000_000));
        assert_eq!(at("2026-12-01T11:35:39Z"), at("2026-12-01T11:35:39+00:00"));
        assert_eq!(at("2026-12-01T11:35:39"), at("2026-12-01T11:35:39+00:00"));
        assert_eq!(at("2026-12-01T12:35:39+01:00"), at("2026-12-01T11:35:39+00:00"));
        assert_eq!(at("2026-12-01T10:35:39-0100"), at("2026-12-01T11:35:39+00:00"));
        // More than six digits: the rest is below a microsecond.
        assert_eq!(at("1970-01-01T00:00:00.1234567Z"), Some(123_456));
        assert_eq!(at("2000-02-29T00:00:00Z"), Some(951_782_400_000_000));
        for bad in [
            "",
            "2026-12-01",
            "2026-13-01T00:00:00Z",
            "2026-12-01T24:00:00Z",
            "2026-12-01T11:35:39.Z",
            "2026-12-01T11:35:39+1",
            "2026/12/01T11:35:39Z",
            "2026-12-01T11:35:39Zjunk",
            "２０２６-12-01T11:35:39Z",
        ] {
            assert_eq!(at(bad), None, "{bad}");
        }
    }
}
