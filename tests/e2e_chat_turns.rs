//! End to end: a conversation's turns cut short or redone (a real display, the local model
//! server `fixtures/model-server.mjs`, the App SDK View of `fixtures/chat-app-server.mjs`): a
//! View flooding the conversation, a crash or a cut while the model writes a call, a shell crash
//! before an answer, the person's stop, retry, edit, rename and delete.

mod common;
#[allow(dead_code)]
mod keyring_support;
#[path = "common/model_server.rs"]
mod model_server;

use std::process::Command;
use std::time::Duration;

use common::chat::*;
use common::*;
use model_server::*;
use serde_json::Value;

/// A hostile View floods a conversation (2,000 model-context updates and 200 messages at once)
/// next to an honest View: the model gets a bounded number of turns, each App's context once
/// (the latest), and the honest View keeps working.
#[test]
fn a_view_flooding_the_conversation_reaches_the_model_bounded() {
    use common::hostile::{honest_calls, hostile, reports};
    let model = ModelServer::start();
    let mut args = vec!["run".to_owned(), "--stdio".into(), hostile(None), "--consent".into(), "allow".into()];
    args.extend(model.model_args("openai"));
    for tool in ["attack-conversation-flood", "honest"] {
        args.extend(["--tool".to_owned(), tool.into(), "--args".into(), "{}".into()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let data_home = model.data_home();
    let run = run_host_until_env(
        &args,
        &[("XDG_DATA_HOME", &data_home)],
        |t| {
            let Some((at, _)) = reports(t, "conversation-flood").next() else { return false };
            honest_calls(t, &["v2".to_owned()]).iter().filter(|c| **c > at + 3000.0).count() >= 3
        },
        LIMIT,
    );
    let (at, report) = reports(&run.trace, "conversation-flood")
        .next()
        .map(|(t, r)| (t, r.clone()))
        .unwrap_or_else(|| panic!("{}", run.stderr));
    assert!(
        honest_calls(&run.trace, &["v2".to_owned()]).iter().filter(|c| **c > at).count() >= 3,
        "the honest View stopped: {}",
        run.stderr
    );
    let requests = model.requests();
    eprintln!(
        "conversation flood: {} model requests; of 200 messages {} accepted, {} declined (the conversation was full), {} refused by the bridge",
        requests.len(),
        report["messagesAccepted"],
        report["messagesDeclined"],
        report["messagesRefused"]
    );
    // One turn answering, at most 8 waiting: the rest of the 200 never reach the model.
    assert!(
        !requests.is_empty() && requests.len() <= 9,
        "{} model requests for a flood of 200 messages",
        requests.len()
    );
    for r in &requests {
        let system = r["body"]["messages"][0]["content"].as_str().unwrap_or_default();
        assert_eq!(system.matches("flood context").count(), 1, "one context per App, the latest: {system}");
    }
    let count = |k: &str| report[k].as_u64().unwrap_or(0);
    assert_eq!(count("messagesAccepted") + count("messagesDeclined") + count("messagesRefused"), 200, "{report:#}");
    // The View is told the truth: a message the model never gets is declined.
    assert!(count("messagesAccepted") <= 9, "{report:#}");
    assert_eq!(run.stderr.matches("panicked").count(), 0);
}

/// Every web process is killed while the model is still writing a UI tool's arguments: the
/// View of that call is not reopened on its own (a reopened View would call the tool itself,
/// unasked and with no arguments); the model's call is made once, with the model's arguments.
#[test]
fn a_crash_while_the_model_writes_a_call_never_calls_the_tool_without_it() {
    use common::hostile::{run_host_watch, web_processes};
    let model = ModelServer::start();
    let mut args = vec!["run".to_owned(), "--stdio".into(), chat_server(), "--consent".into(), "allow".into()];
    args.extend(model.model_args("openai"));
    args.extend(["--prompt".to_owned(), "slow show order".into()]);
    let killed = std::cell::Cell::new(false);
    let data_home = model.data_home();
    let run = run_host_watch(
        &args,
        &[("XDG_DATA_HOME", &data_home)],
        |pid, trace| {
            if !killed.get() {
                let partial = trace
                    .iter()
                    .any(|r| r["dir"] == "host->view" && r["msg"]["method"] == "ui/notifications/tool-input-partial");
                if partial {
                    for p in web_processes(pid) {
                        let _ = Command::new("kill").args(["-9", &p.to_string()]).status();
                    }
                    killed.set(true);
                }
                return false;
            }
            trace.iter().filter(|r| r["dir"] == "model->host").count() >= 1
        },
        LIMIT,
    );
    assert!(killed.get(), "the web processes were never killed:\n{}", run.stderr);
    assert!(run.alive_at_end, "the host died");
    let calls: Vec<&Value> = run
        .trace
        .iter()
        .filter(|r| {
            r["dir"] == "host->server"
                && r["msg"]["method"] == "tools/call"
                && r["msg"]["params"]["name"] == "show-order"
        })
        .map(|r| &r["msg"]["params"]["arguments"])
        .collect();
    assert_eq!(calls.len(), 1, "the tool was called {} times: {calls:?}\n{}", calls.len(), run.stderr);
    assert_eq!(calls[0]["order"], 42, "the model's arguments: {}", calls[0]);
    assert!(calls[0]["note"].is_string());
    let second = &model.requests()[1]["body"]["messages"];
    assert!(
        message_text(second.as_array().unwrap().last().unwrap()).contains("order 42: 3 items"),
        "the result reached the model"
    );
}

/// The model's answer runs out of tokens in the middle of a UI tool's arguments: the View that
/// opened for the call is told it is cancelled, the tool is not called, and the model gets an
/// error result for the broken call.
#[test]
fn a_call_cut_off_mid_arguments_cancels_its_view_and_is_not_made() {
    let model = ModelServer::start();
    let mut args = vec!["run".to_owned(), "--stdio".into(), chat_server(), "--consent".into(), "allow".into()];
    args.extend(model.model_args("anthropic"));
    args.extend(["--prompt".to_owned(), "cut order".into()]);
    let data_home = model.data_home();
    let cancelled = |t: &[Value]| {
        t.iter().any(|r| r["dir"] == "host->view" && r["msg"]["method"] == "ui/notifications/tool-cancelled")
    };
    let run = run_host_until_env(
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
        &[("XDG_DATA_HOME", &data_home)],
        |t| cancelled(t) && t.iter().any(|r| r["dir"] == "model->host"),
        Duration::from_secs(40),
    );
    assert!(
        run.dir("host->view").any(|m| m["method"] == "ui/notifications/tool-input-partial"),
        "the View opened early: {}",
        run.stderr
    );
    assert!(
        run.dir("host->view").any(|m| m["method"] == "ui/notifications/tool-cancelled"),
        "the View was not told: {}",
        run.stderr
    );
    assert!(!run.dir("host->view").any(|m| m["method"] == "ui/notifications/tool-input"));
    assert!(!run.dir("host->server").any(|m| m["method"] == "tools/call" && m["params"]["name"] == "show-order"));
    let second = &model.requests()[1]["body"]["messages"];
    let result = &second.as_array().unwrap().last().unwrap()["content"][0];
    assert_eq!(
        (result["type"].as_str(), result["is_error"].as_bool()),
        (Some("tool_result"), Some(true)),
        "{result:#}"
    );
}

/// The shell's web process dies while the "run this tool?" dialog is open: the question is not
/// taken for a no; the restarted shell asks again and the person's yes runs the tool once.
#[test]
fn a_shell_crash_does_not_answer_the_models_question() {
    use common::hostile::{run_host_watch, web_processes};
    let model = ModelServer::start();
    let dir = tempfile::tempdir().unwrap();
    // On every shell load: answer the dialog a while after it shows (the first shell dies first).
    let script = automation(
        &dir,
        r##"
        await until(() => !document.getElementById("dialog").hidden && !document.getElementById("dialog-accept").disabled, 60000);
        await wait(2500);
        document.getElementById("dialog-accept").click();
        "##,
    );
    let mut args = vec!["run".to_owned(), "--stdio".into(), chat_server(), "--automation".into(), script];
    args.extend(model.model_args("openai"));
    args.extend(["--prompt".to_owned(), "cancel order 7".into()]);
    let data_home = model.data_home();
    let killed = std::cell::Cell::new(false);
    let run = run_host_watch(
        &args,
        &[("XDG_DATA_HOME", &data_home)],
        |pid, trace| {
            if !killed.get() {
                if trace.iter().any(|r| r["dir"] == "diagnostic" && r["msg"]["kind"] == "tool-consent") {
                    std::thread::sleep(Duration::from_millis(500));
                    for p in web_processes(pid) {
                        let _ = Command::new("kill").args(["-9", &p.to_string()]).status();
                    }
                    killed.set(true);
                }
                return false;
            }
            trace.iter().any(|r| r["dir"] == "model->host")
        },
        LIMIT,
    );
    assert!(killed.get(), "{}", run.stderr);
    assert!(
        run.trace.iter().any(|r| r["dir"] == "diagnostic" && r["msg"]["kind"] == "web-process-terminated"),
        "{}",
        run.stderr
    );
    assert_eq!(
        run.stderr.matches("CANCELLED 7").count(),
        1,
        "the person's yes in the restarted shell ran it: {}",
        run.stderr
    );
    let result = model.requests()[1]["body"]["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(result["content"], "order 7 cancelled", "not taken for a no");
}

/// The person stops the model while it writes a UI tool's arguments: the turn ends said so,
/// the View that opened for the call is cancelled, the tool is not called, and the next prompt
/// is answered as usual.
#[test]
fn the_person_stops_the_model_mid_call() {
    let model = ModelServer::start();
    let dir = tempfile::tempdir().unwrap();
    let script = automation(
        &dir,
        r##"
        await until(() => !document.getElementById("prompt-stop").hidden && document.querySelector(".card[data-view]"), 30000);
        document.getElementById("prompt-stop").click();
        await until(() => document.getElementById("prompt-stop").hidden, 30000);
        document.getElementById("prompt-text").value = "hello again";
        document.getElementById("prompt-send").click();
        "##,
    );
    let mut args = vec!["run".to_owned(), "--stdio".into(), chat_server(), "--consent".into(), "allow".into()];
    args.extend(["--automation".to_owned(), script]);
    args.extend(model.model_args("openai"));
    args.extend(["--prompt".to_owned(), "slow show order".into()]);
    let data_home = model.data_home();
    let run = run_host_until_env(
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
        &[("XDG_DATA_HOME", &data_home)],
        |t| {
            t.iter().filter(|r| r["dir"] == "model->host").count() >= 2
                && t.iter().any(|r| r["dir"] == "host->view" && r["msg"]["method"] == "ui/notifications/tool-cancelled")
        },
        Duration::from_secs(40),
    );
    let ends: Vec<&Value> = run.dir("model->host").collect();
    assert_eq!(ends.len(), 2, "{}", run.stderr);
    assert_eq!(ends[0]["error"], "stopped by the person", "{:#}", ends[0]);
    assert_eq!(ends[1]["text"], "Hello from the fixture model.", "the next prompt is answered");
    assert!(
        !run.dir("host->server").any(|m| m["method"] == "tools/call" && m["params"]["name"] == "show-order"),
        "the tool ran"
    );
    assert!(run.dir("host->view").any(|m| m["method"] == "ui/notifications/tool-cancelled"), "the View was not told");
}

/// Retry an answer, edit and resend the last prompt, switch to another model of the endpoint,
/// rename the conversation in the window, then list and delete it from the command line.
#[test]
fn the_person_retries_edits_renames_and_deletes() {
    let model = ModelServer::start();
    let dir = tempfile::tempdir().unwrap();
    let script = automation(
        &dir,
        r##"
        const idle = () => document.getElementById("prompt-stop").hidden;
        const users = () => document.querySelectorAll(".card.turn.user").length;
        await until(() => users() >= 1 && idle() && !document.getElementById("prompt-retry").hidden);
        document.getElementById("prompt-retry").click();
        await until(() => users() >= 2 && idle());
        document.getElementById("prompt-edit").click();
        const text = document.getElementById("prompt-text");
        if (text.value !== "first question") return;
        text.value = "edited question";
        document.getElementById("prompt-send").click();
        await until(() => users() >= 3 && idle());
        // Another model of the same endpoint answers from here on.
        document.getElementById("prompt-model").click();
        const model = document.getElementById("model-name");
        model.value = "fixture-other";
        model.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
        await until(() => text.placeholder.includes("fixture-other"));
        text.value = "third question";
        document.getElementById("prompt-send").click();
        await until(() => users() >= 4 && idle());
        (await until(() => document.querySelector("#conversation-list [data-rename]"))).click();
        const input = await until(() => document.querySelector("#conversation-list input"));
        input.value = "My title";
        input.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter" }));
        "##,
    );
    let mut args = vec!["run".to_owned(), "--stdio".into(), chat_server()];
    args.extend(model.model_args("openai"));
    args.extend(["--automation".into(), script, "--prompt".into(), "first question".into()]);
    let data_home = model.data_home();
    let env = [("XDG_DATA_HOME", data_home.as_str())];
    let conversations = std::path::Path::new(&data_home).join("mcp-apps-host/conversations");
    let titled = || {
        std::fs::read_dir(&conversations)
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| e.path().extension().is_some_and(|x| x == "title"))
    };
    let run = run_host_until_env(&args.iter().map(String::as_str).collect::<Vec<_>>(), &env, |_| titled(), LIMIT);
    let requests = model.requests();
    assert_eq!(requests.len(), 4, "{}", run.stderr);
    let texts = |r: &Value| -> Vec<String> {
        r["body"]["messages"].as_array().unwrap()[1..].iter().map(message_text).collect()
    };
    assert_eq!(texts(&requests[1]), ["first question"], "a retry sends the turn without the old answer");
    assert_eq!(texts(&requests[2]), ["edited question"], "an edit replaces the last prompt");
    assert_eq!(
        (requests[2]["body"]["model"].as_str(), requests[3]["body"]["model"].as_str()),
        (Some("fixture-model"), Some("fixture-other"))
    );
    assert_eq!(texts(&requests[3]).last().map(String::as_str), Some("third question"), "the history goes along");
    assert_eq!(texts(&requests[3]).len(), 3);
    let cli = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_mcp-apps-host")).args(args).envs(env).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let listed = cli(&["conversations"]);
    let line = listed.lines().find(|l| l.ends_with("My title")).unwrap_or_else(|| panic!("{listed}"));
    let id = line.split_whitespace().next().unwrap().to_owned();
    cli(&["conversations", "rename", &id, "Budget"]);
    assert!(cli(&["conversations", "list"]).contains("Budget"));
    cli(&["conversations", "delete", &id]);
    assert!(!cli(&["conversations"]).contains(&id));
}

/// On the next start the last conversation is offered in the empty window and reopens with one
/// click; the list finds a conversation by a word of its title.
#[test]
fn the_last_conversation_is_offered_at_start_and_the_list_finds_by_title() {
    let model = ModelServer::start();
    let data_home = model.data_home();
    let env = [("XDG_DATA_HOME", data_home.as_str())];
    let headless = |prompt: &str| {
        let mut args = vec!["run".to_owned(), "--stdio".into(), chat_server()];
        args.extend(model.model_args("openai"));
        args.extend(["--prompt".into(), prompt.into(), "--exit-after".into(), "answer".into()]);
        let run = run_host_env(&args.iter().map(String::as_str).collect::<Vec<_>>(), &env, LIMIT);
        assert_eq!(run.code, Some(0), "{}", run.stderr);
    };
    headless("budget for the trip");
    std::thread::sleep(std::time::Duration::from_millis(1100));
    headless("recipe with lentils");
    let dir = tempfile::tempdir().unwrap();
    let script = automation(
        &dir,
        r##"
        const said = [];
        const offer = await until(() => document.querySelector("#stream .resume-offer"));
        said.push(offer.textContent);
        const find = document.getElementById("conversation-find");
        const shown = () => Array.from(document.querySelectorAll("#conversation-list li.conversation")).filter((li) => !li.hidden).map((li) => li.dataset.title).join(",");
        find.value = "TRIP";
        find.dispatchEvent(new Event("input"));
        said.push(shown());
        find.value = "nothing like it";
        find.dispatchEvent(new Event("input"));
        said.push(shown() + "/" + !document.getElementById("conversation-none").hidden);
        offer.querySelector("button[data-reopen]").click();
        await until(() => Array.from(document.querySelectorAll(".card.turn.user")).some((c) => c.textContent.includes("recipe with lentils")));
        said.push("offer gone=" + !document.querySelector("#stream .resume-offer"));
        document.getElementById("prompt-text").value = said.join(" | ");
        document.getElementById("prompt-send").click();
        "##,
    );
    let mut args = vec!["run".to_owned(), "--stdio".into(), chat_server()];
    args.extend(model.model_args("openai"));
    args.extend(["--automation".into(), script]);
    let run = run_host_until_env(
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
        &env,
        |_| model.requests().len() >= 3,
        LIMIT,
    );
    let requests = model.requests();
    assert_eq!(requests.len(), 3, "{}", run.stderr);
    let texts: Vec<String> =
        requests[2]["body"]["messages"].as_array().unwrap()[1..].iter().map(message_text).collect();
    assert_eq!(
        texts.first().map(String::as_str),
        Some("recipe with lentils"),
        "the reopened conversation goes on: {texts:?}"
    );
    let said = texts.last().unwrap();
    let steps: Vec<&str> = said.split(" | ").collect();
    assert_eq!(steps[0], "Pick up where you left off: recipe with lentilsReopen", "{said}");
    assert_eq!(steps[1], "budget for the trip", "{said}");
    assert_eq!(steps[2], "/true", "{said}");
    assert_eq!(steps[3], "offer gone=true", "{said}");
}
