//! Pure text rules every layer shares: control characters, secret-like values and
//! bounded display names.

use crate::limits::{PROMPT_BYTES, PROVIDER_MODEL_BYTES};

mod escapes;

pub use escapes::remove_escapes;

/// Why `turn.start` refuses a prompt (the wire answer is `invalid_params`; a front end
/// says which of these it was, before sending or after the refusal).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptProblem {
    /// Nothing but white space.
    Empty,
    /// Over [`PROMPT_BYTES`]: its size in bytes.
    TooLong(usize),
}

impl PromptProblem {
    /// The prompt's problem, or none when `turn.start` admits it.
    pub fn of(prompt: &str) -> Option<PromptProblem> {
        if prompt.trim().is_empty() {
            Some(PromptProblem::Empty)
        } else if prompt.len() > PROMPT_BYTES {
            Some(PromptProblem::TooLong(prompt.len()))
        } else {
            None
        }
    }
}

impl std::fmt::Display for PromptProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PromptProblem::Empty => {
                f.write_str("the prompt is empty: say what the agent should do")
            }
            PromptProblem::TooLong(bytes) => write!(
                f,
                "the prompt is {} bytes, over the limit of {} bytes by {}; put long text in \
                 a file in this directory and ask the model to read it",
                grouped(*bytes),
                grouped(PROMPT_BYTES),
                grouped(bytes.saturating_sub(PROMPT_BYTES)),
            ),
        }
    }
}

/// `n` with a comma between each group of three digits, as the docs write bounds.
pub fn grouped(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Prefixes of credentials issued by common providers and forges.
const SECRET_PREFIXES: &[&str] = &[
    "sk-",
    "sk_",
    "rk-",
    "pk_live_",
    "xoxb-",
    "xoxp-",
    "ghp_",
    "gho_",
    "ghs_",
    "ghu_",
    "github_pat_",
    "glpat-",
    "AKIA",
    "ASIA",
    "AIza",
    "hf_",
    "Bearer ",
    "Basic ",
    "-----BEGIN",
];

/// A run of this many letters and digits, with both present, looks like a token.
const TOKEN_RUN_CHARS: usize = 32;

/// Whether `text` holds a control character (C0, DEL or C1).
pub fn has_control(text: &str) -> bool {
    text.chars().any(char::is_control)
}

/// Whether `text` looks like it holds a credential: a known key prefix at the start of
/// a word, or a long unbroken run of letters and digits mixing both.
pub fn is_secret_like(text: &str) -> bool {
    // One pass over the bytes: a prefix can only start a word, and a run of letters and
    // digits is counted as it goes (every string leaving the process passes here).
    let bytes = text.as_bytes();
    let (mut run, mut digits, mut letters) = (0usize, false, false);
    for (i, &b) in bytes.iter().enumerate() {
        let starts_word = i == 0 || !bytes[i - 1].is_ascii_alphanumeric();
        if starts_word
            && SECRET_PREFIXES
                .iter()
                .any(|p| bytes[i..].starts_with(p.as_bytes()) && bytes.len() > i + p.len())
        {
            return true;
        }
        if b.is_ascii_alphanumeric() {
            run += 1;
            digits |= b.is_ascii_digit();
            letters |= b.is_ascii_alphabetic();
            if run >= TOKEN_RUN_CHARS && digits && letters {
                return true;
            }
        } else {
            (run, digits, letters) = (0, false, false);
        }
    }
    false
}

/// A signal's name and number on Linux, for the ones a person meets; how every front end
/// names a signal that ended a process (`killed by signal 9 (KILL)`).
pub const SIGNALS: [(&str, i32); 15] = [
    ("HUP", 1),
    ("INT", 2),
    ("QUIT", 3),
    ("ILL", 4),
    ("TRAP", 5),
    ("ABRT", 6),
    ("BUS", 7),
    ("FPE", 8),
    ("KILL", 9),
    ("USR1", 10),
    ("SEGV", 11),
    ("USR2", 12),
    ("PIPE", 13),
    ("ALRM", 14),
    ("TERM", 15),
];

/// The name of signal `number` (`KILL` for 9), when it is one of [`SIGNALS`].
pub fn signal_name(number: i32) -> Option<&'static str> {
    SIGNALS
        .iter()
        .find(|(_, n)| *n == number)
        .map(|(name, _)| *name)
}

/// The number of signal `name` (9 for `KILL`), when it is one of [`SIGNALS`].
pub fn signal_number(name: &str) -> Option<i32> {
    SIGNALS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, number)| *number)
}

/// What a redacted value is replaced with.
pub const REDACTED: &str = "[redacted]";

/// Removes control characters except LF and TAB, which keep text readable; a
/// terminal escape sequence goes whole, its parameters with it ([`remove_escapes`]).
pub fn strip_controls(text: &str) -> String {
    // Most text has nothing to strip: copy it whole.
    if !text
        .chars()
        .any(|c| c != '\n' && c != '\t' && c.is_control())
    {
        return text.to_owned();
    }
    remove_escapes(text, false)
        .chars()
        .filter(|&c| c == '\n' || c == '\t' || !c.is_control())
        .collect()
}

/// Replaces every whitespace-separated token that looks like a credential with
/// [`REDACTED`], keeping the whitespace around it.
pub fn redact_secrets(text: &str) -> String {
    // Most text holds no secret: one pass to find out, and a whole copy.
    if !text.split_whitespace().any(is_secret_like) {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        let token_start = rest
            .find(|c: char| !c.is_whitespace())
            .unwrap_or(rest.len());
        out.push_str(&rest[..token_start]);
        rest = &rest[token_start..];
        let token_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let token = &rest[..token_end];
        out.push_str(if is_secret_like(token) {
            REDACTED
        } else {
            token
        });
        rest = &rest[token_end..];
    }
    out
}

/// Shortest credential value [`redact_values`] looks for: shorter values would match
/// ordinary text.
pub const REDACTED_VALUE_MIN_BYTES: usize = 8;

/// Replaces every occurrence of each of `values` (the backend's own credentials, which
/// need not look like a key) with [`REDACTED`]. Values shorter than
/// [`REDACTED_VALUE_MIN_BYTES`] are ignored.
pub fn redact_values(text: &str, values: &[String]) -> String {
    let mut text = std::borrow::Cow::Borrowed(text);
    for value in values {
        if value.len() >= REDACTED_VALUE_MIN_BYTES && text.contains(value.as_str()) {
            text = std::borrow::Cow::Owned(text.replace(value.as_str(), REDACTED));
        }
    }
    text.into_owned()
}

/// Text as it may leave the process for a client: controls stripped, secrets redacted.
pub fn sanitize(text: &str) -> String {
    redact_secrets(&strip_controls(text))
}

/// A provider or model name as it may be shown to a client: at most 256 bytes, no
/// control characters, nothing secret-like. Anything else is withheld (`None`).
pub fn safe_display_name(name: &str) -> Option<&str> {
    let safe = !name.is_empty()
        && name.len() <= PROVIDER_MODEL_BYTES
        && !has_control(name)
        && !is_secret_like(name);
    safe.then_some(name)
}

#[cfg(test)]
mod tests {
    #[test]
    fn numbers_are_grouped_by_thousands() {
        use super::grouped;
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1_000), "1,000");
        assert_eq!(grouped(1_048_576), "1,048,576");
    }

    use super::*;

    #[test]
    fn ordinary_model_names_are_shown() {
        for name in [
            "gpt-5",
            "claude-sonnet-4-5-20250929",
            "openai-chat",
            "meta-llama/Meta-Llama-3.1-70B-Instruct",
            "qwen2.5-coder:32b",
            "skill-model",
        ] {
            assert_eq!(safe_display_name(name), Some(name), "{name}");
        }
    }

    #[test]
    fn sanitize_strips_controls_and_redacts_tokens() {
        // An escape sequence goes whole, never its parameters alone.
        assert_eq!(strip_controls("a\u{1b}[31mb\r\n\tc\u{7f}"), "ab\n\tc");
        assert_eq!(
            sanitize("key: sk-abc123def456 and\n ghp_XYZ rest"),
            "key: [redacted] and\n [redacted] rest"
        );
        assert_eq!(
            sanitize("plain text, nothing here"),
            "plain text, nothing here"
        );
        assert_eq!(sanitize("  "), "  ");
    }

    #[test]
    fn unsafe_names_are_withheld() {
        let long = "m".repeat(PROVIDER_MODEL_BYTES + 1);
        for name in [
            "",
            long.as_str(),
            "model\u{1b}[31m",
            "line\nbreak",
            "sk-proj-abcdef",
            "my ghp_abcdefgh",
            "a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8",
        ] {
            assert_eq!(safe_display_name(name), None, "{name:?}");
        }
        assert_eq!(
            safe_display_name(&"m".repeat(PROVIDER_MODEL_BYTES)).map(str::len),
            Some(256)
        );
    }
}
