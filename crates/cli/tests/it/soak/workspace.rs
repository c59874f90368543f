//! A soak session's workspace: small, big, binary, unicode-named, symlinked, dangling
//! and image files, and a file outside it.

use std::path::Path;

use super::random::Random;

/// Fills `cwd` (and `outside`, a folder beside it) with the files the model's calls
/// name (`model::PATHS`).
pub fn populate(cwd: &Path, outside: &Path, random: &mut Random) {
    let write = |name: &str, bytes: &[u8]| {
        let path = cwd.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(path, bytes).unwrap();
    };
    write("small.txt", b"small file\nsecond line\n");
    let big = random.text_between(50_000, 400_000);
    write("big.txt", big.as_bytes());
    let binary: Vec<u8> = (0..random.between(1, 20_000))
        .map(|_| (random.next_u64() & 0xff) as u8)
        .collect();
    write("binary.bin", &binary);
    write("ünï 文件.txt", random.text(300).as_bytes());
    write(
        "dir/nested.rs",
        b"fn main() {}\nfn helper() {}\nstruct S;\n",
    );
    write("image.png", &tiny_png());
    std::os::unix::fs::symlink("small.txt", cwd.join("link.txt")).unwrap();
    std::os::unix::fs::symlink("nowhere.txt", cwd.join("dangling.txt")).unwrap();
    std::fs::create_dir_all(outside).unwrap();
    std::fs::write(outside.join("outside.txt"), b"outside the workspace\n").unwrap();
}

/// A 2x2 PNG.
fn tiny_png() -> Vec<u8> {
    let image = image::RgbImage::from_pixel(2, 2, image::Rgb([200, 30, 90]));
    let mut bytes = std::io::Cursor::new(Vec::new());
    image.write_to(&mut bytes, image::ImageFormat::Png).unwrap();
    bytes.into_inner()
}
