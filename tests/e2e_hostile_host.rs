//! Hostile Views and servers against the host's own machinery (issue 13): preview's live reload,
//! the developer panel's log and the side panels, display modes and the window, the shell's
//! command channel, the host's log, and cards whose UI never arrives.
//!
//! Same setup as `tests/e2e_hostile.rs` (the real host under a display, the raw JSON-RPC fixture
//! `tests/fixtures/hostile-server.mjs`, one attack next to the honest View in one window), plus
//! a person: an automation script (`--automation`) runs in the trusted shell page, looks at what
//! a person would see, and reports it by calling the fixture's plain tool `person-report` from
//! the picker (its `data` field carries JSON; the call is in the trace).

mod common;

use std::time::Duration;

use common::hostile::{person_reports_in, reports, run_host};
use common::{automation, node_server};
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(150);

/// `honest-ok` calls of `view` after `t_ms`.
fn honest_calls_after(trace: &[Value], view: &str, t_ms: f64) -> usize {
    trace
        .iter()
        .filter(|r| {
            r["dir"] == "host->server"
                && r["view"] == view
                && r["msg"]["params"]["name"] == "honest-ok"
                && r["t_ms"].as_f64().unwrap_or(0.0) > t_ms
        })
        .count()
}

/// Done once the person reported and the honest View `honest` made `n` calls after that.
fn person_then_honest(honest: &'static str, n: usize) -> impl Fn(&[Value]) -> bool {
    move |trace| person_reports_in(trace).next().is_some_and(|(t, _)| honest_calls_after(trace, honest, t) >= n)
}

fn hostile(args: &str) -> String {
    node_server("hostile-server.mjs", args)
}

/// `<command> --stdio <server>... --tool A --args {..} ... <extra> --timeout 80`.
fn host_args(command: &str, servers: &[String], tools: &[(&str, Value)], extra: &[&str]) -> Vec<String> {
    let mut args = vec![command.to_owned()];
    for s in servers {
        args.extend(["--stdio".to_owned(), s.clone()]);
    }
    for (tool, arguments) in tools {
        args.extend(["--tool".to_owned(), (*tool).to_owned(), "--args".to_owned(), arguments.to_string()]);
    }
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    args.extend(["--timeout".to_owned(), "80".to_owned()]);
    args
}

/// An automation script: `body` runs in the shell and leaves what the person saw in `R`, which
/// is reported with `person-report` (with the error, if the script failed on the way).
fn person(dir: &tempfile::TempDir, body: &str) -> String {
    automation(
        dir,
        &format!(
            r#"const R = {{}};
  const frameOf = (view) => document.querySelector('.card[data-view="' + view + '"] .slot');
  const signalled = (view) => {{ const f = frameOf(view); return !!f && f.style.height === "333px"; }};
  try {{
{body}
  }} catch (e) {{
    R.scriptError = String(e && e.stack || e);
  }}
  await call("person-report", {{ data: JSON.stringify(R) }});"#
        ),
    )
}

// ------------------------------------------------------------------------------------------------

/// Reload storm across servers in `preview`: server A's View makes its own server announce
/// `notifications/resources/updated` for the View's resource every time it loads (the app-only
/// tool `touch-resource`), so each reload causes the next. Server B's honest View shows another
/// resource of another server. What stops it: preview reloads only the open Views of the
/// announcing server that show that resource (B's View is never torn down), and the storm guard
/// (at most 5 live reloads of one resource per 10 s) pauses live reload of A's resource and
/// says so. Before the fix every announcement reloaded every View of every server, forever.
#[test]
fn preview_reloads_only_the_updated_resource_and_a_reload_storm_pauses() {
    let run = run_host(
        &host_args(
            "preview",
            &[hostile("--instance a --live"), hostile("--instance b")],
            &[("hostile-server/attack-touch", json!({})), ("hostile-server (2)/honest", json!({}))],
            &[],
        ),
        |trace| {
            let touches: Vec<f64> = trace
                .iter()
                .filter(|r| r["dir"] == "host->server" && r["msg"]["params"]["name"] == "touch-resource")
                .filter_map(|r| r["t_ms"].as_f64())
                .collect();
            let honest_gone = trace.iter().any(|r| r["view"] == "v2" && r["msg"]["method"] == "ui/resource-teardown");
            touches.len() >= 6 && (honest_gone || honest_calls_after(trace, "v2", touches[5]) >= 12)
        },
        LIMIT,
    );
    let touches = run.calls_of("touch-resource");
    let mut reloaded: Vec<&str> = touches.iter().map(|(_, v)| v.as_str()).collect();
    reloaded.dedup();
    eprintln!(
        "storm: {} touches by Views {reloaded:?} over {:.1} s; paused lines: {}; run {:?}",
        touches.len(),
        touches.last().map_or(0.0, |t| t.0 - touches[0].0) / 1000.0,
        run.log_count("live reload of it is paused"),
        run.elapsed
    );
    assert!(touches.len() >= 2, "server a's View was never reloaded (live reload does not work):\n{}", run.dump());
    // Only server a's Views were reloaded; server b's honest View stayed, and kept working.
    assert!(!reloaded.contains(&"v2"), "{reloaded:?}");
    let honest_inits: Vec<&Value> = run
        .trace
        .iter()
        .filter(|r| r["dir"] == "view->host" && r["msg"]["params"]["appInfo"]["name"] == "honest")
        .collect();
    assert_eq!(honest_inits.len(), 1, "server b's honest View was reloaded:\n{}", run.dump());
    run.assert_honest_kept_working("v2", touches[0].0);
    // The storm stopped: the first View plus at most 5 reloads, and the host said why.
    assert!(touches.len() <= 6, "server a's View was loaded {} times: {reloaded:?}\n{}", touches.len(), run.dump());
    assert!(
        run.log_count("live reload of it is paused") >= 1,
        "the host did not say live reload is paused:\n{}",
        run.dump()
    );
}

/// The same storm, with every announcement sent twice back to back (a server may repeat itself;
/// a build may write a file twice). BUG (found by this test, fixed with it): the second
/// announcement came while the first reload was tearing the old View down, and reloaded that
/// old View again, so one View became two, then four copies. What stops it: a View a reload
/// replaced is not reloaded again; one copy of the View stays open.
#[test]
fn a_resource_announced_twice_at_once_reloads_its_view_once() {
    let run = run_host(
        &host_args(
            "preview",
            &[hostile("--live")],
            &[("attack-touch", json!({"announce": 2})), ("honest", json!({}))],
            &[],
        ),
        |trace| {
            let touches: Vec<f64> = trace
                .iter()
                .filter(|r| r["dir"] == "host->server" && r["msg"]["params"]["name"] == "touch-resource")
                .filter_map(|r| r["t_ms"].as_f64())
                .collect();
            touches.len() >= 6 && honest_calls_after(trace, "v2", touches[5]) >= 12 || touches.len() >= 20
        },
        LIMIT,
    );
    let touch_views: Vec<String> = run
        .trace
        .iter()
        .filter(|r| r["dir"] == "view->host" && r["msg"]["params"]["appInfo"]["name"] == "hostile-touch")
        .filter_map(|r| r["view"].as_str().map(str::to_owned))
        .collect();
    let torn_down = |v: &str| {
        run.trace
            .iter()
            .any(|r| r["dir"] == "host->view" && r["view"] == v && r["msg"]["method"] == "ui/resource-teardown")
    };
    let open: Vec<&String> = touch_views.iter().filter(|v| !torn_down(v)).collect();
    eprintln!("double announcements: touch Views {touch_views:?}, open at the end {open:?}; run {:?}", run.elapsed);
    assert!(touch_views.len() >= 2, "the View was never reloaded:\n{}", run.dump());
    assert_eq!(open.len(), 1, "one View became several copies: {touch_views:?}, still open {open:?}");
    assert!(touch_views.len() <= 6, "the View was loaded {} times: {touch_views:?}", touch_views.len());
    assert!(run.log_count("live reload of it is paused") >= 1, "{}", run.dump());
    run.assert_honest_kept_working("v2", run.calls_of("touch-resource")[0].0);
}

/// A View floods the developer panel's live log for about 5 s: 4,000 notifications and 4,000
/// pings (about 12,000 trace records, thousands a second), while a person watches that View's
/// log. What stops it: the controller sends the panel at most 200 records a second and then one
/// "N records not shown" record, and the shell keeps the newest 500 rows (at 200 a second the
/// flood fills more than that, so both bounds are exercised). Before the fix every record became
/// a row: the page grew without end.
#[test]
fn preview_live_log_stays_bounded_under_a_flood() {
    let dir = tempfile::tempdir().unwrap();
    let script = person(
        &dir,
        r##"
    await until(() => frameOf("v1") && frameOf("v2"), 60000);
    const select = document.getElementById("dev-view");
    select.value = "v1";
    select.dispatchEvent(new Event("change"));
    R.selected = select.value;
    const notShown = () => Array.from(document.querySelectorAll("#log li")).find((li) => li.textContent.indexOf("not shown") >= 0);
    R.maxRows = 0;
    R.sawNotShown = null;
    const sampler = setInterval(() => {
      const n = document.querySelectorAll("#log li").length;
      if (n > R.maxRows) R.maxRows = n;
      const row = R.sawNotShown === null && notShown();
      if (row) R.sawNotShown = row.textContent;
    }, 50);
    try {
      await until(() => signalled("v1"), 120000);
      await wait(3000);
    } finally {
      clearInterval(sampler);
    }
    R.rows = document.querySelectorAll("#log li").length;
    R.notShownNow = !!notShown();
"##,
    );
    let run = run_host(
        &host_args(
            "preview",
            &[hostile("")],
            &[("attack-log-flood", json!({"count": 4000, "chunk": 200, "waitMs": 5000})), ("honest", json!({}))],
            &["--automation", &script],
        ),
        person_then_honest("v2", 4),
        LIMIT,
    );
    let (t, seen) = run.person_report();
    let flood = run.report("log-flood");
    let records = run.trace.iter().filter(|r| r["view"] == "v1").count();
    eprintln!("log flood: {records} trace records of the View; the person saw {seen}; run {:?}", run.elapsed);
    assert!(seen["scriptError"].is_null(), "the person could not follow: {seen}\n{}", run.dump());
    assert_eq!(seen["selected"], "v1", "{seen}");
    assert_eq!(flood["pongs"], 4000, "the flood did not run to its end: {flood}");
    assert!(records > 12000, "the flood produced only {records} records");
    let max_rows = seen["maxRows"].as_u64().unwrap();
    assert!(max_rows <= 500, "the live log grew to {max_rows} rows: {seen}");
    // The panel did show the flood (up to its bound), so the bound is what held it.
    assert!(max_rows >= 450, "the live log showed only {max_rows} rows of the flood: {seen}");
    assert!(seen["rows"].as_u64().unwrap() <= 500, "{seen}");
    assert!(seen["sawNotShown"].is_string(), "no \"records not shown\" row in the live log: {seen}");
    run.assert_honest_kept_working("v2", t);
}

/// A View sends 1,000 `ui/message` requests (`--consent allow`: each is added to the
/// conversation). What stops the page from growing: the message panel keeps the newest 200.
/// Before the fix all 1,000 stayed.
#[test]
fn the_message_panel_keeps_only_the_newest_messages() {
    let dir = tempfile::tempdir().unwrap();
    let script = person(
        &dir,
        r##"
    await until(() => signalled("v1"), 120000);
    await wait(1000);
    const rows = Array.from(document.querySelectorAll("#messages li"));
    R.rows = rows.length;
    R.first = rows.length ? rows[0].textContent : null;
    R.last = rows.length ? rows[rows.length - 1].textContent : null;
"##,
    );
    let run = run_host(
        &host_args(
            "run",
            &[hostile("")],
            &[("attack-messages", json!({"count": 1000})), ("honest", json!({}))],
            &["--consent", "allow", "--automation", &script],
        ),
        person_then_honest("v2", 4),
        LIMIT,
    );
    let (t, seen) = run.person_report();
    let r = run.report("messages");
    eprintln!("messages: the View's tally {r}; the person saw {seen}; run {:?}", run.elapsed);
    assert!(seen["scriptError"].is_null(), "the person could not follow: {seen}\n{}", run.dump());
    assert_eq!(r["accepted"], 1000, "not every message was added: {r}");
    let rows = seen["rows"].as_u64().unwrap();
    assert!(rows <= 200, "the message panel holds {rows} messages");
    assert!(rows >= 100, "the message panel shows only {rows} messages: {seen}");
    // The newest are kept (the last batch of 20 may be answered in any order).
    let last: u64 = seen["last"].as_str().and_then(|l| l.rsplit(' ').next()).and_then(|n| n.parse().ok()).unwrap_or(0);
    assert!(last >= 980, "the newest messages are not the ones shown: {seen}");
    run.assert_honest_kept_working("v2", t);
}

/// A View flips its display mode 600 times in about 1.4 s (pip, inline, pip, ...), then after
/// a second of quiet asks for inline. Before the fix every request was granted, and the window's
/// pip switch read the window size mid-switch: GTK applies a size later, so a quick
/// pip -> restore -> pip saved the pip size as the "normal" one and the window stayed small.
/// What stops it: a View's mode changes at most once per 400 ms after a burst of three (a sooner
/// request gets the mode in effect), and the window restores the size the last resize outside pip reported. The
/// person sees the normal-size window again, the View inline.
#[test]
fn a_view_flipping_display_modes_cannot_leave_the_window_small() {
    let dir = tempfile::tempdir().unwrap();
    let script = person(
        &dir,
        r##"
    await until(() => frameOf("v1"), 60000);
    R.before = { width: window.innerWidth, height: window.innerHeight };
    await until(() => signalled("v1"), 120000);
    await wait(1500);
    R.after = { width: window.innerWidth, height: window.innerHeight };
    R.bodyPip = document.body.classList.contains("pip");
    const card = document.querySelector('.card[data-view="v1"]');
    R.cardClass = card ? card.className : null;
"##,
    );
    let run = run_host(
        &host_args(
            "run",
            &[hostile("")],
            &[("attack-mode-flip", json!({"count": 600, "waitMs": 4000})), ("honest", json!({}))],
            &["--automation", &script],
        ),
        person_then_honest("v2", 4),
        LIMIT,
    );
    let (t, seen) = run.person_report();
    let r = run.report("mode-flip");
    assert!(seen["scriptError"].is_null(), "the person could not follow: {seen}\n{}", run.dump());
    // The View's requests and the host's answers, in order.
    let requests: Vec<(f64, Value)> = run
        .trace
        .iter()
        .filter(|x| x["dir"] == "view->host" && x["view"] == "v1" && x["msg"]["method"] == "ui/request-display-mode")
        .map(|x| (x["t_ms"].as_f64().unwrap(), x["msg"]["id"].clone()))
        .collect();
    assert_eq!(requests.len(), 601, "the View did not send its 600 + 1 requests: {r}");
    let final_id = requests.last().unwrap().1.clone();
    let answers: Vec<(f64, Value, String)> = run
        .trace
        .iter()
        .filter(|x| {
            x["dir"] == "host->view" && x["view"] == "v1" && requests.iter().any(|(_, id)| *id == x["msg"]["id"])
        })
        .map(|x| {
            let mode = x["msg"]["result"]["mode"].as_str().map_or_else(|| format!("error {}", x["msg"]), str::to_owned);
            (x["t_ms"].as_f64().unwrap(), x["msg"]["id"].clone(), mode)
        })
        .collect();
    let flood: Vec<&(f64, Value, String)> = answers.iter().filter(|(_, id, _)| *id != final_id).collect();
    let span = flood.last().map_or(0.0, |a| a.0) - requests[0].0;
    // Each change the host makes gives the View new container dimensions (pip has a fixed
    // height, inline a max height), in the host's order. (The View's answers, and the
    // `displayMode` the bridge announces with them, can arrive out of decision order.)
    let flood_end = flood.last().map_or(0.0, |a| a.0);
    let mut laid_out = "inline";
    let mut granted = 0;
    for x in run.trace.iter().filter(|x| {
        x["dir"] == "host->view"
            && x["view"] == "v1"
            && x["msg"]["method"] == "ui/notifications/host-context-changed"
            && x["t_ms"].as_f64().is_some_and(|t| t >= requests[0].0 && t <= flood_end)
    }) {
        let dims = &x["msg"]["params"]["containerDimensions"];
        let mode = if dims.is_null() {
            continue;
        } else if dims["height"].is_number() {
            "pip"
        } else {
            "inline"
        };
        if mode != laid_out {
            granted += 1;
            laid_out = mode;
        }
    }
    // One change per 400 ms after a burst of three, and one for the final request.
    let bound = (span / 400.0).floor() as usize + 4;
    eprintln!(
        "mode flip: {} requests over {span:.0} ms, {granted} mode changes granted (bound {bound}); the View's \
         tally {}; final {}; the person saw {seen}; run {:?}",
        flood.len(),
        r["answers"],
        r["final"],
        run.elapsed
    );
    let final_answer = answers.iter().find(|(_, id, _)| *id == final_id).map(|a| a.2.clone());
    assert_eq!(final_answer.as_deref(), Some("inline"), "the View's last request for inline: {}", r["final"]);
    assert!(granted <= bound, "{granted} mode changes granted in {span:.0} ms (at most {bound})");
    // The window: the normal size before and after (it opens at 1200x820; pip is 420x320).
    let size = |v: &Value| (v["width"].as_f64().unwrap_or(0.0), v["height"].as_f64().unwrap_or(0.0));
    let (before, after) = (size(&seen["before"]), size(&seen["after"]));
    assert!((before.0 - 1200.0).abs() < 40.0 && (before.1 - 820.0).abs() < 40.0, "the window opened at {before:?}");
    assert!(
        (after.0 - before.0).abs() < 10.0 && (after.1 - before.1).abs() < 10.0,
        "the window is {after:?} after the flips, {before:?} before"
    );
    assert_eq!(seen["bodyPip"], false, "{seen}");
    assert!(!seen["cardClass"].as_str().unwrap_or("pip").contains("pip"), "{seen}");
    run.assert_honest_kept_working("v2", t);
}

/// A tool result whose `structuredContent` has an own `"__proto__"` key. Before the fix the
/// shell command carrying it was spliced into script as an object literal, where `"__proto__":`
/// sets the prototype instead of a key: the View never saw that key (and a server could give
/// the command object a prototype of its choosing). What stops it: commands go into the page as
/// JSON text and are parsed there, where `__proto__` is a key like any other.
#[test]
fn a_proto_key_in_a_tool_result_reaches_the_view_as_data() {
    let run = run_host(
        &host_args("run", &[hostile("")], &[("attack-proto", json!({})), ("honest", json!({}))], &[]),
        |trace| reports(trace, "proto").next().is_some_and(|(t, _)| honest_calls_after(trace, "v2", t) >= 4),
        LIMIT,
    );
    let r = run.report("proto");
    eprintln!("proto: the View saw {r}");
    let keys: Vec<&str> =
        r["keys"].as_array().map(|k| k.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
    assert!(keys.contains(&"tool"), "{r}");
    assert!(keys.contains(&"__proto__"), "the \"__proto__\" key was lost on the way to the View: {keys:?}");
    assert_eq!(r["prototypeIntact"], true, "{r}");
    assert_eq!(r["protoValue"], json!({"polluted": true}), "{r}");
    run.assert_honest_kept_working("v2", run.report_time("proto"));
}

/// A server writes host log lines: its elicitation message (declined, `--consent deny`) and a
/// tool's error message each hold `\nerror: forged by a server`, which would start a line of
/// their own (`run` prints its failures as `error: ...` lines, `check` collects them). What
/// stops it: the host's log writer keeps each record on one line (escaping embedded newlines),
/// and server text the host prints itself is escaped.
#[test]
fn a_server_cannot_forge_host_log_lines() {
    let run = run_host(
        &host_args(
            "run",
            &[hostile("")],
            &[("attack-elicit-forged", json!({})), ("attack-tool-error", json!({})), ("honest", json!({}))],
            &["--consent", "deny"],
        ),
        |trace| {
            let failed = trace
                .iter()
                .any(|r| r["dir"] == "server->host" && r["view"] == "v2" && r["msg"].get("error").is_some());
            failed
                && reports(trace, "elicit-forged").next().is_some_and(|(t, _)| honest_calls_after(trace, "v3", t) >= 4)
        },
        LIMIT,
    );
    let r = run.report("elicit-forged");
    assert_eq!(r["answer"]["action"], "decline", "the elicitation was not declined: {r}");
    // Both texts reached the log, each inside a line of the host's own.
    let lines_with = |needle: &str| -> Vec<&str> { run.stderr.lines().filter(|l| l.contains(needle)).collect() };
    let elicit = lines_with("forged by a server (elicitation)");
    let tool = lines_with("forged by a server (tool error)");
    eprintln!("forged texts, as logged:\n{}\n{}", elicit.join("\n"), tool.join("\n"));
    assert!(!elicit.is_empty() && !tool.is_empty(), "the forged texts were not logged at all:\n{}", run.dump());
    let forged: Vec<&str> = run.stderr.lines().filter(|l| l.trim_start().starts_with("error: forged")).collect();
    assert!(forged.is_empty(), "a server wrote host log lines:\n{}", forged.join("\n"));
    run.assert_honest_kept_working("v3", run.report_time("elicit-forged"));
}

/// A UI tool whose `resources/read` the server never answers, and one whose read fails. Before
/// the fix the first left a spinner card nobody could dismiss, and the second's error appeared
/// as a separate card while its spinner stayed. What stops it: a pending card has a Cancel
/// button that aborts the View's preparation and removes the card, and a failed read's error
/// card takes the spinner's place.
#[test]
fn a_pending_card_can_be_cancelled_and_a_failed_ui_replaces_its_spinner() {
    let dir = tempfile::tempdir().unwrap();
    let script = person(
        &dir,
        r##"
    await until(() => frameOf("v1"), 60000);
    await call("hang-ui");
    const card = await until(() => document.querySelector(".card.pending"), 20000);
    R.pendingView = card.dataset.pending || null;
    const cancel = Array.from(card.querySelectorAll("button")).find((b) => b.textContent === "Cancel");
    R.hadCancel = !!cancel;
    await wait(1500);
    R.stillPendingBeforeCancel = document.body.contains(card);
    if (cancel) {
      const t0 = Date.now();
      cancel.click();
      await until(() => !document.body.contains(card), 5000).catch(() => {});
      R.cancelMs = document.body.contains(card) ? null : Date.now() - t0;
    }
    R.pendingAfterCancel = document.querySelectorAll(".card.pending").length;
    await call("broken-ui");
    const errorCard = () => Array.from(document.querySelectorAll(".card pre.text.error")).find((p) => p.textContent.indexOf("broken-ui") >= 0);
    await until(errorCard, 30000).catch(() => {});
    await wait(500);
    R.errorText = errorCard() ? errorCard().textContent : null;
    R.pendingAfterError = document.querySelectorAll(".card.pending").length;
"##,
    );
    let run = run_host(
        &host_args("run", &[hostile("--pending-uis")], &[("honest", json!({}))], &["--automation", &script]),
        person_then_honest("v1", 4),
        LIMIT,
    );
    let (t, seen) = run.person_report();
    eprintln!("pending: the person saw {seen}; run {:?}", run.elapsed);
    assert!(seen["scriptError"].is_null(), "the person could not follow: {seen}\n{}", run.dump());
    assert_eq!(run.log_count("HANG-UI read left unanswered"), 1, "{}", run.dump());
    assert_eq!(seen["stillPendingBeforeCancel"], true, "{seen}");
    assert!(seen["pendingView"].is_string(), "the pending card does not name its View: {seen}");
    assert_eq!(seen["hadCancel"], true, "the pending card has no Cancel button: {seen}");
    let ms = seen["cancelMs"].as_f64().unwrap_or_else(|| panic!("Cancel did not remove the card: {seen}"));
    assert!(ms <= 2000.0, "Cancel took {ms} ms");
    assert_eq!(seen["pendingAfterCancel"], 0, "{seen}");
    assert_eq!(run.log_count("cancelled before its View was mounted"), 1, "{}", run.dump());
    assert!(seen["errorText"].as_str().is_some_and(|e| e.contains("cannot be read")), "no error card: {seen}");
    assert_eq!(seen["pendingAfterError"], 0, "the spinner stayed beside the error: {seen}");
    run.assert_honest_kept_working("v1", t);
}
