//! Skills: folders of instructions the model can discover and load when a task needs
//! them, read once at startup.
//!
//! A skill is a folder holding `SKILL.md`: its name is the folder's (`[a-z0-9_-]`, 1 to
//! 64 bytes), its description the first non-empty line of `SKILL.md` (a leading `#` and
//! spaces dropped, at most 256 bytes). Global skills live in `$MC_HOME/skills/`, project
//! ones in `<cwd>/.magi/skills/`; a project skill replaces a global one of the same name.
//! `[skills] disabled` names skills that are not offered. The model sees every offered
//! skill's name and description and loads one's whole text with the `skill` tool.
//!
//! A skill folder without a readable, bounded, UTF-8 `SKILL.md` holding a description
//! makes the configuration invalid: a skill is never offered half-read.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::ConfigError;
use crate::text_file::read_text_file;

/// Most skills offered.
pub const SKILLS: usize = 64;
/// Longest `SKILL.md`, in bytes.
pub const SKILL_FILE_BYTES: usize = 64 * 1024;
/// Longest skill description, in bytes.
pub const SKILL_DESCRIPTION_BYTES: usize = 256;

/// `[skills]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkillSettings {
    /// Skills not offered, by name.
    #[serde(default)]
    pub disabled: Vec<String>,
}

/// One skill, loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// Its name.
    pub name: String,
    /// Its one-line description.
    pub description: String,
    /// The whole `SKILL.md`.
    pub text: String,
}

/// The skills offered, by name.
pub fn load_skills(
    home_root: &Path,
    cwd: &Path,
    settings: &SkillSettings,
) -> Result<Vec<Skill>, ConfigError> {
    let mut skills = BTreeMap::new();
    // Global first, so a project skill of the same name replaces it.
    for dir in [home_root.join("skills"), cwd.join(".magi").join("skills")] {
        for skill in read_dir_skills(&dir)? {
            skills.insert(skill.name.clone(), skill);
        }
    }
    skills.retain(|name, _| !settings.disabled.contains(name));
    if skills.len() > SKILLS {
        return Err(ConfigError::Invalid(format!("more than {SKILLS} skills")));
    }
    Ok(skills.into_values().collect())
}

fn read_dir_skills(dir: &Path) -> Result<Vec<Skill>, ConfigError> {
    let invalid =
        |path: &Path, why: &str| ConfigError::Invalid(format!("{}: {why}", path.display()));
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(invalid(dir, &e.to_string())),
    };
    let mut skills = Vec::new();
    for (count, entry) in entries.enumerate() {
        // The folder is read within a bound: more entries than skills can be offered is
        // a configuration to fix, not one to read at length.
        if count >= 4 * SKILLS {
            return Err(invalid(dir, "too many entries"));
        }
        let entry = entry.map_err(|e| invalid(dir, &e.to_string()))?;
        let path = entry.path();
        if !path.is_dir() {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        let name_ok = !name.is_empty()
            && name.len() <= 64
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
        if !name_ok {
            return Err(invalid(&path, "a skill name is [a-z0-9_-], 1 to 64 bytes"));
        }
        let file = path.join("SKILL.md");
        let text = read_skill_file(&file).map_err(|why| invalid(&file, &why))?;
        let description = text
            .lines()
            .map(|line| line.trim_start_matches('#').trim())
            .find(|line| !line.is_empty())
            .map(str::to_owned)
            .ok_or_else(|| invalid(&file, "no description"))?;
        if description.len() > SKILL_DESCRIPTION_BYTES {
            return Err(invalid(&file, "description over 256 bytes"));
        }
        skills.push(Skill {
            name,
            description,
            text,
        });
    }
    Ok(skills)
}

fn read_skill_file(path: &Path) -> Result<String, String> {
    read_text_file(path, SKILL_FILE_BYTES)?.ok_or_else(|| "no SKILL.md".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill(dir: &Path, name: &str, text: &str) {
        std::fs::create_dir_all(dir.join(name)).unwrap();
        std::fs::write(dir.join(name).join("SKILL.md"), text).unwrap();
    }

    #[test]
    fn project_skills_replace_global_ones_and_disabled_ones_go() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let cwd = dir.path().join("work");
        skill(&home.join("skills"), "release", "# Cut a release\nsteps");
        skill(&home.join("skills"), "review", "Review code\n");
        skill(
            &cwd.join(".magi/skills"),
            "release",
            "\n# Release this project\nours",
        );
        skill(&cwd.join(".magi/skills"), "old", "Old skill");
        let settings = SkillSettings {
            disabled: vec!["old".into()],
        };
        let skills = load_skills(&home, &cwd, &settings).unwrap();
        let shown: Vec<(&str, &str)> = skills
            .iter()
            .map(|s| (s.name.as_str(), s.description.as_str()))
            .collect();
        assert_eq!(
            shown,
            vec![
                ("release", "Release this project"),
                ("review", "Review code")
            ]
        );
        assert!(skills[0].text.contains("ours"));
    }

    #[test]
    fn broken_skills_make_the_configuration_invalid() {
        let dir = tempfile::tempdir().unwrap();
        let skills = dir.path().join("skills");
        std::fs::create_dir_all(skills.join("empty")).unwrap();
        assert!(load_skills(dir.path(), dir.path(), &SkillSettings::default()).is_err());
        std::fs::remove_dir(skills.join("empty")).unwrap();
        skill(&skills, "blank", "\n\n  \n");
        assert!(load_skills(dir.path(), dir.path(), &SkillSettings::default()).is_err());
        std::fs::remove_dir_all(skills.join("blank")).unwrap();
        skill(&skills, "Bad Name", "x");
        assert!(load_skills(dir.path(), dir.path(), &SkillSettings::default()).is_err());
        std::fs::remove_dir_all(skills.join("Bad Name")).unwrap();
        skill(&skills, "fine", "A fine skill");
        assert_eq!(
            load_skills(dir.path(), dir.path(), &SkillSettings::default())
                .unwrap()
                .len(),
            1
        );
    }
}
