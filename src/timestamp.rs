//! Wall-clock time as the service records it: milliseconds since the Unix
//! epoch in the store, ISO 8601 UTC with milliseconds on the wire.

use std::time::{SystemTime, UNIX_EPOCH};

use time::format_description::well_known::Rfc3339;
use time::macros::format_description;
use time::OffsetDateTime;

pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// `2026-11-22T23:20:36.123Z`: the form every payload and API field uses.
pub fn iso_ms(ms: i64) -> String {
    let fmt =
        format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .and_then(|t| t.format(fmt).ok())
        .unwrap_or_else(|| "1970-01-01T00:00:00.000Z".into())
}

/// `#[serde(serialize_with = "crate::timestamp::serialize_iso")]`: epoch
/// milliseconds kept in a field, written as [`iso_ms`] on the wire.
pub fn serialize_iso<S: serde::Serializer>(ms: &i64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&iso_ms(*ms))
}

/// [`serialize_iso`] of an optional time (`null` when absent).
pub fn serialize_opt_iso<S: serde::Serializer>(ms: &Option<i64>, s: S) -> Result<S::Ok, S::Error> {
    match ms {
        Some(ms) => s.serialize_str(&iso_ms(*ms)),
        None => s.serialize_none(),
    }
}

pub fn now_iso() -> String {
    iso_ms(now_ms())
}

/// Parses an RFC 3339 timestamp into epoch milliseconds.
pub fn parse_iso_ms(s: &str) -> Option<i64> {
    OffsetDateTime::parse(s, &Rfc3339)
        .ok()
        .map(|t| (t.unix_timestamp_nanos() / 1_000_000) as i64)
}

/// An IMAP date (`21-Nov-2026`, RFC 3501 `date`, as `SEARCH SINCE` takes
/// it) of Unix seconds, in UTC.
pub fn imap_date(unix: i64) -> String {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let d = OffsetDateTime::from_unix_timestamp(unix)
        .unwrap_or(OffsetDateTime::UNIX_EPOCH)
        .date();
    format!(
        "{}-{}-{}",
        d.day(),
        MONTHS[usize::from(u8::from(d.month())) - 1],
        d.year()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imap_dates_are_rfc_3501_dates_in_utc() {
        assert_eq!(imap_date(0), "1-Jan-1970");
        // 2026-11-30 23:59:59 UTC and a second later.
        assert_eq!(imap_date(1_796_083_199), "30-Nov-2026");
        assert_eq!(imap_date(1_796_083_200), "1-Dec-2026");
        assert_eq!(imap_date(-86_400), "31-Dec-1969");
    }

    #[test]
    fn formats_utc_with_milliseconds() {
        assert_eq!(iso_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso_ms(1_795_994_436_007), "2026-11-29T23:20:36.007Z");
        assert_eq!(
            parse_iso_ms("2026-11-29T23:20:36.007Z"),
            Some(1_795_994_436_007)
        );
    }
}
