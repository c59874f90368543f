//! Unit tests of the message types' parsing rules.

use super::*;
use crate::error::StartupError;

#[test]
fn effort_requests_are_exact() {
    let parse = |effort: &str| {
        serde_json::from_str::<SelectionSetParams>(&format!(
            r#"{{"session_id":"s","selection_revision":"r","catalog_revision":"c","provider":"p","model":"m"{effort}}}"#
        ))
    };
    assert_eq!(parse("").unwrap().effort, None);
    assert_eq!(
        parse(r#","effort":{"mode":"keep"}"#).unwrap().effort,
        Some(EffortRequest::Keep)
    );
    assert_eq!(
        parse(r#","effort":{"mode":"set","value":"high"}"#)
            .unwrap()
            .effort,
        Some(EffortRequest::Set {
            value: Effort::High
        })
    );
    for bad in [
        r#","effort":null"#,
        r#","effort":{"mode":"keep","value":"high"}"#,
        r#","effort":{"mode":"default","value":"low"}"#,
        r#","effort":{"mode":"set"}"#,
        r#","effort":{"mode":"set","value":null}"#,
        r#","effort":{"mode":"set","value":"HIGH"}"#,
        r#","effort":{"mode":"turbo"}"#,
        r#","effort":{"mode":"set","value":"high","x":1}"#,
        r#","extra":1"#,
    ] {
        assert!(parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn params_are_exact_and_results_tolerate_additions() {
    assert!(serde_json::from_str::<EmptyParams>(r#"{"x":1}"#).is_err());
    assert!(
        serde_json::from_str::<InitializeParams>(r#"{"required_capabilities":[],"x":1}"#).is_err()
    );
    let status = r#"{"state":"failed","readiness":"provider_unavailable","provider":null,"model":null,"context_id":null,"session_id":null,"run_id":null,"selection":null}"#;
    let status: StatusResult = serde_json::from_str(status).unwrap();
    assert_eq!(
        status.readiness,
        Readiness::Failed(StartupError::ProviderUnavailable)
    );
    assert!(serde_json::from_str::<Readiness>(r#""maybe""#).is_err());
}

#[test]
fn session_list_params_are_exact() {
    let parse = serde_json::from_str::<SessionListParams>;
    assert_eq!(parse("{}").unwrap(), SessionListParams::default());
    let all = parse(r#"{"revision":"r","cursor":"c","limit":5}"#).unwrap();
    assert_eq!(
        (all.revision.as_deref(), all.cursor.as_deref(), all.limit),
        (Some("r"), Some("c"), Some(5))
    );
    let nulls = parse(r#"{"revision":null,"cursor":null}"#).unwrap();
    assert_eq!(nulls, SessionListParams::default());
    for bad in [
        r#"{"limit":null}"#,
        r#"{"limit":-1}"#,
        r#"{"limit":1.5}"#,
        r#"{"limit":"1"}"#,
        r#"{"revision":1}"#,
        r#"{"x":1}"#,
        r#"{"limit":1,"limit":2}"#,
        r#"{"cursor":null,"cursor":null}"#,
    ] {
        assert!(parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn approval_frames_carry_the_extension_fields_only_when_given() {
    let base = ApprovalRequested {
        session_id: "s".into(),
        run_id: "r".into(),
        approval_id: "a".into(),
        summary: "bash".into(),
        expires_in_ms: 60_000,
        subject: None,
        suggested_rule: None,
        proposed_change: None,
    };
    // Version 1 bytes, unchanged.
    assert_eq!(
        serde_json::to_string(&base).unwrap(),
        r#"{"session_id":"s","run_id":"r","approval_id":"a","summary":"bash","expires_in_ms":60000}"#
    );
    let scoped = ApprovalRequested {
        subject: Some(Some("ls".into())),
        suggested_rule: Some(None),
        proposed_change: Some(None),
        ..base.clone()
    };
    let text = serde_json::to_string(&scoped).unwrap();
    assert!(
        text.ends_with(r#""subject":"ls","suggested_rule":null,"proposed_change":null}"#),
        "{text}"
    );
    // Present null and absence stay apart when read back.
    assert_eq!(
        serde_json::from_str::<ApprovalRequested>(&text).unwrap(),
        scoped
    );

    let answer = |extra: &str| {
        serde_json::from_str::<ApprovalAnswerParams>(&format!(
            r#"{{"session_id":"s","run_id":"r","approval_id":"a","allow":false{extra}}}"#
        ))
    };
    assert!(!answer("").unwrap().uses_scopes());
    assert_eq!(
        answer(r#","scope":"session""#).unwrap().scope,
        Some(ApprovalScope::Session)
    );
    assert_eq!(
        answer(r#","message":"no","unavailable":true"#)
            .unwrap()
            .message
            .as_deref(),
        Some("no")
    );
    for bad in [
        r#","scope":null"#,
        r#","scope":"always""#,
        r#","message":null"#,
        r#","message":1"#,
        r#","unavailable":null"#,
        r#","unavailable":"yes""#,
        r#","rule":"bash""#,
    ] {
        assert!(answer(bad).is_err(), "{bad}");
    }
    let once = ApprovalAnswerParams::once("s", "r", "a", true);
    assert_eq!(
        serde_json::to_string(&once).unwrap(),
        r#"{"session_id":"s","run_id":"r","approval_id":"a","allow":true}"#
    );
}

#[test]
fn model_cached_params_are_exact_and_its_result_reads_every_field() {
    let parse = serde_json::from_str::<ModelCachedParams>;
    let fresh = parse(r#"{"provider":"openai"}"#).unwrap();
    assert_eq!(
        (fresh.provider.as_str(), fresh.cursor.as_deref()),
        ("openai", None)
    );
    assert_eq!(
        parse(r#"{"provider":"openai","cursor":null}"#).unwrap(),
        fresh
    );
    let next = parse(r#"{"provider":"openai","cursor":"m1.100"}"#).unwrap();
    assert_eq!(next.cursor.as_deref(), Some("m1.100"));
    for bad in [
        r#"{}"#,
        r#"{"cursor":null}"#,
        r#"{"provider":null}"#,
        r#"{"provider":1}"#,
        r#"{"provider":"openai","cursor":1}"#,
        r#"{"provider":"openai","limit":5}"#,
        r#"{"provider":"a","provider":"b"}"#,
    ] {
        assert!(parse(bad).is_err(), "{bad}");
    }
    let result: ModelCachedResult = serde_json::from_str(
        r#"{"provider":"openai","cache":"ready","models":[{"model":"gpt-5","display_name":null,"enabled":true}],"next_cursor":null,"notices":[]}"#,
    )
    .unwrap();
    assert_eq!(
        result.models,
        [CachedModelEntry {
            model: "gpt-5".into(),
            display_name: None,
            enabled: true,
        }]
    );
    // Every field of an entry is required: a client cannot take a missing flag for false.
    assert!(
        serde_json::from_str::<CachedModelEntry>(r#"{"model":"gpt-5","display_name":null}"#)
            .is_err()
    );
    assert!(
        serde_json::from_str::<ModelCachedResult>(
            r#"{"provider":"openai","cache":"stale","models":[],"next_cursor":null,"notices":[]}"#
        )
        .is_err()
    );
}
