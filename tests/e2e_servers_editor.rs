//! The servers editor changes the config file the app read: an entry edited in place (only its
//! server restarts), renamed, other config files imported, and a file that cannot be read shown
//! in the window until it is fixed and read again. Real WebKitGTK; the servers are the embedded
//! demo server behind `sh`, which writes a line per start (its `MARK` env and pid) to a log.

mod common;

use std::io::BufRead;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(90);

/// The demo server's entry, with `MARK` in its env: each start adds `MARK[ tag] PID` to `log`.
fn demo(mark: &str, tag: &str, log: &Path) -> Value {
    json!({"command": "sh", "args": ["-c", starter(tag, log)], "env": {"MARK": mark}})
}

/// The `sh -c` script of [`demo`].
fn starter(tag: &str, log: &Path) -> String {
    let bin = shell_words::quote(env!("CARGO_BIN_EXE_mcp-apps-host")).into_owned();
    let log = shell_words::quote(&log.to_string_lossy()).into_owned();
    format!("echo \"$MARK{tag} $$\" >> {log}; exec {bin} __demo-server")
}

/// The lines of the start log: `(mark, pid)` each, in order.
fn starts(log: &Path) -> Vec<(String, String)> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.rsplit_once(' ').map(|(m, p)| (m.to_owned(), p.to_owned())))
        .collect()
}

/// The `name` argument of the automation's `greet` call: what the script reports.
fn reported(trace: &[Value]) -> Option<String> {
    trace
        .iter()
        .find(|r| r["dir"] == "host->server" && r["msg"]["params"]["name"] == "greet")
        .and_then(|r| r["msg"]["params"]["arguments"]["name"].as_str().map(str::to_owned))
}

/// The script's helpers for the editor: an entry's state, and typing into an input.
const EDITOR: &str = r##"
const state = (key) => { const li = document.querySelector('#server-editor li[data-entry="' + key + '"]'); return li && li.querySelector(".state").textContent; };
const type = (id, text) => { const i = document.getElementById(id); i.value = text; i.dispatchEvent(new Event("input")); };
"##;

/// A running process (a zombie is not).
fn alive(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| s.rsplit_once(") ").is_some_and(|(_, rest)| !rest.starts_with('Z')))
}

/// An entry's command line edited: only that server restarts (the other keeps its process),
/// and the entry keeps its env and place. A rename stops the old-named server and starts the
/// new one; renaming onto a taken name is refused and said.
#[test]
fn an_edit_restarts_only_its_server_and_a_rename_moves_it() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("starts.log");
    let config = dir.path().join("mcp.json");
    let original = json!({"mcpServers": {"a": demo("a", "", &log), "b": demo("b", "", &log)}, "zOther": 1});
    std::fs::write(&config, serde_json::to_string_pretty(&original).unwrap()).unwrap();
    let edited = shell_words::join(["sh", "-c", &starter(" edited", &log)]);
    let script = automation(
        &dir,
        &format!(
            r##"{EDITOR}
        await until(() => state("a") === "ready" && state("b") === "ready");
        document.querySelector('button[data-edit="a"]').click();
        type("edit-server-line", {edited});
        document.getElementById("edit-server-save").click();
        await until(() => document.querySelector('#server-editor li[data-entry="a"] .server-what').textContent.includes("edited"));
        await until(() => state("a") === "ready");
        // Onto a taken name: refused, said.
        document.querySelector('button[data-edit="b"]').click();
        type("edit-server-name", "a");
        document.getElementById("edit-server-save").click();
        const refused = await until(() => document.getElementById("server-editor-error").textContent);
        document.querySelector('button[data-edit="b"]').click();
        type("edit-server-name", "c");
        document.getElementById("edit-server-save").click();
        await until(() => state("c") === "ready" && !state("b"));
        await call("greet", {{ name: refused }}, "c");
        "##,
            edited = serde_json::to_string(&edited).unwrap()
        ),
    );
    let old_b = std::cell::RefCell::new(None::<bool>);
    let run = run_host_until(
        &["run", "--config", config.to_str().unwrap(), "--automation", &script],
        |t| {
            let done = reported(t).is_some();
            if done && old_b.borrow().is_none() {
                // The old `b` is read while the host still runs (its end stops every server).
                let b = starts(&log).into_iter().find(|(m, _)| m == "b").map(|(_, p)| p);
                *old_b.borrow_mut() = Some(b.is_some_and(|p| alive(&p)));
            }
            done
        },
        LIMIT,
    );
    let said = reported(&run.trace).unwrap_or_else(|| panic!("the script did not finish; stderr:\n{}", run.stderr));
    assert!(said.contains("already has a server named \"a\""), "{said}");
    let marks: Vec<String> = starts(&log).into_iter().map(|(m, _)| m).collect();
    let count = |mark: &str| marks.iter().filter(|m| *m == mark).count();
    // Each started once; the edit started `a` again, edited, and not `b`; the rename started
    // `b`'s entry once more, as `c`.
    assert_eq!((count("a"), count("a edited"), count("b"), marks.len()), (1, 1, 2, 4), "{marks:?}");
    assert_eq!(*old_b.borrow(), Some(false), "the server under the old name was stopped");
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    let text = std::fs::read_to_string(&config).unwrap();
    let at = |key: &str| text.find(&format!("\"{key}\": {{"));
    assert!(at("a").unwrap() < at("c").unwrap() && at("b").is_none(), "{text}");
    assert_eq!(written["mcpServers"]["a"]["env"], json!({"MARK": "a"}), "{written}");
    assert_eq!(written["mcpServers"]["a"]["args"][1], json!(starter(" edited", &log)), "{written}");
    assert_eq!(written["mcpServers"]["c"], original["mcpServers"]["b"], "{written}");
    assert_eq!(written["zOther"], 1, "{written}");
}

/// A VS Code file and a desktop client's file imported into the app's: the clashing name gets
/// `-2`, the entry the loader refuses is said and left out, each server keeps its env and
/// starts; the imported files are only read.
#[test]
fn vs_code_and_desktop_client_files_are_imported_and_their_servers_start() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("starts.log");
    let config = dir.path().join("mcp.json");
    std::fs::write(&config, json!({"mcpServers": {"demo": demo("mine", "", &log)}}).to_string()).unwrap();
    let mut from_vscode = demo("vs", "", &log);
    from_vscode["type"] = json!("stdio");
    let vscode = dir.path().join("vscode-mcp.json");
    let vscode_text =
        json!({"servers": {"demo": from_vscode, "bad": {"type": "stdio", "command": ""}}, "inputs": []}).to_string();
    std::fs::write(&vscode, &vscode_text).unwrap();
    let desktop = dir.path().join("claude_desktop_config.json");
    let desktop_text =
        json!({"mcpServers": {"claude": demo("cl", "", &log)}, "globalShortcut": "Ctrl+Space"}).to_string();
    std::fs::write(&desktop, &desktop_text).unwrap();
    let script = automation(
        &dir,
        &format!(
            r##"{EDITOR}
        const said = [];
        await until(() => state("demo") === "ready");
        type("import-path", {vscode});
        document.getElementById("import-submit").click();
        said.push(await until(() => {{ const s = document.getElementById("status").textContent; return s.startsWith("Imported") && s; }}));
        await until(() => state("demo-2") === "ready");
        type("import-path", {desktop});
        document.getElementById("import-submit").click();
        await until(() => state("claude") === "ready");
        said.push(document.getElementById("status").textContent);
        await call("greet", {{ name: said.join(" | ") }}, "claude");
        "##,
            vscode = serde_json::to_string(&vscode.to_string_lossy()).unwrap(),
            desktop = serde_json::to_string(&desktop.to_string_lossy()).unwrap(),
        ),
    );
    let run = run_host_until(
        &["run", "--config", config.to_str().unwrap(), "--automation", &script],
        |t| reported(t).is_some(),
        LIMIT,
    );
    let said = reported(&run.trace).unwrap_or_else(|| panic!("the script did not finish; stderr:\n{}", run.stderr));
    assert!(said.contains("Imported 1 server") && said.contains("demo as demo-2 (that name was taken)"), "{said}");
    assert!(said.contains("skipped bad (") && said.contains("must not be empty"), "{said}");
    assert!(said.contains("Imported 1 server from") && said.contains(": claude"), "{said}");
    let mut marks: Vec<String> = starts(&log).into_iter().map(|(m, _)| m).collect();
    marks.sort();
    assert_eq!(marks, ["cl", "mine", "vs"], "each server started once, with its own env");
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    let names: Vec<&String> = written["mcpServers"].as_object().unwrap().keys().collect();
    assert_eq!(names.len(), 3, "{written}");
    assert_eq!(written["mcpServers"]["demo-2"]["env"], json!({"MARK": "vs"}), "{written}");
    assert_eq!(written["mcpServers"]["claude"]["env"], json!({"MARK": "cl"}), "{written}");
    assert!(written["mcpServers"].get("bad").is_none(), "{written}");
    assert_eq!(std::fs::read_to_string(&vscode).unwrap(), vscode_text);
    assert_eq!(std::fs::read_to_string(&desktop).unwrap(), desktop_text);
}

/// A config file that is not JSON: the app opens anyway, with no server, and its servers
/// editor says why; fixed on disk, "Reload config" starts its servers. `check` still fails on
/// it.
#[test]
fn a_broken_config_opens_the_window_with_its_error_and_reload_starts_it_once_fixed() {
    assert!(std::env::var_os("DISPLAY").is_some(), "these tests open windows: run them under a display");
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("starts.log");
    let config = dir.path().join("mcp.json");
    let fixed = json!({"mcpServers": {"a": demo("a", "", &log)}}).to_string();
    // A trailing comma: not JSON.
    std::fs::write(&config, format!("{},", fixed)).unwrap();
    let signal = dir.path().join("the-script-saw-the-error");
    let script = automation(
        &dir,
        &format!(
            r##"{EDITOR}
        const error = await until(() => document.getElementById("server-editor-error").textContent);
        const status = document.getElementById("status").textContent;
        // Tells the test (through the host's log) that the error was shown: it fixes the file.
        type("import-path", {signal});
        document.getElementById("import-submit").click();
        // The person presses Reload config until the fixed file is read.
        while (state("a") !== "ready") {{ document.getElementById("reload-config").click(); await wait(300); }}
        await call("greet", {{ name: error + " | " + status }}, "a");
        "##,
            signal = serde_json::to_string(&signal.to_string_lossy()).unwrap(),
        ),
    );
    let trace = dir.path().join("trace.jsonl");
    let mut host = Command::new(env!("CARGO_BIN_EXE_mcp-apps-host"))
        .args(["run", "--config", config.to_str().unwrap(), "--automation", &script, "--trace"])
        .arg(&trace)
        .env("MCP_APPS_HOST_LOG", "mcp_apps_host=info,warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (lines, seen) = std::sync::mpsc::channel::<String>();
    let stderr = host.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = lines.send(line);
        }
    });
    let signal_text = signal.to_string_lossy().into_owned();
    let started = Instant::now();
    let mut stderr = String::new();
    let mut fixed_it = false;
    let mut greeted = None;
    while started.elapsed() < LIMIT && greeted.is_none() {
        while let Ok(line) = seen.try_recv() {
            if !fixed_it && line.contains(&signal_text) {
                std::fs::write(&config, &fixed).unwrap();
                fixed_it = true;
            }
            stderr.push_str(&line);
            stderr.push('\n');
        }
        assert!(host.try_wait().unwrap().is_none(), "the app exited; stderr:\n{stderr}");
        let records: Vec<Value> = std::fs::read_to_string(&trace)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        greeted = reported(&records);
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = host.kill();
    let _ = host.wait();
    assert!(fixed_it, "the script never showed the error; stderr:\n{stderr}");
    let said = greeted.unwrap_or_else(|| panic!("the fixed file's server never started; stderr:\n{stderr}"));
    assert!(said.contains("not valid JSON") && said.contains("fix the file first"), "{said}");
    assert!(said.contains("Reload config"), "the status line says what to do: {said}");
    assert_eq!(starts(&log).len(), 1, "its server started once");

    // Not the app: a broken file still fails the command.
    std::fs::write(&config, format!("{},", fixed)).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_mcp-apps-host"))
        .args(["check", "--config", config.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success(), "check fails on a broken config");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not valid JSON"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Two entries with one command line (as an import brings in) are two programs: the editor and
/// the servers panel say what tells each apart (its folder, its env), so the person can see
/// which is which (SECURITY.md, "A server's identity"). The control: an entry whose command line
/// no other has shows nothing more.
#[test]
fn entries_that_share_a_command_line_say_what_tells_them_apart() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("starts.log");
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let config = dir.path().join("mcp.json");
    let mut imported = demo("b", "", &log);
    imported["cwd"] = json!(elsewhere);
    let servers = json!({"mcpServers": {"a": demo("a", "", &log), "b": imported, "c": demo("c", " own", &log)}});
    std::fs::write(&config, servers.to_string()).unwrap();
    let script = automation(
        &dir,
        &format!(
            r##"{EDITOR}
        await until(() => state("a") === "ready" && state("b") === "ready" && state("c") === "ready");
        const said = (key) => document.querySelector('#server-editor [data-differs="' + key + '"]')?.textContent ?? null;
        const panel = (key) => document.querySelector('#tools .server[data-server="' + key + '"] .server-differs')?.textContent ?? null;
        await call("greet", {{ name: JSON.stringify({{ a: said("a"), b: said("b"), c: said("c"), panelB: panel("b") }}) }}, "a");
        "##
        ),
    );
    let run = run_host_until(
        &["run", "--config", config.to_str().unwrap(), "--automation", &script],
        |t| reported(t).is_some(),
        LIMIT,
    );
    let said: Value = serde_json::from_str(
        &reported(&run.trace).unwrap_or_else(|| panic!("the script did not finish; stderr:\n{}", run.stderr)),
    )
    .unwrap();
    let here = std::env::current_dir().unwrap().canonicalize().unwrap();
    let there = elsewhere.canonicalize().unwrap();
    let a = format!("in {}, env: MARK (other values)", here.display());
    let b = format!("in {}, env: MARK (other values)", there.display());
    assert_eq!(said, json!({"a": a, "b": b, "c": null, "panelB": b}));
}

/// The editor finds Claude Desktop's and VS Code's files where those apps keep them and offers
/// each with what it would bring; a server the person has already (the same command line and
/// environment) is not imported again, and once imported, the file offers nothing new.
#[test]
fn the_editor_offers_other_apps_files_and_imports_a_server_once() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("starts.log");
    let config = dir.path().join("mcp.json");
    std::fs::write(&config, json!({"mcpServers": {"demo": demo("mine", "", &log)}}).to_string()).unwrap();
    let apps = dir.path().join("config-home");
    let claude = apps.join("Claude/claude_desktop_config.json");
    std::fs::create_dir_all(claude.parent().unwrap()).unwrap();
    let claude_servers = json!({"mcpServers": {"claude": demo("cl", "", &log), "same": demo("mine", "", &log)}});
    std::fs::write(&claude, claude_servers.to_string()).unwrap();
    let vscode = apps.join("Code/User/mcp.json");
    std::fs::create_dir_all(vscode.parent().unwrap()).unwrap();
    let mut from_vscode = demo("vs", "", &log);
    from_vscode["type"] = json!("stdio");
    std::fs::write(&vscode, json!({"servers": {"vs": from_vscode}}).to_string()).unwrap();
    let script = automation(
        &dir,
        &format!(
            r##"{EDITOR}
        const offers = () => Array.from(document.querySelectorAll("#import-found li")).map((li) =>
            li.dataset.client + " = " + li.querySelector(".found-count").textContent + " = " + li.querySelector("button").textContent + (li.querySelector("button").disabled ? " (off)" : ""));
        const said = [];
        await until(() => state("demo") === "ready" && offers().length === 2);
        said.push(offers().join(" ; "));
        document.querySelector('#import-found li[data-client="Claude Desktop"] button').click();
        await until(() => state("claude") === "ready");
        said.push(document.getElementById("status").textContent);
        await until(() => offers().some((o) => o.startsWith("Claude Desktop") && o.endsWith("(off)")));
        said.push(offers().join(" ; "));
        await call("greet", {{ name: said.join(" | ") }}, "claude");
        "##
        ),
    );
    let apps_dir = apps.to_string_lossy().into_owned();
    let run = run_host_until_env(
        &["run", "--config", config.to_str().unwrap(), "--automation", &script],
        &[("XDG_CONFIG_HOME", &apps_dir)],
        |t| reported(t).is_some(),
        LIMIT,
    );
    let said = reported(&run.trace).unwrap_or_else(|| panic!("the script did not finish; stderr:\n{}", run.stderr));
    let parts: Vec<&str> = said.split(" | ").collect();
    assert_eq!(
        parts[0],
        "Claude Desktop = 2 servers, 1 already yours = Import 1 server ; VS Code = 1 server = Import 1 server",
        "{said}"
    );
    assert!(parts[1].starts_with("Imported 1 server from") && parts[1].contains(": claude"), "{said}");
    assert!(parts[1].contains(r#"skipped same (the same server is in your servers as "demo")"#), "{said}");
    assert!(parts[2].starts_with("Claude Desktop = 2 servers, all already yours = Nothing new (off)"), "{said}");
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    let mut names: Vec<&String> = written["mcpServers"].as_object().unwrap().keys().collect();
    names.sort();
    assert_eq!(names, ["claude", "demo"], "{written}");
    let mut marks: Vec<String> = starts(&log).into_iter().map(|(m, _)| m).collect();
    marks.sort();
    assert_eq!(marks, ["cl", "mine"], "the person's server started once, the imported one once");
    assert_eq!(std::fs::read_to_string(&claude).unwrap(), claude_servers.to_string(), "only read");
}

/// A server removed in the editor and added again in the same run starts with empty storage:
/// its first View's `localStorage` and IndexedDB (kept on disk, and held in WebKit's memory for
/// the run) are gone with the removal, and nothing of them is written back.
#[test]
fn a_server_removed_and_added_again_starts_with_empty_storage() {
    let dir = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let data_home = data.path().to_string_lossy().into_owned();
    let config = dir.path().join("mcp.json");
    let fixture = fixtures().join("chat-app-server.mjs");
    let entry = json!({"command": "node", "args": [fixture]});
    std::fs::write(&config, json!({"mcpServers": {"orders": entry}}).to_string()).unwrap();
    let line = shell_words::join(["node", fixture.to_str().unwrap()]);
    let script = automation(
        &dir,
        &format!(
            r##"{EDITOR}
        await until(() => state("orders") === "ready");
        await call("show-order", {{ order: "42" }}, "orders");
        // The View stores, reports and messages (the test reads its reports in the trace).
        await wait(5000);
        const remove = document.querySelector('button[data-remove="orders"]');
        remove.click();
        remove.click();
        await until(() => !state("orders"));
        type("add-server-name", "orders");
        type("add-server-line", {line});
        document.querySelector("#add-server button[type=submit]").click();
        await until(() => state("orders") === "ready");
        await call("show-order", {{ order: "42" }}, "orders");
        "##,
            line = serde_json::to_string(&line).unwrap()
        ),
    );
    let shown = |t: &[Value]| -> Vec<Value> {
        t.iter()
            .filter(|r| r["dir"] == "view->host" && r["msg"]["params"]["name"] == "report")
            .map(|r| r["msg"]["params"]["arguments"]["results"].clone())
            .filter(|r| r["phase"] == "shown")
            .collect()
    };
    let kept_dir = data.path().join("mcp-apps-host/view-storage");
    let files = || -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&kept_dir)
            .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        names.sort();
        names
    };
    // The first View's files, read while the host runs (before the removal).
    let first_files = std::cell::RefCell::new(None::<Vec<String>>);
    let run = run_host_until_env(
        &["run", "--config", config.to_str().unwrap(), "--automation", &script],
        &[("XDG_DATA_HOME", &data_home)],
        |t| {
            let reports = shown(t);
            if reports.len() == 1 && first_files.borrow().is_none() {
                *first_files.borrow_mut() = Some(files());
            }
            reports.len() >= 2
        },
        LIMIT,
    );
    let reports = shown(&run.trace);
    assert_eq!(reports.len(), 2, "both Views reported; stderr:\n{}", run.stderr);
    assert_eq!((reports[0]["visitsBefore"].as_i64(), reports[0]["idb"]["exists"].as_bool()), (Some(0), Some(false)));
    let first_files = first_files.borrow().clone().unwrap();
    assert_eq!(first_files.len(), 2, "the first View's items and databases were kept: {first_files:?}");
    // The same server again (the same identity, so the same origin and files): nothing of the
    // first View's.
    let again = &reports[1];
    assert_eq!(again["visitsBefore"].as_i64(), Some(0), "{again}");
    assert_eq!(again["idb"], json!({"exists": false, "before": null}), "{again}");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(files(), first_files, "the same origin's files, now the new View's");
}
