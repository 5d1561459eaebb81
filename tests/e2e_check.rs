//! `inspect` and `check` against real npm App servers and fixture servers that break one rule each.

mod check_support;
mod common;

use std::process::Command;
use std::time::Duration;

use check_support::*;
use common::*;
use serde_json::Value;

#[test]
fn inspect_lists_the_reference_server_cleanly() {
    let out = host(&["inspect", "--stdio", &basic_vanillajs(), "--json"], false);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let r = json_of(&out);
    let t = tool(&r, "get-time");
    assert_eq!(t["hasUi"], true);
    assert_eq!(t["resourceUri"], "ui://get-time/mcp-app.html");
    assert_eq!(r["resources"][0]["mimeType"], "text/html;profile=mcp-app");
    assert_eq!(r["summary"]["errors"], 0, "{r:#}");
    // The negotiated protocol revision is shown.
    assert_eq!(r["protocolVersion"], "2025-11-25", "{r:#}");
    // Human output too.
    let human = host(&["inspect", "--stdio", &basic_vanillajs()], false);
    assert!(human.stdout.contains("get-time") && human.stdout.contains("findings: 0 errors"), "{}", human.stdout);
    assert!(human.stdout.contains("(MCP 2025-11-25)"), "{}", human.stdout);
}

#[test]
fn inspect_shows_declared_csp_and_visibility() {
    let out = host(&["inspect", "--stdio", &node_server("protocol-app-server.mjs", ""), "--json"], false);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let r = json_of(&out);
    assert_eq!(tool(&r, "slow")["visibility"], serde_json::json!(["app"]));
    let res = &r["resources"][0];
    assert_eq!(res["metaSource"], "content");
    assert!(res["cspHeader"].as_str().unwrap().contains("connect-src 'self' https://api.example.invalid"), "{res:#}");
    assert_eq!(res["meta"]["permissions"], serde_json::json!({"clipboardWrite": {}}));
}

#[test]
fn inspect_reports_broken_resources_as_errors() {
    for (mode, code) in [("wrong-mime", "wrong-mime"), ("missing-resource", "resource-missing")] {
        let out = host(&["inspect", "--stdio", &node_server("fault-server.mjs", mode), "--json"], false);
        assert_eq!(out.code, Some(1), "{mode}: {}", out.stderr);
        let r = json_of(&out);
        assert!(
            r["findings"].as_array().unwrap().iter().any(|f| f["code"] == code && f["severity"] == "error"),
            "{mode}: {r:#}"
        );
    }
}

/// The host's debug log and the stderr of `inspect --stdio server`, with `env` and with `var`
/// set to `value` (or not set at all).
fn inspect_stderr(server: &str, env: &[(&str, &std::path::Path)], var: &str, value: Option<&str>) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcp-apps-host"));
    cmd.args(["inspect", "--stdio", server]).envs(env.iter().copied()).env("MCP_APPS_HOST_LOG", "mcp_apps_host=debug");
    match value {
        Some(v) => cmd.env(var, v),
        None => cmd.env_remove(var),
    };
    let out = cmd.output().expect("the binary runs");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Where no session bus can be had (no address, no socket, no `dbus-launch`), the host names one
/// that fails at once for itself and its web processes (`session_bus.rs`); a server still gets
/// the environment it was given, with or without an address.
#[test]
fn a_server_gets_the_session_bus_address_as_it_was_given() {
    let empty = tempfile::tempdir().unwrap();
    let server = "/bin/sh -c 'echo \"bus=[$DBUS_SESSION_BUS_ADDRESS]\" >&2; exit 3'";
    let env = [("PATH", empty.path()), ("XDG_RUNTIME_DIR", empty.path())];
    let run = |address: Option<&str>| inspect_stderr(server, &env, "DBUS_SESSION_BUS_ADDRESS", address);
    let unset = run(None);
    assert!(unset.contains("DBUS_SESSION_BUS_ADDRESS=disabled: for the host"), "the host set its stand-in: {unset}");
    assert!(unset.contains("bus=[]"), "the server must not inherit the stand-in: {unset}");
    let given = run(Some("unix:path=/nonexistent/bus"));
    assert!(!given.contains("for the host and its web processes"), "an address was given: {given}");
    assert!(given.contains("bus=[unix:path=/nonexistent/bus]"), "{given}");
}

/// The host puts flite's voice first in the lookup scope of WebKit's processes with `LD_PRELOAD`
/// (`host_env.rs`); a server gets the environment as it was given, with or without one.
#[test]
fn a_server_gets_ld_preload_as_it_was_given() {
    let server = "/bin/sh -c 'echo \"preload=[${LD_PRELOAD-unset}]\" >&2; exit 3'";
    let run = |preload: Option<&str>| inspect_stderr(server, &[], "LD_PRELOAD", preload);
    let unset = run(None);
    // What the host binary loads, from the dynamic loader itself (it lists and does not run).
    let loads = Command::new(env!("CARGO_BIN_EXE_mcp-apps-host")).env("LD_TRACE_LOADED_OBJECTS", "1").output().unwrap();
    let loads_the_voice = String::from_utf8_lossy(&loads.stdout).contains("libflite_cmu_time_awb.so");
    assert_eq!(
        unset.contains("first in the lookup scope of WebKit's processes"),
        loads_the_voice,
        "the host preloads the voice exactly where its WebKit loads it: {unset}"
    );
    assert!(unset.contains("preload=[unset]"), "the server must not inherit the host's LD_PRELOAD: {unset}");
    let given = run(Some(""));
    assert!(!given.contains("first in the lookup scope"), "the person's LD_PRELOAD stands: {given}");
    assert!(given.contains("preload=[]"), "{given}");
}

#[test]
fn check_passes_the_reference_app_and_starts_its_own_xvfb() {
    let dir = tempfile::tempdir().unwrap();
    let junit = dir.path().join("junit.xml");
    let shots = dir.path().join("shots");
    let out = host(
        &[
            "check",
            "--stdio",
            &basic_vanillajs(),
            "--json",
            "--junit",
            junit.to_str().unwrap(),
            "--screenshots",
            shots.to_str().unwrap(),
        ],
        true, // no DISPLAY: check must start Xvfb itself
    );
    assert_eq!(out.code, Some(0), "stdout:\n{}\nstderr:\n{}", out.stdout, out.stderr);
    let r = json_of(&out);
    let t = tool(&r, "get-time");
    assert_eq!(t["status"], "pass", "{t:#}");
    assert_eq!(t["handshakeCompleted"], true);
    assert_eq!(t["protocolVersion"], "2026-01-26");
    assert_eq!(t["appInfo"]["name"], "Get Time App");
    assert_eq!(t["toolInputDelivered"], true);
    assert_eq!(t["toolResultDelivered"], true);
    assert!(t["initializedMs"].as_f64().unwrap() > 0.0);
    assert_eq!(r["summary"]["passed"], 1);
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("<testcase") && xml.contains("name=\"get-time\"") && xml.contains("failures=\"0\""), "{xml}");
    // Figures an App's CI can track, in the JSON and as JUnit properties.
    let f = &t["figures"];
    assert!(f["resourceBytes"].as_u64().unwrap() > 10_000, "{f:#}");
    let (init, result) = (f["callToInitializedMs"].as_f64().unwrap(), f["callToResultMs"].as_f64().unwrap());
    assert!(init > 0.0 && result >= init, "{f:#}");
    assert!(f["viewToHostMessages"].as_u64().unwrap() >= 2 && f["hostToViewMessages"].as_u64().unwrap() >= 3, "{f:#}");
    assert!(
        xml.contains("<property name=\"resourceBytes\" value=\"") && xml.contains("name=\"callToResultMs\""),
        "{xml}"
    );
    let png = std::fs::read(shots.join("get-time.png")).expect("screenshot written");
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert!(png.len() > 5_000, "a real picture, not an empty one: {} bytes", png.len());
}

#[test]
fn check_passes_the_app_of_a_2026_07_28_server_and_names_the_revision() {
    // The official TS SDK v2, serving the revision without `initialize`.
    let server = node_server("modern-server.mjs", "");
    let out = host(&["check", "--stdio", &server, "--json", "--tool", "modern-show"], false);
    assert_eq!(out.code, Some(0), "stdout:\n{}\nstderr:\n{}", out.stdout, out.stderr);
    let r = json_of(&out);
    assert_eq!(r["protocolVersion"], "2026-07-28", "{r:#}");
    assert_eq!(r["negotiation"], "server/discover", "{r:#}");
    let t = tool(&r, "modern-show");
    assert_eq!(t["status"], "pass", "{t:#}");
    assert_eq!(t["toolResultDelivered"], true);
    let human = host(&["inspect", "--stdio", &server], false);
    assert!(human.stdout.contains("(MCP 2026-07-28, by server/discover)"), "{}", human.stdout);
    let legacy = host(&["inspect", "--stdio", &node_server("modern-server.mjs", "--legacy-only"), "--json"], false);
    let r = json_of(&legacy);
    assert_eq!((r["protocolVersion"].as_str(), r["negotiation"].as_str()), (Some("2025-11-25"), Some("initialize")));
}

#[test]
fn check_reports_each_broken_app_as_the_failure_it_is() {
    let cases: [(&str, &[&str]); 5] = [
        ("wrong-mime", &["MIME type is \"text/html\""]),
        ("missing-resource", &["Resource not found"]),
        ("no-init", &["never completed the handshake"]),
        ("csp-violation", &["CSP violation: connect-src", "undeclared.example.invalid"]),
        ("throws", &["uncaught error: ", "uncaught on purpose", "console error: fault View: console error on purpose"]),
    ];
    for (mode, needles) in cases {
        let (out, r) = check_fault(mode, &[]);
        assert_eq!(out.code, Some(1), "{mode}: {}\n{}", out.stdout, out.stderr);
        let t = tool(&r, "fault");
        assert_eq!(t["status"], "fail", "{mode}: {t:#}");
        let reasons: Vec<&str> = t["reasons"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        let reasons = reasons.join("\n");
        for needle in needles {
            assert!(reasons.contains(needle), "{mode}: {needle:?} not in {reasons}");
        }
    }
    let (out, r) = check_fault("ok", &[]);
    assert_eq!(out.code, Some(0), "the clean View passes: {}\n{}", out.stdout, out.stderr);
    assert_eq!(tool(&r, "fault")["status"], "pass");
}

#[test]
fn check_usage_and_connection_errors_exit_2() {
    let out = host(&["check", "--stdio", &basic_vanillajs(), "--tool", "nope"], false);
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(out.stderr.contains("no tool `nope`"), "{}", out.stderr);
    let out = host(&["check", "--stdio", "/nonexistent/server"], false);
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(out.stderr.contains("could not start MCP server"), "{}", out.stderr);
    let _ = Duration::from_secs(0);
}

#[test]
fn inspect_and_check_an_npm_app_that_declares_csp() {
    let out = host(&["inspect", "--stdio", &map_server(), "--json"], false);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let r = json_of(&out);
    let res = &r["resources"][0];
    let header = res["cspHeader"].as_str().unwrap();
    assert!(header.contains("connect-src 'self' https://*.openstreetmap.org"), "{header}");
    assert!(
        header.contains(
            "script-src 'self' 'unsafe-inline' 'unsafe-eval' 'wasm-unsafe-eval' blob: https://*.openstreetmap.org"
        ),
        "{header}"
    );

    // The View loads CesiumJS from its declared CDN, which this offline machine cannot reach: check
    // renders it through the full path and reports the View's own failure, and no CSP violation
    // (declared origins are granted, so the header is not what stops it).
    let out = host(&["check", "--stdio", &map_server(), "--json", "--timeout", "10"], false);
    let r = json_of(&out);
    let t = tool(&r, "show-map");
    assert_eq!(t["resourceFetched"], true, "{t:#}");
    assert_eq!(t["cspViolations"], serde_json::json!([]), "declared origins must not be blocked: {t:#}");
    if t["status"] == "fail" {
        assert_eq!(out.code, Some(1));
        assert!(!t["reasons"].as_array().unwrap().is_empty());
    }
}

/// A View that never starts is told apart from a slow one: `check` names what it sent instead of
/// `ui/initialize` (an MCP client's `initialize`, MCP-UI's ready message) and what the spec
/// expects.
#[test]
fn check_says_why_a_view_never_started() {
    let cases = [
        ("mcp-initialize", "The View sent the request `initialize` instead of starting its handshake: that is an MCP client's handshake"),
        ("mcp-ui-ready", "The View sent a {\"type\": \"ui-lifecycle-iframe-ready\"} message instead of starting its handshake"),
    ];
    for (mode, needle) in cases {
        let (out, r) = check_fault(mode, &[]);
        assert_eq!(out.code, Some(1), "{mode}: {}\n{}", out.stdout, out.stderr);
        let t = tool(&r, "fault");
        let reasons = t["reasons"].as_array().unwrap();
        assert!(reasons[0].as_str().unwrap().starts_with(needle), "{mode}: {reasons:#?}");
        assert!(reasons[0].as_str().unwrap().ends_with("starts by sending the ui/initialize request."), "{reasons:#?}");
    }
    // A View that says nothing at all gets no such sentence: only the missing handshake.
    let (_, r) = check_fault("no-init", &[]);
    let reasons = tool(&r, "fault")["reasons"].as_array().unwrap().clone();
    assert!(reasons.iter().all(|r| !r.as_str().unwrap().contains("instead of starting")), "{reasons:#?}");
}
