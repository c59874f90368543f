//! The model, the reasoning effort and the approval mode as session config options,
//! from the backend's catalog, selection and `permissions.list`;
//! `session/set_config_option` is `selection.set`, or `permissions.mode.set` for the
//! mode (which may change while a turn runs: it applies to the next call that asks).

use agent_client_protocol_schema::v1::{
    Error, SessionConfigOption, SessionConfigOptionCategory, SessionConfigSelectOption,
};
use magi_client::Backend;
use magi_protocol::messages::{
    ApprovalMode, Availability, CatalogChoice, Effort, EffortRequest, EffortSupport,
    ModelCatalogParams, PermissionModeSetParams, PermissionsListParams, SelectionSetParams,
    SelectionStatus,
};
use magi_protocol::{ErrorCode, methods};
use serde_json::json;

/// The option ID of the model.
pub(crate) const MODEL: &str = "model";
/// The option ID of the reasoning effort.
pub(crate) const EFFORT: &str = "effort";
/// The option ID of the approval mode.
pub(crate) const MODE: &str = "mode";
/// Most catalog pages read for the options.
const CATALOG_PAGES: usize = 32;

/// The catalog's revision and choices.
struct Catalog {
    revision: String,
    choices: Vec<CatalogChoice>,
}

/// The session's config options as they are now.
pub(crate) async fn options(
    backend: &mut Backend,
    session_id: &str,
) -> Result<Vec<SessionConfigOption>, Error> {
    let selection = selection(backend).await?;
    // Without a catalog (a turn holds the session worker) the options still show the
    // model in use.
    let choices = catalog(backend)
        .await
        .map(|c| c.choices)
        .unwrap_or_default();
    let mut options = build(&selection, &choices);
    options.extend(mode_option(backend, session_id).await?);
    Ok(options)
}

/// The approval mode as a config option of category `mode`.
async fn mode_option(
    backend: &mut Backend,
    session_id: &str,
) -> Result<Option<SessionConfigOption>, Error> {
    let params = PermissionsListParams {
        session_id: session_id.to_owned(),
    };
    let listed = match backend.call::<methods::PermissionsList>(&params).await {
        Ok(Ok(listed)) => listed,
        // Not attached yet, or refused: no mode option rather than no session.
        Ok(Err(_)) => return Ok(None),
        Err(e) => return Err(gone(&e)),
    };
    let modes = ApprovalMode::ALL
        .into_iter()
        .map(|mode| {
            SessionConfigSelectOption::new(mode.as_str(), mode_name(mode))
                .description(mode_description(mode))
        })
        .collect::<Vec<_>>();
    Ok(Some(
        SessionConfigOption::select(MODE, "Approval mode", listed.mode.as_str(), modes)
            .category(SessionConfigOptionCategory::Mode),
    ))
}

/// A mode's display name.
fn mode_name(mode: ApprovalMode) -> &'static str {
    match mode {
        ApprovalMode::Plan => "Plan (read-only)",
        ApprovalMode::Ask => "Ask",
        ApprovalMode::Auto => "Auto",
        ApprovalMode::AllowAll => "Allow all",
    }
}

/// What a mode runs without asking.
fn mode_description(mode: ApprovalMode) -> &'static str {
    match mode {
        ApprovalMode::Plan => "No file changes; commands run confined read-only",
        ApprovalMode::Ask => "Asks before every edit, command and web request",
        ApprovalMode::Auto => {
            "Edits in the workspace and sandboxed commands run without asking; the rest asks"
        }
        ApprovalMode::AllowAll => "Everything runs without asking; deny and ask rules hold",
    }
}

/// `session/set_config_option` for the mode: switched at once, even while a turn runs.
pub(crate) async fn set_mode(
    backend: &mut Backend,
    session_id: &str,
    value: &str,
) -> Result<Vec<SessionConfigOption>, Error> {
    let mode = ApprovalMode::from_name(value).ok_or_else(|| {
        Error::invalid_params().data(json!(format!(
            "`{value}` is not an approval mode; the `mode` option lists them"
        )))
    })?;
    let params = PermissionModeSetParams {
        session_id: session_id.to_owned(),
        mode,
    };
    match backend.call::<methods::PermissionModeSet>(&params).await {
        Ok(Ok(_)) => options(backend, session_id).await,
        Ok(Err(code)) => Err(Error::internal_error().data(json!(format!(
            "the backend refused the approval mode: {}",
            code.as_str()
        )))),
        Err(e) => Err(gone(&e)),
    }
}

/// The options for a selection and the catalog's choices: every available model (and
/// the selected one even when the catalog does not list it), and the efforts the
/// selected model permits when it takes one.
fn build(selection: &SelectionStatus, choices: &[CatalogChoice]) -> Vec<SessionConfigOption> {
    let current = current_value(selection);
    let mut models: Vec<SessionConfigSelectOption> = choices
        .iter()
        .filter(|c| c.availability == Availability::Available || value_of(c) == current)
        .map(|c| {
            let name = c.model_name.clone().unwrap_or_else(|| c.model.clone());
            let provider = c
                .provider_name
                .clone()
                .unwrap_or_else(|| c.provider.clone());
            SessionConfigSelectOption::new(value_of(c), name).description(provider)
        })
        .collect();
    if !current.is_empty() && !models.iter().any(|m| *m.value.0 == *current) {
        models.insert(
            0,
            SessionConfigSelectOption::new(current.clone(), current.clone()),
        );
    }
    let mut options = vec![
        SessionConfigOption::select(MODEL, "Model", current, models)
            .category(SessionConfigOptionCategory::Model),
    ];
    if selection.effort_support != EffortSupport::Unsupported
        && !selection.permitted_efforts.is_empty()
    {
        let efforts: Vec<SessionConfigSelectOption> = selection
            .permitted_efforts
            .iter()
            .map(|e| SessionConfigSelectOption::new(e.as_str(), e.as_str()))
            .collect();
        options.push(
            SessionConfigOption::select(
                EFFORT,
                "Reasoning effort",
                selection.requested_effort.as_str(),
                efforts,
            )
            .category(SessionConfigOptionCategory::ThoughtLevel),
        );
    }
    options
}

/// The model option's value of the selection: `provider/model`, empty before one.
fn current_value(selection: &SelectionStatus) -> String {
    match (&selection.provider, &selection.model) {
        (Some(provider), Some(model)) => format!("{provider}/{model}"),
        _ => String::new(),
    }
}

/// A choice's option value: `provider/model`.
fn value_of(choice: &CatalogChoice) -> String {
    format!("{}/{}", choice.provider, choice.model)
}

/// `session/set_config_option`: switches the model or the effort, and returns every
/// option as it now is.
pub(crate) async fn set(
    backend: &mut Backend,
    session_id: &str,
    option: &str,
    value: &str,
) -> Result<Vec<SessionConfigOption>, Error> {
    let selection = selection(backend).await?;
    let catalog = catalog(backend).await?;
    let current = current_value(&selection);
    if option == MODEL && value == current {
        // Already selected (perhaps a model the catalog does not list): nothing to set.
        return options(backend, session_id).await;
    }
    let (provider, model, effort) = match option {
        MODEL => {
            let choice = catalog
                .choices
                .iter()
                .find(|c| value_of(c) == value)
                .ok_or_else(|| {
                    Error::invalid_params().data(json!(format!(
                        "`{value}` is not a model of the catalog; the `model` option lists them"
                    )))
                })?;
            (
                choice.provider.clone(),
                choice.model.clone(),
                EffortRequest::Keep,
            )
        }
        EFFORT => {
            let effort: Effort = serde_json::from_value(json!(value)).map_err(|_| {
                Error::invalid_params().data(json!(format!(
                    "`{value}` is not an effort; the `effort` option lists them"
                )))
            })?;
            let (Some(provider), Some(model)) =
                (selection.provider.clone(), selection.model.clone())
            else {
                return Err(Error::internal_error().data(json!("no model is selected yet")));
            };
            (provider, model, EffortRequest::Set { value: effort })
        }
        other => {
            return Err(Error::invalid_params().data(json!(format!(
                "no config option `{other}`; the options are `{MODEL}`, `{EFFORT}` and \
                 `{MODE}`"
            ))));
        }
    };
    let params = SelectionSetParams {
        session_id: session_id.to_owned(),
        selection_revision: selection.revision,
        catalog_revision: catalog.revision,
        provider,
        model,
        effort: Some(effort),
    };
    match backend.call::<methods::SelectionSet>(&params).await {
        Ok(Ok(set)) => {
            let mut options = build(&set.selection, &catalog.choices);
            options.extend(mode_option(backend, session_id).await?);
            Ok(options)
        }
        Ok(Err(ErrorCode::EffortUnsupported)) => Err(Error::invalid_params().data(json!(
            "the model does not take that effort; the `effort` option lists the ones it does"
        ))),
        Ok(Err(code)) => Err(Error::internal_error().data(json!(format!(
            "the backend refused the selection: {}",
            code.as_str()
        )))),
        Err(e) => Err(gone(&e)),
    }
}

async fn selection(backend: &mut Backend) -> Result<SelectionStatus, Error> {
    match backend.status().await {
        Ok(Ok(status)) => status
            .selection
            .ok_or_else(|| Error::internal_error().data(json!("the backend has no selection yet"))),
        Ok(Err(code)) => {
            Err(Error::internal_error().data(json!(format!("status failed: {}", code.as_str()))))
        }
        Err(e) => Err(gone(&e)),
    }
}

/// Every page of one catalog snapshot, at most [`CATALOG_PAGES`].
async fn catalog(backend: &mut Backend) -> Result<Catalog, Error> {
    let mut params = ModelCatalogParams::default();
    let mut catalog: Option<Catalog> = None;
    for _ in 0..CATALOG_PAGES {
        let page = match backend.call::<methods::ModelCatalog>(&params).await {
            Ok(Ok(page)) => page,
            Ok(Err(code)) => {
                return Err(Error::internal_error()
                    .data(json!(format!("model.catalog failed: {}", code.as_str()))));
            }
            Err(e) => return Err(gone(&e)),
        };
        let into = catalog.get_or_insert_with(|| Catalog {
            revision: page.revision.clone(),
            choices: Vec::new(),
        });
        into.choices.extend(page.choices);
        match page.next_cursor {
            Some(cursor) if !page.complete => {
                params = ModelCatalogParams {
                    revision: Some(page.revision),
                    cursor: Some(cursor),
                    limit: None,
                };
            }
            _ => break,
        }
    }
    catalog.ok_or_else(|| Error::internal_error().data(json!("the catalog is empty")))
}

/// The error of a backend that can no longer be reached.
pub(crate) fn gone(e: &magi_client::ClientError) -> Error {
    Error::internal_error().data(json!(format!("the session's backend is gone: {e}")))
}
