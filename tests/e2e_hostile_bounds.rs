//! Hostile Views and servers against the host's bounds (WebKitGTK under a display, the real
//! sandbox proxy): floods and oversized messages, Views that resize, never start or never answer
//! their teardown, late results, a silent server, calls kept in flight, a flooded log line.
//!
//! `tests/fixtures/hostile-server.mjs` serves one UI tool per attack and an honest View; each test
//! opens an attack next to the honest View in ONE window and asserts that the attempt failed, the
//! host logged it, and the honest View kept working (see `tests/e2e_hostile.rs`).

mod common;

use std::time::Duration;

use common::hostile::*;
use common::node_server;
use serde_json::{json, Value};

/// Floods and sizes: 10,000 messages as fast as the View can post (5,000 pings and 5,000
/// notifications), then a 20 MB message, 100,000-deep nesting (as an object and as text), a
/// 2,000-deep object, lone surrogates, a plain string, `undefined`, `null`, a number, a cyclic
/// object, a function and a symbol. The host stays up with bounded memory, answers every ping,
/// rejects the rest with a reason, and the honest View keeps working.
#[test]
fn floods_and_oversized_messages_leave_the_host_bounded_and_responsive() {
    let run = run_host(
        &views(&hostile(None), &[("attack-flood", json!({"count": 5000, "waitMs": 2000})), ("honest", json!({}))], &[]),
        reported_then_honest(&["flood"], "v2", 5),
        Duration::from_secs(150),
    );
    assert!(run.alive_at_end, "the host died (code {:?}):\n{}", run.code, run.dump());
    assert_eq!(run.log_count("panicked"), 0);
    let r = run.report("flood");
    assert_eq!(r["pongs"], 5000, "not every ping was answered: {r:#}");
    assert!(r["afterFlood"]["result"].is_object(), "the View is not answered after the flood: {}", r["afterFlood"]);
    let s = &r["sends"];
    // What the View could not even post: WebKit refuses to clone it.
    assert!(text(&s["deep 100000 (object)"]).contains("RangeError"), "{}", s["deep 100000 (object)"]);
    assert!(text(&s["function"]).contains("DataCloneError"), "{}", s["function"]);
    assert!(text(&s["symbol"]).contains("DataCloneError"), "{}", s["symbol"]);
    let rejected = run.rejected_reasons("v1");
    for needles in [
        &["exceeds the 16777216 byte limit"][..],
        &["recursion limit exceeded"],
        &["surrogate", "hex escape"],
        &["not a JSON object"],
        &["not JSON: expected value"],
        &["message is not serialisable"],
    ] {
        assert!(
            rejected.iter().any(|x| needles.iter().any(|n| x.contains(n))),
            "no rejection {needles:?} in {rejected:#?}"
        );
    }
    let notifications =
        run.trace.iter().filter(|x| x["dir"] == "view->host" && x["msg"]["method"] == "x/flood").count();
    assert_eq!(notifications, 5000, "every flood notification crossed into the bridge and was traced");

    // Memory: host process (tao/wry UI + Rust) and its descendants (WebKit processes, server).
    let t_start = run
        .trace
        .iter()
        .find(|x| x["dir"] == "view->host" && x["msg"]["id"] == "flood-0")
        .and_then(|x| x["t_ms"].as_f64())
        .expect("the flood started");
    let t_end = run.report_time("flood");
    let before: Vec<&(f64, u64, u64, u64)> = run.rss.iter().filter(|s| s.0 < t_start).collect();
    let during: Vec<&(f64, u64, u64, u64)> = run.rss.iter().filter(|s| s.0 >= t_start).collect();
    assert!(!before.is_empty() && !during.is_empty(), "no memory samples");
    let base = before.last().unwrap();
    let last = run.rss.last().unwrap();
    let peak_sampled = during.iter().map(|s| s.1).max().unwrap();
    // VmHWM is the kernel's exact peak; if it rose during the flood, the flood set it.
    let peak = peak_sampled.max(if last.2 > base.2 { last.2 } else { 0 });
    let peak_others = during.iter().map(|s| s.3).max().unwrap();
    let mb = |kb: u64| kb as f64 / 1024.0;
    let procs: Vec<String> = run
        .final_procs
        .iter()
        .map(|(name, rss, hwm)| format!("{name} {:.1} MB (peak {:.1} MB)", mb(*rss), mb(*hwm)))
        .collect();
    eprintln!(
        "flood: {} messages posted in {} ms, all {} pings answered after {} ms. Host process VmRSS {:.1} MB \
         before, peak {:.1} MB (+{:.1} MB; VmHWM {:.1} -> {:.1} MB), {:.1} MB after. Descendants (WebKit, \
         server) {:.1} MB before, sampled peak {:.1} MB (+{:.1} MB); at the end: {}. {} samples over {:?}",
        r["sentMessages"],
        r["sendMs"],
        r["pongs"],
        r["floodMs"],
        mb(base.1),
        mb(peak),
        mb(peak.saturating_sub(base.1)),
        mb(base.2),
        mb(last.2),
        mb(last.1),
        mb(base.3),
        mb(peak_others),
        mb(peak_others.saturating_sub(base.3)),
        procs.join(", "),
        run.rss.len(),
        run.elapsed
    );
    // Bounded: the 20 MB message is held a few times over (page string, IPC body, parsed shell
    // message) and then dropped; nothing accumulates per message.
    assert!(peak.saturating_sub(base.1) < 400 * 1024, "host memory grew by {:.1} MB", mb(peak - base.1));
    assert!(last.1.saturating_sub(base.1) < 100 * 1024, "host memory stayed {:.1} MB higher", mb(last.1 - base.1));
    run.assert_honest_kept_working("v2", t_end);
}

/// Sleeping is fair: a View that changes its height between 120 and 2,600 px every 3 s (moving
/// the cards after it in and out of the distance where Views sleep) beside four honest Views,
/// with room for three live Views. The person scrolls to the top once every card is there (so
/// the oscillating View, first, is in sight); once the start settled (the Views far from sight
/// may sleep then), nobody scrolls, and no View sleeps or wakes while it oscillates.
#[test]
fn a_view_that_changes_its_height_makes_no_other_view_sleep_or_wake() {
    let dir = tempfile::tempdir().unwrap();
    let script = write_automation(
        &dir,
        r##"
        await until(() => document.querySelectorAll(".card .slot").length === 5, 60000);
        await wait(300);
        window.dispatchEvent(new WheelEvent("wheel", { deltaY: 1 })); // a person's scroll comes with their input
        document.getElementById("stream").scrollTop = 0;
        "##,
    );
    let honest = ("honest", json!({}));
    let run = run_host(
        &views(
            &hostile(None),
            &[("attack-oscillate", json!({"startMs": 8000})), honest.clone(), honest.clone(), honest.clone(), honest],
            &["--live-views", "3", "--automation", &script],
        ),
        |trace| reports(trace, "oscillate-done").next().is_some(),
        Duration::from_secs(120),
    );
    let (start, _) = reports(&run.trace, "oscillate-start").next().unwrap_or_else(|| panic!("{}", run.dump()));
    let resizes = run
        .trace
        .iter()
        .filter(|r| {
            r["view"] == "v1" && r["dir"] == "view->host" && r["msg"]["method"] == "ui/notifications/size-changed"
        })
        .filter(|r| r["t_ms"].as_f64().is_some_and(|t| t > start))
        .count();
    assert!(resizes >= 8, "the View changed its height {resizes} times: {}", run.dump());
    let kind = |r: &Value| r["msg"]["kind"].as_str().unwrap_or_default().to_owned();
    let before: Vec<(String, String)> = run
        .trace
        .iter()
        .filter(|r| ["sleep", "woken"].contains(&kind(r).as_str()) && r["t_ms"].as_f64().is_some_and(|t| t <= start))
        .map(|r| (kind(r), text(&r["view"])))
        .collect();
    let after: Vec<(f64, String, String)> = run
        .trace
        .iter()
        .filter(|r| ["sleep", "woken"].contains(&kind(r).as_str()) && r["t_ms"].as_f64().is_some_and(|t| t > start))
        .map(|r| (r["t_ms"].as_f64().unwrap_or_default(), kind(r), text(&r["view"])))
        .collect();
    eprintln!("before the oscillation: {before:?}");
    assert!(after.is_empty(), "Views slept or woke while only a View's height changed: {after:?}");
}

/// A View that never does its handshake holds no live place for ever: with more Views open
/// than the budget, once it had its time to start (10 s) and is out of sight, it is put away,
/// and its card says it never finished starting. (Before, only initialized Views could sleep,
/// so it held its place and the live Views of other servers slept in its stead.) The honest
/// Views below it are tall (they size themselves to 2,600 px), and the person scrolls to the
/// bottom after 12 s, so only the View that never started is far from sight.
#[test]
fn a_view_that_never_started_is_put_away_and_its_card_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let script = write_automation(
        &dir,
        r##"
        await until(() => document.querySelectorAll(".card .slot").length === 3, 60000);
        await wait(12000);
        const stream = document.getElementById("stream");
        window.dispatchEvent(new WheelEvent("wheel", { deltaY: 1 })); // a person's scroll comes with their input
        stream.scrollTop = stream.scrollHeight;
        const note = await until(() => document.querySelector(".asleep-note"), 20000).catch(() => null);
        await call("person-report", { data: JSON.stringify({ note: note ? note.textContent : null }) });
        "##,
    );
    let tall = ("attack-oscillate", json!({"startMs": 0, "count": 1, "high": 2600, "periodMs": 100}));
    let run = run_host(
        &views(
            &hostile(None),
            &[("never-starts", json!({})), tall.clone(), tall],
            &["--live-views", "2", "--automation", &script],
        ),
        |trace| person_reports_in(trace).next().is_some(),
        LIMIT,
    );
    let slept: Vec<String> =
        run.trace.iter().filter(|r| r["msg"]["kind"] == "sleep").map(|r| text(&r["view"])).collect();
    assert_eq!(slept, ["v1"], "{}", run.dump());
    let (_, person) = run.person_report();
    assert!(text(&person["note"]).contains("never finished starting"), "{person:#}");
}

/// Sleep has no exemption an App can hold: two Views whose server answers their tool call late
/// (16 s and 30 s) go to sleep once the (shortened, 4 s) bound on a View without its result
/// passed and they are out of sight, while the Views with their result near sight stay live as
/// before. The person scrolls back after 23 s: the first result, which came while its View
/// slept, reaches the View woken in its card; the second, which comes after the wake, reaches
/// the woken View live. Each tool call is made once. (Before, a View without its result never
/// slept, and a woken View without a result would have called its tool again.)
#[test]
fn views_without_their_result_sleep_and_their_late_results_reach_the_woken_views() {
    let dir = tempfile::tempdir().unwrap();
    let script = write_automation(
        &dir,
        r##"
        await until(() => document.querySelectorAll(".card .slot").length === 4, 60000);
        await wait(5000);
        const stream = document.getElementById("stream");
        window.dispatchEvent(new WheelEvent("wheel", { deltaY: 1 })); // a person's scroll comes with their input
        stream.scrollTop = stream.scrollHeight;
        await until(() => document.querySelectorAll(".asleep-note").length === 2, 20000).catch(() => null);
        // The first server answer comes while they sleep; then the person scrolls back to them.
        await wait(14000);
        window.dispatchEvent(new WheelEvent("wheel", { deltaY: -1 }));
        stream.scrollTop = 0;
        "##,
    );
    // Tall at once (2,600 px after 1 ms): at the bottom, only the first two cards are far from sight.
    let tall = ("attack-oscillate", json!({"startMs": 1, "count": 1, "high": 2600, "periodMs": 100}));
    let run = run_host_env(
        &views(
            &hostile(None),
            &[
                ("attack-late-result", json!({"afterMs": 16000})),
                ("attack-late-result", json!({"afterMs": 30000})),
                tall.clone(),
                tall,
            ],
            &["--live-views", "2", "--automation", &script],
        ),
        &[("MCP_APPS_HOST_TEST_NO_RESULT_AFTER_MS", "4000")],
        |trace| reports(trace, "late-result").count() == 2,
        LIMIT,
    );
    let at = |r: &Value| r["t_ms"].as_f64().unwrap_or_default();
    let kind = |r: &Value| text(&r["msg"]["kind"]);
    let result_at = |after: u64| {
        run.trace
            .iter()
            .find(|r| r["dir"] == "server->host" && r["msg"]["result"]["structuredContent"]["afterMs"] == after)
            .map(at)
            .unwrap_or_else(|| panic!("the result after {after} ms never came: {}", run.dump()))
    };
    let woken: Vec<&Value> = run.trace.iter().filter(|r| kind(r) == "woken").collect();
    // The first wake of a View without its result (the person scrolling back to them).
    let first_wake = woken
        .iter()
        .filter(|r| ["v1", "v2"].contains(&text(&r["msg"]["from"]).as_str()))
        .map(|r| at(r))
        .fold(f64::INFINITY, f64::min);
    let slept: Vec<(f64, String)> = run
        .trace
        .iter()
        .filter(|r| kind(r) == "sleep" && at(r) < first_wake)
        .map(|r| (at(r), text(&r["view"])))
        .collect();
    let (early, late) = (result_at(16000), result_at(30000));
    eprintln!("slept before the wake: {slept:?}; results at {early} and {late} ms; woken: {woken:?}");
    // Both Views without their result slept, before their results came. (A tall View with its
    // result may sleep too before the person scrolls: far below the first tall card it is far
    // from sight once the page has measured it, which a busy machine does late or early.)
    let without: Vec<&(f64, String)> = slept.iter().filter(|(_, v)| v == "v1" || v == "v2").collect();
    let mut who: Vec<&str> = without.iter().map(|(_, v)| v.as_str()).collect();
    who.sort_unstable();
    who.dedup();
    assert_eq!(who, ["v1", "v2"], "{}", run.dump());
    assert!(without.iter().all(|(t, _)| *t < early), "they slept before a result came: {}", run.dump());
    // One result came while they slept, the other after they woke (a slow run would say so here).
    assert!(early < first_wake && first_wake < late, "{}", run.dump());
    // Each result reached the View woken in its card, with its input.
    for after in [16000, 30000] {
        let (reported_at, report) = reports(&run.trace, "late-result")
            .find(|(_, r)| r["input"]["afterMs"] == after)
            .unwrap_or_else(|| panic!("no report of the View after {after} ms: {}", run.dump()));
        let reporter = run
            .trace
            .iter()
            .find(|r| at(r) == reported_at && r["msg"]["params"]["name"] == "report")
            .map(|r| text(&r["view"]))
            .unwrap_or_default();
        assert!(woken.iter().any(|w| text(&w["view"]) == reporter), "{reporter} did not wake: {report:#}");
        assert_eq!(report["result"]["late"], true, "{report:#}");
        assert_eq!(report["result"]["afterMs"], after, "{report:#}");
        // Its tool was called once: waking did not call it again.
        assert_eq!(run.log_count(&format!("LATE-CALL {{\"afterMs\":{after}}}")), 1, "{}", run.dump());
    }
    // The control: the Views with their result did their work (each at least once: one that
    // slept before the person scrolled reports again from its woken View).
    let tall: std::collections::BTreeSet<String> = run
        .trace
        .iter()
        .filter(|r| {
            r["dir"] == "host->server"
                && r["msg"]["params"]["name"] == "report"
                && r["msg"]["params"]["arguments"]["attack"] == "oscillate"
        })
        .map(|r| {
            // A woken View stands for the card it woke in.
            let view = text(&r["view"]);
            woken.iter().find(|w| text(&w["view"]) == view).map(|w| text(&w["msg"]["from"])).unwrap_or(view)
        })
        .collect();
    assert_eq!(tall.len(), 2, "both tall Views reported: {tall:?}\n{}", run.dump());
}

/// A server that never answers `tools/list` kept every other server's `--tool` Views from ever
/// opening. Now each server's Views open when that server is ready.
#[test]
fn a_silent_server_does_not_hold_back_another_servers_views() {
    let silent = node_server("hostile-server.mjs", "--instance silent --silent-list");
    let args = vec![
        "run".to_owned(),
        "--stdio".to_owned(),
        silent,
        "--stdio".to_owned(),
        hostile(Some("b")),
        "--tool".to_owned(),
        "honest".to_owned(),
        "--timeout".to_owned(),
        "80".to_owned(),
    ];
    let run = run_host(
        &args,
        |t| t.iter().filter(|r| r["dir"] == "host->server" && r["msg"]["params"]["name"] == "honest-ok").count() >= 3,
        Duration::from_secs(45),
    );
    let first = run
        .trace
        .iter()
        .find(|r| r["dir"] == "host->server" && r["msg"]["params"]["name"] == "honest-ok")
        .and_then(|r| r["t_ms"].as_f64())
        .unwrap_or_else(|| panic!("the ready server's View never worked:\n{}", run.dump()));
    println!("first honest-ok at {first:.0} ms with a silent server beside it");
    assert!(first < 20_000.0, "the View waited {first:.0} ms for another server");
}

/// One View kept 20,000 tool calls in flight (+450 MB). Now a View has at most
/// `MAX_VIEW_REQUESTS_IN_FLIGHT` requests in flight; the rest are refused at once, unforwarded.
#[test]
fn a_view_cannot_keep_thousands_of_calls_in_flight() {
    let run = run_host(
        &views(&hostile(None), &[("attack-inflight", json!({"count": 20000})), ("honest", json!({}))], &[]),
        reported_then_honest(&["inflight"], "v2", 3),
        LIMIT,
    );
    let report = run.report("inflight");
    // Walk the trace: calls out to the server minus answers back, for the attacking View.
    let (mut open, mut peak, mut forwarded) = (0i64, 0i64, 0);
    for r in run.trace.iter().filter(|r| r["view"] == "v1" && r["msg"]["method"] == "tools/call") {
        if r["dir"] == "host->server" && r["msg"]["params"]["name"] == "slow" {
            open += 1;
            forwarded += 1;
            peak = peak.max(open);
        } else if r["dir"] == "server->host" {
            open -= 1;
        }
    }
    let host_peak = run.rss.iter().map(|s| s.1).max().unwrap_or(0);
    println!(
        "20,000 calls: {} answered, {} refused, {forwarded} forwarded, peak {peak} in flight; host RSS peak {} MB",
        report["answered"],
        report["refused"],
        host_peak / 1024
    );
    assert!(peak <= mcp_apps_host::bridge::MAX_VIEW_REQUESTS_IN_FLIGHT as i64, "{peak} calls were in flight at once");
    assert!(report["refused"].as_u64().unwrap_or(0) > 10_000, "{report:#}");
    run.assert_honest_kept_working("v2", run.report_time("inflight"));
}

/// A View that asks to be closed, then never answers `ui/resource-teardown` and goes on calling
/// tools, is closed anyway when its teardown times out (3 s): nothing it sends after that
/// reaches the host, and the honest View beside it keeps working.
#[test]
fn a_view_that_never_answers_its_teardown_is_closed_anyway() {
    let teardown_at = |t: &[Value]| {
        t.iter()
            .find(|r| r["dir"] == "host->view" && r["view"] == "v1" && r["msg"]["method"] == "ui/resource-teardown")
            .and_then(|r| r["t_ms"].as_f64())
    };
    let run = run_host(
        &views(&hostile(None), &[("attack-deaf", json!({"ms": 12000})), ("honest", json!({}))], &[]),
        |t| {
            teardown_at(t)
                .is_some_and(|at| honest_calls(t, &["v2".to_owned()]).iter().filter(|c| **c > at).count() >= 20)
        },
        LIMIT,
    );
    let at = teardown_at(&run.trace).unwrap_or_else(|| panic!("no teardown was sent:\n{}", run.dump()));
    let deaf: Vec<(String, f64)> = run
        .trace
        .iter()
        .filter(|r| r["view"] == "v1" && r["msg"]["params"]["arguments"]["deaf"].is_u64())
        .map(|r| (r["dir"].as_str().unwrap_or_default().to_owned(), r["t_ms"].as_f64().unwrap_or(0.0)))
        .collect();
    let last = deaf.iter().map(|(_, t)| *t).fold(0.0, f64::max);
    println!("teardown sent at {at:.0} ms; {} calls of the deaf View traced, the last at {last:.0} ms", deaf.len());
    assert!(deaf.iter().any(|(dir, _)| dir == "view->host"), "the deaf View never called: {deaf:?}");
    assert!(last < at + 3000.0 + 1500.0, "the deaf View still reached the host {:.0} ms after its teardown", last - at);
    assert!(run.log_count("teardown: TimedOut") >= 1, "the teardown did not time out:\n{}", run.dump());
    assert_no_hits(&run);
    run.assert_honest_kept_working("v2", at + 3000.0);
}

/// A View can script its proxy page (they share an origin) and call the line the proxy reports
/// diagnostics on, with anything, as fast as it likes: every diagnostic was a line of the host's
/// log and a trace record, so a View could fill the disk under the host's log. Now each View's
/// diagnostics (and lines without the secret) have a budget: a burst of 1,000, then 100 a
/// second; the rest are dropped unread, and the host says how many at most every 10 s.
#[test]
fn a_view_cannot_flood_the_hosts_log_through_its_proxys_line() {
    let run = run_host(
        &views(&hostile(None), &[("attack-diagnostics", json!({"ms": 4000})), ("honest", json!({}))], &[]),
        reported_then_honest(&["diagnostics"], "v2", 4),
        LIMIT,
    );
    assert!(run.alive_at_end, "the host died (code {:?}):\n{}", run.code, run.dump());
    let r = run.report("diagnostics");
    assert_eq!(r["reachable"], true, "the View could not reach its proxy's line: {r:#}");
    let sent = r["sent"].as_u64().unwrap_or(0);
    // What got through: log lines and trace records that carry the attack's word.
    let logged = run.stderr.lines().filter(|l| l.contains("diag-flood")).count() as u64;
    let unsecret = run.log_count("without the host secret") as u64;
    let traced = run.trace.iter().filter(|x| x["view"] == "v1" && x.to_string().contains("diag-flood")).count() as u64;
    let notes = run.log_count("were over its budget") as u64;
    let seconds = run.elapsed.as_secs_f64();
    // The budget over the whole run, however long it took, and a margin.
    let bound = 1000 + (100.0 * seconds) as u64 + 100;
    println!(
        "diagnostics: {sent} sent on {} lines in {} ms; {logged} log lines, {unsecret} without the secret, \
         {traced} trace records, {notes} counts said, over {seconds:.1} s (bound {bound})",
        r["lines"], r["sendMs"]
    );
    assert!(sent >= 20_000 && sent > 5 * bound, "the attack sent too little to tell: {r:#}");
    assert!(logged + unsecret <= bound, "{logged} + {unsecret} log lines got through (bound {bound})");
    assert!(traced <= bound, "{traced} trace records got through (bound {bound})");
    assert!(notes >= 1 && notes as f64 <= seconds / 10.0 + 2.0, "{notes} counts of dropped diagnostics said");
    assert_eq!(run.log_count("panicked"), 0);
    assert_no_hits(&run);
    run.assert_honest_kept_working("v2", run.report_time("diagnostics"));
}
