//! Host profiles (what another host tells and allows a View) and screenshot baselines in `check`.

mod check_support;
mod common;

use std::time::Duration;

use check_support::*;
use common::*;
use serde_json::Value;

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
