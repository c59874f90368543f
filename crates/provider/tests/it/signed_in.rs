//! A provider reached with a sign-in (ChatGPT's Codex backend): its token asked of the
//! sign-in at each request and sent with the account, a refused token replaced once,
//! a sign-in that gives none said as the request's failure, and its model list.

use std::sync::{Arc, Mutex};

use magi_provider::{
    Bearer, BoxFuture, Cause, Endpoint, ModelClient, ProviderError, SignIn, SignInFailure,
    WireFormat, codex, list_signed_in_models, signed_in_client,
};
use magi_testkit::{MockServer, Reply};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::common::{BOUND, prompt};

/// A sign-in handing out `tokens` in turn, recording what it was told was refused.
struct Tokens {
    next: Mutex<Vec<String>>,
    rejected: Mutex<Vec<Option<String>>>,
    fail: Option<SignInFailure>,
}

impl Tokens {
    fn new(tokens: &[&str]) -> Arc<Tokens> {
        Arc::new(Tokens {
            next: Mutex::new(tokens.iter().rev().map(|t| (*t).to_owned()).collect()),
            rejected: Mutex::new(Vec::new()),
            fail: None,
        })
    }
}

impl SignIn for Tokens {
    fn bearer<'a>(
        &'a self,
        rejected: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Bearer, SignInFailure>> {
        Box::pin(async move {
            self.rejected
                .lock()
                .unwrap()
                .push(rejected.map(str::to_owned));
            if let Some(failure) = &self.fail {
                return Err(failure.clone());
            }
            let mut next = self.next.lock().unwrap();
            let token = if next.len() > 1 {
                next.pop()
            } else {
                next.last().cloned()
            };
            Ok(Bearer {
                token: token.unwrap(),
                account_id: Some("acct-1".into()),
            })
        })
    }
}

fn endpoint(server: &MockServer) -> Endpoint {
    Endpoint {
        format: WireFormat::CodexResponses,
        base_url: server.base_url(),
        api_key: None,
    }
}

async fn run(client: Box<dyn ModelClient>) -> Result<(), magi_provider::Failure> {
    let (tx, mut rx) = mpsc::channel(16);
    let drain = async { while rx.recv().await.is_some() {} };
    let cancel = CancellationToken::new();
    let request = prompt("hi");
    let (result, ()) = tokio::time::timeout(BOUND, async {
        tokio::join!(client.stream(&request, tx, &cancel), drain)
    })
    .await
    .unwrap();
    result
}

#[tokio::test]
async fn the_token_and_account_go_with_a_responses_request_to_the_backend() {
    let server = MockServer::start().await;
    server.enqueue(Reply::stream().text(["ok"]));
    let tokens = Tokens::new(&["token-1"]);
    run(signed_in_client(endpoint(&server), tokens.clone()))
        .await
        .unwrap();
    let requests = server.requests();
    assert_eq!(requests[0].path, "/v1/responses");
    assert_eq!(requests[0].header("authorization"), Some("Bearer token-1"));
    assert_eq!(requests[0].header(codex::ACCOUNT_HEADER), Some("acct-1"));
    assert_eq!(requests[0].header("originator"), Some(codex::ORIGINATOR));
    assert_eq!(requests[0].body["store"], false);
    assert_eq!(requests[0].body["stream"], true);
    assert_eq!(requests[0].body["instructions"], "");
    assert_eq!(*tokens.rejected.lock().unwrap(), [None]);
}

#[tokio::test]
async fn a_refused_token_is_replaced_once() {
    let server = MockServer::start().await;
    server.enqueue(Reply::error(401, "{}"));
    server.enqueue(Reply::stream().text(["ok"]));
    let tokens = Tokens::new(&["old", "new"]);
    run(signed_in_client(endpoint(&server), tokens.clone()))
        .await
        .unwrap();
    let sent: Vec<_> = server
        .requests()
        .iter()
        .map(|r| r.header("authorization").unwrap().to_owned())
        .collect();
    assert_eq!(sent, ["Bearer old", "Bearer new"]);
    assert_eq!(
        *tokens.rejected.lock().unwrap(),
        [None, Some("old".to_owned())]
    );
    // Refused again with the new one: that failure is the answer, no third try.
    server.enqueue(Reply::error(401, "{}"));
    server.enqueue(Reply::error(401, "{}"));
    let failure = run(signed_in_client(
        endpoint(&server),
        Tokens::new(&["a", "b"]),
    ))
    .await
    .unwrap_err();
    assert_eq!(failure.error, ProviderError::AuthenticationFailed);
    assert_eq!(server.requests().len(), 4);
}

#[tokio::test]
async fn a_sign_in_that_gives_no_token_is_the_requests_failure_and_sends_nothing() {
    let server = MockServer::start().await;
    let tokens = Arc::new(Tokens {
        next: Mutex::new(Vec::new()),
        rejected: Mutex::new(Vec::new()),
        fail: Some(SignInFailure {
            error: ProviderError::AuthenticationFailed,
            what: "the sign-in was refused".into(),
            fix: "sign in again: magi-code login codex".into(),
        }),
    });
    let failure = run(signed_in_client(endpoint(&server), tokens))
        .await
        .unwrap_err();
    assert_eq!(failure.error, ProviderError::AuthenticationFailed);
    assert!(matches!(failure.cause, Cause::SignIn { .. }));
    let asked = magi_provider::Asked {
        provider: "codex",
        model: "m",
        credential: None,
    };
    assert_eq!(
        failure.describe(&asked),
        "the sign-in was refused: sign in again: magi-code login codex"
    );
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn the_backends_model_list_is_read_with_the_sign_in() {
    let server = MockServer::start().await;
    server.set_models_body(Some(
        r#"{"models":[{"slug":"gpt-5-codex","display_name":"GPT-5 Codex","context_window":272000,"visibility":"list"},{"slug":"gpt-5","display_name":null}]}"#.to_owned(),
    ));
    let tokens = Tokens::new(&["token-1"]);
    let models = list_signed_in_models(
        &endpoint(&server),
        tokens.as_ref(),
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    assert_eq!(models.len(), 2);
    assert_eq!(models[0].id, "gpt-5-codex");
    assert_eq!(models[0].name.as_deref(), Some("GPT-5 Codex"));
    assert_eq!(models[0].limits.context_window, Some(272_000));
    let request = &server.requests()[0];
    assert_eq!(request.path, "/v1/models");
    assert_eq!(
        request.query.as_deref(),
        Some(format!("client_version={}", codex::CLIENT_VERSION).as_str())
    );
    assert_eq!(request.header("authorization"), Some("Bearer token-1"));
}
