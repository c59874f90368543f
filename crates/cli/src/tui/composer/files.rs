//! The workspace's paths for `@` mentions: walked once per session, when the first `@`
//! is typed, on a thread of its own so a large tree never holds up a key.
//!
//! The walk is the one the search tools use (`magi_core::walker`: `.gitignore`,
//! `.ignore`, git's excludes and hidden entries skipped), so a mention offers what the
//! model's `find` would see, bounded by [`MENTION_FILES`].

use std::path::{Path, PathBuf};

use magi_protocol::limits::MENTION_FILES;
use tokio::sync::oneshot;

/// The paths of one walk.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Walked {
    /// Relative to the workspace, `/`-separated; a directory ends with `/`.
    pub(crate) paths: Vec<String>,
    /// Whether the walk stopped at [`MENTION_FILES`].
    pub(crate) truncated: bool,
}

/// Where the walk is.
#[derive(Debug, Default)]
enum State {
    /// Not asked for yet.
    #[default]
    Idle,
    /// On its thread.
    Walking(oneshot::Receiver<Walked>),
    /// Done (or failed, with no paths).
    Ready(Walked),
}

/// The workspace paths, walked once on demand.
#[derive(Debug, Default)]
pub(crate) struct FileIndex {
    state: State,
}

impl FileIndex {
    /// Starts the walk of `root` unless it was started before.
    pub(crate) fn start(&mut self, root: PathBuf) {
        if !matches!(self.state, State::Idle) {
            return;
        }
        let (done, walked) = oneshot::channel();
        let spawned = std::thread::Builder::new()
            .name("mention-walk".into())
            .spawn(move || {
                let _ = done.send(walk(&root, MENTION_FILES));
            });
        self.state = match spawned {
            Ok(_) => State::Walking(walked),
            // Without a thread there is nothing to offer; the mention is typed by hand.
            Err(_) => State::Ready(Walked::default()),
        };
    }

    /// Whether the walk is running.
    pub(crate) fn is_walking(&self) -> bool {
        matches!(self.state, State::Walking(_))
    }

    /// The paths, once walked.
    pub(crate) fn walked(&self) -> Option<&Walked> {
        match &self.state {
            State::Ready(walked) => Some(walked),
            _ => None,
        }
    }

    /// Resolves when the running walk ends, with its paths (never, when none runs):
    /// the event loop awaits it to redraw the candidates as soon as they are known.
    pub(crate) async fn finished(&mut self) -> Walked {
        match &mut self.state {
            State::Walking(walked) => walked.await.unwrap_or_default(),
            _ => std::future::pending().await,
        }
    }

    /// Keeps what [`FileIndex::finished`] returned.
    pub(crate) fn keep(&mut self, walked: Walked) {
        self.state = State::Ready(walked);
    }
}

/// Walks `root`, keeping at most `bound` paths; unreadable entries and paths that are
/// not UTF-8 (which a prompt could not name exactly) are skipped.
pub(crate) fn walk(root: &Path, bound: usize) -> Walked {
    let mut walked = Walked::default();
    for entry in magi_core::walker(root).build().flatten() {
        let Ok(relative) = entry.path().strip_prefix(root) else {
            continue;
        };
        let Some(relative) = relative.to_str() else {
            continue;
        };
        if relative.is_empty() {
            continue;
        }
        if walked.paths.len() == bound {
            walked.truncated = true;
            break;
        }
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        walked.paths.push(if is_dir {
            format!("{relative}/")
        } else {
            relative.to_owned()
        });
    }
    walked
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_walk_respects_ignore_files_and_its_bound() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src/deep")).unwrap();
        std::fs::create_dir_all(root.join("target")).unwrap();
        std::fs::write(root.join(".gitignore"), "target/\n*.log\n").unwrap();
        std::fs::write(root.join("src/main.rs"), "").unwrap();
        std::fs::write(root.join("src/deep/漢字.md"), "").unwrap();
        std::fs::write(root.join("target/out"), "").unwrap();
        std::fs::write(root.join("run.log"), "").unwrap();
        let walked = walk(root, 100);
        assert_eq!(
            walked.paths,
            ["src/", "src/deep/", "src/deep/漢字.md", "src/main.rs"]
        );
        assert!(!walked.truncated);
        let cut = walk(root, 2);
        assert_eq!(cut.paths, ["src/", "src/deep/"]);
        assert!(cut.truncated);
    }

    #[tokio::test]
    async fn the_index_walks_once_off_the_caller() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "").unwrap();
        let mut index = FileIndex::default();
        assert!(!index.is_walking() && index.walked().is_none());
        index.start(dir.path().to_owned());
        assert!(index.is_walking());
        let walked = index.finished().await;
        index.keep(walked);
        assert_eq!(index.walked().unwrap().paths, ["a.txt"]);
        // Started once per session.
        index.start(dir.path().to_owned());
        assert!(!index.is_walking());
    }
}
