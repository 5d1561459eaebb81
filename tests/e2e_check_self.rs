//! `check --self`: the host proves its own requirements, and fails the one a broken build breaks.

mod check_support;
mod common;

use std::process::Command;

use check_support::*;
use serde_json::Value;

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
