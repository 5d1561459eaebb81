//! Helpers of the conversation tests (`e2e_chat*.rs`): the time limit, the servers they run and
//! what a View reported.

use std::time::Duration;

use serde_json::Value;

use super::node_server;

pub const LIMIT: Duration = Duration::from_secs(90);

/// The trust fixture's vault (a prompt, a resource, a View with a tool of its own).
pub fn vault() -> String {
    node_server("trust/a/index.mjs", "--name Vault --role vault")
}

pub fn chat_server() -> String {
    node_server("chat-app-server.mjs", "")
}

/// What the View reported with its app-only `report` tool, by phase.
pub fn view_report(trace: &[Value], phase: &str) -> Option<Value> {
    trace.iter().find_map(|r| {
        let p = &r["msg"]["params"];
        (r["dir"] == "view->host"
            && r["msg"]["method"] == "tools/call"
            && p["name"] == "report"
            && p["arguments"]["results"]["phase"] == phase)
            .then(|| p["arguments"]["results"].clone())
    })
}
