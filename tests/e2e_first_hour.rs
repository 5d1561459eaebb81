//! A person's first hour with the app, walked with the keyboard alone (real key events through
//! xdotool under Xvfb) on a fresh home: the welcome, Model settings against a local endpoint that
//! lists its models, a conversation, an install link opened while the app runs (it arrives in
//! the same window: one app process), a server whose start takes 30 s connecting while the
//! window says so, a new conversation, the shortcuts, and Ctrl+Q. What the window shows is read
//! through the test interface's `readWindow` (with a screenshot of each step), never changed by
//! it: every step is the person's keys.
//!
//! Needs `xdotool` (scripts/setup installs it), a display and the npm fixtures.

mod common;
#[path = "common/model_server.rs"]
mod model_server;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use model_server::{ModelServer, KEY};
use serde_json::{json, Value};

/// No session bus: the keyring is never touched (keys go to owner-only files in the data home).
const NO_BUS: &str = "unix:path=/nonexistent/mcp-apps-host-test-bus";
/// How long the slow server takes before it answers: a first `npx -y` download's kind of wait.
const SLOW_START: u64 = 30;

/// The app on a fresh home, under a runner that only reads it.
struct App {
    child: Child,
    input: std::process::ChildStdin,
    output: BufReader<std::process::ChildStdout>,
    next: u64,
    home: PathBuf,
    shots: PathBuf,
    /// Every keyboard stop the walk saw (`readWindow`'s `focus`), for the focus-ring check.
    stops: Vec<Value>,
}

fn envs(command: &mut Command, home: &Path) {
    command
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_RUNTIME_DIR", home.join("run"))
        .env("DBUS_SESSION_BUS_ADDRESS", NO_BUS);
}

fn xdotool(args: &[&str]) -> String {
    let out = Command::new("xdotool").args(args).output().expect("xdotool runs (scripts/setup installs it)");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

impl App {
    fn start(home: &Path) -> Self {
        let mut command = Command::new(env!("CARGO_BIN_EXE_mcp-apps-host"));
        command.args(["run", "--test-interface"]);
        envs(&mut command, home);
        let mut child = command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().unwrap();
        let input = child.stdin.take().unwrap();
        let output = BufReader::new(child.stdout.take().unwrap());
        let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("first-hour");
        std::fs::create_dir_all(&shots).unwrap();
        Self { child, input, output, next: 0, home: home.to_owned(), shots, stops: Vec::new() }
    }

    fn call(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        writeln!(self.input, "{}", json!({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params}))
            .unwrap();
        let mut line = String::new();
        self.output.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    }

    /// What the window shows now (and, with `shot`, its picture in the shots directory).
    fn window(&mut self, shot: Option<&str>) -> Value {
        let params = match shot {
            Some(name) => json!({"screenshot": self.shots.join(format!("{name}.png"))}),
            None => json!({}),
        };
        let answer = self.call("readWindow", params);
        let window = answer["result"].clone();
        assert!(window.is_object(), "readWindow answered {answer}");
        if let Some(name) = shot {
            let path = self.shots.join(format!("{name}.png"));
            let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            assert!(size > 1000, "no screenshot of {name} ({}): {window:#}", path.display());
            eprintln!("first hour: {name}: {}", path.display());
        }
        window
    }

    /// Reads the window until `f` holds, for at most `limit`.
    fn until(&mut self, what: &str, limit: Duration, f: impl Fn(&Value) -> bool) -> Value {
        let started = Instant::now();
        loop {
            let window = self.window(None);
            if f(&window) {
                return window;
            }
            assert!(started.elapsed() < limit, "{what}: not within {} s; the window shows {window:#}", limit.as_secs());
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The app's window, with the X keyboard focus on it.
    fn focus_window(&self) {
        let pid = self.child.id().to_string();
        let started = Instant::now();
        loop {
            if let Some(window) = xdotool(&["search", "--onlyvisible", "--pid", &pid]).split_whitespace().next() {
                xdotool(&["windowfocus", "--sync", window]);
                return;
            }
            assert!(started.elapsed() < Duration::from_secs(30), "the app's window never showed");
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The person presses `keys` (xdotool's names, `ctrl+comma`).
    fn key(&self, keys: &str) {
        self.focus_window();
        xdotool(&["key", "--delay", "60", keys]);
        std::thread::sleep(Duration::from_millis(250));
    }

    /// The person types `text`.
    fn type_text(&self, text: &str) {
        self.focus_window();
        xdotool(&["type", "--delay", "40", text]);
        std::thread::sleep(Duration::from_millis(250));
    }

    /// The person presses Tab until the keyboard is on the element `id` (at most `most` presses);
    /// each stop is kept for the focus-ring check.
    fn tab_to(&mut self, id: &str, most: usize) -> Value {
        for _ in 0..most {
            let window = self.window(None);
            if let Some(focus) = window["focus"].as_object() {
                self.stops.push(Value::Object(focus.clone()));
                if focus["id"] == id {
                    return window;
                }
            }
            self.key("Tab");
        }
        panic!("{most} Tab presses never reached #{id}; the stops: {:#?}", self.stops);
    }

    /// The processes of this app's binary running on this home (`run` ones).
    fn apps_on_home(&self) -> usize {
        let home = format!("HOME={}", self.home.display());
        let bin = std::fs::canonicalize(env!("CARGO_BIN_EXE_mcp-apps-host")).unwrap();
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().chars().all(|c| c.is_ascii_digit()))
            .filter(|e| std::fs::read_link(e.path().join("exe")).is_ok_and(|exe| exe == bin))
            .filter(|e| {
                let environ = std::fs::read(e.path().join("environ")).unwrap_or_default();
                environ.split(|b| *b == 0).any(|v| v == home.as_bytes())
            })
            .filter(|e| {
                let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
                cmdline.split(|b| *b == 0).nth(1) == Some(b"run".as_slice())
            })
            .count()
    }
}

impl Drop for App {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn servers_state(window: &Value, name: &str) -> Option<(String, String)> {
    window["servers"].as_array()?.iter().find(|s| s["name"] == name).map(|s| {
        (s["state"].as_str().unwrap_or_default().to_owned(), s["text"].as_str().unwrap_or_default().to_owned())
    })
}

#[test]
fn the_first_hour_with_the_keyboard_alone() {
    let model = ModelServer::start();
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join("run")).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(home.path().join("run"), std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    let mut app = App::start(home.path());

    // 1. A fresh home: the welcome, and the keyboard on its first step.
    let window = app.until("the welcome", Duration::from_secs(60), |w| w["welcome"] == true);
    assert_eq!(window["focus"]["id"], "welcome-add-demo", "the keyboard starts where the person starts: {window:#}");
    assert!(window["composer"]["shown"] == true, "the composer is there from the start: {window:#}");
    app.window(Some("1-welcome"));

    // 2. Model settings (Ctrl+comma): the model's name, the endpoint, the key, its models listed.
    app.key("ctrl+comma");
    let window = app.until("Model settings", Duration::from_secs(10), |w| w["dialog"] == "settings");
    assert_eq!(window["focus"]["id"], "settings-name", "{window:#}");
    app.type_text("fixture-model");
    app.key("Tab");
    app.type_text(&format!("http://127.0.0.1:{}/v1", model.port));
    app.key("Tab");
    app.type_text(KEY);
    app.tab_to("settings-list", 4);
    app.key("Return");
    let window = app.until("the endpoint's models", Duration::from_secs(20), |w| {
        w["dialogText"].as_str().is_some_and(|t| t.contains("3 models offered"))
    });
    assert!(window["dialogText"].as_str().unwrap().contains(&format!("Connected to http://127.0.0.1:{}", model.port)));
    app.window(Some("2-model-settings"));
    app.tab_to("settings-save", 12);
    app.key("Return");
    let window = app.until("the model is chosen", Duration::from_secs(20), |w| {
        w["dialog"].is_null() && w["composer"]["placeholder"].as_str().is_some_and(|p| p.contains("fixture-model"))
    });
    assert!(!window["status"]["error"].as_bool().unwrap_or(true), "{window:#}");

    // 3. A conversation: to the composer by Tab, a message, the model's answer.
    app.tab_to("prompt-text", 40);
    app.type_text("Hello, who are you?");
    app.key("Return");
    let window = app.until("the model's answer", Duration::from_secs(30), |w| {
        w["answer"].as_str().is_some_and(|a| a.contains("Hello from the fixture model."))
    });
    app.window(Some("3-conversation"));
    let listed: Vec<Value> = model.requests().into_iter().filter(|r| r["path"] == "/v1/models").collect();
    assert_eq!(listed.len(), 1, "the models were listed once: {listed:#?}");
    assert_eq!(listed[0]["headers"]["authorization"], format!("Bearer {KEY}"), "the typed key went to the named URL");
    assert!(window["cards"].as_u64().unwrap_or(0) >= 2, "{window:#}");

    // 4. An install link opened while the app runs (as the browser opens it): handed to this
    // app, asked about in its window; no second app starts.
    let bin = common::fixtures().join("node_modules/.bin/mcp-server-basic-vanillajs");
    let slow = format!("sleep {SLOW_START}; exec {} --stdio", bin.display());
    let entry = json!({"name": "clock", "command": "bash", "args": ["-c", slow]});
    let link = format!(
        "mcp-apps-host://install?config={}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(entry.to_string())
    );
    let mut second = Command::new(env!("CARGO_BIN_EXE_mcp-apps-host"));
    second.args(["open", &link]).stdin(Stdio::null());
    envs(&mut second, home.path());
    let handed = second.output().unwrap();
    let said = String::from_utf8_lossy(&handed.stderr);
    assert!(handed.status.success() && said.contains("handed over"), "the second launch: {said}");
    let window = app.until("the install dialog", Duration::from_secs(30), |w| w["dialog"] == "elicit");
    let asked = window["dialogText"].as_str().unwrap();
    assert!(asked.contains(&format!("sleep {SLOW_START}")), "the whole command line is shown: {asked}");
    assert_eq!(app.apps_on_home(), 1, "one app on this home, not a second one");
    app.window(Some("4-install-dialog"));
    app.tab_to("elicit-accept", 12);
    app.key("Return");

    // 5. The slow server: the window says it is starting, and for how long, until it is ready.
    let asked_at = Instant::now();
    let window = app.until("the slow server counting its start", Duration::from_secs(25), |w| {
        servers_state(w, "clock").is_some_and(|(state, text)| {
            state == "starting" && text.contains("Starting for") && text.contains("Cancel")
        })
    });
    assert!(window["status"]["text"].as_str().unwrap().contains("Starting clock"), "{window:#}");
    let window = app.until("a start past 10 s says why it may take long", Duration::from_secs(25), |w| {
        servers_state(w, "clock").is_some_and(|(state, text)| state == "starting" && text.contains("download"))
    });
    app.window(Some("5-slow-start"));
    let (_, text) = servers_state(&window, "clock").unwrap();
    assert!(!text.contains("uncorrelated") && !text.contains("failed"), "{text}");
    let window = app.until("the slow server ready", Duration::from_secs(SLOW_START + 60), |w| {
        servers_state(w, "clock").is_some_and(|(state, _)| state == "ready")
    });
    let waited = asked_at.elapsed();
    assert!(waited >= Duration::from_secs(SLOW_START - 10), "it was ready after {waited:?}: not slow at all?");
    let status = window["status"]["text"].as_str().unwrap().to_owned();
    assert!(
        status.contains("Connected to clock") && window["status"]["error"] == false,
        "the status line is current: {window:#}"
    );
    app.window(Some("6-connected"));
    let tools = app.call("readModelToolList", json!({}));
    assert!(tools.to_string().contains("get-time"), "the slow server's tools reach the model: {tools}");
    assert_eq!(app.apps_on_home(), 1);

    // 6. Ctrl+N: a new conversation; F1: the shortcuts; Escape closes them.
    app.key("ctrl+n");
    let window = app.until("a new conversation", Duration::from_secs(10), |w| w["answer"].is_null());
    assert!(window["status"]["text"].as_str().unwrap().contains("new conversation"), "{window:#}");
    app.key("F1");
    let window = app.until("the shortcuts", Duration::from_secs(10), |w| w["dialog"] == "shortcuts");
    assert!(window["dialogText"].as_str().unwrap().contains("Ctrl"), "{window:#}");
    app.window(Some("7-shortcuts"));
    app.key("Escape");
    app.until("the shortcuts closed", Duration::from_secs(10), |w| w["dialog"].is_null());

    // Every keyboard stop of the walk showed where it was.
    let unseen: Vec<&Value> = app.stops.iter().filter(|s| s["ring"] != true || s["shown"] != true).collect();
    assert!(app.stops.len() >= 5, "{:#?}", app.stops);
    assert!(unseen.is_empty(), "keyboard stops without a visible focus: {unseen:#?}");

    // 7. Ctrl+Q: the app ends, as when its window is closed.
    app.key("ctrl+q");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = app.child.try_wait().unwrap() {
            break status;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "Ctrl+Q did not end the app");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(status.success(), "{status:?}");
}
