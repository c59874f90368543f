//! Which tools an agent is offered, and so may call.
//!
//! The settings' `[tools] disabled` turns a tool off for every agent. A profile's
//! `tools` list limits what its agent is offered; without a list every tool is. The
//! client's own tools serve the session's agent (offered whatever its profile lists),
//! never a subagent; only the session's agent may delegate with `task`, and only it
//! may control the session with `magi_control` (its usage, compaction and title are
//! the session's, not a subagent's), and only it keeps the plan the person sees with
//! `todo`, when the client negotiated `plan.todo`. A model that takes no images is not
//! offered `view_image`.

use std::sync::Arc;

use crate::client_tools::ClientTool;

/// The tools one agent is offered.
#[derive(Clone)]
pub(super) struct Offer {
    /// The tools the settings turn off.
    disabled: Arc<Vec<String>>,
    /// The agent's profile's tool list, if it has one.
    listed: Option<Vec<String>>,
    /// The client's tools the agent may call.
    client_tools: Arc<Vec<ClientTool>>,
    /// The client's tools the agent is refused.
    withheld: Arc<Vec<ClientTool>>,
    /// Whether the agent may delegate tasks.
    delegates: bool,
    /// Whether the agent may ask the user (`ask_user`, with `user.questions`).
    asks_user: bool,
    /// Whether the agent keeps the session's plan (`todo`, with `plan.todo`).
    plans: bool,
    /// Whether the agent is the session's own, which alone is offered `magi_control`.
    controls_session: bool,
    /// Whether the agent's model takes images, and so may be offered `view_image`.
    images: bool,
}

impl Offer {
    /// The offer to the session's agent: its profile's list, the client's tools and
    /// delegation.
    pub(super) fn session(
        disabled: Arc<Vec<String>>,
        listed: Option<Vec<String>>,
        client_tools: Arc<Vec<ClientTool>>,
    ) -> Offer {
        Offer {
            disabled,
            listed,
            client_tools,
            withheld: Arc::default(),
            delegates: true,
            asks_user: false,
            plans: false,
            controls_session: true,
            images: true,
        }
    }

    /// The offer to a subagent: its profile's list, none of the client's tools, no
    /// delegation.
    pub(super) fn subagent(&self, listed: Option<Vec<String>>) -> Offer {
        let mut withheld = (*self.withheld).clone();
        withheld.extend(self.client_tools.iter().cloned());
        Offer {
            disabled: Arc::clone(&self.disabled),
            listed,
            client_tools: Arc::default(),
            withheld: Arc::new(withheld),
            delegates: false,
            // Only the session's agent talks to the person.
            asks_user: false,
            // The plan is the session's: a subagent's steps are its own business.
            plans: false,
            controls_session: false,
            images: self.images,
        }
    }

    /// The same offer, with `ask_user` when the client negotiated `user.questions`.
    pub(super) fn asking_user(self, asks_user: bool) -> Offer {
        Offer { asks_user, ..self }
    }

    /// The same offer, with `todo` when the client negotiated `plan.todo`.
    pub(super) fn planning(self, plans: bool) -> Offer {
        Offer { plans, ..self }
    }

    /// The same offer for an agent whose model takes images or not: without them no
    /// `view_image`, whose image the model could not see.
    pub(super) fn taking_images(self, images: bool) -> Offer {
        Offer { images, ..self }
    }

    /// Whether `name` is held back because the model takes no images (`view_image`).
    pub(super) fn held_from_blind_model(&self, name: &str) -> bool {
        name == magi_tools::BuiltinTool::ViewImage.name() && !self.images
    }

    /// Whether `ask_user` is offered: negotiated, and neither disabled nor left off
    /// the profile's list.
    pub(super) fn asks_user(&self) -> bool {
        self.asks_user && self.offers(crate::questions::ASK_USER_TOOL)
    }

    /// Whether tool `name` is offered.
    pub(super) fn offers(&self, name: &str) -> bool {
        if self.disabled(name) || self.withheld.iter().any(|t| t.name == name) {
            return false;
        }
        if name == magi_tools::BuiltinTool::MagiControl.name() && !self.controls_session {
            return false;
        }
        if name == magi_tools::BuiltinTool::ViewImage.name() && !self.images {
            return false;
        }
        // Without `plan.todo` the client would not know the tool: the model never
        // hears of it.
        if name == magi_tools::BuiltinTool::Todo.name() && !self.plans {
            return false;
        }
        match &self.listed {
            Some(tools) => {
                tools.iter().any(|t| t == name) || self.client_tools.iter().any(|t| t.name == name)
            }
            None => true,
        }
    }

    /// Whether `[tools] disabled` turns tool `name` off.
    pub(super) fn disabled(&self, name: &str) -> bool {
        self.disabled.iter().any(|t| t == name)
    }

    /// Whether the agent may delegate tasks.
    pub(super) fn delegates(&self) -> bool {
        self.delegates
    }

    /// The client's tools the agent may call.
    pub(super) fn client_tools(&self) -> &[ClientTool] {
        &self.client_tools
    }

    /// The client tool named `name` that the agent may call, if any.
    pub(super) fn client_tool(&self, name: &str) -> Option<&ClientTool> {
        self.client_tools.iter().find(|t| t.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client_tool(name: &str) -> ClientTool {
        ClientTool {
            name: name.into(),
            description: "d".into(),
            parameters: serde_json::json!({"type": "object"}),
            timeout_ms: 1_000,
        }
    }

    #[test]
    fn the_session_agent_gets_the_client_tools_and_a_subagent_never_does() {
        let disabled = Arc::new(vec!["bash".to_owned()]);
        let session = Offer::session(
            disabled,
            Some(vec!["read".into(), "bash".into(), "open_ticket".into()]),
            Arc::new(vec![client_tool("open_ticket")]),
        );
        assert!(session.offers("read"));
        assert!(!session.offers("grep"), "its profile does not list it");
        assert!(!session.offers("bash"), "the settings disable it");
        assert!(session.offers("open_ticket"));
        assert!(session.delegates());

        // Even a subagent profile that lists the client's tool is refused it.
        let subagent = session.subagent(Some(vec!["read".into(), "open_ticket".into()]));
        assert!(subagent.offers("read"));
        assert!(!subagent.offers("open_ticket"));
        assert!(subagent.client_tool("open_ticket").is_none());
        assert!(!subagent.delegates());
        assert!(subagent.disabled("bash"));
        // Without a list, everything but the disabled and the client's tools.
        let unlisted = session.subagent(None);
        assert!(unlisted.offers("grep"));
        assert!(!unlisted.offers("bash"));
        assert!(!unlisted.offers("open_ticket"));
        // The session's controls are the session agent's alone.
        assert!(Offer::session(Arc::default(), None, Arc::default()).offers("magi_control"));
        assert!(!unlisted.offers("magi_control"));
        let listing = session.subagent(Some(vec!["magi_control".into()]));
        assert!(!listing.offers("magi_control"));
    }

    #[test]
    fn todo_is_offered_only_to_the_session_agent_of_a_client_that_negotiated_it() {
        let session = Offer::session(Arc::default(), None, Arc::default());
        assert!(!session.offers("todo"));
        let planning = session.planning(true);
        assert!(planning.offers("todo"));
        assert!(!planning.subagent(None).offers("todo"));
        assert!(!planning.subagent(Some(vec!["todo".into()])).offers("todo"));
        let disabled = Offer::session(Arc::new(vec!["todo".into()]), None, Arc::default());
        assert!(!disabled.planning(true).offers("todo"));
    }

    #[test]
    fn a_model_that_takes_no_images_is_not_offered_view_image() {
        let session = Offer::session(Arc::default(), None, Arc::default());
        assert!(session.offers("view_image"));
        let blind = session.taking_images(false);
        assert!(!blind.offers("view_image"));
        assert!(blind.offers("read"));
        // A subagent keeps it off until its own model says otherwise.
        assert!(!blind.subagent(None).offers("view_image"));
        assert!(
            blind
                .subagent(None)
                .taking_images(true)
                .offers("view_image")
        );
    }
}
