//! Dates and times as people read them, and as they type them: every format the server shows or
//! reads, in one place. Times are unix seconds in UTC everywhere else.

use time::macros::format_description;
use time::{Date, OffsetDateTime};

/// A time for logs, errors and the operator's commands: RFC 3339 in UTC (« for ever » past the
/// calendar, a closed account's).
pub fn utc(unix_seconds: i64) -> String {
    OffsetDateTime::from_unix_timestamp(unix_seconds)
        .ok()
        .and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok())
        .unwrap_or_else(|| "for ever".into())
}

/// A time on a French page: « 07/12/2026 18:05 UTC » (« — » past the calendar).
pub fn french(unix_seconds: i64) -> String {
    let format = format_description!("[day]/[month]/[year] [hour]:[minute] UTC");
    OffsetDateTime::from_unix_timestamp(unix_seconds)
        .ok()
        .and_then(|t| t.format(&format).ok())
        .unwrap_or_else(|| "—".into())
}

/// A day as ISO 8601 writes it (`2026-12-07`), from any time in it.
pub fn iso_day(unix_seconds: i64) -> String {
    let format = format_description!("[year]-[month]-[day]");
    OffsetDateTime::from_unix_timestamp(unix_seconds).ok().and_then(|t| t.format(&format).ok()).unwrap_or_default()
}

/// The date an ISO 8601 day names (`2026-12-07`).
pub fn parse_iso_day(text: &str) -> Option<Date> {
    Date::parse(text, format_description!("[year]-[month]-[day]")).ok()
}

/// The date a French day names (`07/12/2026`).
pub fn parse_french_day(text: &str) -> Option<Date> {
    Date::parse(text, format_description!("[day]/[month]/[year]")).ok()
}

/// Midnight UTC starting an ISO 8601 day.
pub fn day_start(text: &str) -> Option<i64> {
    parse_iso_day(text).map(|d| d.midnight().assume_utc().unix_timestamp())
}

/// The calendar day (UTC) of a time.
pub fn date_of(unix_seconds: i64) -> Option<Date> {
    OffsetDateTime::from_unix_timestamp(unix_seconds).ok().map(OffsetDateTime::date)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_format_reads_what_it_writes() {
        let at = 1_796_666_700; // 2026-12-07 18:05 UTC
        assert_eq!(utc(at), "2026-12-07T18:05:00Z");
        assert_eq!(utc(i64::MAX), "for ever");
        assert_eq!(french(at), "07/12/2026 18:05 UTC");
        assert_eq!(iso_day(at), "2026-12-07");
        assert_eq!(day_start("2026-12-07"), Some(at - 18 * 3600 - 5 * 60));
        assert_eq!(parse_french_day("07/12/2026"), parse_iso_day("2026-12-07"));
        assert_eq!(date_of(at), parse_iso_day("2026-12-07"));
        assert_eq!(day_start("2026-13-01"), None);
    }
}
