//! End to end: every View -> host method and host -> View notification, exercised by a View built
//! on the official App SDK 2.0.4 (tests/fixtures/protocol-app-server.mjs) in real WebKitGTK.

mod common;

use std::time::Duration;

use common::*;
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(120);

struct Probe {
    run: Run,
    report: Value,
    downloads: tempfile::TempDir,
    opened: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

/// Runs the probe View with `consent`; the shell flips the theme to dark 2.5 s in.
fn probe(consent: &str, script: Option<&str>) -> Probe {
    let dir = tempfile::tempdir().unwrap();
    let downloads = tempfile::tempdir().unwrap();
    let opened = dir.path().join("opened.txt");
    let automation = dir.path().join("automation.js");
    std::fs::write(&automation, "setTimeout(function () { document.getElementById('theme').click(); }, 2500);")
        .unwrap();
    let opener = format!("sh -c 'echo \"$0\" >> {}'", opened.display());
    let args = match script {
        Some(s) => json!({"script": s}).to_string(),
        None => "{}".to_owned(),
    };
    let server = node_server("protocol-app-server.mjs", "");
    let automation = automation.to_string_lossy().into_owned();
    let downloads_path = downloads.path().to_string_lossy().into_owned();
    let run = run_host(
        &[
            "run",
            "--stdio",
            &server,
            "--tool",
            "protocol-probe",
            "--args",
            &args,
            "--exit-after",
            "teardown",
            "--timeout",
            "60",
            "--consent",
            consent,
            "--open-with",
            &opener,
            "--downloads",
            &downloads_path,
            "--theme",
            "light",
            "--automation",
            &automation,
        ],
        LIMIT,
    );
    assert_eq!(run.code, Some(0), "stderr:\n{}", run.stderr);
    let report = run
        .dir("host->server")
        .find(|m| m["params"]["name"] == "report")
        .map(|m| m["params"]["arguments"]["results"].clone())
        .unwrap_or_else(|| panic!("no report; stderr:\n{}", run.stderr));
    Probe { run, report, downloads, opened, _dir: dir }
}

fn step<'a>(report: &'a Value, name: &str) -> &'a Value {
    let s = &report["steps"][name];
    assert_eq!(s["ok"], true, "step {name} failed: {s:#}");
    &s["result"]
}

#[test]
fn every_view_to_host_method_works_with_consent() {
    let Probe { run, report, downloads, opened, _dir } = probe("allow", None);

    // Handshake data and capabilities the View saw.
    let caps = &step(&report, "capabilities")["hostCapabilities"];
    for key in
        ["openLinks", "downloadFile", "message", "updateModelContext", "serverTools", "serverResources", "logging"]
    {
        assert!(caps.get(key).is_some(), "capability {key} missing: {caps:#}");
    }
    assert_eq!(caps["sandbox"]["csp"]["connectDomains"], json!(["https://api.example.invalid"]));
    assert_eq!(caps["sandbox"]["permissions"], json!({"clipboardWrite": {}}));
    let ctx = &step(&report, "capabilities");
    let text = ctx.to_string();
    assert!(text.contains("\"platform\":\"desktop\""), "{ctx:#}");
    assert_eq!(report["seen"][0], "tool-input");
    assert_eq!(report["seen"][1], "tool-result");
    assert!(step(&report, "ping").is_object());

    // Links: opened through the opener after consent; other schemes refused.
    assert_ne!(step(&report, "open-link")["isError"], true);
    let opened = std::fs::read_to_string(&opened).unwrap_or_default();
    assert_eq!(opened.trim(), "https://example.com/docs");
    assert_eq!(step(&report, "open-link-bad")["isError"], true);

    // Message and model context reach the host (and its panel), nothing comes back.
    assert_ne!(step(&report, "message")["isError"], true);
    assert!(run.stderr.contains("message from the View: \"Book the 7pm table\""), "{}", run.stderr);
    step(&report, "model-context");
    assert!(run.stderr.contains("probe log line"), "notifications/message reaches the host log");

    // Display modes: each granted, announced, and the View never reloaded.
    let modes = step(&report, "display-modes");
    let returned: Vec<&Value> = modes["modes"].as_array().unwrap().iter().map(|m| &m["returned"]).collect();
    assert_eq!(returned, [&json!("fullscreen"), &json!("pip"), &json!("inline")], "{modes:#}");
    for m in modes["modes"].as_array().unwrap() {
        assert_eq!(m["changeSeen"], true, "host-context-changed for {}: {m:#}", m["requested"]);
        assert_eq!(m["contextDisplayMode"], m["requested"]);
    }
    assert_eq!(modes["sameBoot"], true, "the View was reloaded: {modes:#}");
    let pip = &modes["modes"][1];
    assert!(pip["innerWidth"].as_f64().unwrap() <= 440.0, "pip is a small window: {pip:#}");
    let full = &modes["modes"][0];
    assert!(full["innerWidth"].as_f64().unwrap() > pip["innerWidth"].as_f64().unwrap());

    // Download: saved under the chosen folder with its sanitised name.
    step(&report, "download");
    let saved = std::fs::read_to_string(downloads.path().join("probe-report.csv")).expect("download saved");
    assert_eq!(saved, "a,b\n1,2\n");

    // Server resources: a 3 MB blob passes intact; listing works.
    let big = step(&report, "read-big");
    assert_eq!(big["byteLength"], 3_145_728);
    assert_eq!(big["allBytesOk"], true);
    let list = step(&report, "list-resources").to_string();
    assert!(list.contains("data://big.bin") && list.contains("data://hello.txt"), "{list}");

    // Progress comes back to the View; a View's cancel reaches the server.
    let progress = step(&report, "progress");
    assert_eq!(progress["values"], json!([1, 2, 3]), "{progress:#}");
    step(&report, "cancel");
    assert!(run.stderr.contains("HANG CANCELLED probe abort"), "cancel not propagated:\n{}", run.stderr);

    // Resize: the host applied the View's size-changed to the frame.
    let resize = step(&report, "resize");
    assert!(resize["innerHeight"].as_f64().unwrap() >= 850.0, "{resize:#}");

    // Theme flip from the shell: theme and styles arrive together.
    let theme = step(&report, "theme-wait");
    assert_eq!(theme["theme"], "dark", "{theme:#}");
    assert_eq!(theme["stylesIncluded"], true, "{theme:#}");

    let (errors, checked) = check_trace_against_schema(&run.trace);
    assert!(errors.is_empty(), "schema errors: {errors:#?}");
    assert!(checked >= 10, "only {checked} host messages checked");
}

#[test]
fn denied_consent_comes_back_as_is_error_and_nothing_happens() {
    let Probe { report, downloads, opened, _dir, .. } = probe("deny", Some("open-link,message,download"));
    assert_eq!(step(&report, "open-link")["isError"], true);
    assert_eq!(step(&report, "message")["isError"], true);
    assert_eq!(step(&report, "download")["isError"], true);
    assert!(!opened.exists(), "a denied link was opened");
    assert_eq!(std::fs::read_dir(downloads.path()).unwrap().count(), 0, "a denied download was saved");
}
