//! OpenAI Apps SDK widgets (`window.openai`, `text/html+skybridge`, `openai/outputTemplate`) in
//! the real host (WebKitGTK under a display, the real sandbox proxy) through the `window.openai`
//! shim, which speaks MCP Apps for them inside their own frame; and without it (`--no-openai-shim`).

mod common;

use std::time::Duration;

use common::*;
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(60);

fn dump(run: &Run) -> String {
    let tail: Vec<&str> = run.stderr.lines().rev().take(40).collect();
    format!("{:#?}\n--- stderr ---\n{}", run.trace, tail.into_iter().rev().collect::<Vec<_>>().join("\n"))
}

/// The widget's findings, as the server printed them.
fn widget_report(run: &Run) -> Option<Value> {
    let line = run.stderr.lines().find_map(|l| l.split_once("WIDGET-REPORT ").map(|(_, json)| json))?;
    // The host's log escapes nothing inside one line of JSON; it may add a suffix after the JSON.
    let end = line.rfind('}')? + 1;
    serde_json::from_str(&line[..end]).ok()
}

/// The host's answers to the View's `tools/call` of `tool` (JSON-RPC result or error).
fn answers_to<'a>(run: &'a Run, tool: &str) -> Vec<&'a Value> {
    let ids: Vec<&Value> = run
        .dir("view->host")
        .filter(|m| m["method"] == "tools/call" && m["params"]["name"] == tool)
        .map(|m| &m["id"])
        .collect();
    run.dir("host->view").filter(|m| m.get("method").is_none() && ids.contains(&&m["id"])).collect()
}

/// A widget written to the Apps SDK docs renders its `toolOutput`, follows `openai:set_globals`,
/// and its `callTool`, `setWidgetState` and `sendFollowUpMessage` go through the host as the MCP
/// Apps requests they map to; tools it may not call are refused as for any View.
#[test]
fn an_apps_sdk_widget_works_through_the_shim() {
    let server = node_server("openai-widget-server.mjs", "");
    let run = run_host_until(
        &[
            "run",
            "--stdio",
            &server,
            "--tool",
            "pizza-list",
            "--args",
            r#"{"city":"Napoli"}"#,
            "--consent",
            "allow",
            "--timeout",
            "50",
        ],
        |t| t.iter().any(|r| r["dir"] == "host->view" && r["msg"]["result"]["structuredContent"]["reported"] == true),
        LIMIT,
    );
    // The host asked its proxy for the shim, and the shim did the MCP Apps handshake.
    let ready = run
        .dir("host->proxy")
        .find(|m| m["method"] == "ui/notifications/sandbox-resource-ready")
        .unwrap_or_else(|| panic!("no resource sent:\n{}", dump(&run)));
    assert_eq!(ready["params"]["openaiShim"], true, "{ready}");
    // openai/widgetCSP reached the granted CSP through the validated builder.
    assert_eq!(ready["params"]["csp"]["connectDomains"][0], "https://api.pizza.example", "{ready}");
    let init = run
        .dir("view->host")
        .find(|m| m["method"] == "ui/initialize")
        .unwrap_or_else(|| panic!("the shim never initialized:\n{}", dump(&run)));
    assert_eq!(init["params"]["appInfo"]["name"], "openai-apps-sdk-shim", "{init}");
    assert!(run.dir("view->host").any(|m| m["method"] == "ui/notifications/initialized"), "{}", dump(&run));

    let report = widget_report(&run).unwrap_or_else(|| panic!("no widget report:\n{}", dump(&run)));
    // toolOutput was there when the widget's own script ran (the shim held its HTML until then).
    assert_eq!(report["hasOpenai"], true, "{report}");
    assert_eq!(report["toolOutputAtLoad"]["city"], "Napoli", "{report}");
    assert_eq!(report["toolInputAtLoad"]["city"], "Napoli", "{report}");
    assert_eq!(report["metadataAtLoad"]["requestedAt"], "fixture", "{report}");
    // Its callTool reached the server through the host, and it rendered the answer.
    assert_eq!(report["refresh"]["fresh"], true, "{report}");
    assert_eq!(report["refreshText"], "fresh pizza in Napoli", "{report}");
    assert_eq!(report["rendered"], "MargheritaMarinaraDiavola", "{report}");
    assert_eq!(report["title"], "Pizza in Napoli", "{report}");
    assert!(run.stderr.contains(r#"REFRESH {"city":"Napoli"}"#), "{}", dump(&run));
    assert!(
        run.dir("host->server").any(|m| m["method"] == "tools/call" && m["params"]["name"] == "pizza-refresh"),
        "{}",
        dump(&run)
    );
    // Globals from the host context; the widget's HTML kept its doctype (no quirks mode).
    assert!(report["theme"] == "light" || report["theme"] == "dark", "{report}");
    assert_eq!(report["displayMode"], "inline", "{report}");
    assert!(report["maxHeight"].is_number(), "{report}");
    assert!(report["locale"].is_string(), "{report}");
    assert_eq!(report["compatMode"], "CSS1Compat", "{report}");
    // setWidgetState -> ui/update-model-context; sendFollowUpMessage -> ui/message.
    assert_eq!(report["widgetState"]["favorite"], "Margherita", "{report}");
    let context = run
        .dir("view->host")
        .find(|m| m["method"] == "ui/update-model-context")
        .unwrap_or_else(|| panic!("no model context:\n{}", dump(&run)));
    assert_eq!(context["params"]["structuredContent"]["widgetState"]["favorite"], "Margherita", "{context}");
    assert_eq!(report["followUp"], "sent", "{report}");
    let message = run
        .dir("view->host")
        .find(|m| m["method"] == "ui/message")
        .unwrap_or_else(|| panic!("no follow-up message:\n{}", dump(&run)));
    assert_eq!(message["params"]["role"], "user", "{message}");
    assert_eq!(message["params"]["content"][0]["text"], "Order a Margherita in Napoli", "{message}");

    // The hostile angle: the shim adds no capability. `openai/widgetAccessible: false` and a
    // model-only `_meta.ui.visibility` are refused by the bridge, and never reach the server.
    for (tool, key) in [("pizza-secret", "secret"), ("pizza-model", "modelOnly")] {
        let text = report[key].as_str().unwrap_or_default();
        assert!(text.starts_with("refused:") && text.contains("not callable from Views"), "{tool}: {report}");
        let answers = answers_to(&run, tool);
        assert!(!answers.is_empty() && answers.iter().all(|a| a.get("error").is_some()), "{tool}: {answers:?}");
        assert!(
            !run.dir("host->server").any(|m| m["params"]["name"] == tool),
            "{tool} reached the server:\n{}",
            dump(&run)
        );
    }
    assert!(!run.stderr.contains("SECRET CALLED") && !run.stderr.contains("MODEL-ONLY CALLED"), "{}", dump(&run));
    // No CSP violation, uncaught error or console error from the widget or the shim.
    let bad: Vec<&Value> = run
        .dir("diagnostic")
        .filter(|m| {
            m["kind"] == "csp" || m["kind"] == "error" || (m["kind"] == "console" && m["detail"]["level"] == "error")
        })
        .collect();
    assert!(bad.is_empty(), "{bad:#?}");
}

/// With `--no-openai-shim` the widget gets no `window.openai`, and nothing initializes.
#[test]
fn without_the_shim_the_widget_gets_no_window_openai() {
    let server = node_server("openai-widget-server.mjs", "");
    let run = run_host_until(
        &[
            "run",
            "--stdio",
            &server,
            "--tool",
            "pizza-list",
            "--no-openai-shim",
            "--consent",
            "allow",
            "--timeout",
            "50",
        ],
        |t| {
            t.iter().any(|r| {
                r["dir"] == "diagnostic"
                    && r["msg"]["detail"]["message"].as_str().is_some_and(|m| m.contains("no window.openai"))
            })
        },
        LIMIT,
    );
    let ready = run
        .dir("host->proxy")
        .find(|m| m["method"] == "ui/notifications/sandbox-resource-ready")
        .unwrap_or_else(|| panic!("no resource sent:\n{}", dump(&run)));
    assert!(ready["params"].get("openaiShim").is_none(), "{ready}");
    assert!(
        run.dir("diagnostic").any(|m| m["detail"]["message"].as_str().is_some_and(|t| t.contains("no window.openai"))),
        "the widget did not run:\n{}",
        dump(&run)
    );
    // The shim would have initialized before the widget's own script ran: there is no handshake.
    assert!(!run.dir("view->host").any(|m| m["method"] == "ui/initialize"), "{}", dump(&run));
    assert!(widget_report(&run).is_none(), "{}", dump(&run));
}
