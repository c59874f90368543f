//! Pure text rules every layer shares: control characters, secret-like values and
//! bounded display names.

use crate::limits::{PROMPT_BYTES, PROVIDER_MODEL_BYTES};

mod escapes;
mod sgr;

pub use escapes::remove_escapes;
pub use sgr::Styler;

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

/// The start of a JSON Web Token: `{"` in base64url, which every JWT's header begins
/// with (access and ID tokens of sign-ins are JWTs).
const JWT_START: &[u8] = b"eyJ";
/// Fewest characters of a JWT's header before its first dot.
const JWT_HEADER_CHARS: usize = 10;

/// Prefixes of opaque refresh tokens (OpenAI's sign-in issues `rt_…`), followed by at
/// least [`REFRESH_TOKEN_CHARS`] token characters, so that identifiers such as
/// `rt_sigaction` stay readable.
const REFRESH_TOKEN_PREFIXES: &[&str] = &["rt_"];
/// Fewest token characters after a refresh token's prefix.
const REFRESH_TOKEN_CHARS: usize = 20;

/// Names of OAuth fields whose value is a credential, as JSON (`"access_token":"…"`) or
/// a form (`refresh_token=…`) write them.
const TOKEN_FIELDS: &[&str] = &[
    "access_token",
    "refresh_token",
    "id_token",
    "client_secret",
    "code_verifier",
];
/// Fewest characters of a token field's value that count as a credential.
const TOKEN_FIELD_VALUE_CHARS: usize = 8;

/// Whether `b` may be part of a token: base64url, and the dot of JWTs.
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.')
}

/// How many token bytes `bytes` starts with.
fn token_len(bytes: &[u8]) -> usize {
    bytes.iter().take_while(|b| is_token_byte(**b)).count()
}

/// Whether `bytes` starts with a JWT: `eyJ`, a header of token characters, a dot and
/// more.
fn starts_jwt(bytes: &[u8]) -> bool {
    if !bytes.starts_with(JWT_START) {
        return false;
    }
    let header = bytes
        .iter()
        .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_'))
        .count();
    header >= JWT_HEADER_CHARS
        && bytes.get(header) == Some(&b'.')
        && bytes.get(header + 1).is_some_and(|b| is_token_byte(*b))
}

/// Whether `bytes` starts with a refresh token of a known shape.
fn starts_refresh_token(bytes: &[u8]) -> bool {
    REFRESH_TOKEN_PREFIXES.iter().any(|prefix| {
        bytes.starts_with(prefix.as_bytes())
            && token_len(&bytes[prefix.len()..]) >= REFRESH_TOKEN_CHARS
    })
}

/// Whether `bytes` starts with a token field and its value: `access_token=…`,
/// `"refresh_token":"…"`, `refresh_token: …`.
fn starts_token_field(bytes: &[u8]) -> bool {
    TOKEN_FIELDS.iter().any(|field| {
        let Some(rest) = bytes.strip_prefix(field.as_bytes()) else {
            return false;
        };
        // The field's name ends here (not `access_tokens`), then a separator.
        let separator = rest
            .iter()
            .take_while(|b| matches!(b, b'"' | b'\'' | b':' | b'=' | b' '))
            .count();
        let has_separator = rest[..separator].iter().any(|b| matches!(b, b':' | b'='));
        has_separator && token_len(&rest[separator..]) >= TOKEN_FIELD_VALUE_CHARS
    })
}

/// Whether `text` holds a control character (C0, DEL or C1).
pub fn has_control(text: &str) -> bool {
    text.chars().any(char::is_control)
}

/// Whether `text` looks like it holds a credential: a known key prefix at the start of
/// a word, a JSON Web Token, a refresh token of a known shape, an OAuth token field with
/// its value, or a long unbroken run of letters and digits mixing both.
pub fn is_secret_like(text: &str) -> bool {
    // One pass over the bytes: a prefix or a token's shape can only start a word, and a
    // run of letters and digits is counted as it goes (every string leaving the process
    // passes here).
    let bytes = text.as_bytes();
    let (mut run, mut digits, mut letters) = (0usize, false, false);
    for (i, &b) in bytes.iter().enumerate() {
        let starts_word = i == 0 || !bytes[i - 1].is_ascii_alphanumeric();
        if starts_word {
            let rest = &bytes[i..];
            let known_prefix = SECRET_PREFIXES
                .iter()
                .any(|p| rest.starts_with(p.as_bytes()) && rest.len() > p.len());
            if known_prefix
                || starts_jwt(rest)
                || starts_refresh_token(rest)
                || starts_token_field(rest)
            {
                return true;
            }
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

/// Words after which the next word is a credential (`Authorization: Bearer …`).
const SCHEME_WORDS: &[&str] = &["Bearer", "bearer", "Basic", "basic"];

/// Whether `word` ends with a token field's name and its separator (`"id_token":`,
/// `refresh_token=`), so that the next word is the field's value.
fn ends_with_token_field(word: &str) -> bool {
    let name = word.trim_end_matches(['"', '\'', ':', '=']);
    let separated = word[name.len()..].contains([':', '=']);
    separated
        && TOKEN_FIELDS
            .iter()
            .any(|field| name.trim_end_matches(['"', '\'']).ends_with(field))
}

/// Whether `token` is a credential in its place: secret-like itself, or a word of
/// [`TOKEN_FIELD_VALUE_CHARS`] or more right after an authorization scheme's name or a
/// token field's name.
fn is_secret_token(token: &str, previous: Option<&str>) -> bool {
    is_secret_like(token)
        || (previous.is_some_and(|p| SCHEME_WORDS.contains(&p) || ends_with_token_field(p))
            && token.len() >= TOKEN_FIELD_VALUE_CHARS)
}

/// Replaces every whitespace-separated token that looks like a credential with
/// [`REDACTED`], keeping the whitespace around it. A word right after `Bearer` or
/// `Basic` is a credential too, whatever it looks like.
pub fn redact_secrets(text: &str) -> String {
    // Most text holds no secret: one pass to find out, and a whole copy.
    let mut previous = None;
    let any = text.split_whitespace().any(|token| {
        let secret = is_secret_token(token, previous);
        previous = Some(token);
        secret
    });
    if !any {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut previous = None;
    while !rest.is_empty() {
        let token_start = rest
            .find(|c: char| !c.is_whitespace())
            .unwrap_or(rest.len());
        out.push_str(&rest[..token_start]);
        rest = &rest[token_start..];
        let token_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let token = &rest[..token_end];
        out.push_str(if is_secret_token(token, previous) {
            REDACTED
        } else {
            token
        });
        previous = Some(token);
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

    /// A JWT as sign-ins issue them: header, claims, signature.
    const JWT: &str = "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJleHAiOjE3MDAwMDAwMDB9.c2lnbmF0dXJl";

    #[test]
    fn every_token_shape_of_a_sign_in_is_secret_like() {
        for text in [
            JWT,
            // Short parts and base64url's `-` and `_` break the letter-digit runs.
            "eyJhbGci-_J9.eyJz-_In0.s-_g",
            "\"access_token\":\"opaque-token-value\"",
            "access_token=opaque-token-value&token_type=bearer",
            "client_secret=s3cr3t-value",
            "rt_Abc-defGhi_jklMno.pqrStuv",
            "(rt_0123456789abcdefghijk)",
            "url?code_verifier=abcdefghijklmnop",
        ] {
            assert!(is_secret_like(text), "{text}");
            assert_eq!(sanitize(text), REDACTED, "{text}");
        }
        // Ordinary words and identifiers that share a start stay readable.
        for text in [
            "rt_sigaction",
            "rt_runtime_us",
            "eyJ",
            "eyJustAWord",
            "access_tokens are issued",
            "the refresh_token field",
            "id_token:",
        ] {
            assert!(!is_secret_like(text), "{text}");
        }
    }

    #[test]
    fn the_word_after_an_authorization_scheme_is_redacted() {
        assert_eq!(
            sanitize("Authorization: Bearer opaque-value-123 sent"),
            "Authorization: Bearer [redacted] sent"
        );
        assert_eq!(
            sanitize("authorization: bearer abcdefgh"),
            "authorization: bearer [redacted]"
        );
        assert_eq!(sanitize("a Bearer of news"), "a Bearer of news");
        // A field's value written after a space, as pretty-printed JSON and YAML do.
        assert_eq!(
            sanitize("{\"refresh_token\": \"abcdefgh\", \"n\": 1}"),
            "{\"refresh_token\": [redacted] \"n\": 1}"
        );
        assert_eq!(sanitize("id_token: opaque12"), "id_token: [redacted]");
        assert_eq!(sanitize("id_token: short"), "id_token: short");
        assert_eq!(
            sanitize(&format!("token {JWT} end")),
            "token [redacted] end"
        );
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
