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
//!
//! This file holds the sandbox and the network: frames, origins, storage, the CSP, the native
//! IPC, the protocol. The person's decisions are in `e2e_hostile_consent.rs`, floods and stalls
//! in `e2e_hostile_bounds.rs`.

mod common;

use std::process::Command;

use common::hostile::*;
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
