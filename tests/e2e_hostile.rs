//! Hostile Views against the real host (WebKitGTK under a display, the real sandbox proxy).
//!
//! `tests/fixtures/hostile-server.mjs` serves one UI tool per attack and an honest View; each test
//! opens an attack next to the honest View in ONE window and asserts three things: the attempt
//! failed, the host logged it (stderr or trace), and the honest View kept working (its
//! `honest-ok` calls continue after the attack and their answers keep reaching it).
//!
//! The fixture starts a canary HTTP/WebSocket/UDP listener on 127.0.0.1 and prints `HIT ...` for
//! every request that reaches it, so a request that escaped a sandbox is visible whatever the
//! View believes happened.
//!
//! The four weaknesses these attacks first found (a non-ASCII CSP entry switching the policy off,
//! a CSP-free proxy.js borrowed by sibling Views, consent dialogs outliving their View, forged log
//! lines) are fixed; their tests stay as regressions.

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use common::hostile::*;
use common::node_server;
use serde_json::{json, Value};

// ------------------------------------------------------------------------------------------------

/// Direct native IPC: every frame a View can script (its own, its proxy's, a nested about:blank
/// frame it writes) posts forged shell messages to `window.webkit.messageHandlers.ipc`, while a
/// consent dialog of its own is open. Rust drops and logs each one; none takes effect.
#[test]
fn forged_native_ipc_from_every_frame_is_dropped_and_changes_nothing() {
    let run = run_host(
        &views(&hostile(None), &[("attack-ipc", json!({})), ("honest", json!({}))], &[]),
        reported_then_honest(&["ipc"], "v2", 4),
        LIMIT,
    );
    let r = run.report("ipc");
    let payloads = r["payloads"].as_u64().unwrap();
    let sent = r["sent"].as_u64().unwrap();
    // view + proxy + nested frame, every payload; WebKit lets each of them post.
    assert_eq!(sent, 3 * payloads, "not every frame could post: {:#}", r["attempts"]);
    assert_eq!(
        run.log_count("dropped IPC message without the host secret") as u64,
        sent,
        "every forged IPC message must be dropped and logged once:\n{}",
        run.dump()
    );
    // The shell's line is not in the View's webview at all, and top (the host's frame
    // document) is another origin: not even its globals can be read.
    for key in ["topSend", "topWebkit"] {
        assert!(text(&r[key]).starts_with("SecurityError"), "{key}: {}", r[key]);
    }
    // Nothing took effect: no forged tool call, no forged View message, no dialog answered,
    // no View closed.
    assert_eq!(run.log_count("CANARY CALLED"), 0);
    let calls = run.server_calls();
    assert!(calls.iter().all(|(_, name, _)| name != "canary"), "{calls:?}");
    assert!(calls.iter().all(|(_, _, args)| args.get("forged").is_none()), "{calls:?}");
    assert_eq!(r["openLinkAnswered"], false, "the forged answer opened the link: {}", r["openLink"]);
    let link_id = run
        .trace
        .iter()
        .find(|rec| rec["dir"] == "view->host" && rec["msg"]["method"] == "ui/open-link")
        .map(|rec| rec["msg"]["id"].clone())
        .expect("the View asked to open a link");
    let answer = run.trace.iter().find(|rec| rec["dir"] == "host->view" && rec["msg"]["id"] == link_id);
    assert!(answer.is_none(), "the open-link was answered: {answer:?}\n{}", run.dump());
    assert_eq!(run.log_count("consent answered"), 0);
    assert_eq!(run.log_count("malformed shell message"), 0);
    run.assert_honest_kept_working("v2", run.report_time("ipc"));
}

/// Leaving the sandbox: top navigation (also from the proxy's realm), window.open, links and
/// forms aimed at `_top`/`_blank`/another origin, downloads (data:, blob:, http, in a nested
/// frame), and finally the View navigating itself. Nothing leaves, nothing is saved.
#[test]
fn a_view_cannot_navigate_open_windows_post_forms_or_download() {
    let downloads = tempfile::tempdir().unwrap();
    let dl = downloads.path().to_string_lossy().into_owned();
    let run = run_host(
        &views(&hostile(None), &[("attack-navigation", json!({})), ("honest", json!({}))], &["--downloads", &dl]),
        reported_then_honest(&["navigation"], "v2", 5),
        LIMIT,
    );
    let r = run.report("navigation");
    let o = &r["outcomes"];
    // Top is the View's own proxy page: the sandbox refuses (SecurityError) or the webview
    // does (no error, nothing navigates: `stillHere` below).
    for key in ["top.location", "top.location.href", "top.location.replace", "parent.location", "top from proxy realm"]
    {
        assert!(text(&o[key]).contains("SecurityError") || o[key] == "no error", "{key}: {}", o[key]);
    }
    for key in ["window.open", "window.open blank", "window.open from proxy realm", "window.open from shell name"] {
        assert_eq!(o[key], "null", "{key} opened something");
    }
    assert!(r["stillHere"].as_str().unwrap().contains("/view.html?view=v1"), "{}", r["stillHere"]);
    // Forms are stopped by `form-action 'none'`, and the host heard about it.
    let form_blocks = run.csp_violations("v1").iter().filter(|(d, _)| d == "form-action").count();
    assert!(form_blocks >= 3, "form-action violations: {:?}", run.csp_violations("v1"));
    assert_no_hits(&run);
    assert_eq!(std::fs::read_dir(downloads.path()).unwrap().count(), 0, "a file was saved");
    assert_eq!(run.log_count("saved download"), 0);
    run.assert_honest_kept_working("v2", run.report_time("navigation"));
}

/// The View navigates its own frame away (`location.href`, `location.assign`): the iframe
/// sandbox allows self-navigation and no CSP directive governs it. WebKit refuses the
/// navigation from the sandbox scheme to http before the host's native navigation handler is
/// consulted (which would refuse it too); either way the View's document stays and nothing
/// reaches the canary.
#[test]
fn a_view_cannot_navigate_its_own_frame_away() {
    let run = run_host(
        &views(&hostile(None), &[("attack-self-navigation", json!({})), ("honest", json!({}))], &[]),
        reported_then_honest(&["self-navigation"], "v2", 5),
        LIMIT,
    );
    let r = run.report("self-navigation");
    assert_eq!(r["stillHere"], r["before"], "the View's document is still the one the host gave it: {r}");
    assert!(r["before"].as_str().unwrap().contains("/view.html?view=v1"), "{r}");
    assert_no_hits(&run);
    run.assert_honest_kept_working("v2", run.report_time("self-navigation"));
}

/// Every kind of request a page can make to an undeclared origin (the canary listener): fetch,
/// XHR, WebSocket, EventSource, beacon, script, img, srcset, SVG image, stylesheet, @import,
/// background, fonts, media, object/embed, iframe, workers (http and blob:, shared too), dynamic
/// import, `<base href>`, meta refresh, srcdoc/data:/blob:/about:blank frames, `<a ping>`,
/// WebRTC (when present). Nothing arrives, and the host records the violations.
#[test]
fn undeclared_origins_are_unreachable_by_any_kind_of_request() {
    let run = run_host(
        &views(&hostile(None), &[("attack-network", json!({})), ("honest", json!({}))], &[]),
        reported_then_honest(&["network"], "v2", 5),
        LIMIT,
    );
    let r = run.report("network");
    assert_no_hits(&run);
    let o = &r["outcomes"];
    for key in ["fetch", "fetch no-cors", "fetch keepalive"] {
        assert!(text(&o[key]).starts_with("rejected"), "{key}: {}", o[key]);
    }
    for key in ["websocket", "eventsource", "worker"] {
        assert!(text(&o[key]).contains("SecurityError"), "{key}: {}", o[key]);
    }
    assert!(
        !text(&o["base href resolved"]).contains("127.0.0.1"),
        "<base href> took effect: {}",
        o["base href resolved"]
    );
    let seen = run.csp_violations("v1");
    for directive in [
        "connect-src",
        "img-src",
        "script-src",
        "style-src",
        "font-src",
        "media-src",
        "object-src",
        "frame-src",
        "base-uri",
    ] {
        assert!(
            seen.iter().any(|(d, _)| d.starts_with(directive)),
            "no {directive} violation recorded; recorded: {seen:?}"
        );
    }
    assert!(seen.len() >= 20, "only {} violations recorded: {seen:?}", seen.len());
    eprintln!("network: {} CSP violations recorded, WebRTC: {}", seen.len(), r["rtc"]);
    run.assert_honest_kept_working("v2", run.report_time("network"));
}

/// Another server's View: instance `a` and instance `b` of the fixture are two servers (two
/// command lines, two identities, two sandbox origins). `a` writes a secret into every storage
/// it has; `b` (another run) sees none of it, and cannot fetch, frame or open `a`'s proxy.
#[test]
fn storage_of_another_servers_origin_is_not_visible() {
    let secret = format!("secret-{}", std::process::id());
    let write = run_host(
        &views(
            &hostile(Some("a")),
            &[("attack-storage", json!({"mode": "write", "secret": secret})), ("honest", json!({}))],
            &[],
        ),
        reported_then_honest(&["storage"], "v2", 2),
        LIMIT,
    );
    let w = write.report("storage");
    assert_eq!(w["seen"]["local"], secret.as_str(), "instance a could not store its secret: {w:#}");
    let origin_a = w["origin"].as_str().unwrap().to_owned();

    let read = run_host(
        &views(
            &hostile(Some("b")),
            &[
                ("attack-storage", json!({"mode": "read", "secret": secret, "otherOrigin": origin_a})),
                ("honest", json!({})),
            ],
            &[],
        ),
        reported_then_honest(&["storage"], "v2", 3),
        LIMIT,
    );
    let r = read.report("storage");
    let origin_b = r["origin"].as_str().unwrap();
    assert_ne!(origin_a, origin_b, "two servers got one origin");
    let seen = &r["seen"];
    for key in ["local", "session", "indexedDB"] {
        assert!(seen[key].is_null(), "instance b sees {key} = {} of instance a", seen[key]);
    }
    assert!(!text(&seen["cookie"]).contains(&secret), "cookie leaked: {}", seen["cookie"]);
    let p = &r["probes"];
    assert!(text(&p["fetchOther"]).contains("TypeError"), "fetch of a's proxy: {}", p["fetchOther"]);
    assert!(!text(&p["iframeOtherOrigin"]).contains(&origin_a), "a's proxy loaded in b's frame: {p:#}");
    assert_eq!(p["openOther"], "null");
    // Top is the host's frame document (another origin; the shell is another webview).
    assert!(text(&p["topDocument"]).starts_with("SecurityError"), "{p:#}");
    assert!(text(&p["topStorage"]).starts_with("SecurityError"), "{p:#}");
    let blocked = read.csp_violations("v1");
    assert!(
        blocked.iter().any(|(d, u)| d == "connect-src" && u.starts_with(&origin_a)),
        "the fetch of a's origin was not reported: {blocked:?}"
    );
    read.assert_honest_kept_working("v2", read.report_time("storage"));

    // For the record: does a's storage survive to a's next run (the docs promise it does)?
    let again = run_host(
        &views(
            &hostile(Some("a")),
            &[("attack-storage", json!({"mode": "read", "secret": secret})), ("honest", json!({}))],
            &[],
        ),
        reported_then_honest(&["storage"], "v2", 1),
        LIMIT,
    );
    let a2 = again.report("storage");
    eprintln!(
        "storage: instance a's storage in its next run: {} (localStorage persisted across runs: {})",
        a2["seen"],
        a2["seen"]["local"] == secret.as_str()
    );
}

/// Stated property, not a weakness: Views of ONE server share one origin. A second View of the
/// same server reads what the first stored. Each View has a webview of its own, so its
/// siblings' documents and the shell are not even in reach.
#[test]
fn views_of_one_server_share_an_origin_by_design() {
    let secret = format!("shared-{}", std::process::id());
    let run = run_host(
        &views(
            &hostile(None),
            &[
                ("attack-storage", json!({"mode": "write", "secret": secret})),
                ("attack-storage", json!({"mode": "read", "secret": secret, "waitMs": 6000})),
                ("attack-sibling", json!({})),
                ("honest", json!({})),
            ],
            &[],
        ),
        |trace| reports(trace, "storage").count() >= 2 && reported_then_honest(&["sibling"], "v4", 3)(trace),
        LIMIT,
    );
    let reads: Vec<&Value> = reports(&run.trace, "storage").map(|(_, r)| r).filter(|r| r["mode"] == "read").collect();
    assert_eq!(reads.len(), 1);
    assert_eq!(reads[0]["seen"]["local"], secret.as_str(), "same-server Views should share storage: {:#}", reads[0]);
    let s = run.report("sibling");
    let frames = s["frames"].as_array().unwrap();
    let readable = frames.iter().filter(|f| f["self"] == false && f["viewText"].is_string()).count();
    assert_eq!(readable, 0, "a View reaches its same-server siblings' documents: {frames:#?}");
    assert_eq!(frames.len(), 1, "only its own frame is in reach: {frames:#?}");
    assert!(text(&s["topDocument"]).starts_with("SecurityError"), "top is readable: {}", s["topDocument"]);
    run.assert_honest_kept_working("v4", run.report_time("sibling"));
}

/// Protocol abuse after a completed handshake: sandbox notifications again, forged responses,
/// a reused request id, a second `ui/initialize` and `initialized`, tools the View may not call
/// (model-only, another server's, with a task, without a name), requests that are notifications
/// or host requests, batches and wrong envelopes, answers to a server's questions forged into a
/// read. All refused in the trace; the server never sees a forbidden call or a forged answer;
/// the View itself keeps working.
#[test]
fn protocol_abuse_is_rejected_and_never_reaches_the_server() {
    let run = run_host(
        &views(&hostile(None), &[("attack-protocol", json!({})), ("honest", json!({}))], &[]),
        reported_then_honest(&["protocol"], "v2", 4),
        LIMIT,
    );
    let r = run.report("protocol");
    let a = &r["answers"];
    let rejected = run.rejected_reasons("v1");
    for needle in [
        "ui/notifications/sandbox-proxy-ready after the resource was sent",
        "ui/notifications/sandbox-resource-ready is not a message a sandbox sends",
        "ui/notifications/sandbox-anything is not a message a sandbox sends",
        "response to unknown request id 424242",
        "response to unknown request id \"forged-response\"",
        "response to unknown request id 1 ",
        "request id \"dup-id\" reused while still in flight",
        "repeated ui/notifications/initialized",
        "not a JSON object",
        "\"jsonrpc\" must be \"2.0\"",
        "\"id\" must be a string or number",
    ] {
        assert!(rejected.iter().any(|x| x.contains(needle)), "no rejection {needle:?} in {rejected:#?}");
    }
    let error = |key: &str| {
        a[key]["error"]["message"].as_str().unwrap_or_else(|| panic!("{key} was not refused: {}", a[key])).to_owned()
    };
    assert!(error("modelOnly").contains("not callable from Views"));
    assert!(error("otherServersTool").contains("has no tool `get-time`"));
    assert!(error("task").contains("tasks are not supported"));
    assert!(error("noName").contains("name"));
    assert!(error("teardownAsRequest").contains("method not found"));
    assert!(error("notificationAsRequest").contains("method not found"));
    // The first request with the reused id keeps it and is answered once.
    assert_eq!(a["slow"]["result"]["content"][0]["text"], "slow done", "{}", a["slow"]);
    let dup_answers = run
        .trace
        .iter()
        .filter(|x| x["dir"] == "host->view" && x["view"] == "v1" && x["msg"]["id"] == "dup-id")
        .count();
    assert_eq!(dup_answers, 1);
    // A second ui/initialize is answered again (React StrictMode mounts twice), nothing more.
    assert_eq!(a["reinitialize"]["answered"], true);
    assert!(a["stillAnswered"]["result"].is_object(), "the View stopped being answered: {}", a["stillAnswered"]);
    // The read itself is served; the forged answers never reach the server.
    assert!(a["forgedAnswers"]["result"]["contents"].is_array(), "{}", a["forgedAnswers"]);
    assert_no_hits(&run);
    // The server saw only what a View may call.
    assert_eq!(run.log_count("MODEL-ONLY CALLED"), 0);
    let from_view: Vec<String> =
        run.server_calls().into_iter().filter(|(v, _, _)| v == "v1").map(|(_, name, _)| name).collect();
    for name in &from_view {
        assert!(["attack-protocol", "slow", "report"].contains(&name.as_str()), "the server saw {name}: {from_view:?}");
    }
    run.assert_honest_kept_working("v2", run.report_time("protocol"));
}

/// CSP injection through `_meta.ui.csp` (entries with `;`, `,`, quotes, whitespace, `*`, bare
/// schemes, other custom schemes, userinfo, bad ports, inner wildcards) and `_meta.ui.domain`.
/// `inspect` shows the header is exactly the declared-but-empty policy and reports each entry;
/// the View itself gets no grant and cannot load from the canary origin or anywhere else.
#[test]
fn csp_injection_through_metadata_never_reaches_the_header() {
    let server = hostile(None);
    let out = Command::new(env!("CARGO_BIN_EXE_mcp-apps-host"))
        .args(["inspect", "--stdio", &server, "--json"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("inspect runs");
    assert_eq!(out.status.code(), Some(1), "inspect must report errors: {}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).expect("inspect --json");
    let uri = "ui://hostile/attack-csp-meta.html";
    let resource = report["resources"].as_array().unwrap().iter().find(|r| r["uri"] == uri).expect("the resource");
    let header = resource["cspHeader"].as_str().unwrap();
    let declared_empty = mcp_apps_host::sandbox::build_csp(Some(&mcp_apps_host::protocol::ResourceCsp::default()));
    assert_eq!(header, declared_empty.header, "hostile entries changed the header");
    assert_eq!(header.split("; ").count(), 12);
    let entries = resource["meta"]["csp"]["connectDomains"].as_array().unwrap().len();
    let rejected = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == "csp-entry-rejected" && f["subject"] == uri)
        .count();
    assert_eq!(rejected, entries * 4, "every entry of the four lists must be reported");
    assert!(report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["code"] == "domain-not-honored" && f["subject"] == uri));

    let run = run_host(
        &views(&server, &[("attack-csp-meta", json!({})), ("honest", json!({}))], &[]),
        reported_then_honest(&["csp-meta"], "v2", 4),
        LIMIT,
    );
    let r = run.report("csp-meta");
    assert_eq!(r["grantedCsp"], json!({}), "the host granted something: {}", r["grantedCsp"]);
    assert_eq!(r["outcomes"]["escapedScript"], false);
    assert!(text(&r["outcomes"]["fetch"]).contains("TypeError"));
    assert!(text(&r["outcomes"]["fetchA"]).contains("TypeError"));
    assert_no_hits(&run);
    assert!(run.log_count("CSP entry") >= entries * 4, "rejections not logged");
    let seen = run.csp_violations("v1");
    for d in ["connect-src", "img-src", "script-src", "frame-src"] {
        assert!(seen.iter().any(|(x, _)| x.starts_with(d)), "no {d} violation: {seen:?}");
    }
    run.assert_honest_kept_working("v2", run.report_time("csp-meta"));
}

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

/// A single View cannot load a document of its own origin without the CSP header into its own
/// frame: the proxy's `frame-src` refuses the navigation, so code planted in the proxy finds
/// the View's frame unchanged and its requests are still governed by the CSP.
#[test]
fn a_single_view_cannot_swap_its_frame_for_a_document_without_csp() {
    let run = run_host(
        &views(&hostile(None), &[("attack-self-escape", json!({})), ("honest", json!({}))], &[]),
        reported_then_honest(&["self-escape", "self-escape-observer"], "v2", 5),
        LIMIT,
    );
    let observer = run.report("self-escape-observer");
    assert!(text(&observer["observer"]["href"]).contains("/view.html?view=v1"), "{observer:#}");
    assert_no_hits(&run);
    run.assert_honest_kept_working("v2", run.report_time("self-escape"));
}

/// BUG (found by this suite): a View escapes its CSP when another View of the same server is
/// open. From its proxy's realm it navigates the proxy frame to `mcp-sandbox://<label>/proxy.js`,
/// which the host serves WITHOUT a Content-Security-Policy header and which the navigation
/// handler allows (any `mcp-sandbox://` URL). The sibling View's proxy (same origin) then calls
/// that document's `fetch`, `Image` and `WebSocket`: requests governed by no CSP at all.
#[test]
fn a_frame_served_without_csp_cannot_be_used_to_escape() {
    let run = run_host(
        &views(&hostile(None), &[("attack-escape", json!({})), ("honest", json!({}))], &[]),
        // The honest View's next calls give the canary listener time to log anything that
        // arrived.
        reported_then_honest(&["escape", "escape-after"], "v2", 5),
        LIMIT,
    );
    let r = run.report("escape");
    eprintln!("escape: {r}");
    // Each View has a webview of its own: no sibling proxy is in reach to lend its realm, and
    // the proxy's own navigation to the CSP-less document is refused (by the frame-src of the
    // host's top document, or the navigation handler): a second later the View is still there
    // and its proxy is the proxy page.
    assert_eq!(r["hasSibling"], false, "{r:#}");
    let after = run.report("escape-after");
    assert!(text(&after["proxyHref"]).contains("/proxy.html?"), "the proxy was replaced: {after:#}");
    assert_no_hits(&run);
}

/// BUG (found by this suite), the most severe: one declared CSP entry with a non-ASCII character
/// (`connectDomains: ["https://api.example.com/café"]`) passes the CSP builder's validation and
/// goes into the header; wry hands WebKit response headers through `HeaderValue::to_str()`, which
/// fails on non-ASCII bytes, and sends `""` instead: the proxy and the View get an EMPTY
/// Content-Security-Policy. A single View of that server then loads scripts, images and fetches
/// from any origin.
#[test]
fn a_non_ascii_csp_entry_cannot_switch_the_policy_off() {
    let run = run_host(
        &views(&hostile(None), &[("attack-csp-unicode", json!({})), ("honest", json!({}))], &[]),
        reported_then_honest(&["csp-unicode"], "v2", 4),
        LIMIT,
    );
    let r = run.report("csp-unicode");
    eprintln!("csp-unicode: granted {}, outcomes {}", r["grantedCsp"], r["outcomes"]);
    assert_no_hits(&run);
    assert_eq!(r["outcomes"]["escapedScript"], false, "a script from an undeclared origin ran");
    run.assert_honest_kept_working("v2", run.report_time("csp-unicode"));
}

/// BUG (found by this suite): View-controlled text reaches the host's log unescaped, so a View
/// can write whole log lines, such as `error: ...` lines (which `run` uses for its one failure
/// line and `check` collects as failure reasons) or a fake "dropped IPC message" line.
#[test]
fn view_controlled_text_cannot_forge_host_log_lines() {
    let run = run_host(
        &views(&hostile(None), &[("attack-log", json!({})), ("honest", json!({}))], &[]),
        reported_then_honest(&["log"], "v2", 2),
        LIMIT,
    );
    let forged: Vec<&str> = run.stderr.lines().filter(|l| l.starts_with("error: forged by a View")).collect();
    assert!(forged.is_empty(), "a View wrote host log lines:\n{}", forged.join("\n"));
}

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

/// The canary's raw TCP ports, from its `hostile-server ready ... tcp=<port>,<port>,...` line.
fn canary_tcp_ports(run: &HostRun) -> Vec<u16> {
    run.stderr
        .lines()
        .find_map(|l| l.split("hostile-server ready ").nth(1))
        .and_then(|rest| rest.split_whitespace().find_map(|kv| kv.strip_prefix("tcp=")))
        .map(|ports| ports.split(',').filter_map(|p| p.parse().ok()).collect())
        .unwrap_or_default()
}

/// The ports of the canary's `HIT TCP <port>` lines, in the order the connections arrived.
fn tcp_hits(run: &HostRun) -> Vec<u16> {
    run.hits()
        .iter()
        .filter_map(|l| l.split("HIT TCP ").nth(1))
        .filter_map(|rest| rest.split_whitespace().next().and_then(|p| p.parse().ok()))
        .collect()
}

/// Connections WebKit opens without asking the CSP: `<link rel=preconnect>` to every canary TCP
/// port (http and https, with and without crossorigin), `<link rel=dns-prefetch>`, WebRTC ICE to
/// the canary's UDP and TCP ports, speculation rules, XSLT `document()`, plus prefetch, preload,
/// `<a ping>` and `sendBeacon` (which the CSP governs). The View also tries to send its tool
/// input out as the order of its preconnects. Not one TCP connection, HTTP request or UDP
/// datagram reaches the canary.
#[test]
fn a_view_cannot_open_connections_around_the_csp() {
    let run = run_host(
        &views(&hostile(None), &[("attack-preconnect", json!({"secret": "2031"})), ("honest", json!({}))], &[]),
        reported_then_honest(&["preconnect"], "v2", 4),
        LIMIT,
    );
    let r = run.report("preconnect");
    eprintln!("preconnect: supports {}, outcomes {}", r["supports"], r["outcomes"]);
    assert_eq!(canary_tcp_ports(&run).len(), 4, "the canary's TCP listeners did not start:\n{}", run.dump());
    assert_eq!(r["order"].as_array().map(Vec::len), Some(4), "the attack did not run: {r:#}");
    assert!(tcp_hits(&run).is_empty(), "TCP connections reached the canary: {:?}", tcp_hits(&run));
    assert_no_hits(&run);
    // The requests the CSP governs were refused by it, not merely lost.
    let seen = run.csp_violations("v1");
    assert!(seen.iter().any(|(_, uri)| uri.contains("pc-preload")), "no CSP violation for the preloads: {seen:?}");
    run.assert_honest_kept_working("v2", run.report_time("preconnect"));
}

/// The test above could fail: with the engine left at WebKit's defaults
/// (`MCP_APPS_HOST_TEST_ALLOW_PRECONNECT`), the same View's preconnects reach the canary as TCP
/// connections, in the order that spells out its tool input.
///
/// With those defaults WebKit 2.50's web process sometimes crashes while the Views load (a
/// segfault at the same place of `libwebkit2gtk` every time, in 1 to 4 of 24 runs, three at a
/// time, whichever moment the server's spare proxy page is made at; never with the host's own
/// settings, which keep preconnects off). The host then restores both Views of the server, as
/// it must, and the honest View goes on under its new id: this control test follows it there.
/// The hardened test above follows nothing.
#[test]
fn preconnects_reach_the_canary_when_the_engine_keeps_its_defaults() {
    let run = run_host_env(
        &views(&hostile(None), &[("attack-preconnect", json!({"secret": "2031"})), ("honest", json!({}))], &[]),
        &[("MCP_APPS_HOST_TEST_ALLOW_PRECONNECT", "1")],
        |trace: &[Value]| {
            let Some((reported, _)) = reports(trace, "preconnect").next() else { return false };
            honest_calls_after(trace, &restored_as(trace, "v2"), reported) >= 4
        },
        LIMIT,
    );
    assert_eq!(run.log_count("MCP_APPS_HOST_TEST_ALLOW_PRECONNECT is set"), 1, "{}", run.dump());
    let r = run.report("preconnect");
    let ports = canary_tcp_ports(&run);
    let hits = tcp_hits(&run);
    eprintln!("with WebKit's defaults the canary saw: {}", run.hits().join("\n"));
    assert!(!hits.is_empty(), "no TCP connection reached the canary; it cannot detect the hole:\n{}", run.dump());
    let order: Vec<u16> = r["order"].as_array().unwrap().iter().filter_map(|p| p.as_u64()).map(|p| p as u16).collect();
    let expected: Vec<u16> = "2031".chars().map(|c| ports[c.to_digit(10).unwrap() as usize]).collect();
    assert_eq!(order, expected);
    assert_eq!(hits[..order.len().min(hits.len())], order[..], "the secret did not arrive as the order of connections");
    run.assert_honest_kept_working(&restored_as(&run.trace, "v2"), run.report_time("preconnect"));
}

/// Requests an engine path sends without asking the CSP: the static `import` of blob:
/// AudioWorklet (and PaintWorklet, where WebKit has it) modules, module workers (static,
/// dynamic, nested), classic workers (`importScripts`, `fetch`) and shared workers, each
/// aimed at the canary, from a View whose CSP allows no outside origin. Nothing reaches the
/// canary; what the CSP let through was stopped by the host's check below the page (logged by
/// the web process), and the honest View kept working.
#[test]
fn nothing_leaves_a_view_below_the_page_through_worklets_or_workers() {
    let run = run_host(
        &views(&hostile(None), &[("attack-below-page", json!({})), ("honest", json!({}))], &[]),
        reported_then_honest(&["below-page"], "v2", 4),
        LIMIT,
    );
    let r = run.report("below-page");
    eprintln!("below the page: {:#}", r["outcomes"]);
    assert!(r["outcomes"].as_object().is_some_and(|o| o.len() >= 11), "the attack did not run: {r:#}");
    assert_no_hits(&run);
    assert!(tcp_hits(&run).is_empty(), "TCP connections reached the canary: {:?}", tcp_hits(&run));
    // At least the AudioWorklet import gets past the CSP in this WebKit: the check stopped it.
    assert!(run.log_count("blocked a request below the page to http://127.0.0.1") >= 1, "{}", run.dump());
    run.assert_honest_kept_working("v2", run.report_time("below-page"));
}

/// The check below the page lets through what the View declared: its fetch to the canary's
/// HTTP server (its `connectDomains`) arrives, while a worklet import from the same host on
/// another port (undeclared) is stopped.
#[test]
fn the_check_below_the_page_lets_the_declared_origins_through() {
    let run = run_host(
        &views(&hostile(None), &[("attack-below-page-declared", json!({})), ("honest", json!({}))], &[]),
        reported_then_honest(&["below-page-declared"], "v2", 2),
        LIMIT,
    );
    let r = run.report("below-page-declared");
    assert_eq!(r["fetch"], "status 200", "the declared origin was not reached: {r:#}");
    assert!(run.hits().iter().any(|h| h.contains("GET /declared-fetch")), "{}", run.dump());
    let other = canary_tcp_ports(&run)[0];
    assert!(!tcp_hits(&run).contains(&other), "the undeclared port was reached: {r:#}");
    assert!(
        run.log_count(&format!("blocked a request below the page to http://127.0.0.1:{other}")) >= 1,
        "{}",
        run.dump()
    );
}

/// The test above could fail: without the check below the page
/// (`MCP_APPS_HOST_TEST_NO_REQUEST_CHECK`), the same View's AudioWorklet import reaches the
/// canary.
#[test]
fn worklet_imports_reach_the_canary_without_the_check_below_the_page() {
    let run = run_host_env(
        &views(&hostile(None), &[("attack-below-page", json!({})), ("honest", json!({}))], &[]),
        &[("MCP_APPS_HOST_TEST_NO_REQUEST_CHECK", "1")],
        reported_then_honest(&["below-page"], "v2", 2),
        LIMIT,
    );
    assert_eq!(run.log_count("MCP_APPS_HOST_TEST_NO_REQUEST_CHECK is set"), 1, "{}", run.dump());
    eprintln!("without the check the canary saw: {}", run.hits().join("\n"));
    assert!(run.hits().iter().any(|h| h.contains("/bp-audioworklet")), "{}", run.dump());
    assert_eq!(run.log_count("blocked a request below the page"), 0);
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
    // The control: the Views with their result did their work.
    assert_eq!(reports(&run.trace, "oscillate").count(), 2, "{}", run.dump());
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

/// A bound `postMessage` (`w.postMessage.bind(w)`, as `@mcp-ui/server`'s MCP Apps adapter sends)
/// arrives in WebKitGTK with `event.source` = the receiving proxy itself, so the proxy accepts
/// that source when the origin is its own. That lets nothing new through: another server's View
/// (server `b`, another origin) posting bound, plain and proxy-realm messages into server `a`'s
/// proxy, an opaque-origin nested frame posting into every proxy (its own View's too) reach no
/// View's session. Only this View's own realms (its frame, a nested frame on its origin) get
/// through its own proxy, as they always could. Since each View has a webview of its own,
/// another server's proxy is not even among the windows a View reaches, and the shell holds no
/// View frame at all.
#[test]
fn bound_post_message_from_another_origin_never_passes_a_proxy() {
    let dir = tempfile::tempdir().unwrap();
    let config = two_hostile_servers(&dir);
    let script = write_automation(
        &dir,
        r##"
        await until(() => document.querySelectorAll(".card .slot").length >= 2, 30000);
        await wait(3000);
        // Views are not frames of this page (each has its own webview): nothing to post into.
        const frames = document.querySelectorAll("iframe").length;
        await call("person-report", { data: JSON.stringify({ frames }) }, "a");
        "##,
    );
    let args =
        config_views(&config, &script, &[("a/honest", json!({})), ("b/attack-bound-post", json!({"waitMs": 1500}))]);
    let run = run_host(
        &args,
        |t| {
            t.iter().any(|r| r["msg"]["params"]["name"] == "person-report")
                && reported_then_honest(&["bound-post"], "v1", 4)(t)
        },
        LIMIT,
    );
    let r = run.report("bound-post");
    println!("bound-post: {r:#}");
    let person = person_reports(&run).pop().unwrap_or_else(|| panic!("the shell never posted:\n{}", run.dump()));
    assert_eq!(person["frames"], 0, "the shell holds a View's frame: {person}");
    // Each View has a webview of its own: another server's proxy is not even reachable.
    assert_eq!(r["others"].as_u64(), Some(0), "server a's proxy was among the frames b's View reaches: {r:#}");
    assert!(r["opaqueSent"].as_u64().unwrap() >= 3, "the opaque frame could not post: {r:#}");
    // Which forged messages reached a session, and whose.
    let arrived: Vec<(String, String)> = run
        .trace
        .iter()
        .filter(|rec| rec["dir"] == "view->host")
        .filter_map(|rec| {
            let id = rec["msg"]["id"].as_str()?.strip_prefix("fb-")?;
            Some((rec["view"].as_str().unwrap_or_default().to_owned(), id.to_owned()))
        })
        .collect();
    // The adapter's own way works (this is what the relaxed check is for)...
    assert!(arrived.contains(&("v2".into(), "own-bound".into())), "own bound post lost: {arrived:?}\n{}", run.dump());
    // ...and nothing else gets through but this View's own realms, into its own session.
    for (view, tag) in &arrived {
        assert!(
            view == "v2" && (tag == "own-bound" || tag == "nested-own"),
            "a forged message reached View {view}: {tag}\n{}",
            run.dump()
        );
    }
    let a_calls: Vec<_> = run.server_calls().into_iter().filter(|(v, _, _)| v == "v1").collect();
    assert!(a_calls.iter().all(|(_, _, args)| args.get("forged").is_none()), "{a_calls:?}");
    assert_no_hits(&run);
    run.assert_honest_kept_working("v1", run.report_time("bound-post"));
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
