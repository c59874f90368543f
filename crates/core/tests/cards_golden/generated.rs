//! Generated sources: every card the selector gives validates, fits its bounds and carries no secret.

use super::*;

/// A small deterministic generator, so the fuzz loop needs no dependency and every
/// failure reproduces.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }

    fn flag(&mut self) -> bool {
        self.next() & 1 == 1
    }

    fn string(&mut self) -> String {
        let count = match self.below(8) {
            0 => 0,
            1 | 2 => 2_000 + self.below(4_000),
            _ => self.below(12),
        };
        self.pieces(count)
    }

    /// Mostly short strings, for the lines of long diffs.
    fn short_string(&mut self) -> String {
        let count = if self.below(4) == 0 {
            400
        } else {
            self.below(6)
        };
        self.pieces(count)
    }

    fn pieces(&mut self, count: u64) -> String {
        let pieces = [
            "src/main.rs",
            " ",
            "\n",
            "\r\n",
            "\t",
            "\u{1b}[31m",
            "\u{0}",
            "\u{7f}",
            "\u{9b}",
            "\"",
            "\\",
            "é",
            "😀",
            "plain words",
            "@@ -1,2 +1,2 @@",
            "--- a",
        ];
        let secrets = [
            SECRET,
            " token=sk-abcdefghijklmnopqrstuvwxyz123456 ",
            "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        ];
        // A quarter of the strings carry secrets, so that other reasons are seen too.
        let secret = self.below(4) == 0;
        let mut text = String::new();
        for _ in 0..count {
            if secret && self.below(8) == 0 {
                text.push_str(secrets[self.below(secrets.len() as u64) as usize]);
            } else {
                text.push_str(pieces[self.below(pieces.len() as u64) as usize]);
            }
        }
        text
    }

    fn maybe_string(&mut self) -> Option<String> {
        self.flag().then(|| self.string())
    }

    fn number(&mut self) -> u64 {
        match self.below(4) {
            0 => 0,
            1 => u64::MAX - self.below(3),
            _ => self.below(300),
        }
    }

    fn maybe_number(&mut self) -> Option<u64> {
        self.flag().then(|| self.number())
    }

    fn json(&mut self, depth: u32) -> Value {
        match self.below(if depth > 2 { 4 } else { 7 }) {
            0 => Value::Null,
            1 => json!(self.number()),
            2 => json!(self.string()),
            3 => json!(self.flag()),
            4 => Value::Array((0..self.below(5)).map(|_| self.json(depth + 1)).collect()),
            _ => {
                let keys = ["tool", "path", "command", "status", "entries", "diff", "x"];
                let mut object = serde_json::Map::new();
                for _ in 0..self.below(6) {
                    object.insert((*self.pick(&keys)).to_owned(), self.json(depth + 1));
                }
                Value::Object(object)
            }
        }
    }

    fn tracking(&mut self) -> Value {
        match self.below(6) {
            0 => Value::Null,
            1 => json!({"status": "guessed"}),
            2 => self.json(1),
            _ => {
                let statuses = ["completed", "no_candidates", "command_limit", "redacted"];
                let operations = ["read", "write", "edit", "read_write", "delete"];
                let entries: Vec<Value> = (0..self.below(300))
                    .map(|_| match self.below(5) {
                        0 => self.json(2),
                        _ => json!({"path": self.string(), "operation": *self.pick(&operations)}),
                    })
                    .collect();
                let mut tracking = json!({
                    "status": *self.pick(&statuses),
                    "unsupported_segments": self.number(),
                });
                if self.flag() {
                    tracking["entries"] = Value::Array(entries);
                }
                tracking
            }
        }
    }

    /// Facts for `tool`: mostly of its own kind, sometimes absent, malformed or of
    /// another tool.
    fn facts(&mut self, tool: &str) -> Option<Value> {
        let own = match tool {
            "read" => 2,
            "grep" | "find" | "list" => 3,
            "write" | "edit" | "hash_edit" => 4,
            "web_fetch" => 5,
            "bash_log" | "bash_kill" => 6,
            "magi_control" => 8,
            "view_image" => 9,
            "ast_grep" => 10,
            "code_mode" => 11,
            _ => 7,
        };
        let which = match self.below(12) {
            0 => 0,
            1 => 1,
            2 | 3 => 2 + self.below(6),
            _ => own,
        };
        let facts = match which {
            0 => return None,
            1 => return Some(self.json(0)),
            2 => Facts::Read {
                path: self.string(),
                first_line: self.maybe_number(),
                last_line: self.maybe_number(),
                total_lines: self.maybe_number(),
                truncated: self.flag(),
                binary: self.flag(),
            },
            3 => Facts::Search {
                pattern: self.maybe_string(),
                path: self.maybe_string(),
                matches: self.number(),
                files: self.maybe_number(),
                complete: self.flag(),
                paths: (0..self.below(40)).map(|_| self.string()).collect(),
            },
            4 => Facts::Change {
                path: self.string(),
                created: self.flag(),
                operations: self.number(),
                applied: self.number(),
                changed: self.flag(),
                lines_added: self.flag().then(|| self.number()),
                lines_removed: self.flag().then(|| self.number()),
            },
            5 => Facts::Web {
                url: self.string(),
                status: self.flag().then(|| self.below(600) as u16),
                content_type: self.maybe_string(),
                bytes: self.maybe_number(),
                truncated: self.flag(),
            },
            6 => Facts::Job {
                job_id: self.string(),
                state: self.maybe_string(),
                first_line: self.maybe_number(),
                lines: self.maybe_number(),
                total_lines: self.maybe_number(),
            },
            8 => {
                let mut sum = || {
                    self.flag().then(|| TokenSum {
                        tokens: self.number(),
                        requests: self.number(),
                    })
                };
                let usage = UsageFigures {
                    input_tokens: sum(),
                    cached_input_tokens: sum(),
                    output_tokens: sum(),
                    reasoning_tokens: sum(),
                    model_requests: self.number(),
                    tool_calls: self.number(),
                    context_window: self.maybe_number(),
                    context_used: self.maybe_number(),
                };
                Facts::Control {
                    operation: if self.flag() {
                        "title".to_owned()
                    } else {
                        self.string()
                    },
                    status: ControlStatus::Answered,
                    usage: self.flag().then_some(usage),
                    title: self.maybe_string(),
                    title_cut: self.maybe_number(),
                }
            }
            10 => Facts::AstGrep {
                pattern: self.string(),
                language: self.string(),
                path: self.maybe_string(),
                matches: self.number(),
                files: self.number(),
                files_scanned: self.number(),
                files_skipped: self.number(),
                complete: self.flag(),
                paths: (0..self.below(40)).map(|_| self.string()).collect(),
            },
            11 => Facts::CodeMode {
                nested_started: self.number(),
                nested_completed: self.number(),
                nested_failed: self.number(),
                wall_ms: self.number(),
                output_bytes: self.number(),
                limit: self.flag().then_some(CodeModeLimit::Memory),
                error_line: self.maybe_number().map(|n| n as u32),
            },
            9 => Facts::Image {
                path: self.string(),
                format: self.maybe_string(),
                width: self.maybe_number().map(|n| n as u32),
                height: self.maybe_number().map(|n| n as u32),
                bytes: self.maybe_number(),
                sent: self.flag().then(|| SentImage {
                    media_type: self.string(),
                    width: self.number() as u32,
                    height: self.number() as u32,
                    file: CaptureDigest {
                        file: self.string(),
                        bytes: self.number(),
                        sha256: self.string(),
                    },
                }),
            },
            _ => {
                let maybe_bool = |rng: &mut Rng| rng.flag().then(|| rng.flag());
                let facts = CommandFacts {
                    command: self.string(),
                    working_directory: self.string(),
                    timeout_ms: self.maybe_number(),
                    effective_timeout_ms: self.maybe_number(),
                    timed_out: maybe_bool(self),
                    exit_code: self.flag().then(|| self.next() as i32),
                    signal: self.maybe_string(),
                    stdout_truncated: maybe_bool(self),
                    stderr_truncated: maybe_bool(self),
                    stdout_lines: self.maybe_number(),
                    stderr_lines: self.maybe_number(),
                    failure_line: self.maybe_string(),
                    cleanup_warning: self.maybe_string(),
                    job_id: self.maybe_string(),
                    tracking: None,
                    ..CommandFacts::default()
                };
                let mut value = serde_json::to_value(Facts::Command(Box::new(facts))).unwrap();
                value["tracking"] = self.tracking();
                return Some(value);
            }
        };
        Some(serde_json::to_value(facts).unwrap())
    }

    fn diff(&mut self) -> String {
        let lines = match self.below(4) {
            0 => 10_000,
            _ => self.below(200),
        };
        let mut diff = String::new();
        for _ in 0..lines {
            let line = match self.below(40) {
                0 => format!(
                    "@@ -{},{} +{},{} @@",
                    self.number(),
                    self.number(),
                    self.number(),
                    self.number()
                ),
                1 | 2 => {
                    let old = self.below(300) + 1;
                    let new = self.below(300) + 1;
                    format!(
                        "@@ -{old},{} +{new},{} @@ fn x()",
                        self.below(80),
                        self.below(80)
                    )
                }
                3 => "--- a.txt".to_owned(),
                4 => "+++ a.txt".to_owned(),
                5 => "\\ No newline at end of file".to_owned(),
                6..=12 => format!("+{}", self.short_string()),
                13..=19 => format!("-{}", self.short_string()),
                20 => self.short_string(),
                _ => format!(" {}", self.short_string()),
            };
            diff.push_str(&line);
            diff.push('\n');
        }
        diff
    }
}

/// Runs `rounds` generated sources through the selector and checks every card;
/// returns how many cards carried each omission subject, and the largest card.
fn fuzz(
    seed: u64,
    rounds: u64,
    tools: &[&str],
) -> (std::collections::BTreeMap<String, u64>, usize) {
    let outcomes = [
        ToolOutcome::Completed,
        ToolOutcome::Failed,
        ToolOutcome::Cancelled,
        ToolOutcome::Indeterminate,
        ToolOutcome::Denied,
    ];
    let mut rng = Rng(seed);
    let mut seen = std::collections::BTreeMap::new();
    let mut largest = 0;
    for round in 0..rounds {
        let tool = *rng.pick(tools);
        let label = rng.string();
        let summary = rng.string();
        let working_directory = rng.maybe_string();
        let facts = rng.facts(tool);
        let payload = match rng.below(4) {
            0 | 1 => json!({"schema_version": 1, "diff": rng.diff(), "truncated": rng.flag()}),
            2 => {
                json!({"schema_version": rng.below(3), "diff": rng.string(), "truncated": rng.flag()})
            }
            _ => rng.json(0),
        };
        let garbage = rng.string();
        let protection = match rng.below(4) {
            0 => None,
            1 => Some(garbage.as_str()),
            _ => Some(*rng.pick(&PUBLIC_PROTECTION_LABELS)),
        };
        let origin = if rng.flag() {
            Origin::Live
        } else {
            Origin::Saved
        };
        let settlement = match rng.below(6) {
            0 if origin == Origin::Live => Settlement::Running,
            1 => Settlement::Interrupted,
            _ => Settlement::Settled {
                outcome: *rng.pick(&outcomes),
                summary: &summary,
            },
        };
        let activity_id = format!("tool-{round}");
        let source = CardSource {
            activity_id: &activity_id,
            origin,
            revision: if origin == Origin::Saved {
                0
            } else {
                rng.below(MAX_SAFE_INTEGER)
            },
            tool_name: tool,
            label: &label,
            working_directory: working_directory.as_deref(),
            settlement,
            facts: facts.as_ref(),
            protection,
            awaiting_approval: rng.flag(),
            preview: match rng.below(5) {
                0 => PreviewSource::NotApplicable,
                1 => PreviewSource::NotRecorded,
                2 => PreviewSource::Malformed,
                _ => PreviewSource::Recorded(&payload),
            },
            parent_activity_id: None,
            task_id: None,
            children: None,
            transcript: &[],
            transcript_styles: TranscriptStyles::Off,
            hook: None,
        };
        let card = project(&source);
        check(&card, &source);
        if card.detail.availability == Availability::Complete {
            assert!(card.omissions.is_empty(), "{round}: {card:#?}");
        }
        for o in &card.omissions {
            *seen.entry(format!("{:?}", o.subject)).or_insert(0) += 1;
        }
        largest = largest.max(serialized_len(&card));
    }
    (seen, largest)
}

#[test]
fn generated_sources_always_give_valid_bounded_safe_cards() {
    let tools = [
        "read",
        "grep",
        "find",
        "list",
        "ast_grep",
        "write",
        "edit",
        "hash_edit",
        "bash",
        "async_bash",
        "bash_log",
        "bash_kill",
        "web_fetch",
        "magi_control",
        "view_image",
        "code_mode",
        "mystery",
        SECRET,
        "",
    ];
    let (seen, largest) = fuzz(0x9e37_79b9_7f4a_7c15, 400, &tools);
    for subject in ["Title", "Metadata", "Blocks", "Rows", "Text"] {
        assert!(
            seen.contains_key(subject),
            "{subject} never omitted: {seen:?}"
        );
    }
    assert!(largest > 12_000, "no large card was generated: {largest}");
}

#[test]
fn generated_changes_and_commands_stay_valid() {
    let (seen, largest) = fuzz(0x2545_f491_4f6c_dd1d, 300, &["write", "edit", "hash_edit"]);
    assert!(seen.contains_key("DiffLines"), "{seen:?}");
    assert!(largest > 12_000, "{largest}");
    let (seen, largest) = fuzz(0x1234_5678_9abc_def1, 300, &["bash", "async_bash"]);
    assert!(
        seen.contains_key("Rows") && seen.contains_key("Text"),
        "{seen:?}"
    );
    assert!(largest > 6_000, "{largest}");
}
