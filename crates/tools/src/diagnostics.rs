//! `process_diagnostics`: the projection of a process's captured output that the model
//! is given. Short output passes as it is; long output becomes a bounded summary of its
//! head, its tail and its diagnostic lines, chosen from the whole capture, with markers
//! saying how many lines were left out.
//!
//! It is a pure function over text so that every tool reporting process output (foreground
//! `bash` today, async logs and notices later) shows the same thing.

use std::collections::BTreeMap;

use magi_protocol::limits::{
    PROCESS_INLINE_BYTES, PROCESS_INLINE_LINES, PROCESS_SUMMARY_BYTES, PROCESS_SUMMARY_LINES,
};

/// Lines always kept from the start: they usually say what ran.
const HEAD_LINES: usize = 3;
/// Lines always kept from the end: they usually say how it ended.
const TAIL_LINES: usize = 5;
/// Bytes at the start of a line searched for a diagnostic word. Diagnostics name
/// themselves early in a line, and a bound keeps one huge line from costing a scan.
const SCAN_BYTES: usize = 1_024;
/// Appended to a line cut to fit the byte budget, so a cut is never silent.
const CUT_MARK: &str = " [line cut]";

/// What `process_diagnostics` made of a capture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Projection {
    /// The text the model is given.
    pub text: String,
    /// Whether `text` is the whole capture, as it was; otherwise it is a summary.
    pub inline: bool,
    /// Lines in the whole capture.
    pub lines: usize,
    /// Lines of the capture the summary leaves out (0 when inline). Lines shown cut count
    /// as shown.
    pub omitted_lines: usize,
}

/// Projects captured process output. Up to `PROCESS_INLINE_LINES` (84) lines and
/// `PROCESS_INLINE_BYTES` (12 KB) it is returned as it is; beyond either, it becomes a
/// summary of at most `PROCESS_SUMMARY_LINES` (16) lines and `PROCESS_SUMMARY_BYTES`
/// (4 KB), markers included: the first lines, the last lines and diagnostic lines (error-
/// or warning-like lines from anywhere in the capture), each gap replaced by a line
/// `[… N lines omitted …]`. Lines too long for the byte budget are cut on a character
/// boundary and end with ` [line cut]`.
pub fn process_diagnostics(text: &str) -> Projection {
    let total = count_lines(text);
    if total <= PROCESS_INLINE_LINES && text.len() <= PROCESS_INLINE_BYTES {
        return Projection {
            text: text.to_owned(),
            inline: true,
            lines: total,
            omitted_lines: 0,
        };
    }
    let selected = select(text, total);
    let omitted_lines = total - selected.len();
    Projection {
        text: render(&selected, total),
        inline: false,
        lines: total,
        omitted_lines,
    }
}

/// Lines in `text`: a final newline ends the last line rather than starting another.
fn count_lines(text: &str) -> usize {
    let newlines = text.bytes().filter(|&b| b == b'\n').count();
    if text.is_empty() || text.ends_with('\n') {
        newlines
    } else {
        newlines + 1
    }
}

/// The lines of `text`, without their newline (and a CR before it).
fn lines(text: &str) -> impl Iterator<Item = &str> {
    text.strip_suffix('\n')
        .unwrap_or(text)
        .split('\n')
        .filter(move |_| !text.is_empty())
        .map(|line| line.strip_suffix('\r').unwrap_or(line))
}

/// The lines the summary shows, by index. Only indices and borrowed lines are kept, so
/// memory follows what is shown, not the size of the capture.
fn select(text: &str, total: usize) -> BTreeMap<usize, &str> {
    let mut selected = BTreeMap::new();
    if total <= PROCESS_SUMMARY_LINES {
        // Every line fits; only the byte budget cuts.
        selected.extend(lines(text).enumerate());
        return selected;
    }
    let tail_start = total - TAIL_LINES;
    let fill_start = tail_start.saturating_sub(PROCESS_SUMMARY_LINES);
    let mut diagnostics = Vec::new();
    let mut before_tail = Vec::new();
    for (index, line) in lines(text).enumerate() {
        if index < HEAD_LINES || index >= tail_start {
            selected.insert(index, line);
            continue;
        }
        if diagnostics.len() < PROCESS_SUMMARY_LINES && is_diagnostic(line) {
            // The first diagnostics usually name the cause; later ones repeat or follow.
            diagnostics.push((index, line));
        }
        if index >= fill_start {
            before_tail.push((index, line));
        }
    }
    for (index, line) in diagnostics {
        selected.insert(index, line);
        if rendered_lines(&selected, total) > PROCESS_SUMMARY_LINES {
            selected.remove(&index);
            break;
        }
    }
    // Room left goes to the lines before the tail, the end being what a failure shows.
    while rendered_lines(&selected, total) < PROCESS_SUMMARY_LINES {
        let Some((index, line)) = before_tail.pop() else {
            break;
        };
        if selected.contains_key(&index) {
            continue;
        }
        selected.insert(index, line);
        if rendered_lines(&selected, total) > PROCESS_SUMMARY_LINES {
            selected.remove(&index);
            break;
        }
    }
    selected
}

/// Whether a line looks like a diagnostic: it holds one of `DIAGNOSTIC_WORDS` near its
/// start, in any case. One pass over the bytes, comparing words only where a first letter
/// matches, because a flood of output is scanned line by line.
fn is_diagnostic(line: &str) -> bool {
    let scanned = &line.as_bytes()[..line.len().min(SCAN_BYTES)];
    for (i, &byte) in scanned.iter().enumerate() {
        let words: &[&str] = match byte | 0x20 {
            b'e' => &["error", "exception"],
            b'w' => &["warning"],
            b'f' => &["fatal", "fail"],
            b'p' => &["panic"],
            b't' => &["traceback"],
            b'a' => &["assert", "abort"],
            b'd' => &["denied"],
            b'n' => &["not found", "no such file"],
            b's' => &["segmentation fault"],
            _ => continue,
        };
        let rest = &scanned[i..];
        if words.iter().any(|word| {
            rest.len() >= word.len() && rest[..word.len()].eq_ignore_ascii_case(word.as_bytes())
        }) {
            return true;
        }
    }
    false
}

/// Lines the summary takes: the selected lines and one marker per gap.
fn rendered_lines(selected: &BTreeMap<usize, &str>, total: usize) -> usize {
    selected.len() + gaps(selected, total).count()
}

/// The lengths of the runs of lines left out between, before and after selected lines.
fn gaps(selected: &BTreeMap<usize, &str>, total: usize) -> impl Iterator<Item = usize> {
    let mut next = 0;
    let mut out = Vec::new();
    for &index in selected.keys() {
        if index > next {
            out.push(index - next);
        }
        next = index + 1;
    }
    if total > next {
        out.push(total - next);
    }
    out.into_iter()
}

/// One line of the summary.
enum Entry<'a> {
    Line(&'a str),
    Gap(usize),
}

/// The summary text: selected lines and gap markers, cut to the byte budget.
fn render(selected: &BTreeMap<usize, &str>, total: usize) -> String {
    let mut entries = Vec::new();
    let mut next = 0;
    for (&index, &line) in selected {
        if index > next {
            entries.push(Entry::Gap(index - next));
        }
        entries.push(Entry::Line(line));
        next = index + 1;
    }
    if total > next {
        entries.push(Entry::Gap(total - next));
    }
    let cap = line_cap(&entries);
    let mut text = String::new();
    for (i, entry) in entries.iter().enumerate() {
        if i > 0 {
            text.push('\n');
        }
        match entry {
            Entry::Line(line) => push_cut(&mut text, line, cap),
            Entry::Gap(n) => text.push_str(&gap_marker(*n)),
        }
    }
    text
}

/// `[… N lines omitted …]`.
fn gap_marker(lines: usize) -> String {
    let noun = if lines == 1 { "line" } else { "lines" };
    format!("[… {lines} {noun} omitted …]")
}

/// The largest per-line byte cap at which the summary fits `PROCESS_SUMMARY_BYTES`: short
/// lines stay whole and only the longest are cut, as little as the budget allows.
fn line_cap(entries: &[Entry]) -> usize {
    let size = |cap: usize| -> usize {
        let newlines = entries.len().saturating_sub(1);
        newlines
            + entries
                .iter()
                .map(|entry| match entry {
                    Entry::Line(line) => cut_len(line, cap),
                    Entry::Gap(n) => gap_marker(*n).len(),
                })
                .sum::<usize>()
    };
    // `size` grows with the cap, so search for the largest cap that fits. The smallest
    // cap keeps only the cut mark of each long line, which always fits 16 lines in 4 KB.
    let (mut low, mut high) = (CUT_MARK.len(), PROCESS_SUMMARY_BYTES);
    if size(high) <= PROCESS_SUMMARY_BYTES {
        return high;
    }
    while low + 1 < high {
        let middle = low + (high - low) / 2;
        if size(middle) <= PROCESS_SUMMARY_BYTES {
            low = middle;
        } else {
            high = middle;
        }
    }
    low
}

/// Bytes `line` takes once cut to `cap`.
fn cut_len(line: &str, cap: usize) -> usize {
    if line.len() <= cap {
        line.len()
    } else {
        line.floor_char_boundary(cap.saturating_sub(CUT_MARK.len())) + CUT_MARK.len()
    }
}

/// Appends `line`, cut on a character boundary to at most `cap` bytes with the cut mark.
fn push_cut(text: &mut String, line: &str, cap: usize) {
    if line.len() <= cap {
        text.push_str(line);
    } else {
        let end = line.floor_char_boundary(cap.saturating_sub(CUT_MARK.len()));
        text.push_str(&line[..end]);
        text.push_str(CUT_MARK);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbered(n: usize) -> String {
        (0..n).map(|i| format!("line {i}\n")).collect()
    }

    fn check_summary(p: &Projection) {
        assert!(!p.inline);
        assert!(p.text.len() <= PROCESS_SUMMARY_BYTES, "{}", p.text.len());
        assert!(
            p.text.lines().count() <= PROCESS_SUMMARY_LINES,
            "{}",
            p.text
        );
    }

    #[test]
    fn inline_up_to_both_bounds_and_summary_one_past_either() {
        // (text, inline?)
        let at_lines = numbered(PROCESS_INLINE_LINES);
        let over_lines = numbered(PROCESS_INLINE_LINES + 1);
        // 12 lines of 1,024 bytes each (newline included): exactly 12 KB.
        let at_bytes = format!("{}\n", "b".repeat(1_023)).repeat(12);
        let over_bytes = format!("{at_bytes}x");
        let no_final_newline = numbered(PROCESS_INLINE_LINES).trim_end().to_owned();
        let cases: [(&str, bool); 7] = [
            ("", true),
            ("hello\nworld\n", true),
            (&at_lines, true),
            (&no_final_newline, true),
            (&at_bytes, true),
            (&over_lines, false),
            (&over_bytes, false),
        ];
        assert_eq!(at_bytes.len(), PROCESS_INLINE_BYTES);
        for (text, inline) in cases {
            let p = process_diagnostics(text);
            assert_eq!(p.inline, inline, "{} bytes", text.len());
            if inline {
                assert_eq!(p.text, text);
                assert_eq!(p.omitted_lines, 0);
            } else {
                check_summary(&p);
            }
        }
        assert_eq!(process_diagnostics(&at_lines).lines, PROCESS_INLINE_LINES);
    }

    #[test]
    fn summary_keeps_head_tail_and_diagnostics_with_omission_markers() {
        let mut text = numbered(1_000);
        text = text.replace("line 400\n", "src/a.rs:3: error: mismatched types\n");
        text = text.replace("line 700\n", "WARNING: deprecated\n");
        let p = process_diagnostics(&text);
        check_summary(&p);
        assert_eq!(p.lines, 1_000);
        let shown: Vec<&str> = p.text.lines().collect();
        assert_eq!(&shown[..HEAD_LINES], ["line 0", "line 1", "line 2"]);
        assert_eq!(shown[HEAD_LINES], "[… 397 lines omitted …]");
        assert!(shown.contains(&"src/a.rs:3: error: mismatched types"));
        assert!(shown.contains(&"WARNING: deprecated"));
        assert_eq!(shown.last(), Some(&"line 999"));
        // Every line of the capture is either shown or counted by a marker.
        let counted: usize = shown
            .iter()
            .filter_map(|l| l.strip_prefix("[… "))
            .filter_map(|l| l.split(' ').next())
            .map(|n| n.parse::<usize>().unwrap())
            .sum();
        let kept = shown.iter().filter(|l| !l.starts_with("[… ")).count();
        assert_eq!(counted + kept, 1_000);
        assert_eq!(counted, p.omitted_lines);
        assert_eq!(shown.len(), PROCESS_SUMMARY_LINES);
    }

    #[test]
    fn many_diagnostics_stay_within_the_line_budget() {
        let text: String = (0..500).map(|i| format!("error {i}\n")).collect();
        let p = process_diagnostics(&text);
        check_summary(&p);
        assert!(p.text.contains("error 3"));
        assert!(p.text.contains("error 499"));
    }

    #[test]
    fn long_lines_are_cut_on_character_boundaries_to_the_byte_budget() {
        // One line alone over every budget, of 3-byte and 4-byte characters.
        let one = "€".repeat(10_000);
        let p = process_diagnostics(&one);
        check_summary(&p);
        assert_eq!(p.lines, 1);
        assert_eq!(p.omitted_lines, 0);
        assert!(p.text.ends_with(CUT_MARK));
        assert!(p.text.starts_with('€'));
        let mixed: String = (0..40)
            .map(|i| format!("{i} {}\n", "🦀".repeat(200 + i)))
            .collect();
        let p = process_diagnostics(&mixed);
        check_summary(&p);
        assert_eq!(p.text.lines().count(), PROCESS_SUMMARY_LINES);
        // Short lines are not cut to make room for long ones.
        let short_and_long = format!("{}\nshort\n", "x".repeat(20_000));
        let p = process_diagnostics(&short_and_long);
        check_summary(&p);
        assert!(p.text.ends_with("\nshort"));
    }

    #[test]
    fn few_long_lines_are_all_shown() {
        let text: String = (0..10)
            .map(|i| format!("{i}{}\n", "y".repeat(2_000)))
            .collect();
        let p = process_diagnostics(&text);
        check_summary(&p);
        assert_eq!(p.text.lines().count(), 10);
        assert_eq!(p.omitted_lines, 0);
    }
}
