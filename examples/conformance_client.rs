//! The MCP conformance suite's "client under test", built on the crate's own connection code.
//!
//! The suite (`@modelcontextprotocol/conformance client --command ... --scenario NAME`) starts a
//! test server, runs `<command> <server URL>` with `MCP_CONFORMANCE_SCENARIO=NAME`, and checks
//! what the client did once it exits. `scripts/conformance` runs it for each scenario the host
//! must pass.
//!
//! ```text
//! cargo run --example conformance_client -- http://localhost:3000/mcp
//! ```

use std::sync::Arc;
use std::time::Duration;

use mcp_apps_host::bridge::{BoxFuture, CallControl};
use mcp_apps_host::server::auth::{ClientRegistration, FollowRedirect};
use mcp_apps_host::server::connection::{auth_challenge_of, ConnectOptions, Connection};
use mcp_apps_host::server::requests::{form_defaults, ElicitAnswer, Elicitation, ElicitationKind, ServerRequests};
use mcp_apps_host::server::ServerSpec;
use mcp_apps_host::Error;
use serde_json::{json, Map, Value};

/// Answers form elicitations with the schema's defaults (what the elicitation scenario checks).
struct Defaults;

impl ServerRequests for Defaults {
    fn elicit(&self, request: Elicitation) -> BoxFuture<ElicitAnswer> {
        let answer = match &request.kind {
            ElicitationKind::Form { schema } => {
                form_defaults(schema).map_or(ElicitAnswer::Decline, ElicitAnswer::Accept)
            }
            _ => ElicitAnswer::Decline,
        };
        Box::pin(std::future::ready(answer))
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    match run().await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), String> {
    let url = std::env::args().next_back().filter(|a| a.starts_with("http")).ok_or("usage: conformance_client URL")?;
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let spec = ServerSpec::from_url(&url, &[]).map_err(|e| e.to_string())?;
    // Sign-in tokens go to a throwaway directory; the "browser" follows the authorization
    // server's redirect to the loopback listener, as a person approving would.
    let tokens = tempfile::tempdir().map_err(|e| e.to_string())?;
    let options = ConnectOptions::default()
        .handshake_timeout(Duration::from_secs(10))
        .call_timeouts(Duration::from_secs(10), Duration::from_secs(20))
        .requests(Arc::new(Defaults))
        .token_dir(tokens.path())
        .authorizer(Arc::new(FollowRedirect))
        .client_registration(registration());
    let conn = match Connection::connect_with(&spec, options.clone()).await {
        Ok(conn) => conn,
        Err(Error::AuthRequired { challenge, .. }) => {
            eprintln!("sign-in required: {challenge}");
            Connection::sign_in(&spec, options.clone(), Some(&challenge)).await.map_err(|e| e.to_string())?
        }
        Err(e) => return Err(e.to_string()),
    };
    eprintln!("connected to {url} for {scenario:?}: tools {:?}", names(&conn.tools()));
    let mut conn = conn;
    // A call the server refuses for want of (more) sign-in: sign in with its challenge (step-up
    // asks for the wider scope), connect again, and retry, at most twice.
    let call = |conn: Arc<Connection>, name: &str, arguments: Value| {
        let arguments: Map<String, Value> = arguments.as_object().cloned().unwrap_or_default();
        let name = name.to_owned();
        let (spec, options) = (spec.clone(), options.clone());
        async move {
            let mut conn = conn;
            for _ in 0..2 {
                match conn.call_tool(name.clone(), Some(arguments.clone()), CallControl::default()).await {
                    Err(e) if auth_challenge_of(&e).is_some() => {
                        let challenge = auth_challenge_of(&e).unwrap_or_default().to_owned();
                        eprintln!("the call needs sign-in: {challenge}");
                        conn.shutdown().await;
                        conn = Connection::sign_in(&spec, options.clone(), Some(&challenge))
                            .await
                            .map_err(|e| mcp_apps_host::protocol::RpcError::new(-32000, e.to_string()))?;
                    }
                    other => return other.map(|r| (conn, r)),
                }
            }
            Err(mcp_apps_host::protocol::RpcError::new(-32000, "sign-in did not satisfy the server"))
        }
    };
    let outcome = match scenario.as_str() {
        "tools_call" => call(conn.clone(), "add_numbers", json!({"a": 5, "b": 3})).await.map(Some),
        "elicitation-sep1034-client-defaults" => {
            call(conn.clone(), "test_client_elicitation_defaults", json!({})).await.map(Some)
        }
        // Any other scenario that lists tools (sse-retry's `test_reconnection`): call the first one.
        _ => match names(&conn.tools()).first() {
            Some(first) if scenario != "initialize" => call(conn.clone(), first, json!({})).await.map(Some),
            _ => Ok(None),
        },
    };
    let outcome = outcome.map(|o| {
        o.map(|(c, r)| {
            conn = c;
            r
        })
    });
    conn.shutdown().await;
    match outcome {
        Ok(Some(result)) => {
            eprintln!("result: {result}");
            Ok(())
        }
        Ok(None) => Ok(()),
        Err(e) => Err(format!("tools/call failed: {e}")),
    }
}

/// The suite's client identity: credentials it pre-registered (in `MCP_CONFORMANCE_CONTEXT`), or
/// the client ID metadata document URL its authorization servers know.
fn registration() -> ClientRegistration {
    let context: Value =
        std::env::var("MCP_CONFORMANCE_CONTEXT").ok().and_then(|c| serde_json::from_str(&c).ok()).unwrap_or_default();
    match context["client_id"].as_str() {
        Some(id) => ClientRegistration::preregistered(id, context["client_secret"].as_str().map(str::to_owned)),
        None => ClientRegistration::metadata_document("https://conformance-test.local/client-metadata.json"),
    }
}

fn names(tools: &[Value]) -> Vec<String> {
    tools.iter().filter_map(|t| t.get("name").and_then(Value::as_str).map(str::to_owned)).collect()
}
