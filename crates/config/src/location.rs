//! Where in a settings file something is: the line and column of a byte offset, and
//! the dotted key written there, so that an error can send a person to the exact place.

use std::path::Path;

use crate::ConfigError;

/// A TOML error of the file at `path`: its place (`path:line:column: key `k``) and
/// what is wrong there.
pub(crate) fn toml_error(path: &Path, text: &str, error: &toml::de::Error) -> ConfigError {
    let place = match error.span() {
        Some(span) => Location::of(text, span.start).describe(path),
        None => path.display().to_string(),
    };
    ConfigError::Invalid(format!("{place}: {}", error.message().trim()))
}

/// A place in a settings file: 1-based line and column (in characters), and the key
/// written there when one can be read from the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Location {
    pub(crate) line: usize,
    pub(crate) column: usize,
    /// The dotted key, e.g. `tools.disabled` or `providers.local.colour`.
    pub(crate) key: Option<String>,
}

impl Location {
    /// The place of byte `offset` in `text`.
    pub(crate) fn of(text: &str, offset: usize) -> Location {
        let offset = floor_char_boundary(text, offset.min(text.len()));
        let before = &text[..offset];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let column = text[line_start..offset].chars().count() + 1;
        Location {
            line,
            column,
            key: key_at(text, line),
        }
    }

    /// `path:line:column`, then `key` when known, for the start of an error message.
    pub(crate) fn describe(&self, path: &Path) -> String {
        match &self.key {
            Some(key) => format!(
                "{}:{}:{}: key `{key}`",
                path.display(),
                self.line,
                self.column
            ),
            None => format!("{}:{}:{}", path.display(), self.line, self.column),
        }
    }
}

fn floor_char_boundary(text: &str, mut offset: usize) -> usize {
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

/// The key assigned on line `line` (1-based) or, inside a multi-line value, on the
/// nearest line above that assigns one, prefixed with the table header above it. Read
/// from the text as written: a key TOML would quote is given as written.
fn key_at(text: &str, line: usize) -> Option<String> {
    let lines: Vec<&str> = text.lines().take(line).collect();
    let mut key = None;
    for (index, raw) in lines.iter().enumerate().rev() {
        let trimmed = raw.trim_start();
        match table_header(trimmed) {
            Some(header) => {
                return Some(match key {
                    Some(key) => format!("{header}.{key}"),
                    // The error is on the header itself.
                    None if index + 1 == line => header,
                    None => return None,
                });
            }
            // A header left open (`[agent`, say) names no key, and the keys above it
            // belong to another table.
            None if index + 1 == line && opens_header(trimmed) => return None,
            None => {}
        }
        if key.is_none()
            && let Some(assigned) = assigned_key(trimmed)
        {
            key = Some(assigned);
        }
    }
    key
}

/// `a.b` of a `[a.b]` or `[[a.b]]` line: closed, followed by nothing but a comment, and
/// named as a key is (so `["a", "b"],` inside an array is no header).
fn table_header(line: &str) -> Option<String> {
    let inner = line.strip_prefix('[')?;
    let (inner, close) = match inner.strip_prefix('[') {
        Some(inner) => (inner, "]]"),
        None => (inner, "]"),
    };
    let end = inner.find(']')?;
    let after = inner[end..].strip_prefix(close)?.trim_start();
    if !(after.is_empty() || after.starts_with('#')) || !plausible_key(&inner[..end]) {
        return None;
    }
    let name: String = inner[..end]
        .split('.')
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(".");
    (!name.is_empty()).then_some(name)
}

/// Whether `line` begins as a table header does: a `[` then a key (`[agent`,
/// `[agent] x`), unlike an array inside an array (`[1, 2`).
fn opens_header(line: &str) -> bool {
    let Some(inner) = line.strip_prefix('[') else {
        return false;
    };
    let inner = inner.strip_prefix('[').unwrap_or(inner);
    plausible_key(inner.split(']').next().unwrap_or(inner))
}

/// The key of a `key = value` line (bare, dotted or quoted keys as written).
fn assigned_key(line: &str) -> Option<String> {
    if line.starts_with('#') {
        return None;
    }
    let (key, _) = line.split_once('=')?;
    let key = key.trim();
    plausible_key(key).then(|| key.to_owned())
}

/// Whether `key` reads as a TOML key as written: bare, dotted or quoted.
fn plausible_key(key: &str) -> bool {
    !key.trim().is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '"' | '\'' | ' '))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_columns_and_keys() {
        let text = "model = \"m\"\n[tools]\ndisabled = [\n  \"bash\",\n  \"bahs\",\n]\n";
        let at = |needle: &str| Location::of(text, text.find(needle).unwrap());
        assert_eq!(
            at("\"m\""),
            Location {
                line: 1,
                column: 9,
                key: Some("model".into())
            }
        );
        let bahs = at("\"bahs\"");
        assert_eq!((bahs.line, bahs.column), (5, 3));
        assert_eq!(bahs.key.as_deref(), Some("tools.disabled"));
        assert_eq!(at("[tools]").key.as_deref(), Some("tools"));
        // A broken header names no key, not the last key of the table above it.
        let broken = "[tools]\ndisabled = \"bash\"\n[agent\n";
        let place = Location::of(broken, broken.find("[agent").unwrap() + 6);
        assert_eq!((place.line, place.column, place.key), (3, 7, None));
        // An array inside an array is no header: the key is the one assigned above.
        let nested = "[hooks]\nmatrix = [\n  [\"a\", \"b\"],\n  [1, x],\n]\n";
        let place = Location::of(nested, nested.find("x]").unwrap());
        assert_eq!(place.key.as_deref(), Some("hooks.matrix"));
        assert_eq!(
            Location::of("[[hooks.turn_end]] # after a turn\ncommand = 1\n", 35).key,
            Some("hooks.turn_end.command".to_owned())
        );
        assert_eq!(
            Location::of("[providers . local]\ncolour = 1\n", 20).describe(Path::new("s.toml")),
            "s.toml:2:1: key `providers.local.colour`"
        );
    }
}
