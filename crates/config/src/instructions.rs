//! Instruction files: what every turn's system instructions add, read once at startup.
//!
//! In this order: the global `$MC_HOME/AGENTS.md`; the project's `AGENTS.md`, then
//! `MAGI.md` (the project's own name for it), both in the exact working directory;
//! then the `[instructions] files` of the settings, in their order (relative paths are
//! the working directory's). Besides them, `[instructions] base` names a file that
//! replaces the built-in base instructions and `[instructions] append` one added after
//! them (docs/prompt.md). A missing `AGENTS.md` or `MAGI.md` is fine; a named file that
//! is missing, over its bound, binary or not UTF-8 makes the configuration invalid, so a
//! child never runs with instructions it silently dropped.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::ConfigError;
use crate::text_file::read_text_file;

/// Longest instruction file, in bytes.
pub const INSTRUCTION_FILE_BYTES: usize = 64 * 1024;
/// Most instruction bytes in all.
pub const INSTRUCTIONS_BYTES: usize = 256 * 1024;
/// Most files `[instructions] files` may list.
pub const INSTRUCTION_FILES: usize = 16;

/// `[instructions]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InstructionSettings {
    /// Further Markdown files, in order, after `AGENTS.md` and `MAGI.md`.
    #[serde(default)]
    pub files: Vec<PathBuf>,
    /// A file whose text replaces the built-in base instructions.
    #[serde(default)]
    pub base: Option<PathBuf>,
    /// A file whose text follows the base instructions (built-in or `base`).
    #[serde(default)]
    pub append: Option<PathBuf>,
}

/// What startup read of the instructions: the person's files, in order, and their
/// replacement of the base instructions or addition to them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Instructions {
    /// The instruction files (`AGENTS.md`, `MAGI.md`, `[instructions] files`), in order.
    pub files: Vec<Instruction>,
    /// `[instructions] base`: the base instructions in place of the built-in ones.
    pub base: Option<Instruction>,
    /// `[instructions] append`: what follows the base instructions.
    pub append: Option<Instruction>,
}

/// One loaded instruction file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instruction {
    /// Where it came from, as shown to the model.
    pub source: String,
    /// Its text.
    pub text: String,
}

/// Loads the instruction files of `home_root` and `cwd`, the listed ones and the
/// replacement of or addition to the base instructions the settings name.
pub fn load_instructions(
    home_root: &Path,
    cwd: &Path,
    settings: &InstructionSettings,
) -> Result<Instructions, ConfigError> {
    if settings.files.len() > INSTRUCTION_FILES {
        return Err(ConfigError::Invalid(format!(
            "[instructions] lists more than {INSTRUCTION_FILES} files"
        )));
    }
    let optional = [
        (home_root.join("AGENTS.md"), "global AGENTS.md".to_owned()),
        (cwd.join("AGENTS.md"), "AGENTS.md".to_owned()),
        (cwd.join("MAGI.md"), "MAGI.md".to_owned()),
    ];
    let mut loaded = Vec::new();
    for (path, source) in optional {
        if let Some(text) = read_instruction(&path, false)? {
            loaded.push(Instruction { source, text });
        }
    }
    for file in &settings.files {
        let path = cwd.join(file);
        if let Some(text) = read_instruction(&path, true)? {
            loaded.push(Instruction {
                source: file.display().to_string(),
                text,
            });
        }
    }
    let named = |file: &Option<PathBuf>| -> Result<Option<Instruction>, ConfigError> {
        let Some(file) = file else {
            return Ok(None);
        };
        let text = read_instruction(&cwd.join(file), true)?.unwrap_or_default();
        Ok(Some(Instruction {
            source: file.display().to_string(),
            text,
        }))
    };
    let base = named(&settings.base)?;
    let append = named(&settings.append)?;
    let total: usize = loaded
        .iter()
        .chain(&base)
        .chain(&append)
        .map(|i| i.text.len())
        .sum();
    if total > INSTRUCTIONS_BYTES {
        return Err(ConfigError::Invalid(format!(
            "instruction files hold more than {INSTRUCTIONS_BYTES} bytes in all"
        )));
    }
    Ok(Instructions {
        files: loaded,
        base,
        append,
    })
}

/// One file's text: none when it is absent and optional.
fn read_instruction(path: &Path, required: bool) -> Result<Option<String>, ConfigError> {
    let invalid = |why: &str| ConfigError::Invalid(format!("{}: {why}", path.display()));
    match read_text_file(path, INSTRUCTION_FILE_BYTES).map_err(|why| invalid(&why))? {
        None if required => Err(invalid("no such file")),
        text => Ok(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_bounds_and_refusals() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let cwd = dir.path().join("work");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(cwd.join("docs")).unwrap();
        std::fs::write(home.join("AGENTS.md"), "global").unwrap();
        std::fs::write(cwd.join("AGENTS.md"), "project").unwrap();
        std::fs::write(cwd.join("MAGI.md"), "magi").unwrap();
        std::fs::write(cwd.join("docs/style.md"), "style").unwrap();
        let listed = InstructionSettings {
            files: vec![PathBuf::from("docs/style.md")],
            ..InstructionSettings::default()
        };
        let texts: Vec<String> = load_instructions(&home, &cwd, &listed)
            .unwrap()
            .files
            .into_iter()
            .map(|i| i.text)
            .collect();
        assert_eq!(texts, ["global", "project", "magi", "style"]);
        // Nothing is required but what settings list.
        let empty = tempfile::tempdir().unwrap();
        assert!(
            load_instructions(empty.path(), empty.path(), &InstructionSettings::default()).unwrap()
                == Instructions::default()
        );
        let missing = InstructionSettings {
            files: vec![PathBuf::from("nope.md")],
            ..InstructionSettings::default()
        };
        assert!(load_instructions(&home, &cwd, &missing).is_err());
        std::fs::write(cwd.join("MAGI.md"), b"bin\0ary").unwrap();
        assert!(load_instructions(&home, &cwd, &listed).is_err());
        std::fs::write(cwd.join("MAGI.md"), "x".repeat(INSTRUCTION_FILE_BYTES + 1)).unwrap();
        assert!(load_instructions(&home, &cwd, &listed).is_err());
        std::fs::write(cwd.join("MAGI.md"), "x".repeat(INSTRUCTION_FILE_BYTES)).unwrap();
        assert!(load_instructions(&home, &cwd, &listed).is_ok());
    }

    #[test]
    fn the_base_instructions_are_replaced_or_added_to_by_the_files_named() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("base.md"), "MY BASE").unwrap();
        std::fs::write(dir.path().join("more.md"), "MORE").unwrap();
        let settings = InstructionSettings {
            base: Some(PathBuf::from("base.md")),
            append: Some(PathBuf::from("more.md")),
            ..InstructionSettings::default()
        };
        let loaded = load_instructions(dir.path(), dir.path(), &settings).unwrap();
        assert_eq!(loaded.base.unwrap().text, "MY BASE");
        assert_eq!(loaded.append.unwrap().text, "MORE");
        // A file named that is not there is refused with its name.
        let missing = InstructionSettings {
            append: Some(PathBuf::from("gone.md")),
            ..InstructionSettings::default()
        };
        let Err(ConfigError::Invalid(why)) = load_instructions(dir.path(), dir.path(), &missing)
        else {
            panic!("a missing file passed");
        };
        assert!(
            why.contains("gone.md") && why.contains("no such file"),
            "{why}"
        );
    }
}
