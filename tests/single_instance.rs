//! One app per config file: a second launch on the person's config file (from the menu, an
//! install link from the browser, a bundle from the file manager) hands what it was given to
//! the app already running and ends. The running app asks about the install in its own window.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{json, Value};

/// No session bus: the keyring is never touched.
const NO_BUS: &str = "unix:path=/nonexistent/mcp-apps-host-test-bus";

/// What the person does in the running app: says yes to the install dialog when it comes.
const ACCEPT_INSTALL: &str = r##"
  const box = document.getElementById("elicit");
  await until(() => !box.hidden, 120000);
  const button = document.getElementById("elicit-accept");
  await until(() => !button.disabled, 5000);
  button.click();
"##;

fn host(home: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcp-apps-host"));
    cmd.args(args)
        .env("DBUS_SESSION_BUS_ADDRESS", NO_BUS)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_DATA_HOME", home.join("data"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// A second launch with no terminal (as the desktop entry runs it): its exit status and what
/// it said, or `None` when it was still running after `limit` (it became a second app).
fn second_launch(home: &Path, args: &[&str], limit: Duration) -> Option<(bool, String)> {
    let mut child = host(home, args).spawn().unwrap();
    drop(child.stdin.take());
    let started = Instant::now();
    while started.elapsed() < limit {
        if let Some(status) = child.try_wait().unwrap() {
            let mut said = String::new();
            let _ = std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut said);
            return Some((status.success(), said));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

/// The running app's test interface: one request, its answer.
struct Runner {
    child: Child,
    input: std::process::ChildStdin,
    output: BufReader<std::process::ChildStdout>,
    next: u64,
}

impl Runner {
    fn call(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        writeln!(self.input, "{}", json!({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params}))
            .unwrap();
        let mut line = String::new();
        self.output.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    }

    fn tools(&mut self) -> Vec<String> {
        let listed = self.call("readModelToolList", json!({}));
        listed["result"]["tools"]
            .as_array()
            .map(|tools| tools.iter().filter_map(|t| t["name"].as_str().map(str::to_owned)).collect())
            .unwrap_or_default()
    }
}

#[test]
fn a_link_opened_while_the_app_runs_is_asked_about_in_that_app() {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let script = common::automation(&dir, ACCEPT_INSTALL);
    let mut child = host(home.path(), &["run", "--automation", &script, "--test-interface"]).spawn().unwrap();
    let input = child.stdin.take().unwrap();
    let output = BufReader::new(child.stdout.take().unwrap());
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let (log_tx, log_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            let _ = log_tx.send(line);
        }
    });
    let mut app = Runner { child, input, output, next: 0 };
    // The first app answers its runner: it is up, and its door is open.
    assert!(app.tools().is_empty(), "a fresh home has no servers");

    // A second launch from the menu: handed over, no second app.
    let raised = second_launch(home.path(), &["run"], Duration::from_secs(20));
    let (ok, said) = raised.expect("a second `run` on the same config file started a second app");
    assert!(ok && said.contains("handed over"), "{said}");

    // A malformed link: the running app says why, in its window.
    let bad = second_launch(home.path(), &["open", "mcp-apps-host://install?config=%%%"], Duration::from_secs(20));
    let (ok, said) = bad.expect("a bad link started a second app");
    assert!(ok, "{said}");

    // An install link from the browser: asked about in the running app, installed there.
    let bin = common::fixtures().join("node_modules/.bin/mcp-server-basic-vanillajs");
    let entry = json!({"name": "clock", "command": bin.to_str().unwrap(), "args": ["--stdio"]});
    let link = format!(
        "mcp-apps-host://install?config={}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(entry.to_string())
    );
    let opened = second_launch(home.path(), &["open", &link], Duration::from_secs(30));
    let (ok, said) = opened.expect("the install link started a second app");
    assert!(ok && said.contains("handed over"), "{said}");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !app.tools().iter().any(|t| t == "get-time") {
        assert!(Instant::now() < deadline, "the link's server never came to the running app");
        std::thread::sleep(Duration::from_millis(300));
    }
    let written = std::fs::read_to_string(home.path().join("config/mcp-apps-host/mcp.json")).unwrap();
    assert!(written.contains("\"clock\""), "{written}");

    drop(app.input);
    let _ = app.child.wait();
    let log: Vec<String> = log_rx.try_iter().collect();
    let log = log.join("\n");
    assert!(log.contains("What you opened could not be installed"), "the bad link's error is in the window: {log}");
    assert!(log.contains("asking the person whether to install it"), "{log}");

    // The app ended: its door went with it, and the next launch is the app again.
    let next = second_launch(home.path(), &["run"], Duration::from_secs(5));
    assert!(next.is_none(), "the next launch knocked on a dead app's door: {next:?}");
}
