//! A custom `HostPolicy` that asks on the terminal before every tool call a View makes, and
//! otherwise keeps the built-in answers (no links, no messages, no downloads).
//!
//! `cargo run --example custom_policy -- "<server command line>" <tool> [trace.jsonl]`

use std::io::{BufRead, Write};
use std::sync::Arc;

use mcp_apps_host::bridge::{BoxFuture, HostPolicy, ViewInfo};
use mcp_apps_host::host::ExitAfter;
use mcp_apps_host::host::Host;
use serde_json::Value;

/// Asks before every app tool call; with no terminal to ask (stdin closed), the answer is no.
struct AskFirst;

impl HostPolicy for AskFirst {
    fn allow_app_tool_call(&self, view: &ViewInfo, tool: &Value) -> BoxFuture<bool> {
        let question = format!(
            "{} (from {}) wants to call `{}`. Allow? [y/N] ",
            view.tool,
            view.server,
            tool["name"].as_str().unwrap_or("?")
        );
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                eprint!("{question}");
                let _ = std::io::stderr().flush();
                let mut answer = String::new();
                let read = std::io::stdin().lock().read_line(&mut answer).unwrap_or(0);
                let yes = read > 0 && answer.trim().eq_ignore_ascii_case("y");
                eprintln!("{}", if yes { "allowed" } else { "refused" });
                yes
            })
            .await
            .unwrap_or(false)
        })
    }
}

fn main() -> mcp_apps_host::Result<()> {
    let mut args = std::env::args().skip(1);
    let (server, tool) = (args.next().expect("a server command line"), args.next().expect("a tool name"));
    let mut builder =
        Host::builder().server_command(&server).open_tool(&tool, Default::default()).policy(Arc::new(AskFirst));
    if let Some(trace) = args.next() {
        builder = builder.trace(trace).exit_after(ExitAfter::Teardown, std::time::Duration::from_secs(60));
    }
    std::process::exit(builder.build()?.run()?);
}
