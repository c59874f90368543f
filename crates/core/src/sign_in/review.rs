//! What `magi-code login`, `logout`, `mcp login`, `mcp logout` and `doctor` need of
//! this directory's configuration: where the ChatGPT sign-in is kept and refreshed,
//! which MCP servers sign in and how, and every sign-in's state. Local reads only.

use magi_auth::chatgpt::{self, Places};
use magi_auth::oauth::chatgpt::Endpoints;
use magi_auth::store::Store;
use magi_config::{
    Credential, McpOAuth, McpServer, McpTransport, load_settings, provider_definition,
};

use crate::workspace::{StartupRequest, locate, project_settings_path};

/// Where the ChatGPT sign-in is kept and made.
#[derive(Debug, Clone)]
pub struct ChatGptContext {
    /// Where the sign-in may be.
    pub places: Places,
    /// Where it is made, refreshed and revoked (`[providers.codex] auth_url`).
    pub endpoints: Endpoints,
    /// The issuer those endpoints are under, to show.
    pub auth_url: String,
}

/// The ChatGPT sign-in's context for this directory's settings and environment.
pub fn chatgpt_context(request: &StartupRequest) -> Result<ChatGptContext, String> {
    let (home, cwd) = locate(request)?;
    let settings = load_settings(&home.settings_path(), &project_settings_path(&cwd))
        .map_err(|e| e.to_string())?;
    let definition =
        provider_definition("codex", &settings, &request.env).map_err(|e| e.to_string())?;
    let Credential::ChatGpt { auth_url } = definition.credential else {
        return Err("provider \"codex\" has no ChatGPT sign-in in these settings".to_owned());
    };
    Ok(ChatGptContext {
        places: super::chatgpt_places(home.root(), &request.env),
        endpoints: Endpoints::new(&auth_url),
        auth_url,
    })
}

/// An MCP server that signs in, and where its sign-in is kept.
#[derive(Debug, Clone)]
pub struct McpContext {
    /// magi-code's store.
    pub store: Store,
    /// The server's definition.
    pub server: McpServer,
    /// Its URL.
    pub url: String,
    /// How it signs in.
    pub oauth: McpOAuth,
    /// Whether its definition is approved.
    pub approved: bool,
}

/// The sign-in context of MCP server `name` in this directory: defined, over HTTP, with
/// `oauth` in its definition; the error says which of these is missing and how to fix
/// it.
pub fn mcp_context(request: &StartupRequest, name: &str) -> Result<McpContext, String> {
    let review = crate::mcp::McpReview::load(request)?;
    let (home, _) = locate(request)?;
    let found = review
        .servers
        .into_iter()
        .find(|r| r.server.name == name)
        .ok_or_else(|| {
            format!("no MCP server named {name:?} is defined here (magi-code mcp list)")
        })?;
    let McpTransport::Http { url, oauth, .. } = &found.server.transport else {
        return Err(format!(
            "MCP server {name:?} runs as a command: only a server reached over HTTP signs in"
        ));
    };
    let Some(oauth) = oauth.clone() else {
        return Err(format!(
            "MCP server {name:?} does not sign in: add `oauth = true` to [mcp.servers.{name}] \
             in its settings file, then approve the changed definition (magi-code mcp approve \
             {name})"
        ));
    };
    Ok(McpContext {
        store: Store::new(home.root()),
        url: url.clone(),
        oauth,
        approved: found.approved,
        server: found.server,
    })
}

/// Every sign-in of this directory's configuration.
#[derive(Debug, Clone)]
pub struct SignIns {
    /// The ChatGPT sign-in, when the settings could be read.
    pub chatgpt: Option<(ChatGptContext, chatgpt::Lookup)>,
    /// Each MCP server that signs in: its name, URL and sign-in.
    pub mcp: Vec<(String, String, magi_auth::mcp::Lookup)>,
}

/// Reads every sign-in this directory's configuration names, without the network.
pub fn review(request: &StartupRequest) -> SignIns {
    let chatgpt = chatgpt_context(request).ok().map(|context| {
        let found = chatgpt::lookup(&context.places);
        (context, found)
    });
    let mut mcp = Vec::new();
    if let (Ok(review), Ok((home, _))) = (crate::mcp::McpReview::load(request), locate(request)) {
        let store = Store::new(home.root());
        for server in review.servers {
            if let McpTransport::Http {
                url,
                oauth: Some(_),
                ..
            } = &server.server.transport
            {
                let found = magi_auth::mcp::lookup(&store, &server.server.name, url);
                mcp.push((server.server.name.clone(), url.clone(), found));
            }
        }
    }
    SignIns { chatgpt, mcp }
}
