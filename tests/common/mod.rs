//! Shared helpers for the integration tests: fixtures, the official schema, running the binary.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;

pub mod chat;
pub mod hostile;
pub mod runner;

pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// The App SDK's `schema.json` (installed by `scripts/setup` with `npm ci`).
pub fn schema() -> &'static Value {
    static SCHEMA: OnceLock<Value> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        let path = fixtures().join("node_modules/@modelcontextprotocol/ext-apps/dist/src/generated/schema.json");
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e}; run scripts/setup (npm ci in tests/fixtures)", path.display()));
        serde_json::from_str(&text).expect("schema.json is JSON")
    })
}

/// A validator for one `$defs` entry. Each entry is compiled as its own root: some carry local
/// `$defs` that do not resolve from the file's root.
pub fn validator(def: &str) -> jsonschema::Validator {
    let mut schema = schema()["$defs"].get(def).unwrap_or_else(|| panic!("schema.json has no $defs/{def}")).clone();
    relax_container_dimensions(&mut schema);
    jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("{def} does not compile: {e}"))
}

/// Upstream defect (ext-apps 2.0.4 `schema.json`): `containerDimensions` is generated from a zod
/// intersection as `allOf: [anyOf(height | maxHeight), anyOf(width | maxWidth)]` with
/// `additionalProperties: false` on every branch, so any object with both axes, such as the spec's
/// own example `{"width": 400, "maxHeight": 600}`, fails, while the SDK's zod check (what Views
/// run) accepts it. We drop `additionalProperties` inside those branches only; everything else is
/// checked as published. The real SDK accepting our context is proven end to end.
fn relax_container_dimensions(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                if key == "containerDimensions" {
                    strip_additional_properties(value);
                } else {
                    relax_container_dimensions(value);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(relax_container_dimensions),
        _ => {}
    }
}

fn strip_additional_properties(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            map.remove("additionalProperties");
            map.values_mut().for_each(strip_additional_properties);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_additional_properties),
        _ => {}
    }
}

/// Validation errors of `instance` against `$defs/<def>`, as text.
pub fn schema_errors(def: &str, instance: &Value) -> Vec<String> {
    validator(def).iter_errors(instance).map(|e| format!("{def}: {e} at {}", e.instance_path())).collect()
}

/// The schema definition for a host-sent notification or request, by method.
fn def_for_host_message(method: &str) -> Option<&'static str> {
    Some(match method {
        "ui/notifications/sandbox-resource-ready" => "McpUiSandboxResourceReadyNotification",
        "ui/notifications/tool-input" => "McpUiToolInputNotification",
        "ui/notifications/tool-input-partial" => "McpUiToolInputPartialNotification",
        "ui/notifications/tool-result" => "McpUiToolResultNotification",
        "ui/notifications/tool-cancelled" => "McpUiToolCancelledNotification",
        "ui/notifications/host-context-changed" => "McpUiHostContextChangedNotification",
        "ui/resource-teardown" => "McpUiResourceTeardownRequest",
        _ => return None,
    })
}

/// The schema definition for the host's answer to a View request, by the request's method.
fn def_for_result(method: &str) -> Option<&'static str> {
    Some(match method {
        "ui/initialize" => "McpUiInitializeResult",
        "ui/request-display-mode" => "McpUiRequestDisplayModeResult",
        "ui/open-link" => "McpUiOpenLinkResult",
        "ui/message" => "McpUiMessageResult",
        "ui/download-file" => "McpUiDownloadFileResult",
        _ => return None,
    })
}

/// Validates every host -> View/proxy message of a trace against the SDK schema. Returns the
/// errors and how many messages were checked.
pub fn check_trace_against_schema(trace: &[Value]) -> (Vec<String>, usize) {
    let mut requests: HashMap<(String, String), String> = HashMap::new();
    let mut errors = Vec::new();
    let mut checked = 0;
    for rec in trace {
        let view = rec["view"].as_str().unwrap_or_default().to_owned();
        let msg = &rec["msg"];
        match rec["dir"].as_str() {
            Some("view->host") => {
                if let (Some(id), Some(method)) = (msg.get("id"), msg["method"].as_str()) {
                    requests.insert((view, id.to_string()), method.to_owned());
                }
            }
            Some("host->view" | "host->proxy") => {
                if let Some(method) = msg["method"].as_str() {
                    if let Some(def) = def_for_host_message(method) {
                        // The schema models {method, params}; the JSON-RPC envelope is not part of it.
                        let mut bare = msg.clone();
                        let obj = bare.as_object_mut().unwrap();
                        obj.remove("jsonrpc");
                        obj.remove("id");
                        errors.extend(schema_errors(def, &bare));
                        checked += 1;
                    }
                } else if let Some(result) = msg.get("result") {
                    let key = (view, msg["id"].to_string());
                    if let Some(def) = requests.get(&key).and_then(|m| def_for_result(m)) {
                        errors.extend(schema_errors(def, result));
                        checked += 1;
                    }
                }
            }
            _ => {}
        }
    }
    (errors, checked)
}

/// What one run of the binary left behind.
pub struct Run {
    pub code: Option<i32>,
    pub stderr: String,
    pub trace: Vec<Value>,
    pub elapsed: Duration,
}

impl Run {
    /// Trace records in one direction.
    pub fn dir<'a>(&'a self, dir: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
        self.trace.iter().filter(move |r| r["dir"] == dir).map(|r| &r["msg"])
    }

    /// The index of the first record matching `pred`.
    pub fn position(&self, pred: impl Fn(&Value) -> bool) -> Option<usize> {
        self.trace.iter().position(pred)
    }
}

/// Starts `mcp-apps-host` with `args` plus `--trace trace_path`; its stderr is collected by the
/// returned thread.
fn spawn_host(
    args: &[&str],
    trace_path: &std::path::Path,
    log: Option<&str>,
    envs: &[(&str, &str)],
) -> (std::process::Child, std::thread::JoinHandle<String>) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcp-apps-host"));
    cmd.args(args).arg("--trace").arg(trace_path).current_dir(env!("CARGO_MANIFEST_DIR"));
    cmd.envs(envs.iter().copied());
    if let Some(log) = log {
        cmd.env("MCP_APPS_HOST_LOG", log);
    }
    let mut child = cmd
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let stderr_pipe = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || std::io::read_to_string(stderr_pipe).unwrap_or_default());
    (child, reader)
}

/// A host that ended at once because the X server refused its connection (seen once on a busy
/// CI run, with nothing of the host's own at fault) is started once more; `reader` then holds
/// the new run's stderr. Anything else is the run's outcome (`None`).
fn display_refused(
    retried: &mut bool,
    started: Instant,
    reader: &mut std::thread::JoinHandle<String>,
    spawn: impl FnOnce() -> (std::process::Child, std::thread::JoinHandle<String>),
) -> Option<(std::process::Child, std::thread::JoinHandle<String>)> {
    if *retried || started.elapsed() > Duration::from_secs(10) {
        return None;
    }
    let old = std::mem::replace(reader, std::thread::spawn(String::new));
    let stderr = old.join().unwrap_or_default();
    if !stderr.contains("cannot open the display") {
        *reader = std::thread::spawn(move || stderr);
        return None;
    }
    *retried = true;
    eprintln!("the X server refused the host's connection; starting it once more");
    std::thread::sleep(Duration::from_secs(1));
    Some(spawn())
}

/// Runs `mcp-apps-host` with `args` plus `--trace`, waits at most `limit`, and collects the result.
pub fn run_host(args: &[&str], limit: Duration) -> Run {
    run_host_env(args, &[], limit)
}

/// [`run_host`] with extra environment variables.
pub fn run_host_env(args: &[&str], envs: &[(&str, &str)], limit: Duration) -> Run {
    assert!(
        std::env::var_os("DISPLAY").is_some(),
        "these tests open windows: run them under a display (scripts/test uses xvfb-run)"
    );
    let dir = tempfile::tempdir().unwrap();
    let trace_path = dir.path().join("trace.jsonl");
    let started = Instant::now();
    let (mut child, mut reader) = spawn_host(args, &trace_path, Some("mcp_apps_host=debug,warn"), envs);
    let mut retried = false;
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            if let Some(again) = display_refused(&mut retried, started, &mut reader, || {
                spawn_host(args, &trace_path, Some("mcp_apps_host=debug,warn"), envs)
            }) {
                (child, reader) = again;
                continue;
            }
            break status.code();
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let stderr = reader.join().unwrap();
    let trace = std::fs::read_to_string(&trace_path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("trace line is not JSON ({e}): {l}")))
        .collect();
    Run { code, stderr, trace, elapsed: started.elapsed() }
}

fn quoted(path: PathBuf) -> String {
    shell_words::quote(&path.to_string_lossy()).into_owned()
}

/// `node tests/fixtures/<script> <args>` as a `--stdio` command line.
pub fn node_server(script: &str, args: &str) -> String {
    format!("node {} {args}", quoted(fixtures().join(script)))
}

/// The reference npm App server over stdio.
pub fn basic_vanillajs() -> String {
    format!("{} --stdio", quoted(fixtures().join("node_modules/.bin/mcp-server-basic-vanillajs")))
}

/// Runs `mcp-apps-host` (with `--trace`) until `done(trace)` holds or `limit` passes, then stops
/// it; for the interactive app, which has no exit point of its own.
pub fn run_host_until(args: &[&str], done: impl Fn(&[Value]) -> bool, limit: Duration) -> Run {
    run_host_until_env(args, &[], done, limit)
}

/// [`run_host_until`] with extra environment variables (e.g. `XDG_DATA_HOME` for sign-in tokens).
pub fn run_host_until_env(
    args: &[&str],
    envs: &[(&str, &str)],
    done: impl Fn(&[Value]) -> bool,
    limit: Duration,
) -> Run {
    assert!(std::env::var_os("DISPLAY").is_some(), "these tests open windows: run them under a display");
    let dir = tempfile::tempdir().unwrap();
    let trace_path = dir.path().join("trace.jsonl");
    let started = Instant::now();
    let (mut child, mut reader) = spawn_host(args, &trace_path, Some("mcp_apps_host=debug,warn"), envs);
    let read = || -> Vec<Value> {
        std::fs::read_to_string(&trace_path)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    };
    let mut retried = false;
    loop {
        if done(&read()) || started.elapsed() > limit {
            break;
        }
        // A host that ended by itself is not waited for until the limit.
        if child.try_wait().unwrap().is_some() {
            match display_refused(&mut retried, started, &mut reader, || {
                spawn_host(args, &trace_path, Some("mcp_apps_host=debug,warn"), envs)
            }) {
                Some(again) => (child, reader) = again,
                None => break,
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
    Run { code: None, stderr: reader.join().unwrap(), trace: read(), elapsed: started.elapsed() }
}

/// Helpers for automation scripts: `wait(ms)`, `until(f)`, and `call(tool, fields, server)`
/// (picks the tool in the picker, fills its form, presses Call).
pub const AUTOMATION_HELPERS: &str = r##"
const wait = (ms) => new Promise((r) => setTimeout(r, ms));
async function until(f, ms) { const t = Date.now(); while (Date.now() - t < (ms || 20000)) { const v = f(); if (v) return v; await wait(50); } throw new Error("timed out"); }
async function call(tool, fields, server) {
  const pick = '#tools button[data-tool="' + tool + '"]' + (server ? '[data-server="' + server + '"]' : "");
  const button = await until(() => document.querySelector(pick));
  button.click();
  for (const [name, value] of Object.entries(fields || {})) document.getElementById("arg-" + name).value = value;
  document.getElementById("form-call").click();
}
"##;

/// Writes an automation script (helpers plus `body`, run as an async function) into `dir`.
pub fn automation(dir: &tempfile::TempDir, body: &str) -> String {
    let path = dir.path().join("automation.js");
    std::fs::write(&path, format!("{AUTOMATION_HELPERS}\n(async function () {{ {body} }})();")).unwrap();
    path.to_string_lossy().into_owned()
}
