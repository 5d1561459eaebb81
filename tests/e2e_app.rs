//! The desktop app driven as a person would, through the shell page (clicks and keys evaluated in
//! it): pick a tool, fill the generated form, call it, see Views initialize, flip the theme,
//! confirm and deny a link.

mod common;

use std::time::Duration;

use common::*;
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(60);

fn initialized(trace: &[Value]) -> Vec<String> {
    trace
        .iter()
        .filter(|r| r["dir"] == "view->host" && r["msg"]["method"] == "ui/notifications/initialized")
        .filter_map(|r| r["view"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn pick_a_tool_open_two_views_and_flip_the_theme() {
    let dir = tempfile::tempdir().unwrap();
    let script = automation(
        &dir,
        r##"
        await call("get-time");
        await until(() => document.querySelectorAll(".card .slot").length === 1);
        await call("get-time");
        await until(() => document.querySelectorAll(".card .slot").length === 2);
        await wait(2500);
        document.dispatchEvent(new KeyboardEvent("keydown", { key: "L", ctrlKey: true, shiftKey: true, bubbles: true }));
        "##,
    );
    let server = basic_vanillajs();
    let run = run_host_until(
        &["run", "--stdio", &server, "--theme", "light", "--automation", &script],
        |t| {
            t.iter()
                .filter(|r| {
                    r["msg"]["method"] == "ui/notifications/host-context-changed"
                        && r["msg"]["params"]["theme"] == "dark"
                })
                .count()
                >= 2
        },
        LIMIT,
    );
    // Both Views load concurrently, so they may finish initializing in either order.
    let mut views = initialized(&run.trace);
    views.sort();
    assert_eq!(views, ["v1", "v2"], "two Views from the picker; stderr:\n{}", run.stderr);
    // Each was called from the form with what the form produced.
    let calls: Vec<&Value> = run.dir("host->server").filter(|m| m["params"]["name"] == "get-time").collect();
    assert_eq!(calls.len(), 2);
    // The keyboard shortcut flipped the theme for both, with styles.
    for view in ["v1", "v2"] {
        let change = run
            .trace
            .iter()
            .find(|r| {
                r["view"] == view
                    && r["msg"]["method"] == "ui/notifications/host-context-changed"
                    && r["msg"]["params"]["theme"] == "dark"
            })
            .unwrap_or_else(|| panic!("{view} got no theme change; stderr:\n{}", run.stderr));
        assert!(change["msg"]["params"]["styles"]["variables"]["--color-background-primary"].is_string());
    }
}

#[test]
fn the_form_validates_before_calling_and_plain_results_are_text() {
    let dir = tempfile::tempdir().unwrap();
    let script = automation(
        &dir,
        r##"
        // Servers start in the background: the picker fills once the server is ready.
        await until(() => document.querySelector("#tools button[data-tool]"));
        const names = Array.from(document.querySelectorAll("#tools button[data-tool]")).map((b) => b.dataset.tool);
        await call("add", { a: "2" });
        const missing = document.getElementById("form-error").textContent;
        await call("add", { a: "2", b: "2.5" });
        const fractional = document.getElementById("form-error").textContent;
        await call("add", { a: "2", b: "40" });
        await until(() => Array.from(document.querySelectorAll(".card .text")).some((p) => p.textContent.includes("= 42")));
        const text = Array.from(document.querySelectorAll(".card .text")).map((p) => p.textContent).join("|");
        await call("sdk-probe", { greeting: JSON.stringify({ names: names, missing: missing, fractional: fractional, text: text }) });
        "##,
    );
    let server = node_server("sdk-app-server.mjs", "");
    let run = run_host_until(
        &["run", "--stdio", &server, "--automation", &script],
        |t| t.iter().any(|r| r["dir"] == "host->server" && r["msg"]["params"]["name"] == "sdk-probe"),
        LIMIT,
    );
    let adds: Vec<&Value> = run.dir("host->server").filter(|m| m["params"]["name"] == "add").collect();
    assert_eq!(adds.len(), 1, "invalid forms never call the tool: {adds:?}\n{}", run.stderr);
    assert_eq!(adds[0]["params"]["arguments"], serde_json::json!({"a": 2, "b": 40}), "integers, not strings");
    let seen = run
        .dir("host->server")
        .find(|m| m["params"]["name"] == "sdk-probe")
        .and_then(|m| m["params"]["arguments"]["greeting"].as_str())
        .map(|g| serde_json::from_str::<Value>(g).unwrap())
        .unwrap_or_else(|| panic!("no report; stderr:\n{}", run.stderr));
    assert_eq!(seen["missing"], "B is required", "the field is named in words (a key without a title is capitalised)");
    assert_eq!(seen["fractional"], "B must be a whole number");
    assert!(seen["text"].as_str().unwrap().contains("2 + 40 = 42"), "{seen}");
    // The picker offers what a person may call: UI tool first, model-visible plain tools; never
    // app-only tools.
    let names: Vec<&str> = seen["names"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert_eq!(names.first(), Some(&"sdk-probe"), "{names:?}");
    assert!(names.contains(&"add") && names.contains(&"model-only"), "{names:?}");
    assert!(!names.contains(&"echo") && !names.contains(&"report"), "app-only tools must not be offered: {names:?}");
}

#[test]
fn a_link_is_opened_after_confirm_and_not_after_deny() {
    let dir = tempfile::tempdir().unwrap();
    let opened = dir.path().join("opened.txt");
    let opener = format!("sh -c 'echo \"$0\" >> {}'", opened.display());
    let script = automation(
        &dir,
        r##"
        await call("protocol-probe", { script: "open-link" });
        await until(() => !document.getElementById("dialog").hidden);
        // A fresh dialog's Open button is disarmed for a moment (a click meant for the View
        // must not land on it).
        const armed = document.getElementById("dialog-accept").disabled;
        await until(() => !document.getElementById("dialog-accept").disabled);
        if (!armed) throw new Error("the Open button took clicks at once");
        document.getElementById("dialog-accept").click();
        await wait(300);
        await call("protocol-probe", { script: "open-link" });
        await until(() => !document.getElementById("dialog").hidden);
        document.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape", bubbles: true }));
        "##,
    );
    let server = node_server("protocol-app-server.mjs", "");
    let run = run_host_until(
        &["run", "--stdio", &server, "--consent", "ask", "--open-with", &opener, "--automation", &script],
        |t| t.iter().filter(|r| r["dir"] == "host->server" && r["msg"]["params"]["name"] == "report").count() >= 2,
        LIMIT,
    );
    let results: Vec<Value> = run
        .dir("host->server")
        .filter(|m| m["params"]["name"] == "report")
        .map(|m| m["params"]["arguments"]["results"]["steps"]["open-link"].clone())
        .collect();
    assert_eq!(results.len(), 2, "stderr:\n{}", run.stderr);
    let by_view = |v: &str| {
        let answer = |r: &&Value| {
            r["view"] == v
                && r["dir"] == "host->view"
                && (r["msg"]["result"].get("isError").is_some() || r["msg"]["result"] == serde_json::json!({}))
        };
        run.trace.iter().find(answer).map(|r| r["msg"]["result"].clone())
    };
    assert_eq!(by_view("v1"), Some(serde_json::json!({})), "confirmed: opened");
    assert_eq!(by_view("v2").and_then(|r| r.get("isError").cloned()), Some(Value::Bool(true)), "denied with Escape");
    let lines = std::fs::read_to_string(&opened).unwrap_or_default();
    assert_eq!(lines.lines().collect::<Vec<_>>(), ["https://example.com/docs"], "opened exactly once");
}

#[test]
fn the_demo_needs_no_node_and_shows_two_views() {
    let run = run_host(&["demo", "--exit-after", "result"], LIMIT);
    assert_eq!(run.code, Some(0), "stderr:\n{}", run.stderr);
    let views = initialized(&run.trace);
    assert_eq!(views.len(), 2, "{views:?}");
    let weather = run
        .dir("host->view")
        .find(|m| m["method"] == "ui/notifications/tool-result" && m["params"]["structuredContent"]["city"] == "Oslo")
        .expect("the weather View got its structured result");
    assert_eq!(weather["params"]["structuredContent"]["forecast"].as_array().unwrap().len(), 5);
    // The demo Views size themselves: the host applied their size-changed reports.
    assert!(run.dir("view->host").any(|m| m["method"] == "ui/notifications/size-changed"));
}

/// A hand-written View for preview tests: it shows its version and the result it got, and tries
/// one undeclared origin so the CSP panel has something to explain.
const PREVIEW_VIEW: &str = r#"<!doctype html><html><body><h1>VERSION</h1><script>
let id = 0; const pending = new Map();
window.addEventListener("message", (e) => { if (e.source !== window.parent) return; const m = e.data;
  if (m && m.id !== undefined && !m.method && pending.has(m.id)) { pending.get(m.id)(m); pending.delete(m.id); }
  if (m && m.method === "ui/resource-teardown") window.parent.postMessage({jsonrpc: "2.0", id: m.id, result: {}}, "*"); });
const req = (method, params) => new Promise((res) => { const i = ++id; pending.set(i, res); window.parent.postMessage({jsonrpc: "2.0", id: i, method, params}, "*"); });
req("ui/initialize", {appInfo: {name: "VERSION", version: "1"}, appCapabilities: {}, protocolVersion: "2026-01-26"})
  .then(() => { window.parent.postMessage({jsonrpc: "2.0", method: "ui/notifications/initialized"}, "*"); fetch("https://cdn.example.invalid/lib.js").catch(() => {}); });
</script></body></html>"#;

#[test]
fn preview_reloads_a_changed_html_file_with_the_last_input_and_result() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("view.html");
    std::fs::write(&html, PREVIEW_VIEW.replace("VERSION", "first")).unwrap();
    let script = automation(
        &dir,
        r##"
        await until(() => document.querySelector(".card .slot"));
        // The developer panel: the CSP tab explains the violation; report it through a plain tool.
        await until(() => document.querySelector("#csp-violations li"), 15000);
        const advice = document.querySelector("#csp-violations li").textContent;
        await call("greet", { name: advice });
        "##,
    );
    let edit = html.clone();
    let writer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(5));
        std::fs::write(&edit, PREVIEW_VIEW.replace("VERSION", "second")).unwrap();
    });
    let run = run_host_until(
        &["preview", "--html", html.to_str().unwrap(), "--automation", &script],
        |t| t.iter().any(|r| r["view"] == "v3" && r["msg"]["method"] == "ui/notifications/tool-result"),
        LIMIT,
    );
    writer.join().unwrap();
    // v1: the first file; v2: the greet call; v3: the reloaded View.
    let app_name = |view: &str| {
        run.trace
            .iter()
            .find(|r| r["view"] == view && r["msg"]["method"] == "ui/initialize")
            .map(|r| r["msg"]["params"]["appInfo"]["name"].clone())
    };
    assert_eq!(app_name("v1"), Some(Value::from("first")), "stderr:\n{}", run.stderr);
    assert_eq!(app_name("v3"), Some(Value::from("second")), "the changed file was reloaded; stderr:\n{}", run.stderr);
    let input = |view: &str| {
        run.trace
            .iter()
            .find(|r| r["view"] == view && r["msg"]["method"] == "ui/notifications/tool-input")
            .map(|r| r["msg"]["params"].clone())
    };
    let result = |view: &str| {
        run.trace
            .iter()
            .find(|r| r["view"] == view && r["msg"]["method"] == "ui/notifications/tool-result")
            .map(|r| r["msg"]["params"].clone())
    };
    assert_eq!(input("v3"), input("v1"), "same input again");
    assert_eq!(result("v3"), result("v1"), "same result again");
    let counter_calls = run.dir("host->server").filter(|m| m["params"]["name"] == "counter").count();
    assert_eq!(counter_calls, 1, "a reload does not call the tool again");
    let advice = run
        .dir("host->server")
        .find(|m| m["params"]["name"] == "greet")
        .map(|m| m["params"]["arguments"]["name"].as_str().unwrap_or_default().to_owned())
        .unwrap_or_else(|| panic!("the CSP panel showed nothing; stderr:\n{}", run.stderr));
    assert!(
        advice.contains("connect-src")
            && advice.contains("add \"https://cdn.example.invalid\" to _meta.ui.csp.connectDomains"),
        "{advice}"
    );
}

#[test]
fn preview_sends_edited_notifications_from_the_panel() {
    let dir = tempfile::tempdir().unwrap();
    let script = automation(
        &dir,
        r##"
        await until(() => document.querySelector(".card .slot"));
        await wait(1500);
        document.querySelector('[data-tab="send"]').click();
        const method = document.getElementById("send-method");
        method.value = "ui/notifications/tool-result";
        method.dispatchEvent(new Event("change"));
        document.getElementById("send-params").value = JSON.stringify({ content: [{ type: "text", text: "edited in the panel" }], structuredContent: { count: 99 } });
        document.getElementById("send-go").click();
        method.value = "ui/notifications/tool-input";
        document.getElementById("send-params").value = JSON.stringify({ arguments: { city: "Lisbon" } });
        document.getElementById("send-stream").click();
        "##,
    );
    let run = run_host_until(
        &[
            "preview",
            "--html",
            &{
                let p = dir.path().join("v.html");
                std::fs::write(&p, PREVIEW_VIEW.replace("VERSION", "panel")).unwrap();
                p.to_string_lossy().into_owned()
            },
            "--automation",
            &script,
        ],
        |t| t.iter().filter(|r| r["msg"]["method"] == "ui/notifications/tool-input").count() >= 2,
        LIMIT,
    );
    let sent: Vec<&Value> = run
        .dir("host->view")
        .filter(|m| m["method"].as_str().is_some_and(|m| m.starts_with("ui/notifications/tool-")))
        .collect();
    let methods: Vec<&str> = sent.iter().filter_map(|m| m["method"].as_str()).collect();
    assert_eq!(
        methods,
        [
            "ui/notifications/tool-input",
            "ui/notifications/tool-result",
            "ui/notifications/tool-result",
            "ui/notifications/tool-input-partial",
            "ui/notifications/tool-input-partial",
            "ui/notifications/tool-input"
        ],
        "stderr:\n{}",
        run.stderr
    );
    assert_eq!(sent[2]["params"]["structuredContent"]["count"], 99);
    assert_eq!(sent[3]["params"]["arguments"]["city"], "Li");
    assert_eq!(sent[5]["params"]["arguments"]["city"], "Lisbon");
}

fn example(name: &str) -> std::path::PathBuf {
    // Examples are built by `cargo test` next to the test binaries: target/<profile>/examples.
    let exe = std::env::current_exe().unwrap();
    exe.parent().and_then(|deps| deps.parent()).unwrap().join("examples").join(name)
}

#[test]
fn the_embedding_example_shows_a_view_and_reports_events() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    let out = std::process::Command::new(example("embed"))
        .args([&basic_vanillajs(), "get-time", trace.to_str().unwrap()])
        .output()
        .expect("the example runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("v1: Initialized") && stdout.contains("v1: ToolResultDelivered"), "{stdout}");
    assert!(std::fs::read_to_string(&trace).unwrap().contains("ui/notifications/tool-result"));
}

#[test]
fn the_host_mounts_in_a_window_and_event_loop_the_embedder_owns() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    let out = std::process::Command::new(example("embed_window"))
        .args([&basic_vanillajs(), "get-time", trace.to_str().unwrap()])
        .output()
        .expect("the example runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("the host finished with 0"), "the embedder's loop got the host's exit: {stdout}");
    let records: Vec<Value> =
        std::fs::read_to_string(&trace).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let delivered =
        records.iter().any(|r| r["dir"] == "host->view" && r["msg"]["method"] == "ui/notifications/tool-result");
    assert!(delivered, "the View in the embedder's window got its result");
    // An embedded host offers no picture-in-picture: the window is not the host's to move.
    let init = records
        .iter()
        .find(|r| r["dir"] == "host->view" && r["msg"]["result"]["hostContext"].is_object())
        .expect("the View was initialized");
    assert_eq!(
        init["msg"]["result"]["hostContext"]["availableDisplayModes"],
        serde_json::json!(["inline", "fullscreen"])
    );
}

#[test]
fn a_custom_policy_refuses_app_tool_calls_when_nobody_says_yes() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    let out = std::process::Command::new(example("custom_policy"))
        .args([&node_server("sdk-app-server.mjs", ""), "sdk-probe", trace.to_str().unwrap()])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("the example runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("wants to call `echo`. Allow?") && stderr.contains("refused"), "{stderr}");
    let records: Vec<Value> =
        std::fs::read_to_string(&trace).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(
        records.iter().all(|r| !(r["dir"] == "host->server" && r["msg"]["params"]["name"] == "echo")),
        "a refused call reached the server"
    );
    assert!(records.iter().any(|r| r["dir"] == "host->view"
        && r["msg"]["error"]["message"].as_str().is_some_and(|m| m.contains("did not allow `echo`"))));
}

#[test]
fn a_view_session_can_be_driven_without_our_webview() {
    let out =
        std::process::Command::new(example("drive_session")).env_remove("DISPLAY").output().expect("the example runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        stdout.contains("hello from greet") && stdout.contains("Content-Security-Policy: default-src 'none'"),
        "{stdout}"
    );
}

#[test]
fn preview_reloads_on_resources_updated_and_views_hear_list_changes() {
    let server = node_server("fault-server.mjs", "live");
    let run = run_host_until(
        &["preview", "--stdio", &server, "--tool", "fault"],
        |t| {
            t.iter()
                .filter(|r| r["dir"] == "host->view" && r["msg"]["method"] == "ui/notifications/tool-result")
                .count()
                >= 2
        },
        LIMIT,
    );
    let first = run.trace.iter().find(|r| r["msg"]["method"] == "ui/initialize").expect("a View started");
    assert_eq!(first["msg"]["params"]["appInfo"]["name"], "fault-view", "stderr:\n{}", run.stderr);
    let reloaded = run
        .trace
        .iter()
        .find(|r| r["msg"]["params"]["appInfo"]["name"] == "fault-view-v2")
        .unwrap_or_else(|| panic!("no reload after resources/updated; stderr:\n{}", run.stderr));
    assert_ne!(reloaded["view"], first["view"], "a fresh View");
    // The first View heard the tool list change, as its capabilities promised.
    let caps = run
        .trace
        .iter()
        .find(|r| {
            r["view"] == first["view"] && r["dir"] == "host->view" && r["msg"]["result"]["hostCapabilities"].is_object()
        })
        .map(|r| r["msg"]["result"]["hostCapabilities"]["serverTools"].clone());
    assert_eq!(caps, Some(serde_json::json!({"listChanged": true})));
    assert!(
        run.trace
            .iter()
            .any(|r| r["view"] == first["view"] && r["msg"]["method"] == "notifications/tools/list_changed"),
        "{}",
        run.stderr
    );
    // The reloaded View got the input and result again, without a second tool call.
    assert_eq!(run.dir("host->server").filter(|m| m["method"] == "tools/call").count(), 1);
    assert!(run
        .trace
        .iter()
        .any(|r| r["view"] == reloaded["view"] && r["msg"]["method"] == "ui/notifications/tool-result"));
}

/// App authors debug in WebKit's inspector: `preview` offers it (a button in the developer panel,
/// F12, Ctrl+Shift+I) on a webview with developer extras; `run` has neither and refuses the
/// shell's request. (The inspector's own window goes with the host process.)
#[test]
fn the_web_inspector_opens_in_preview_and_is_refused_in_run() {
    let dir = tempfile::tempdir().unwrap();
    let script = automation(
        &dir,
        r##"
        await until(() => document.querySelector("#tools button[data-tool]"));
        const button = document.getElementById("dev-inspect");
        const offered = !document.getElementById("dev").hidden && !!button && button.offsetParent !== null;
        // In run there is no button: the shell's line to Rust is asked directly.
        if (offered) button.click(); else window.__mcpHostSend({ kind: "inspector" });
        await wait(1500);
        await call("add", { a: offered ? "1" : "0", b: "0" });
        "##,
    );
    let server = node_server("sdk-app-server.mjs", "");
    let reported = |t: &[Value]| t.iter().any(|r| r["dir"] == "host->server" && r["msg"]["params"]["name"] == "add");
    let offered = |run: &Run| {
        run.dir("host->server")
            .find(|m| m["params"]["name"] == "add")
            .map(|m| m["params"]["arguments"]["a"].clone())
            .unwrap_or_else(|| panic!("no report; stderr:\n{}", run.stderr))
    };

    let preview = run_host_until(&["preview", "--stdio", &server, "--automation", &script], reported, LIMIT);
    assert_eq!(offered(&preview), 1, "preview shows the Inspect button; stderr:\n{}", preview.stderr);
    assert!(preview.stderr.contains("web inspector: available (preview)"), "{}", preview.stderr);
    assert!(preview.stderr.contains("opening the web inspector"), "{}", preview.stderr);

    let run = run_host_until(&["run", "--stdio", &server, "--automation", &script], reported, LIMIT);
    assert_eq!(offered(&run), 0, "run has no developer panel; stderr:\n{}", run.stderr);
    // Read back from WebKit's settings: no developer extras (wry turns them on in debug builds).
    assert!(run.stderr.contains("web inspector: off"), "{}", run.stderr);
    assert!(run.stderr.contains("web inspector refused: it opens only in preview"), "{}", run.stderr);
    assert!(!run.stderr.contains("opening the web inspector"), "{}", run.stderr);
}

/// An App that fills its viewport (`height: 100vh`, sized by the App SDK's autoResize) starts at
/// a share of the window, not the 240 px it would stay at, and keeps it; the same App with a
/// body margin (always 16 px taller than its frame) does not make the host grow it forever.
#[test]
fn a_view_that_fills_its_viewport_starts_tall_and_never_loops() {
    let dir = tempfile::tempdir().unwrap();
    let script = automation(
        &dir,
        r##"
        await until(() => document.querySelectorAll(".card[data-view] .slot").length === 2);
        const heights = () => {
          const frames = {};
          document.querySelectorAll(".card[data-view]").forEach((c) => {
            frames[c.dataset.view] = c.querySelector(".slot").getBoundingClientRect().height;
          });
          return JSON.stringify(frames);
        };
        // Until v2 (always taller than its frame) has been resized at least once and the frames
        // stopped changing for 2 s (at most 30 s): a slow machine may load the Views late, and
        // frames that never changed yet are not "stable".
        const first = JSON.parse(heights()).v2;
        let last = heights(), stable = 0;
        for (let i = 0; i < 60 && (stable < 4 || JSON.parse(last).v2 === first); i++) {
          await wait(500);
          const now = heights();
          stable = now === last ? stable + 1 : 0;
          last = now;
        }
        await call("note", { text: last });
        "##,
    );
    let server = node_server("viewport-app/index.mjs", "");
    let run = run_host_until(
        &["run", "--stdio", &server, "--tool", "fill", "--tool", "fill-margin", "--automation", &script],
        |t| t.iter().any(|r| r["dir"] == "host->server" && r["msg"]["params"]["name"] == "note"),
        LIMIT,
    );
    let frames: Value = run
        .dir("host->server")
        .find(|m| m["params"]["name"] == "note")
        .and_then(|m| m["params"]["arguments"]["text"].as_str())
        .map(|t| serde_json::from_str(t).unwrap())
        .unwrap_or_else(|| panic!("no note; stderr:\n{}", run.stderr));
    let reports = |view: &str| -> Vec<f64> {
        run.trace
            .iter()
            .filter(|r| r["view"] == view && r["dir"] == "view->host")
            .filter(|r| r["msg"]["method"] == "ui/notifications/size-changed")
            .filter_map(|r| r["msg"]["params"]["height"].as_f64())
            .collect()
    };
    let resizes = |view: &str| {
        run.stderr
            .lines()
            .filter(|l| l.contains("resizing the View's frame") && l.contains(&format!("\"{view}\"")))
            .count()
    };
    // v1 (`fill`): above the old 240 px, and exactly as tall as its content says (not clipped).
    let fill = frames["v1"].as_f64().unwrap();
    let last = *reports("v1").last().unwrap_or_else(|| panic!("v1 never reported its size:\n{}", run.stderr));
    assert!(fill > 240.0, "the frame of a 100vh App stays at {fill} px; stderr:\n{}", run.stderr);
    assert!((fill - last).abs() <= 2.0, "frame {fill} px, content {last} px");
    assert!(resizes("v1") <= 1, "{} resizes of v1:\n{}", resizes("v1"), run.stderr);
    // v2 (`fill-margin`): held after a few steps above its first height (where v1 is), after
    // a bounded number of resizes, and it stopped asking.
    let margin = frames["v2"].as_f64().unwrap();
    assert!(
        margin > fill && margin <= fill + 16.0 * 8.0,
        "v2 at {margin} px (v1 at {fill} px); stderr:\n{}",
        run.stderr
    );
    assert!(resizes("v2") <= 8, "{} resizes of v2:\n{}", resizes("v2"), run.stderr);
    assert!(reports("v2").len() <= 12, "v2 kept reporting: {:?}", reports("v2"));
    assert!(run.stderr.contains("the View sizes itself from its frame"), "{}", run.stderr);
}

/// A View that measures itself as it loads sees its card's height even when the shell is slow
/// to say where the card is (a busy machine: here the shell's frames come 2 s late), so the
/// View loads before its slot is reported: it must not take the 1 px of a webview not placed
/// yet for its viewport and keep that.
#[test]
fn a_view_that_loads_before_its_slot_is_reported_gets_its_cards_height() {
    let dir = tempfile::tempdir().unwrap();
    let script = automation(
        &dir,
        r##"
        // The shell reports where slots are once per frame: its frames come 2 s late for a while.
        const frame = window.requestAnimationFrame.bind(window);
        window.requestAnimationFrame = (f) => setTimeout(() => frame(f), 2000);
        await until(() => document.querySelector(".card[data-view] .slot"));
        await wait(2500);
        window.requestAnimationFrame = frame;
        await wait(3000);
        const slot = document.querySelector(".card[data-view] .slot");
        await call("note", { text: String(slot.getBoundingClientRect().height) });
        "##,
    );
    let server = node_server("viewport-app/index.mjs", "");
    let run = run_host_until(
        &["run", "--stdio", &server, "--tool", "fill", "--automation", &script],
        |t| t.iter().any(|r| r["dir"] == "host->server" && r["msg"]["params"]["name"] == "note"),
        LIMIT,
    );
    let height: f64 = run
        .dir("host->server")
        .find(|m| m["params"]["name"] == "note")
        .and_then(|m| m["params"]["arguments"]["text"].as_str())
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("no note; stderr:\n{}", run.stderr));
    let reports: Vec<f64> = run
        .trace
        .iter()
        .filter(|r| r["dir"] == "view->host" && r["msg"]["method"] == "ui/notifications/size-changed")
        .filter_map(|r| r["msg"]["params"]["height"].as_f64())
        .collect();
    assert!(height > 240.0, "the card of a 100vh App is {height} px (its reports: {reports:?})");
    assert!(reports.iter().all(|h| *h > 240.0), "the View saw a viewport not its card's: {reports:?}");
}

/// Side panels wrap what Views put there: a model context, a message and an expanded log record
/// of one unbroken 3000-character word each stay inside their panel (no sideways scrolling).
#[test]
fn side_panels_wrap_long_words_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let script = automation(
        &dir,
        r##"
        await until(() => document.querySelector("#tools button[data-tool]"));
        const word = "x".repeat(3000);
        const json = JSON.stringify({ data: Array.from({ length: 200 }, (_, i) => "item" + i) });
        // What the host shows for a View's model context, message and log records.
        window.__mcpShell.dispatch({ op: "context", view: "v9", from: "fill · Viewport Filler", text: word + "\n" + json });
        window.__mcpShell.dispatch({ op: "message", view: "v9", from: "fill · Viewport Filler", role: "user", text: word });
        window.__mcpShell.dispatch({ op: "log", record: { t_ms: 1, view: null, dir: "diagnostic", msg: { kind: "long", detail: word, json: json } } });
        const row = await until(() => document.querySelector("#log li"));
        row.click();
        await until(() => row.querySelector("pre"));
        await wait(300);
        const fits = (id) => { const e = document.getElementById(id); return { scroll: e.scrollWidth, client: e.clientWidth }; };
        await call("note", { text: JSON.stringify({ side: fits("side"), dev: fits("dev"), body: { scroll: document.body.scrollWidth, client: document.body.clientWidth } }) });
        "##,
    );
    let server = node_server("viewport-app/index.mjs", "");
    let run = run_host_until(
        &["preview", "--stdio", &server, "--automation", &script],
        |t| t.iter().any(|r| r["dir"] == "host->server" && r["msg"]["params"]["name"] == "note"),
        LIMIT,
    );
    let seen: Value = run
        .dir("host->server")
        .find(|m| m["params"]["name"] == "note")
        .and_then(|m| m["params"]["arguments"]["text"].as_str())
        .map(|t| serde_json::from_str(t).unwrap())
        .unwrap_or_else(|| panic!("no note; stderr:\n{}", run.stderr));
    for panel in ["side", "dev", "body"] {
        let (scroll, client) = (seen[panel]["scroll"].as_f64().unwrap(), seen[panel]["client"].as_f64().unwrap());
        assert!(client > 0.0 && scroll <= client, "{panel} scrolls sideways: {seen}");
    }
}

/// Over the budget of live Views, a View far out of sight sleeps: it is told
/// `ui/resource-teardown` and its webview goes, its card stays. Scrolled to, it wakes as a new
/// View in that card, with the same input and the same result, and the tool is not called
/// again.
#[test]
fn a_view_far_out_of_sight_sleeps_and_wakes_with_its_input_and_result_when_scrolled_to() {
    let dir = tempfile::tempdir().unwrap();
    let script = automation(
        &dir,
        r##"
        await until(() => document.querySelectorAll(".card .slot").length === 5, 60000);
        // The Views grow to 700 px after they mount; what is near sight is worked out again when
        // the person scrolls (a View's own growth never puts another to sleep): a small scroll.
        await wait(1500);
        window.dispatchEvent(new WheelEvent("wheel", { deltaY: 1 }));
        document.getElementById("stream").scrollBy(0, 1);
        const card = await until(() => document.querySelector(".card.asleep"), 60000);
        await wait(500);
        window.dispatchEvent(new WheelEvent("wheel", { deltaY: 1 })); // a person's scroll comes with their input
        card.scrollIntoView({ block: "center" });
        "##,
    );
    let server = node_server("bench-server.mjs", "");
    let args = serde_json::json!({"mode": "idle", "keepOpen": true, "height": 700}).to_string();
    let mut argv = vec!["run", "--stdio", &server, "--live-views", "2", "--automation", &script];
    for _ in 0..5 {
        argv.extend(["--tool", "bench-view", "--args", &args]);
    }
    let woken = |t: &[Value]| -> Option<(String, String)> {
        let r = t.iter().find(|r| r["msg"]["kind"] == "woken")?;
        Some((r["view"].as_str()?.to_owned(), r["msg"]["from"].as_str()?.to_owned()))
    };
    let run = run_host_until(
        &argv,
        |t| {
            woken(t).is_some_and(|(new, _)| {
                t.iter().any(|r| {
                    r["view"] == new.as_str()
                        && r["dir"] == "host->view"
                        && r["msg"]["method"] == "ui/notifications/tool-result"
                })
            })
        },
        LIMIT,
    );
    let (new, old) = woken(&run.trace).unwrap_or_else(|| panic!("no View woke; stderr:\n{}", run.stderr));
    let of = |view: &str, dir: &str, method: &str| -> Vec<Value> {
        run.trace
            .iter()
            .filter(|r| r["view"] == view && r["dir"] == dir && r["msg"]["method"] == method)
            .map(|r| r["msg"].clone())
            .collect()
    };
    let slept: Vec<&str> =
        run.trace.iter().filter(|r| r["msg"]["kind"] == "sleep").filter_map(|r| r["view"].as_str()).collect();
    assert!(slept.contains(&old.as_str()), "{old} went to sleep before it woke: {slept:?}");
    // Going to sleep, the App was told, as on any teardown.
    assert_eq!(of(&old, "host->view", "ui/resource-teardown").len(), 1, "{old} got its teardown");
    // Waking, a new View of the same call: its handshake, the same input and the same result.
    assert_eq!(of(&new, "view->host", "ui/notifications/initialized").len(), 1, "{new} initialized");
    let input = |v: &str| of(v, "host->view", "ui/notifications/tool-input")[0]["params"].clone();
    let result = |v: &str| of(v, "host->view", "ui/notifications/tool-result")[0]["params"].clone();
    assert_eq!(input(&new), input(&old));
    assert_eq!(input(&new)["arguments"]["height"], 700);
    assert_eq!(result(&new), result(&old));
    // The tool was called once per View opened, not again for the one that woke.
    let calls = run.dir("host->server").filter(|m| m["params"]["name"] == "bench-view").count();
    assert_eq!(calls, 5, "stderr:\n{}", run.stderr);
}

/// The first run: with an empty home the app opens on its welcome instead of failing; one click
/// writes the embedded demo server into the default config file and starts it in this window,
/// and its Views then open from the picker and get their result.
#[test]
fn with_an_empty_home_the_welcome_adds_the_demo_server_and_its_view_opens() {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let script = automation(
        &dir,
        r##"
        const add = await until(() => document.getElementById("welcome-add-demo"));
        add.click();
        await until(() => !document.getElementById("welcome"));
        await call("weather");
        "##,
    );
    let config_home = home.path().join(".config");
    let data_home = home.path().join(".local/share");
    let run = run_host_until_env(
        &["run", "--automation", &script],
        &[
            ("HOME", home.path().to_str().unwrap()),
            ("XDG_CONFIG_HOME", config_home.to_str().unwrap()),
            ("XDG_DATA_HOME", data_home.to_str().unwrap()),
        ],
        |t| t.iter().any(|r| r["msg"]["method"] == "ui/notifications/tool-result"),
        LIMIT,
    );
    assert!(
        run.trace.iter().any(|r| r["msg"]["method"] == "ui/notifications/tool-result"),
        "the demo View got no result; stderr:\n{}",
        run.stderr
    );
    assert_eq!(initialized(&run.trace), ["v1"], "stderr:\n{}", run.stderr);
    let written: Value = serde_json::from_str(
        &std::fs::read_to_string(config_home.join("mcp-apps-host/mcp.json")).expect("the config file was written"),
    )
    .unwrap();
    let demo = &written["mcpServers"]["demo"];
    assert!(demo["command"].as_str().unwrap().ends_with("mcp-apps-host-server"), "{written}");
    assert_eq!(demo["args"], serde_json::json!(["demo"]), "{written}");
}
