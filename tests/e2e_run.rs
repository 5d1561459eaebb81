//! End to end: the `run` binary under a real display (Xvfb in CI), real WebKitGTK, the real
//! sandbox proxy, real npm MCP servers, Views built with the official App SDK.

mod common;

use std::time::Duration;

use common::*;
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(90);

fn method_pos(run: &Run, dir: &str, method: &str) -> usize {
    run.position(|r| r["dir"] == dir && r["msg"]["method"] == method)
        .unwrap_or_else(|| panic!("no {dir} {method} in trace:\n{}\nstderr:\n{}", dump(run), run.stderr))
}

fn dump(run: &Run) -> String {
    run.trace
        .iter()
        .map(|r| {
            let mut s = r.to_string();
            s.truncate(240);
            s
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn basic_vanillajs_view_completes_the_handshake_then_gets_input_and_result() {
    let server = basic_vanillajs();
    let run = run_host(&["run", "--stdio", &server, "--tool", "get-time", "--exit-after", "result"], LIMIT);
    assert_eq!(run.code, Some(0), "stderr:\n{}", run.stderr);

    let init = method_pos(&run, "view->host", "ui/initialize");
    let init_id = run.trace[init]["msg"]["id"].clone();
    let init_result = run
        .position(|r| r["dir"] == "host->view" && r["msg"]["id"] == init_id && r["msg"].get("result").is_some())
        .expect("ui/initialize answered");
    let initialized = method_pos(&run, "view->host", "ui/notifications/initialized");
    let input = method_pos(&run, "host->view", "ui/notifications/tool-input");
    let result = method_pos(&run, "host->view", "ui/notifications/tool-result");
    assert!(init < init_result && init_result < initialized && initialized < input && input < result,
        "order: initialize {init}, its result {init_result}, initialized {initialized}, tool-input {input}, tool-result {result}\n{}", dump(&run));

    // Nothing but the initialize response went to the View before `initialized`.
    let early: Vec<&Value> =
        run.trace[..initialized].iter().filter(|r| r["dir"] == "host->view").map(|r| &r["msg"]).collect();
    assert_eq!(early.len(), 1, "host->view before initialized: {early:?}");
    assert_eq!(early[0]["id"], init_id);

    // The View got exactly what the server returned.
    let from_server = run
        .dir("server->host")
        .find(|m| m["method"] == "tools/call")
        .and_then(|m| m.get("result"))
        .expect("server result in trace");
    assert_eq!(&run.trace[result]["msg"]["params"], from_server);
    assert!(from_server["content"][0]["text"].as_str().is_some_and(|t| t.contains('T')), "{from_server}");

    let init_result = &run.trace[init_result]["msg"]["result"];
    assert_eq!(init_result["protocolVersion"], "2026-01-26");
    assert_eq!(init_result["hostContext"]["toolInfo"]["tool"]["name"], "get-time");
    assert_eq!(init_result["hostContext"]["platform"], "desktop");

    let (errors, checked) = check_trace_against_schema(&run.trace);
    assert!(errors.is_empty(), "schema errors: {errors:#?}");
    assert!(checked >= 4, "checked only {checked} host messages");
}

/// The probe View (official App SDK 2.0.4) reports what it saw, then asks to be closed.
fn probe_run() -> (Run, Value) {
    probe_run_env(&[])
}

/// [`probe_run`] with extra environment variables for the host.
fn probe_run_env(envs: &[(&str, &str)]) -> (Run, Value) {
    let server = node_server("sdk-app-server.mjs", "");
    let run = run_host_env(
        &[
            "run",
            "--stdio",
            &server,
            "--tool",
            "sdk-probe",
            "--args",
            r#"{"greeting":"hi"}"#,
            "--exit-after",
            "teardown",
        ],
        envs,
        LIMIT,
    );
    assert_eq!(run.code, Some(0), "stderr:\n{}\ntrace:\n{}", run.stderr, dump(&run));
    let report = run
        .dir("host->server")
        .find(|m| m["method"] == "tools/call" && m["params"]["name"] == "report")
        .map(|m| m["params"]["arguments"]["results"].clone())
        .unwrap_or_else(|| panic!("the View never reported:\n{}\n{}", dump(&run), run.stderr));
    (run, report)
}

#[test]
fn sdk_view_calls_back_is_refused_model_only_tools_and_cannot_fetch_undeclared_origins() {
    let (run, report) = probe_run();

    // Calls an app-visible tool of its own server through the host.
    assert_eq!(report["echo"]["text"], "echo: ping", "{report:#}");
    // A tool without "app" visibility is refused and never reaches the server.
    assert_eq!(report["modelOnly"]["rejected"], true, "{report:#}");
    assert!(!run.stderr.contains("MODEL-ONLY CALLED"), "the server ran a model-only tool");
    assert!(run.dir("host->server").all(|m| m["params"]["name"] != "model-only"));
    // fetch to an undeclared origin is blocked by the CSP header (not merely refused by the port).
    assert_eq!(report["fetch"]["blocked"], true, "{report:#}");
    let violations = report["fetch"]["violations"].as_array().expect("violations recorded");
    assert!(
        violations
            .iter()
            .any(|v| v["directive"] == "connect-src"
                && v["blockedURI"].as_str().unwrap_or_default().contains("127.0.0.1:9")),
        "{violations:?}"
    );

    // What the View saw, in order, with the right data.
    assert_eq!(report["seen"], json!(["tool-input", "tool-result"]), "{report:#}");
    assert_eq!(report["toolInputArguments"], json!({"greeting": "hi"}));
    assert_eq!(report["toolResultStructuredContent"], json!({"greeting": "hi", "n": 42}));
    assert_eq!(report["hostContext"]["toolInfoMatches"], true);
    assert_eq!(report["hostContext"]["platform"], "desktop");

    // The View asked to close; the host ran the teardown handshake and the View answered.
    let teardown = method_pos(&run, "host->view", "ui/resource-teardown");
    let id = &run.trace[teardown]["msg"]["id"];
    assert!(run.trace[teardown..]
        .iter()
        .any(|r| r["dir"] == "view->host" && &r["msg"]["id"] == id && r["msg"].get("result").is_some()));

    let (errors, _) = check_trace_against_schema(&run.trace);
    assert!(errors.is_empty(), "schema errors: {errors:#?}");
}

/// The spec's frame tree, seen from inside a View built on the official App SDK (the host
/// conformance test `security/sandbox-proxy-required`): `parent` is the sandbox proxy on the
/// server's sandbox origin, `top` is the host's own document on another origin, which the View
/// can neither read nor navigate, and the proxy keeps relaying after the attempt. With the old
/// topology (`MCP_APPS_HOST_TEST_PROXY_ON_TOP`: the proxy as the top page) the same View sees
/// `parent === top` and reads top's document, so the probe can tell the two apart.
#[test]
fn an_sdk_view_sees_the_specs_frame_tree_and_cannot_reach_top() {
    let (run, report) = probe_run();
    let tree = &report["frameTree"];
    assert_eq!(tree["parentIsSelf"], false, "{tree:#}");
    assert_eq!(tree["parentIsTop"], false, "parent is top: {tree:#}");
    assert!(tree["parentOrigin"].as_str().is_some_and(|o| o.starts_with("mcp-sandbox://")), "{tree:#}");
    assert_eq!(tree["topDocument"], "SecurityError", "top's document is readable: {tree:#}");
    assert_eq!(tree["topHref"], "SecurityError", "{tree:#}");
    assert!(tree["topNavigation"] == "SecurityError" || tree["topNavigation"] == "no error", "{tree:#}");
    assert_eq!(tree["answeredAfter"], "echo: after top navigation", "{tree:#}");
    assert_eq!(run.dir("view->host").filter(|m| m["method"] == "ui/notifications/initialized").count(), 1);

    let (_, old) = probe_run_env(&[("MCP_APPS_HOST_TEST_PROXY_ON_TOP", "1")]);
    let tree = &old["frameTree"];
    assert_eq!(tree["parentIsTop"], true, "{tree:#}");
    assert_eq!(tree["topDocument"], "MCP App sandbox", "{tree:#}");
}

#[test]
fn a_views_direct_ipc_attempts_are_dropped() {
    let (run, report) = probe_run();
    // The View really tried: the native handler is visible in its frame on WebKitGTK.
    let attempts = report["ipc"]["attempts"].as_array().map(Vec::len).unwrap_or_default();
    assert!(report["ipc"]["webkitPresent"] == true || attempts > 0, "the probe did not try: {:#}", report["ipc"]);
    let dropped = run.stderr.matches("dropped IPC message without the host secret").count();
    assert!(dropped >= 4, "expected every forged message dropped and logged, saw {dropped}:\n{}", run.stderr);
    // None of the forged payloads (view id "x") reached the bridge.
    assert!(run.trace.iter().all(|r| r["view"] != "x"), "forged IPC reached the bridge");
    assert_eq!(run.dir("view->host").filter(|m| m["method"] == "ui/notifications/initialized").count(), 1);
}

fn expect_failure(args: &[&str], needle: &str) -> Run {
    let run = run_host(args, LIMIT);
    assert_eq!(run.code, Some(1), "expected exit 1; stderr:\n{}", run.stderr);
    let line = run
        .stderr
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_else(|| panic!("no error line:\n{}", run.stderr));
    assert!(line.contains(needle), "error line {line:?} should mention {needle:?}");
    run
}

#[test]
fn clear_errors_for_each_way_a_run_can_fail() {
    expect_failure(
        &["run", "--stdio", "/nonexistent/mcp-server", "--tool", "x", "--exit-after", "result"],
        "could not start MCP server",
    );
    let sdk = node_server("sdk-app-server.mjs", "");
    expect_failure(
        &["run", "--stdio", &sdk, "--tool", "nope", "--exit-after", "result"],
        "has no tool `nope` (it has: sdk-probe",
    );
    expect_failure(&["run", "--stdio", &sdk, "--tool", "echo", "--exit-after", "result"], "tool `echo` has no UI");
    expect_failure(&["run", "--stdio", &sdk, "--tool", "sdk-probe", "--args", "[1]"], "--args must be a JSON object");
    let wrong_mime = node_server("fault-server.mjs", "wrong-mime");
    expect_failure(
        &["run", "--stdio", &wrong_mime, "--tool", "fault", "--exit-after", "result"],
        "MIME type is \"text/html\"",
    );
    let missing = node_server("fault-server.mjs", "missing-resource");
    expect_failure(&["run", "--stdio", &missing, "--tool", "fault", "--exit-after", "result"], "Resource not found");
    let tool_error = node_server("fault-server.mjs", "tool-error");
    let run = expect_failure(
        &["run", "--stdio", &tool_error, "--tool", "fault", "--exit-after", "result"],
        "the tool broke on purpose",
    );
    // The View was told: tool-cancelled, never a tool-result.
    assert!(run.dir("host->view").any(|m| m["method"] == "ui/notifications/tool-cancelled"), "{}", dump(&run));
    assert!(run.dir("host->view").all(|m| m["method"] != "ui/notifications/tool-result"));
}

#[test]
fn a_view_that_never_initializes_fails_after_the_timeout() {
    let server = node_server("fault-server.mjs", "no-init");
    let run = expect_failure(
        &["run", "--stdio", &server, "--tool", "fault", "--exit-after", "initialized", "--timeout", "3"],
        "did not send ui/notifications/initialized within 3 s",
    );
    // Nothing was ever sent to the View itself (only the proxy got the resource).
    assert_eq!(run.dir("host->view").count(), 0, "{}", dump(&run));
    assert!(run.elapsed < Duration::from_secs(30), "took {:?}", run.elapsed);
}

#[test]
fn an_unreachable_display_is_a_clear_error_not_a_panic() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-apps-host"))
        .args(["demo", "--exit-after", "result"])
        .env("DISPLAY", ":9999")
        .env_remove("WAYLAND_DISPLAY")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("error: desktop: cannot open the display"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
