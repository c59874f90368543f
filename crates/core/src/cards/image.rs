//! The blocks of a `view_image` card: the file as a resource, and its format,
//! dimensions and size, with what the model was given. Never the pixels.

use magi_protocol::cards::ResourceAvailability;
use magi_store::records::ToolOutcome;
use magi_tools::facts::SentImage;

use super::blocks::Context;
use super::labels::{ROW_FILE_SIZE, ROW_HEIGHT, ROW_IMAGE_FORMAT, ROW_SENT_TO_MODEL, ROW_WIDTH};
use super::part::{Part, row};
use super::read::file_resource;
use super::text::{Notes, counted};

impl Context<'_, '_> {
    pub(super) fn image(
        &self,
        path: &str,
        format: Option<&str>,
        (width, height): (Option<u32>, Option<u32>),
        bytes: Option<u64>,
        sent: Option<&SentImage>,
    ) -> Vec<Part> {
        // A file that was read but is no image it takes is still there.
        let availability = match self.outcome {
            Some(ToolOutcome::Completed) => ResourceAvailability::Available,
            Some(_) if bytes.is_some() => ResourceAvailability::Available,
            Some(_) => ResourceAvailability::Unavailable,
            None => ResourceAvailability::Unknown,
        };
        let resources = file_resource(path, availability);
        let pixels = |n: u32| counted(u64::from(n), "pixel", "pixels");
        let rows = vec![
            row(ROW_IMAGE_FORMAT, format.map(format_label)),
            row(ROW_WIDTH, width.map(pixels)),
            row(ROW_HEIGHT, height.map(pixels)),
            row(ROW_FILE_SIZE, bytes.map(|n| counted(n, "byte", "bytes"))),
            row(ROW_SENT_TO_MODEL, sent.map(sent_label)),
        ];
        vec![resources, Part::results(rows, Notes::default())]
    }
}

/// A format's name as the card shows it.
fn format_label(format: &str) -> String {
    match format {
        "png" => "PNG",
        "jpeg" => "JPEG",
        "gif" => "GIF",
        "webp" => "WebP",
        _ => "unknown",
    }
    .to_owned()
}

/// What the model was given: `1024 x 768 PNG, 48213 bytes`.
fn sent_label(sent: &SentImage) -> String {
    let format = match sent.media_type.as_str() {
        "image/png" => "PNG",
        "image/jpeg" => "JPEG",
        "image/webp" => "WebP",
        _ => "image",
    };
    format!(
        "{} x {} {format}, {}",
        sent.width,
        sent.height,
        counted(sent.file.bytes, "byte", "bytes")
    )
}
