//! `inspect` and `check` against real npm App servers and fixture servers that break one rule each.

mod common;

use std::process::Command;
use std::time::Duration;

use common::*;
use serde_json::Value;

struct Out {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn host(args: &[&str], no_display: bool) -> Out {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcp-apps-host"));
    cmd.args(args).current_dir(env!("CARGO_MANIFEST_DIR"));
    if no_display {
        cmd.env_remove("DISPLAY").env_remove("WAYLAND_DISPLAY");
    }
    let out = cmd.output().expect("the binary runs");
    Out {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn json_of(out: &Out) -> Value {
    serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}\nstderr:\n{}", out.stdout, out.stderr))
}

fn tool<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tool"] == name || t["name"] == name)
        .unwrap_or_else(|| panic!("{name} in {report:#}"))
}

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

fn check_fault(mode: &str, extra: &[&str]) -> (Out, Value) {
    let server = node_server("fault-server.mjs", mode);
    let mut args = vec!["check", "--stdio", &server, "--json", "--timeout", "5"];
    args.extend_from_slice(extra);
    let out = host(&args, false);
    let r = json_of(&out);
    (out, r)
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
fn check_self_passes_every_host_requirement() {
    let out = host(&["check", "--self", "--json"], false);
    assert_eq!(out.code, Some(0), "stdout:\n{}\nstderr:\n{}", out.stdout, out.stderr);
    let r = json_of(&out);
    let reqs = r["selfCheck"].as_array().unwrap();
    assert!(reqs.len() >= 11, "{r:#}");
    assert!(reqs.iter().all(|q| q["ok"] == true), "{r:#}");
    let names: Vec<&str> = reqs.iter().filter_map(|q| q["requirement"].as_str()).collect();
    for want in [
        "inside a sandbox proxy",
        "undeclared origin is blocked",
        "cannot reach the host's IPC",
        "before initialized",
        "tool-input arrives before tool-result",
        "without \"app\" visibility",
    ] {
        assert!(names.iter().any(|n| n.contains(want)), "no requirement about {want}: {names:?}");
    }
}

#[test]
fn check_self_fails_when_the_host_drops_its_csp_header() {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcp-apps-host"));
    cmd.args(["check", "--self", "--json"]).env("MCP_APPS_HOST_TEST_DISABLE_CSP", "1");
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let r: Value = serde_json::from_str(&stdout).unwrap();
    let failed: Vec<&str> = r["selfCheck"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|q| q["ok"] != true)
        .filter_map(|q| q["requirement"].as_str())
        .collect();
    assert_eq!(failed, ["an undeclared origin is blocked by the CSP"]);
}

/// `@modelcontextprotocol/server-map` declares CSP metadata (tile and CesiumJS origins).
fn map_server() -> String {
    format!("{} --stdio", shell_words::quote(&fixtures().join("node_modules/.bin/mcp-map-server").to_string_lossy()))
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

/// The self-check requirement about connections WebKit opens without asking the CSP.
const NO_CONNECTION_AROUND_CSP: &str = "no connection outside the CSP (preconnect, DNS prefetch, WebRTC)";

/// `check --self --json` with extra environment variables for the host; `(exit code, report)`.
fn check_self_with(env: &[(&str, &str)]) -> (Option<i32>, Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_mcp-apps-host"))
        .args(["check", "--self", "--json"])
        .envs(env.iter().copied())
        .output()
        .expect("the binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{stdout}\nstderr:\n{}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code(), report)
}

fn requirement<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["selfCheck"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["requirement"] == name)
        .unwrap_or_else(|| panic!("no requirement {name:?}: {report:#}"))
}

#[test]
fn check_self_sees_no_connection_around_the_csp() {
    let (code, r) = check_self_with(&[]);
    assert_eq!(code, Some(0), "{r:#}");
    let q = requirement(&r, NO_CONNECTION_AROUND_CSP);
    assert_eq!(q["ok"], true, "{q:#}");
    assert_eq!(q["detail"]["tcpConnections"], 0, "{q:#}");
    assert!(q["detail"]["ports"].as_array().is_some_and(|p| !p.is_empty()), "the canary did not listen: {q:#}");
}

#[test]
fn check_self_fails_when_the_engine_keeps_its_preconnects() {
    let (code, r) = check_self_with(&[("MCP_APPS_HOST_TEST_ALLOW_PRECONNECT", "1")]);
    assert_eq!(code, Some(1), "{r:#}");
    let failed: Vec<&str> = r["selfCheck"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|q| q["ok"] != true)
        .filter_map(|q| q["requirement"].as_str())
        .collect();
    assert_eq!(failed, [NO_CONNECTION_AROUND_CSP], "{r:#}");
    let q = requirement(&r, NO_CONNECTION_AROUND_CSP);
    assert!(q["detail"]["tcpConnections"].as_u64().is_some_and(|n| n > 0), "{q:#}");
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

/// The names of the self-check requirements that failed.
fn failed_requirements(report: &Value) -> Vec<&str> {
    report["selfCheck"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|q| q["ok"] != true)
        .filter_map(|q| q["requirement"].as_str())
        .collect()
}

/// With the old topology (each View's proxy page as the top document of its webview),
/// `check --self` fails exactly the spec's frame-tree requirements: from inside the View,
/// `parent` is `top`, and `top.document` is the proxy's, readable.
#[test]
fn check_self_fails_when_the_proxy_is_the_top_page() {
    let (code, r) = check_self_with(&[]);
    assert_eq!(code, Some(0), "{r:#}");
    for name in [
        "inside a sandbox proxy (window.parent !== window.top)",
        "the host's top document is out of reach (window.top.document throws)",
    ] {
        assert_eq!(requirement(&r, name)["ok"], true, "{r:#}");
    }
    let (code, r) = check_self_with(&[("MCP_APPS_HOST_TEST_PROXY_ON_TOP", "1")]);
    assert_eq!(code, Some(1), "{r:#}");
    assert_eq!(
        failed_requirements(&r),
        [
            "inside a sandbox proxy (window.parent !== window.top)",
            "the host's top document is out of reach (window.top.document throws)",
        ],
        "{r:#}"
    );
}

/// The self-check requirement about requests that an engine path sends without asking the CSP.
const NO_REQUEST_BELOW_THE_PAGE: &str = "no request below the page outside the declared origins (worklet import)";

/// Without the check below the page (`MCP_APPS_HOST_TEST_NO_REQUEST_CHECK`), the probe's blob:
/// AudioWorklet module imports from the canary, and `check --self` fails that requirement alone.
#[test]
fn check_self_fails_without_the_request_check_below_the_page() {
    let (code, r) = check_self_with(&[]);
    assert_eq!(code, Some(0), "{r:#}");
    let q = requirement(&r, NO_REQUEST_BELOW_THE_PAGE);
    assert_eq!(q["detail"]["tcpConnections"], 0, "{q:#}");
    let (code, r) = check_self_with(&[("MCP_APPS_HOST_TEST_NO_REQUEST_CHECK", "1")]);
    assert_eq!(code, Some(1), "{r:#}");
    assert_eq!(failed_requirements(&r), [NO_REQUEST_BELOW_THE_PAGE], "{r:#}");
    let q = requirement(&r, NO_REQUEST_BELOW_THE_PAGE);
    assert!(q["detail"]["tcpConnections"].as_u64().is_some_and(|n| n > 0), "{q:#}");
}

/// What a host profile makes this host tell a View: another host's info, display modes,
/// container cap, platform and optional requests (`run --profile`).
#[test]
fn a_host_profile_tells_a_view_what_that_host_does() {
    let init = |profile: &str| -> Value {
        let run = run_host(
            &[
                "run",
                "--stdio",
                &basic_vanillajs(),
                "--tool",
                "get-time",
                "--profile",
                profile,
                "--exit-after",
                "result",
            ],
            Duration::from_secs(60),
        );
        assert_eq!(run.code, Some(0), "{profile}: {}", run.stderr);
        let answer = run.dir("host->view").find(|m| m["result"]["hostInfo"].is_object()).cloned();
        answer.expect("the initialize answer")["result"].clone()
    };
    let vscode = init("vscode");
    assert_eq!(vscode["hostInfo"]["name"], "Visual Studio Code");
    assert_eq!(vscode["hostContext"]["availableDisplayModes"], serde_json::json!(["inline"]));
    assert_eq!(vscode["hostContext"]["containerDimensions"]["maxHeight"], 500.0);
    assert_eq!(vscode["hostContext"]["platform"], "desktop");
    let goose = init("goose");
    assert!(goose["hostCapabilities"].get("updateModelContext").is_none(), "{:#}", goose["hostCapabilities"]);
    assert_eq!(goose["hostContext"]["availableDisplayModes"], serde_json::json!(["inline", "fullscreen", "pip"]));
    let ours = init("mcp-apps-host");
    assert!(ours["hostCapabilities"].get("updateModelContext").is_some());
    let unknown = host(&["run", "--stdio", &basic_vanillajs(), "--profile", "netscape"], true);
    assert_eq!(unknown.code, Some(1), "{}", unknown.stderr);
    assert!(
        unknown.stderr.contains("no host profile \"netscape\"") && unknown.stderr.contains("vscode"),
        "{}",
        unknown.stderr
    );
}

/// `check --profile all`: a published App that works everywhere passes under every profile,
/// each reported on its own.
#[test]
fn check_runs_a_published_app_under_every_host_profile() {
    let out = host(&["check", "--stdio", &basic_vanillajs(), "--json", "--profile", "all", "--timeout", "20"], false);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let r = json_of(&out);
    let tools = r["tools"].as_array().unwrap();
    let profiles: Vec<&str> = tools.iter().filter_map(|t| t["profile"].as_str()).collect();
    for want in [
        "mcp-apps-host",
        "claude-desktop",
        "claude-web",
        "claude-ios",
        "chatgpt",
        "vscode",
        "cursor",
        "goose",
        "m365-copilot",
    ] {
        assert!(profiles.contains(&want), "{profiles:?}");
    }
    assert!(tools.iter().all(|t| t["status"] == "pass"), "{r:#}");
}

/// A host profile makes a published App fail for a stated reason: the map App's declared CSP
/// origins are honoured here, and ignored by Claude for iOS (its hard-coded CSP), where the
/// View's requests are blocked.
#[test]
fn a_host_profile_makes_a_published_app_fail_for_a_stated_reason() {
    let out = host(
        &["check", "--stdio", &map_server(), "--json", "--timeout", "10", "--profile", "mcp-apps-host,claude-ios"],
        false,
    );
    let r = json_of(&out);
    let under = |profile: &str| -> Value {
        r["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["profile"] == profile)
            .unwrap_or_else(|| panic!("{r:#}"))
            .clone()
    };
    assert_eq!(under("mcp-apps-host")["cspViolations"], serde_json::json!([]), "{r:#}");
    let ios = under("claude-ios");
    assert_eq!(ios["status"], "fail", "{ios:#}");
    let reasons: Vec<&str> = ios["reasons"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(reasons.iter().any(|r| r.starts_with("CSP violation: ")), "{reasons:#?}");
    assert_eq!(out.code, Some(1));
}

/// Screenshot baselines: a View's picture is stored, the same View passes against it, and a
/// changed View fails with the changed area and a diff image.
#[test]
fn check_compares_a_views_picture_with_its_baseline() {
    let dir = tempfile::tempdir().unwrap();
    let baseline = dir.path().join("baseline");
    let base = baseline.to_string_lossy().into_owned();
    let run = |mode: &str, extra: &[&str]| {
        let (out, r) = check_fault(mode, &[&["--baseline", &base][..], extra].concat());
        let t = tool(&r, "fault").clone();
        (out, t)
    };
    let (out, t) = run("ok", &["--update-baseline"]);
    assert_eq!((out.code, t["baseline"].as_str()), (Some(0), Some("updated")), "{t:#}");
    assert!(baseline.join("fault.png").exists());
    let (out, t) = run("ok", &[]);
    assert_eq!((out.code, t["baseline"].as_str()), (Some(0), Some("same")), "{t:#}\n{}", out.stderr);
    let (out, t) = run("ok-changed", &[]);
    assert_eq!((out.code, t["baseline"].as_str()), (Some(1), Some("changed")), "{t:#}");
    let reason = t["reasons"][0].as_str().unwrap();
    assert!(reason.starts_with("the View looks different from its baseline: "), "{reason}");
    assert!(baseline.join("fault.diff.png").exists(), "{reason}");
    // No baseline stored: a failure that says how to store one.
    let (out, r) = check_fault("ok", &["--baseline", &dir.path().join("none").to_string_lossy()]);
    assert_eq!(out.code, Some(1));
    assert!(tool(&r, "fault")["reasons"][0].as_str().unwrap().contains("--update-baseline"), "{r:#}");
}

/// Writes each `(name, script)` as `NAME.session.json` in `dir`; returns their paths.
fn sessions(dir: &std::path::Path, scripts: &[(&str, Value)]) -> Vec<String> {
    scripts
        .iter()
        .map(|(name, script)| {
            let path = dir.join(format!("{name}.session.json"));
            std::fs::write(&path, script.to_string()).unwrap();
            path.to_string_lossy().into_owned()
        })
        .collect()
}

/// Interaction sessions in a published App (the official vanilla JS example): a real click on
/// its button makes it call its tool, typed words reach its message; a session that expects
/// other arguments fails with what the View did send, and its later steps are reported not run;
/// each step is a JUnit test case.
#[test]
fn check_runs_interaction_sessions_in_a_published_app() {
    let dir = tempfile::tempdir().unwrap();
    let files = sessions(
        dir.path(),
        &[
            (
                "clicks",
                serde_json::json!({"tool": "get-time", "steps": [
                    {"click": {"text": "Get Server Time"}},
                    {"expectCall": {"tool": "get-time", "arguments": {}}},
                    {"type": " and words of a session", "into": "#message-text"},
                    {"click": "#send-message-btn"},
                    {"waitFor": {"method": "ui/message", "params": {"content": [{"type": "text", "text": "This is message text. and words of a session"}]}}},
                    {"screenshot": "after"}
                ]}),
            ),
            (
                "wrong",
                serde_json::json!({"tool": "get-time", "steps": [
                    {"click": "#get-time-btn"},
                    {"expectCall": {"tool": "get-time", "arguments": {"zone": "UTC"}}, "timeoutMs": 1500},
                    {"click": "#send-message-btn"}
                ]}),
            ),
        ],
    );
    let junit = dir.path().join("junit.xml");
    let shots = dir.path().join("shots");
    let out = host(
        &[
            "check",
            "--stdio",
            &basic_vanillajs(),
            "--json",
            "--timeout",
            "20",
            "--session",
            &files[0],
            "--session",
            &files[1],
            "--junit",
            junit.to_str().unwrap(),
            "--screenshots",
            shots.to_str().unwrap(),
        ],
        false,
    );
    let r = json_of(&out);
    assert_eq!(out.code, Some(1), "{r:#}\n{}", out.stderr);
    let by = |session: &str| r["tools"].as_array().unwrap().iter().find(|t| t["session"] == session).cloned().unwrap();
    let clicks = by("clicks");
    assert_eq!(clicks["status"], "pass", "{clicks:#}\n{}", out.stderr);
    let steps = clicks["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 6);
    assert!(steps.iter().all(|s| s["ok"] == true), "{steps:#?}");
    assert!(steps[0]["detail"].as_str().unwrap().contains(r#"<button> "Get Server Time""#), "{steps:#?}");
    assert!(shots.join("clicks.after.png").exists(), "the screenshot step's picture");
    // The View's web process memory is a figure an App's CI can track (a web process is tens of MB).
    assert!(clicks["figures"]["viewMemoryKb"].as_u64().is_some_and(|kb| kb > 10_000), "{clicks:#}");
    let wrong = by("wrong");
    assert_eq!(wrong["status"], "fail");
    let reason = wrong["reasons"][0].as_str().unwrap();
    assert!(
        reason.starts_with("session wrong: step 2/3 wait for tools/call")
            && reason.contains(r#"it sent tools/call with: {"#),
        "{reason}"
    );
    assert!(reason.contains(r#""arguments":{}"#), "the failure shows the arguments the View did send: {reason}");
    assert_eq!(wrong["steps"][2]["ok"], Value::Null, "the step after the failed one did not run");
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains(r#"name="step 1: click &quot;Get Server Time&quot;""#), "{xml}");
    assert!(xml.contains(r#"tests="11" failures="2" skipped="1""#), "two runs and nine steps: {xml}");
    assert!(xml.contains("<skipped message=\"not run: an earlier step failed\"/>"), "{xml}");

    // A script that is not one stops the check before any run, naming the step.
    let bad = sessions(
        dir.path(),
        &[("bad", serde_json::json!({"tool": "get-time", "steps": [{"click": "#a", "press": "Enter"}]}))],
    );
    let out = host(&["check", "--stdio", &basic_vanillajs(), "--session", &bad[0]], false);
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(out.stderr.contains("step 1 does more than one thing"), "{}", out.stderr);
}

/// A session's click and keys are the person's, as the engine sees them: the click is trusted
/// and gives the page the person's activation (the View's own `click()` at start, untrusted,
/// does not count: it came before the step), and keys go where the window's keyboard is, so
/// typing before any click into the View fails, as the keyboard rules keep a View out of it.
#[test]
fn a_sessions_click_and_keys_are_the_persons() {
    let dir = tempfile::tempdir().unwrap();
    let files = sessions(
        dir.path(),
        &[
            (
                "person",
                serde_json::json!({"tool": "fault", "steps": [
                    {"type": "typed", "into": "#words"},
                    {"click": {"text": "Press me"}},
                    {"expectCall": {"tool": "fault", "arguments": {"trusted": true, "active": true, "words": "typed"}}}
                ]}),
            ),
            ("no-click", serde_json::json!({"tool": "fault", "steps": [{"type": "typed"}]})),
        ],
    );
    // On a display of its own (check starts an Xvfb): another test's window on a shared display
    // takes the input focus, and then the engine at times gave the click no activation
    // (measured: 1 run in 4).
    let server = node_server("fault-server.mjs", "gesture");
    let out = host(&["check", "--stdio", &server, "--json", "--session", &files[0], "--session", &files[1]], true);
    let r = json_of(&out);
    assert_eq!(out.code, Some(1), "{r:#}\n{}", out.stderr);
    let by = |session: &str| r["tools"].as_array().unwrap().iter().find(|t| t["session"] == session).cloned().unwrap();
    let person = by("person");
    assert_eq!(person["status"], "pass", "{person:#}");
    assert!(
        person["steps"][2]["detail"].as_str().unwrap().contains("t@words,y@words,p@words,e@words,d@words"),
        "{person:#}"
    );
    let no_click = by("no-click");
    assert_eq!(no_click["status"], "fail");
    assert!(
        no_click["reasons"][0].as_str().unwrap().contains("the keyboard is not in the View (click into it first)"),
        "{no_click:#}"
    );
}

/// Record and replay: a run of a published App with a session is recorded (`run --trace`),
/// then replayed offline (`check --replay`, no npm server): the same session passes, and every
/// message the host sent the View comes again as recorded (the server's time included, which
/// a live server would not repeat). A new build of the View without the button the session
/// clicks (`--html`) fails the same session, naming what is missing.
#[test]
fn check_replays_a_recorded_session_offline() {
    let dir = tempfile::tempdir().unwrap();
    let script = serde_json::json!({"tool": "get-time", "steps": [
        {"click": {"text": "Get Server Time"}},
        {"expectCall": {"tool": "get-time", "arguments": {}}},
        {"expectText": "Server Time"}
    ]});
    let session = sessions(dir.path(), &[("time", script)]).remove(0);
    let trace = dir.path().join("recorded.jsonl");
    let out = host(
        &[
            "run",
            "--stdio",
            &basic_vanillajs(),
            "--session",
            &session,
            "--trace",
            trace.to_str().unwrap(),
            "--consent",
            "deny",
        ],
        false,
    );
    assert_eq!(out.code, Some(0), "the recording run: {}", out.stderr);
    let recorded: Vec<Value> =
        std::fs::read_to_string(&trace).unwrap().lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let time_of = |records: &[Value]| -> Vec<Value> {
        records
            .iter()
            .filter(|r| r["dir"] == "host->view" && r["msg"]["result"]["structuredContent"]["time"].is_string())
            .map(|r| r["msg"]["result"]["structuredContent"]["time"].clone())
            .collect()
    };
    assert_eq!(time_of(&recorded).len(), 1, "the View's own call's answer was recorded");

    let shots = dir.path().join("shots");
    let out = host(
        &[
            "check",
            "--replay",
            trace.to_str().unwrap(),
            "--session",
            &session,
            "--json",
            "--screenshots",
            shots.to_str().unwrap(),
        ],
        false,
    );
    let r = json_of(&out);
    assert_eq!(out.code, Some(0), "{r:#}\n{}", out.stderr);
    let t = tool(&r, "get-time");
    assert_eq!(t["status"], "pass", "{t:#}");
    assert!(r["server"].as_str().unwrap().contains("replay"), "the server was the recording: {r:#}");
    let replay = &t["replay"];
    assert!(replay["recorded"].as_u64().unwrap() >= 4, "{replay:#}");
    assert_eq!(replay["same"], replay["recorded"], "every recorded message to the View came again: {replay:#}");

    // Screenshot baselines of a published App: its replay shows the same inputs every time (a
    // live server's time would change its picture), so its picture is stored, matches again,
    // and a new build with another heading fails with the changed area and a diff image.
    let baseline = dir.path().join("baseline");
    let base = baseline.to_str().unwrap();
    let picture = |extra: &[&str]| -> (Option<i32>, Value) {
        let mut args = vec!["check", "--replay", trace.to_str().unwrap(), "--json", "--baseline", base];
        args.extend_from_slice(extra);
        let out = host(&args, false);
        let r = json_of(&out);
        (out.code, tool(&r, "get-time").clone())
    };
    let (code, t) = picture(&["--update-baseline"]);
    assert_eq!((code, t["baseline"].as_str()), (Some(0), Some("updated")), "{t:#}");
    let (code, t) = picture(&[]);
    assert_eq!((code, t["baseline"].as_str()), (Some(0), Some("same")), "{t:#}");
    let recorded_html = recorded
        .iter()
        .find(|r| r["msg"]["method"] == "ui/notifications/sandbox-resource-ready")
        .and_then(|r| r["msg"]["params"]["html"].as_str())
        .unwrap()
        .to_owned();
    let restyled = dir.path().join("restyled.html");
    std::fs::write(&restyled, recorded_html.replace("</head>", "<style>p { color: #c00 !important; }</style></head>"))
        .unwrap();
    let (code, t) = picture(&["--html", restyled.to_str().unwrap()]);
    assert_eq!((code, t["baseline"].as_str()), (Some(1), Some("changed")), "{t:#}");
    assert!(t["reasons"][0].as_str().unwrap().starts_with("the View looks different from its baseline: "), "{t:#}");
    assert!(baseline.join("get-time.diff.png").exists());

    // A new build of the View that lost its button.
    let html = recorded
        .iter()
        .find(|r| r["msg"]["method"] == "ui/notifications/sandbox-resource-ready")
        .and_then(|r| r["msg"]["params"]["html"].as_str())
        .unwrap()
        .replace("Get Server Time", "Fetch");
    let build = dir.path().join("new-build.html");
    std::fs::write(&build, html).unwrap();
    let out = host(
        &[
            "check",
            "--replay",
            trace.to_str().unwrap(),
            "--html",
            build.to_str().unwrap(),
            "--session",
            &session,
            "--json",
        ],
        false,
    );
    let r = json_of(&out);
    assert_eq!(out.code, Some(1), "{r:#}");
    let reason = tool(&r, "get-time")["reasons"][0].as_str().unwrap().to_owned();
    assert!(reason.contains(r#"step 1/3 click "Get Server Time" failed: no element of the View matches"#), "{reason}");
}
