//! The window's layout read at the sizes people use: a small laptop's 960x640 and a full-HD
//! 1920x1080 (real WebKitGTK, the window resized with xdotool as a window manager would). What a
//! person needs stays usable at both: the composer's text box wide enough to write in, Send on
//! one line and in view, nothing wider than the window.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(60);

/// Resizes the app's window once its process (found by the unique `marker` in its command
/// line) shows one, as a window manager does when the person resizes it.
/// Its thread answers the window's title, as the window manager shows it.
fn resize_when_shown(marker: String, width: u32, height: u32) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let started = Instant::now();
        while started.elapsed() < LIMIT {
            let pids = Command::new("pgrep").args(["-f", &marker]).output().map(|o| o.stdout).unwrap_or_default();
            for pid in String::from_utf8_lossy(&pids).split_whitespace() {
                let windows = Command::new("xdotool")
                    .args(["search", "--onlyvisible", "--pid", pid])
                    .output()
                    .map(|o| o.stdout)
                    .unwrap_or_default();
                if let Some(window) = String::from_utf8_lossy(&windows).split_whitespace().next() {
                    let _ = Command::new("xdotool")
                        .args(["windowsize", window, &width.to_string(), &height.to_string()])
                        .status();
                    let name = Command::new("xdotool").args(["getwindowname", window]).output().map(|o| o.stdout);
                    return String::from_utf8_lossy(&name.unwrap_or_default()).trim().to_owned();
                }
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        String::new()
    })
}

/// The layout at `width`x`height` with a model (so the composer shows): the boxes of the
/// composer's text box and Send, the page's widths, as the shell measured them.
fn layout_at(width: u32, height: u32) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join(format!("layout-{width}x{height}.json"));
    let demo = serde_json::json!({"mcpServers": {"demo": {"command": env!("CARGO_BIN_EXE_mcp-apps-host"), "args": ["__demo-server"]}}});
    std::fs::write(&config, demo.to_string()).unwrap();
    let script = automation(
        &dir,
        &format!(
            r##"
        await until(() => window.innerWidth === {width} && document.getElementById("prompt").dataset.model);
        // After a turn, when the composer has the most in it (Edit last, Retry, Model).
        document.getElementById("prompt-text").value = "hello";
        document.getElementById("prompt-send").click();
        await until(() => !document.getElementById("prompt-edit").hidden && document.getElementById("prompt-stop").hidden);
        await new Promise((r) => setTimeout(r, 500));
        const shown = Array.from(document.querySelectorAll("#prompt > button")).filter((b) => !b.hidden).map((b) => b.id);
        const box = (sel) => {{ const b = document.querySelector(sel).getBoundingClientRect(); return {{ x: b.x, y: b.y, w: b.width, h: b.height }}; }};
        const line = parseFloat(getComputedStyle(document.getElementById("prompt-send")).lineHeight) || 20;
        const measured = {{ width: innerWidth, height: innerHeight, scroll: document.documentElement.scrollWidth,
            text: box("#prompt-text"), send: box("#prompt-send"), side: box(".side"), line, shown }};
        await call("greet", {{ name: JSON.stringify(measured) }}, "demo");
        "##
        ),
    );
    let resizing = resize_when_shown(config.to_string_lossy().into_owned(), width, height);
    let run = run_host_until(
        &[
            "run",
            "--config",
            config.to_str().unwrap(),
            "--model",
            "scripted",
            "--tool",
            "counter",
            "--automation",
            &script,
        ],
        |t| t.iter().any(|r| r["dir"] == "host->server" && r["msg"]["params"]["name"] == "greet"),
        LIMIT,
    );
    let title = resizing.join().unwrap_or_default();
    assert_eq!(title, "MCP Apps Host", "the window calls the app by its name");
    let said = run
        .trace
        .iter()
        .find(|r| r["dir"] == "host->server" && r["msg"]["params"]["name"] == "greet")
        .and_then(|r| r["msg"]["params"]["arguments"]["name"].as_str().map(str::to_owned))
        .unwrap_or_else(|| panic!("the window was not measured at {width}x{height}; stderr:\n{}", run.stderr));
    serde_json::from_str(&said).unwrap()
}

/// What a person needs of the composer at one size.
fn composer_is_usable(m: &Value) {
    let (width, text, send) = (m["width"].as_f64().unwrap(), &m["text"], &m["send"]);
    assert!(text["w"].as_f64().unwrap() >= 240.0, "the text box is wide enough to write in: {m}");
    assert!(send["h"].as_f64().unwrap() < 2.0 * m["line"].as_f64().unwrap() + 16.0, "Send is on one line: {m}");
    assert!(send["x"].as_f64().unwrap() + send["w"].as_f64().unwrap() <= width, "Send is in view: {m}");
    assert!(m["scroll"].as_f64().unwrap() <= width, "nothing is wider than the window: {m}");
}

#[test]
fn the_composer_is_usable_in_a_small_and_a_large_window() {
    let small = layout_at(960, 640);
    composer_is_usable(&small);
    let large = layout_at(1920, 1080);
    composer_is_usable(&large);
    eprintln!("layout: 960x640 {small}\nlayout: 1920x1080 {large}");
}
