//! The soak's model: a seeded random plan played by the mock model server. Each turn it
//! is told how many rounds of tool calls to make before it answers; each round it asks
//! for right and wrong calls (valid arguments, malformed JSON, wrong types, tools it
//! was never offered, several at once, huge and binary outputs, unicode everywhere),
//! and now and then it fails as providers do. Compaction and title requests get a
//! summary and a title.

use std::sync::{Arc, Mutex, PoisonError};

use magi_testkit::{Reply, Responder, Stop, TITLE_PROMPT_START};
use serde_json::{Value, json};

use super::random::Random;

/// What a compaction request asks; the model answers it with a summary.
const COMPACTION_ASKS: &str = "Summarise the conversation so far";

/// Files a call may name: the workspace's (see `workspace`), some missing, some outside.
pub const PATHS: &[&str] = &[
    "small.txt",
    "big.txt",
    "binary.bin",
    "ünï 文件.txt",
    "link.txt",
    "dangling.txt",
    "dir/nested.rs",
    "image.png",
    "missing.txt",
    "dir",
    "../outside.txt",
    "",
];

/// Commands a `bash` call may run: quick ones, failing ones, big and binary output,
/// escapes, writes, one that leaves a child behind, and a slow one to be cancelled.
const COMMANDS: &[&str] = &[
    "echo hello",
    "printf 'a\\0b\\377c\\n'",
    "cat big.txt",
    "seq 1 200000",
    "yes 日本語 | head -c 3000000",
    "ls -la",
    "false",
    "exit 3",
    "sleep 0.2; echo slept",
    "echo data >> out.txt",
    "rm -f out.txt",
    "cat missing.txt",
    "printf '\\033[31mred\\033[0m \\033]0;title\\007\\n'",
    "for i in 1 2 3; do echo \"$i ❤️\"; done",
    "(sleep 5 &); echo left a child",
    "sleep 3; echo slow",
    "head -c 100000 /dev/urandom",
    "cat 'ünï 文件.txt' link.txt dangling.txt",
];

/// The plan's state, shared by the session's driver (which begins turns) and the
/// mock server (which asks it for each reply).
pub struct Model {
    random: Random,
    /// The draws of calls that joined the plan later (the plan tool): a stream of its
    /// own, so that the plans of earlier seeds stay as they were.
    later: Random,
    /// The draws of calls to the MCP server, in a session that has one (a stream of
    /// its own, too).
    mcp: Option<Random>,
    /// Calls made to the MCP server.
    pub mcp_calls: usize,
    /// Rounds of tool calls left in this turn before the model answers.
    rounds_left: usize,
    /// The next call ID's number.
    next_call: u64,
}

impl Model {
    /// The model of a session seeded with `seed`.
    pub fn new(seed: u64) -> Arc<Mutex<Model>> {
        Arc::new(Mutex::new(Model {
            random: Random::new(seed),
            later: Random::new(seed ^ 0x746f_646f_5f33_3863),
            mcp: None,
            mcp_calls: 0,
            rounds_left: 0,
            next_call: 0,
        }))
    }

    /// A responder for the mock server, playing `model`.
    pub fn responder(model: &Arc<Mutex<Model>>) -> Responder {
        let model = Arc::clone(model);
        Box::new(move |body| {
            model
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .reply(body)
        })
    }

    /// Calls the MCP server's tools now and then, drawn from `draws`.
    pub fn offer_mcp(&mut self, draws: Random) {
        self.mcp = Some(draws);
    }

    /// A new turn of at most `rounds` rounds of tool calls.
    pub fn begin_turn(&mut self, rounds: usize) {
        self.rounds_left = rounds;
    }

    fn reply(&mut self, body: &Value) -> Reply {
        let text = body.to_string();
        if text.contains(TITLE_PROMPT_START) {
            return self.title();
        }
        if text.contains(COMPACTION_ASKS) {
            return self.summary();
        }
        if self.rounds_left == 0 {
            return self.answer();
        }
        self.rounds_left -= 1;
        let r = &mut self.random;
        match r.weighted(&[88, 3, 3, 2, 2, 2]) {
            0 => self.calls(),
            // A request the provider refuses (not retried): the run fails.
            1 => Reply::error(400, r#"{"error":{"message":"bad request (soak)"}}"#),
            // A stream cut after some of its events.
            2 => {
                let cut = r.between(1, 6);
                self.calls().disconnect_after(cut)
            }
            // A stream that turns to garbage.
            3 => {
                let bad = r.between(1, 6);
                self.answer().malformed_after(bad)
            }
            // A reply cut at the output limit, with or without calls.
            4 => self.calls().stop(Stop::MaxTokens),
            _ => Reply::stream().refusal([r.text(40)]),
        }
    }

    /// The turn's answer: text of any size, sometimes with reasoning, sometimes cut.
    fn answer(&mut self) -> Reply {
        let r = &mut self.random;
        let mut reply = Reply::stream();
        if r.chance(0.2) {
            reply = reply.reasoning_summary([r.text(120), r.text(60)]);
        }
        let text = r.sized_text();
        let pieces = split(&text, r.between(1, 8));
        reply = reply.text(pieces);
        if r.chance(0.05) {
            reply = reply.stop(Stop::MaxTokens);
        }
        reply.usage(r.between(10, 50_000) as u64, r.between(1, 4_000) as u64)
    }

    /// A compaction's summary: mostly a fine one with a title line; sometimes empty,
    /// huge, or a failed request.
    fn summary(&mut self) -> Reply {
        let r = &mut self.random;
        match r.weighted(&[80, 8, 6, 6]) {
            0 => Reply::stream().text([r.text_between(20, 2_000), "\nTitle: Soak ❤️ work".into()]),
            1 => Reply::stream(),
            2 => Reply::stream().text([r.text(40_000)]),
            _ => Reply::error(400, r#"{"error":{"message":"no summary (soak)"}}"#),
        }
    }

    /// A session title, or a failed request.
    fn title(&mut self) -> Reply {
        let r = &mut self.random;
        if r.chance(0.1) {
            return Reply::error(400, r#"{"error":{"message":"no title (soak)"}}"#);
        }
        Reply::stream().text([r.text_between(1, 80)])
    }

    /// One to four tool calls, with text before them now and then.
    fn calls(&mut self) -> Reply {
        let mut reply = Reply::stream();
        if self.random.chance(0.2) {
            reply = reply.text([self.random.text(100)]);
        }
        let count = if self.random.chance(0.3) {
            self.random.between(2, 4)
        } else {
            1
        };
        for _ in 0..count {
            self.next_call += 1;
            // Now and then a call reuses the last ID: bad input too.
            let id = if self.next_call > 1 && self.random.chance(0.01) {
                format!("call_{}", self.next_call - 1)
            } else {
                format!("call_{}", self.next_call)
            };
            let (name, arguments) = self.call();
            let pieces = split(&arguments, self.random.between(1, 3));
            reply = reply.tool_call(id, name, pieces);
        }
        reply.usage(self.random.between(10, 50_000) as u64, 20)
    }

    /// One call: a tool name and its arguments' JSON text, right or wrong.
    fn call(&mut self) -> (String, String) {
        let r = &mut self.random;
        let kind = r.weighted(&[14, 4, 3, 3, 2, 16, 4, 4, 2, 3, 2, 2, 2, 4, 4, 3, 3, 1, 1, 2]);
        let (name, arguments) = match kind {
            0 => ("read", json!({ "path": r.pick(PATHS) })),
            1 => (
                "read",
                json!({ "path": r.pick(PATHS), "offset": r.between(0, 5_000), "limit": r.between(1, 400) }),
            ),
            2 => (
                "grep",
                json!({ "pattern": *r.pick(&["word", "日本", "(", "[a-z]+", "❤️"]) }),
            ),
            3 => (
                "find",
                json!({ "pattern": *r.pick(&["*.txt", "**/*", "nope*", "*"]) }),
            ),
            4 => ("list", json!({ "path": *r.pick(&[".", "dir", "missing"]) })),
            5 => ("bash", json!({ "command": r.pick(COMMANDS) })),
            6 => (
                "write",
                json!({ "path": format!("new-{}.txt", r.between(0, 5)), "content": r.sized_text() }),
            ),
            7 => (
                "edit",
                json!({
                    "path": *r.pick(&["small.txt", "new-1.txt", "missing.txt", "binary.bin"]),
                    "old_text": *r.pick(&["small", "line", "not there"]),
                    "new_text": r.text(30),
                }),
            ),
            8 => (
                "hash_edit",
                json!({ "path": "small.txt", "operations": [{ "op": "replace", "line": 1, "hash": "zz" }] }),
            ),
            9 => (
                "magi_control",
                json!({ "operation": *r.pick(&["compact", "usage", "compact"]) }),
            ),
            10 => (
                "magi_control",
                json!({ "operation": "title", "title": r.text(30) }),
            ),
            11 => (
                "view_image",
                json!({ "path": *r.pick(&["image.png", "small.txt", "missing.png"]) }),
            ),
            12 => (
                "ast_grep",
                json!({ "pattern": "fn $NAME() {}", "language": *r.pick(&["rust", "python", "klingon"]) }),
            ),
            13 => (
                "async_bash",
                json!({ "command": *r.pick(&["sleep 0.3; echo done", "seq 1 1000", "sleep 4"]) }),
            ),
            14 => (
                "bash_log",
                json!({ "job": format!("job-{}", r.between(1, 3)) }),
            ),
            15 => (
                "bash_kill",
                json!({ "job": format!("job-{}", r.between(1, 3)) }),
            ),
            16 => (
                "code_mode",
                json!({ "code": *r.pick(&[
                    "return 1 + 1;",
                    "const r = await tools.read({path: 'small.txt'}); return r;",
                    "throw new Error('soak');",
                    "while (true) {}",
                ]), "timeout": 2 }),
            ),
            17 => ("web_fetch", json!({ "url": "http://127.0.0.1:9/" })),
            // Tools it was never offered.
            18 => (
                *r.pick(&["no_such_tool", "ask_user", "task", "skill"]),
                json!({ "x": 1 }),
            ),
            // Arguments of the wrong types, or none at all.
            _ => (
                *r.pick(&["read", "bash", "write", "grep"]),
                r.pick(&[
                    json!({ "path": 5 }),
                    json!({ "command": ["a"] }),
                    json!({}),
                    json!(null),
                ])
                .clone(),
            ),
        };
        let arguments = match r.weighted(&[92, 4, 2, 2]) {
            0 => arguments.to_string(),
            // Not JSON at all, or cut off.
            1 => "{\"path\": \"small.txt\"".to_owned(),
            2 => String::new(),
            _ => "[1, 2".to_owned(),
        };
        // Now and then the call is a plan instead, right or wrong (offered only under
        // `plan.todo`: otherwise a tool it was never offered).
        if self.later.chance(0.06) {
            return ("todo".to_owned(), self.plan().to_string());
        }
        if let Some(mcp) = self.mcp.as_mut()
            && mcp.chance(super::mcp::CALLS_TO_SERVER)
        {
            self.mcp_calls += 1;
            return super::mcp::call(mcp);
        }
        (name.to_owned(), arguments)
    }

    /// A `todo` call's arguments: a plan of up to six steps, or one of its mistakes.
    fn plan(&mut self) -> serde_json::Value {
        let r = &mut self.later;
        let statuses = ["pending", "in_progress", "done"];
        let steps = r.between(0, 6);
        let mut doing = false;
        let items: Vec<serde_json::Value> = (0..steps)
            .map(|_| {
                let mut status = *r.pick(&statuses);
                if status == "in_progress" && std::mem::replace(&mut doing, true) {
                    status = "pending";
                }
                json!({ "text": r.text_between(1, 120), "status": status })
            })
            .collect();
        match r.weighted(&[85, 5, 4, 3, 3]) {
            0 => json!({ "items": items }),
            1 => {
                json!({ "items": [{ "text": "a", "status": "in_progress" }, { "text": "b", "status": "in_progress" }] })
            }
            2 => json!({ "items": [{ "text": "", "status": "pending" }] }),
            3 => json!({ "items": [{ "text": "x", "status": "started" }] }),
            _ => {
                json!({ "items": (0..30).map(|n| json!({ "text": format!("step {n}"), "status": "pending" })).collect::<Vec<_>>() })
            }
        }
    }
}

/// `text` in up to `parts` pieces, each cut at a character boundary.
fn split(text: &str, parts: usize) -> Vec<String> {
    if text.is_empty() || parts <= 1 {
        return vec![text.to_owned()];
    }
    let step = text.len().div_ceil(parts);
    let mut pieces = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let mut end = (start + step).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        pieces.push(text[start..end].to_owned());
        start = end;
    }
    pieces
}
