//! The status line: what Mission Control is doing (with a working indicator and the
//! turn's elapsed time), the latest notice, the model, how much of its context the
//! session uses, the session's title, then the key hints (cut first on a narrow
//! terminal).

use std::time::{Duration, Instant};

use magi_protocol::messages::{SelectionStatus, UsageUpdated};

use crate::tui::App;

/// The working indicator's frames, one per [`SPINNER_STEP`].
const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
/// How long each spinner frame shows.
pub(in crate::tui) const SPINNER_STEP: Duration = Duration::from_millis(100);

/// Whether the person asked for no animation: `NO_MOTION` set to anything but empty
/// or `0`.
pub(in crate::tui) fn reduced_motion() -> bool {
    std::env::var_os("NO_MOTION").is_some_and(|v| !v.is_empty() && v != "0")
}

/// What the backend is doing, as the status line says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::tui) enum Activity {
    /// No turn runs.
    Idle,
    /// A turn runs since the instant.
    Working(Instant),
    /// The turn was asked to stop; its end has not arrived.
    Stopping,
    /// The backend is gone.
    Disconnected,
}

impl App {
    /// What the status line says the backend is doing.
    pub(in crate::tui) fn activity(&self) -> Activity {
        if self.transcript.transport_lost() {
            Activity::Disconnected
        } else if !self.transcript.run_active() {
            Activity::Idle
        } else if self.stopping {
            Activity::Stopping
        } else {
            Activity::Working(self.run_started.unwrap_or_else(Instant::now))
        }
    }

    /// The status line at `now`.
    pub(in crate::tui) fn status_line(&self, now: Instant) -> String {
        let motion = !self.reduced_motion;
        let mut parts = vec![activity_words(self.activity(), now, motion)];
        // The latest notice comes right after the activity, so a narrow terminal cuts
        // the standing facts rather than the news.
        if self.quit_armed {
            parts.push("press Ctrl-C again to quit".to_owned());
        } else if !self.status.trim().is_empty() {
            parts.push(self.status.trim().to_owned());
        }
        if let Some(model) = self.selection.as_ref().and_then(model_words) {
            parts.push(model);
        }
        if let Some(context) = self.usage.as_ref().and_then(context_words) {
            parts.push(context);
        }
        parts.push(match &self.title {
            Some(title) => title.clone(),
            None => format!("session {}", self.session_id),
        });
        parts.push(
            match self.activity() {
                Activity::Working(_) => "Esc stop · Enter queue · /help",
                _ => "/help · Ctrl-C twice quits",
            }
            .to_owned(),
        );
        format!(" {}", parts.join(" · "))
    }
}

/// The activity in words: a spinner (unless motion is off) and the elapsed time while
/// working.
fn activity_words(activity: Activity, now: Instant, motion: bool) -> String {
    match activity {
        Activity::Idle => "idle".to_owned(),
        Activity::Stopping => "stopping…".to_owned(),
        Activity::Disconnected => "disconnected".to_owned(),
        Activity::Working(since) => {
            let elapsed = now.saturating_duration_since(since);
            let frame = (elapsed.as_millis() / SPINNER_STEP.as_millis()) as usize % SPINNER.len();
            let mark = if motion { SPINNER[frame] } else { "…" };
            format!("{mark} working {}", elapsed_words(elapsed))
        }
    }
}

/// `12s`, `3m 04s`, `1h 02m`.
pub(in crate::tui) fn elapsed_words(elapsed: Duration) -> String {
    let seconds = elapsed.as_secs();
    match seconds {
        0..60 => format!("{seconds}s"),
        60..3600 => format!("{}m {:02}s", seconds / 60, seconds % 60),
        _ => format!("{}h {:02}m", seconds / 3600, seconds % 3600 / 60),
    }
}

/// `provider/model`, with the effort when the model has one.
fn model_words(selection: &SelectionStatus) -> Option<String> {
    let model = selection.model.as_deref()?;
    let mut words = match selection.provider.as_deref() {
        Some(provider) => format!("{provider}/{model}"),
        None => model.to_owned(),
    };
    if let Some(effort) = selection.effective_effort {
        words.push_str(&format!(" ({})", effort.as_str()));
    }
    Some(words)
}

/// `context 12.3k/128k (10%)`: what the conversation fills of the model's window, and
/// `, 94% cached` when the provider said how much of the last request's input its
/// prompt cache served.
fn context_words(usage: &UsageUpdated) -> Option<String> {
    let used = usage.context_used?;
    let mut words = match usage.context_window {
        Some(window) if window > 0 => format!(
            "context {}/{} ({}%)",
            tokens(used),
            tokens(window),
            used.saturating_mul(100) / window
        ),
        _ => format!("context {} (window unknown)", tokens(used)),
    };
    if let (Some(input), Some(cached)) = (usage.input_tokens, usage.cached_input_tokens)
        && input > 0
    {
        words.push_str(&format!(
            ", {}% cached",
            cached.min(input).saturating_mul(100) / input
        ));
    }
    Some(words)
}

/// A token count for a glance: `950`, `12.3k`, `128k`, `1.2M`.
fn tokens(count: u64) -> String {
    match count {
        0..1_000 => count.to_string(),
        1_000..100_000 => format!("{:.1}k", count as f64 / 1e3),
        100_000..1_000_000 => format!("{}k", count / 1_000),
        _ => format!("{:.1}M", count as f64 / 1e6),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn working_shows_elapsed_time_and_moves_only_with_motion() {
        let since = Instant::now();
        let at = since + Duration::from_millis(65_250);
        assert_eq!(
            activity_words(Activity::Working(since), at, false),
            "… working 1m 05s"
        );
        let moving = activity_words(Activity::Working(since), at, true);
        assert!(moving.ends_with(" working 1m 05s"), "{moving}");
        assert!(SPINNER.iter().any(|f| moving.starts_with(f)), "{moving}");
        assert_eq!(activity_words(Activity::Stopping, at, true), "stopping…");
        assert_eq!(elapsed_words(Duration::from_secs(7)), "7s");
        assert_eq!(elapsed_words(Duration::from_secs(3_725)), "1h 02m");
    }

    #[test]
    fn the_cached_share_of_the_input_follows_the_context() {
        let usage: UsageUpdated = serde_json::from_value(serde_json::json!({
            "session_id": "s", "run_id": "r", "input_tokens": 20_000,
            "cached_input_tokens": 18_900, "output_tokens": 40, "reasoning_tokens": null,
            "context_window": 200_000, "context_used": 20_040
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            context_words(&usage).as_deref(),
            Some("context 20.0k/200k (10%), 94% cached")
        );
    }

    #[test]
    fn context_is_used_of_window_and_unknowns_say_so() {
        let mut usage: UsageUpdated = serde_json::from_value(serde_json::json!({
            "session_id": "s", "run_id": "r", "input_tokens": 12_300,
            "cached_input_tokens": null, "output_tokens": 40, "reasoning_tokens": null,
            "context_window": 128_000, "context_used": 12_340
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            context_words(&usage).as_deref(),
            Some("context 12.3k/128k (9%)")
        );
        usage.context_window = None;
        assert_eq!(
            context_words(&usage).as_deref(),
            Some("context 12.3k (window unknown)")
        );
        usage.context_used = None;
        assert_eq!(context_words(&usage), None);
        assert_eq!(tokens(950), "950");
        assert_eq!(tokens(1_500_000), "1.5M");
    }
}
