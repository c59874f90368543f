//! How long ago a session was last written, in words ("5 min ago").

use std::time::{Duration, SystemTime};

/// `updated_at` (UTC RFC 3339, as discovery reports it) said relative to `now`; the date
/// itself past a month, and the text as given when it does not parse.
pub(super) fn ago(updated_at: Option<&str>, now: SystemTime) -> String {
    let Some(text) = updated_at else {
        return "nothing recorded yet".to_owned();
    };
    let Ok(then) = humantime::parse_rfc3339_weak(text) else {
        return text.to_owned();
    };
    // A time ahead of this clock (another machine's, or a skewed one) is recent.
    let elapsed = now.duration_since(then).unwrap_or(Duration::ZERO).as_secs();
    const MINUTE: u64 = 60;
    const HOUR: u64 = 60 * MINUTE;
    const DAY: u64 = 24 * HOUR;
    const TWO_DAYS: u64 = 2 * DAY;
    const MONTH: u64 = 31 * DAY;
    match elapsed {
        0..MINUTE => "just now".to_owned(),
        MINUTE..HOUR => format!("{} min ago", elapsed / MINUTE),
        HOUR..DAY => format!("{} h ago", elapsed / HOUR),
        DAY..TWO_DAYS => "yesterday".to_owned(),
        TWO_DAYS..MONTH => format!("{} days ago", elapsed / DAY),
        _ => format!("on {}", text.get(..10).unwrap_or(text)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> SystemTime {
        humantime::parse_rfc3339(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn times_are_said_relative_to_now() {
        let now = at("2026-12-01T12:00:00Z");
        let cases = [
            (Some("2026-12-01T11:59:30.123Z"), "just now"),
            (Some("2026-12-01T12:00:05Z"), "just now"),
            (Some("2026-12-01T11:55:00Z"), "5 min ago"),
            (Some("2026-12-01T11:00:00Z"), "1 h ago"),
            (Some("2026-11-30T11:00:00Z"), "yesterday"),
            (Some("2026-11-25T12:00:00Z"), "6 days ago"),
            (Some("2026-09-01T12:00:00Z"), "on 2026-09-01"),
            (Some("not a time"), "not a time"),
            (None, "nothing recorded yet"),
        ];
        for (updated_at, said) in cases {
            assert_eq!(ago(updated_at, now), said, "{updated_at:?}");
        }
    }
}
