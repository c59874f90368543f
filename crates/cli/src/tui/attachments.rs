//! Images a prompt mentions (`@shots/screen.png`), given with it to the model through
//! `input.attachments`: the paths are sent, the backend reads the files.

use std::path::Path;

use magi_protocol::limits::TURN_ATTACHMENTS;

/// The file name endings of the images `view_image` takes.
const IMAGE_ENDINGS: [&str; 5] = [".png", ".jpg", ".jpeg", ".gif", ".webp"];

/// The image paths `prompt` mentions with `@`, in order, each once.
pub(super) fn image_mentions(prompt: &str) -> Vec<String> {
    let mut paths: Vec<String> = Vec::new();
    for word in prompt.split_whitespace() {
        let Some(path) = word.strip_prefix('@') else {
            continue;
        };
        let lower = path.to_ascii_lowercase();
        let image = IMAGE_ENDINGS
            .iter()
            .any(|e| lower.ends_with(e) && lower != *e);
        if image && !paths.iter().any(|p| p == path) {
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
}
