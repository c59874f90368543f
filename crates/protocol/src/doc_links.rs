//! A check over the repository's Markdown: every link that points inside the
//! repository resolves. A relative file link names a file or folder that exists (and
//! stays inside the repository); a `#anchor` names a heading of its target, by the
//! slug GitHub gives it. External links (any `scheme:` such as `https:`) are not
//! fetched, and links inside fenced code blocks and inline code are not links.
//!
//! It lives beside [`crate::module_cycles`] for the same reason: this crate's unit
//! tests build first, need only `std`, and so the check adds no test binary and no
//! dependency. The pages checked are the Markdown files at the repository's root
//! (`README.md`, `ARCHITECTURE.md`, `BENCHMARKS.md`) and everything under `docs/`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

/// Root pages that must exist, so that a moved root cannot make the check vacuous.
const ROOT_PAGES: &[&str] = &["README.md", "ARCHITECTURE.md", "BENCHMARKS.md"];

/// One link as written in a page.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Link {
    /// 1-based line of the link's destination.
    line: usize,
    /// The destination, as written (without `<…>` or a title).
    target: String,
}

#[test]
fn every_link_inside_the_repository_resolves() {
    let root = repository_root();
    let pages = pages(&root);
    for page in ROOT_PAGES {
        assert!(
            pages.contains(&root.join(page)),
            "{page} is missing from {}",
            root.display()
        );
    }
    assert!(
        pages.iter().any(|p| p.starts_with(root.join("docs"))),
        "no page under {}",
        root.join("docs").display()
    );
    let mut anchors = BTreeMap::new();
    let mut problems = Vec::new();
    for page in &pages {
        let text = std::fs::read_to_string(page)
            .unwrap_or_else(|e| panic!("{} is not readable: {e}", page.display()));
        for link in links(&text) {
            if let Err(why) = resolve(&root, page, &link.target, &mut anchors) {
                let shown = page.strip_prefix(&root).unwrap_or(page);
                problems.push(format!(
                    "{}:{}: ({}) {why}",
                    shown.display(),
                    link.line,
                    link.target
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{} broken link(s) in the repository's Markdown:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// The workspace root: this crate is `crates/protocol`.
fn repository_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = manifest.join("../..");
    root.canonicalize()
        .unwrap_or_else(|e| panic!("{} does not resolve: {e}", root.display()))
}

/// The Markdown pages checked, sorted.
fn pages(root: &Path) -> Vec<PathBuf> {
    let mut pages: Vec<PathBuf> = read_dir(root)
        .into_iter()
        .filter(|p| p.is_file() && is_markdown(p))
        .collect();
    let mut folders = vec![root.join("docs")];
    while let Some(folder) = folders.pop() {
        for path in read_dir(&folder) {
            if path.is_dir() {
                folders.push(path);
            } else if is_markdown(&path) {
                pages.push(path);
            }
        }
    }
    pages.sort();
    pages
}

fn read_dir(folder: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(folder)
        .unwrap_or_else(|e| panic!("{} is not readable: {e}", folder.display()))
        .map(|entry| entry.expect("a readable folder entry").path())
        .collect()
}

fn is_markdown(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "md")
}

/// Checks one destination written in `page`; `anchors` caches each target's slugs.
fn resolve(
    root: &Path,
    page: &Path,
    target: &str,
    anchors: &mut BTreeMap<PathBuf, BTreeSet<String>>,
) -> Result<(), String> {
    if has_scheme(target) {
        return Ok(());
    }
    let (path, anchor) = match target.split_once('#') {
        Some((path, anchor)) => (path, Some(anchor)),
        None => (target, None),
    };
    let file = if path.is_empty() {
        page.to_path_buf()
    } else {
        let decoded = percent_decode(path)?;
        let base = match decoded.strip_prefix('/') {
            // GitHub resolves a rooted link against the repository's root.
            Some(rest) => root.join(rest),
            None => page.parent().unwrap_or(root).join(&decoded),
        };
        let file = normalize(&base);
        if !file.starts_with(root) {
            return Err("leaves the repository".to_owned());
        }
        if !file.exists() {
            return Err(format!(
                "{} does not exist",
                file.strip_prefix(root).unwrap_or(&file).display()
            ));
        }
        file
    };
    let Some(anchor) = anchor else {
        return Ok(());
    };
    if !is_markdown(&file) {
        return Err("an anchor into a file that is not Markdown".to_owned());
    }
    let slugs = match anchors.get(&file) {
        Some(slugs) => slugs,
        None => {
            let text = std::fs::read_to_string(&file)
                .map_err(|e| format!("{} is not readable: {e}", file.display()))?;
            anchors.entry(file.clone()).or_insert(heading_slugs(&text))
        }
    };
    let anchor = percent_decode(anchor)?;
    if slugs.contains(&anchor) {
        Ok(())
    } else {
        Err(format!("no heading with the anchor #{anchor}"))
    }
}

/// Whether a destination starts with a URI scheme (`https:`, `mailto:`, …).
fn has_scheme(target: &str) -> bool {
    let Some((scheme, _)) = target.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// `path` with `.` and `..` resolved lexically, as a browser resolves a URL.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Decodes `%XX` escapes; a malformed escape or non-UTF-8 result is a broken link.
fn percent_decode(text: &str) -> Result<String, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("a malformed %-escape in {text:?}"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("{text:?} does not decode to UTF-8"))
}

/// The page's text with fenced code blocks and inline code blanked out (newlines
/// kept, so line numbers still hold).
fn prose(text: &str) -> String {
    without_code_spans(&without_fences(text))
}

/// The page with the lines of its fenced code blocks, fences included, blanked.
fn without_fences(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut fence: Option<(char, usize)> = None;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start_matches(' ');
        let indent = line.len() - trimmed.len();
        let marker = trimmed.chars().next().filter(|c| matches!(c, '`' | '~'));
        let run = marker.map_or(0, |c| trimmed.chars().take_while(|&d| d == c).count());
        let is_fence = indent <= 3 && run >= 3;
        match (fence, marker) {
            // A backtick fence's info string holds no backtick (else it is inline code).
            (None, Some(c)) if is_fence && !(c == '`' && trimmed[run..].contains('`')) => {
                fence = Some((c, run));
            }
            (Some((c, n)), Some(m))
                if is_fence && m == c && run >= n && trimmed[run..].trim().is_empty() =>
            {
                fence = None;
            }
            (Some(_), _) => {}
            (None, _) => {
                out.push_str(line);
                continue;
            }
        }
        out.push_str(&blank(line));
    }
    out
}

/// Every character but newlines turned into a space.
fn blank(text: &str) -> String {
    text.chars()
        .map(|c| if c == '\n' { '\n' } else { ' ' })
        .collect()
}

/// Blanks each code span: a run of backticks up to the next run of the same length
/// within the same paragraph. An unmatched run is literal text.
fn without_code_spans(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '\\' && i + 1 < chars.len() {
            out.push(chars[i]);
            out.push(chars[i + 1]);
            i += 2;
            continue;
        }
        if chars[i] != '`' {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let run = chars[i..].iter().take_while(|&&c| c == '`').count();
        match closing_run(&chars, i + run, run) {
            Some(end) => {
                out.push_str(&blank(&chars[i..end].iter().collect::<String>()));
                i = end;
            }
            None => {
                out.extend(&chars[i..i + run]);
                i += run;
            }
        }
    }
    out
}

/// The index just past a run of exactly `run` backticks at or after `from`, before the
/// paragraph ends (a blank line).
fn closing_run(chars: &[char], from: usize, run: usize) -> Option<usize> {
    let mut j = from;
    while j < chars.len() {
        if chars[j] == '\n' {
            let rest = chars[j + 1..].iter().take_while(|&&c| c != '\n');
            if rest.clone().all(|c| c.is_whitespace()) {
                return None;
            }
        }
        if chars[j] == '`' {
            let found = chars[j..].iter().take_while(|&&c| c == '`').count();
            if found == run {
                return Some(j + found);
            }
            j += found;
        } else {
            j += 1;
        }
    }
    None
}

/// The links of a page: inline links and images `[text](dest "title")` and reference
/// definitions `[label]: dest`, outside code.
fn links(text: &str) -> Vec<Link> {
    let prose = prose(text);
    let mut found = Vec::new();
    let mut line = 1;
    let mut rest = prose.as_str();
    while let Some(at) = rest.find("](") {
        line += rest[..at].matches('\n').count();
        let after = &rest[at + 2..];
        if let Some(target) = destination(after) {
            found.push(Link { line, target });
        }
        rest = after;
    }
    for (index, text) in prose.lines().enumerate() {
        let trimmed = text.trim_start();
        if text.len() - trimmed.len() > 3 || !trimmed.starts_with('[') {
            continue;
        }
        // The label ends at its first `]`, which a definition follows with `:`.
        let after = trimmed
            .split_once(']')
            .and_then(|(_, after)| after.strip_prefix(':'));
        if let Some(target) = after.and_then(|a| a.split_whitespace().next()) {
            let target = target.trim_start_matches('<').trim_end_matches('>');
            found.push(Link {
                line: index + 1,
                target: target.to_owned(),
            });
        }
    }
    found.sort_by_key(|l| l.line);
    found
}

/// The destination at the start of `text` (just after `](`): `<…>`, or up to the
/// whitespace or the `)` that balances the parentheses.
fn destination(text: &str) -> Option<String> {
    let text = text.trim_start_matches([' ', '\t']);
    if let Some(angled) = text.strip_prefix('<') {
        return angled.split_once('>').map(|(d, _)| d.to_owned());
    }
    let mut depth = 0usize;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' if depth == 0 => return Some(text[..i].to_owned()),
            ')' => depth -= 1,
            c if c.is_whitespace() => return Some(text[..i].to_owned()),
            _ => {}
        }
    }
    None
}

/// The anchors a page's headings get on GitHub, duplicates numbered `-1`, `-2`, …, and
/// any explicit `id`/`name` of an HTML element.
fn heading_slugs(text: &str) -> BTreeSet<String> {
    let prose = without_fences(text);
    let lines: Vec<&str> = prose.lines().collect();
    let mut slugs = BTreeSet::new();
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for (index, line) in lines.iter().enumerate() {
        let heading = atx_heading(line).or_else(|| {
            let next = lines.get(index + 1)?;
            is_setext_underline(next).then(|| line.trim()).filter(|l| {
                !l.is_empty()
                    && !is_setext_underline(l)
                    && !l.starts_with(['#', '>', '|', '-', '*'])
            })
        });
        if let Some(heading) = heading {
            let base = slug(heading);
            let count = counts.entry(base.clone()).or_insert(0);
            let mut candidate = base.clone();
            while slugs.contains(&candidate) {
                *count += 1;
                candidate = format!("{base}-{count}");
            }
            slugs.insert(candidate);
        }
        for key in ["id=\"", "name=\""] {
            for (at, _) in line.match_indices(key) {
                if let Some((value, _)) = line[at + key.len()..].split_once('"') {
                    slugs.insert(value.to_owned());
                }
            }
        }
    }
    slugs
}

/// The text of an ATX heading (`## Title ##`), if the line is one.
fn atx_heading(line: &str) -> Option<&str> {
    let trimmed = line.trim_start_matches(' ');
    if line.len() - trimmed.len() > 3 {
        return None;
    }
    let level = trimmed.chars().take_while(|&c| c == '#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let rest = &trimmed[level..];
    if !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
        return None;
    }
    let rest = rest.trim();
    // A closing sequence of `#` counts only after a space.
    let without_close = rest.trim_end_matches('#');
    Some(
        if without_close.is_empty() || without_close.ends_with(' ') {
            without_close.trim_end()
        } else {
            rest
        },
    )
}

fn is_setext_underline(line: &str) -> bool {
    let trimmed = line.trim();
    line.len() - line.trim_start().len() <= 3
        && !trimmed.is_empty()
        && (trimmed.chars().all(|c| c == '=') || trimmed.chars().all(|c| c == '-'))
}

/// GitHub's anchor for a heading: its rendered text (code marks, link targets, HTML
/// tags and emphasis marks dropped) lowercased, every character but letters, digits,
/// `-` and `_` dropped, and each space turned into `-`.
fn slug(heading: &str) -> String {
    let mut text = String::new();
    let mut rest = heading;
    while let Some(c) = rest.chars().next() {
        if c == '<'
            && let Some(end) = rest.find('>')
        {
            rest = &rest[end + 1..];
            continue;
        }
        if let Some(after) = rest.strip_prefix("](")
            && let Some(end) = after.find(')')
        {
            rest = &after[end + 1..];
            continue;
        }
        text.push(c);
        rest = &rest[c.len_utf8()..];
    }
    text.to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_slug(heading: &str, expected: &str) {
        assert_eq!(slug(heading), expected, "slug of {heading:?}");
    }

    #[test]
    fn slugs_follow_github() {
        check_slug("Disabled tools", "disabled-tools");
        check_slug("`model.refresh`", "modelrefresh");
        check_slug("MCP tools", "mcp-tools");
        check_slug("Errors: which one wins", "errors-which-one-wins");
        check_slug("Foo & bar", "foo--bar");
        check_slug("snake_case and kebab-case", "snake_case-and-kebab-case");
        check_slug("See [the spec](spec/README.md)", "see-the-spec");
        check_slug("Über <em>alles</em>", "über-alles");
    }

    #[test]
    fn duplicate_headings_are_numbered() {
        let slugs = heading_slugs("# A\n## A\n### A\n## B #\nText\n===\n");
        let expected: BTreeSet<String> = ["a", "a-1", "a-2", "b", "text"].map(String::from).into();
        assert_eq!(slugs, expected);
    }

    #[test]
    fn headings_in_fences_are_not_headings() {
        let slugs = heading_slugs("# Real\n```sh\n# a comment\n```\n~~~~\n# not\n~~~~\n");
        assert_eq!(slugs, ["real".to_owned()].into());
    }

    fn check_links(text: &str, expected: &[(usize, &str)]) {
        let found: Vec<(usize, String)> = links(text)
            .into_iter()
            .map(|l| (l.line, l.target))
            .collect();
        let expected: Vec<(usize, String)> = expected
            .iter()
            .map(|(l, t)| (*l, (*t).to_owned()))
            .collect();
        assert_eq!(found, expected, "links of {text:?}");
    }

    #[test]
    fn links_outside_code_are_found() {
        check_links(
            "see [a](a.md) and ![b](img/b.png \"title\")",
            &[(1, "a.md"), (1, "img/b.png")],
        );
        check_links("x\n[a\nb](c.md#d)\n", &[(3, "c.md#d")]);
        check_links("[w](https://e.org/x_(y))", &[(1, "https://e.org/x_(y)")]);
        check_links("[w](<a b.md>)", &[(1, "a b.md")]);
        check_links("[r]: docs/x.md \"t\"\n", &[(1, "docs/x.md")]);
    }

    #[test]
    fn links_in_code_are_not_links() {
        check_links("`[a](b.md)` [c](d.md)", &[(1, "d.md")]);
        check_links("``a ` [x](y.md)`` [c](d.md)", &[(1, "d.md")]);
        check_links("`open\nspan [x](y.md)` [c](d.md)", &[(2, "d.md")]);
        check_links("```\n[x](y.md)\n```\n[c](d.md)\n", &[(4, "d.md")]);
        check_links("  ~~~md\n[x](y.md)\n~~~\n", &[]);
        // A backtick with no partner in its paragraph is literal.
        check_links("a ` b\n\n[c](d.md) `", &[(3, "d.md")]);
    }

    #[test]
    fn schemes_are_external() {
        assert!(has_scheme("https://example.org"));
        assert!(has_scheme("mailto:a@b"));
        assert!(!has_scheme("docs/a.md#b:c"));
        assert!(!has_scheme("#anchor"));
    }
}
