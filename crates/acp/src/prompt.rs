//! An ACP prompt as the runtime's input: text as it is, resource links as references
//! the model can open with its tools, embedded text resources inline, images as
//! attachments (written into the session's folder for the turn, since the runtime takes
//! workspace paths, and removed when it ends).

use std::path::{Path, PathBuf};

use agent_client_protocol_schema::v1::{ContentBlock, EmbeddedResourceResource, Error};
use base64::Engine;
use magi_protocol::limits::{PROMPT_BYTES, TURN_ATTACHMENTS};
use serde_json::json;

/// Where a prompt's images are written, relative to the session's folder.
pub(crate) const IMAGE_FOLDER: &str = ".magi-code/acp-images";

/// The runtime's input for one turn.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct TurnInput {
    /// The prompt text.
    pub(crate) text: String,
    /// Images: the file extension and the bytes.
    pub(crate) images: Vec<(&'static str, Vec<u8>)>,
}

fn refuse(why: String) -> Error {
    Error::invalid_params().data(json!(why))
}

/// The file extension of an image type the runtime takes.
fn image_extension(mime: &str) -> Option<&'static str> {
    match mime {
        "image/png" => Some("png"),
        "image/jpeg" | "image/jpg" => Some("jpg"),
        "image/gif" => Some("gif"),
        "image/webp" => Some("webp"),
        _ => None,
    }
}

impl TurnInput {
    /// Translates a prompt's content blocks, or says which one cannot be taken.
    pub(crate) fn from_blocks(blocks: Vec<ContentBlock>) -> Result<TurnInput, Error> {
        let mut text = String::new();
        let mut images = Vec::new();
        let mut add_image = |mime: &str, data: &str| -> Result<(), Error> {
            let extension = image_extension(mime).ok_or_else(|| {
                refuse(format!(
                    "an image of type {mime} cannot be taken; send PNG, JPEG, GIF or WebP"
                ))
            })?;
            if images.len() >= TURN_ATTACHMENTS {
                return Err(refuse(format!(
                    "a prompt takes at most {TURN_ATTACHMENTS} images"
                )));
            }
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(data.trim())
                .map_err(|e| refuse(format!("an image's data is not base64: {e}")))?;
            images.push((extension, bytes));
            Ok(())
        };
        for block in blocks {
            match block {
                ContentBlock::Text(t) => text.push_str(&t.text),
                ContentBlock::Image(image) => add_image(&image.mime_type, &image.data)?,
                ContentBlock::ResourceLink(link) => {
                    let target = link.uri.strip_prefix("file://").unwrap_or(&link.uri);
                    text.push_str(&format!("\n[{}]({target})\n", link.name));
                }
                ContentBlock::Resource(resource) => match resource.resource {
                    EmbeddedResourceResource::TextResourceContents(file) => {
                        let uri = file.uri.strip_prefix("file://").unwrap_or(&file.uri);
                        text.push_str(&format!(
                            "\n<resource uri=\"{uri}\">\n{}\n</resource>\n",
                            file.text
                        ));
                    }
                    EmbeddedResourceResource::BlobResourceContents(blob) => {
                        match blob.mime_type.as_deref() {
                            Some(mime) if mime.starts_with("image/") => {
                                add_image(mime, &blob.blob)?;
                            }
                            _ => {
                                return Err(refuse(format!(
                                    "the binary resource {} cannot be taken; only images and \
                                     text resources can",
                                    blob.uri
                                )));
                            }
                        }
                    }
                    _ => return Err(refuse("an embedded resource of an unknown kind".into())),
                },
                ContentBlock::Audio(_) => {
                    return Err(refuse(
                        "audio cannot be taken (promptCapabilities.audio is false)".into(),
                    ));
                }
                _ => return Err(refuse("a content block of an unknown kind".into())),
            }
        }
        if text.trim().is_empty() {
            if images.is_empty() {
                return Err(refuse("the prompt is empty".into()));
            }
            text = "See the attached image.".to_owned();
        }
        if text.len() > PROMPT_BYTES {
            return Err(refuse(format!(
                "the prompt is {} bytes with its embedded resources; magi-code takes at most \
                 {PROMPT_BYTES} bytes per prompt: link large files (resource links) instead of \
                 embedding them",
                text.len()
            )));
        }
        Ok(TurnInput { text, images })
    }

    /// Writes the images into `cwd`'s [`IMAGE_FOLDER`]: their workspace paths for
    /// `turn.start` and the files to remove when the turn ends.
    pub(crate) fn write_images(
        &self,
        cwd: &Path,
    ) -> Result<(Option<Vec<String>>, Vec<PathBuf>), String> {
        if self.images.is_empty() {
            return Ok((None, Vec::new()));
        }
        let folder = cwd.join(IMAGE_FOLDER);
        std::fs::create_dir_all(&folder)
            .map_err(|e| format!("cannot create {}: {e}", folder.display()))?;
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let mut paths = Vec::new();
        let mut files = Vec::new();
        for (n, (extension, bytes)) in self.images.iter().enumerate() {
            let name = format!("{}-{stamp}-{n}.{extension}", std::process::id());
            let file = folder.join(&name);
            if let Err(e) = std::fs::write(&file, bytes) {
                for written in &files {
                    let _ = std::fs::remove_file(written);
                }
                return Err(format!("cannot write {}: {e}", file.display()));
            }
            files.push(file);
            paths.push(format!("{IMAGE_FOLDER}/{name}"));
        }
        Ok((Some(paths), files))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use agent_client_protocol_schema::v1::{
        EmbeddedResource, ImageContent, ResourceLink, TextResourceContents,
    };

    use super::*;

    #[test]
    fn text_links_and_embedded_files_make_one_prompt() {
        let blocks = vec![
            ContentBlock::from("Explain"),
            ContentBlock::ResourceLink(ResourceLink::new("main.rs", "file:///w/src/main.rs")),
            ContentBlock::Resource(EmbeddedResource::new(
                EmbeddedResourceResource::TextResourceContents(TextResourceContents::new(
                    "fn main() {}",
                    "file:///w/lib.rs",
                )),
            )),
        ];
        let input = TurnInput::from_blocks(blocks).unwrap();
        assert_eq!(
            input.text,
            "Explain\n[main.rs](/w/src/main.rs)\n\n<resource uri=\"/w/lib.rs\">\nfn main() {}\n</resource>\n"
        );
        assert!(input.images.is_empty());
    }

    #[test]
    fn images_are_decoded_and_bad_ones_refused_with_a_reason() {
        let png = ContentBlock::Image(ImageContent::new("iVBORw0KGgo=", "image/png"));
        let input = TurnInput::from_blocks(vec![png]).unwrap();
        assert_eq!(input.images[0].0, "png");
        assert_eq!(input.text, "See the attached image.");
        let tiff = ContentBlock::Image(ImageContent::new("AAAA", "image/tiff"));
        let error = TurnInput::from_blocks(vec![tiff]).unwrap_err();
        assert!(error.data.unwrap().to_string().contains("image/tiff"));
        let error = TurnInput::from_blocks(vec![ContentBlock::from(" ")]).unwrap_err();
        assert!(error.data.unwrap().to_string().contains("empty"));
        let long = ContentBlock::from("x".repeat(PROMPT_BYTES + 1));
        let error = TurnInput::from_blocks(vec![long]).unwrap_err();
        assert!(error.data.unwrap().to_string().contains("resource links"));
    }
}
