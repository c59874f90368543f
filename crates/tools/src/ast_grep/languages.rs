//! The languages `ast_grep` parses: each a tree-sitter grammar built into the binary, the
//! names the model may give it, the file extensions it covers, and how a pattern's
//! metavariables are made parseable in it.
//!
//! The grammars are chosen here rather than through `ast-grep-language`, which builds
//! some thirty of them; the ten below are the common ones the tool promises.

use std::borrow::Cow;
use std::path::Path;

use ast_grep_core::Language;
use ast_grep_core::matcher::{Pattern, PatternBuilder, PatternError};
use ast_grep_core::tree_sitter::{LanguageExt, StrDoc, TSLanguage};

/// A language `ast_grep` parses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AstLanguage {
    Rust,
    Python,
    JavaScript,
    TypeScript,
    Tsx,
    Go,
    Java,
    C,
    Cpp,
    Json,
    Bash,
}

impl AstLanguage {
    /// Every language, in the order the tool lists them.
    pub(crate) const ALL: [AstLanguage; 11] = [
        AstLanguage::Rust,
        AstLanguage::Python,
        AstLanguage::JavaScript,
        AstLanguage::TypeScript,
        AstLanguage::Tsx,
        AstLanguage::Go,
        AstLanguage::Java,
        AstLanguage::C,
        AstLanguage::Cpp,
        AstLanguage::Json,
        AstLanguage::Bash,
    ];

    /// The names the model may give, the first being the one the tool shows.
    pub(crate) fn names(self) -> &'static [&'static str] {
        match self {
            AstLanguage::Rust => &["rust", "rs"],
            AstLanguage::Python => &["python", "py"],
            AstLanguage::JavaScript => &["javascript", "js", "jsx"],
            AstLanguage::TypeScript => &["typescript", "ts"],
            AstLanguage::Tsx => &["tsx"],
            AstLanguage::Go => &["go", "golang"],
            AstLanguage::Java => &["java"],
            AstLanguage::C => &["c"],
            AstLanguage::Cpp => &["cpp", "c++", "cc", "cxx"],
            AstLanguage::Json => &["json"],
            AstLanguage::Bash => &["bash", "sh", "shell"],
        }
    }

    /// The file extensions it searches. A `.h` header is C's: C++ headers are more
    /// often `.hpp`, and a C++ search given a `globs` still reaches only these.
    fn extensions(self) -> &'static [&'static str] {
        match self {
            AstLanguage::Rust => &["rs"],
            AstLanguage::Python => &["py", "pyi"],
            AstLanguage::JavaScript => &["js", "mjs", "cjs", "jsx"],
            AstLanguage::TypeScript => &["ts", "mts", "cts"],
            AstLanguage::Tsx => &["tsx"],
            AstLanguage::Go => &["go"],
            AstLanguage::Java => &["java"],
            AstLanguage::C => &["c", "h"],
            AstLanguage::Cpp => &["cpp", "cc", "cxx", "c++", "hpp", "hh", "hxx", "h++"],
            AstLanguage::Json => &["json"],
            AstLanguage::Bash => &["sh", "bash"],
        }
    }

    /// The language a name stands for, whatever its case.
    pub(crate) fn from_name(name: &str) -> Option<AstLanguage> {
        let name = name.trim().to_ascii_lowercase();
        AstLanguage::ALL
            .into_iter()
            .find(|lang| lang.names().contains(&name.as_str()))
    }

    /// The supported names, for a message that lists them.
    pub(crate) fn listed() -> String {
        AstLanguage::ALL
            .iter()
            .map(|lang| lang.names()[0])
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Whether the file at `path` is one of this language's.
    pub(crate) fn covers(self, path: &Path) -> bool {
        path.extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| self.extensions().iter().any(|x| x.eq_ignore_ascii_case(e)))
    }

    /// The character a metavariable's `$` becomes before the pattern is parsed, for
    /// grammars whose identifiers cannot start with `$`; it must be one they accept in
    /// an identifier, so `$NAME` parses where a name may stand.
    fn stand_in(self) -> Option<char> {
        match self {
            AstLanguage::Rust | AstLanguage::Python | AstLanguage::Go => Some('µ'),
            AstLanguage::C | AstLanguage::Cpp => Some('𐀀'),
            AstLanguage::JavaScript
            | AstLanguage::TypeScript
            | AstLanguage::Tsx
            | AstLanguage::Java
            | AstLanguage::Json
            | AstLanguage::Bash => None,
        }
    }
}

/// `pattern` with the `$` of each metavariable (`$A`, `$$B`, `$$$C`, `$_`, and the bare
/// `$$$`) replaced by `stand_in`; a `$` not starting one (`$1`, `$x`) stays.
fn with_stand_in(pattern: &str, stand_in: char) -> String {
    let mut out = String::with_capacity(pattern.len());
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '$' {
            out.push(c);
            continue;
        }
        let mut run = 1;
        while chars.next_if_eq(&'$').is_some() {
            run += 1;
        }
        let names_one = chars
            .peek()
            .is_some_and(|&next| next.is_ascii_uppercase() || next == '_');
        let sigil = if names_one || run == 3 { stand_in } else { '$' };
        out.extend(std::iter::repeat_n(sigil, run));
    }
    out
}

impl Language for AstLanguage {
    fn pre_process_pattern<'q>(&self, query: &'q str) -> Cow<'q, str> {
        match self.stand_in() {
            Some(stand_in) => Cow::Owned(with_stand_in(query, stand_in)),
            None => Cow::Borrowed(query),
        }
    }

    fn expando_char(&self) -> char {
        self.stand_in().unwrap_or('$')
    }

    fn kind_to_id(&self, kind: &str) -> u16 {
        self.get_ts_language().id_for_node_kind(kind, true)
    }

    fn field_to_id(&self, field: &str) -> Option<u16> {
        self.get_ts_language()
            .field_id_for_name(field)
            .map(|id| id.get())
    }

    fn build_pattern(&self, builder: &PatternBuilder) -> Result<Pattern, PatternError> {
        builder.build(|source| StrDoc::try_new(source, *self))
    }
}

impl LanguageExt for AstLanguage {
    fn get_ts_language(&self) -> TSLanguage {
        match self {
            AstLanguage::Rust => tree_sitter_rust::LANGUAGE.into(),
            AstLanguage::Python => tree_sitter_python::LANGUAGE.into(),
            AstLanguage::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
            AstLanguage::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            AstLanguage::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
            AstLanguage::Go => tree_sitter_go::LANGUAGE.into(),
            AstLanguage::Java => tree_sitter_java::LANGUAGE.into(),
            AstLanguage::C => tree_sitter_c::LANGUAGE.into(),
            AstLanguage::Cpp => tree_sitter_cpp::LANGUAGE.into(),
            AstLanguage::Json => tree_sitter_json::LANGUAGE.into(),
            AstLanguage::Bash => tree_sitter_bash::LANGUAGE.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metavariables_get_the_stand_in_and_other_dollars_stay() {
        assert_eq!(with_stand_in("f($A, $$$)", 'µ'), "f(µA, µµµ)");
        assert_eq!(with_stand_in("$$$ARGS $_ $$B", 'µ'), "µµµARGS µ_ µµB");
        assert_eq!(with_stand_in("\"$1\" $x $", 'µ'), "\"$1\" $x $");
    }

    #[test]
    fn names_and_extensions() {
        assert_eq!(AstLanguage::from_name("RS"), Some(AstLanguage::Rust));
        assert_eq!(AstLanguage::from_name("c++"), Some(AstLanguage::Cpp));
        assert_eq!(AstLanguage::from_name("cobol"), None);
        assert!(AstLanguage::Tsx.covers(Path::new("a/b.TSX")));
        assert!(!AstLanguage::TypeScript.covers(Path::new("a/b.tsx")));
        assert!(AstLanguage::listed().starts_with("rust, python, javascript"));
    }
}
