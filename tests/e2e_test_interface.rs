//! The test interface for conformance runners (`run --test-interface`): a runner drives the
//! host over stdin and stdout the way ext-apps' proposed host interface names, with a published
//! App (the official vanilla JS example).

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use common::*;
use serde_json::{json, Value};

struct Runner {
    child: std::process::Child,
    input: std::process::ChildStdin,
    output: BufReader<std::process::ChildStdout>,
    next: u64,
}

impl Runner {
    fn call(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let request = json!({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params});
        writeln!(self.input, "{request}").unwrap();
        self.input.flush().unwrap();
        let mut line = String::new();
        self.output.read_line(&mut line).unwrap();
        let answer: Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("{method}: not JSON ({e}): {line:?}"));
        assert_eq!(answer["id"], self.next, "{answer}");
        answer
    }
}

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
