//! Images a prompt mentions (`@shots/screen.png`), given with it to the model through
//! `input.attachments`: the paths are sent, the backend reads the files. A pasted path
//! of an image (what a terminal pastes when a file is dropped on it) becomes such a
//! mention.

use std::path::{Path, PathBuf};

use magi_protocol::limits::TURN_ATTACHMENTS;

/// The file name endings of the images `view_image` takes.
const IMAGE_ENDINGS: [&str; 5] = [".png", ".jpg", ".jpeg", ".gif", ".webp"];

/// Whether `path` names an image by its ending (`view_image` checks the bytes later).
fn is_image_name(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    IMAGE_ENDINGS
        .iter()
        .any(|e| lower.ends_with(e) && lower != *e)
}

/// What a paste of image files becomes: `None` when the paste is not only paths of
/// existing image files (it goes in as text); else the `@` mentions that attach them,
/// or why they cannot be attached (the paste then goes in as text, with that notice).
///
/// A paste is split as a shell would split it, which takes the forms terminals give a
/// dropped file: a plain path, a quoted one, one with its spaces escaped.
pub(super) fn pasted_images(paste: &str, cwd: &Path) -> Option<Result<String, String>> {
    let paths = shlex::split(paste.trim())?;
    let exists = |path: &String| is_image_name(path) && cwd.join(path).is_file();
    if paths.is_empty() || !paths.iter().all(exists) {
        return None;
    }
    let mut mentions = Vec::with_capacity(paths.len());
    for path in &paths {
        match workspace_relative(Path::new(path), cwd) {
            Some(relative) if !relative.contains(char::is_whitespace) => {
                mentions.push(format!("@{relative}"));
            }
            Some(_) => {
                return Some(Err(format!(
                    "{path} is not attached: a mention cannot hold the space in its name; \
                     rename it or mention it as @name"
                )));
            }
            None => {
                return Some(Err(format!(
                    "{path} is not attached: only images inside the workspace {} can be",
                    cwd.display()
                )));
            }
        }
    }
    Some(Ok(mentions.join(" ")))
}

/// `path` (absolute, or relative to `cwd`) as a path relative to the workspace `cwd`,
/// or `None` when it lies outside it.
fn workspace_relative(path: &Path, cwd: &Path) -> Option<String> {
    let root = cwd.canonicalize().ok()?;
    let full: PathBuf = cwd.join(path).canonicalize().ok()?;
    let relative = full.strip_prefix(&root).ok()?;
    relative.to_str().map(str::to_owned)
}

/// The image paths `prompt` mentions with `@`, in order, each once.
pub(super) fn image_mentions(prompt: &str) -> Vec<String> {
    let mut paths: Vec<String> = Vec::new();
    for word in prompt.split_whitespace() {
        let Some(path) = word.strip_prefix('@') else {
            continue;
        };
        if is_image_name(path) && !paths.iter().any(|p| p == path) {
            paths.push(path.to_owned());
        }
    }
    paths
}

/// The images to send with `prompt`, checked as the backend will check them; the
/// error says which one cannot be sent and why, or that there are too many.
pub(super) fn attachments(prompt: &str, cwd: &Path) -> Result<Option<Vec<String>>, String> {
    let paths = image_mentions(prompt);
    if paths.len() > TURN_ATTACHMENTS {
        return Err(format!(
            "{} images mentioned; a prompt takes at most {TURN_ATTACHMENTS}",
            paths.len()
        ));
    }
    for path in &paths {
        magi_tools::check_attachment(cwd, path)?;
    }
    Ok((!paths.is_empty()).then_some(paths))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_mentioned_images_count_each_once() {
        let prompt = "see @shots/a.PNG and @src/main.rs, @b.webp @shots/a.PNG a.gif @.png";
        assert_eq!(image_mentions(prompt), ["shots/a.PNG", "b.webp"]);
        assert!(image_mentions("no mentions here").is_empty());
    }

    #[test]
    fn a_mentioned_image_that_is_not_one_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("fake.png"), "text").unwrap();
        let refused = attachments("look at @fake.png", dir.path()).unwrap_err();
        assert!(refused.contains("fake.png is not a PNG"), "{refused}");
        assert_eq!(attachments("plain", dir.path()), Ok(None));
    }

    #[test]
    fn a_pasted_image_path_becomes_a_mention_in_each_form_terminals_paste() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path();
        std::fs::create_dir(cwd.join("shots")).unwrap();
        for name in ["shots/a.png", "b.JPG", "with space.png"] {
            std::fs::write(cwd.join(name), "bytes").unwrap();
        }
        let absolute = cwd.canonicalize().unwrap().join("shots/a.png");
        let absolute = absolute.to_str().unwrap();
        let mention = |paste: &str| pasted_images(paste, cwd);
        assert_eq!(mention(absolute), Some(Ok("@shots/a.png".into())));
        assert_eq!(
            mention(&format!("'{absolute}' ")),
            Some(Ok("@shots/a.png".into()))
        );
        assert_eq!(
            mention("shots/a.png \"b.JPG\""),
            Some(Ok("@shots/a.png @b.JPG".into()))
        );
        // Text, a missing file, a file that is not named as an image: plain text.
        assert_eq!(mention("look at shots/a.png"), None);
        assert_eq!(mention("missing.png"), None);
        assert_eq!(mention("shots"), None);
        assert_eq!(mention("'unclosed"), None);
        assert_eq!(mention(""), None);
        let spaced = mention("with\\ space.png").unwrap().unwrap_err();
        assert!(
            spaced.contains("with space.png is not attached"),
            "{spaced}"
        );
    }

    #[test]
    fn a_pasted_image_outside_the_workspace_is_not_attached_and_says_why() {
        let outside = tempfile::tempdir().unwrap();
        let image = outside.path().join("far.png");
        std::fs::write(&image, "bytes").unwrap();
        let workspace = tempfile::tempdir().unwrap();
        let refused = pasted_images(image.to_str().unwrap(), workspace.path())
            .unwrap()
            .unwrap_err();
        assert!(
            refused.contains("only images inside the workspace"),
            "{refused}"
        );
    }
}
