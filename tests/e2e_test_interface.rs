//! The test interface for conformance runners (`run --test-interface`): a runner drives the
//! host over stdin and stdout the way ext-apps' proposed host interface names, with a published
//! App (the official vanilla JS example).

mod common;

use std::io::BufReader;
use std::process::{Command, Stdio};

use common::runner::Runner;
use common::*;
use serde_json::{json, Value};

/// Every method answers as the person's action would come out: the App is displayed once it
/// initialized, a real click in it makes its message, the consent for it is answered yes, the
/// conversation then holds it; the host context reaches the View; a server tool is called; a
/// message without a model and an unknown method are refused with why; reset closes the View;
/// the host ends when the runner closes its input.
#[test]
fn a_conformance_runner_drives_the_host_through_its_test_interface() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    let mut child = Command::new(env!("CARGO_BIN_EXE_mcp-apps-host"))
        .args(["run", "--stdio", &basic_vanillajs(), "--test-interface", "--open-with", "true", "--trace"])
        .arg(&trace)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (input, output) = (child.stdin.take().unwrap(), BufReader::new(child.stdout.take().unwrap()));
    let mut runner = Runner { child, input, output, next: 0 };

    // The server may still be starting: the tool is there once it is.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let tools = runner.call("readModelToolList", json!({}));
        if tools["result"]["tools"].as_array().is_some_and(|t| t.iter().any(|t| t["name"] == "get-time")) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the server's tool never came: {tools}");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let shown = runner.call("displayTestApp", json!({"tool": "get-time"}));
    assert_eq!(shown["result"], json!({"view": "v1", "tool": "get-time"}), "{shown}");
    let clicked = runner.call("interact", json!({"view": "v1", "step": {"click": {"text": "Send Message"}}}));
    assert!(clicked["result"]["detail"].as_str().unwrap_or_default().contains("Send Message"), "{clicked}");
    // The message asks the person first: the runner answers the dialog.
    let mut confirmed = Value::Null;
    for _ in 0..50 {
        confirmed = runner.call("confirmAction", json!({"accept": true}));
        if confirmed["result"].is_object() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(confirmed["result"]["view"], "v1", "{confirmed}");
    let mut conversation = Value::Null;
    for _ in 0..50 {
        conversation = runner.call("getConversation", json!({}));
        if conversation["result"]["messages"].as_array().is_some_and(|m| !m.is_empty()) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(conversation["result"]["messages"][0]["text"], "This is message text.", "{conversation}");
    assert_eq!(conversation["result"]["messages"][0]["view"], "v1");

    let changed = runner.call("changeHostContext", json!({"context": {"theme": "dark"}}));
    assert_eq!(changed["result"]["views"], json!(["v1"]), "{changed}");
    let called = runner.call("callTool", json!({"name": "get-time"}));
    assert!(called["result"]["structuredContent"]["time"].is_string(), "{called}");
    let message = runner.call("sendMessage", json!({"text": "hello"}));
    assert!(message["error"]["message"].as_str().unwrap().contains("no model is configured"), "{message}");
    let unknown = runner.call("readMinds", json!({}));
    assert!(unknown["error"]["message"].as_str().unwrap().contains("unknown method"), "{unknown}");
    let reset = runner.call("resetEnvironment", json!({}));
    assert_eq!(reset["result"]["closedViews"], json!(["v1"]), "{reset}");

    drop(runner.input);
    let status = runner.child.wait().unwrap();
    assert!(status.success(), "the host ends with its runner: {status:?}");
    let records: Vec<Value> =
        std::fs::read_to_string(&trace).unwrap().lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    assert!(
        records.iter().any(|r| r["dir"] == "host->view"
            && r["msg"]["method"] == "ui/notifications/host-context-changed"
            && r["msg"]["params"]["theme"] == "dark"),
        "the View was told the new host context"
    );
}

/// The way the official conformance runner drives a host, with the scripted model standing in
/// for a model: display the App, read the frame around it (its sandbox), evaluate in its frame,
/// click in it, confirm its message, prompt the model, and read the conversation: each turn once
/// with its real role (the App's message, the model's answers, the person's prompt, the model's
/// tool call with its result), in order. A scoped reset keeps the runner's View.
#[test]
fn a_conformance_runner_inspects_evaluates_and_reads_each_turn_with_its_role() {
    let data = tempfile::tempdir().unwrap();
    let mut runner = Runner::start(&[&basic_vanillajs()], &[], "get-time", data.path());
    let shown = runner.call("displayTestApp", json!({"tool": "get-time"}));
    assert_eq!(shown["result"]["view"], "v1", "{shown}");

    // The document that holds the View's frame is its proxy page: one sandboxed iframe, the View's.
    let frame = runner.call("inspectFrame", json!({"view": "v1"}));
    let f = &frame["result"];
    assert_eq!((f["total"].as_u64(), f["sandboxed"].as_u64()), (Some(1), Some(1)), "{frame}");
    let flags: Vec<&str> = f["firstSandbox"].as_str().unwrap_or_default().split_whitespace().collect();
    assert!(flags.contains(&"allow-scripts") && !flags.contains(&"allow-top-navigation"), "{frame}");
    assert!(f["origin"].as_str().unwrap_or_default().starts_with("mcp-sandbox://"), "read in the proxy page: {frame}");
    assert_eq!(f["top"]["total"], 1, "the top document holds the proxy's frame: {frame}");
    assert_eq!(f["top"]["origin"], "mcp-host://frame", "{frame}");

    // A script in the View's frame: its own realm (the App's globals), under the proxy.
    let value = runner.call(
        "evaluateInView",
        json!({"view": "v1", "script": "({inner: window.parent !== window.top, sum: 1 + 2, title: typeof document.title, buttons: document.querySelectorAll('button').length > 0})"}),
    );
    assert_eq!(
        value["result"]["value"],
        json!({"inner": true, "sum": 3, "title": "string", "buttons": true}),
        "{value}"
    );
    let later = runner.call(
        "evaluateInView",
        json!({"view": "v1", "script": "new Promise((r) => setTimeout(() => r({settled: location.origin}), 50))"}),
    );
    assert!(later["result"]["value"]["settled"].as_str().unwrap_or_default().starts_with("mcp-sandbox://"), "{later}");
    let thrown = runner.call("evaluateInView", json!({"view": "v1", "script": "null.x"}));
    assert!(thrown["error"]["message"].as_str().unwrap_or_default().contains("threw"), "{thrown}");

    // The App's message, asked of the person first.
    runner.call("interact", json!({"view": "v1", "step": {"click": {"text": "Send Message"}}}));
    runner.until("the consent for the App's message", |r| {
        let c = r.call("confirmAction", json!({"accept": true}));
        c["result"].is_object().then_some(c)
    });
    runner.until("the model's answer to the App", |r| {
        let c = r.call("getConversation", json!({}));
        let m = c["result"]["messages"].as_array()?.clone();
        m.iter().any(|t| t["role"] == "assistant").then_some(c)
    });
    runner.call("sendMessage", json!({"text": "please run get-time"}));
    let conversation = runner.until("the model's call and its answer", |r| {
        // The model's call may ask the person first.
        r.call("confirmAction", json!({"accept": true}));
        let c = r.call("getConversation", json!({}));
        let m = c["result"]["messages"].as_array()?;
        let done = m.last().is_some_and(|t| {
            t["role"] == "assistant" && t["text"].as_str().is_some_and(|s| s.contains("The tool answered"))
        });
        done.then_some(c)
    });
    let turns = conversation["result"]["messages"].as_array().unwrap();
    let roles: Vec<&str> = turns.iter().map(|t| t["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["app", "assistant", "user", "assistant", "tool", "assistant"], "{conversation:#}");
    assert_eq!((turns[0]["text"].as_str(), turns[0]["view"].as_str()), (Some("This is message text."), Some("v1")));
    assert!(turns[1]["text"].as_str().unwrap().contains("Noted what the App said"), "{conversation:#}");
    assert_eq!(turns[2]["text"], "please run get-time", "the person's prompt alone: {conversation:#}");
    assert!(turns[3]["text"].as_str().unwrap().contains("Calling"), "{conversation:#}");
    assert_eq!(turns[4]["name"], "get-time", "{conversation:#}");
    assert!(turns[4]["result"]["structuredContent"]["time"].is_string(), "the call's result: {conversation:#}");

    // A reset scoped to another tool keeps the runner's View; the whole reset closes it.
    let kept = runner.call("resetEnvironment", json!({"tool": "no-such-tool"}));
    assert_eq!(kept["result"]["closedViews"], json!([]), "{kept}");
    let still = runner.call("evaluateInView", json!({"view": "v1", "script": "1"}));
    assert_eq!(still["result"]["value"], 1, "{still}");
    let reset = runner.call("resetEnvironment", json!({"tool": "get-time"}));
    let closed = reset["result"]["closedViews"].as_array().cloned().unwrap_or_default();
    assert!(closed.contains(&json!("v1")), "{reset}");
    let gone = runner.call("evaluateInView", json!({"view": "v1", "script": "1"}));
    assert!(gone["error"].is_object(), "{gone}");
    runner.end();
}
