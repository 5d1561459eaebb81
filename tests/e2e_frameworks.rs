//! Views built with other frameworks than the official App SDK, in the real host (WebKitGTK under
//! a display, the real sandbox proxy), working as they do in browser hosts.

mod common;

use std::time::Duration;

use common::*;
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(60);

/// The View's `tools/call` of `tool` as the host forwarded it, and whether its answer reached
/// the View.
fn view_call<'a>(run: &'a Run, tool: &str) -> Option<(&'a Value, bool)> {
    let request =
        run.trace.iter().find(|r| r["dir"] == "view->host" && r["msg"]["params"]["name"] == tool).map(|r| &r["msg"])?;
    let answered = run
        .trace
        .iter()
        .any(|r| r["dir"] == "host->view" && r["msg"]["id"] == request["id"] && r["msg"].get("result").is_some());
    Some((request, answered))
}

/// `@mcp-ui/server`'s MCP Apps adapter (`createUIResource` with `adapters.mcpApps`) sends every
/// message through a bound `parent.postMessage`, which WebKitGTK delivers with the proxy itself as
/// `event.source`. The widget completes the handshake, gets its tool result, and calls a tool
/// back through the host, which answers it.
#[test]
fn an_mcp_ui_widget_with_the_mcp_apps_adapter_works() {
    let server = node_server("mcp-ui-server.mjs", "");
    let run = run_host_until(
        &["run", "--stdio", &server, "--tool", "mcp-ui-greet", "--args", r#"{"name":"WebKit"}"#, "--timeout", "50"],
        |t| {
            t.iter()
                .any(|r| r["dir"] == "host->view" && r["msg"]["result"]["structuredContent"]["from"] == "mcp-ui widget")
        },
        LIMIT,
    );
    let dump = || {
        let tail: Vec<&str> = run.stderr.lines().rev().take(30).collect();
        format!("{:#?}\n--- stderr ---\n{}", run.trace, tail.into_iter().rev().collect::<Vec<_>>().join("\n"))
    };
    let init = run
        .dir("view->host")
        .find(|m| m["method"] == "ui/initialize")
        .unwrap_or_else(|| panic!("the adapter never reached the host:\n{}", dump()));
    assert_eq!(init["params"]["appInfo"]["name"], "mcp-ui-adapter", "{init}");
    assert!(run.dir("view->host").any(|m| m["method"] == "ui/notifications/initialized"), "{}", dump());
    assert!(run.dir("host->view").any(|m| m["method"] == "ui/notifications/tool-result"), "{}", dump());
    let (call, answered) = view_call(&run, "mcp-ui-echo").unwrap_or_else(|| panic!("no call back:\n{}", dump()));
    // The widget saw the tool's structured result and said so through the host.
    assert_eq!(call["params"]["arguments"]["saw"]["who"], "WebKit", "{call}");
    assert!(answered, "the call back was not answered:\n{}", dump());
    assert!(run.stderr.contains("MCP-UI ECHO"), "the server never got the call:\n{}", dump());
    // The adapter's console.log and console.debug lines reach the trace (and preview's log).
    let levels: Vec<&str> = run
        .dir("diagnostic")
        .filter(|m| m["kind"] == "console")
        .filter(|m| m["detail"]["message"].as_str().is_some_and(|t| t.contains("[MCP Apps Adapter]")))
        .filter_map(|m| m["detail"]["level"].as_str())
        .collect();
    for level in ["log", "debug"] {
        assert!(levels.contains(&level), "no console.{level} of the View forwarded: {levels:?}");
    }
}

/// An uncaught error of the View is reported with the View's resource URI and the line in its
/// HTML, not the sandbox proxy's URL; its console.error keeps its level.
#[test]
fn diagnostics_name_the_views_resource_and_its_html_line() {
    let server = node_server("fault-server.mjs", "throws");
    let run = run_host(
        &["run", "--stdio", &server, "--tool", "fault", "--exit-after", "result", "--settle-ms", "800"],
        LIMIT,
    );
    let html = run
        .dir("host->proxy")
        .find_map(|m| m["params"]["html"].as_str())
        .unwrap_or_else(|| panic!("no resource sent; stderr:\n{}", run.stderr));
    let line = html.lines().position(|l| l.contains("uncaught on purpose")).unwrap() + 1;
    let error = run
        .dir("diagnostic")
        .find(|m| m["kind"] == "error")
        .unwrap_or_else(|| panic!("no error diagnostic: {:#?}", run.trace));
    assert_eq!(error["detail"]["source"], "ui://fault/view.html", "{error}");
    assert_eq!(error["detail"]["line"], line, "{error}");
    assert!(!error.to_string().contains("proxy.html"), "{error}");
    let console = run.dir("diagnostic").find(|m| m["kind"] == "console").expect("the console.error");
    assert_eq!(console["detail"]["level"], "error", "{console}");
}
