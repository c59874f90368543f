//! The extensions an `initialize` requires: what the backend must advertise for them,
//! and the reader accepting their events once it did.

use std::sync::Arc;

use magi_protocol::Extension;
use magi_protocol::extensions::ExtensionSet;
use magi_protocol::messages::{InitializeParams, InitializeResult};
use serde_json::Value;

use super::Shared;
use crate::ClientError;
use crate::decode::Violation;

/// The extensions an `initialize` required, recorded once it is admitted: the reader
/// accepts their events only from then on.
pub(super) struct Negotiation {
    required: ExtensionSet,
    /// The names of the tools `client.tools` registered, in registration order.
    client_tools: Vec<String>,
    shared: Arc<Shared>,
}

impl Negotiation {
    /// What the `initialize` params (as sent) require.
    pub(super) fn requested(
        params: &Value,
        shared: Arc<Shared>,
    ) -> Result<Negotiation, ClientError> {
        let params: InitializeParams =
            serde_json::from_value(params.clone()).map_err(|_| ClientError::UnencodableParams)?;
        let required =
            ExtensionSet::of_names(params.required_capabilities.iter().map(String::as_str));
        let client_tools = params
            .client_tools
            .unwrap_or_default()
            .into_iter()
            .map(|tool| tool.name)
            .collect();
        Ok(Negotiation {
            required,
            client_tools,
            shared,
        })
    }

    /// Checks the admitted result's advertisement and turns the extensions on.
    pub(super) fn admitted(self, result: &Value) -> Result<(), ClientError> {
        let result: InitializeResult =
            serde_json::from_value(result.clone()).map_err(|_| ClientError::UnexpectedResult)?;
        check_advertisement(&result, self.required, &self.client_tools)
            .map_err(ClientError::Violation)?;
        // Styles are on cards only: without `tool.cards` there is nothing to carry them.
        let negotiated = if self.required.card_styles() {
            self.required
        } else {
            self.required.without(Extension::ToolCardStyles)
        };
        self.shared
            .negotiated
            .store(negotiated.bits(), std::sync::atomic::Ordering::SeqCst);
        Ok(())
    }
}

/// Checks what an admitted `initialize` advertises: the sixteen base capabilities in
/// order, then each required extension in the protocol's order, exactly when it was
/// required, with exactly its schema 1 descriptor (`client.tools`' naming the tools
/// registered, `client_tools`), and no `extensions` object when none was.
fn check_advertisement(
    result: &InitializeResult,
    required: ExtensionSet,
    client_tools: &[String],
) -> Result<(), Violation> {
    if result.capabilities != required.capabilities() {
        return Err(Violation("initialize advertised other capabilities".into()));
    }
    if result.extensions != required.descriptors(client_tools) {
        return Err(Violation(
            "initialize advertised extension descriptors other than the ones negotiated".into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use magi_protocol::limits::Limits;
    use magi_protocol::messages::{
        CheckpointsDescriptor, Extensions, ModelCachedDescriptor, PermissionModesDescriptor,
        Readiness, ReadinessPhase, RuntimeState, StatusResult,
    };
    use magi_protocol::names::{CHECKPOINTS, MODEL_CACHED, PERMISSION_MODES};

    use super::*;

    /// Nothing required but `model.cached`, when `cached` says so.
    fn required(cached: bool) -> ExtensionSet {
        if cached {
            ExtensionSet::EMPTY.with(Extension::ModelCached)
        } else {
            ExtensionSet::EMPTY
        }
    }

    /// An `extensions` object with no descriptor in it.
    fn no_descriptors() -> Extensions {
        let mut none = ExtensionSet::EMPTY
            .with(Extension::ModelCached)
            .descriptors(&[])
            .unwrap();
        none.model_cached = None;
        none
    }

    /// An admitted result advertising `extra` after the base capabilities, with the
    /// `model.cached` descriptor `descriptor` (no `extensions` object when `None`).
    fn advertised(extra: &[&str], descriptor: Option<ModelCachedDescriptor>) -> InitializeResult {
        let mut capabilities = magi_protocol::names::base_capabilities();
        capabilities.extend(extra.iter().map(|c| (*c).to_owned()));
        InitializeResult {
            capabilities,
            limits: Limits::V1,
            status: StatusResult {
                state: RuntimeState::Idle,
                readiness: Readiness::Phase(ReadinessPhase::Ready),
                provider: None,
                model: None,
                context_id: None,
                session_id: None,
                run_id: None,
                selection: None,
            },
            extensions: descriptor.map(|d| Extensions {
                model_cached: Some(d),
                ..no_descriptors()
            }),
        }
    }

    fn check(result: &InitializeResult, required: ExtensionSet) -> Result<(), Violation> {
        check_advertisement(result, required, &[])
    }

    #[test]
    fn checkpoints_are_advertised_last_with_their_descriptor_exactly_when_required() {
        let both = required(true).with(Extension::Checkpoints);
        let mut result = advertised(
            &[MODEL_CACHED, CHECKPOINTS],
            Some(ModelCachedDescriptor::schema_1()),
        );
        if let Some(extensions) = &mut result.extensions {
            extensions.checkpoints = Some(CheckpointsDescriptor::schema_1());
        }
        assert!(check(&result, both).is_ok());
        assert!(
            check(&result, required(true)).is_err(),
            "advertised without being required"
        );
        let swapped = {
            let mut r = result.clone();
            r.capabilities.retain(|c| c != MODEL_CACHED);
            r.capabilities.push(MODEL_CACHED.to_owned());
            r
        };
        assert!(check(&swapped, both).is_err(), "out of order");
        let mut bare = result.clone();
        if let Some(extensions) = &mut bare.extensions {
            extensions.checkpoints = None;
        }
        assert!(check(&bare, both).is_err(), "no descriptor");
    }

    #[test]
    fn model_cached_is_advertised_with_its_descriptor_exactly_when_required() {
        let schema_1 = || Some(ModelCachedDescriptor::schema_1());
        let ok = |cached: bool, result: &InitializeResult| check(result, required(cached)).is_ok();
        assert!(ok(true, &advertised(&[MODEL_CACHED], schema_1())));
        assert!(ok(false, &advertised(&[], None)));
        assert!(
            !ok(false, &advertised(&[MODEL_CACHED], schema_1())),
            "advertised without being required"
        );
        assert!(
            !ok(true, &advertised(&[], None)),
            "required, not advertised"
        );
        assert!(
            !ok(true, &advertised(&[MODEL_CACHED], None)),
            "advertised without its descriptor"
        );
        assert!(
            !ok(true, &advertised(&[], schema_1())),
            "a descriptor without the capability"
        );
        let schema_2 = Some(ModelCachedDescriptor { schema_version: 2 });
        assert!(
            !ok(true, &advertised(&[MODEL_CACHED], schema_2)),
            "another schema"
        );
        assert!(
            !ok(true, &advertised(&[MODEL_CACHED, MODEL_CACHED], schema_1())),
            "advertised twice"
        );
        let mut empty = advertised(&[], None);
        empty.extensions = Some(no_descriptors());
        assert!(!ok(false, &empty), "an empty extensions object");
    }

    #[test]
    fn permissions_modes_is_advertised_last_with_its_descriptor_exactly_when_required() {
        let wanted = ExtensionSet::EMPTY.with(Extension::PermissionModes);
        let mut result = advertised(&[PERMISSION_MODES], None);
        let ok = |result: &InitializeResult| check(result, wanted).is_ok();
        assert!(!ok(&result), "advertised without its descriptor");
        result.extensions = Some(Extensions {
            permission_modes: Some(PermissionModesDescriptor::schema_1()),
            ..no_descriptors()
        });
        assert!(ok(&result));
        let mut other = result.clone();
        other.extensions.as_mut().unwrap().permission_modes = Some(PermissionModesDescriptor {
            rules_listed: 1,
            ..PermissionModesDescriptor::schema_1()
        });
        assert!(!ok(&other), "other bounds");
        assert!(
            check(&result, required(false)).is_err(),
            "advertised without being required"
        );
    }

    #[test]
    fn client_tools_are_advertised_with_the_tools_registered_in_their_order() {
        let wanted = ExtensionSet::EMPTY.with(Extension::ClientTools);
        let tools = ["look".to_owned(), "fetch".to_owned()];
        let mut result = advertised(&[magi_protocol::names::CLIENT_TOOLS], None);
        result.extensions = wanted.descriptors(&tools);
        assert!(check_advertisement(&result, wanted, &tools).is_ok());
        let swapped = ["fetch".to_owned(), "look".to_owned()];
        assert!(
            check_advertisement(&result, wanted, &swapped).is_err(),
            "other tools, or in another order"
        );
    }
}
