//! The command text as shell words and redirections, split into simple commands at
//! separators and pipes; whatever needs a shell to be read makes it unreadable.

/// The command text cannot be read without running a shell.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Unreadable;

/// One shell word after quote removal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Word {
    pub(super) text: String,
    /// No expansion, glob, brace or tilde: the text is what the program receives.
    pub(super) literal: bool,
    /// Some part was quoted or escaped, so it cannot be a reserved word.
    pub(super) quoted: bool,
    /// `NAME=value` with an unquoted name.
    pub(super) assignment: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Redirect {
    /// `<`
    Read,
    /// `>`, `>|`, `&>`
    Write,
    /// `>>`, `&>>`
    Append,
    /// `<>`
    ReadWrite,
    /// `>&`: a descriptor, or a file for both streams.
    DuplicateOut,
    /// `<&`: a descriptor.
    DuplicateIn,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Token {
    Word(Word),
    Redirect(Redirect),
    /// Ends a segment: `;`, `&&`, `||`, `&`, `|`, `|&` or a newline.
    Boundary,
}

/// A word being collected.
struct WordBuilder {
    text: String,
    started: bool,
    literal: bool,
    quoted: bool,
    assignment: bool,
    /// Every character so far is an unquoted name character.
    name_so_far: bool,
    /// Every character so far is an unquoted digit: a descriptor before `<` or `>`.
    digits_only: bool,
}

impl Default for WordBuilder {
    fn default() -> WordBuilder {
        WordBuilder {
            text: String::new(),
            started: false,
            literal: true,
            quoted: false,
            assignment: false,
            name_so_far: true,
            digits_only: true,
        }
    }
}

impl WordBuilder {
    fn push_unquoted(&mut self, c: char) {
        if !c.is_ascii_digit() {
            self.digits_only = false;
        }
        if c == '='
            && self.name_so_far
            && !self.assignment
            && !self.text.is_empty()
            && !self.text.starts_with(|first: char| first.is_ascii_digit())
        {
            self.assignment = true;
        }
        if !(c.is_ascii_alphanumeric() || c == '_') {
            self.name_so_far = false;
        }
        if matches!(c, '*' | '?' | '[' | '{' | '}') || (c == '~' && !self.started) {
            self.literal = false;
        }
        self.text.push(c);
        self.started = true;
    }

    fn push_quoted(&mut self, c: char) {
        self.mark_quoted();
        self.text.push(c);
    }

    fn mark_quoted(&mut self) {
        self.quoted = true;
        self.name_so_far = false;
        self.digits_only = false;
        self.started = true;
    }

    fn push_expansion(&mut self, raw: &[char]) {
        self.literal = false;
        self.name_so_far = false;
        self.digits_only = false;
        self.started = true;
        self.text.extend(raw);
    }

    fn is_descriptor(&self) -> bool {
        self.started && self.digits_only
    }

    fn finish(&mut self, tokens: &mut Vec<Token>) {
        let word = std::mem::take(self);
        if word.started {
            tokens.push(Token::Word(Word {
                text: word.text,
                literal: word.literal,
                quoted: word.quoted,
                assignment: word.assignment,
            }));
        }
    }
}

pub(super) fn lex(command: &str) -> Result<Vec<Token>, Unreadable> {
    let chars: Vec<char> = command.chars().collect();
    let mut tokens = Vec::new();
    let mut word = WordBuilder::default();
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        let next = chars.get(i + 1).copied();
        match c {
            ' ' | '\t' | '\r' => {
                word.finish(&mut tokens);
                i += 1;
            }
            '\n' => {
                word.finish(&mut tokens);
                tokens.push(Token::Boundary);
                i += 1;
            }
            '#' if !word.started => {
                while chars.get(i).is_some_and(|&c| c != '\n') {
                    i += 1;
                }
            }
            '\'' => {
                let close = chars[i + 1..]
                    .iter()
                    .position(|&c| c == '\'')
                    .ok_or(Unreadable)?;
                word.mark_quoted();
                word.text.extend(&chars[i + 1..i + 1 + close]);
                i += close + 2;
            }
            '"' => i = lex_double_quoted(&chars, i + 1, &mut word)?,
            '\\' => match next {
                Some('\n') => i += 2,
                Some(escaped) => {
                    word.push_quoted(escaped);
                    i += 2;
                }
                None => return Err(Unreadable),
            },
            '$' => i = lex_dollar(&chars, i, &mut word, false)?,
            '`' | '(' | ')' => return Err(Unreadable),
            ';' => {
                word.finish(&mut tokens);
                tokens.push(Token::Boundary);
                i += 1;
            }
            '&' => {
                word.finish(&mut tokens);
                match (next, chars.get(i + 2).copied()) {
                    (Some('&'), _) => {
                        tokens.push(Token::Boundary);
                        i += 2;
                    }
                    (Some('>'), Some('>')) => {
                        tokens.push(Token::Redirect(Redirect::Append));
                        i += 3;
                    }
                    (Some('>'), _) => {
                        tokens.push(Token::Redirect(Redirect::Write));
                        i += 2;
                    }
                    _ => {
                        tokens.push(Token::Boundary);
                        i += 1;
                    }
                }
            }
            '|' => {
                word.finish(&mut tokens);
                tokens.push(Token::Boundary);
                i += if matches!(next, Some('|' | '&')) {
                    2
                } else {
                    1
                };
            }
            '<' | '>' => {
                // Digits directly before the operator are its descriptor, not a word.
                if word.is_descriptor() {
                    word = WordBuilder::default();
                } else {
                    word.finish(&mut tokens);
                }
                let (redirect, length) = match (c, next) {
                    ('<', Some('<' | '(')) | ('>', Some('(')) => return Err(Unreadable),
                    ('<', Some('>')) => (Redirect::ReadWrite, 2),
                    ('<', Some('&')) => (Redirect::DuplicateIn, 2),
                    ('<', _) => (Redirect::Read, 1),
                    (_, Some('>')) => (Redirect::Append, 2),
                    (_, Some('|')) => (Redirect::Write, 2),
                    (_, Some('&')) => (Redirect::DuplicateOut, 2),
                    _ => (Redirect::Write, 1),
                };
                tokens.push(Token::Redirect(redirect));
                i += length;
            }
            _ => {
                word.push_unquoted(c);
                i += 1;
            }
        }
    }
    word.finish(&mut tokens);
    Ok(tokens)
}

/// Reads a double-quoted part starting after its opening quote; returns the index after
/// its closing quote.
fn lex_double_quoted(
    chars: &[char],
    mut i: usize,
    word: &mut WordBuilder,
) -> Result<usize, Unreadable> {
    word.mark_quoted();
    loop {
        match chars.get(i).copied() {
            None | Some('`') => return Err(Unreadable),
            Some('"') => return Ok(i + 1),
            Some('\\') => match chars.get(i + 1).copied() {
                Some('\n') => i += 2,
                Some(escaped @ ('$' | '`' | '"' | '\\')) => {
                    word.push_quoted(escaped);
                    i += 2;
                }
                Some(_) => {
                    word.push_quoted('\\');
                    i += 1;
                }
                None => return Err(Unreadable),
            },
            Some('$') => i = lex_dollar(chars, i, word, true)?,
            Some(c) => {
                word.push_quoted(c);
                i += 1;
            }
        }
    }
}

/// Reads a `$` at `i`: a parameter expansion makes the word non-literal, a lone `$` is
/// itself, and command substitution or `$'…'` quoting cannot be read.
fn lex_dollar(
    chars: &[char],
    i: usize,
    word: &mut WordBuilder,
    in_double_quotes: bool,
) -> Result<usize, Unreadable> {
    match chars.get(i + 1).copied() {
        Some('(') => Err(Unreadable),
        Some('\'' | '"') if !in_double_quotes => Err(Unreadable),
        Some('{') => {
            // Only a plain `${...}` is followed; anything nested inside it could hide a
            // command substitution.
            let close = chars[i + 2..]
                .iter()
                .position(|&c| c == '}')
                .ok_or(Unreadable)?;
            let inner = &chars[i + 2..i + 2 + close];
            if inner
                .iter()
                .any(|c| matches!(c, '`' | '$' | '\'' | '"' | '\\' | '{' | '\n'))
            {
                return Err(Unreadable);
            }
            let end = i + 3 + close;
            word.push_expansion(&chars[i..end]);
            Ok(end)
        }
        Some(c) if c.is_ascii_alphabetic() || c == '_' => {
            let length = chars[i + 1..]
                .iter()
                .take_while(|c| c.is_ascii_alphanumeric() || **c == '_')
                .count();
            let end = i + 1 + length;
            word.push_expansion(&chars[i..end]);
            Ok(end)
        }
        Some(c) if c.is_ascii_digit() || matches!(c, '@' | '*' | '#' | '?' | '-' | '$' | '!') => {
            word.push_expansion(&chars[i..i + 2]);
            Ok(i + 2)
        }
        _ => {
            if in_double_quotes {
                word.push_quoted('$');
            } else {
                word.push_unquoted('$');
            }
            Ok(i + 1)
        }
    }
}

/// One simple command: its words and its redirections.
#[derive(Debug, Default)]
pub(super) struct Segment {
    pub(super) words: Vec<Word>,
    pub(super) redirects: Vec<(Redirect, Word)>,
}

pub(super) fn split(tokens: Vec<Token>) -> Result<Vec<Segment>, Unreadable> {
    let mut segments = Vec::new();
    let mut current = Segment::default();
    let mut tokens = tokens.into_iter();
    while let Some(token) = tokens.next() {
        match token {
            Token::Word(word) => current.words.push(word),
            Token::Redirect(redirect) => match tokens.next() {
                Some(Token::Word(target)) => current.redirects.push((redirect, target)),
                _ => return Err(Unreadable),
            },
            Token::Boundary => {
                let segment = std::mem::take(&mut current);
                if !segment.words.is_empty() || !segment.redirects.is_empty() {
                    segments.push(segment);
                }
            }
        }
    }
    if !current.words.is_empty() || !current.redirects.is_empty() {
        segments.push(current);
    }
    Ok(segments)
}
