//! Spark's `yyyyMMddHHmmss` stamps and dates (UTC) of a wall-clock time the caller gives, without
//! a date-time dependency.

/// The UTC date and time of `ms` (milliseconds since the epoch) as `yyyyMMddHHmmss`, the stamp
/// Spark puts in application, driver and worker ids.
pub fn stamp(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}{m:02}{d:02}{:02}{:02}{:02}",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// The UTC date and time of `ms` as `yyyy-MM-dd HH:mm:ss UTC`, for pages and tables; `-` for a
/// negative time (Spark's "not yet").
pub fn utc_date(ms: i64) -> String {
    if ms < 0 {
        return "-".into();
    }
    let s = stamp(ms);
    format!(
        "{}-{}-{} {}:{}:{} UTC",
        &s[0..4],
        &s[4..6],
        &s[6..8],
        &s[8..10],
        &s[10..12],
        &s[12..14]
    )
}

/// Year, month and day of a day count since 1970-01-01 (the proleptic Gregorian calendar).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_known_instants_in_utc() {
        assert_eq!(stamp(0), "19700101000000");
        // 2025-01-01T12:34:56Z
        assert_eq!(stamp(1_735_734_896_000), "20250101123456");
        // 2024-02-29T23:59:59Z, a leap day
        assert_eq!(stamp(1_709_251_199_000), "20240229235959");
        assert_eq!(utc_date(1_735_734_896_000), "2025-01-01 12:34:56 UTC");
        assert_eq!(utc_date(-1), "-");
    }
}
