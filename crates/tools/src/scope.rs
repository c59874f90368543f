//! What a call acts on, as the permission policy sees it: its subject (the command,
//! path or URL a rule's pattern is matched against) and whether a path reaches outside
//! the working directory once symbolic links are followed.

use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use crate::{BuiltinTool, SubjectArgument};

/// The subject argument of tool `name`; nothing for a name that is not a built-in.
fn subject_argument(name: &str) -> SubjectArgument {
    BuiltinTool::from_name(name).map_or(SubjectArgument::Nothing, BuiltinTool::subject)
}

/// For a tool whose `path` argument names what it acts on, the path it uses when none
/// is given.
fn path_tool_default(name: &str) -> Option<Option<&'static str>> {
    match subject_argument(name) {
        SubjectArgument::Path { default } => Some(default),
        SubjectArgument::Command | SubjectArgument::Url | SubjectArgument::Nothing => None,
    }
}

/// The subject of a call of `name` with `arguments` (JSON text): the command line of
/// `bash` and `async_bash`, the URL of `web_fetch`, and for the file tools the path
/// relative to `cwd` when it is inside it, else the resolved absolute path. None when
/// the tool has no subject or the arguments do not name one.
pub fn subject(name: &str, arguments: &str, cwd: &Path) -> Option<String> {
    let arguments: Value = serde_json::from_str(arguments).ok()?;
    let field = |key: &str| arguments.get(key).and_then(Value::as_str);
    match subject_argument(name) {
        SubjectArgument::Command => field("command").map(str::to_owned),
        SubjectArgument::Url => field("url").map(str::to_owned),
        SubjectArgument::Nothing => None,
        SubjectArgument::Path { default } => {
            let given = field("path").or(default)?;
            let resolved = resolve(cwd, given);
            Some(match resolved.strip_prefix(cwd) {
                Ok(inside) if inside.as_os_str().is_empty() => ".".to_owned(),
                Ok(inside) => inside.to_string_lossy().into_owned(),
                Err(_) => resolved.to_string_lossy().into_owned(),
            })
        }
    }
}

/// Whether a file tool's path resolves outside `cwd` (a canonical directory): an
/// absolute path elsewhere, `..` past the root of the workspace, or a symbolic link
/// inside it that points out. Calls of other tools, and arguments without a path
/// (the tool refuses them), are not outside.
pub fn outside_workspace(name: &str, arguments: &str, cwd: &Path) -> bool {
    let Some(default) = path_tool_default(name) else {
        return false;
    };
    let Ok(arguments) = serde_json::from_str::<Value>(arguments) else {
        return false;
    };
    let Some(given) = arguments.get("path").and_then(Value::as_str).or(default) else {
        return false;
    };
    !resolve(cwd, given).starts_with(cwd)
}

/// `given` joined to `cwd`, with every existing ancestor's symbolic links resolved and
/// the rest normalized lexically (`..` removes a component, `.` nothing).
pub(crate) fn resolve(cwd: &Path, given: &str) -> PathBuf {
    let joined = cwd.join(given);
    let mut resolved = PathBuf::new();
    let mut components = joined.components().peekable();
    while let Some(component) = components.next() {
        match component {
            Component::Prefix(_) | Component::RootDir => resolved.push(component),
            Component::CurDir => {}
            Component::ParentDir => {
                resolved.pop();
            }
            Component::Normal(name) => {
                resolved.push(name);
                // Follow a link where it exists, so a link inside the workspace that
                // points out is seen for what it is; past the first missing component
                // nothing exists to follow.
                match resolved.canonicalize() {
                    Ok(real) => resolved = real,
                    Err(_) => {
                        for rest in components.by_ref() {
                            match rest {
                                Component::ParentDir => {
                                    resolved.pop();
                                }
                                Component::Normal(name) => resolved.push(name),
                                _ => {}
                            }
                        }
                    }
                }
            }
        }
    }
    resolved
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_name_commands_urls_and_workspace_paths() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().canonicalize().unwrap();
        std::fs::create_dir(cwd.join("src")).unwrap();
        let s = |name, args| subject(name, args, &cwd);
        assert_eq!(
            s("bash", r#"{"command":"ls -l"}"#).as_deref(),
            Some("ls -l")
        );
        assert_eq!(
            s("web_fetch", r#"{"url":"https://x.test/"}"#).as_deref(),
            Some("https://x.test/")
        );
        assert_eq!(
            s("read", r#"{"path":"src/../src/a.rs"}"#).as_deref(),
            Some("src/a.rs")
        );
        assert_eq!(s("grep", r#"{"pattern":"x"}"#).as_deref(), Some("."));
        assert_eq!(
            s("read", r#"{"path":"/etc/hosts"}"#).as_deref(),
            Some("/etc/hosts")
        );
        assert_eq!(s("bash_log", r#"{"job_id":"j1"}"#), None);
        assert_eq!(s("read", "not json"), None);
    }

    #[test]
    fn escapes_through_dotdot_absolute_paths_and_links_are_outside() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().join("work");
        std::fs::create_dir(&cwd).unwrap();
        let cwd = cwd.canonicalize().unwrap();
        std::fs::write(dir.path().join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(dir.path(), cwd.join("up")).unwrap();
        let out = |name, path: &str| {
            outside_workspace(name, &serde_json::json!({ "path": path }).to_string(), &cwd)
        };
        assert!(!out("read", "a.txt"));
        assert!(!out("write", "new/dir/file.txt"));
        assert!(!out("read", "src/../a.txt"));
        assert!(out("read", "../secret"));
        assert!(out("write", "/tmp/x"));
        assert!(out("read", "up/secret"));
        assert!(out("write", "up/new-file"));
        assert!(!out("bash", "/etc"));
        assert!(!outside_workspace("list", "{}", &cwd));
    }
}
