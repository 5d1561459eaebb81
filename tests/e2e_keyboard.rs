//! The keyboard belongs to the person: real key events (xdotool under Xvfb) against the real
//! host, a View of the hostile fixture that pulls the focus to itself all along
//! (`attack-keyboard`), and the shell's own question dialog.
//!
//! These tests need `xdotool` (scripts/setup installs it) and a display.

mod common;

use std::cell::{Cell, RefCell};
use std::process::Command;

use common::hostile::*;
use serde_json::{json, Value};

/// `xdotool args...`, its standard output.
fn xdotool(args: &[&str]) -> String {
    let out = Command::new("xdotool").args(args).output().expect("xdotool runs (scripts/setup installs it)");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The host's window (the toplevel that carries its pid), with the X input focus on it.
fn focus_window(pid: u32) -> Option<String> {
    let window = xdotool(&["search", "--onlyvisible", "--pid", &pid.to_string()]).lines().next()?.to_owned();
    xdotool(&["windowfocus", &window]);
    Some(window)
}

/// A click of the first button at `(x, y)` of the host's window.
fn click(pid: u32, x: i64, y: i64) {
    let Some(window) = focus_window(pid) else { return };
    xdotool(&["mousemove", "--window", &window, &x.to_string(), &y.to_string()]);
    xdotool(&["click", "1"]);
}

/// What the person's automation reported at `stage`, the latest.
fn stage(trace: &[Value], stage: &str) -> Option<Value> {
    person_reports_in(trace).filter(|(_, d)| d["stage"] == stage).map(|(_, d)| d).last()
}

/// The shell's part: says where the View is (the middle of its slot, window coordinates), then,
/// when the server's question shows, that it shows, then what its field holds once the person
/// typed, and cancels it.
const PERSON: &str = r##"
  const slot = await until(() => document.querySelector(".slot"), 30000);
  await wait(2000);
  const r = slot.getBoundingClientRect();
  await call("person-report", { data: JSON.stringify({ stage: "slot", x: Math.round(r.x + r.width / 2), y: Math.round(r.y + Math.min(r.height / 2, 40)) }) });
  const box = document.getElementById("elicit");
  await until(() => !box.hidden, 60000);
  await wait(800);
  const field = document.querySelector("#elicit-fields input");
  const focusedField = document.activeElement === field;
  await call("person-report", { data: JSON.stringify({ stage: "question", focusedField }) });
  // The report's own form took the page's focus: the question's field gets it back.
  field.focus();
  await until(() => field.value.length >= 5, 20000).catch(() => {});
  await wait(500);
  await call("person-report", { data: JSON.stringify({ stage: "typed", value: field.value }) });
  document.getElementById("elicit-cancel").click();
"##;

/// A View had the keyboard (the person clicked into it) and pulls the focus to itself every
/// 150 ms; then its server asks the person for a token in a host dialog. What the person types
/// lands in the dialog's field, and the View gets not one key of it.
#[test]
fn a_host_question_takes_the_keyboard_from_a_view() {
    let dir = tempfile::tempdir().unwrap();
    let script = write_automation(&dir, PERSON);
    let args = views(&hostile(None), &[("attack-keyboard", json!({}))], &["--automation", &script]);
    let (clicked, typed) = (Cell::new(false), Cell::new(false));
    let log = RefCell::new(Vec::new());
    let run = run_host_watch(
        &args,
        &[],
        |pid, trace| {
            if !clicked.get() {
                let Some(slot) = stage(trace, "slot") else { return false };
                if reports(trace, "keyboard-state").next().is_none() {
                    return false;
                }
                click(pid, slot["x"].as_i64().unwrap_or(0), slot["y"].as_i64().unwrap_or(0));
                log.borrow_mut().push("clicked into the View");
                clicked.set(true);
                return false;
            }
            if !typed.get() {
                if stage(trace, "question").is_none() {
                    return false;
                }
                focus_window(pid);
                xdotool(&["type", "--delay", "80", "tok3n"]);
                log.borrow_mut().push("typed tok3n");
                typed.set(true);
                return false;
            }
            stage(trace, "typed").is_some()
                && reports(trace, "keyboard-state").filter(|(_, s)| s["asked"] == true).count() >= 3
        },
        LIMIT,
    );
    let steps = log.borrow().join(", ");
    let states: Vec<&Value> = reports(&run.trace, "keyboard-state").map(|(_, s)| s).collect();
    assert!(
        states.iter().any(|s| s["focusedOnce"] == true),
        "the View never had the keyboard (the click did not reach it): {steps}\n{}",
        run.dump()
    );
    let typed =
        stage(&run.trace, "typed").unwrap_or_else(|| panic!("the person never typed ({steps}):\n{}", run.dump()));
    let last = states.last().expect("the View said how it is");
    assert_eq!(typed["value"], "tok3n", "the question's field did not get the keys; the View has {last:#}");
    assert_eq!(last["afterAsk"], "", "the View got keys meant for the question: {last:#}");
    assert!(!text(&last["value"]).contains("tok"), "{last:#}");
}
