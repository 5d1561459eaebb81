//! End to end: which model a conversation uses and how its key travels (a real display, the
//! local model server `fixtures/model-server.mjs`): a config file's `model` section, the key kept
//! by `key set`, the settings page that chooses the model and keeps its key apart.

mod common;
#[allow(dead_code)]
mod keyring_support;
#[path = "common/model_server.rs"]
mod model_server;

use std::path::Path;
use std::process::Command;

use common::chat::*;
use common::*;
use model_server::*;
use serde_json::Value;

/// The config file's `model` section stands in for `--model`: a headless prompt runs to its
/// answer (`--exit-after answer`), the key read from the owner-only file it names.
#[test]
fn a_config_files_model_section_is_used_without_flags() {
    let model = ModelServer::start();
    let dir = tempfile::tempdir().unwrap();
    // The key file is in the host's own config directory (a config file may name one only there).
    let config_home = dir.path().join("config");
    std::fs::create_dir_all(config_home.join("mcp-apps-host")).unwrap();
    let key = config_home.join("mcp-apps-host/openai.key");
    std::fs::write(&key, format!("{KEY}\n")).unwrap();
    #[cfg(unix)]
    std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let config = dir.path().join("mcp.json");
    let server = fixtures().join("chat-app-server.mjs");
    let text = serde_json::json!({
        "mcpServers": {"shop": {"command": "node", "args": [server]}},
        "model": {"name": "openai:fixture-model", "url": format!("http://127.0.0.1:{}/v1", model.port), "keyFile": key}
    });
    std::fs::write(&config, text.to_string()).unwrap();
    let config = config.to_string_lossy().into_owned();
    let data_home = model.data_home();
    let run = run_host_env(
        &["run", "--config", &config, "--prompt", "hello", "--exit-after", "answer"],
        &[("XDG_DATA_HOME", &data_home), ("XDG_CONFIG_HOME", &config_home.to_string_lossy())],
        LIMIT,
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0]["headers"]["authorization"], format!("Bearer {KEY}"));
    assert!(tool_names(&requests[0]["body"]).contains(&"shop__show-order".to_owned()));
    let answer = run.dir("model->host").next().unwrap();
    assert_eq!(answer["text"], "Hello from the fixture model.");
}

/// No key in the environment and no key file: `run --model openai:...` sends the key that
/// `key set` kept (here in its owner-only file: no Secret Service on the test's bus).
#[test]
fn run_sends_the_key_kept_by_key_set() {
    use keyring_support::NO_BUS;
    const STORED: &str = "sk-kept-by-key-set-7311";
    let model = ModelServer::start();
    let data_home = model.data_home();
    let mut set = Command::new(env!("CARGO_BIN_EXE_mcp-apps-host"))
        .args(["key", "set", "--provider", "openai"])
        .env("DBUS_SESSION_BUS_ADDRESS", NO_BUS)
        .env("XDG_DATA_HOME", &data_home)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write as _;
        set.stdin.take().unwrap().write_all(format!("{STORED}\n").as_bytes()).unwrap();
    }
    let out = set.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && said.contains("kept in an owner-only file"), "{said}");

    let mut args = vec!["run".to_owned(), "--stdio".into(), chat_server()];
    args.extend(model.model_args("openai"));
    args.extend(["--prompt", "hello", "--exit-after", "answer"].map(str::to_owned));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = run_host_env(
        &args,
        &[("XDG_DATA_HOME", &data_home), ("DBUS_SESSION_BUS_ADDRESS", NO_BUS), ("OPENAI_API_KEY", "")],
        LIMIT,
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let requests = model.requests();
    assert_eq!(requests.len(), 1, "{requests:#?}");
    assert_eq!(requests[0]["headers"]["authorization"], format!("Bearer {STORED}"));
    assert!(!run.stderr.contains(STORED), "the key is not logged");
}

/// The model settings page, without a terminal: the app starts with servers and no model; the
/// person opens "Model settings", picks OpenAI's format at a local URL (the page says the key
/// goes there only, and that it is not OpenAI's own address), types the key and saves; the
/// conversation starts and a prompt is answered with that key. The key is kept apart (here in
/// its owner-only file: no Secret Service on the test's bus), never in the config file or the
/// log; the config file gets the model. The next start uses the saved model and key with no
/// flag and no question (the person named that URL in the app), and a config file that moves
/// the URL elsewhere afterwards gets no key.
#[test]
fn the_settings_page_chooses_the_model_and_keeps_its_key_apart() {
    use keyring_support::NO_BUS;
    const TYPED: &str = "sk-typed-in-the-app-5150";
    let model = ModelServer::start();
    let data_home = model.data_home();
    let dir = tempfile::tempdir().unwrap();
    let config_home = dir.path().join("config");
    let config = dir.path().join("mcp.json");
    let server = fixtures().join("chat-app-server.mjs");
    let text = serde_json::json!({"mcpServers": {"shop": {"command": "node", "args": [server]}}, "theirs": [1]});
    std::fs::write(&config, text.to_string()).unwrap();
    let config_arg = config.to_string_lossy().into_owned();
    let url = format!("http://127.0.0.1:{}/v1", model.port);
    let script = automation(
        &dir,
        &format!(
            r##"
        await until(() => document.querySelector('#tools button[data-tool]'));
        // The composer is there before any model: what is sent comes back, and Model settings
        // opens to choose one.
        const composer = document.getElementById("prompt-text");
        if (document.getElementById("prompt").hidden) throw new Error("no composer before a model");
        composer.value = "my first question";
        document.getElementById("prompt-send").click();
        const page = document.getElementById("settings");
        await until(() => !page.hidden);
        if (composer.value !== "my first question") throw new Error("the prompt was lost: " + composer.value);
        if (!/Choose a model to send your message/.test(document.getElementById("status").textContent)) throw new Error("not said");
        if (!/No OpenAI key is kept/.test(document.getElementById("settings-key-note").textContent)) throw new Error("kept?");
        document.getElementById("settings-provider").value = "openai";
        document.getElementById("settings-name").value = "fixture-model";
        const url = document.getElementById("settings-url");
        url.value = "{url}";
        url.dispatchEvent(new Event("input"));
        const said = document.getElementById("settings-destination").textContent;
        if (!said.includes("http://127.0.0.1:{port} only") || !said.includes("not OpenAI's own")) throw new Error(said);
        document.getElementById("settings-key").value = "{TYPED}";
        document.getElementById("settings-save").click();
        await until(() => page.hidden && document.getElementById("prompt").dataset.model);
        document.getElementById("prompt-text").value = "hello";
        document.getElementById("prompt-send").click();
        "##,
            port = model.port
        ),
    );
    let envs = [
        ("XDG_DATA_HOME", data_home.as_str()),
        ("XDG_CONFIG_HOME", &*config_home.to_string_lossy()),
        ("DBUS_SESSION_BUS_ADDRESS", NO_BUS),
        ("OPENAI_API_KEY", ""),
    ];
    let run = run_host_until_env(
        &["run", "--config", &config_arg, "--automation", &script],
        &envs,
        |t| t.iter().any(|r| r["dir"] == "model->host"),
        LIMIT,
    );
    let requests = model.requests();
    assert_eq!(requests.len(), 1, "one prompt, answered: {requests:#?}\n{}", run.stderr);
    assert_eq!(requests[0]["headers"]["authorization"], format!("Bearer {TYPED}"));
    assert!(tool_names(&requests[0]["body"]).contains(&"shop__show-order".to_owned()));
    // The config file: the model, the person's own key kept, no key.
    let written = std::fs::read_to_string(&config).unwrap();
    let v: Value = serde_json::from_str(&written).unwrap();
    assert_eq!(v["model"], serde_json::json!({"name": "openai:fixture-model", "url": url}));
    assert_eq!(v["theirs"], serde_json::json!([1]));
    assert!(!written.contains(TYPED) && !run.stderr.contains(TYPED), "the key is in neither the file nor the log");
    // The key in its owner-only file, said to be there.
    let secrets = Path::new(&data_home).join("mcp-apps-host/secrets");
    let kept: Vec<_> = std::fs::read_dir(&secrets).unwrap().flatten().collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(std::fs::read_to_string(kept[0].path()).unwrap().trim(), TYPED);
    #[cfg(unix)]
    assert_eq!(std::os::unix::fs::PermissionsExt::mode(&kept[0].metadata().unwrap().permissions()) & 0o077, 0);

    // The next start: the saved model and key, no flag, no question.
    let next =
        run_host_env(&["run", "--config", &config_arg, "--prompt", "hi", "--exit-after", "answer"], &envs, LIMIT);
    assert_eq!(next.code, Some(0), "{}", next.stderr);
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1]["headers"]["authorization"], format!("Bearer {TYPED}"));

    // Someone moves the config file's URL to another origin: the key is not sent there.
    let elsewhere = ModelServer::start();
    let moved = serde_json::json!({"mcpServers": {"shop": {"command": "node", "args": [server]}},
        "model": {"name": "openai:fixture-model", "url": format!("http://127.0.0.1:{}/v1", elsewhere.port)}});
    std::fs::write(&config, moved.to_string()).unwrap();
    let refused =
        run_host_env(&["run", "--config", &config_arg, "--prompt", "hi", "--exit-after", "answer"], &envs, LIMIT);
    assert_ne!(refused.code, Some(0));
    assert!(refused.stderr.contains("The key was not sent"), "{}", refused.stderr);
    assert!(elsewhere.requests().is_empty(), "the other origin got nothing");
}

/// The settings page asks the endpoint for its models, which tests the address and the key, in
/// each provider's wire format (OpenAI's and Anthropic's `GET /v1/models`, Ollama's
/// `GET /api/tags`): a refused key is said in words, a listed model fills the name field, and a
/// key from the environment does not go to an address only typed on the page.
#[test]
fn the_settings_page_lists_the_endpoints_models_and_tests_the_connection() {
    use keyring_support::NO_BUS;
    const TYPED: &str = "sk-typed-for-the-list-7311";
    const ENV_KEY: &str = "sk-from-the-environment-9042";
    let model = ModelServer::start();
    let data_home = model.data_home();
    let dir = tempfile::tempdir().unwrap();
    let config_home = dir.path().join("config");
    let config = dir.path().join("mcp.json");
    let server = fixtures().join("chat-app-server.mjs");
    std::fs::write(
        &config,
        serde_json::json!({"mcpServers": {"shop": {"command": "node", "args": [server]}}}).to_string(),
    )
    .unwrap();
    let config_arg = config.to_string_lossy().into_owned();
    let script = automation(
        &dir,
        &format!(
            r##"
        const $ = (id) => document.getElementById(id);
        const said = [];
        const set = (id, value, event) => {{ $(id).value = value; $(id).dispatchEvent(new Event(event)); }};
        const list = async () => {{
            $("settings-list").click();
            await until(() => !$("settings-list").disabled);
            const names = $("settings-models").hidden ? "" : Array.from($("settings-models").options).slice(1).map((o) => o.value).join(",");
            said.push($("settings-list-note").textContent + " [" + names + "]");
        }};
        await until(() => document.querySelector('#tools button[data-tool]'));
        $("settings-open").click();
        await until(() => !$("settings").hidden);
        set("settings-provider", "openai", "change");
        set("settings-url", "http://127.0.0.1:{port}/v1", "input");
        await list();
        $("settings-key").value = "wrong-key";
        await list();
        $("settings-key").value = "{TYPED}";
        await list();
        set("settings-models", "fixture-model", "change");
        said.push("name=" + $("settings-name").value);
        set("settings-provider", "anthropic", "change");
        said.push("cleared=" + $("settings-models").hidden);
        set("settings-url", "http://127.0.0.1:{port}", "input");
        $("settings-key").value = "sk-ant-typed";
        await list();
        set("settings-provider", "ollama", "change");
        set("settings-url", "http://127.0.0.1:{port}/v1", "input");
        await list();
        set("settings-provider", "openai", "change");
        set("settings-url", "http://127.0.0.1:{port}/v1", "input");
        $("settings-name").value = "fixture-model";
        $("settings-key").value = "{TYPED}";
        $("settings-save").click();
        await until(() => $("settings").hidden && !$("prompt").hidden);
        $("prompt-text").value = said.join(" | ");
        $("prompt-send").click();
        "##,
            port = model.port
        ),
    );
    let envs = [
        ("XDG_DATA_HOME", data_home.as_str()),
        ("XDG_CONFIG_HOME", &*config_home.to_string_lossy()),
        ("DBUS_SESSION_BUS_ADDRESS", NO_BUS),
        ("OPENAI_API_KEY", ENV_KEY),
    ];
    let run = run_host_until_env(
        &["run", "--config", &config_arg, "--automation", &script],
        &envs,
        |t| t.iter().any(|r| r["dir"] == "model->host"),
        LIMIT,
    );
    let requests = model.requests();
    let chat = requests
        .iter()
        .find(|r| r["path"] == "/v1/chat/completions")
        .unwrap_or_else(|| panic!("the script did not reach its prompt: {requests:#?}\n{}", run.stderr));
    let messages = chat["body"]["messages"].as_array().unwrap();
    let prompt = messages.last().unwrap()["content"].as_str().unwrap().to_owned();
    let steps: Vec<&str> = prompt.split(" | ").collect();
    let origin = format!("http://127.0.0.1:{}", model.port);
    let address = format!("{origin}/v1/models");
    assert_eq!(steps[0], format!("{address} refused the key (HTTP 401): check it. []"), "{prompt}");
    assert_eq!(steps[1], format!("{address} refused the key (HTTP 401): check it. []"), "{prompt}");
    assert_eq!(
        steps[2],
        format!("Connected to {origin}: 3 models offered. [fixture-model,gpt-4.1,gpt-4.1-mini]"),
        "{prompt}"
    );
    assert_eq!(steps[3], "name=fixture-model", "{prompt}");
    assert_eq!(steps[4], "cleared=true", "another provider's list is not kept: {prompt}");
    assert_eq!(
        steps[5],
        format!("Connected to {origin}: 2 models offered. [claude-sonnet-4-5,claude-haiku-4-5]"),
        "{prompt}"
    );
    assert_eq!(steps[6], format!("Connected to {origin}: 2 models offered. [qwen3:8b,llama3.2:3b]"), "{prompt}");
    let listings: Vec<&Value> = requests.iter().filter(|r| r["path"] != "/v1/chat/completions").collect();
    let paths: Vec<&str> = listings.iter().map(|r| r["path"].as_str().unwrap()).collect();
    assert_eq!(paths, ["/v1/models", "/v1/models", "/v1/models", "/v1/models", "/api/tags"], "{listings:#?}");
    assert!(listings[0]["headers"].get("authorization").is_none(), "the environment's key stayed home: {listings:#?}");
    assert_eq!(listings[1]["headers"]["authorization"], "Bearer wrong-key");
    assert_eq!(listings[2]["headers"]["authorization"], format!("Bearer {TYPED}"));
    assert_eq!(listings[3]["headers"]["x-api-key"], "sk-ant-typed");
    assert!(listings[3]["headers"].get("anthropic-version").is_some());
    assert!(listings[4]["headers"].as_object().unwrap().is_empty(), "Ollama takes no key: {listings:#?}");
    assert!(!run.stderr.contains(ENV_KEY) && !run.stderr.contains(TYPED), "no key in the log");
}
