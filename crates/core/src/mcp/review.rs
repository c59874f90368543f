//! What `magi-code mcp` shows and changes: the MCP servers the settings of one working
//! directory define, and the user's global approval of each definition.

use std::path::PathBuf;

use magi_config::{McpApprovals, McpServer, load_settings};

use crate::workspace::{StartupRequest, locate, project_settings_path};

/// One defined server and where it stands.
#[derive(Debug, Clone)]
pub struct ServerReview {
    /// The definition.
    pub server: McpServer,
    /// The digest of its canonical definition.
    pub digest: String,
    /// Whether that digest is approved.
    pub approved: bool,
}

/// The servers of one working directory, with the approvals file they are checked
/// against.
#[derive(Debug)]
pub struct McpReview {
    home: PathBuf,
    approvals: McpApprovals,
    /// The servers, by name.
    pub servers: Vec<ServerReview>,
}

impl McpReview {
    /// Reads the settings and approvals the backend would admit for `request`.
    pub fn load(request: &StartupRequest) -> Result<McpReview, String> {
        let (home, cwd) = locate(request)?;
        let settings = load_settings(&home.settings_path(), &project_settings_path(&cwd))
            .map_err(|e| e.to_string())?;
        let approvals = McpApprovals::load(home.root()).map_err(|e| e.to_string())?;
        let servers = settings
            .mcp_servers
            .into_iter()
            .map(|server| {
                let digest = server.digest(&cwd);
                ServerReview {
                    approved: approvals.approves(&digest),
                    server,
                    digest,
                }
            })
            .collect();
        Ok(McpReview {
            home: home.root().to_owned(),
            approvals,
            servers,
        })
    }

    /// Approves (`true`) or revokes (`false`) the current definition of server `name`
    /// in the global approvals file.
    pub fn set_approval(&mut self, name: &str, approved: bool) -> Result<&ServerReview, String> {
        let review = self
            .servers
            .iter_mut()
            .find(|r| r.server.name == name)
            .ok_or_else(|| format!("no MCP server named {name:?} is defined here"))?;
        self.approvals.set(&review.digest, approved);
        self.approvals
            .save(&self.home)
            .map_err(|e| format!("cannot write the approvals file: {e}"))?;
        review.approved = approved;
        Ok(review)
    }
}
