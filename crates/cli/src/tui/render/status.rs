//! The status line: what Mission Control is doing (with a working indicator and the
//! turn's elapsed time), the latest notice, the model, how much of its context the
//! session uses, the session's title, then the key hints (cut first on a narrow
//! terminal).

use std::time::{Duration, Instant};

use magi_protocol::messages::{SelectionStatus, UsageUpdated};

use super::wrap::{terminal_text, width_of};
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

    /// The status line at `now`, fitted to `width` cells.
    pub(in crate::tui) fn status_line(&self, now: Instant, width: usize) -> String {
        let motion = !self.reduced_motion;
        let activity = activity_words(self.activity(), now, motion);
        let notice = if self.quit_armed {
            Some("press Ctrl-C again to quit".to_owned())
        } else {
            Some(self.status.trim().to_owned()).filter(|s| !s.is_empty())
        };
        let facts = [
            // The approval mode first: it says what runs without asking.
            self.mode.map(|mode| format!("{} mode", mode.as_str())),
            self.selection.as_ref().and_then(model_words),
            self.usage.as_ref().and_then(context_words),
            Some(match &self.title {
                Some(title) => title.clone(),
                None => format!("session {}", self.session_id),
            }),
            Some(
                match self.activity() {
                    Activity::Working(_) => "Esc stop · Enter queue · /help",
                    _ => "/help · Ctrl-C twice quits",
                }
                .to_owned(),
            ),
        ];
        // Drawn without wrapping: emoji sequences as every terminal counts them.
        terminal_text(&fit_status(&activity, notice.as_deref(), &facts, width))
    }
}

/// Between two parts of the status line.
const SEPARATOR: &str = " · ";

/// The status line in `width` cells: the activity, then the latest notice (cut at a
/// word, with `…`, when it does not fit whole: a narrow terminal cuts the standing
/// facts rather than the news), then each standing fact that still fits whole, in
/// order. Nothing is cut mid-word.
fn fit_status(
    activity: &str,
    notice: Option<&str>,
    facts: &[Option<String>],
    width: usize,
) -> String {
    let measure = |text: &str| width_of(text);
    let mut line = format!(" {activity}");
    if let Some(notice) = notice {
        let room = width.saturating_sub(measure(&line) + measure(SEPARATOR));
        if let Some(fitted) = cut_at_word(notice, room) {
            line.push_str(SEPARATOR);
            line.push_str(&fitted);
        }
    }
    for fact in facts.iter().flatten() {
        if measure(&line) + measure(SEPARATOR) + measure(fact) <= width {
            line.push_str(SEPARATOR);
            line.push_str(fact);
        }
    }
    line
}

/// `text` in at most `room` cells: whole, or cut after its last whole word that fits
/// with `…` after it; `None` when not even one word fits.
fn cut_at_word(text: &str, room: usize) -> Option<String> {
    if width_of(text) <= room {
        return Some(text.to_owned());
    }
    let mut fitted = String::new();
    for word in text.split(' ') {
        let candidate = if fitted.is_empty() {
            word.to_owned()
        } else {
            format!("{fitted} {word}")
        };
        if width_of(&candidate) + width_of("…") > room {
            break;
        }
        fitted = candidate;
    }
    let fitted = fitted.trim_end_matches([' ', ',', ';', ':', '·']);
    (!fitted.is_empty()).then(|| format!("{fitted}…"))
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
pub(super) fn model_words(selection: &SelectionStatus) -> Option<String> {
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

/// The session's usage after `latest`: a request that reported no tokens (one the
/// person stopped) leaves the context figure what the last request that did said, not
/// unknown.
pub(in crate::tui) fn merged_usage(
    earlier: Option<UsageUpdated>,
    latest: &UsageUpdated,
) -> UsageUpdated {
    let mut usage = latest.clone();
    if usage.context_used.is_none()
        && let Some(earlier) = earlier
    {
        usage.context_used = earlier.context_used;
        usage.context_window = usage.context_window.or(earlier.context_window);
    }
    usage
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
    fn the_status_line_fits_its_width_without_cutting_a_word() {
        let facts = [
            Some("openai-chat/mock-model".to_owned()),
            Some("context 1.2k/32.8k (3%)".to_owned()),
            Some("Fix the parser".to_owned()),
            Some("/help · Ctrl-C twice quits".to_owned()),
        ];
        let notice = "unknown command /stauts — did you mean /status? /help lists them";
        let line = fit_status("idle", Some(notice), &facts, 80);
        assert_eq!(
            line,
            " idle · unknown command /stauts — did you mean /status? /help lists them"
        );
        let line = fit_status("idle", Some(notice), &facts, 40);
        assert_eq!(line, " idle · unknown command /stauts — did…");
        assert!(width_of(&line) <= 40);
        // Without news the standing facts that fit whole are shown, in order.
        let line = fit_status("idle", None, &facts, 60);
        assert_eq!(
            line,
            " idle · openai-chat/mock-model · context 1.2k/32.8k (3%)"
        );
        let line = fit_status("idle", None, &facts, 200);
        assert!(
            line.ends_with("Fix the parser · /help · Ctrl-C twice quits"),
            "{line}"
        );
        // CJK counts two cells a character.
        let line = fit_status("idle", Some("検査 検査 検査 検査"), &[], 20);
        assert_eq!(line, " idle · 検査 検査…");
        assert!(width_of(&line) <= 20);
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
        // A stopped request tells no tokens: the figure stays what it was.
        let mut stopped = usage.clone();
        stopped.context_used = None;
        stopped.input_tokens = None;
        let kept = merged_usage(Some(usage.clone()), &stopped);
        assert_eq!(
            context_words(&kept).as_deref(),
            Some("context 12.3k (window unknown)")
        );
        assert_eq!(kept.input_tokens, None);
        usage.context_used = None;
        assert_eq!(context_words(&usage), None);
        assert_eq!(tokens(950), "950");
        assert_eq!(tokens(1_500_000), "1.5M");
    }
}
