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

/// One test at a time: the tests share the display, and real key events go to whichever
/// window has the X focus.
static DISPLAY: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    DISPLAY.lock().unwrap_or_else(|e| e.into_inner())
}

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
    let _display = one_at_a_time();
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

/// The latest thing the View said about itself.
fn view_state(trace: &[Value]) -> Option<Value> {
    reports(trace, "keyboard-state").map(|(_, s)| s.clone()).last()
}

/// Tab and Shift+Tab move the keyboard from the shell into a View and back out: with the
/// shell focused (a click on its status line), Tab presses reach the View's first field; more
/// Tab presses leave the View; Shift+Tab comes back into it at its last field. The View never
/// pulls the focus here, and nobody clicks it.
#[test]
fn tab_and_shift_tab_move_into_a_view_and_back_out() {
    let _display = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let script = write_automation(
        &dir,
        r##"
        await until(() => document.querySelector(".slot"), 30000);
        await wait(1500);
        const r = document.getElementById("status").getBoundingClientRect();
        await call("person-report", { data: JSON.stringify({ stage: "status", x: Math.round(r.x + 4), y: Math.round(r.y + r.height / 2) }) });
        "##,
    );
    let args = views(
        &hostile(None),
        &[("attack-keyboard", json!({"pull": false, "ask": false, "fields": 3}))],
        &["--automation", &script],
    );
    // 0: click the shell; 1: Tab until the View has the keyboard; 2: Tab until it has not;
    // 3: Shift+Tab until it has it again; 4: done.
    let (step, presses, at) = (Cell::new(0), Cell::new(0u32), Cell::new(0usize));
    let seen = RefCell::new(Vec::new());
    let run = run_host_watch(
        &args,
        &[],
        |pid, trace| {
            let state = view_state(trace);
            let reports = reports(trace, "keyboard-state").count();
            let focus = state.as_ref().is_some_and(|s| s["focus"] == true);
            match step.get() {
                0 => {
                    let Some(status) = stage(trace, "status") else { return false };
                    if state.is_none() {
                        return false;
                    }
                    click(pid, status["x"].as_i64().unwrap_or(4), status["y"].as_i64().unwrap_or(4));
                    step.set(1);
                }
                // One key at a time, each after the View's word about the last (it speaks at
                // once when its focus changes, else every 300 ms): no press is missed.
                n @ 1..=3 if presses.get() < 400 => {
                    // In at steps 1 and 3, out at step 2.
                    let arrived = focus == (n != 2);
                    if arrived {
                        seen.borrow_mut().push(state.clone().unwrap_or_default());
                        step.set(n + 1);
                        at.set(reports);
                        return n == 3;
                    }
                    if reports == at.get() {
                        return false;
                    }
                    at.set(reports);
                    focus_window(pid);
                    xdotool(&["key", if n == 3 { "shift+Tab" } else { "Tab" }]);
                    presses.set(presses.get() + 1);
                }
                _ => return true,
            }
            false
        },
        LIMIT,
    );
    let seen = seen.borrow();
    assert_eq!(seen.len(), 3, "after {} key presses only these steps: {seen:#?}\n{}", presses.get(), run.dump());
    assert_eq!(seen[0]["active"], "k", "Tab came into the View at its first field: {seen:#?}");
    assert_eq!(seen[1]["focus"], false, "{seen:#?}");
    assert_eq!(seen[2]["active"], "k2", "Shift+Tab came back into the View at its last field: {seen:#?}");
    eprintln!("{} key presses", presses.get());
}

/// A modal dialog keeps the keyboard: with Model settings open over the page (and a View), real
/// Tab presses go round the dialog's own controls, and Shift+Tab back, never behind its overlay.
#[test]
fn tab_stays_inside_an_open_dialog() {
    let _display = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let script = write_automation(
        &dir,
        r##"
        await until(() => document.querySelector(".slot"), 30000);
        document.getElementById("settings-open").click();
        const page = document.getElementById("settings");
        await until(() => !page.hidden);
        await wait(800);
        const seen = [];
        document.addEventListener("keyup", (e) => {
            if (e.key !== "Tab") return;
            const a = document.activeElement;
            seen.push((page.contains(a) ? "" : "OUTSIDE ") + ((a && a.id) || (a && a.tagName) || "none"));
        }, true);
        await call("person-report", { data: JSON.stringify({ stage: "open" }) });
        await until(() => seen.length >= 40, 60000);
        await call("person-report", { data: JSON.stringify({ stage: "tabs", seen }) });
        "##,
    );
    let args = views(
        &hostile(None),
        &[("attack-keyboard", json!({"pull": false, "ask": false, "fields": 3}))],
        &["--automation", &script],
    );
    let pressed = Cell::new(false);
    let run = run_host_watch(
        &args,
        &[],
        |pid, trace| {
            if stage(trace, "tabs").is_some() {
                return true;
            }
            if !pressed.get() && stage(trace, "open").is_some() {
                pressed.set(true);
                focus_window(pid);
                xdotool(&["key", "--delay", "80", "--repeat", "30", "Tab"]);
                xdotool(&["key", "--delay", "80", "--repeat", "10", "shift+Tab"]);
            }
            false
        },
        LIMIT,
    );
    let tabs = stage(&run.trace, "tabs").unwrap_or_else(|| panic!("the Tab presses were not seen\n{}", run.dump()));
    let seen: Vec<&str> = tabs["seen"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(seen.iter().all(|s| !s.starts_with("OUTSIDE")), "Tab left the dialog: {seen:?}");
    let first = seen.iter().position(|s| *s == "settings-save").expect("Tab reached Save");
    assert!(seen[first + 1..30].contains(&"settings-save"), "Tab went round the dialog and came back: {seen:?}");
    let back = &seen[30..];
    assert!(
        back.windows(2).any(|w| w == ["settings-provider", "settings-save"]),
        "Shift+Tab goes round backwards: {seen:?}"
    );
}
