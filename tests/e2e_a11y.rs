//! The shell as a screen reader reads it: every control of the shell on the Linux accessibility
//! bus (AT-SPI), read by a real AT-SPI client (`tests/fixtures/a11y/controls.py`, Python's
//! `gi.repository.Atspi`) from a private D-Bus session with the AT-SPI bus on it.
//!
//! These tests need `at-spi2-core`, `gir1.2-atspi-2.0` and `python3-gi` (scripts/setup installs
//! them), `dbus-daemon` and a display.

mod common;

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

/// A private session bus with the AT-SPI bus launcher on it; all of it ends on drop.
///
/// Nothing of it is shared with another run: the launcher puts the accessibility bus's socket
/// at `$XDG_RUNTIME_DIR/at-spi/bus_<display>` (else `~/.cache/at-spi/`), so two runs on one
/// display number (every test of a `cargo test` under one `xvfb-run`, or another session's
/// tests) would take each other's socket, and a bus left behind removes the newer one's socket
/// when it ends. Each bus here has a runtime directory of its own, its address is given to the
/// host and the client as `AT_SPI_BUS_ADDRESS` (not read from the display, which keeps the last
/// launcher's), and the launcher's process group (the accessibility bus and the registry it
/// starts) ends with it.
struct AccessibilityBus {
    address: String,
    /// The accessibility bus itself.
    a11y: String,
    children: Vec<Child>,
    launcher_group: u32,
    _runtime: tempfile::TempDir,
}

impl AccessibilityBus {
    fn start() -> Self {
        let mut bus = Command::new("dbus-daemon")
            .args(["--session", "--nofork", "--print-address=1"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("dbus-daemon runs (scripts/setup installs it)");
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(bus.stdout.take().unwrap()), &mut line).unwrap();
        let address = line.trim().to_owned();
        let runtime = tempfile::tempdir().unwrap();
        let launcher = std::os::unix::process::CommandExt::process_group(
            Command::new("/usr/libexec/at-spi-bus-launcher")
                .arg("--launch-immediately")
                .env("DBUS_SESSION_BUS_ADDRESS", &address)
                .env("XDG_RUNTIME_DIR", runtime.path())
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
            0,
        )
        .spawn()
        .expect("the AT-SPI bus launcher runs (scripts/setup installs at-spi2-core)");
        let launcher_group = launcher.id();
        let mut this =
            Self { address, a11y: String::new(), children: vec![launcher, bus], launcher_group, _runtime: runtime };
        // The launcher owns `org.a11y.Bus` once the accessibility bus is up.
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while this.a11y.is_empty() {
            let out = Command::new("dbus-send")
                .args(["--session", "--print-reply", "--dest=org.a11y.Bus", "/org/a11y/bus", "org.a11y.Bus.GetAddress"])
                .env("DBUS_SESSION_BUS_ADDRESS", &this.address)
                .output()
                .expect("dbus-send runs (scripts/setup installs dbus-bin)");
            let reply = String::from_utf8_lossy(&out.stdout);
            if let Some(at) = reply.find("string \"") {
                this.a11y = reply[at + 8..].trim_end().trim_end_matches('"').to_owned();
            }
            assert!(
                !this.a11y.is_empty() || std::time::Instant::now() < deadline,
                "the accessibility bus never came up: {reply} {}",
                String::from_utf8_lossy(&out.stderr)
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        this
    }

    /// `cmd` on this bus: the session bus and the accessibility bus named.
    fn on<'a>(&self, cmd: &'a mut Command) -> &'a mut Command {
        cmd.env("DBUS_SESSION_BUS_ADDRESS", &self.address).env("AT_SPI_BUS_ADDRESS", &self.a11y)
    }
}

impl Drop for AccessibilityBus {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-KILL", "--", &format!("-{}", self.launcher_group)]).status();
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Starts the host with `args` on `bus`, with `home` as its HOME and its log in `log`. A host
/// that ends at once because the X server refused its connection (seen on busy CI runs, with
/// nothing of the host's own at fault: the other end-to-end tests start it once more too, see
/// `common::display_refused`) is started once more.
fn start_host(bus: &AccessibilityBus, args: &[&str], home: &std::path::Path, log: &std::path::Path) -> Child {
    let spawn = || {
        bus.on(&mut Command::new(env!("CARGO_BIN_EXE_mcp-apps-host")))
            .args(args)
            .env("HOME", home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_DATA_HOME", home.join(".local/share"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log).unwrap())
            .spawn()
            .unwrap()
    };
    let mut host = spawn();
    let started = std::time::Instant::now();
    while started.elapsed() < Duration::from_secs(3) {
        if host.try_wait().unwrap().is_some() {
            let said = std::fs::read_to_string(log).unwrap_or_default();
            if !said.contains("cannot open the display") {
                break;
            }
            eprintln!("the X server refused the host's connection; starting it once more");
            std::thread::sleep(Duration::from_secs(1));
            return spawn();
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    host
}

/// Runs the host with `args` (and `home` as its HOME) on the accessibility bus, and once its
/// shell is up and the automation revealed every hidden part of it, reads the shell's
/// controls as a screen reader sees them.
fn shell_controls(args: &[&str], home: &std::path::Path, reveal: &str) -> Vec<Value> {
    let bus = AccessibilityBus::start();
    let dir = tempfile::tempdir().unwrap();
    let script = common::automation(&dir, reveal);
    let args: Vec<&str> = args.iter().copied().chain(["--automation", script.as_str()]).collect();
    let mut host = start_host(&bus, &args, home, &dir.path().join("host.log"));
    // The shell, its Views and the automation's reveal settle.
    std::thread::sleep(Duration::from_secs(6));
    let out = bus
        .on(&mut Command::new("/usr/bin/python3"))
        .arg(common::fixtures().join("a11y/controls.py"))
        .arg("20")
        .output()
        .expect("python3 with gi runs (scripts/setup installs python3-gi)");
    let _ = host.kill();
    let _ = host.wait();
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    let log = || std::fs::read_to_string(dir.path().join("host.log")).unwrap_or_default();
    assert!(report["error"].is_null(), "{report}\nthe host said:\n{}", log());
    report["controls"].as_array().unwrap().clone()
}

/// One test at a time: real key events go to whichever window of the display has the focus.
static DISPLAY: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Every part of the shell shown at once (what is hidden is not on the bus).
const REVEAL: &str = r#"
  await wait(1500);
  for (const e of document.querySelectorAll("[hidden]")) e.hidden = false;
"#;

fn unnamed(controls: &[Value]) -> Vec<&Value> {
    controls.iter().filter(|c| c["name"].as_str().unwrap_or_default().is_empty()).collect()
}

fn names(controls: &[Value]) -> Vec<&str> {
    controls.iter().filter_map(|c| c["name"].as_str()).collect()
}

/// Every control of the shell has a name a screen reader says: the app with a model and the
/// developer panel (preview), every hidden part shown, and the first run's welcome with the
/// servers editor. A control without one (the automation adds a bare button) is found.
#[test]
fn every_control_of_the_shell_has_a_name_a_screen_reader_reads() {
    let _display = DISPLAY.lock().unwrap_or_else(|e| e.into_inner());
    let home = tempfile::tempdir().unwrap();
    let preview = ["preview", "--builtin", "demo", "--tool", "weather", "--model", "scripted"];
    let controls = shell_controls(&preview, home.path(), REVEAL);
    let said = names(&controls);
    for want in ["Switch theme", "Message the model", "Send", "Close Weather", "Reload", "Filter by method", "Log"] {
        assert!(said.contains(&want), "{want:?} is on the bus: {said:?}");
    }
    assert!(controls.len() > 30, "the whole shell was read: {controls:#?}");
    assert!(unnamed(&controls).is_empty(), "controls without a name: {:#?}", unnamed(&controls));
    // (A select's options are reached through the select.)
    let out_of_reach: Vec<&Value> =
        controls.iter().filter(|c| c["role"] != "menu item" && c["focusable"] != true).collect();
    assert!(out_of_reach.is_empty(), "controls the keyboard cannot reach: {out_of_reach:#?}");

    // The first run: no config, the welcome and (once shown) the servers editor.
    let first = tempfile::tempdir().unwrap();
    let controls = shell_controls(&["run"], first.path(), REVEAL);
    assert!(names(&controls).contains(&"Add the demo server"), "{:?}", names(&controls));
    assert!(unnamed(&controls).is_empty(), "controls without a name: {:#?}", unnamed(&controls));

    // The check itself: a control without a name is found.
    let bare = format!("{REVEAL}\n  document.body.append(document.createElement(\"button\"));");
    let controls = shell_controls(&["run"], first.path(), &bare);
    assert_eq!(unnamed(&controls).len(), 1, "{controls:#?}");
}

/// The first run with the keyboard only (real key events; where the focus is, read as a screen
/// reader reads it): Tab to "Add the demo server" and Enter, Tab to the demo's weather tool and
/// Enter, Tab to "Call" and Enter; the weather View opens and gets its result.
#[test]
fn the_keyboard_alone_adds_the_demo_server_and_opens_a_view() {
    let _display = DISPLAY.lock().unwrap_or_else(|e| e.into_inner());
    let bus = AccessibilityBus::start();
    let home = tempfile::tempdir().unwrap();
    let trace = home.path().join("trace.jsonl");
    let trace_arg = trace.to_string_lossy().into_owned();
    let mut host = start_host(&bus, &["run", "--trace", &trace_arg], home.path(), &home.path().join("host.log"));
    let out = bus
        .on(&mut Command::new("/usr/bin/python3"))
        .arg(common::fixtures().join("a11y/keyboard.py"))
        .arg(host.id().to_string())
        .output()
        .expect("python3 with gi runs");
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    let records = || -> Vec<Value> {
        std::fs::read_to_string(&trace)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    };
    let result = |r: &[Value]| {
        r.iter().any(|r| r["dir"] == "host->view" && r["msg"]["method"] == "ui/notifications/tool-result")
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !result(&records()) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
    }
    let _ = host.kill();
    let _ = host.wait();
    let steps = report["steps"].as_array().unwrap();
    let log = std::fs::read_to_string(home.path().join("host.log")).unwrap_or_default();
    assert!(steps.len() == 3 && steps.iter().all(|s| s["ok"] == true), "{report:#}\nthe host said:\n{log}");
    assert!(result(&records()), "the weather View got its result: {report:#}");
}
