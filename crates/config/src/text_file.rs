//! Reading the small text files configuration is made of: settings, instruction files,
//! skills. One bounded way, so every one of them refuses the same things.

use std::io::Read;
use std::path::Path;

/// The text of the file at `path`, read no further than `limit` bytes; none when there
/// is no such file. A file over the bound, holding a NUL byte (binary), not UTF-8 or
/// unreadable is refused with the reason.
pub(crate) fn read_text_file(path: &Path, limit: usize) -> Result<Option<String>, String> {
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    let mut bytes = Vec::new();
    file.take(limit as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() > limit {
        return Err(format!("larger than its {limit}-byte bound"));
    }
    if bytes.contains(&0) {
        return Err("binary".into());
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| "not UTF-8".into())
}
