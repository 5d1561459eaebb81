//! Several servers in one window, a server that cannot start beside one that works, and a
//! server's elicitation answered in the app's form: real WebKitGTK, real npm servers.

mod common;
#[allow(dead_code)]
mod keyring_support;
#[allow(dead_code)]
mod server_support;

use std::time::Duration;

use common::*;
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(60);

fn everything() -> String {
    node_server("node_modules/@modelcontextprotocol/server-everything/dist/index.js", "stdio")
}

/// The text of the result of the `n`th call of `tool` (as the trace recorded it).
fn result_text(run: &Run, tool: &str, n: usize) -> Option<String> {
    let mut calls = 0;
    let mut pending = false;
    for r in &run.trace {
        let msg = &r["msg"];
        if r["dir"] == "host->server" && msg["params"]["name"] == tool {
            pending = calls == n;
            calls += 1;
        } else if pending && r["dir"] == "server->host" && msg["method"] == "tools/call" {
            let blocks = msg["result"]["content"].as_array()?;
            return Some(blocks.iter().filter_map(|b| b["text"].as_str()).collect::<Vec<_>>().join("\n"));
        }
    }
    None
}

#[test]
fn two_servers_share_the_window_and_the_picker_tells_same_named_tools_apart() {
    let dir = tempfile::tempdir().unwrap();
    // Both servers have `echo`; the picker lists each under its server.
    let script = automation(
        &dir,
        r##"
        await until(() => document.querySelectorAll("#tools .server.ready").length === 2);
        const servers = Array.from(document.querySelectorAll("#tools .server")).map((s) => s.dataset.server);
        const echoes = Array.from(document.querySelectorAll('#tools button[data-tool="echo"]')).map((b) => b.dataset.server);
        await call("echo", { message: "picked " + JSON.stringify({ servers, echoes }) }, servers[0]);
        "##,
    );
    let (everything, fixture) = (everything(), node_server("fault-server-stdio.mjs", "ok fixture"));
    let run = run_host_until(
        &["run", "--stdio", &everything, "--stdio", &fixture, "--automation", &script],
        |t| t.iter().any(|r| r["dir"] == "server->host" && r["msg"]["method"] == "tools/call"),
        LIMIT,
    );
    let text = result_text(&run, "echo", 0).unwrap_or_else(|| panic!("no echo result; stderr:\n{}", run.stderr));
    // server-everything answered ("Echo: ..."), not the fixture ("fixture: ..."): the call went
    // to the server whose button was pressed.
    assert!(text.starts_with("Echo: picked "), "{text}");
    let seen: Value = serde_json::from_str(text.trim_start_matches("Echo: picked ")).unwrap();
    assert_eq!(seen["servers"].as_array().unwrap().len(), 2, "{seen}");
    assert_eq!(seen["echoes"], seen["servers"], "one `echo` per server, in server order: {seen}");
}

#[test]
fn a_server_that_cannot_start_does_not_stop_the_others() {
    let run = run_host(
        &[
            "run",
            "--stdio",
            "/nonexistent/mcp-server --stdio",
            "--stdio",
            &basic_vanillajs(),
            "--tool",
            "get-time",
            "--exit-after",
            "initialized",
        ],
        LIMIT,
    );
    assert_eq!(run.code, Some(0), "the working server's View opened; stderr:\n{}", run.stderr);
    assert!(
        run.stderr.contains("warning: could not start MCP server `/nonexistent/mcp-server --stdio`"),
        "{}",
        run.stderr
    );
    // When no server works at all, the run fails with each reason.
    let none = run_host(&["run", "--stdio", "/nonexistent/a", "--stdio", "/nonexistent/b"], LIMIT);
    assert_eq!(none.code, Some(1), "{}", none.stderr);
    assert!(none.stderr.contains("/nonexistent/a") && none.stderr.contains("/nonexistent/b"), "{}", none.stderr);
}

#[test]
fn an_elicitation_is_answered_in_the_form_and_escape_cancels_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let script = automation(
        &dir,
        r##"
        const box = document.getElementById("elicit");
        await call("trigger-elicitation-request");
        await until(() => !box.hidden);
        // The form is built from the requested schema: defaults shown, required checked first.
        const defaults = { integer: document.getElementById("elicit-integer").value, pets: document.getElementById("elicit-legacyTitledEnum").selectedOptions[0].textContent };
        await until(() => !document.getElementById("elicit-accept").disabled);
        document.getElementById("elicit-accept").click();
        const required = document.getElementById("elicit-error").textContent;
        document.getElementById("elicit-name").value = "Grace Hopper";
        document.getElementById("elicit-integer").value = "7";
        document.getElementById("elicit-accept").click();
        await until(() => box.hidden);
        await wait(500);
        await call("trigger-elicitation-request");
        await until(() => !box.hidden);
        document.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape", bubbles: true }));
        await until(() => box.hidden);
        await wait(500);
        await call("echo", { message: JSON.stringify({ defaults, required }) });
        "##,
    );
    let server = everything();
    let run = run_host_until(
        &["run", "--stdio", &server, "--automation", &script],
        |t| t.iter().any(|r| r["dir"] == "host->server" && r["msg"]["params"]["name"] == "echo"),
        LIMIT,
    );
    let accepted = result_text(&run, "trigger-elicitation-request", 0)
        .unwrap_or_else(|| panic!("no first result; stderr:\n{}", run.stderr));
    assert!(accepted.contains("Name: Grace Hopper") && accepted.contains("Favorite Integer: 7"), "{accepted}");
    let cancelled = result_text(&run, "trigger-elicitation-request", 1)
        .unwrap_or_else(|| panic!("no second result; stderr:\n{}", run.stderr));
    assert!(cancelled.to_lowercase().contains("cancel"), "{cancelled}");
    let echo = run
        .dir("host->server")
        .find(|m| m["params"]["name"] == "echo")
        .and_then(|m| m["params"]["arguments"]["message"].as_str())
        .map(|t| serde_json::from_str::<Value>(t).unwrap())
        .unwrap();
    assert_eq!(echo["defaults"]["integer"], "42", "{echo}");
    assert_eq!(echo["defaults"]["pets"], "Cats", "enumNames label the choices: {echo}");
    assert!(echo["required"].as_str().unwrap().contains("is required"), "{echo}");
}

#[test]
fn a_view_outlives_its_servers_crash_and_calls_again_after_the_restart() {
    // The View asks its server to crash, then keeps calling: errors (never a hang) until the
    // host restarts the server on demand, then an answer from the new process.
    let server = node_server("fault-server.mjs", "dies-while-open");
    let answered_by_new = |t: &[Value]| {
        t.iter().any(|r| {
            r["dir"] == "host->view"
                && r["msg"]["result"]["content"][0]["text"].as_str().is_some_and(|s| s.contains("ran in"))
        })
    };
    let run = run_host_until(&["run", "--stdio", &server, "--tool", "fault"], answered_by_new, LIMIT);
    assert!(answered_by_new(&run.trace), "the View never got an answer after the restart; stderr:\n{}", run.stderr);
    // Every request the View made got an answer: errors while the server was down, no hang.
    let asked: Vec<&Value> = run.dir("view->host").filter(|m| m["method"] == "tools/call").map(|m| &m["id"]).collect();
    let answers: Vec<&Value> = run
        .dir("host->view")
        .filter(|m| m.get("id").is_some() && (m.get("result").is_some() || m.get("error").is_some()))
        .collect();
    for id in &asked {
        assert!(answers.iter().any(|a| &&a["id"] == id), "request {id} got no answer");
    }
    let errors: Vec<String> =
        answers.iter().filter_map(|a| a["error"]["message"].as_str().map(str::to_owned)).collect();
    assert!(errors.iter().any(|e| e.contains("asked me to crash")), "the crash is explained: {errors:?}");
    assert!(errors.iter().any(|e| e.contains("next restart in")), "calls during the backoff fail fast: {errors:?}");
    // The host's own call ran in the first process; the View's last answer came from another.
    let pid = |text: &str| text.rsplit(' ').next().map(str::to_owned);
    let first = result_text(&run, "fault", 0).and_then(|t| pid(&t)).expect("the host's call was answered");
    let last = answers.iter().rev().find_map(|a| a["result"]["content"][0]["text"].as_str()).and_then(pid).unwrap();
    assert_ne!(first, last, "a new server process answered");
    assert!(run.stderr.contains("server failed"), "the failure is logged:\n{}", run.stderr);
}

#[test]
fn a_server_behind_sign_in_shows_a_button_and_works_after_the_browser_step() {
    let oauth = server_support::Server::fixture("oauth-server.mjs", &[]);
    let url = oauth.url("/mcp");
    let data = tempfile::tempdir().unwrap();
    let data_home = data.path().to_str().unwrap();
    let opener = node_server("follow-redirect.mjs", "");
    let dir = tempfile::tempdir().unwrap();
    let script = automation(
        &dir,
        r##"
        const button = await until(() => document.querySelector("#tools button[data-sign-in]"));
        button.click();
        await call("whoami", { }, undefined);
        "##,
    );
    let called = |t: &[Value]| t.iter().any(|r| r["dir"] == "server->host" && r["msg"]["method"] == "tools/call");
    let run = run_host_until_env(
        &["run", "--url", &url, "--open-with", &opener, "--automation", &script],
        &[("XDG_DATA_HOME", data_home), ("DBUS_SESSION_BUS_ADDRESS", keyring_support::NO_BUS)],
        called,
        LIMIT,
    );
    let text = result_text(&run, "whoami", 0).unwrap_or_else(|| panic!("no result; stderr:\n{}", run.stderr));
    assert_eq!(text, "called with token #1", "the call went out signed in");
    assert!(run.stderr.contains("sign-in required") && run.stderr.contains("signed in"), "{}", run.stderr);
    // No Secret Service on the bus: the token is kept in a file for the owner only, and it is in
    // neither the trace nor the log.
    let tokens: Vec<std::path::PathBuf> = std::fs::read_dir(data.path().join("mcp-apps-host/tokens"))
        .expect("a token directory")
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(tokens.len(), 1, "{tokens:?}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&tokens[0]).unwrap().permissions().mode() & 0o777, 0o600);
    }
    let trace_text = serde_json::to_string(&run.trace).unwrap();
    for line in oauth.lines_starting("TOKEN ") {
        let token = line.rsplit(' ').next().unwrap();
        assert!(!trace_text.contains(token) && !run.stderr.contains(token), "token {token} leaked");
    }
    // `logout` forgets it.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-apps-host"))
        .args(["logout", "--url", &url])
        .env("XDG_DATA_HOME", data_home)
        .env("DBUS_SESSION_BUS_ADDRESS", keyring_support::NO_BUS)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && said.contains("signed out of"), "{said}");
    assert!(!tokens[0].exists(), "the token file is gone");
}

#[test]
fn a_views_call_on_an_expired_session_signs_in_again_and_completes() {
    // Tokens live 2 s and cannot be refreshed: the View's call 3 s after it opened hits a 401,
    // the host signs in again (the browser stand-in approves), and the call completes.
    let oauth = server_support::Server::fixture("oauth-server.mjs", &["--expires", "2", "--no-refresh"]);
    let url = oauth.url("/mcp");
    let data = tempfile::tempdir().unwrap();
    let opener = node_server("follow-redirect.mjs", "");
    let answered = |t: &[Value]| {
        t.iter().any(|r| {
            r["dir"] == "host->view"
                && r["msg"]["result"]["content"][0]["text"].as_str().is_some_and(|s| s.starts_with("called with token"))
        })
    };
    let run = run_host_until_env(
        &["run", "--url", &url, "--open-with", &opener, "--tool", "signed-in-view"],
        &[("XDG_DATA_HOME", data.path().to_str().unwrap()), ("DBUS_SESSION_BUS_ADDRESS", keyring_support::NO_BUS)],
        answered,
        LIMIT,
    );
    assert!(answered(&run.trace), "the View's call never completed; stderr:\n{}", run.stderr);
    let text = run
        .dir("host->view")
        .find_map(|m| m["result"]["content"][0]["text"].as_str().filter(|s| s.starts_with("called with")))
        .unwrap();
    assert_eq!(text, "called with token #2", "the call went out with the new sign-in's token");
    assert_eq!(oauth.lines_starting("TOKEN authorization_code").len(), 2, "{:?}", oauth.output());
    // The View got no error on the way: it only waited.
    assert!(run.dir("host->view").all(|m| m.get("error").is_none()), "{:?}", run.trace);
}

/// `node .../viewport-app/index.mjs` and `node .../server-everything/dist/index.js` are both
/// `index` by their command lines: the picker and the card's badge show the names the host gave
/// them (`index`, `index (2)`), which `--tool SERVER/TOOL` and the picker's buttons find them
/// by; each server's own `serverInfo` title stands beside its name, never instead of it (a
/// server may not rename itself: SECURITY.md, "A server's identity").
#[test]
fn servers_named_only_by_their_command_line_keep_that_name_and_show_their_own_beside_it() {
    let dir = tempfile::tempdir().unwrap();
    let script = automation(
        &dir,
        r##"
        await until(() => document.querySelectorAll("#tools .server.ready").length === 2);
        const servers = Array.from(document.querySelectorAll("#tools .server")).map((s) =>
          ({ key: s.dataset.server, label: s.querySelector(".server-name").textContent,
             own: s.querySelector(".calls-itself")?.textContent }));
        const badge = (await until(() => document.querySelector(".card[data-view] .origin"))).textContent;
        await call("note", { text: JSON.stringify({ servers, badge }) }, "index");
        "##,
    );
    let (viewport, everything) = (node_server("viewport-app/index.mjs", ""), everything());
    let run = run_host_until(
        &["run", "--stdio", &viewport, "--stdio", &everything, "--tool", "index/fill", "--automation", &script],
        |t| t.iter().any(|r| r["dir"] == "host->server" && r["msg"]["params"]["name"] == "note"),
        LIMIT,
    );
    let seen: Value = run
        .dir("host->server")
        .find(|m| m["params"]["name"] == "note")
        .and_then(|m| m["params"]["arguments"]["text"].as_str())
        .map(|t| serde_json::from_str(t).unwrap())
        .unwrap_or_else(|| panic!("no note; stderr:\n{}", run.stderr));
    assert_eq!(
        seen["servers"],
        serde_json::json!([
            {"key": "index", "label": "index", "own": "(calls itself \"Viewport Filler\")"},
            {"key": "index (2)", "label": "index (2)",
             "own": "(calls itself \"Everything Reference Server\")"},
        ]),
        "{seen}"
    );
    // The View opened with `--tool index/fill` wears the name its server was given, its own beside.
    assert_eq!(seen["badge"], "index (calls itself \"Viewport Filler\")", "{seen}");
    assert!(run.stderr.contains("label=index "), "logs name it too:\n{}", run.stderr);
}

/// A View opened again starts from the copy of its UI resource that the last View of it got,
/// without waiting for the server; the resource is read again in the background for the next.
#[test]
fn a_view_opened_again_starts_from_the_kept_ui_resource_and_it_is_read_again() {
    let dir = tempfile::tempdir().unwrap();
    let script = automation(
        &dir,
        r##"
        await call("fault");
        await until(() => document.querySelectorAll(".card .slot").length === 1 && !document.querySelector(".card.pending"));
        await wait(1000);
        await call("fault");
        "##,
    );
    let server = node_server("fault-server.mjs", "ok");
    let read_by = |r: &Value, view: Option<&str>| {
        r["dir"] == "host->server" && r["msg"]["method"] == "resources/read" && r["view"].as_str() == view
    };
    let run = run_host_until(
        &["run", "--stdio", &server, "--automation", &script],
        |t| {
            let inits = t
                .iter()
                .filter(|r| r["dir"] == "view->host" && r["msg"]["method"] == "ui/notifications/initialized")
                .count();
            inits >= 2
                && t.iter().any(|r| {
                    r["dir"] == "server->host" && r["msg"]["method"] == "resources/read" && r["view"].is_null()
                })
        },
        LIMIT,
    );
    let reads = |view| run.trace.iter().filter(|r| read_by(r, view)).count();
    assert_eq!(reads(Some("v1")), 1, "the first View reads its resource; stderr:\n{}", run.stderr);
    assert_eq!(reads(Some("v2")), 0, "the second starts from the kept copy");
    assert_eq!(reads(None), 1, "and the resource is read again, for the next View");
    // The second View got the same document and completed its handshake with it.
    let html = |view: &str| {
        run.trace
            .iter()
            .find(|r| r["view"] == view && r["dir"] == "host->proxy")
            .map(|r| r["msg"]["params"]["html"].clone())
            .unwrap_or_else(|| panic!("{view} got no resource; stderr:\n{}", run.stderr))
    };
    assert_eq!(html("v1"), html("v2"));
    assert!(html("v2").as_str().is_some_and(|h| h.contains("fault View")));
}

/// A server that takes long to start says so in the window, with how long it has been starting
/// (counted on each second), and the person can stop the wait: its process ends, the server is
/// failed in words with Retry, and Retry starts it again. The other server works throughout.
#[test]
fn a_slow_server_shows_how_long_it_has_been_starting_and_can_be_cancelled_and_retried() {
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids.log");
    let config = dir.path().join("mcp.json");
    let never = format!("echo $$ >> {}; exec sleep 600", shell_words::quote(&pids.to_string_lossy()));
    let servers = serde_json::json!({"mcpServers": {
        "slow": {"command": "sh", "args": ["-c", never]},
        "demo": {"command": env!("CARGO_BIN_EXE_mcp-apps-host"), "args": ["__demo-server"]},
    }});
    std::fs::write(&config, servers.to_string()).unwrap();
    let script = automation(
        &dir,
        r##"
        const head = () => document.querySelector('#tools li.server[data-server="slow"]');
        const waiting = () => { const p = head() && head().querySelector(".server-starting"); return p && p.textContent; };
        const said = [];
        await until(() => /^Starting for [1-9] s\./.test(waiting() || ""));
        said.push(waiting());
        const first = waiting();
        await until(() => waiting() && waiting() !== first);
        said.push(waiting());
        head().querySelector("button[data-cancel-start]").click();
        await until(() => head() && head().querySelector(".state").textContent === "failed");
        said.push(head().querySelector(".server-reason").textContent);
        const retry = head().querySelector("button[data-restart]");
        said.push(retry.textContent);
        retry.click();
        await until(() => waiting());
        said.push(waiting());
        await call("greet", { name: said.join(" | ") }, "demo");
        "##,
    );
    let run = run_host_until(
        &["run", "--config", config.to_str().unwrap(), "--automation", &script],
        |t| t.iter().any(|r| r["dir"] == "host->server" && r["msg"]["params"]["name"] == "greet"),
        LIMIT,
    );
    let said = run
        .trace
        .iter()
        .find(|r| r["dir"] == "host->server" && r["msg"]["params"]["name"] == "greet")
        .and_then(|r| r["msg"]["params"]["arguments"]["name"].as_str().map(str::to_owned))
        .unwrap_or_else(|| panic!("the script did not finish; stderr:\n{}", run.stderr));
    let steps: Vec<&str> = said.split(" | ").collect();
    assert!(steps[0].starts_with("Starting for ") && steps[1].starts_with("Starting for "), "{said}");
    assert_ne!(steps[0], steps[1], "the time counts on: {said}");
    assert_eq!(steps[2], "You stopped its start.", "{said}");
    assert_eq!(steps[3], "Retry", "{said}");
    assert!(steps[4].starts_with("Starting for 0 s") || steps[4].starts_with("Starting for 1 s"), "{said}");
    // The cancelled start's process ended with the cancel; the retry started another.
    let started: Vec<String> = std::fs::read_to_string(&pids).unwrap().lines().map(str::to_owned).collect();
    assert_eq!(started.len(), 2, "one process per start: {started:?}");
    let alive = |pid: &str| {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|s| s.rsplit_once(") ").is_some_and(|(_, rest)| !rest.starts_with('Z')))
    };
    assert!(!alive(&started[0]), "the cancelled start's process {} is gone", started[0]);
}
