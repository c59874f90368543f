//! The checkpoint store of one workspace: a git repository of its own under
//! `MC_HOME/checkpoints/<workspace>/`, whose work tree is the workspace, so the
//! person's own `.git` is never read or written. A snapshot is a tree object: the index
//! is brought up to date with the files `git ls-files` finds changed (ignore rules
//! honoured), within the snapshot bounds, then written as a tree; each turn's start
//! and end are refs to theirs (`refs/magi/<turn>/start`, `…/end`). A store git cannot
//! read is rebuilt, with a notice.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use magi_config::CheckpointSettings;
use magi_protocol::limits::{
    CHECKPOINT_GIT_MS, CHECKPOINT_SNAPSHOT_BYTES, CHECKPOINT_SNAPSHOT_FILES,
};
use magi_protocol::messages::CheckpointStore;
use magi_store::Home;

use super::git::{Git, GitError};

/// Which moment of a turn a snapshot is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Before the turn changed anything: the checkpoint a restore goes back to.
    Start,
    /// When the turn ended: what tells the turn's changes from the person's.
    End,
}

impl Phase {
    pub(super) fn name(self) -> &'static str {
        match self {
            Phase::Start => "start",
            Phase::End => "end",
        }
    }
}

/// Why a snapshot was not taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotRecorded {
    /// There is no `git` program.
    GitMissing,
    /// The store lies inside the workspace, where the workspace's own commands could
    /// write it (and a snapshot would hold it).
    InsideWorkspace(PathBuf),
    /// More files changed than [`CHECKPOINT_SNAPSHOT_FILES`], or their bytes were over
    /// [`CHECKPOINT_SNAPSHOT_BYTES`].
    OverLimit {
        /// Changed files found.
        files: usize,
        /// Their bytes.
        bytes: u64,
    },
    /// The work was cancelled.
    Cancelled,
    /// `[checkpoints] enabled = false`: the settings turned checkpoints off.
    Off,
    /// Another failure (what it was).
    Failed(String),
}

impl std::fmt::Display for NotRecorded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotRecorded::GitMissing => f.write_str(
                "there is no git program on PATH, so checkpoints cannot be recorded; install \
                 git to be able to undo turns",
            ),
            NotRecorded::InsideWorkspace(dir) => write!(
                f,
                "the checkpoint store {} lies inside the workspace, so checkpoints are off; \
                 set MC_HOME to a folder outside it",
                dir.display()
            ),
            NotRecorded::OverLimit { files, bytes } => write!(
                f,
                "{files} changed files ({bytes} bytes) are over the checkpoint bounds \
                 ({CHECKPOINT_SNAPSHOT_FILES} files, {CHECKPOINT_SNAPSHOT_BYTES} bytes); add \
                 what should not be recorded to .gitignore"
            ),
            NotRecorded::Cancelled => f.write_str("the turn was cancelled"),
            NotRecorded::Off => {
                f.write_str("checkpoints are off in the settings ([checkpoints] enabled = false)")
            }
            NotRecorded::Failed(why) => f.write_str(why),
        }
    }
}

impl NotRecorded {
    fn from_git(e: GitError) -> NotRecorded {
        match e {
            GitError::Missing => NotRecorded::GitMissing,
            GitError::Cancelled => NotRecorded::Cancelled,
            other => NotRecorded::Failed(format!("the checkpoint store failed: {other}")),
        }
    }
}

/// A snapshot taken: its tree, and a notice when the store had to be rebuilt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// The tree object's ID.
    pub tree: String,
    /// Set when the store was damaged and rebuilt first.
    pub rebuilt: Option<String>,
}

/// One change between two snapshots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeChange {
    /// `A` (only in the second), `D` (only in the first), `M` or `T` (in both).
    pub status: u8,
    /// The path relative to the workspace, as git gave its bytes.
    pub path: Vec<u8>,
}

/// The checkpoint store of one workspace.
#[derive(Debug, Clone)]
pub struct Store {
    pub(super) dir: PathBuf,
    cwd: PathBuf,
    pub(super) settings: CheckpointSettings,
}

impl Store {
    /// The store of the workspace `cwd` under `home`, as the default settings have
    /// it. Nothing is touched on disk.
    pub fn of(home: &Home, cwd: &Path) -> Store {
        Store {
            dir: home.checkpoints_dir(cwd),
            cwd: cwd.to_owned(),
            settings: CheckpointSettings::default(),
        }
    }

    /// The store as `settings` (`[checkpoints]`) have it.
    pub fn configured(self, settings: CheckpointSettings) -> Store {
        Store { settings, ..self }
    }

    /// Where the store is.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The workspace it records.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// Whether the store records turns: the settings must let it, `git` must be there
    /// and the store outside the workspace.
    pub fn state(&self) -> CheckpointStore {
        if !self.settings.enabled {
            return CheckpointStore::Off;
        }
        if self.usable().is_err() {
            return CheckpointStore::Unavailable;
        }
        match self.git(&|| false).run(&["--version"], None) {
            Ok(_) => CheckpointStore::Ready,
            Err(GitError::Missing) => CheckpointStore::GitMissing,
            Err(_) => CheckpointStore::Unavailable,
        }
    }

    /// Whether the store may be used: the settings must let it, and it must lie outside
    /// the workspace.
    pub fn usable(&self) -> Result<(), NotRecorded> {
        if !self.settings.enabled {
            return Err(NotRecorded::Off);
        }
        if self.dir.starts_with(&self.cwd) {
            return Err(NotRecorded::InsideWorkspace(self.dir.clone()));
        }
        Ok(())
    }

    pub(super) fn git<'a>(&'a self, cancelled: &'a (dyn Fn() -> bool + Sync)) -> Git<'a> {
        Git {
            git_dir: &self.dir,
            work_tree: &self.cwd,
            index: None,
            cancelled,
        }
    }

    /// Takes a snapshot of the workspace and keeps it as the `phase` of `turn_id`.
    pub fn record(
        &self,
        turn_id: &str,
        phase: Phase,
        cancelled: &(dyn Fn() -> bool + Sync),
    ) -> Result<Snapshot, NotRecorded> {
        self.usable()?;
        // One hold of the lock from the tree to its ref: a prune in between would find
        // the tree unreferenced.
        let _lock = self.lock()?;
        let snapshot = self.snapshot_locked(cancelled)?;
        self.write_ref(turn_id, phase, &snapshot.tree)?;
        Ok(snapshot)
    }

    /// Keeps `tree`, a snapshot already taken, as the `phase` of `turn_id` too: the end
    /// of a turn that changed nothing is its start.
    pub fn record_tree(&self, turn_id: &str, phase: Phase, tree: &str) -> Result<(), NotRecorded> {
        self.usable()?;
        let _lock = self.lock()?;
        self.write_ref(turn_id, phase, tree)
    }

    /// Takes a snapshot of the workspace as it is now, the store rebuilt first when
    /// git cannot read it.
    pub fn snapshot(&self, cancelled: &(dyn Fn() -> bool + Sync)) -> Result<Snapshot, NotRecorded> {
        self.usable()?;
        let _lock = self.lock()?;
        self.snapshot_locked(cancelled)
    }

    /// [`Store::snapshot`], with the store's lock held.
    fn snapshot_locked(
        &self,
        cancelled: &(dyn Fn() -> bool + Sync),
    ) -> Result<Snapshot, NotRecorded> {
        let mut rebuilt = None;
        if !self.dir.join("HEAD").is_file() {
            self.init(cancelled)?;
        }
        let tree = match self.tree_now(cancelled) {
            Ok(tree) => tree,
            Err(Broken::Not(why)) => return Err(why),
            Err(Broken::Store(first)) => {
                // The index is derived data: without it the next snapshot reads every
                // file again, and nothing recorded is lost.
                let _ = std::fs::remove_file(self.dir.join("index"));
                match self.tree_now(cancelled) {
                    Ok(tree) => tree,
                    Err(Broken::Not(why)) => return Err(why),
                    Err(Broken::Store(_)) => {
                        std::fs::remove_dir_all(&self.dir).map_err(|e| {
                            NotRecorded::Failed(format!(
                                "the checkpoint store {} is damaged ({first}) and cannot be \
                                 removed: {e}",
                                self.dir.display()
                            ))
                        })?;
                        self.init(cancelled)?;
                        rebuilt = Some(format!(
                            "The checkpoint store {} was damaged ({first}) and was rebuilt: \
                             the checkpoints recorded before are gone.",
                            self.dir.display()
                        ));
                        self.tree_now(cancelled).map_err(|b| match b {
                            Broken::Not(why) => why,
                            Broken::Store(e) => NotRecorded::Failed(format!(
                                "the rebuilt checkpoint store failed: {e}"
                            )),
                        })?
                    }
                }
            }
        };
        Ok(Snapshot { tree, rebuilt })
    }

    /// The tree the `phase` of `turn_id` recorded, if the store has it: its ref's
    /// file, read directly (the store never packs its refs).
    pub fn tree_of(&self, turn_id: &str, phase: Phase) -> Option<String> {
        let path = self.dir.join(REFS).join(turn_id).join(phase.name());
        let text = std::fs::read_to_string(path).ok()?;
        let tree = text.trim();
        (tree.len() == 40 && tree.bytes().all(|b| b.is_ascii_hexdigit())).then(|| tree.to_owned())
    }

    /// The turns whose start the store holds: the refs' files, read directly (the
    /// store never packs its refs).
    pub fn recorded_turns(&self) -> HashSet<String> {
        if self.usable().is_err() || !self.dir.join("HEAD").is_file() {
            return HashSet::new();
        }
        let Ok(entries) = std::fs::read_dir(self.dir.join(REFS)) else {
            return HashSet::new();
        };
        entries
            .filter_map(Result::ok)
            .filter(|e| e.path().join(Phase::Start.name()).is_file())
            .filter_map(|e| e.file_name().into_string().ok())
            .collect()
    }

    /// Points the `phase` ref of `turn_id` at `tree`: a loose ref file written whole
    /// (a temporary file renamed), which saves a `git update-ref` on every snapshot.
    fn write_ref(&self, turn_id: &str, phase: Phase, tree: &str) -> Result<(), NotRecorded> {
        let folder = self.dir.join(REFS).join(turn_id);
        let failed = |e: std::io::Error| {
            NotRecorded::Failed(format!(
                "the checkpoint store {} cannot be written: {e}",
                self.dir.display()
            ))
        };
        std::fs::create_dir_all(&folder).map_err(failed)?;
        let temporary = folder.join(format!("{}.lock", phase.name()));
        std::fs::write(&temporary, format!("{tree}\n")).map_err(failed)?;
        std::fs::rename(&temporary, folder.join(phase.name())).map_err(failed)
    }

    /// The changes that turn tree `from` into tree `to`.
    pub fn diff(
        &self,
        from: &str,
        to: &str,
        cancelled: &(dyn Fn() -> bool + Sync),
    ) -> Result<Vec<TreeChange>, NotRecorded> {
        let out = self
            .git(cancelled)
            .run(
                &[
                    "diff-tree",
                    "-r",
                    "-z",
                    "--no-renames",
                    "--name-status",
                    from,
                    to,
                ],
                None,
            )
            .map_err(NotRecorded::from_git)?;
        let mut fields = out.split(|b| *b == 0).filter(|f| !f.is_empty());
        let mut changes = Vec::new();
        while let (Some(status), Some(path)) = (fields.next(), fields.next()) {
            changes.push(TreeChange {
                status: status.first().copied().unwrap_or(b'M'),
                path: path.to_vec(),
            });
        }
        Ok(changes)
    }

    /// Writes the files `paths` of tree `tree` into the workspace, through an index
    /// of its own so the store's is left as it was.
    pub fn check_out(
        &self,
        tree: &str,
        paths: &[&[u8]],
        cancelled: &(dyn Fn() -> bool + Sync),
    ) -> Result<(), NotRecorded> {
        if paths.is_empty() {
            return Ok(());
        }
        let _lock = self.lock()?;
        let index = self.dir.join("restore-index");
        let git = Git {
            index: Some(index.clone()),
            ..self.git(cancelled)
        };
        let result = git
            .run(&["read-tree", tree], None)
            .and_then(|_| {
                git.run(
                    &["checkout-index", "-f", "-z", "--stdin"],
                    Some(nul_list(paths)),
                )
            })
            .map(drop)
            .map_err(NotRecorded::from_git);
        let _ = std::fs::remove_file(index);
        result
    }

    /// Creates the repository: no work tree of its own (each command names the
    /// workspace), no automatic garbage collection (trees are kept by refs and by
    /// nothing else while a restore runs), nothing of the person's settings.
    fn init(&self, cancelled: &(dyn Fn() -> bool + Sync)) -> Result<(), NotRecorded> {
        std::fs::create_dir_all(&self.dir).map_err(|e| {
            NotRecorded::Failed(format!(
                "the checkpoint store {} cannot be created: {e}",
                self.dir.display()
            ))
        })?;
        let git = self.git(cancelled);
        git.init()
            .and_then(|_| git.run(&["config", "core.bare", "false"], None))
            .and_then(|_| git.run(&["config", "gc.auto", "0"], None))
            .and_then(|_| git.run(&["config", "core.autocrlf", "false"], None))
            .map(drop)
            .map_err(NotRecorded::from_git)
    }

    /// Brings the index up to date with the workspace and writes it as a tree.
    fn tree_now(&self, cancelled: &(dyn Fn() -> bool + Sync)) -> Result<String, Broken> {
        let git = self.git(cancelled);
        self.copy_excludes();
        let listed = git
            .run(
                &[
                    "ls-files",
                    "-z",
                    "--modified",
                    "--deleted",
                    "--others",
                    "--exclude-standard",
                ],
                None,
            )
            .map_err(Broken::of)?;
        let mut seen = HashSet::new();
        let mut paths: Vec<&[u8]> = Vec::new();
        let mut bytes = 0_u64;
        for path in listed.split(|b| *b == 0) {
            // A folder with a repository of its own is listed with a final slash: its
            // files are that repository's, not the workspace's.
            if path.is_empty() || path.ends_with(b"/") || !seen.insert(path) {
                continue;
            }
            let full = self.cwd.join(std::ffi::OsStr::from_bytes(path));
            match std::fs::symlink_metadata(&full) {
                Ok(meta) if meta.is_file() => bytes += meta.len(),
                Ok(meta) if meta.file_type().is_symlink() => {}
                // Sockets, pipes and devices are not files a snapshot keeps.
                Ok(_) => continue,
                // Gone: the index lets go of it.
                Err(_) => {}
            }
            paths.push(path);
        }
        if paths.len() > CHECKPOINT_SNAPSHOT_FILES || bytes > CHECKPOINT_SNAPSHOT_BYTES {
            return Err(Broken::Not(NotRecorded::OverLimit {
                files: paths.len(),
                bytes,
            }));
        }
        if paths.is_empty()
            && let Some(tree) = self.unchanged_tree()
        {
            return Ok(tree);
        }
        if !paths.is_empty() {
            git.run(
                &["update-index", "--add", "--remove", "-z", "--stdin"],
                Some(nul_list(&paths)),
            )
            .map_err(Broken::of)?;
        }
        let out = git.run(&["write-tree"], None).map_err(Broken::of)?;
        let tree = String::from_utf8_lossy(&out).trim().to_owned();
        if let Some(stamp) = self.index_stamp() {
            let _ = std::fs::write(self.dir.join(LAST_TREE), format!("{stamp} {tree}"));
        }
        Ok(tree)
    }

    /// The tree the index was last written as, when the index is the same file as
    /// then (git replaces it whole on every write, so its inode, size and times
    /// change): with nothing changed in the workspace, that is the snapshot, and no
    /// `git write-tree` is started.
    fn unchanged_tree(&self) -> Option<String> {
        let stamp = self.index_stamp()?;
        let saved = std::fs::read_to_string(self.dir.join(LAST_TREE)).ok()?;
        let tree = saved.strip_prefix(&stamp)?.strip_prefix(' ')?;
        (tree.len() == 40 && tree.bytes().all(|b| b.is_ascii_hexdigit())).then(|| tree.to_owned())
    }

    /// What identifies the index file as written: inode, size, modification time.
    fn index_stamp(&self) -> Option<String> {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(self.dir.join("index")).ok()?;
        Some(format!(
            "{}:{}:{}.{}",
            meta.ino(),
            meta.size(),
            meta.mtime(),
            meta.mtime_nsec()
        ))
    }

    /// The workspace repository's own exclusions (`.git/info/exclude`) hold for the
    /// store too, when the workspace is that repository's root.
    fn copy_excludes(&self) {
        let source = self.cwd.join(".git/info/exclude");
        let target = self.dir.join("info/exclude");
        if let Ok(bytes) = std::fs::read(&source)
            && bytes.len() <= 1 << 20
            && std::fs::read(&target).ok().as_deref() != Some(&bytes[..])
        {
            let _ = std::fs::create_dir_all(self.dir.join("info"));
            let _ = std::fs::write(&target, bytes);
        }
    }

    /// Takes the store's lock, waiting at most [`CHECKPOINT_GIT_MS`] for another
    /// backend of the workspace to finish with it.
    pub(super) fn lock(&self) -> Result<nix::fcntl::Flock<File>, NotRecorded> {
        let parent = self.dir.parent().unwrap_or(&self.dir);
        std::fs::create_dir_all(parent)
            .map_err(|e| NotRecorded::Failed(format!("cannot create {}: {e}", parent.display())))?;
        let path = self.dir.with_extension("lock");
        let start = Instant::now();
        let mut file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| NotRecorded::Failed(format!("cannot open {}: {e}", path.display())))?;
        loop {
            match nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock) {
                Ok(lock) => return Ok(lock),
                Err((back, _)) => file = back,
            }
            if start.elapsed() >= Duration::from_millis(CHECKPOINT_GIT_MS) {
                return Err(NotRecorded::Failed(format!(
                    "the checkpoint store {} stayed busy for {CHECKPOINT_GIT_MS} ms",
                    self.dir.display()
                )));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// Why a snapshot failed: the store is unreadable (rebuild it), or not (say why).
enum Broken {
    Store(String),
    Not(NotRecorded),
}

impl Broken {
    fn of(e: GitError) -> Broken {
        match e {
            // git's own failures under the store's lock are a store it cannot read.
            GitError::Failed(..) => Broken::Store(e.to_string()),
            other => Broken::Not(NotRecorded::from_git(other)),
        }
    }
}

/// The file saying which tree the index was last written as (`Store::unchanged_tree`).
const LAST_TREE: &str = "magi-last-tree";
/// Where the turns' refs are, under the store.
pub(super) const REFS: &str = "refs/magi";

/// Paths for a `-z --stdin` command: each followed by a NUL.
fn nul_list(paths: &[&[u8]]) -> Vec<u8> {
    let mut list = Vec::with_capacity(paths.iter().map(|p| p.len() + 1).sum());
    for path in paths {
        list.extend_from_slice(path);
        list.push(0);
    }
    list
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A workspace and a home beside it, or `None` on a machine without git.
    fn setup() -> Option<(tempfile::TempDir, Store)> {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().join("work");
        std::fs::create_dir(&work).unwrap();
        let home = Home::prepare(&dir.path().join("home")).unwrap();
        let store = Store::of(&home, &work.canonicalize().unwrap());
        (store.state() == CheckpointStore::Ready).then_some((dir, store))
    }

    #[test]
    fn ignored_files_and_nested_repositories_are_left_out_and_the_persons_git_untouched() {
        let Some((dir, store)) = setup() else {
            return;
        };
        let work = store.cwd().to_owned();
        std::fs::write(work.join(".gitignore"), "build/\n").unwrap();
        std::fs::create_dir_all(work.join("build")).unwrap();
        std::fs::write(work.join("build/out.o"), "object").unwrap();
        std::fs::write(work.join("src.txt"), "one").unwrap();
        std::fs::create_dir_all(work.join("nested/.git")).unwrap();
        std::fs::write(work.join("nested/inner.txt"), "inner").unwrap();
        let first = store.record("t1", Phase::Start, &|| false).unwrap();
        assert!(first.rebuilt.is_none());
        std::fs::write(work.join("build/out.o"), "changed object").unwrap();
        std::fs::write(work.join("src.txt"), "two").unwrap();
        let now = store.snapshot(&|| false).unwrap();
        // Nothing changed since: the same tree, without writing it again.
        assert_eq!(store.snapshot(&|| false).unwrap().tree, now.tree);
        let changes = store.diff(&now.tree, &first.tree, &|| false).unwrap();
        let paths: Vec<&[u8]> = changes.iter().map(|c| c.path.as_slice()).collect();
        assert_eq!(paths, [b"src.txt".as_slice()]);
        // The store is apart: nothing was written in the workspace's own `.git`s.
        assert!(!work.join(".git").exists());
        assert_eq!(
            std::fs::read_dir(work.join("nested/.git")).unwrap().count(),
            0
        );
        assert!(store.dir().starts_with(dir.path().join("home")));
        assert_eq!(store.tree_of("t1", Phase::Start), Some(first.tree));
        assert_eq!(store.tree_of("t1", Phase::End), None);
        assert!(store.recorded_turns().contains("t1"));
    }

    #[test]
    fn a_store_inside_the_workspace_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::prepare(&dir.path().join("home")).unwrap();
        let store = Store::of(&home, &dir.path().canonicalize().unwrap());
        assert_eq!(store.state(), CheckpointStore::Unavailable);
        assert!(matches!(
            store.record("t1", Phase::Start, &|| false),
            Err(NotRecorded::InsideWorkspace(_))
        ));
    }

    #[test]
    fn a_cancelled_snapshot_says_so() {
        let Some((_dir, store)) = setup() else {
            return;
        };
        std::fs::write(store.cwd().join("a.txt"), "a").unwrap();
        assert_eq!(
            store.record("t1", Phase::Start, &|| true),
            Err(NotRecorded::Cancelled)
        );
    }
}
