//! Changes a person asks Mission Control to make to the global settings file: a model
//! enabled in the catalog (`[providers.catalog] enabled`) and, when asked, the default
//! selection (`provider`, `model`). The file is edited in place, its comments, order
//! and formatting kept, and replaced atomically (a file beside it, synced, renamed);
//! nothing else in it changes. A backend reads settings once, at its start: a fresh
//! one sees the change.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use magi_protocol::limits::SETTINGS_FILE_BYTES;
use toml_edit::{Array, DocumentMut, Item, Table, value};

/// What an edit changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edited {
    /// The file written.
    pub path: PathBuf,
    /// `provider/model` was added to `providers.catalog.enabled` (it was not there).
    pub enabled: bool,
    /// `provider` and `model` were set as the default selection.
    pub made_default: bool,
}

/// Adds `provider/model` to the `[providers.catalog] enabled` list of the settings file
/// at `path` (made when missing), and with `make_default` sets the top-level `provider`
/// and `model` to them. Refuses, saying why and where, a file that is not valid TOML,
/// is over the settings bound, or holds `enabled` as something other than a list.
pub fn enable_model(
    path: &Path,
    provider: &str,
    model: &str,
    make_default: bool,
) -> Result<Edited, String> {
    let shown = path.display();
    let text = match std::fs::File::open(path) {
        Ok(file) => {
            let mut text = String::new();
            let cap = u64::try_from(SETTINGS_FILE_BYTES + 1).unwrap_or(u64::MAX);
            file.take(cap)
                .read_to_string(&mut text)
                .map_err(|e| format!("cannot read {shown}: {e}"))?;
            if text.len() > SETTINGS_FILE_BYTES {
                return Err(format!(
                    "{shown} is over {SETTINGS_FILE_BYTES} bytes; add \"{provider}/{model}\" to \
                     [providers.catalog] enabled by hand"
                ));
            }
            text
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(format!("cannot read {shown}: {e}")),
    };
    let mut doc: DocumentMut = text
        .parse()
        .map_err(|e| format!("{shown} is not valid TOML, so it was not changed: {e}"))?;
    let choice = format!("{provider}/{model}");
    let providers = table(doc.as_table_mut(), "providers", shown.to_string())?;
    // `providers` holds provider definitions too: it stays implicit when it was.
    providers.set_implicit(true);
    let catalog = table(providers, "catalog", format!("{shown}: providers"))?;
    let enabled = catalog
        .entry("enabled")
        .or_insert_with(|| value(Array::new()))
        .as_array_mut()
        .ok_or_else(|| {
            format!("{shown}: providers.catalog.enabled is not a list; fix it, then try again")
        })?;
    let present = enabled.iter().any(|v| v.as_str() == Some(choice.as_str()));
    if !present {
        enabled.push(choice.as_str());
    }
    if make_default {
        doc["provider"] = value(provider);
        doc["model"] = value(model);
    }
    write_atomically(path, doc.to_string().as_bytes())
        .map_err(|e| format!("cannot write {shown}: {e}"))?;
    Ok(Edited {
        path: path.to_owned(),
        enabled: !present,
        made_default: make_default,
    })
}

/// The table `key` of `parent`, made when missing; an error naming `where_` when `key`
/// holds something else.
fn table<'t>(parent: &'t mut Table, key: &str, where_: String) -> Result<&'t mut Table, String> {
    parent
        .entry(key)
        .or_insert_with(|| Item::Table(Table::new()))
        .as_table_mut()
        .ok_or_else(|| format!("{where_}: `{key}` is not a table; fix it, then try again"))
}

/// Replaces `path` with `bytes`: a file beside it (owner-only), synced, renamed over
/// it, and its folder synced. The previous file stays as it was on any failure.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temporary = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let written = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&temporary)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&temporary, path)?;
        std::fs::File::open(dir)?.sync_all()
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_is_enabled_keeping_what_the_file_says() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.toml");
        std::fs::write(
            &path,
            "# my settings\nmodel = \"old\" # kept\n\n[providers.local]\nkind = \"openai-chat\"\n",
        )
        .unwrap();
        let edited = enable_model(&path, "local", "qwen 2.5", false).unwrap();
        assert!(edited.enabled && !edited.made_default);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.starts_with("# my settings\nmodel = \"old\" # kept\n"),
            "{text}"
        );
        assert!(
            text.contains("[providers.local]\nkind = \"openai-chat\"\n"),
            "{text}"
        );
        assert!(text.contains("enabled = [\"local/qwen 2.5\"]"), "{text}");
        // The settings still read, with the model enabled.
        let parsed: toml::Value = toml::from_str(&text).unwrap();
        assert_eq!(
            parsed["providers"]["catalog"]["enabled"][0].as_str(),
            Some("local/qwen 2.5")
        );
        // Again: nothing added twice; as the default this time.
        let edited = enable_model(&path, "local", "qwen 2.5", true).unwrap();
        assert!(!edited.enabled && edited.made_default);
        let parsed: toml::Value = toml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(
            parsed["providers"]["catalog"]["enabled"]
                .as_array()
                .unwrap()
                .len(),
            1
        );
        assert_eq!(parsed["provider"].as_str(), Some("local"));
        assert_eq!(parsed["model"].as_str(), Some("qwen 2.5"));
    }

    #[test]
    fn a_missing_file_is_made_and_a_broken_one_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.toml");
        enable_model(&path, "openai", "gpt-5", true).unwrap();
        let parsed: toml::Value = toml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(parsed["provider"].as_str(), Some("openai"));
        let broken = "model = \n";
        std::fs::write(&path, broken).unwrap();
        let why = enable_model(&path, "openai", "gpt-5", false).unwrap_err();
        assert!(why.contains("not valid TOML"), "{why}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), broken);
        std::fs::write(&path, "[providers.catalog]\nenabled = \"a/b\"\n").unwrap();
        let why = enable_model(&path, "openai", "gpt-5", false).unwrap_err();
        assert!(
            why.contains("providers.catalog.enabled is not a list"),
            "{why}"
        );
    }
}
