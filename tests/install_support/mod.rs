//! Helpers of the install tests (`install.rs`, `install_bundles.rs`, `install_in_app.rs`): the
//! `install` command with its own home, a run to a tool result, the fixture bundles and the
//! stand-ins for the registry and the app's dialog. The crate declaring it declares `common` and
//! `keyring_support` too.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use base64::Engine as _;
use serde_json::{json, Value};

use crate::common;
use crate::keyring_support::NO_BUS;

/// The fixture package `npx` runs: installed in tests/fixtures by `npm ci`.
pub const PACKAGE: &str = "@modelcontextprotocol/server-basic-vanillajs";

pub fn package_version() -> String {
    let text = std::fs::read_to_string(common::fixtures().join("package.json")).unwrap();
    let json: Value = serde_json::from_str(&text).unwrap();
    json["dependencies"][PACKAGE].as_str().expect("the fixture package is a dependency").to_owned()
}

/// `mcp-apps-host install ARGS` with its own home, so the person's config is never touched.
pub fn install(home: &Path, args: &[&str]) -> Output {
    install_on_bus(home, args, NO_BUS)
}

/// `install` with the D-Bus session bus at `bus`.
pub fn install_on_bus(home: &Path, args: &[&str], bus: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mcp-apps-host"))
        .arg("install")
        .args(args)
        .env("DBUS_SESSION_BUS_ADDRESS", bus)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_DATA_HOME", home.join("data"))
        .stdin(std::process::Stdio::null())
        .output()
        .expect("the binary starts")
}

pub fn text(o: &Output) -> String {
    format!("stdout:\n{}\nstderr:\n{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `run --config FILE --tool get-time --exit-after result` in `cwd` (where npx finds the
/// fixture package without the network); the tool result that reached the View.
pub fn run_to_result(home: &Path, config: &Path, cwd: &Path) -> Value {
    run_to_result_on_bus(home, config, cwd, NO_BUS).0
}

/// [`run_to_result`] with the D-Bus session bus at `bus`; also the host's stderr (its log).
pub fn run_to_result_on_bus(home: &Path, config: &Path, cwd: &Path, bus: &str) -> (Value, String) {
    assert!(std::env::var_os("DISPLAY").is_some(), "run under a display (scripts/test uses xvfb-run)");
    let trace = home.join("trace.jsonl");
    let out = Command::new(env!("CARGO_BIN_EXE_mcp-apps-host"))
        .args(["run", "--config"])
        .arg(config)
        .args(["--tool", "get-time", "--exit-after", "result", "--timeout", "120", "--trace"])
        .arg(&trace)
        .current_dir(cwd)
        .env("DBUS_SESSION_BUS_ADDRESS", bus)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_DATA_HOME", home.join("data"))
        .env("npm_config_offline", "true")
        .env("npm_config_update_notifier", "false")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("the binary starts");
    assert!(out.status.success(), "{}", text(&out));
    let trace = std::fs::read_to_string(&trace).unwrap();
    let result = trace
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|r| r["dir"] == "host->view" && r["msg"]["method"] == "ui/notifications/tool-result")
        .map(|r| r["msg"]["params"].clone())
        .unwrap_or_else(|| panic!("no tool-result reached the View:\n{trace}"));
    (result, stderr(&out))
}

pub fn write_json(dir: &Path, name: &str, value: &Value) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string_pretty(value).unwrap()).unwrap();
    path
}

pub fn npm_server_json(registry_type: &str) -> Value {
    json!({
        "$schema": "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
        "name": "io.github.modelcontextprotocol/basic-vanillajs",
        "description": "The reference MCP App server (vanilla JS)",
        "version": package_version(),
        "packages": [{
            "registryType": registry_type,
            "identifier": PACKAGE,
            "version": package_version(),
            "transport": {"type": "stdio"},
            "packageArguments": [{"type": "positional", "value": "--stdio"}],
            "environmentVariables": [
                {"name": "GREETING_STYLE", "isRequired": true, "description": "how to greet", "choices": ["short", "long"]},
                {"name": "EXAMPLE_TOKEN", "isSecret": true, "description": "not needed by this server"},
                {"name": "EXAMPLE_LEVEL", "default": "info"}
            ]
        }]
    })
}

/// An `.mcpb` made by hand: `manifest.json` and the reference App server's bundled files.
pub fn bundle(dir: &Path, file: &str, manifest: &Value, extra: &[(&str, &[u8])]) -> PathBuf {
    bundle_with_comment(dir, file, manifest, extra, "")
}

/// [`bundle`] with a zip comment (which sets its length to the byte).
pub fn bundle_with_comment(
    dir: &Path,
    file: &str,
    manifest: &Value,
    extra: &[(&str, &[u8])],
    comment: &str,
) -> PathBuf {
    use std::io::Write as _;
    let path = dir.join(file);
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
    zip.set_comment(comment).unwrap();
    let plain = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    zip.start_file("manifest.json", plain).unwrap();
    zip.write_all(serde_json::to_string_pretty(manifest).unwrap().as_bytes()).unwrap();
    let dist = common::fixtures().join("node_modules/@modelcontextprotocol/server-basic-vanillajs/dist");
    for name in ["index.js", "server.js", "mcp-app.html"] {
        let mode = if name == "index.js" { 0o755 } else { 0o644 };
        zip.start_file(format!("server/{name}"), plain.unix_permissions(mode)).unwrap();
        zip.write_all(&std::fs::read(dist.join(name)).unwrap()).unwrap();
    }
    for (name, bytes) in extra {
        zip.start_file(*name, plain).unwrap();
        zip.write_all(bytes).unwrap();
    }
    zip.finish().unwrap();
    path
}

pub fn clock_manifest() -> Value {
    json!({
        "manifest_version": "0.3",
        "name": "clock-bundle",
        "display_name": "Clock",
        "version": "1.0.0",
        "description": "The reference App server, bundled",
        "author": {"name": "Test"},
        "server": {
            "type": "node",
            "entry_point": "server/index.js",
            "mcp_config": {
                "command": "node",
                "args": ["${__dirname}/server/index.js", "--stdio"],
                "env": {"CLOCK_API_KEY": "${user_config.api_key}", "CLOCK_HOME": "${HOME}", "CLOCK_REFRESH": "${user_config.refresh}"},
                "platform_overrides": {"linux": {"env": {"CLOCK_PLATFORM": "linux"}}, "win32": {"command": "node.exe"}}
            }
        },
        "user_config": {
            "api_key": {"type": "string", "title": "API key", "description": "Your clock service key",
                        "sensitive": true, "required": true},
            "refresh": {"type": "number", "title": "Refresh (s)", "description": "Seconds between updates",
                        "min": 1, "max": 60, "default": 5}
        }
    })
}

/// A stand-in for the MCP registry's API on a loopback port: `GET
/// /v0/servers/{serverName}/versions/{version}` (the name URL-encoded) answers
/// `{"server": <server.json>, "_meta": {...}}`, anything else 404 with the API's error body.
/// Returns its base URL and the request lines it saw.
pub fn registry_stand_in(servers: Vec<Value>) -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use std::io::{BufRead as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
            let mut request = String::new();
            reader.read_line(&mut request).unwrap();
            // The rest of the head.
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            log.lock().unwrap().push(request.trim().to_owned());
            let path = request.split(' ').nth(1).unwrap_or("");
            let found = servers.iter().find(|s| {
                let name = s["name"].as_str().unwrap().replace('/', "%2F");
                path == format!("/v0/servers/{name}/versions/latest")
                    || path == format!("/v0/servers/{name}/versions/{}", s["version"].as_str().unwrap())
            });
            let (status, body) = match found {
                Some(server) => (
                    "200 OK",
                    json!({"server": server, "_meta": {"io.modelcontextprotocol.registry/official": {
                        "status": "active", "publishedAt": "2026-11-02T10:00:00Z",
                        "updatedAt": "2026-11-02T10:00:00Z", "isLatest": true}}}),
                ),
                None => ("404 Not Found", json!({"title": "Not Found", "status": 404, "detail": "Server not found"})),
            };
            let body = body.to_string();
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (base, seen)
}

/// The official MCP Bundle tool (`mcpb`, npm `@anthropic-ai/mcpb`, installed in
/// tests/fixtures/mcpb by scripts/setup).
pub fn mcpb(args: &[&str], cwd: &Path) {
    let tool = common::fixtures().join("mcpb/node_modules/.bin/mcpb");
    let out = Command::new(&tool).args(args).current_dir(cwd).stdin(std::process::Stdio::null()).output().unwrap();
    assert!(out.status.success(), "mcpb {args:?}: {}", text(&out));
}

/// `clock.mcpb`, packed by `mcpb pack` from the clock manifest (0.4) and the reference server.
pub fn packed_clock(dir: &Path) -> PathBuf {
    let src = dir.join("src");
    std::fs::create_dir_all(src.join("server")).unwrap();
    let mut manifest = clock_manifest();
    manifest["manifest_version"] = json!("0.4");
    std::fs::write(src.join("manifest.json"), serde_json::to_string_pretty(&manifest).unwrap()).unwrap();
    let dist = common::fixtures().join("node_modules/@modelcontextprotocol/server-basic-vanillajs/dist");
    for name in ["index.js", "server.js", "mcp-app.html"] {
        std::fs::copy(dist.join(name), src.join("server").join(name)).unwrap();
    }
    mcpb(&["pack", "src", "clock.mcpb"], dir);
    dir.join("clock.mcpb")
}

/// What `mcpb sign --self-signed` names its signer (its certificate's CN and O).
pub const MCPB_SELF_SIGNED: &str = "\"MCPB Self-Signed Certificate\" (MCPB Extensions)";

/// The clock bundle whose server first logs the SHA-256 of the `api_key` it got (so the test
/// sees it arrived without the value reaching a log).
pub fn clock_that_shows_its_key(dir: &Path) -> PathBuf {
    let mut manifest = clock_manifest();
    manifest["server"]["mcp_config"]["command"] = json!("sh");
    manifest["server"]["mcp_config"]["args"] = json!([
        "-c",
        "printf 'KEY-SHA256 %s\\n' \"$(printf %s \"$CLOCK_API_KEY\" | sha256sum | cut -c1-64)\" >&2; exec node \"$0\" --stdio",
        "${__dirname}/server/index.js"
    ]);
    bundle(dir, "clock.mcpb", &manifest, &[])
}

pub fn sha256_hex(text: &str) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

pub const SECRET: &str = "s3kr1t-VALUE-9137";

/// What the person does in the app's install dialog: fills every empty field, then says yes
/// (`ACTION` = "accept") or cancels (once the buttons are armed).
pub const ANSWER_INSTALL: &str = r##"
  const box = document.getElementById("elicit");
  await until(() => !box.hidden, 30000);
  for (const field of document.querySelectorAll("#elicit-fields input")) {
    if (!field.value) { field.value = "s3cret-token"; field.dispatchEvent(new Event("input", { bubbles: true })); }
  }
  // A setting with several values: one a line.
  for (const area of document.querySelectorAll("#elicit-fields textarea")) {
    if (!area.value) area.value = typeof LINES === "string" ? LINES : "one";
  }
  const button = document.getElementById(ACTION === "accept" ? "elicit-accept" : "elicit-cancel");
  await until(() => !button.disabled, 5000);
  button.click();
"##;

/// `open TARGET` with no terminal (as the desktop entry runs it), a runner's line on stdin (the
/// test interface) and the automation answering the app's install dialog with `action`.
pub fn open_outside_a_terminal(home: &Path, target: &str, action: &str) -> (std::process::Child, tempfile::TempDir) {
    open_outside_a_terminal_with(home, target, &format!("const ACTION = {action:?};"))
}

/// [`open_outside_a_terminal`] with the automation's constants given (`ACTION`, `LINES`).
pub fn open_outside_a_terminal_with(
    home: &Path,
    target: &str,
    constants: &str,
) -> (std::process::Child, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let script = common::automation(&dir, &format!("{constants}\n{ANSWER_INSTALL}"));
    let child = Command::new(env!("CARGO_BIN_EXE_mcp-apps-host"))
        .args(["open", target, "--automation", &script, "--test-interface"])
        .env("DBUS_SESSION_BUS_ADDRESS", NO_BUS)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_DATA_HOME", home.join("data"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    (child, dir)
}

/// The host's log until it says `what` (at most 40 s), then the host ends (its runner's line
/// closes).
pub fn log_until(mut child: std::process::Child, what: &str) -> String {
    use std::io::BufRead;
    // Read on a thread of its own: a host that never says it must not hang the test.
    let stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut log = String::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(40);
    while !log.contains(what) {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => {
                log.push_str(&line);
                log.push('\n');
            }
            Err(_) => break,
        }
    }
    drop(child.stdin.take());
    let _ = child.kill();
    let _ = child.wait();
    log
}

/// The link of an install link's `config`.
pub fn link_of(config: &Value) -> String {
    format!(
        "mcp-apps-host://install?config={}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(config.to_string())
    )
}

/// A web server on a loopback port that answers `first` to the first request and `then` to
/// every other one; returns its address and how many requests it had.
pub fn two_faced(first: Value, then: Value) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::{BufRead as _, Write as _};
    use std::sync::atomic::Ordering;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/server.json", listener.local_addr().unwrap());
    let count = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = count.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let n = seen.fetch_add(1, Ordering::SeqCst);
            let body = if n == 0 { first.to_string() } else { then.to_string() };
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (url, count)
}
