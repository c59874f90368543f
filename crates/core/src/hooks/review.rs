//! What `magi-code hooks` shows and changes: the hooks the settings of one working
//! directory define, and the user's global approval of each project hook.

use std::path::PathBuf;

use magi_config::{Hook, HookSource, McpApprovals, load_hook_approvals, load_settings};

use crate::workspace::{StartupRequest, locate, project_settings_path};

/// One defined hook and where it stands.
#[derive(Debug, Clone)]
pub struct HookReview {
    /// Its number in the listing, from 1.
    pub number: usize,
    /// The definition.
    pub hook: Hook,
    /// The digest of its canonical definition.
    pub digest: String,
    /// Whether it may run: a global hook always, a project one once approved.
    pub approved: bool,
}

/// The hooks of one working directory, with the approvals file they are checked against.
#[derive(Debug)]
pub struct HooksReview {
    home: PathBuf,
    approvals: McpApprovals,
    /// The hooks, in the order they run.
    pub hooks: Vec<HookReview>,
}

impl HooksReview {
    /// Reads the settings and hook approvals the backend would admit for `request`.
    pub fn load(request: &StartupRequest) -> Result<HooksReview, String> {
        let (home, cwd) = locate(request)?;
        let settings = load_settings(&home.settings_path(), &project_settings_path(&cwd))
            .map_err(|e| e.to_string())?;
        let approvals = load_hook_approvals(home.root()).map_err(|e| e.to_string())?;
        let hooks = settings
            .hooks
            .hooks
            .into_iter()
            .enumerate()
            .map(|(index, hook)| {
                let digest = hook.digest(&cwd);
                HookReview {
                    number: index + 1,
                    approved: hook.source == HookSource::Global || approvals.approves(&digest),
                    hook,
                    digest,
                }
            })
            .collect();
        Ok(HooksReview {
            home: home.root().to_owned(),
            approvals,
            hooks,
        })
    }

    /// The project hooks not approved: reported, never run.
    pub fn unapproved(&self) -> impl Iterator<Item = &HookReview> {
        self.hooks.iter().filter(|review| !review.approved)
    }

    /// Approves (`true`) or revokes (`false`) the current definition of the project
    /// hook `id` names (its number in the listing, or the start of its digest) in the
    /// global hook approvals file.
    pub fn set_approval(&mut self, id: &str, approved: bool) -> Result<&HookReview, String> {
        let by_number = id.parse::<usize>().ok();
        let found: Vec<usize> = self
            .hooks
            .iter()
            .enumerate()
            .filter(|(_, r)| match by_number {
                Some(number) => r.number == number,
                None => id.len() >= 8 && r.digest.starts_with(id),
            })
            .map(|(index, _)| index)
            .collect();
        let index = match found[..] {
            [index] => index,
            [] => {
                return Err(format!(
                    "no hook {id:?} is defined here (give its number from `magi-code hooks \
                     list`, or at least 8 digits of its digest)"
                ));
            }
            _ => return Err(format!("{id:?} names more than one hook; give more digits")),
        };
        let review = &mut self.hooks[index];
        if review.hook.source == HookSource::Global {
            return Err(format!(
                "hook {} is defined in the global settings ({}), which run without approval",
                review.number,
                review.hook.place()
            ));
        }
        self.approvals.set(&review.digest, approved);
        self.approvals
            .save_file(&self.home, magi_config::HOOK_APPROVALS_FILE)
            .map_err(|e| format!("cannot write the hook approvals file: {e}"))?;
        review.approved = approved;
        Ok(review)
    }
}
