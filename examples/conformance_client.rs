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
use mcp_apps_host::server::connection::{ConnectOptions, Connection};
use mcp_apps_host::server::requests::{form_defaults, ElicitAnswer, Elicitation, ElicitationKind, ServerRequests};
use mcp_apps_host::server::ServerSpec;
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
    let options = ConnectOptions::default()
        .handshake_timeout(Duration::from_secs(10))
        .call_timeouts(Duration::from_secs(10), Duration::from_secs(20))
        .requests(Arc::new(Defaults));
    let conn = Connection::connect_with(&spec, options).await.map_err(|e| e.to_string())?;
    eprintln!("connected to {url} for {scenario:?}: tools {:?}", names(&conn.tools()));
    let call = |name: &str, arguments: Value| {
        let arguments: Map<String, Value> = arguments.as_object().cloned().unwrap_or_default();
        conn.call_tool(name.to_owned(), Some(arguments), CallControl::default())
    };
    let outcome = match scenario.as_str() {
        "tools_call" => call("add_numbers", json!({"a": 5, "b": 3})).await.map(Some),
        "elicitation-sep1034-client-defaults" => call("test_client_elicitation_defaults", json!({})).await.map(Some),
        // Any other scenario that lists tools (sse-retry's `test_reconnection`): call the first one.
        _ => match names(&conn.tools()).first() {
            Some(first) if scenario != "initialize" => call(first, json!({})).await.map(Some),
            _ => Ok(None),
        },
    };
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

fn names(tools: &[Value]) -> Vec<String> {
    tools.iter().filter_map(|t| t.get("name").and_then(Value::as_str).map(str::to_owned)).collect()
}
