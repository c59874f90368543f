//! Fuzzy matching of workspace paths for `@` mentions: the query's characters in order,
//! anywhere in the path, ranked so that what a person means comes first.
//!
//! The score rewards a match at the start of the path or of a path segment or word
//! (after `/`, `_`, `-`, `.`, a space, or a lower-case letter before an upper-case
//! one), in the file name, and in runs of consecutive characters (a run keeps the
//! bonus of its first character, so `abc` in `abc/` is worth as much as three segment
//! starts); a gap between two matches costs three points and one more per character
//! skipped. The best placement of the query is found by dynamic programming over the
//! query and the path, so `main` in `make/src/main.rs` scores the file name, not the
//! first `m`.

/// What a matched character is worth before its bonuses.
const MATCH: i64 = 16;
/// Bonus for a match at the start of the path.
const AT_START: i64 = 8;
/// Bonus for a match just after `/`.
const AFTER_SLASH: i64 = 10;
/// Bonus for a match just after `_`, `-`, `.` or a space.
const AFTER_SEPARATOR: i64 = 8;
/// Bonus for an upper-case match after a lower-case letter (`camelCase`).
const CAMEL: i64 = 7;
/// Bonus for a match in the file name (after the last `/`).
const IN_NAME: i64 = 3;
/// Least bonus of a match right after the previous one.
const CONSECUTIVE: i64 = 4;
/// What a gap between two matches costs, plus one per character skipped after the
/// first.
const GAP_START: i64 = 3;

/// The bonus of where a match at `at` in `path` is.
fn place_bonus(path: &[char], at: usize) -> i64 {
    let here = path[at];
    match at.checked_sub(1).map(|before| path[before]) {
        None => AT_START,
        Some('/') => AFTER_SLASH,
        Some('_' | '-' | '.' | ' ') => AFTER_SEPARATOR,
        Some(before) if before.is_lowercase() && here.is_uppercase() => CAMEL,
        Some(_) => 0,
    }
}

fn fold(c: char) -> char {
    if c.is_ascii() {
        c.to_ascii_lowercase()
    } else {
        c.to_lowercase().next().unwrap_or(c)
    }
}

/// A score for "no placement": far below any real score, with room to add to it.
const UNMATCHED: i64 = i64::MIN / 4;

/// One query matched against many paths, its buffers reused from path to path.
#[derive(Debug, Default)]
pub(crate) struct Matcher {
    query: Vec<char>,
    original: Vec<char>,
    folded: Vec<char>,
    /// `score[j]`: the best score of the query so far with its last character matched
    /// at `j`; `run[j]`: the bonus the run of consecutive matches ending at `j` carries
    /// on; `next` and `next_run` the same for the next query character.
    score: Vec<i64>,
    run: Vec<i64>,
    next: Vec<i64>,
    next_run: Vec<i64>,
}

impl Matcher {
    /// A matcher for `query`.
    pub(crate) fn new(query: &str) -> Matcher {
        Matcher {
            query: query.chars().map(fold).collect(),
            ..Matcher::default()
        }
    }

    /// How well `path` matches the query (case-insensitively), higher being better;
    /// `None` when the query's characters do not all appear in it, in order. An empty
    /// query matches everything equally.
    pub(crate) fn score(&mut self, path: &str) -> Option<i64> {
        // Cheap rejection first: most paths do not hold the query at all.
        let mut rest = path.chars().map(fold);
        if !self.query.iter().all(|q| rest.any(|c| c == *q)) {
            return None;
        }
        let (&first, others) = match self.query.split_first() {
            Some(split) => split,
            None => return Some(0),
        };
        self.original.clear();
        self.original.extend(path.chars());
        self.folded.clear();
        self.folded.extend(self.original.iter().copied().map(fold));
        let (original, folded) = (&self.original, &self.folded);
        let length = folded.len();
        let name_start = original
            .iter()
            .rposition(|&c| c == '/')
            .map_or(0, |n| n + 1);
        let in_name = |j: usize| if j >= name_start { IN_NAME } else { 0 };
        let (score, run) = (&mut self.score, &mut self.run);
        score.clear();
        score.resize(length, UNMATCHED);
        run.clear();
        run.resize(length, 0);
        for j in 0..length {
            if folded[j] == first {
                run[j] = place_bonus(original, j);
                score[j] = MATCH + run[j] + in_name(j);
            }
        }
        for &q in others {
            let (next, next_run) = (&mut self.next, &mut self.next_run);
            next.clear();
            next.resize(length, UNMATCHED);
            next_run.clear();
            next_run.resize(length, 0);
            // The best of score[k] + k over k < j - 1: a match after a gap of j - k - 1.
            let mut best_before_gap = UNMATCHED;
            for j in 1..length {
                if j >= 2 {
                    let k = j - 2;
                    best_before_gap = best_before_gap.max(score[k].saturating_add(k as i64));
                }
                if folded[j] != q {
                    continue;
                }
                let own = place_bonus(original, j);
                // A gap of g = j - k - 1 costs GAP_START + g - 1, so the score after it
                // is score[k] + k - (j - 1) - (GAP_START - 1).
                let after_gap = best_before_gap
                    .saturating_sub(j as i64 - 1)
                    .saturating_sub(GAP_START - 1)
                    .saturating_add(MATCH + own);
                let carried = own.max(run[j - 1]).max(CONSECUTIVE);
                let consecutive = score[j - 1].saturating_add(MATCH + carried);
                if after_gap.max(consecutive) <= UNMATCHED / 2 {
                    continue;
                }
                if consecutive >= after_gap {
                    next[j] = consecutive + in_name(j);
                    next_run[j] = carried;
                } else {
                    next[j] = after_gap + in_name(j);
                    next_run[j] = own;
                }
            }
            std::mem::swap(score, next);
            std::mem::swap(run, next_run);
        }
        score.iter().copied().max().filter(|&s| s > UNMATCHED / 2)
    }
}

/// How well `path` matches `query`: see [`Matcher::score`].
#[cfg(test)]
fn score(query: &str, path: &str) -> Option<i64> {
    Matcher::new(query).score(path)
}

/// The `limit` best of `paths` for `query`: by score, then the shorter path, then by
/// name.
pub(crate) fn rank<'a>(query: &str, paths: &'a [String], limit: usize) -> Vec<&'a str> {
    let order = |a: &(i64, &str), b: &(i64, &str)| {
        b.0.cmp(&a.0)
            .then(a.1.len().cmp(&b.1.len()))
            .then(a.1.cmp(b.1))
    };
    let mut matcher = Matcher::new(query);
    // The best `limit` so far, best first: most paths are dropped with one comparison
    // rather than sorted.
    let mut best: Vec<(i64, &str)> = Vec::with_capacity(limit + 1);
    for path in paths {
        let Some(score) = matcher.score(path) else {
            continue;
        };
        let candidate = (score, path.as_str());
        if best.len() == limit
            && best
                .last()
                .is_none_or(|worst| order(&candidate, worst).is_ge())
        {
            continue;
        }
        let at = best.partition_point(|kept| order(kept, &candidate).is_lt());
        best.insert(at, candidate);
        best.truncate(limit);
    }
    best.into_iter().map(|(_, p)| p).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranked(query: &str, paths: &[&str]) -> Vec<String> {
        let paths: Vec<String> = paths.iter().map(|p| (*p).to_owned()).collect();
        rank(query, &paths, 8)
            .into_iter()
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn only_paths_holding_the_query_in_order_match() {
        assert!(score("mn", "src/main.rs").is_some());
        assert!(
            score("MAIN", "src/main.rs").is_some(),
            "case does not matter"
        );
        assert!(score("nm", "src/main.rs").is_none());
        assert!(score("x", "src/main.rs").is_none());
        assert!(score("main.rsx", "src/main.rs").is_none());
        assert_eq!(score("", "anything"), Some(0));
        assert!(score("字", "docs/漢字.md").is_some());
    }

    #[test]
    fn the_file_name_and_word_starts_rank_first() {
        assert_eq!(
            ranked("main", &["mains/x.rs", "src/main.rs", "xmxaxixn.rs"]),
            ["src/main.rs", "mains/x.rs", "xmxaxixn.rs"]
        );
        assert_eq!(
            ranked("comp", &["src/tcomplex/x.rs", "src/tui/composer/mod.rs"]),
            ["src/tui/composer/mod.rs", "src/tcomplex/x.rs"]
        );
        // Consecutive characters beat the same characters spread out.
        assert_eq!(
            ranked("abc", &["a/b/c/d.rs", "abc/d.rs"]),
            ["abc/d.rs", "a/b/c/d.rs"]
        );
        // Initials of words match at their starts.
        assert_eq!(
            ranked("cr", &["docs/xcxr.md", "docs/card_render.md"]),
            ["docs/card_render.md", "docs/xcxr.md"]
        );
        assert_eq!(
            ranked("fb", &["xfxb.rs", "FooBar.rs"]),
            ["FooBar.rs", "xfxb.rs"]
        );
    }

    #[test]
    fn the_best_placement_is_found_not_the_first() {
        // A greedy match would take the `m` of `make` and score badly.
        let best = score("main", "make/src/main.rs").unwrap();
        let spread = score("main", "make/src/ai/n.rs").unwrap();
        assert!(best > spread, "{best} > {spread}");
    }

    #[test]
    fn ties_go_to_the_shorter_path_then_by_name() {
        assert_eq!(
            ranked("x", &["b/x", "a/x", "long/x"]),
            ["a/x", "b/x", "long/x"]
        );
        let many: Vec<String> = (0..20).map(|n| format!("f{n}.rs")).collect();
        assert_eq!(rank("f", &many, 8).len(), 8);
    }
}
