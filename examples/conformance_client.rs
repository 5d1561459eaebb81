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
    // A server that still refuses right after a sign-in (its authorization server moved, so the
    // new token is not good for it) asks for one more, as the app asks the person again.
    let mut attempt = Connection::connect_with(&spec, options.clone()).await;
    for _ in 0..2 {
        let Err(Error::AuthRequired { challenge, .. }) = &attempt else { break };
        eprintln!("sign-in required: {challenge}");
        attempt = Connection::sign_in(&spec, options.clone(), Some(challenge)).await;
    }
    let conn = attempt.map_err(|e| e.to_string())?;
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
    // The calls the scenario asks for (`MCP_CONFORMANCE_CONTEXT.toolCalls`), else its own ones.
    let mut calls: Vec<(String, Value)> = context()["toolCalls"]
        .as_array()
        .map(|list| {
            list.iter().map(|c| (c["name"].as_str().unwrap_or_default().to_owned(), c["arguments"].clone())).collect()
        })
        .unwrap_or_default();
    match scenario.as_str() {
        "tools_call" => calls = vec![("add_numbers".into(), json!({"a": 5, "b": 3}))],
        "elicitation-sep1034-client-defaults" => calls = vec![("test_client_elicitation_defaults".into(), json!({}))],
        // Every multi round-trip tool: state echoed, no state, unrelated state, no resultType.
        "sep-2322-client-request-state" if calls.is_empty() => {
            calls = names(&conn.tools())
                .into_iter()
                .filter(|n| n.starts_with("test_mrtr"))
                .map(|n| (n, json!({})))
                .collect()
        }
        // The echo tool gets the schema of the tool the scenario is about, exactly as listed.
        "json-schema-2020-12-preservation" => {
            let schema = conn.tool("json_schema_2020_12_tool").and_then(|t| t.get("inputSchema").cloned());
            calls = vec![("json_schema_echo".into(), json!({"schema": schema.unwrap_or_default()}))];
        }
        "http-standard-headers" => {
            // Each method with a name header of its own.
            for (method, params) in [
                ("resources/list", json!({})),
                ("prompts/list", json!({})),
                ("resources/read", json!({"uri": "file:///path/to/file%20name.txt"})),
                ("prompts/get", json!({"name": "test_prompt"})),
            ] {
                eprintln!("{method}: {:?}", conn.request(method, params).await.map(drop));
            }
        }
        _ => {}
    }
    let outcome = match scenario.as_str() {
        // Only listing is checked (the server has no tools/call).
        "initialize" | "json-schema-ref-no-deref" => Ok(None),
        _ if !calls.is_empty() => {
            let mut last = Ok(None);
            for (name, arguments) in calls {
                last = call(conn.clone(), &name, arguments).await.map(Some);
                match &last {
                    Ok(Some((c, result))) => {
                        eprintln!("{name}: {result}");
                        conn = c.clone();
                    }
                    Ok(None) => {}
                    Err(e) => {
                        eprintln!("{name} failed: {e}");
                        break;
                    }
                }
            }
            last
        }
        // Any other scenario that lists tools (sse-retry's `test_reconnection`): call the first one.
        _ => match names(&conn.tools()).first() {
            Some(first) => call(conn.clone(), first, json!({})).await.map(Some),
            None => Ok(None),
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
    let context = context();
    match context["client_id"].as_str() {
        Some(id) => ClientRegistration::preregistered(id, context["client_secret"].as_str().map(str::to_owned)),
        None => ClientRegistration::metadata_document("https://conformance-test.local/client-metadata.json"),
    }
}

/// What the suite tells the client about the scenario.
fn context() -> Value {
    std::env::var("MCP_CONFORMANCE_CONTEXT").ok().and_then(|c| serde_json::from_str(&c).ok()).unwrap_or_default()
}

fn names(tools: &[Value]) -> Vec<String> {
    tools.iter().filter_map(|t| t.get("name").and_then(Value::as_str).map(str::to_owned)).collect()
}
