//! The tools a Code Mode script may call: those its agent may call at the top level
//! (the built-in tools, the client's and the MCP servers'), but not `code_mode` itself
//! or `todo` (the plan is the agent's own account to the person), and not the
//! backend's own `task`, `skill` and `ask_user`, which are no tools of a script.

use magi_provider::ToolSpec;

use super::offer::Offer;
use crate::agent::Agent;

/// The specs of the tools `agent`'s scripts may call, under `offer`, in the order the
/// model is given them.
pub(super) fn callable(offer: &Offer, agent: &Agent) -> Vec<ToolSpec> {
    let code_mode = magi_tools::BuiltinTool::CodeMode.name();
    let todo = magi_tools::BuiltinTool::Todo.name();
    let mut tools: Vec<ToolSpec> = magi_tools::definitions()
        .into_iter()
        .filter(|d| d.name != code_mode && d.name != todo && offer.offers(d.name))
        .map(|d| ToolSpec {
            name: d.name.to_owned(),
            description: d.description.to_owned(),
            parameters: d.parameters,
        })
        .collect();
    tools.extend(external(offer, agent));
    tools
}

/// The specs of the client's tools, then the MCP servers' tools, that `offer` offers
/// `agent`: the tools that are not built in, as the model and scripts are given them.
pub(super) fn external<'a>(
    offer: &'a Offer,
    agent: &'a Agent,
) -> impl Iterator<Item = ToolSpec> + 'a {
    let client = offer
        .client_tools()
        .iter()
        .filter(|t| offer.offers(&t.name))
        .map(|t| ToolSpec {
            name: t.name.clone(),
            description: t.description.clone(),
            parameters: t.parameters.clone(),
        });
    let mcp = agent
        .mcp
        .tools()
        .filter(|t| offer.offers(&t.name))
        .map(|t| ToolSpec {
            name: t.name.clone(),
            description: t.description.clone(),
            parameters: t.parameters.clone(),
        });
    client.chain(mcp)
}

/// The description of `code_mode` offered to `agent`: the API and the tools its
/// scripts may call, within the description's byte budget.
pub(super) fn description(offer: &Offer, agent: &Agent) -> String {
    let tools = callable(offer, agent);
    let listed: Vec<(&str, &serde_json::Value)> = tools
        .iter()
        .map(|t| (t.name.as_str(), &t.parameters))
        .collect();
    magi_tools::code_mode::describe(&listed)
}
