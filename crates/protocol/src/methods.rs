//! Every method as a type: its wire name, its params and its result.
//!
//! A client sends a typed request by naming one of these markers, e.g.
//! `backend.call::<methods::TurnStart>(&params)`; the name comes from [`Method`] (or
//! [`ExtensionMethod`]) and the params and result are the structs of
//! [`crate::messages`] the server parses and answers with. A method added to
//! [`Method`] without a marker here fails this module's tests.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::messages::{
    ApprovalAnswerParams, ApprovalAnswerResult, CatalogStatusParams, CatalogStatusResult,
    ClientFileResultParams, ClientFileResultResult, ClientTerminalResultParams,
    ClientToolResultParams, ClientToolResultResult, EmptyParams, HistoryPageParams,
    HistoryPageResult, InitializeParams, InitializeResult, JobOutputResult, JobParams,
    JobStopResult, ModelCachedParams, ModelCachedResult, ModelCatalogParams, ModelCatalogResult,
    ModelRefreshParams, ModelRefreshResult, OperationCancelParams, OperationCancelResult,
    PermissionModeSetParams, PermissionModeSetResult, PermissionRuleRevokeParams,
    PermissionRuleRevokeResult, PermissionsListParams, PermissionsListResult, QuestionAnswerParams,
    QuestionAnswerResult, SelectionSetParams, SelectionSetResult, SessionCompactParams,
    SessionCompactResult, SessionDiscoverParams, SessionDiscoverResult, SessionListParams,
    SessionListResult, SessionOpenParams, SessionResult, ShutdownResult, StatusResult,
    TurnCancelParams, TurnCancelResult, TurnStartParams, TurnStartResult,
};
use crate::messages::{
    CheckpointListParams, CheckpointListResult, CheckpointRestoreParams, CheckpointRestoreResult,
    SessionForkParams, SessionForkResult,
};
use crate::names::{ExtensionMethod, Method, MethodName};

/// A method of the protocol: the name a request carries, the params it sends and the
/// result a success answers with.
pub trait Request {
    /// The method's name.
    const METHOD: MethodName;
    /// Its params object.
    type Params: Serialize + DeserializeOwned;
    /// Its result object.
    type Result: Serialize + DeserializeOwned;
}

/// Declares one marker type per method and the list of the methods declared, so the
/// list cannot drift from the implementations.
macro_rules! requests {
    ( $( $(#[$doc:meta])* $marker:ident = $method:expr, $params:ty => $result:ty; )+ ) => {
        $(
            $(#[$doc])*
            #[derive(Debug, Clone, Copy, PartialEq, Eq)]
            pub struct $marker;

            impl Request for $marker {
                const METHOD: MethodName = $method;
                type Params = $params;
                type Result = $result;
            }
        )+

        /// The method of every marker of this module, in declaration order.
        pub const TYPED: &[MethodName] = &[ $( <$marker as Request>::METHOD ),+ ];
    };
}

requests! {
    /// `initialize`.
    Initialize = MethodName::Base(Method::Initialize), InitializeParams => InitializeResult;
    /// `status`.
    Status = MethodName::Base(Method::Status), EmptyParams => StatusResult;
    /// `shutdown`.
    Shutdown = MethodName::Base(Method::Shutdown), EmptyParams => ShutdownResult;
    /// `session.create`.
    SessionCreate = MethodName::Base(Method::SessionCreate), EmptyParams => SessionResult;
    /// `session.open`.
    SessionOpen = MethodName::Base(Method::SessionOpen), SessionOpenParams => SessionResult;
    /// `session.list`.
    SessionList = MethodName::Base(Method::SessionList), SessionListParams => SessionListResult;
    /// `session.discover` (gated).
    SessionDiscover = MethodName::Base(Method::SessionDiscover),
        SessionDiscoverParams => SessionDiscoverResult;
    /// `model.catalog`.
    ModelCatalog = MethodName::Base(Method::ModelCatalog),
        ModelCatalogParams => ModelCatalogResult;
    /// `model.catalog.status` (gated).
    ModelCatalogStatus = MethodName::Base(Method::ModelCatalogStatus),
        CatalogStatusParams => CatalogStatusResult;
    /// `model.refresh` (gated).
    ModelRefresh = MethodName::Base(Method::ModelRefresh),
        ModelRefreshParams => ModelRefreshResult;
    /// `operation.cancel` (gated).
    OperationCancel = MethodName::Base(Method::OperationCancel),
        OperationCancelParams => OperationCancelResult;
    /// `selection.set`.
    SelectionSet = MethodName::Base(Method::SelectionSet),
        SelectionSetParams => SelectionSetResult;
    /// `history.page`.
    HistoryPage = MethodName::Base(Method::HistoryPage), HistoryPageParams => HistoryPageResult;
    /// `turn.start`.
    TurnStart = MethodName::Base(Method::TurnStart), TurnStartParams => TurnStartResult;
    /// `turn.cancel`.
    TurnCancel = MethodName::Base(Method::TurnCancel), TurnCancelParams => TurnCancelResult;
    /// `approval.answer`.
    ApprovalAnswer = MethodName::Base(Method::ApprovalAnswer),
        ApprovalAnswerParams => ApprovalAnswerResult;
    /// `client.tool.result` (with `client.tools`).
    ClientToolResult = MethodName::Extension(ExtensionMethod::ClientToolResult),
        ClientToolResultParams => ClientToolResultResult;
    /// `question.answer` (with `user.questions`).
    QuestionAnswer = MethodName::Extension(ExtensionMethod::QuestionAnswer),
        QuestionAnswerParams => QuestionAnswerResult;
    /// `session.compact` (with `session.usage`).
    SessionCompact = MethodName::Extension(ExtensionMethod::SessionCompact),
        SessionCompactParams => SessionCompactResult;
    /// `client.terminal.result` (with `client.terminals`): answered like
    /// `client.tool.result`.
    ClientTerminalResult = MethodName::Extension(ExtensionMethod::ClientTerminalResult),
        ClientTerminalResultParams => ClientToolResultResult;
    /// `client.file.result` (with `client.files`).
    ClientFileResult = MethodName::Extension(ExtensionMethod::ClientFileResult),
        ClientFileResultParams => ClientFileResultResult;
    /// `job.output` (with `jobs.control`).
    JobOutput = MethodName::Extension(ExtensionMethod::JobOutput), JobParams => JobOutputResult;
    /// `job.stop` (with `jobs.control`).
    JobStop = MethodName::Extension(ExtensionMethod::JobStop), JobParams => JobStopResult;
    /// `model.cached` (with `model.cached`).
    ModelCached = MethodName::Extension(ExtensionMethod::ModelCached),
        ModelCachedParams => ModelCachedResult;
    /// `permissions.list` (with `permissions.modes`).
    PermissionsList = MethodName::Extension(ExtensionMethod::PermissionsList),
        PermissionsListParams => PermissionsListResult;
    /// `permissions.mode.set` (with `permissions.modes`).
    PermissionModeSet = MethodName::Extension(ExtensionMethod::PermissionModeSet),
        PermissionModeSetParams => PermissionModeSetResult;
    /// `permissions.rule.revoke` (with `permissions.modes`).
    PermissionRuleRevoke = MethodName::Extension(ExtensionMethod::PermissionRuleRevoke),
        PermissionRuleRevokeParams => PermissionRuleRevokeResult;
    /// `checkpoint.list` (with `checkpoints`).
    CheckpointList = MethodName::Extension(ExtensionMethod::CheckpointList),
        CheckpointListParams => CheckpointListResult;
    /// `checkpoint.restore` (with `checkpoints`).
    CheckpointRestore = MethodName::Extension(ExtensionMethod::CheckpointRestore),
        CheckpointRestoreParams => CheckpointRestoreResult;
    /// `session.fork` (with `checkpoints`).
    SessionFork = MethodName::Extension(ExtensionMethod::SessionFork),
        SessionForkParams => SessionForkResult;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::Call;

    #[test]
    fn every_method_has_exactly_one_typed_request() {
        let base: Vec<Method> = TYPED
            .iter()
            .filter_map(|m| match m {
                MethodName::Base(method) => Some(*method),
                MethodName::Extension(_) => None,
            })
            .collect();
        assert_eq!(base, Method::ALL);
        let extensions: Vec<ExtensionMethod> = TYPED
            .iter()
            .filter_map(|m| match m {
                MethodName::Extension(method) => Some(*method),
                MethodName::Base(_) => None,
            })
            .collect();
        assert_eq!(extensions, ExtensionMethod::ALL);
    }

    #[test]
    fn names_are_the_wire_names_and_no_extension_shadows_a_base_method() {
        assert_eq!(TurnStart::METHOD.as_str(), "turn.start");
        assert_eq!(ClientToolResult::METHOD.as_str(), "client.tool.result");
        for extension in ExtensionMethod::ALL {
            assert_eq!(Method::from_wire(extension.as_str()), None, "{extension}");
        }
    }

    /// A typed request's params are what the server's parser reads under that name.
    fn reads_as_call<R: Request>(params: &R::Params) -> Call {
        let frame = serde_json::json!({ "method": R::METHOD.as_str(), "params": params });
        serde_json::from_value(frame).unwrap()
    }

    #[test]
    fn typed_params_are_what_the_server_parses() {
        let start = TurnStartParams {
            session_id: "s".into(),
            prompt: "hi".into(),
            attachments: None,
        };
        assert_eq!(
            reads_as_call::<TurnStart>(&start),
            Call::TurnStart(start.clone())
        );
        assert_eq!(
            reads_as_call::<SessionCreate>(&EmptyParams {}),
            Call::SessionCreate(EmptyParams {})
        );
        let list = SessionListParams {
            limit: Some(5),
            ..SessionListParams::default()
        };
        assert_eq!(
            reads_as_call::<SessionList>(&list),
            Call::SessionList(list.clone())
        );
    }
}
