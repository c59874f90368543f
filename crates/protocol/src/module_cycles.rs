//! A check over the whole workspace's source: no two modules of one crate refer to each
//! other, directly or through others, except the cycles listed in [`ALLOWED`].
//!
//! It lives here because this crate is the root of the workspace's dependency graph:
//! its unit tests build first and fastest, need nothing but `std`, and so the check adds
//! no test binary and no dependency.
//!
//! A module refers to another by a `crate::` or `super::` path anywhere in its code
//! (comments, strings and test modules aside). A reference between a module and one of
//! its own ancestors or descendants is no cycle: a submodule is part of its parent. Any
//! other reference counts between the two sibling modules that contain its ends, so
//! `a::x` using `crate::b::y` is an edge from `a` to `b`.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

/// Cycles known and left for a later change, each a crate, the modules of the cycle
/// (siblings, by full path) and why it may stay for now. None is left; a cycle added
/// here must say why.
const ALLOWED: &[(&str, &[&str], &str)] = &[];

/// A module by its path inside its crate; the crate root is the empty path.
type Module = Vec<String>;

/// One reference that makes an edge between two sibling modules, for the report.
#[derive(Debug, Clone)]
struct Witness {
    file: PathBuf,
    line: usize,
    path: String,
}

#[test]
fn no_module_cycles_beyond_the_allowed() {
    let crates_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut problems = Vec::new();
    let mut seen_allowed = BTreeSet::new();
    let mut crate_names: Vec<PathBuf> = std::fs::read_dir(&crates_dir)
        .expect("the crates folder is readable")
        .map(|entry| entry.expect("a crates folder entry").path())
        .filter(|path| path.join("src").is_dir())
        .collect();
    crate_names.sort();
    assert!(
        crate_names.len() > 1,
        "expected the workspace's crates under {}",
        crates_dir.display()
    );
    for crate_dir in crate_names {
        let name = crate_dir
            .file_name()
            .and_then(|n| n.to_str())
            .expect("a crate folder with a UTF-8 name")
            .to_owned();
        for cycle in crate_cycles(&crate_dir.join("src")) {
            let modules: Vec<String> = cycle.modules.iter().map(|m| m.join("::")).collect();
            let allowed = ALLOWED
                .iter()
                .position(|(krate, listed, _)| *krate == name && same_set(listed, &modules));
            match allowed {
                Some(index) => {
                    seen_allowed.insert(index);
                }
                None => problems.push(format!("{name}: {}", cycle.report)),
            }
        }
    }
    for (index, (krate, modules, _)) in ALLOWED.iter().enumerate() {
        if !seen_allowed.contains(&index) {
            problems.push(format!(
                "{krate}: the allowed cycle {modules:?} is gone (or changed): update ALLOWED"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "module cycles:\n{}",
        problems.join("\n")
    );
}

fn same_set(listed: &[&str], found: &[String]) -> bool {
    let listed: BTreeSet<&str> = listed.iter().copied().collect();
    let found: BTreeSet<&str> = found.iter().map(String::as_str).collect();
    listed == found
}

/// One cycle among sibling modules: its members and a readable path around it.
struct Cycle {
    modules: Vec<Module>,
    report: String,
}

/// The cycles among the modules of the crate whose source is `src`.
fn crate_cycles(src: &Path) -> Vec<Cycle> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let modules: BTreeMap<Module, PathBuf> = files
        .into_iter()
        .filter_map(|file| Some((module_of(src, &file)?, file)))
        .collect();
    let mut edges: BTreeMap<Module, BTreeMap<Module, Witness>> = BTreeMap::new();
    for (module, file) in &modules {
        let source = std::fs::read_to_string(file).expect("a readable source file");
        let code = without_test_modules(&blank_comments_and_literals(&source));
        for (line, target) in references(&code, module) {
            let Some(target) = known_prefix(&target, &modules) else {
                continue;
            };
            let Some((from, to)) = sibling_ends(module, &target) else {
                continue;
            };
            edges.entry(from).or_default().entry(to).or_insert(Witness {
                file: file.strip_prefix(src).unwrap_or(file).to_path_buf(),
                line,
                path: target.join("::"),
            });
        }
    }
    cycles(&edges)
}

/// Every `.rs` file below `dir`, but not the separate crates under `src/bin`.
fn rust_files(dir: &Path, files: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("a readable source folder")
        .map(|entry| entry.expect("a source folder entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n != "bin") {
                rust_files(&path, files);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

/// The module a file holds, or `None` for test modules (they may use anything).
fn module_of(src: &Path, file: &Path) -> Option<Module> {
    let relative = file.strip_prefix(src).ok()?;
    let mut module: Module = relative
        .iter()
        .map(|part| part.to_string_lossy().into_owned())
        .collect();
    let last = module.pop()?;
    let stem = last.strip_suffix(".rs")?;
    let at_root = module.is_empty();
    match stem {
        "lib" | "main" if at_root => {}
        "mod" => {}
        stem => module.push(stem.to_owned()),
    }
    (!module.iter().any(|part| part == "tests")).then_some(module)
}

/// The longest prefix of `path` that is a module of the crate.
fn known_prefix(path: &[String], modules: &BTreeMap<Module, PathBuf>) -> Option<Module> {
    (0..=path.len())
        .rev()
        .map(|len| path[..len].to_vec())
        .find(|prefix| modules.contains_key(prefix))
}

/// The two sibling modules an edge from `from` to `to` joins, or `None` when one is
/// the other or its ancestor.
fn sibling_ends(from: &Module, to: &Module) -> Option<(Module, Module)> {
    let common = from.iter().zip(to).take_while(|(a, b)| a == b).count();
    if common == from.len() || common == to.len() {
        return None;
    }
    Some((from[..=common].to_vec(), to[..=common].to_vec()))
}

/// The cycles of a graph: each strongly connected set of two or more modules, with the
/// path from its first module around and back.
fn cycles(edges: &BTreeMap<Module, BTreeMap<Module, Witness>>) -> Vec<Cycle> {
    let nodes: BTreeSet<&Module> = edges
        .iter()
        .flat_map(|(from, tos)| std::iter::once(from).chain(tos.keys()))
        .collect();
    let reach: BTreeMap<&Module, BTreeSet<&Module>> = nodes
        .iter()
        .map(|node| (*node, reachable(node, edges)))
        .collect();
    let mut done: BTreeSet<&Module> = BTreeSet::new();
    let mut found = Vec::new();
    for node in &nodes {
        if done.contains(node) {
            continue;
        }
        let component: BTreeSet<&Module> = reach[node]
            .iter()
            .filter(|other| reach[*other].contains(node))
            .copied()
            .collect();
        done.extend(component.iter().copied());
        if component.len() < 2 {
            continue;
        }
        found.push(Cycle {
            modules: component.iter().map(|m| (*m).clone()).collect(),
            report: around(node, &component, edges),
        });
    }
    found
}

/// Every module reachable from `start` by one or more edges.
fn reachable<'a>(
    start: &'a Module,
    edges: &'a BTreeMap<Module, BTreeMap<Module, Witness>>,
) -> BTreeSet<&'a Module> {
    let mut seen = BTreeSet::new();
    let mut queue: VecDeque<&Module> = VecDeque::from([start]);
    while let Some(node) = queue.pop_front() {
        for next in edges.get(node).into_iter().flat_map(BTreeMap::keys) {
            if seen.insert(next) {
                queue.push_back(next);
            }
        }
    }
    seen
}

/// The shortest way from `start` back to itself inside `component`, each step with the
/// reference that makes it.
fn around(
    start: &Module,
    component: &BTreeSet<&Module>,
    edges: &BTreeMap<Module, BTreeMap<Module, Witness>>,
) -> String {
    let mut came_from: BTreeMap<&Module, &Module> = BTreeMap::new();
    let mut queue: VecDeque<&Module> = VecDeque::from([start]);
    'search: while let Some(node) = queue.pop_front() {
        for next in edges.get(node).into_iter().flat_map(BTreeMap::keys) {
            if !component.contains(next) || came_from.contains_key(next) {
                continue;
            }
            came_from.insert(next, node);
            if next == start {
                break 'search;
            }
            queue.push_back(next);
        }
    }
    let mut steps = Vec::new();
    let mut to = start;
    while let Some(from) = came_from.get(to) {
        let witness = &edges[*from][to];
        steps.push(format!(
            "{} -> {} ({}:{} uses crate::{})",
            from.join("::"),
            to.join("::"),
            witness.file.display(),
            witness.line,
            witness.path
        ));
        to = from;
        if to == start {
            break;
        }
    }
    steps.reverse();
    steps.join(", ")
}

/// The modules `code` (of `module`) refers to by `crate::` and `super::` paths, each
/// with its line, as full paths inside the crate.
fn references(code: &str, module: &Module) -> Vec<(usize, Vec<String>)> {
    let bytes = code.as_bytes();
    let mut found = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let rest = &code[at..];
        let keyword = ["crate::", "super::"]
            .into_iter()
            .find(|k| rest.starts_with(k));
        let starts_word = at == 0 || !is_path_char(bytes[at - 1]);
        let (Some(_), true) = (keyword, starts_word) else {
            at += rest.chars().next().map_or(1, char::len_utf8);
            continue;
        };
        let line = code[..at].matches('\n').count() + 1;
        let (tree, end) = use_tree(code, at);
        for path in tree {
            if let Some(full) = absolute(&path, module) {
                found.push((line, full));
            }
        }
        at = end.max(at + 1);
    }
    found
}

fn is_path_char(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_' || byte == b':' || byte == b'$'
}

/// The paths of the use tree (or plain path) starting at `start`, and where it ends:
/// `a::b::{c, d::{e}}` gives `a::b::c` and `a::b::d::e`.
fn use_tree(code: &str, start: usize) -> (Vec<Vec<String>>, usize) {
    let bytes = code.as_bytes();
    let mut at = start;
    let mut prefix: Vec<String> = Vec::new();
    loop {
        while at < bytes.len() && bytes[at].is_ascii_whitespace() {
            at += 1;
        }
        if at < bytes.len() && bytes[at] == b'{' {
            let mut paths = Vec::new();
            at += 1;
            loop {
                while at < bytes.len() && (bytes[at].is_ascii_whitespace() || bytes[at] == b',') {
                    at += 1;
                }
                if at >= bytes.len() || bytes[at] == b'}' {
                    break;
                }
                let (inner, end) = use_tree(code, at);
                paths.extend(inner.into_iter().map(|p| [prefix.clone(), p].concat()));
                if end == at {
                    break;
                }
                at = end;
            }
            return (paths, at + 1);
        }
        let ident_end = at
            + code[at..]
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(code.len() - at);
        if ident_end == at {
            return (vec![prefix], at);
        }
        prefix.push(code[at..ident_end].to_owned());
        at = ident_end;
        if code[at..].starts_with("::") {
            at += 2;
        } else {
            return (vec![prefix], at);
        }
    }
}

/// A path starting with `crate` or `super` resolved against `module`.
fn absolute(path: &[String], module: &Module) -> Option<Vec<String>> {
    let (first, rest) = path.split_first()?;
    match first.as_str() {
        "crate" => Some(rest.to_vec()),
        "super" => {
            // A file's module is its full path (`a/mod.rs` is `a`), so each `super`
            // is one step up from it.
            let mut base = module.clone();
            let mut rest = rest;
            let mut ups = 1;
            while let Some((next, tail)) = rest.split_first() {
                if next != "super" {
                    break;
                }
                ups += 1;
                rest = tail;
            }
            for _ in 0..ups {
                base.pop()?;
            }
            Some([base, rest.to_vec()].concat())
        }
        _ => None,
    }
}

/// `source` with every comment and the inside of every string and character literal
/// replaced by spaces, line breaks kept.
fn blank_comments_and_literals(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
        } else if c == 'r' && (next == Some('#') || next == Some('"')) && !prev_is_ident(&chars, i)
        {
            let hashes = chars[i + 1..].iter().take_while(|&&h| h == '#').count();
            if chars.get(i + 1 + hashes) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            let open = 2 + hashes;
            out.extend(std::iter::repeat_n(' ', open));
            i += open;
            while i < chars.len() {
                let closes = chars[i] == '"'
                    && chars[i + 1..]
                        .iter()
                        .take(hashes)
                        .filter(|&&h| h == '#')
                        .count()
                        == hashes;
                if closes {
                    out.extend(std::iter::repeat_n(' ', 1 + hashes));
                    i += 1 + hashes;
                    break;
                }
                out.push(blank(chars[i]));
                i += 1;
            }
        } else if c == '"' {
            out.push(' ');
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if let Some(&inner) = chars.get(i) {
                    out.push(blank(inner));
                }
                i += 1;
            }
            out.push(' ');
            i += 1;
        } else if c == '\'' {
            // A character literal ('x', '\n', '\u{..}'); otherwise a lifetime.
            let end = if next == Some('\\') {
                chars[i + 2..]
                    .iter()
                    .position(|&q| q == '\'')
                    .map(|p| i + 2 + p)
            } else if chars.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            match end {
                Some(end) => {
                    out.extend(std::iter::repeat_n(' ', end + 1 - i));
                    i = end + 1;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn prev_is_ident(chars: &[char], i: usize) -> bool {
    i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_')
}

/// `code` with each `#[cfg(test)]` inline module blanked: test code may use anything.
fn without_test_modules(code: &str) -> String {
    let mut out = code.to_owned();
    let mut search = 0;
    while let Some(found) = out[search..].find("#[cfg(test)]") {
        let attribute = search + found;
        let mut at = attribute + "#[cfg(test)]".len();
        // Further attributes, then the item.
        loop {
            let trimmed = out[at..].trim_start();
            at = out.len() - trimmed.len();
            if trimmed.starts_with("#[") {
                at += trimmed.find(']').map_or(trimmed.len(), |p| p + 1);
            } else {
                break;
            }
        }
        let item = out[at..]
            .trim_start_matches("pub(crate) ")
            .trim_start_matches("pub ");
        let is_inline_module = item.starts_with("mod ")
            && item
                .find(['{', ';'])
                .is_some_and(|p| item.as_bytes()[p] == b'{');
        if !is_inline_module {
            search = at;
            continue;
        }
        let Some(open) = out[at..].find('{').map(|p| at + p) else {
            break;
        };
        let mut depth = 0usize;
        let mut close = out.len();
        for (offset, byte) in out.as_bytes()[open..].iter().enumerate() {
            match byte {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        close = open + offset + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        let blanked: String = out[attribute..close]
            .chars()
            .map(|c| if c == '\n' { '\n' } else { ' ' })
            .collect();
        out.replace_range(attribute..close, &blanked);
        search = close;
    }
    out
}

#[test]
fn references_are_read_from_code_only() {
    let module: Module = vec!["a".into(), "b".into()];
    let source = r####"
        // crate::commented::Out
        use crate::{x::{Y, z::W}, v};
        use super::sibling::Thing;
        let s = "crate::quoted"; let r = r#"crate::raw"#; let c = '{';
        fn f() { crate::inline::call(); super::super::top::f(); }
        #[cfg(test)]
        #[allow(clippy::unwrap_used, reason = "tests")]
        mod tests { use crate::only_in_tests; }
        macro_rules! m { () => { $crate::macro_path } }
    "####;
    let code = without_test_modules(&blank_comments_and_literals(source));
    let found: Vec<(usize, String)> = references(&code, &module)
        .into_iter()
        .map(|(line, path)| (line, path.join("::")))
        .collect();
    assert_eq!(
        found,
        [
            (3, "x::Y".to_owned()),
            (3, "x::z::W".to_owned()),
            (3, "v".to_owned()),
            (4, "a::sibling::Thing".to_owned()),
            (6, "inline::call".to_owned()),
            (6, "top::f".to_owned()),
        ]
    );
}

#[test]
fn only_references_between_siblings_make_edges() {
    let path = |p: &str| -> Module { p.split("::").map(str::to_owned).collect() };
    assert_eq!(sibling_ends(&path("a::x"), &path("a")), None);
    assert_eq!(sibling_ends(&path("a"), &path("a::x::y")), None);
    assert_eq!(
        sibling_ends(&path("a::x"), &path("b::y")),
        Some((path("a"), path("b")))
    );
    assert_eq!(
        sibling_ends(&path("a::x::p"), &path("a::y")),
        Some((path("a::x"), path("a::y")))
    );
}

#[test]
fn a_cycle_is_reported_with_its_path() {
    let path = |p: &str| -> Module { p.split("::").map(str::to_owned).collect() };
    let witness = |line| Witness {
        file: PathBuf::from("f.rs"),
        line,
        path: "p".into(),
    };
    let mut edges: BTreeMap<Module, BTreeMap<Module, Witness>> = BTreeMap::new();
    edges
        .entry(path("a"))
        .or_default()
        .insert(path("b"), witness(1));
    edges
        .entry(path("b"))
        .or_default()
        .insert(path("c"), witness(2));
    edges
        .entry(path("c"))
        .or_default()
        .insert(path("a"), witness(3));
    edges
        .entry(path("c"))
        .or_default()
        .insert(path("d"), witness(4));
    let found = cycles(&edges);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].modules, [path("a"), path("b"), path("c")]);
    assert_eq!(
        found[0].report,
        "a -> b (f.rs:1 uses crate::p), b -> c (f.rs:2 uses crate::p), c -> a (f.rs:3 uses crate::p)"
    );
}
