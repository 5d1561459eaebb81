//! Hostile Views against the person's decisions (WebKitGTK under a display, the real sandbox
//! proxy): consent dialogs that cannot be spoofed or outlive their View, links and URL
//! elicitations, one server's questions in front of another's, the window and the screen kept
//! the person's, and what a View did not declare (the clipboard) not granted.
//!
//! `tests/fixtures/hostile-server.mjs` serves one UI tool per attack and an honest View; each test
//! opens an attack next to the honest View in ONE window and asserts that the attempt failed, the
//! host logged it, and the honest View kept working (see `tests/e2e_hostile.rs`).

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::hostile::*;
use serde_json::{json, Value};

/// BUG (found by this suite): a View can queue any number of consent dialogs, and they outlive
/// it: after the View is torn down its dialogs stay on screen, and accepting them still opens
/// its links.
#[test]
fn consent_dialogs_of_a_closed_view_do_nothing() {
    let dir = tempfile::tempdir().unwrap();
    // A person who clicks "Open" on everything once the View is gone.
    let automation: PathBuf = dir.path().join("accept-all.js");
    std::fs::write(
        &automation,
        r#"(function () {
  var gone = setInterval(function () {
    if (document.querySelector('[data-view="v1"]')) return;
    if (!document.querySelector('[data-view="v2"]')) return;
    clearInterval(gone);
    var clicks = setInterval(function () {
      if (document.getElementById("dialog").hidden) return;
      document.getElementById("dialog-accept").click();
    }, 20);
  }, 100);
})();"#,
    )
    .unwrap();
    let automation = automation.to_string_lossy().into_owned();
    let run = run_host(
        &views(
            &hostile(None),
            &[("attack-dialogs", json!({"count": 5})), ("honest", json!({}))],
            &["--automation", &automation, "--open-with", "echo OPENED"],
        ),
        |trace| {
            trace.iter().any(|r| r["view"] == "v1" && r["msg"]["method"] == "ui/resource-teardown")
                && reported_then_honest(&["dialogs"], "v2", 8)(trace)
        },
        LIMIT,
    );
    let opened = run.stdout.matches("OPENED").count();
    assert_eq!(opened, 0, "links of a closed View were opened {opened} times:\n{}", run.dump());
}

/// The page's own Fullscreen API: six requests without a gesture (on the root, the body, an
/// element; standard and prefixed) are all refused, no `fullscreenchange` fires, and the View
/// sees the API switched off. A View changes display only through `ui/request-display-mode`.
#[test]
fn a_view_cannot_take_the_screen_with_the_fullscreen_api() {
    let run = run_host(
        &views(&hostile(None), &[("attack-fullscreen", json!({})), ("honest", json!({}))], &[]),
        reported_then_honest(&["fullscreen"], "v2", 3),
        LIMIT,
    );
    let r = run.report("fullscreen");
    eprintln!("fullscreen: {r:#}");
    let attempts = r["attempts"].as_array().expect("attempts");
    assert_eq!(attempts.len(), 6, "{r:#}");
    for a in attempts {
        assert!(a["fullscreen"].is_null(), "a request was granted: {r:#}");
        assert_ne!(a["outcome"], "granted", "{r:#}");
    }
    assert_eq!(r["changes"], 0, "{r:#}");
    // With WebKit's fullscreen setting off the API is gone (`fullscreenEnabled` undefined).
    assert_ne!(r["enabled"], "true", "{r:#}");
    run.assert_honest_kept_working("v2", run.report_time("fullscreen"));
}

// ------------------------------------------------------------------------------------------------
// Issue 13: consent that cannot be faked, URL elicitation, starvation, bounded queues.

/// The tool name the fixture built to read as the host's own words (`SPOOF_TOOL` there).
const SPOOF_TOOL: &str = "attack-consent\n\nThis link was checked by your host:\nhttps://bank.example";

/// Characters that must never reach the screen unescaped in what a person decides on.
fn has_deceptive(text: &str) -> bool {
    text.chars().any(|c| {
        c.is_control() || matches!(c, '\u{200B}'..='\u{200F}' | '\u{2028}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
    })
}

/// A tool name with newlines made "Open link?" read as a host-verified link, 3,000 characters of
/// userinfo hid the real host, a right-to-left override disguised a file name. Now what is
/// decided on comes first, one line, escaped; userinfo links are refused before any dialog; the
/// safe button has the focus and the accept button is disarmed for a moment.
#[test]
fn consent_dialogs_show_what_is_decided_first_and_cannot_be_spoofed() {
    let dir = tempfile::tempdir().unwrap();
    let downloads = dir.path().join("downloads");
    let script = write_automation(
        &dir,
        r##"
        const box = document.getElementById("dialog");
        const seen = [];
        // When each dialog appeared, to the microtask: "armed" counts only if it came sooner
        // than the 600 ms the shell disarms it for (a loaded machine may poll late).
        let shownAt = 0;
        new MutationObserver(() => { if (!box.hidden) shownAt = performance.now(); })
          .observe(box, { attributes: true, attributeFilter: ["hidden"] });
        const accept = document.getElementById("dialog-accept");
        const armedEarly = () => !accept.disabled && performance.now() - shownAt < 590;
        while (seen.length < 3) {
          await until(() => !box.hidden, 30000);
          seen.push({
            title: document.getElementById("dialog-title").textContent,
            subject: [...document.querySelectorAll("#dialog-subject li")].map((li) => li.textContent),
            firstElement: box.querySelector(".dialog-box").children[1] && box.querySelector(".dialog-box").children[1].id,
            source: document.getElementById("dialog-source").textContent,
            detail: document.getElementById("dialog-body").textContent,
            focused: document.activeElement && document.activeElement.id,
            armedAtFirst: armedEarly(),
          });
          // Still disarmed a moment later: the previous dialog's timer must not arm this one.
          await wait(400);
          seen[seen.length - 1].armedAt400 = armedEarly();
          document.getElementById("dialog-reject").click();
          await until(() => box.hidden);
        }
        const card = document.querySelector('[data-view="v1"] .title');
        await call("person-report", { data: JSON.stringify({ seen, card: card && card.textContent,
          status: document.getElementById("status").textContent }) });
        "##,
    );
    let args = views(
        &hostile(None),
        &[(SPOOF_TOOL, json!({})), ("honest", json!({}))],
        &["--automation", &script, "--open-with", "echo OPENED", "--downloads", &downloads.to_string_lossy()],
    );
    let run = run_host(
        &args,
        |t| {
            t.iter().any(|r| r["msg"]["params"]["name"] == "person-report")
                && reported_then_honest(&["consent"], "v2", 3)(t)
        },
        LIMIT,
    );
    let report = run.report("consent");
    let outcomes = &report["outcomes"];
    let userinfo = text(&outcomes["userinfo"]);
    assert!(userinfo.contains("user name"), "a userinfo link must be refused before any dialog: {userinfo}");
    let person = person_reports(&run).pop().unwrap_or_else(|| panic!("the person never reported:\n{}", run.dump()));
    let seen = person["seen"].as_array().unwrap();
    assert_eq!(seen.len(), 3, "{person:#}");
    let (link, download, message) = (&seen[0], &seen[1], &seen[2]);
    // The link's host, nothing else, first.
    assert_eq!(link["subject"], json!(["evil.example"]), "{link:#}");
    assert_eq!(link["firstElement"], "dialog-subject", "the subject must come right after the title: {link:#}");
    assert_eq!(link["title"], "Open this website in your browser?");
    // The file name, with its override shown for what it is.
    let file = download["subject"][0].as_str().unwrap();
    assert!(file.starts_with("invoice_txt.exe"), "{download:#}");
    // The App asking, its tool name escaped (no line of it can pose as host text).
    let app = message["subject"][0].as_str().unwrap();
    assert!(app.starts_with("attack-consent\\n\\nThis"), "{message:#}");
    for d in seen {
        for field in ["title", "source"] {
            assert!(!has_deceptive(d[field].as_str().unwrap()), "{field} of {d:#}");
        }
        for s in d["subject"].as_array().unwrap() {
            assert!(!has_deceptive(s.as_str().unwrap()), "subject of {d:#}");
        }
        assert_eq!(d["focused"], "dialog-reject", "the safe answer has the focus: {d:#}");
        assert_eq!(d["armedAtFirst"], false, "the accept button takes no click at once: {d:#}");
        assert_eq!(d["armedAt400"], false, "armed early by the previous dialog's timer: {d:#}");
    }
    let card = person["card"].as_str().unwrap();
    assert!(!has_deceptive(card) && card.contains("\\n"), "card title {card:?}");
    assert!(!has_deceptive(person["status"].as_str().unwrap()), "status {:?}", person["status"]);
    assert_eq!(run.stdout.matches("OPENED").count(), 0);
    assert!(!downloads.exists() || std::fs::read_dir(&downloads).unwrap().next().is_none(), "a file was saved");
    run.assert_honest_kept_working("v2", run.report_time("consent"));
    assert_no_hits(&run);
}

/// After one click on Open the opener received `file:///etc/passwd`, `javascript:`, other apps'
/// schemes, a program's path and `--help`. Now URL elicitation follows the `ui/open-link` rule:
/// http(s) only, no userinfo, refused before any dialog; the opener gets only a web address.
#[test]
fn url_elicitation_opens_only_web_pages() {
    let dir = tempfile::tempdir().unwrap();
    // A person who clicks Open on every question.
    let script = write_automation(
        &dir,
        r##"
        setInterval(() => {
          const b = document.getElementById("elicit-accept");
          if (!document.getElementById("elicit").hidden && !b.disabled) b.click();
        }, 50);
        "##,
    );
    let run = run_host(
        &views(
            &hostile(None),
            &[("attack-elicit-urls", json!({})), ("honest", json!({}))],
            &["--automation", &script, "--open-with", "echo OPENED"],
        ),
        reported_then_honest(&["elicit-urls"], "v2", 3),
        LIMIT,
    );
    let opened: Vec<&str> = run.stdout.lines().filter(|l| l.contains("OPENED")).collect();
    assert_eq!(opened, ["OPENED https://example.com/ok-to-open"], "{}", run.dump());
    let answers = &run.report("elicit-urls")["answers"];
    for (url, answer) in answers.as_object().unwrap() {
        let answer = answer.as_str().unwrap();
        if url == "https://example.com/ok-to-open" {
            assert_eq!(answer, "accept", "{answers:#}");
        } else {
            assert!(answer.starts_with("error") || answer == "decline", "{url} was {answer}: {answers:#}");
        }
    }
    run.assert_honest_kept_working("v2", run.report_time("elicit-urls"));
    assert_no_hits(&run);
}

/// One server queued 300 elicitation forms in front of another server's consent prompt. Now a
/// server has at most a few questions open at once; the rest are refused at once.
#[test]
fn one_servers_questions_cannot_bury_another_servers_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let config = two_hostile_servers(&dir);
    // The person answers every dialog in the order they come (Cancel), noting what each was.
    let script = write_automation(
        &dir,
        r##"
        // Everything queues up first; then the person answers in order until nothing is left.
        await wait(4000);
        const order = [];
        const visible = () => !document.getElementById("elicit").hidden || !document.getElementById("dialog").hidden;
        while (order.length < 40) {
          try { await until(visible, 3000); } catch (e) { break; }
          if (!document.getElementById("dialog").hidden) {
            order.push("consent");
            document.getElementById("dialog-reject").click();
          } else {
            order.push("question");
            document.getElementById("elicit-cancel").click();
          }
          await wait(100);
        }
        await call("person-report", { data: JSON.stringify({ order }) }, "b");
        "##,
    );
    let args = config_views(
        &config,
        &script,
        &[
            ("a/attack-elicit-flood", json!({})),
            ("b/attack-dialogs", json!({"count": 1, "delay": 1500, "stay": true})),
            ("b/honest", json!({})),
        ],
    );
    let run = run_host(
        &args,
        |t| {
            t.iter().any(|r| r["msg"]["params"]["name"] == "person-report")
                && reported_then_honest(&["elicit-flood"], "v3", 2)(t)
        },
        LIMIT,
    );
    let person = person_reports(&run).pop().unwrap_or_else(|| panic!("the person never reported:\n{}", run.dump()));
    let order: Vec<&str> = person["order"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    println!("dialogs in order: {order:?}; server tally {}", run.report("elicit-flood")["answers"]);
    let consent_at = order.iter().position(|d| *d == "consent");
    assert!(consent_at.is_some_and(|i| i <= 3), "the other server's prompt came after {order:?}\n{}", run.dump());
    let tally = &run.report("elicit-flood")["answers"];
    assert!(tally["error"].as_u64().unwrap_or(0) >= 290, "the flood was not refused: {tally}\n{}", run.dump());
    run.assert_honest_kept_working("v3", run.report_time("elicit-flood"));
}

/// A View that goes picture-in-picture (the window shrinks to it) and keeps asking for it again:
/// the shell's own button, over the frame, takes it back, and the person's choice sticks.
#[test]
fn the_person_can_always_take_the_window_back_from_a_view() {
    let dir = tempfile::tempdir().unwrap();
    let script = write_automation(
        &dir,
        r##"
        const exit = await until(() => document.querySelector('[data-view="v1"] .mode-exit'), 30000);
        const before = { w: window.innerWidth, h: window.innerHeight };
        exit.click();
        const clicked = Date.now();
        await wait(3000);
        await call("person-report", { data: JSON.stringify({ clicked, before,
          after: { w: window.innerWidth, h: window.innerHeight },
          pip: !!document.querySelector(".card.pip"), bodyPip: document.body.classList.contains("pip") }) });
        "##,
    );
    let run = run_host(
        &views(
            &hostile(None),
            &[("attack-pip-trap", json!({"ms": 8000})), ("honest", json!({}))],
            &["--automation", &script],
        ),
        |t| {
            t.iter().any(|r| r["msg"]["params"]["name"] == "person-report")
                && reported_then_honest(&["pip-trap"], "v2", 2)(t)
        },
        LIMIT,
    );
    let person = person_reports(&run).pop().unwrap_or_else(|| panic!("the person never reported:\n{}", run.dump()));
    assert_eq!(person["pip"], false, "{person:#}");
    assert_eq!(person["bodyPip"], false, "{person:#}");
    let clicked = person["clicked"].as_f64().unwrap();
    let granted = run.report("pip-trap")["granted"].as_array().unwrap().clone();
    let after: Vec<&Value> = granted.iter().filter(|g| g[0].as_f64().unwrap() > clicked + 300.0).collect();
    assert!(!after.is_empty(), "the View stopped asking: {granted:?}");
    assert!(after.iter().all(|g| g[1] == "inline"), "the View took the window again: {granted:?}");
    println!(
        "window {} -> {} after the click; {} requests after it, all refused",
        person["before"],
        person["after"],
        after.len()
    );
    assert!(person["after"]["w"].as_f64().unwrap() > 600.0, "the window stayed small: {person:#}");
}

// ------------------------------------------------------------------------------------------------
// Issue 43: what a View did not declare is not granted.

/// What the person copied in another program before the host started: no View may read it.
const PERSON_COPIED: &str = "the person's own copied text 7f3a";

/// The clipboard: a View that declared no `clipboardWrite` (`attack-clipboard`) tries every
/// write route (navigator.clipboard.writeText and write, also through its proxy's realm;
/// execCommand copy and cut, with a copy handler of its own, in its proxy's document and in a
/// nested frame) and every read route (readText, read, execCommand paste), at once, inside a
/// message from the host (WebKit runs the host's scripts as user gestures), on a click of its
/// own (synthetic), and on the person's real click (xdotool). Beside it, a View that
/// declared `clipboardWrite` (`attack-clipboard-declared`, the honest control) tries the same.
/// The test reads the X clipboard after each step: nothing of the undeclared View ever reaches
/// it; the declared View's click puts its text there; no View reads what the person copied, or
/// what a View wrote.
#[test]
fn a_view_that_did_not_declare_clipboard_write_cannot_write_or_read_the_clipboard() {
    set_x_clipboard(PERSON_COPIED);
    assert_eq!(x_clipboard().as_deref(), Some(PERSON_COPIED), "the test could not set the X clipboard");
    let dir = tempfile::tempdir().unwrap();
    let script = write_automation(
        &dir,
        r##"
        await until(() => document.querySelectorAll(".card .slot").length === 2, 60000);
        for (;;) {
          const at = Array.from(document.querySelectorAll(".card .slot")).map((s) => {
            const r = s.getBoundingClientRect();
            return { x: Math.round(r.x + r.width / 2), y: Math.round(r.y + Math.min(r.height / 2, 60)) };
          });
          await call("person-report", { data: JSON.stringify({ at }) });
          await wait(1000);
        }
        "##,
    );
    let seen = std::cell::RefCell::new(Vec::<(String, Option<String>)>::new());
    // Per View: how many clicks, and when the last one was.
    let clicks = std::cell::RefCell::new([(0u32, std::time::Instant::now()); 2]);
    let run = run_host_watch(
        &views(
            &hostile(None),
            &[("attack-clipboard", json!({})), ("attack-clipboard-declared", json!({}))],
            &["--automation", &script],
        ),
        &[],
        |pid, trace| {
            let Some((_, person)) = person_reports_in(trace).last() else { return false };
            let at =
                |i: usize| (person["at"][i]["x"].as_i64().unwrap_or(0), person["at"][i]["y"].as_i64().unwrap_or(0));
            let ready =
                ["clipboard-auto", "clipboard-declared-auto"].iter().all(|a| reports(trace, a).next().is_some());
            if !ready {
                return false;
            }
            let mut seen = seen.borrow_mut();
            if seen.is_empty() {
                seen.push(("after both Views tried without the person".into(), x_clipboard()));
            }
            // The person clicks the undeclared View, then the declared one.
            for (i, attack, step) in [(0usize, "clipboard", 1usize), (1, "clipboard-declared", 2)] {
                if reports(trace, attack).next().is_some() {
                    if seen.len() == step {
                        seen.push((format!("after the person clicked {attack}"), x_clipboard()));
                    }
                    continue;
                }
                // Once, and again a few seconds later if the click did not reach the View.
                let mut clicks = clicks.borrow_mut();
                let (n, last) = clicks[i];
                if n == 0 || (n < 3 && last.elapsed() > Duration::from_secs(4)) {
                    let (x, y) = at(i);
                    click_window(pid, x, y);
                    clicks[i] = (n + 1, std::time::Instant::now());
                }
                return false;
            }
            true
        },
        LIMIT,
    );
    let seen = seen.into_inner();
    eprintln!("the X clipboard: {seen:#?}");
    let undeclared = run.report("clipboard");
    let declared = run.report("clipboard-declared");
    eprintln!("undeclared: {undeclared:#}\ndeclared: {declared:#}");
    eprintln!("ready: {:#}\n{:#}", run.report("clipboard-auto"), run.report("clipboard-declared-auto"));
    assert_eq!(seen.len(), 3, "the test did not get through its steps: {seen:?}\n{}", run.dump());
    // Nothing of the undeclared View reached the clipboard, at any step.
    for (when, clip) in &seen {
        assert!(
            !clip.as_deref().unwrap_or_default().contains("ATTACKER-"),
            "{when}: the undeclared View wrote {clip:?}"
        );
    }
    // Nobody wrote without the person: the person's own text stayed until their click.
    assert_eq!(seen[0].1.as_deref(), Some(PERSON_COPIED), "{}: {:?}", seen[0].0, seen[0].1);
    assert_eq!(seen[1].1.as_deref(), Some(PERSON_COPIED), "{}: {:?}", seen[1].0, seen[1].1);
    // The honest control: the declared View's click wrote its text.
    let last = seen[2].1.as_deref().unwrap_or_default();
    assert!(last.starts_with("DECLARED-click-"), "the declared View's click did not write: {last:?}\n{declared:#}");
    // No View read anything: what the person copied, or what a View wrote.
    for (name, r) in [("clipboard", &undeclared), ("clipboard-declared", &declared)] {
        for phase in ["load", "message", "synthetic", "click"] {
            let outcomes = r[phase].as_object().unwrap_or_else(|| panic!("{name} {phase}: {r:#}"));
            for (route, outcome) in outcomes {
                let outcome = text(outcome);
                if route.contains("paste") || route.contains("read") {
                    for leaked in [PERSON_COPIED, "ATTACKER-", "DECLARED-"] {
                        assert!(!outcome.contains(leaked), "{name} {phase} {route} read {outcome}");
                    }
                }
            }
        }
    }
}
