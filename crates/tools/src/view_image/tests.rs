use std::path::Path;

use image::{ImageFormat, Rgba, RgbaImage};
use magi_protocol::limits::{VIEW_IMAGE_BYTES, VIEW_IMAGE_FILE_BYTES, VIEW_IMAGE_SIDE_PIXELS};

use super::*;

/// A `width`×`height` image of a gradient, written in `format`.
fn image_bytes(width: u32, height: u32, format: ImageFormat) -> Vec<u8> {
    let image = RgbaImage::from_fn(width, height, |x, y| {
        Rgba([(x % 256) as u8, (y % 256) as u8, 128, 255])
    });
    let image = DynamicImage::ImageRgba8(image);
    // JPEG has no alpha channel.
    let image = if format == ImageFormat::Jpeg {
        DynamicImage::ImageRgb8(image.to_rgb8())
    } else {
        image
    };
    let mut out = Cursor::new(Vec::new());
    image.write_to(&mut out, format).unwrap();
    out.into_inner()
}

/// Runs `view_image` on `name` in `dir`, keeping assets in `dir/assets`.
fn view_in(dir: &Path, name: &str) -> ToolReport {
    run(
        &json!({ "path": name }),
        &ToolContext {
            cwd: dir,
            assets_dir: Some(&dir.join("assets")),
            cancelled: &|| false,
            hidden_env: &[],
            durable: &|| true,
            live_output: None,
            sandbox_read_only: false,
        },
    )
}

/// What image facts say: format, width, height, file bytes and the image sent.
type Seen = (
    Option<String>,
    Option<u32>,
    Option<u32>,
    Option<u64>,
    Option<SentImage>,
);

fn image_facts(report: &ToolReport) -> Seen {
    match report.facts.clone() {
        Some(Facts::Image {
            format,
            width,
            height,
            bytes,
            sent,
            ..
        }) => (format, width, height, bytes, sent),
        other => panic!("not image facts: {other:?}"),
    }
}

#[test]
fn each_format_is_decoded_measured_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    for (format, name, sent_type) in [
        (ImageFormat::Png, "a.png", "image/png"),
        (ImageFormat::Jpeg, "a.jpg", "image/jpeg"),
        // A GIF goes as a PNG of its first frame.
        (ImageFormat::Gif, "a.gif", "image/png"),
        (ImageFormat::WebP, "a.webp", "image/webp"),
    ] {
        let bytes = image_bytes(40, 30, format);
        std::fs::write(dir.path().join(name), &bytes).unwrap();
        let report = view_in(dir.path(), name);
        assert!(!report.output.is_error, "{name}: {}", report.output.content);
        let (got, width, height, size, sent) = image_facts(&report);
        assert_eq!(got.as_deref(), format_name(format), "{name}");
        assert_eq!((width, height), (Some(40), Some(30)), "{name}");
        assert_eq!(size, Some(bytes.len() as u64), "{name}");
        let sent = sent.unwrap();
        assert_eq!(sent.media_type, sent_type, "{name}");
        assert_eq!((sent.width, sent.height), (40, 30), "{name}");
        assert!(report.output.content.contains("40x30 pixels"), "{name}");
        // The model's text never holds the pixels.
        assert!(report.output.content.len() < 200, "{name}");
        let facts = serde_json::to_value(report.facts.as_ref().unwrap()).unwrap();
        let (media_type, data) = kept_image(&facts, &dir.path().join("assets")).unwrap();
        assert_eq!(media_type, sent_type);
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(data)
            .unwrap();
        assert_eq!(decoded.len() as u64, sent.file.bytes);
        if format != ImageFormat::Gif {
            // Within the bounds, the file's own bytes go.
            assert_eq!(decoded, bytes, "{name}");
        }
    }
}

#[test]
fn a_large_image_is_downscaled_to_the_side_bound() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = image_bytes(VIEW_IMAGE_SIDE_PIXELS * 2, 300, ImageFormat::Png);
    std::fs::write(dir.path().join("wide.png"), &bytes).unwrap();
    let report = view_in(dir.path(), "wide.png");
    assert!(!report.output.is_error, "{}", report.output.content);
    let (_, width, height, _, sent) = image_facts(&report);
    assert_eq!(
        (width, height),
        (Some(VIEW_IMAGE_SIDE_PIXELS * 2), Some(300))
    );
    let sent = sent.unwrap();
    assert_eq!(sent.width, VIEW_IMAGE_SIDE_PIXELS);
    assert_eq!(sent.height, 150);
    assert!(report.output.content.contains("downscaled to 2048x150"));
}

#[test]
fn an_image_over_the_byte_bound_is_reencoded_until_it_fits() {
    let dir = tempfile::tempdir().unwrap();
    // Noise does not compress: as PNG it is far over the byte bound.
    let mut state = 0x2545_f491_u32;
    let noise = RgbaImage::from_fn(1_200, 1_200, |_, _| {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let [a, b, c, _] = state.to_le_bytes();
        Rgba([a, b, c, 255])
    });
    let mut out = Cursor::new(Vec::new());
    DynamicImage::ImageRgba8(noise)
        .write_to(&mut out, ImageFormat::Png)
        .unwrap();
    let bytes = out.into_inner();
    assert!(bytes.len() > VIEW_IMAGE_BYTES);
    std::fs::write(dir.path().join("noise.png"), &bytes).unwrap();
    let report = view_in(dir.path(), "noise.png");
    assert!(!report.output.is_error, "{}", report.output.content);
    let sent = image_facts(&report).4.unwrap();
    assert_eq!(sent.media_type, "image/jpeg");
    assert!(sent.file.bytes <= VIEW_IMAGE_BYTES as u64);
}

#[test]
fn corrupt_unknown_oversize_and_missing_files_fail_with_what_is_known() {
    let dir = tempfile::tempdir().unwrap();
    let mut corrupt = image_bytes(20, 20, ImageFormat::Png);
    corrupt.truncate(40);
    std::fs::write(dir.path().join("cut.png"), &corrupt).unwrap();
    let report = view_in(dir.path(), "cut.png");
    assert!(report.output.is_error);
    assert_eq!(report.output.summary, "cannot decode the image");
    let (format, width, _, bytes, sent) = image_facts(&report);
    assert_eq!(format.as_deref(), Some("png"));
    assert_eq!((width, bytes, sent), (None, Some(40), None));

    std::fs::write(dir.path().join("notes.txt"), "not an image").unwrap();
    let report = view_in(dir.path(), "notes.txt");
    assert_eq!(report.output.summary, "not an image");
    assert!(report.output.content.contains("PNG, JPEG, GIF or WebP"));

    // A sparse file: its size alone refuses it, before anything is read.
    let big = std::fs::File::create(dir.path().join("big.png")).unwrap();
    big.set_len(VIEW_IMAGE_FILE_BYTES + 1).unwrap();
    let report = view_in(dir.path(), "big.png");
    assert_eq!(report.output.summary, "image too large");
    assert_eq!(image_facts(&report).3, Some(VIEW_IMAGE_FILE_BYTES + 1));

    let report = view_in(dir.path(), "absent.png");
    assert_eq!(report.output.summary, "cannot read the file");
    assert!(report.output.content.contains("absent.png"));
    // Nothing was kept for any of them.
    assert!(!dir.path().join("assets").exists());
}

#[test]
fn a_kept_image_that_changed_is_not_attached() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("a.png"),
        image_bytes(8, 8, ImageFormat::Png),
    )
    .unwrap();
    let report = view_in(dir.path(), "a.png");
    let facts = serde_json::to_value(report.facts.as_ref().unwrap()).unwrap();
    let assets = dir.path().join("assets");
    assert!(kept_image(&facts, &assets).is_some());
    std::fs::write(assets.join("image.png"), b"other").unwrap();
    assert!(kept_image(&facts, &assets).is_none());
    // Facts of another tool attach nothing.
    assert!(kept_image(&json!({"tool": "read"}), &assets).is_none());
}

#[test]
fn a_path_outside_the_workspace_is_outside() {
    let dir = tempfile::tempdir().unwrap();
    let name = crate::BuiltinTool::ViewImage.name();
    assert!(crate::outside_workspace(
        name,
        r#"{"path": "../elsewhere.png"}"#,
        dir.path()
    ));
    assert!(!crate::outside_workspace(
        name,
        r#"{"path": "inside.png"}"#,
        dir.path()
    ));
    assert!(crate::is_read_only(name));
}
