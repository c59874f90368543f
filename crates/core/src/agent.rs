//! Building the agent of a turn from the admitted runtime: the provider client for the
//! selection, with its credential read at this moment.

use std::sync::Arc;

use magi_config::{ProviderKind, read_credential};
use magi_protocol::ErrorCode;
use magi_provider::{Endpoint, WireFormat};

use crate::runner::Agent;
use crate::startup::Runtime;

/// The agent for the runtime's selection. A credential that went missing since startup
/// is `provider_unavailable`.
pub fn agent_for(runtime: &Runtime) -> Result<Agent, ErrorCode> {
    let provider = &runtime.selection.provider;
    let api_key = read_credential(&provider.credential, &runtime.env);
    let required = matches!(
        provider.credential,
        magi_config::Credential::Env(_) | magi_config::Credential::File(_)
    );
    if required && api_key.is_none() {
        return Err(ErrorCode::ProviderUnavailable);
    }
    let format = match provider.kind {
        ProviderKind::OpenAi => WireFormat::OpenAiResponses,
        ProviderKind::OpenAiChat => WireFormat::ChatCompletions,
        ProviderKind::Anthropic => WireFormat::AnthropicMessages,
    };
    let client = magi_provider::client(Endpoint {
        format,
        base_url: provider.base_url.clone(),
        api_key,
    });
    Ok(Agent {
        client: Arc::from(client),
        model: runtime.selection.model.clone(),
        reasoning_summaries: provider.reasoning_summaries,
        permissions: runtime.settings.permissions.clone(),
    })
}
