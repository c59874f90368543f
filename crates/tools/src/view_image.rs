//! `view_image`: a PNG, JPEG, GIF or WebP file, checked and measured by decoding it with
//! the `image` crate, made to fit the bounds every wire format takes, and kept with the
//! call's assets. The backend attaches the kept image to the agent's next model request
//! (and to every later one replayed from the log); the model's text result, the facts
//! and the card only say what the image is, never its bytes.
//!
//! An image within [`VIEW_IMAGE_SIDE_PIXELS`] and [`VIEW_IMAGE_BYTES`] is sent as the
//! file's own bytes. A GIF is always sent as a PNG of its first frame, since OpenAI
//! refuses animated ones. A larger image is downscaled to fit the side bound and encoded
//! as PNG; when that is still over the byte bound, as JPEG, smaller each round until it
//! fits.

use std::io::{Cursor, Read};
use std::path::Path;

use base64::Engine;
use image::codecs::jpeg::JpegEncoder;
use image::imageops::FilterType;
use image::{DynamicImage, ImageFormat, ImageReader, Limits};
use magi_protocol::limits::{
    VIEW_IMAGE_BYTES, VIEW_IMAGE_DECODE_BYTES, VIEW_IMAGE_DECODE_SIDE_PIXELS,
    VIEW_IMAGE_FILE_BYTES, VIEW_IMAGE_SIDE_PIXELS,
};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::facts::{CaptureDigest, FACT_STRING_BYTES, Facts, SentImage, cut};
use crate::{ToolContext, ToolDefinition, ToolOutput, ToolReport};

/// The names a kept image may have in its call's assets directory, one per media type
/// sent; only these are ever read back, so a recorded name cannot reach elsewhere.
pub const IMAGE_ASSET_FILES: [&str; 3] = ["image.png", "image.jpg", "image.webp"];

/// JPEG quality of a downscaled image that is over the byte bound as PNG.
const JPEG_QUALITY: u8 = 85;
/// Rounds of shrinking a JPEG by a quarter before giving up (0.75^12 is under 4 %: far
/// past what any image within the decode bounds needs).
const SHRINK_ROUNDS: usize = 12;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Arguments {
    path: String,
}

pub(crate) fn definition() -> ToolDefinition {
    ToolDefinition {
        name: crate::BuiltinTool::ViewImage.name(),
        description: "Look at an image file: a PNG, JPEG, GIF (its first frame) or WebP. The \
                      image is attached to your next request, downscaled first to at most \
                      2048 pixels on its long side and 3.75 MB. The path is relative to the \
                      working directory.",
        parameters: json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "The image file."}
            },
            "required": ["path"],
            "additionalProperties": false
        }),
    }
}

/// One of the four formats taken, by its name in facts and on the card.
fn format_name(format: ImageFormat) -> Option<&'static str> {
    match format {
        ImageFormat::Png => Some("png"),
        ImageFormat::Jpeg => Some("jpeg"),
        ImageFormat::Gif => Some("gif"),
        ImageFormat::WebP => Some("webp"),
        _ => None,
    }
}

pub(crate) fn run(arguments: &Value, ctx: &ToolContext) -> ToolReport {
    let Ok(args) = Arguments::deserialize(arguments) else {
        return ToolOutput::failed("invalid arguments", "Expected {\"path\": string}.".into())
            .into();
    };
    let mut facts = ImageFacts {
        path: cut(&args.path, FACT_STRING_BYTES),
        ..ImageFacts::default()
    };
    match view(&args.path, ctx, &mut facts) {
        Ok((content, summary)) => ToolReport::with_facts(
            ToolOutput {
                content,
                summary,
                is_error: false,
            },
            facts.into(),
        ),
        Err((summary, content)) => {
            ToolReport::with_facts(ToolOutput::failed(summary, content), facts.into())
        }
    }
}

/// What a call learned, filled in as it goes.
#[derive(Default)]
struct ImageFacts {
    path: String,
    format: Option<&'static str>,
    width: Option<u32>,
    height: Option<u32>,
    bytes: Option<u64>,
    sent: Option<SentImage>,
}

impl From<ImageFacts> for Facts {
    fn from(f: ImageFacts) -> Facts {
        Facts::Image {
            path: f.path,
            format: f.format.map(str::to_owned),
            width: f.width,
            height: f.height,
            bytes: f.bytes,
            sent: f.sent,
        }
    }
}

/// A failure: its summary and what the model is told.
type Failure = (&'static str, String);

/// Checks an image given with a prompt (`input.attachments`) without decoding it, since
/// the check is made where requests are admitted: a regular file inside `cwd`, within
/// the file bound, whose header is one of the four formats with sides within the decode
/// bound. The error says what is wrong. [`keep_attachment`] decodes it later.
pub fn check_attachment(cwd: &Path, given: &str) -> Result<(), String> {
    let path = inside(cwd, given)?;
    let cannot = |e: &dyn std::fmt::Display| format!("Cannot read {given}: {e}.");
    let size = std::fs::metadata(&path).map_err(|e| cannot(&e))?.len();
    if size > VIEW_IMAGE_FILE_BYTES {
        return Err(format!(
            "{given} is {size} bytes, over the {VIEW_IMAGE_FILE_BYTES}-byte bound of an image."
        ));
    }
    // The format by the first bytes alone, as `view_image` takes it, never the name.
    let reader = std::fs::File::open(&path)
        .map(|file| ImageReader::new(std::io::BufReader::new(file)))
        .and_then(ImageReader::with_guessed_format)
        .map_err(|e| cannot(&e))?;
    if reader.format().and_then(format_name).is_none() {
        return Err(format!(
            "{given} is not a PNG, JPEG, GIF or WebP image (its first bytes are none of \
             theirs)."
        ));
    }
    let (width, height) = reader
        .into_dimensions()
        .map_err(|e| format!("{given} could not be read as an image: {e}."))?;
    if width.max(height) > VIEW_IMAGE_DECODE_SIDE_PIXELS {
        return Err(format!(
            "{given} is {width}x{height} pixels, over the {VIEW_IMAGE_DECODE_SIDE_PIXELS}-pixel \
             side bound of an image."
        ));
    }
    Ok(())
}

/// `given` resolved inside `cwd`, links followed: a regular file there, or what is wrong.
fn inside(cwd: &Path, given: &str) -> Result<std::path::PathBuf, String> {
    let outside = || {
        format!(
            "{given} is not a file inside the workspace {}.",
            cwd.display()
        )
    };
    let root = cwd.canonicalize().map_err(|_| outside())?;
    let path = cwd
        .join(given)
        .canonicalize()
        .map_err(|e| format!("Cannot read {given}: {e}."))?;
    if !path.starts_with(&root) || !path.is_file() {
        return Err(outside());
    }
    Ok(path)
}

/// Keeps an image given with a prompt in `dir`, as `view_image` keeps its image, and
/// gives its facts (those of a `view_image` card) for the input's record.
pub fn keep_attachment(cwd: &Path, given: &str, dir: &Path) -> Result<Value, String> {
    let mut facts = ImageFacts {
        path: cut(given, FACT_STRING_BYTES),
        ..ImageFacts::default()
    };
    let (prepared, ..) = load_attachment(cwd, given, &mut facts)?;
    facts.sent = Some(keep(&prepared, dir).map_err(|(_, why)| why)?);
    serde_json::to_value(Facts::from(facts)).map_err(|e| e.to_string())
}

/// An attachment's file: inside `cwd` once links are resolved, then loaded.
fn load_attachment(cwd: &Path, given: &str, facts: &mut ImageFacts) -> Result<Loaded, String> {
    load(given, &inside(cwd, given)?, facts).map_err(|(_, why)| why)
}

/// The image as read, decoded and made to fit: what the model is given, the decoded
/// dimensions and the file's size.
type Loaded = (Prepared, (u32, u32), usize);

/// Reads `path` (named `given` in messages) within the file bound, checks its format,
/// decodes it and makes it fit the bounds the model takes.
fn load(given: &str, path: &Path, facts: &mut ImageFacts) -> Result<Loaded, Failure> {
    let cannot = |e: std::io::Error| ("cannot read the file", format!("Cannot read {given}: {e}."));
    let file = std::fs::File::open(path).map_err(cannot)?;
    let size = file.metadata().map_err(cannot)?.len();
    facts.bytes = Some(size);
    if size > VIEW_IMAGE_FILE_BYTES {
        return Err((
            "image too large",
            format!(
                "{given} is {size} bytes, over the {VIEW_IMAGE_FILE_BYTES}-byte bound of \
                 view_image; make a smaller copy and view that."
            ),
        ));
    }
    let mut bytes = Vec::new();
    file.take(VIEW_IMAGE_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    facts.bytes = Some(bytes.len() as u64);
    let image_format = image::guess_format(&bytes)
        .ok()
        .filter(|f| format_name(*f).is_some())
        .ok_or_else(|| {
            (
                "not an image",
                format!(
                    "{given} is not a PNG, JPEG, GIF or WebP image (its first bytes are none \
                     of theirs)."
                ),
            )
        })?;
    facts.format = format_name(image_format);
    let image = decode(&bytes, image_format).map_err(|why| {
        (
            "cannot decode the image",
            format!("{given} could not be decoded as {image_format:?}: {why}."),
        )
    })?;
    facts.width = Some(image.width());
    facts.height = Some(image.height());
    let prepared = prepare(&bytes, image_format, &image).map_err(|why| {
        (
            "cannot prepare the image",
            format!("{given} could not be made to fit the bounds: {why}."),
        )
    })?;
    Ok((prepared, (image.width(), image.height()), bytes.len()))
}

fn view(
    given: &str,
    ctx: &ToolContext,
    facts: &mut ImageFacts,
) -> Result<(String, String), Failure> {
    let (prepared, (width, height), size) = load(given, &ctx.cwd.join(given), facts)?;
    let Some(dir) = ctx.assets_dir else {
        return Err((
            "nowhere to keep the image",
            "This call has no assets directory to keep the image in, so it cannot be \
             attached."
                .into(),
        ));
    };
    let sent = keep(&prepared, dir)?;
    let format = facts.format.unwrap_or("image").to_uppercase();
    let mut content =
        format!("{given}: {format}, {width}x{height} pixels, {size} bytes. It is attached below.");
    if (sent.width, sent.height) != (width, height) {
        content.push_str(&format!(
            " It was downscaled to {}x{} pixels to fit the bounds.",
            sent.width, sent.height
        ));
    }
    facts.sent = Some(sent);
    Ok((content, format!("{format} {width}x{height}")))
}

/// Writes the prepared image into `dir` and says what was kept.
fn keep(prepared: &Prepared, dir: &Path) -> Result<SentImage, Failure> {
    let kept = dir.join(prepared.file);
    std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::write(&kept, &prepared.bytes))
        .map_err(|e| {
            (
                "cannot keep the image",
                format!("The image could not be kept with the assets: {e}."),
            )
        })?;
    let digest = CaptureDigest::of(&kept).ok_or_else(|| {
        (
            "cannot keep the image",
            "The kept image could not be read back.".to_owned(),
        )
    })?;
    Ok(SentImage {
        media_type: prepared.media_type.to_owned(),
        width: prepared.width,
        height: prepared.height,
        file: digest,
    })
}

/// Decodes `bytes` as `format` within the decode bounds; a GIF gives its first frame.
fn decode(bytes: &[u8], format: ImageFormat) -> image::ImageResult<DynamicImage> {
    let mut limits = Limits::default();
    limits.max_image_width = Some(VIEW_IMAGE_DECODE_SIDE_PIXELS);
    limits.max_image_height = Some(VIEW_IMAGE_DECODE_SIDE_PIXELS);
    limits.max_alloc = Some(VIEW_IMAGE_DECODE_BYTES);
    let mut reader = ImageReader::with_format(Cursor::new(bytes), format);
    reader.limits(limits);
    reader.decode()
}

/// The image as the model is given it.
struct Prepared {
    file: &'static str,
    media_type: &'static str,
    width: u32,
    height: u32,
    bytes: Vec<u8>,
}

/// The file's own bytes when they fit every bound, otherwise the image downscaled and
/// re-encoded until it does.
fn prepare(bytes: &[u8], format: ImageFormat, image: &DynamicImage) -> Result<Prepared, String> {
    let (width, height) = (image.width(), image.height());
    let fits_side = width.max(height) <= VIEW_IMAGE_SIDE_PIXELS;
    let own = match format {
        ImageFormat::Png => Some(("image.png", "image/png")),
        ImageFormat::Jpeg => Some(("image.jpg", "image/jpeg")),
        ImageFormat::WebP => Some(("image.webp", "image/webp")),
        _ => None,
    };
    if let Some((file, media_type)) = own
        && fits_side
        && bytes.len() <= VIEW_IMAGE_BYTES
    {
        return Ok(Prepared {
            file,
            media_type,
            width,
            height,
            bytes: bytes.to_vec(),
        });
    }
    let mut scaled = if fits_side {
        image.clone()
    } else {
        image.resize(
            VIEW_IMAGE_SIDE_PIXELS,
            VIEW_IMAGE_SIDE_PIXELS,
            FilterType::Triangle,
        )
    };
    let png = encode_png(&scaled)?;
    if png.len() <= VIEW_IMAGE_BYTES {
        return Ok(Prepared {
            file: "image.png",
            media_type: "image/png",
            width: scaled.width(),
            height: scaled.height(),
            bytes: png,
        });
    }
    for _ in 0..SHRINK_ROUNDS {
        let jpeg = encode_jpeg(&scaled)?;
        if jpeg.len() <= VIEW_IMAGE_BYTES {
            return Ok(Prepared {
                file: "image.jpg",
                media_type: "image/jpeg",
                width: scaled.width(),
                height: scaled.height(),
                bytes: jpeg,
            });
        }
        let (w, h) = (scaled.width(), scaled.height());
        scaled = scaled.resize((w * 3 / 4).max(1), (h * 3 / 4).max(1), FilterType::Triangle);
    }
    Err(format!(
        "it stayed over {VIEW_IMAGE_BYTES} bytes after {SHRINK_ROUNDS} rounds of shrinking"
    ))
}

fn encode_png(image: &DynamicImage) -> Result<Vec<u8>, String> {
    let mut out = Cursor::new(Vec::new());
    image
        .write_to(&mut out, ImageFormat::Png)
        .map_err(|e| format!("PNG encoding failed: {e}"))?;
    Ok(out.into_inner())
}

fn encode_jpeg(image: &DynamicImage) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    // JPEG has no alpha channel: transparent pixels take their colour as it is.
    JpegEncoder::new_with_quality(&mut out, JPEG_QUALITY)
        .encode_image(&image.to_rgb8())
        .map_err(|e| format!("JPEG encoding failed: {e}"))?;
    Ok(out)
}

/// The image a `view_image` call kept, as the model is given it: its media type and its
/// bytes in base64. None when the facts are of another tool or sent nothing, or when
/// the kept file is gone or no longer the one the call wrote (its digest differs).
pub fn kept_image(facts: &Value, assets_dir: &Path) -> Option<(String, String)> {
    let Facts::Image {
        sent: Some(sent), ..
    } = serde_json::from_value::<Facts>(facts.clone()).ok()?
    else {
        return None;
    };
    if !IMAGE_ASSET_FILES.contains(&sent.file.file.as_str())
        || CaptureDigest::of(&assets_dir.join(&sent.file.file)).as_ref() != Some(&sent.file)
    {
        return None;
    }
    let bytes = std::fs::read(assets_dir.join(&sent.file.file)).ok()?;
    Some((
        sent.media_type,
        base64::engine::general_purpose::STANDARD.encode(bytes),
    ))
}

#[cfg(test)]
mod tests;
