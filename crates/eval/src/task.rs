//! What a task is: the repository it starts from, what the person asks, the check that
//! decides whether the result is right, and the replies a competent model would give
//! (its scripted solution, which the mock plays).

use serde::Serialize;
use serde_json::{Value, json};

/// The language of a task's repository, each with a toolchain CI has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    /// A cargo crate without external crates.
    Rust,
    /// Python 3 with its standard library only, tested with `python3 -m unittest`.
    Python,
    /// JavaScript for Node.js, tested with `node --test`.
    JavaScript,
    /// Bash scripts.
    Shell,
}

impl Language {
    /// The language's name as reports and `--tasks` show it.
    pub fn name(self) -> &'static str {
        match self {
            Language::Rust => "rust",
            Language::Python => "python",
            Language::JavaScript => "javascript",
            Language::Shell => "shell",
        }
    }
}

/// One task of the suite.
#[derive(Debug, Clone, Copy)]
pub struct Task {
    /// A unique name: its language (`js` for JavaScript), then what it asks.
    pub name: &'static str,
    /// The repository's language.
    pub language: Language,
    /// What kind of work it asks for, in a few words ("fix a failing test").
    pub kind: &'static str,
    /// The repository: each file's path from its root, and its text. A file whose text
    /// starts with `#!` is made executable.
    pub files: &'static [(&'static str, &'static str)],
    /// What the person asks, given to `magi-code exec` as its prompt.
    pub prompt: &'static str,
    /// The check: a bash script run in the repository once the agent is done. Exit
    /// status 0 means the task was done; its output says what is wrong otherwise.
    /// `$EVAL_ANSWER` names a file holding the agent's final answer (empty when it gave
    /// none). It must fail on the untouched repository.
    pub check: &'static str,
    /// The replies a competent model would give, in order (see [`Round`]).
    pub solution: fn() -> Vec<Round>,
}

/// One scripted model reply.
#[derive(Debug, Clone, PartialEq)]
pub enum Round {
    /// Tool calls, made together in one response.
    Calls(Vec<Call>),
    /// The final answer, which ends the turn.
    Answer(String),
}

/// One scripted tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// The tool's name, as the model is offered it.
    pub tool: &'static str,
    /// Its arguments.
    pub arguments: Value,
}

/// A reply making these calls together.
pub fn calls(calls: impl IntoIterator<Item = Call>) -> Round {
    Round::Calls(calls.into_iter().collect())
}

/// The final answer.
pub fn answer(text: impl Into<String>) -> Round {
    Round::Answer(text.into())
}

/// `read` of a whole file.
pub fn read(path: &str) -> Call {
    call("read", json!({ "path": path }))
}

/// `grep` for a regular expression in the whole repository.
pub fn grep(pattern: &str) -> Call {
    call("grep", json!({ "pattern": pattern }))
}

/// `edit`: `old_text`, which occurs once in the file, becomes `new_text`.
pub fn edit(path: &str, old_text: &str, new_text: &str) -> Call {
    call(
        "edit",
        json!({ "path": path, "old_text": old_text, "new_text": new_text }),
    )
}

/// `write`: the file's whole new text.
pub fn write(path: &str, content: &str) -> Call {
    call("write", json!({ "path": path, "content": content }))
}

/// `bash`: a command run in the repository.
pub fn bash(command: &str) -> Call {
    call("bash", json!({ "command": command }))
}

fn call(tool: &'static str, arguments: Value) -> Call {
    Call { tool, arguments }
}
